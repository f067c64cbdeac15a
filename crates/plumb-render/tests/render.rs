//! plumb render on catalogs written as temporary repositories: waves of a diamond, a chain and a
//! pin, the errors of a bad catalog (with file and line), `--check` against a tree edited by
//! hand, and comments that must not reach the output.

use plumb_render::{Change, Render};
use std::path::Path;

/// A repository with `.plumb.yaml` = `config` and `catalog/<name>.yaml` for each (name, text);
/// every `path:` an app names exists as a directory.
fn repo(config: &str, apps: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".plumb.yaml"), config).unwrap();
    std::fs::create_dir_all(dir.path().join("catalog")).unwrap();
    for (name, text) in apps {
        std::fs::write(dir.path().join(format!("catalog/{name}.yaml")), text).unwrap();
        for line in text.lines() {
            if let Some(p) = line.strip_prefix("path: ") {
                std::fs::create_dir_all(dir.path().join(p)).unwrap();
            }
        }
    }
    dir
}

fn app(name: &str, deps: &[&str]) -> String {
    let mut s = format!("name: {name}\nnamespace: {name}\npath: apps/{name}\n");
    if !deps.is_empty() {
        s.push_str("dependsOn:\n");
        for d in deps {
            s.push_str(&format!("  - {d}\n"));
        }
    }
    s
}

/// Every file of the render, each under a `=== path` line.
fn tree_text(render: &Render) -> String {
    render
        .tree
        .iter()
        .map(|(p, t)| format!("=== {p}\n{t}"))
        .collect()
}

fn waves(render: &Render) -> Vec<Vec<&str>> {
    render
        .plan
        .waves
        .iter()
        .map(|w| {
            w.iter()
                .map(|&i| render.plan.apps[i].name.as_str())
                .collect()
        })
        .collect()
}

fn error(dir: &Path) -> String {
    Render::load(dir).unwrap_err().to_string()
}

const HOMELAB_LIKE: &str =
    "render:\n  firstWaveDependsOn: platform\n  substituteFrom: cluster-vars\n";

#[test]
fn diamond_puts_the_join_after_both_branches() {
    let (a, b, c, d) = (
        app("a", &[]),
        app("b", &["a"]),
        app("c", &["a"]),
        app("d", &["c", "b"]),
    );
    let dir = repo(HOMELAB_LIKE, &[("a", &a), ("b", &b), ("c", &c), ("d", &d)]);
    let render = Render::load(dir.path()).unwrap();
    assert_eq!(waves(&render), vec![vec!["a"], vec!["b", "c"], vec!["d"]]);
    insta::assert_snapshot!("diamond", tree_text(&render));
}

#[test]
fn chain_is_one_wave_per_link_whatever_the_file_order() {
    // z depends on y depends on x: file names in the opposite order of the waves.
    let dir = repo(
        "render:\n  output: deploy/apps\n  fluxKustomizations: clusters/waves.yaml\n  namePrefix: tier-\n  namespace: flux-system\n  sourceRef: {kind: OCIRepository, name: platform}\n  interval: 10m\n",
        &[("x", &app("z", &["y"])), ("y", &app("y", &["x"])), ("z", &app("x", &[]))],
    );
    let render = Render::load(dir.path()).unwrap();
    assert_eq!(waves(&render), vec![vec!["x"], vec!["y"], vec!["z"]]);
    insta::assert_snapshot!("chain", tree_text(&render));
}

#[test]
fn a_pin_pushes_an_app_later_and_the_skipped_wave_keeps_the_chain() {
    let late = format!("{}wave: 2\n", app("late", &[]));
    let dir = repo(
        HOMELAB_LIKE,
        &[("early", &app("early", &[])), ("late", &late)],
    );
    let render = Render::load(dir.path()).unwrap();
    assert_eq!(waves(&render), vec![vec!["early"], vec![], vec!["late"]]);
    insta::assert_snapshot!("pinned", tree_text(&render));
}

#[test]
fn a_pin_earlier_than_the_dependencies_allow_is_an_error_at_the_pin() {
    let b = format!("{}wave: 1\n", app("b", &["a"]));
    let dir = repo(
        HOMELAB_LIKE,
        &[
            ("a", &app("a", &["base"])),
            ("b", &b),
            ("base", &app("base", &[])),
        ],
    );
    assert_eq!(
        error(dir.path()),
        "catalog/b.yaml:6: app `b` is pinned to wave 1, but it depends on `a` (wave 1): wave 2 is the earliest it can be in"
    );
}

