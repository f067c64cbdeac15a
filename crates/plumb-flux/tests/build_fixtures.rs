//! One fixture repository per layout real Flux repositories use, each built with
//! `build_repository` and compared with its committed snapshot (`expected.txt`: the YAML
//! stream, the diagnostics, the graph). `PLUMB_BLESS=1` rewrites the snapshots; review the diff.
//!
//! A fixture is `tests/fixtures/<layout>/repo/` plus an optional `options.txt` (`entry: PATH`
//! lines, `no-strict`, `git-remote: URL` to build a copy of the repository whose
//! `.git/config` has that `origin`, `git-branch: NAME` for the branch its HEAD names). The snapshot ends with the notes of what the build assumed
//! and its summary line.

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
    let options_text = std::fs::read_to_string(dir.join("options.txt")).unwrap_or_default();
    let option = |name: &str| {
        options_text
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::to_string)
    };
    let remote = option("git-remote: ");
    let branch = option("git-branch: ");
    // A checkout with a remote: a copy of the fixture with `.git/config` (git keeps no `.git`
    // inside a repository's tree).
    let copy = tempfile::tempdir().expect("tempdir");
    let repo = match &remote {
        Some(url) => {
            copy_tree(&dir.join("repo"), copy.path());
            std::fs::create_dir_all(copy.path().join(".git")).expect("mkdir .git");
            std::fs::write(
                copy.path().join(".git/config"),
                format!("[core]\n\tbare = false\n[remote \"origin\"]\n\turl = {url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"),
            )
            .expect("write .git/config");
            if let Some(branch) = &branch {
                std::fs::write(
                    copy.path().join(".git/HEAD"),
                    format!("ref: refs/heads/{branch}\n"),
                )
                .expect("write .git/HEAD");
            }
            copy.path().to_path_buf()
        }
        None => dir.join("repo"),
    };
    let result = build_repository(&repo, &options).expect("fixture builds");
    let mut out = String::from("=== build\n");
    out.push_str(&result.to_yaml(&|_| true));
    out.push_str("=== diagnostics\n");
    for d in result.diagnostics() {
        out.push_str(&d.to_string());
        out.push('\n');
    }
    out.push_str("=== graph\n");
    out.push_str(&graph::render(&result, Format::Text));
    out.push_str("=== bootstrap\n");
    for entry in &result.entries {
        let b = &entry.bootstrap;
        for file in &b.files {
            out.push_str(&format!("file {}\n", file.display()));
        }
        for o in &b.objects {
            out.push_str(&format!("object {}\n", o.display_id()));
        }
        for r in &b.releases {
            out.push_str(&format!(
                "release {}/{} {} {} ({}:{})\n",
                r.namespace.as_deref().unwrap_or(""),
                r.name,
                r.chart.as_deref().unwrap_or(""),
                r.version.as_deref().unwrap_or(""),
                r.file.display(),
                r.line
            ));
        }
    }
    out.push_str("=== notes\n");
    for why in result.assumptions() {
        out.push_str(&format!(
            "note: {}\n  = help: {}\n",
            why.message(),
            why.help()
        ));
    }
    // With a `positions` line in options.txt: where each built object was read from, a file of
    // the repository, also for the objects of an ExternalArtifact staged outside it.
    let positions = std::fs::read_to_string(dir.join("options.txt"))
        .is_ok_and(|t| t.lines().any(|l| l == "positions"));
    if positions {
        out.push_str("=== positions\n");
        for entry in &result.entries {
            for ks in &entry.kustomizations {
                for o in &ks.objects {
                    let place = o
                        .origin
                        .as_ref()
                        .and_then(|n| n.span.as_ref())
                        .map(|s| {
                            let file = s.file.path();
                            match file.strip_prefix(&repo) {
                                Ok(rel) => format!("{}:{}", rel.display(), s.location().line),
                                Err(_) => "outside the repository".to_string(),
                            }
                        })
                        .unwrap_or_else(|| "no position".into());
                    out.push_str(&format!(
                        "{} {}  {place}\n",
                        ks.kustomization.key(),
                        o.display_id()
                    ));
                }
            }
        }
    }
    out.push_str("=== summary\n");
    out.push_str(&result.summary().to_string());
    out.push('\n');
    out
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read fixture") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
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

