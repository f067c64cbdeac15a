//! One fixture repository per layout real Flux repositories use, each built with
//! `build_repository` and compared with its committed snapshot (`expected.txt`: the YAML
//! stream, the diagnostics, the graph). `PLUMB_BLESS=1` rewrites the snapshots; review the diff.
//!
//! A fixture is `tests/fixtures/<layout>/repo/` plus an optional `options.txt` (`entry: PATH`
//! lines, `no-strict`).

use plumb_flux::build::{build_repository, Options};
use plumb_flux::graph::{self, Format};
use plumb_flux::varsub::Mode;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn snapshot(layout: &str) -> String {
    let dir = fixtures().join(layout);
    let mut options = Options::default();
    if let Ok(text) = std::fs::read_to_string(dir.join("options.txt")) {
        for line in text.lines() {
            if let Some(entry) = line.strip_prefix("entry: ") {
                options.entries.push(entry.to_string());
            } else if line == "no-strict" {
                options.mode = Mode::Lenient;
            }
        }
    }
    let result = build_repository(&dir.join("repo"), &options).expect("fixture builds");
    let mut out = String::from("=== build\n");
    out.push_str(&result.to_yaml(&|_| true));
    out.push_str("=== diagnostics\n");
    for d in result.diagnostics() {
        out.push_str(&d.to_string());
        out.push('\n');
    }
    out.push_str("=== graph\n");
    out.push_str(&graph::render(&result, Format::Text));
    out
}

fn check(layout: &str) {
    let got = snapshot(layout);
    let path = fixtures().join(layout).join("expected.txt");
    if std::env::var_os("PLUMB_BLESS").is_some() {
        std::fs::write(&path, &got).expect("write snapshot");
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with PLUMB_BLESS=1 to create it)",
            path.display()
        )
    });
    if got != want {
        let diff: Vec<String> = want
            .lines()
            .zip(got.lines())
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .take(5)
            .map(|(i, (a, b))| format!("line {}:\n  want: {a}\n  got:  {b}", i + 1))
            .collect();
        panic!(
            "{layout}: build differs from {} ({} vs {} lines)\n{}\n--- full output ---\n{got}",
            path.display(),
            want.lines().count(),
            got.lines().count(),
            diff.join("\n")
        );
    }
}

#[test]
fn entry_without_kustomization() {
    check("entry-without-kustomization");
}

#[test]
fn parent_patches_children() {
    check("parent-patches-children");
}

#[test]
fn components() {
    check("components");
}

#[test]
fn substitute_from() {
    check("substitute-from");
}

#[test]
fn var_in_path() {
    check("var-in-path");
}

#[test]
fn oci_mapped() {
    check("oci-mapped");
}

#[test]
fn shared_base() {
    check("shared-base");
}

#[test]
fn flux_instance() {
    check("flux-instance");
}

#[test]
fn errors() {
    check("errors");
}

/// A Secret read through substituteFrom that no key can decrypt: its values become a visible
/// placeholder and a warning, never an empty string.
#[test]
fn sops_substitute_from() {
    check("sops-substitute-from");
}

/// The build is the same whatever the number of threads.
#[test]
fn deterministic_across_thread_counts() {
    let layouts = ["substitute-from", "shared-base", "errors"];
    for layout in layouts {
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool")
            .install(|| snapshot(layout));
        let many = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .expect("pool")
            .install(|| snapshot(layout));
        assert_eq!(one, many, "{layout}");
    }
}