#[test]
fn a_cycle_is_spelt_out_from_its_first_name() {
    let dir = repo(
        HOMELAB_LIKE,
        &[
            ("c", &app("c", &["a"])),
            ("b", &app("b", &["c"])),
            ("a", &app("a", &["b"])),
            ("d", &app("d", &["a"])),
        ],
    );
    assert_eq!(
        error(dir.path()),
        "catalog/a.yaml:5: dependency cycle: a → b → c → a"
    );
    let dir = repo(HOMELAB_LIKE, &[("self", &app("self", &["self"]))]);
    assert_eq!(
        error(dir.path()),
        "catalog/self.yaml:5: dependency cycle: self → self"
    );
}

#[test]
fn an_unknown_dependency_names_the_closest_app() {
    let dir = repo(
        HOMELAB_LIKE,
        &[
            ("monitoring", &app("monitoring", &[])),
            ("web", &app("web", &["db", "monitorng"])),
        ],
    );
    std::fs::create_dir_all(dir.path().join("catalog")).unwrap();
    let text = app("db", &[]);
    std::fs::write(dir.path().join("catalog/db.yaml"), text).unwrap();
    std::fs::create_dir_all(dir.path().join("apps/db")).unwrap();
    assert_eq!(
        error(dir.path()),
        "catalog/web.yaml:6: app `web` depends on `monitorng`, which is not in the catalog; did you mean `monitoring`?"
    );
}

#[test]
fn catalog_comments_and_notes_never_reach_the_output() {
    let text = "# PRIVATE-COMMENT: the on-call number is 555-0100\nname: web # PRIVATE-INLINE\nnamespace: web\npath: apps/web\nnotes: PRIVATE-NOTE for the table only\n";
    let dir = repo(HOMELAB_LIKE, &[("web", text)]);
    let render = Render::load(dir.path()).unwrap();
    let all = tree_text(&render);
    assert!(all.contains("  - ../web\n"), "{all}");
    assert!(!all.contains("PRIVATE"), "{all}");
    assert!(render.table().contains("PRIVATE-NOTE for the table only"));
}

#[test]
fn check_names_exactly_the_file_edited_by_hand_and_a_stale_wave() {
    let (a, b, c) = (app("a", &[]), app("b", &["a"]), app("c", &["a"]));
    let dir = repo(HOMELAB_LIKE, &[("a", &a), ("b", &b), ("c", &c)]);
    let render = Render::load(dir.path()).unwrap();
    let missing = render.check(dir.path()).unwrap();
    assert_eq!(missing.len(), 3);
    assert!(missing.iter().all(|d| d.change == Change::Missing));
    render.write(dir.path()).unwrap();
    assert_eq!(render.check(dir.path()).unwrap(), vec![]);
    assert_eq!(
        render.write(dir.path()).unwrap().written,
        Vec::<String>::new()
    );

    let edited = dir.path().join("apps/wave-1/kustomization.yaml");
    let text = std::fs::read_to_string(&edited).unwrap();
    std::fs::write(&edited, text.replace("  - ../c\n", "")).unwrap();
    let stale = dir.path().join("apps/wave-3");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("kustomization.yaml"), "resources: [old]\n").unwrap();

    let differences = render.check(dir.path()).unwrap();
    let paths: Vec<(&str, Change)> = differences
        .iter()
        .map(|d| (d.path.as_str(), d.change))
        .collect();
    assert_eq!(
        paths,
        vec![
            ("apps/wave-1/kustomization.yaml", Change::Changed),
            ("apps/wave-3/kustomization.yaml", Change::Extra),
        ]
    );
    insta::assert_snapshot!(
        "check_diff",
        differences
            .iter()
            .map(|d| d.diff.as_str())
            .collect::<String>()
    );
    // --check wrote nothing.
    assert!(!std::fs::read_to_string(&edited).unwrap().contains("../c"));

    // Writing restores the edited file and leaves a stale file it did not generate.
    let done = render.write(dir.path()).unwrap();
    assert_eq!(done.written, vec!["apps/wave-1/kustomization.yaml"]);
    assert_eq!(done.left, vec!["apps/wave-3/kustomization.yaml"]);
    assert!(stale.join("kustomization.yaml").exists());
}

