//! A base several clusters build with the same spec is built once: the other clusters' builds
//! are copies of it. A patch each cluster writes into its own Kustomization is the same text at
//! another place of another file, and what it brings points at that cluster's text.

use plumb_flux::build::{build_repository, Options};

const BASE: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  color: blue\n";

/// A Kustomization building `apps/base` with an inline patch, after `preamble` (lines that move
/// the patch down the file); `indent` is the indentation of the patch's text.
fn kustomization(preamble: &str, indent: &str) -> String {
    let patch = [
        "apiVersion: v1",
        "kind: ConfigMap",
        "metadata:",
        "  name: settings",
        "data:",
        "  added: here",
    ]
    .iter()
    .map(|line| format!("{indent}{line}\n"))
    .collect::<String>();
    format!(
        "{preamble}apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: app\n  namespace: flux-system\nspec:\n  interval: 1h\n  path: ./apps/base\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  patches:\n    - target:\n        kind: ConfigMap\n      patch: |\n{patch}"
    )
}

fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let patch_indent = "        ";
    let files = [
        (
            "apps/base/kustomization.yaml",
            "resources:\n  - settings.yaml\n".to_string(),
        ),
        ("apps/base/settings.yaml", BASE.to_string()),
        ("clusters/a/app.yaml", kustomization("", patch_indent)),
        (
            "clusters/b/app.yaml",
            kustomization(
                "# cluster b\n# moves the patch\n# three lines down\n",
                patch_indent,
            ),
        ),
        // The same values, written with another indentation: other text, another build.
        ("clusters/c/app.yaml", kustomization("", "          ")),
    ];
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    dir
}

/// The line and file of the `added` key the patch brings, in `entry`'s ConfigMap.
fn added_at(build: &plumb_flux::build::RepositoryBuild, entry: &str) -> (String, usize) {
    let entry = build
        .entries
        .iter()
        .find(|e| e.entry == entry)
        .expect("entry built");
    let object = entry
        .kustomizations
        .iter()
        .flat_map(|k| k.objects.iter())
        .find(|o| o.kind() == "ConfigMap")
        .expect("the ConfigMap");
    assert_eq!(object.value["data"]["added"], "here");
    let origin = object.origin.as_deref().expect("an origin");
    let added = origin.get_path(&["data", "added"]).expect("data.added");
    let span = added.span.as_ref().expect("a span");
    let file = span.file.path().to_string_lossy().into_owned();
    (file, span.location().line)
}

#[test]
fn a_base_built_by_several_clusters_is_copied_with_each_clusters_patch_positions() {
    let repo = repository();
    let options = Options {
        entries: ["clusters/a", "clusters/b", "clusters/c"]
            .map(String::from)
            .to_vec(),
        ..Options::default()
    };
    // One thread: the clusters are built one after another, so which build is copied is known.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let build = pool
        .install(|| build_repository(repo.path(), &options))
        .expect("builds");
    assert_eq!(
        build.copied_builds, 1,
        "b copies a; c's patch is other text"
    );
    let (file_a, line_a) = added_at(&build, "clusters/a");
    let (file_b, line_b) = added_at(&build, "clusters/b");
    let (file_c, line_c) = added_at(&build, "clusters/c");
    assert!(file_a.ends_with("clusters/a/app.yaml"), "{file_a}");
    assert!(file_b.ends_with("clusters/b/app.yaml"), "{file_b}");
    assert!(file_c.ends_with("clusters/c/app.yaml"), "{file_c}");
    // `added: here` is the patch's sixth line, on line 22 of a's file; three lines lower in b's.
    assert_eq!((line_a, line_b, line_c), (22, 25, 22));
    // And each cluster's ConfigMap is the patched one (the Kustomizations' patches, also in
    // the stream, are indented further).
    let yaml = build.to_yaml(&|_| true);
    assert_eq!(
        yaml.matches("\ndata:\n  added: here\n  color: blue\n")
            .count(),
        3
    );
}
