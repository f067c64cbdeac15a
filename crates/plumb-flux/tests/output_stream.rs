//! The YAML stream of a build whose Kustomizations hold many objects: written in pieces in
//! parallel (`RepositoryBuild::yaml_sections`), it must be the stream written in one go.

use plumb_flux::build::{build_repository, Options};

/// A repository whose entry directory holds `count` ConfigMaps and one child Kustomization
/// (which builds `apps/`, holding `count` more), with a postBuild substitution in each.
fn repository(count: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir_all(root.join("clusters/dev")).expect("mkdir");
    std::fs::create_dir_all(root.join("apps")).expect("mkdir");
    let config_maps = |prefix: &str| {
        (0..count)
            .map(|i| {
                format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {prefix}-{i:03}\n  namespace: default\ndata:\n  index: \"{i}\"\n  text: \"${{GREETING}} {i}\"\n"
                )
            })
            .collect::<Vec<_>>()
            .join("---\n")
    };
    std::fs::write(root.join("clusters/dev/maps.yaml"), config_maps("root")).expect("write");
    std::fs::write(root.join("apps/maps.yaml"), config_maps("app")).expect("write");
    std::fs::write(
        root.join("clusters/dev/apps.yaml"),
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 1h\n  path: ./apps\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  postBuild:\n    substitute:\n      GREETING: hello\n",
    )
    .expect("write");
    dir
}

#[test]
fn a_stream_written_in_pieces_is_the_stream_written_in_one_go() {
    let repo = repository(75);
    let options = Options {
        entries: vec!["clusters/dev".to_string()],
        ..Options::default()
    };
    let result = build_repository(repo.path(), &options).expect("builds");
    let sections = result.yaml_sections(&|_| true);
    // 75 objects are more than one piece of each section.
    assert!(sections.len() > 2, "{} parts", sections.len());
    let streamed = sections.concat();

    // The same objects, written by one writer in one pass, under the same headers.
    let mut whole = String::new();
    for entry in &result.entries {
        for k in &entry.kustomizations {
            if !whole.is_empty() {
                whole.push_str("---\n");
            }
            whole.push_str(&format!("# Source: {}\n", k.title()));
            whole.push_str(&plumb_yaml::write_stream(
                k.objects.iter().map(|o| &o.value),
            ));
        }
    }
    assert_eq!(streamed, whole);
    assert_eq!(streamed, result.to_yaml(&|_| true));
    // Every object once, in order, substituted where it was built with postBuild.
    let names: Vec<&str> = streamed
        .lines()
        .filter_map(|l| l.strip_prefix("  name: "))
        .collect();
    assert_eq!(names.len(), 151, "75 + 75 ConfigMaps and the Kustomization");
    // kustomize's order: ConfigMaps before kinds it does not know.
    assert_eq!(names[0], "root-000");
    assert_eq!(names[75], "apps");
    assert_eq!(names[150], "app-074");
    assert!(streamed.contains("text: hello 74\n"));
    assert!(streamed.contains("text: ${GREETING} 74\n"));
}
