//! `plumb render` as CI runs it: `--check` passes on the homelab example (render == golden),
//! fails with exit 1 and a diff naming exactly the file edited by hand, writes nothing; a bad
//! catalog is exit 2 with file:line; `--table` prints markdown.

#[path = "support/cli.rs"]
mod cli;

use assert_cmd::Command;
use cli::copy_dir;
use std::path::{Path, PathBuf};

fn plumb() -> Command {
    Command::cargo_bin("plumb").expect("binary built")
}

fn homelab() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/homelab")
}

fn run(args: &[&str], repo: &Path) -> (Option<i32>, String, String) {
    let out = plumb().args(args).arg(repo).output().expect("runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The homelab's catalog, `.plumb.yaml` and every file the render owns, copied into a
/// temporary repository (with the apps' directories the catalog names).
fn homelab_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&homelab(), dir.path());
    dir
}

#[test]
fn check_passes_on_the_homelab_example() {
    let (code, out, err) = run(&["render", "--check"], &homelab());
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(out, "");
    assert!(err.contains("render == golden: 4 files, 3 waves"), "{err}");
}

#[test]
fn check_names_exactly_the_file_edited_by_hand_and_writes_nothing() {
    let dir = homelab_copy();
    let edited = dir.path().join("apps/wave-1/kustomization.yaml");
    let text = std::fs::read_to_string(&edited).unwrap();
    let by_hand = text.replace("  - monitoring\n", "");
    std::fs::write(&edited, &by_hand).unwrap();
    let stale = dir.path().join("apps/wave-3");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("kustomization.yaml"), "resources: [old]\n").unwrap();

    let (code, out, err) = run(&["render", "--check"], dir.path());
    assert_eq!(code, Some(1), "{out}{err}");
    let headers: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("+++ ") || l.starts_with("--- "))
        .collect();
    assert_eq!(
        headers,
        vec![
            "--- a/apps/wave-1/kustomization.yaml",
            "+++ b/apps/wave-1/kustomization.yaml",
            "--- a/apps/wave-3/kustomization.yaml",
            "+++ /dev/null",
        ],
        "{out}"
    );
    assert!(out.contains("\n+  - monitoring\n"), "{out}");
    assert!(
        err.contains("error: apps/wave-1/kustomization.yaml differs from the render"),
        "{err}"
    );
    assert!(
        err.contains("error: apps/wave-3/kustomization.yaml should not be there"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&edited).unwrap(), by_hand);

    // Writing puts the render back; the stale file is not plumb's and stays, with a warning.
    let (code, _, err) = run(&["render"], dir.path());
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("wrote apps/wave-1/kustomization.yaml"),
        "{err}"
    );
    assert!(
        err.contains("warning: apps/wave-3/kustomization.yaml"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&edited).unwrap(), text);
}

#[test]
fn a_bad_catalog_is_exit_2_with_file_and_line() {
    let dir = homelab_copy();
    let path = dir.path().join("catalog/dev-box.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("  - monitoring\n", "  - monitorng\n")).unwrap();
    let (code, out, err) = run(&["render", "--check"], dir.path());
    assert_eq!(code, Some(2), "{out}{err}");
    assert_eq!(
        err.trim_end(),
        "error: catalog/dev-box.yaml:7: app `dev-box` depends on `monitorng`, which is not in the catalog; did you mean `monitoring`?"
    );
}

#[test]
fn table_prints_the_waves_as_markdown() {
    let (code, out, err) = run(&["render", "--table"], &homelab());
    assert_eq!(code, Some(0), "{err}");
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip(2)
        .map(|l| l.split(" | ").take(3).collect())
        .collect();
    assert_eq!(
        rows,
        vec![
            vec!["| 0", "apps-wave-0", "podinfo"],
            vec!["| 1 (pinned)", "apps-wave-1", "backup"],
            vec!["| 1", "apps-wave-1", "monitoring"],
            vec!["| 2", "apps-wave-2", "dev-box"],
        ]
    );
}