#[test]
fn a_stale_generated_wave_is_removed_when_the_catalog_shrinks() {
    let dir = repo(
        HOMELAB_LIKE,
        &[("a", &app("a", &[])), ("b", &app("b", &["a"]))],
    );
    Render::load(dir.path()).unwrap().write(dir.path()).unwrap();
    std::fs::write(dir.path().join("catalog/b.yaml"), app("b", &[])).unwrap();
    let render = Render::load(dir.path()).unwrap();
    let d = render.check(dir.path()).unwrap();
    assert_eq!(
        d.iter()
            .map(|d| (d.path.as_str(), d.change))
            .collect::<Vec<_>>(),
        vec![
            ("apps/wave-0/kustomization.yaml", Change::Changed),
            ("apps/wave-1/kustomization.yaml", Change::Extra),
            ("clusters/base/apps.yaml", Change::Changed),
        ]
    );
    let done = render.write(dir.path()).unwrap();
    assert_eq!(done.removed, vec!["apps/wave-1/kustomization.yaml"]);
    assert!(!dir.path().join("apps/wave-1/kustomization.yaml").exists());
    assert!(render.check(dir.path()).unwrap().is_empty());
    let leftovers: Vec<_> = walk(dir.path());
    assert!(
        !leftovers.iter().any(|p| p.ends_with(".plumb-render.tmp")) && leftovers.len() == 5,
        "{leftovers:?}"
    );
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path().to_string_lossy().into_owned());
        }
    }
    out
}

#[test]
fn decryption_goes_on_the_waves_with_an_encrypted_app_or_on_every_wave() {
    let secret = format!("{}encrypted: true\n", app("secret", &["a"]));
    let apps = [
        ("a", app("a", &[])),
        ("secret", secret),
        ("z", app("z", &["secret"])),
    ];
    let apps: Vec<(&str, &str)> = apps.iter().map(|(n, t)| (*n, t.as_str())).collect();
    let config = "render:\n  decryption:\n    secretName: sops-age\n";
    let dir = repo(config, &apps);
    let flux = Render::load(dir.path()).unwrap().tree["clusters/base/apps.yaml"].clone();
    let docs: Vec<&str> = flux.split("---\n").collect();
    assert_eq!(docs.len(), 3);
    assert!(
        !docs[0].contains("decryption") && !docs[2].contains("decryption"),
        "{flux}"
    );
    assert!(
        docs[1]
            .contains("  decryption:\n    provider: sops\n    secretRef:\n      name: sops-age\n"),
        "{flux}"
    );

    let dir = repo(&format!("{config}    everyWave: true\n"), &apps);
    let flux = Render::load(dir.path()).unwrap().tree["clusters/base/apps.yaml"].clone();
    assert_eq!(flux.matches("decryption:").count(), 3, "{flux}");
}

#[test]
fn bad_configuration_and_entries_name_the_file_line_and_closest_key() {
    let dir = repo(
        "clusters: []\nrender:\n  catalgo: catalog\n",
        &[("a", &app("a", &[]))],
    );
    assert_eq!(
        error(dir.path()),
        ".plumb.yaml:3: unknown key `catalgo` in `render`; did you mean `catalog`?"
    );
    let dir = repo("clusters: []\n", &[("a", &app("a", &[]))]);
    assert!(error(dir.path()).starts_with(".plumb.yaml: no `render:` block"));
    let dir = repo(
        HOMELAB_LIKE,
        &[("a", "name: a\npath: apps/a\ndependOn: [b]\n")],
    );
    assert_eq!(
        error(dir.path()),
        "catalog/a.yaml:3: unknown key `dependOn` in a catalog entry; did you mean `dependsOn`?"
    );
    let dir = repo(
        HOMELAB_LIKE,
        &[("a", "name: a\npath: apps/a\nwave: soon\n")],
    );
    assert_eq!(
        error(dir.path()),
        "catalog/a.yaml:3: `wave` must be a wave number (0, 1, ...)"
    );
    let dir = repo(HOMELAB_LIKE, &[("a", "name: a\n")]);
    assert!(error(dir.path()).starts_with("catalog/a.yaml:1: app `a` needs a `path`"));
    let dir = repo(
        HOMELAB_LIKE,
        &[("a", &app("a", &[])), ("b", &app("a", &[]))],
    );
    assert_eq!(
        error(dir.path()),
        "catalog/b.yaml:1: app `a` is already in the catalog at catalog/a.yaml:1"
    );
    let dir = repo(HOMELAB_LIKE, &[("a", "name: a\npath: apps/nowhere\n")]);
    std::fs::remove_dir(dir.path().join("apps/nowhere")).unwrap();
    assert_eq!(
        error(dir.path()),
        "catalog/a.yaml:1: app `a` has `path: apps/nowhere`, which is not a directory of the repository"
    );
}

#[test]
fn table_lists_waves_then_names_with_pins_and_notes() {
    let b = format!("{}wave: 2\nnotes: holds the | pipe\n", app("b", &["a"]));
    let dir = repo(
        HOMELAB_LIKE,
        &[("a", &app("a", &[])), ("b", &b), ("c", &app("c", &["a"]))],
    );
    insta::assert_snapshot!("table", Render::load(dir.path()).unwrap().table());
}