/// The repository's `.sourceignore` files leave out of the kustomization kustomize-controller
/// generates what source-controller leaves out of the artifact: a CI workflow (root rule), a
/// scratch directory and drafts (a rule of `apps/`, one draft taken back with `!`).
#[test]
fn sourceignore() {
    check("sourceignore");
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

/// A required substituteFrom source that nothing produces fails the substitution: one error,
/// not one more for each variable it would have defined (mthorley/k8s-gitops).
#[test]
fn substitute_from_missing_is_one_error() {
    check("substitute-from-missing");
    let snapshot = snapshot("substitute-from-missing");
    let errors = snapshot.lines().filter(|l| l.starts_with("error")).count();
    assert_eq!(errors, 1, "{snapshot}");
    assert!(snapshot.contains("error: substitute from 'Secret/cluster-vars' error: secrets \"cluster-vars\" not found in namespace flux-system"), "{snapshot}");
    let diagnostics = snapshot
        .split("=== diagnostics")
        .nth(1)
        .and_then(|rest| rest.split("=== graph").next())
        .unwrap_or_default();
    assert!(!diagnostics.contains("DOMAIN"), "{diagnostics}");
}

/// A Kustomization substituting from a Secret that a sibling's ClusterExternalSecret creates at
/// runtime, with no dependsOn between them, the sibling substituting from it too
/// (ahgraber/homelab-gitops-k3s): no Kustomization has all its sources before the others are
/// built. Flux retries it until the Secret exists, so it builds, with the Secret's values as
/// placeholders.
#[test]
fn substitute_from_a_sibling_is_built_once_the_sibling_is() {
    check("substitute-from-sibling");
    let snapshot = snapshot("substitute-from-sibling");
    assert!(
        !snapshot.lines().any(|l| l.starts_with("error")),
        "{snapshot}"
    );
    assert!(
        snapshot.contains("url: https://app.RUNTIME-SECRET:cluster-vars:DOMAIN"),
        "{snapshot}"
    );
}

#[test]
fn var_in_path() {
    check("var-in-path");
}

/// The same child paths under a parent without postBuild: a defaulted variable names the
/// parent's missing postBuild as the cause; an undefined one says either may be.
#[test]
fn var_in_path_without_post_build() {
    check("var-in-path-no-postbuild");
    let expected = snapshot("var-in-path-no-postbuild");
    assert!(expected.contains("`./infra/ingress/${CLUSTER:=staging}` holds a variable nothing substituted: Kustomization flux-system/infra has no postBuild, and a default applies only where substitution runs"), "{expected}");
    assert!(expected.contains("`./infra/ingress/${CLUSTER}` holds a variable nothing substituted: Kustomization flux-system/infra has no postBuild, or the variable is not defined"), "{expected}");
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

/// The Flux monorepo example: one checkout split by an ArtifactGenerator into an
/// infrastructure and an apps ExternalArtifact per cluster, each consumed by Kustomizations;
/// every object's position is a file of the repository.
#[test]
fn monorepo_artifacts() {
    check("monorepo-artifacts");
}

/// Every way an ArtifactGenerator fails, each a diagnostic at the line of the generator that
/// is wrong (or, for an ExternalArtifact nothing generates, at the sourceRef, naming what is
/// generated).
#[test]
fn artifact_generator_errors() {
    check("artifact-generator-errors");
}

/// `spec.pathPattern`: an ExternalArtifact per matching directory, consumed by name.
#[test]
fn artifact_generator_path_pattern() {
    check("artifact-generator-path-pattern");
}

/// The build is the same whatever the number of threads.
#[test]
fn bootstrap_uncommitted() {
    check("bootstrap-uncommitted");
}

#[test]
fn flux_instance_helm_values() {
    check("flux-instance-helm-values");
}

#[test]
fn oci_sync() {
    check("oci-sync");
}

#[test]
fn oci_sync_mapped_to_a_subdirectory() {
    check("oci-sync-subdir");
}

#[test]
fn checkout_remote() {
    check("checkout-remote");
}

#[test]
fn runtime_and_bootstrap() {
    check("runtime-and-bootstrap");
}

#[test]
fn oci_sync_artifact_root() {
    check("oci-sync-artifact-root");
}

#[test]
fn self_produced_substitute_from() {
    check("self-produced");
}

#[test]
fn error_places() {
    check("error-places");
}

#[test]
fn artifact_generator() {
    check("artifact-generator");
}

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

/// A tenant's GitRepository of the checkout's own remote at another branch (fluxcd's
/// multi-tenancy example): another tree, to be fetched, never this checkout; the base it lives
/// in is listed by a kustomization.yaml, so it is no cluster entry of its own.
#[test]
fn tenant_branch() {
    check("tenant-branch");
}

/// The `flux bootstrap` Kustomization of an entry whose kustomization no longer lists its
/// directory still builds the entry: it is the root, and a Kustomization that dependsOn it
/// waits for nothing missing.
#[test]
fn sync_outside_build() {
    check("sync-outside-build");
}

/// A ConfigMap bootstrap applied and a Kustomization applies again is the Kustomization's for
/// `substituteFrom`: Flux's apply replaced it in the cluster.
#[test]
fn bootstrap_then_flux() {
    check("bootstrap-then-flux");
}
