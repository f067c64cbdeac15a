//! `plumb build` and `plumb graph` as a user runs them: output formats, the `--ks` filter,
//! strictness, and exit codes (0 built, 1 build errors in the repository, 2 usage or
//! configuration errors). The builds themselves are snapshot-tested in plumb-flux.

#[path = "support/cli.rs"]
mod cli;

use assert_cmd::Command;
use std::fs;
use std::path::{Path, PathBuf};

fn plumb() -> Command {
    Command::cargo_bin("plumb").expect("binary built")
}

fn fixture(layout: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plumb-flux/tests/fixtures")
        .join(layout)
        .join("repo")
}

fn run(args: &[&str], repo: &Path) -> (Option<i32>, String, String) {
    let out = plumb().args(args).arg(repo).output().expect("runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn yaml_groups_each_kustomization_under_a_source_comment() {
    let (code, out, err) = run(&["build"], &fixture("substitute-from"));
    assert_eq!(code, Some(0), "{err}");
    let comments: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("# Source: "))
        .collect();
    assert_eq!(
        comments,
        vec![
            "# Source: Kustomization flux-system/flux-system (clusters/dev)",
            "# Source: Kustomization flux-system/apps (apps)",
            "# Source: Kustomization flux-system/cluster-config (cluster-config/dev)",
        ]
    );
    assert!(out.contains("- --host=secret-wins.example.com\n"), "{out}");
    assert!(out.contains("  replicas: 3\n"), "{out}");
}

#[test]
fn json_follows_the_documented_schema() {
    let (code, out, err) = run(&["build", "-o", "json"], &fixture("substitute-from"));
    assert_eq!(code, Some(0), "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(doc["schema"], "plumb.build/v1");
    assert_eq!(doc["errors"], serde_json::json!([]));
    let ks = doc["kustomizations"].as_array().expect("list");
    assert_eq!(ks.len(), 3);
    let apps = &ks[1];
    for field in [
        "namespace",
        "name",
        "path",
        "source",
        "depends_on",
        "objects",
        "errors",
    ] {
        assert!(apps.get(field).is_some(), "missing {field}: {apps}");
    }
    assert_eq!(apps["name"], "apps");
    assert_eq!(apps["path"], "apps");
    assert_eq!(apps["source"], "GitRepository/flux-system/flux-system");
    assert_eq!(
        apps["depends_on"],
        serde_json::json!(["flux-system/cluster-config"])
    );
    assert_eq!(apps["objects"][1]["spec"]["replicas"], 3);
}

#[test]
fn names_and_ks_filter() {
    let (code, out, _) = run(
        &["build", "-o", "names", "--ks", "flux-system/cluster-config"],
        &fixture("substitute-from"),
    );
    assert_eq!(code, Some(0));
    assert_eq!(
        out,
        "ConfigMap/flux-system/cluster-vars\nSecret/flux-system/cluster-secrets\n"
    );
    let (code, _, err) = run(
        &["build", "--ks", "nope/nothing"],
        &fixture("substitute-from"),
    );
    assert_eq!(code, Some(2));
    assert!(err.contains("--ks nope/nothing"), "{err}");
}

#[test]
fn build_errors_exit_1_with_file_line_and_chain() {
    let (code, _, err) = run(&["build", "-o", "names"], &fixture("errors"));
    assert_eq!(code, Some(1));
    for expected in [
        "error: dependsOn cycle: flux-system/databases → flux-system/operators → flux-system/databases",
        "--> clusters/dev/cycle.yaml:8:7",
        "--> clusters/dev/broken-path.yaml:8:9",
        "--> infra/operators/operator.yaml:5:11",
        "= via: flux-system/flux-system → flux-system/vendor",
        "error: source GitRepository/flux-system/vendor-charts not found",
        "--> infra/strict/config.yaml:8:9",
    ] {
        assert!(err.contains(expected), "missing {expected:?} in:\n{err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn no_strict_substitutes_missing_vars_as_empty() {
    let repo = fixture("errors");
    let strict = plumb()
        .args([
            "build",
            "--entry",
            "clusters/dev",
            "--ks",
            "flux-system/strict",
        ])
        .arg(&repo)
        .output()
        .expect("runs");
    assert_eq!(strict.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&strict.stderr)
        .contains("variable not set (strict mode): \"zone\""));
    let lenient = plumb()
        .args(["build", "--no-strict", "--ks", "flux-system/strict"])
        .arg(&repo)
        .output()
        .expect("runs");
    let out = String::from_utf8_lossy(&lenient.stdout);
    assert!(out.contains("  region: eu-west-1\n  zone: null\n"), "{out}");
}

#[test]
fn a_bootstrap_of_flux_before_2_9_substitutes_leniently() {
    // janfuhrer/fluxcd-monorepo: `flux bootstrap` of Flux v0.32.0, whose kustomize-controller
    // puts an empty string for an undefined variable; its version heads gotk-components.yaml.
    let tmp = tempfile::tempdir().expect("tempdir");
    copy_dir(&fixture("errors"), tmp.path());
    fs::write(
        tmp.path()
            .join("clusters/dev/flux-system/gotk-components.yaml"),
        "---\n# This manifest was generated by flux. DO NOT EDIT.\n# Flux Version: v0.32.0\n",
    )
    .expect("write");
    let (code, out, err) = run(
        &[
            "build",
            "--entry",
            "clusters/dev",
            "--ks",
            "flux-system/strict",
        ],
        tmp.path(),
    );
    // The fixture's other Kustomizations fail on purpose; `strict` is built.
    assert_eq!(code, Some(1), "{err}");
    assert!(!err.contains("variable not set (strict mode)"), "{err}");
    assert!(out.contains("  zone: null\n"), "{out}");
    assert!(
        err.contains("clusters/dev/flux-system/gotk-components.yaml (written by `flux bootstrap`) installs Flux v0.32.0: postBuild substitution is lenient there"),
        "{err}"
    );
}

#[test]
fn usage_and_configuration_errors_exit_2() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (code, _, err) = run(&["build"], tmp.path());
    assert_eq!(code, Some(2));
    assert!(err.contains("no entry path"), "{err}");
    let (code, _, err) = run(
        &["build", "--entry", "clusters/missing"],
        &fixture("shared-base"),
    );
    assert_eq!(code, Some(2));
    assert!(err.contains("clusters/missing"), "{err}");
    fs::write(tmp.path().join(".plumb.yaml"), "clusterz: [a]\n").expect("write");
    let (code, _, err) = run(&["build"], tmp.path());
    assert_eq!(code, Some(2));
    assert!(
        err.contains("unknown key `clusterz`; did you mean `clusters`?"),
        "{err}"
    );
    let (code, _, _) = run(&["build", "-o", "xml"], tmp.path());
    assert_eq!(code, Some(2));
}

#[test]
fn several_entries_share_a_base() {
    let (code, out, err) = run(&["build", "-o", "names"], &fixture("shared-base"));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.matches("Deployment/web/web\n").count(), 2, "{out}");
    let (_, yaml, _) = run(
        &["build", "--entry", "clusters/prod"],
        &fixture("shared-base"),
    );
    assert!(
        yaml.contains("    env: prod\n") && !yaml.contains("env: dev"),
        "{yaml}"
    );
}

#[test]
fn graph_formats() {
    let repo = fixture("substitute-from");
    let (code, text, _) = run(&["graph"], &repo);
    assert_eq!(code, Some(0));
    assert!(
        text.contains("flux-system/apps  apps  [wave 1]  in flux-system/flux-system  dependsOn: flux-system/cluster-config"),
        "{text}"
    );
    let (_, mermaid, _) = run(&["graph", "-o", "mermaid"], &repo);
    assert!(mermaid.starts_with("flowchart TB\n"), "{mermaid}");
    assert!(mermaid.contains("-. dependsOn .->"), "{mermaid}");
    let (_, dot, _) = run(&["graph", "-o", "dot"], &repo);
    assert!(dot.starts_with("digraph plumb {"), "{dot}");
    assert!(
        dot.contains("[style=dashed, label=\"dependsOn\", constraint=false]"),
        "{dot}"
    );
    assert!(
        dot.contains("rankdir=LR") && dot.contains("{ rank=same; "),
        "{dot}"
    );
    let (code, _, _) = run(&["graph"], &fixture("errors"));
    assert_eq!(code, Some(1));
}

/// HelmReleases sit no earlier than their Kustomization's wave and after the releases they
/// depend on; both text lists go by wave, then name; releases have an edge from their chart
/// source.
#[test]
fn graph_waves_order_releases_after_their_dependencies() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = |rel: &str, text: &str| {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    };
    let ks = |name: &str, path: &str, deps: &str| {
        format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: {name}, namespace: flux-system}}\nspec:\n  interval: 1h\n  path: {path}\n  prune: true\n  sourceRef: {{kind: GitRepository, name: flux-system}}\n{deps}")
    };
    let hr = |name: &str, deps: &str| {
        format!("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {{name: {name}, namespace: apps}}\nspec:\n  interval: 1h\n  chartRef: {{kind: OCIRepository, name: {name}}}\n{deps}")
    };
    write("clusters/dev/flux-system/gotk-sync.yaml", "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: flux-system, namespace: flux-system}\nspec:\n  interval: 1m\n  url: ssh://git@example.com/r\n  ref: {branch: main}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: flux-system, namespace: flux-system}\nspec:\n  interval: 10m\n  path: ./clusters/dev\n  prune: true\n  sourceRef: {kind: GitRepository, name: flux-system}\n");
    write(
        "clusters/dev/ks.yaml",
        &format!(
            "{}---\n{}",
            ks("zeta", "./zeta", ""),
            ks("alpha", "./alpha", "  dependsOn: [{name: zeta}]\n")
        ),
    );
    write("zeta/release.yaml", &hr("database", ""));
    write(
        "alpha/release.yaml",
        &hr("web", "  dependsOn: [{name: cache}]\n"),
    );
    write("alpha/cache.yaml", &hr("cache", ""));
    let (code, text, stderr) = run(&["graph", "--no-helm"], root);
    assert_eq!(code, Some(0), "{stderr}");
    let order: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("helmreleases"))
        .skip(1)
        .map(|l| l.trim().split("  ").next().unwrap())
        .collect();
    assert_eq!(order, ["apps/database", "apps/cache", "apps/web"], "{text}");
    assert!(
        text.contains("apps/database  OCIRepository/apps/database  [wave 0]"),
        "{text}"
    );
    assert!(
        text.contains("apps/cache  OCIRepository/apps/cache  [wave 1]"),
        "{text}"
    );
    assert!(
        text.contains("apps/web  OCIRepository/apps/web  [wave 2]"),
        "{text}"
    );
    let ks_order: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("kustomizations"))
        .skip(1)
        .take_while(|l| !l.contains("helmreleases"))
        .map(|l| l.trim().split("  ").next().unwrap())
        .collect();
    assert_eq!(
        ks_order,
        [
            "flux-system/flux-system",
            "flux-system/zeta",
            "flux-system/alpha"
        ],
        "{text}"
    );
    let (_, dot, _) = run(&["graph", "--no-helm", "-o", "dot"], root);
    let (code, svg, _) = run(&["graph", "--no-helm", "-o", "svg"], root);
    assert_eq!(code, Some(0));
    assert!(
        svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\""),
        "{svg}"
    );
    for label in [
        "wave 0",
        "wave 2",
        "HelmRelease apps/web",
        "Kustomization flux-system/alpha",
        "OCIRepository apps",
    ] {
        assert!(svg.contains(label), "{label} missing: {svg}");
    }
    // Sources, then waves 0, 1, 2: four columns.
    let width: usize = svg
        .split("width=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(width < 2000, "{width}");
    // The GitRepository and three chart sources, three Kustomizations, three releases.
    assert_eq!(svg.matches("<g class=").count(), 4 + 3 + 3, "{svg}");
    // The chart source of each release is a node with an edge to it.
    assert_eq!(dot.matches("(not in the build)").count(), 3, "{dot}");
    assert_eq!(
        dot.matches("[style=dotted, arrowhead=none]").count(),
        3 + 3,
        "{dot}"
    );
}

#[test]
fn notes_and_the_summary_line_say_what_was_assumed_and_built() {
    let (code, _, err) = run(
        &["build", "-o", "names"],
        &fixture("flux-instance-helm-values"),
    );
    // The flux-instance chart is on ghcr.io, which the tests do not reach: the build is
    // incomplete.
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("note: GitRepository/flux-system/flux-system is created by HelmRelease flux-system/flux-instance (values of the flux-instance chart): taken to be this repository"),
        "{err}"
    );
    assert!(
        err.contains("  --> kubernetes/apps/flux-system/flux-instance/helmrelease.yaml:"),
        "{err}"
    );
    let last = err.lines().last().unwrap_or_default();
    assert_eq!(
        last,
        "plumb: 2 Kustomizations in 1 cluster: 2 built, 0 failed, 0 not built; 3 objects; 1 HelmRelease: 0 rendered, 1 unavailable (chart could not be fetched)"
    );
    let (_, _, quiet) = run(
        &["-q", "build", "-o", "names"],
        &fixture("flux-instance-helm-values"),
    );
    assert_eq!(quiet, "", "-q prints only errors");
}

#[test]
fn json_gives_a_failed_kustomization_its_error_code() {
    // The checkout's remote says home-ops is this repository: only remote-crds, whose objects
    // are all in namespace crds, is unavailable, and the typo's GitRepository is missing.
    let repo = tempfile::tempdir().expect("tempdir");
    copy_dir(&fixture("checkout-remote"), repo.path());
    fs::create_dir_all(repo.path().join(".git")).expect("mkdir .git");
    fs::write(
        repo.path().join(".git/config"),
        "[remote \"origin\"]\n\turl = git@github.com:example/home-ops.git\n",
    )
    .expect("write .git/config");
    fs::write(repo.path().join(".git/HEAD"), "ref: refs/heads/main\n").expect("write HEAD");
    let (code, doc, err) = offline_json(repo.path(), false);
    assert_eq!(code, Some(1), "{err}");
    let typo = doc["kustomizations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "typo")
        .expect("the typo Kustomization");
    assert_eq!(typo["status"], "failed");
    assert_eq!(typo["errors"][0]["code"], "source-not-found");
    assert_eq!(doc["entries"][0]["failed"], 1);
}

/// `plumb build -o json --offline` (with `-v` when `verbose`) of `repo` with an empty cache,
/// where the other repositories cannot be had: the exit code, the JSON and standard error.
fn offline_json(repo: &Path, verbose: bool) -> (Option<i32>, serde_json::Value, String) {
    let cache = tempfile::tempdir().expect("tempdir");
    let cache_dir = cache.path().to_string_lossy().into_owned();
    let mut args = vec![
        "build",
        "-o",
        "json",
        "--offline",
        "--cache-dir",
        &cache_dir,
    ];
    if verbose {
        args.push("-v");
    }
    let (code, out, err) = run(&args, repo);
    let doc = serde_json::from_str(&out).expect("JSON");
    (code, doc, err)
}

/// A copy of the directory tree `from` at `to`.
fn copy_dir(from: &Path, to: &Path) {
    for entry in fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            fs::create_dir_all(&target).expect("mkdir");
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

#[test]
fn json_has_codes_statuses_and_assumptions() {
    let (code, doc, err) = offline_json(&fixture("checkout-remote"), true);
    assert_eq!(code, Some(1), "{err}");
    let status = |name: &str| {
        doc["kustomizations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["name"] == name)
            .map(|k| {
                (
                    k["status"].clone(),
                    k["errors"].clone(),
                    k["reason"].clone(),
                )
            })
            .unwrap()
    };
    // Offline, platform's source (this repository, but nothing says so) is another repository
    // that could not be had: it may define the GitRepository typo names.
    let (s, errors, reason) = status("typo");
    assert_eq!(s, "not-built");
    assert_eq!(errors, serde_json::json!([]));
    assert!(
        reason
            .as_str()
            .unwrap()
            .contains("may be an object of Kustomization flux-system/platform"),
        "{reason}"
    );
    let (s, _, reason) = status("remote-crds");
    assert_eq!(s, "unavailable");
    assert!(reason
        .as_str()
        .unwrap()
        .contains("https://github.com/example/charts"));
    assert_eq!(doc["entries"][0]["failed"], 0);
    // Without the checkout's remote, home-ops is another repository too.
    assert_eq!(doc["entries"][0]["unavailable"], 2);
    assert!(
        err.contains(
            "unavailable flux-system/remote-crds (crds): source GitRepository/flux-system/charts"
        ),
        "{err}"
    );
}

#[test]
fn artifact_generators_leave_no_staging_directory_behind() {
    // ArtifactGenerators stage their ExternalArtifacts in a temporary directory: it must be
    // gone when the process has exited, whatever the output format.
    let repo = fixture("artifact-generator");
    for output in ["yaml", "json", "names"] {
        let tmp = tempfile::tempdir().expect("temporary directory");
        let out = plumb()
            .args(["build", "--offline", "--no-helm", "-o", output])
            .arg(&repo)
            .env("TMPDIR", tmp.path())
            .output()
            .expect("runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        // The Deployment is built from the staged artifact: the staging did happen.
        assert!(stdout.contains("Deployment"), "{output}: {stdout}");
        let left: Vec<_> = fs::read_dir(tmp.path())
            .expect("listed")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert!(left.is_empty(), "{output}: left behind in TMPDIR: {left:?}");
    }
}

#[test]
fn warnings_at_one_place_are_printed_once_unless_verbose() {
    // Three Kustomizations substitute from one SOPS-encrypted Secret with no age key: three
    // warnings at the Secret's lines.
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    cli::copy_dir(&fixture("sops-substitute-from"), &repo);
    for app in ["photos", "music"] {
        fs::create_dir_all(repo.join(app)).unwrap();
        fs::write(
            repo.join(app).join("config.yaml"),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {app}\n  namespace: {app}\ndata:\n  key: ${{S3_ACCESS_KEY}}\n"),
        )
        .unwrap();
        let ks = format!("---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {app}\n  namespace: flux-system\nspec:\n  dependsOn:\n    - name: secrets\n  interval: 10m\n  path: ./{app}\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  postBuild:\n    substituteFrom:\n      - kind: Secret\n        name: cluster-secrets\n");
        let apps = repo.join("clusters/dev/apps.yaml");
        let text = fs::read_to_string(&apps).unwrap() + &ks;
        fs::write(&apps, text).unwrap();
    }
    let sops =
        "warning: Secret flux-system/cluster-secrets is SOPS-encrypted and no age key is given";
    let (code, _, err) = run(&["build", "-o", "names"], &repo);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err.matches(sops).count(), 1, "{err}");
    assert!(
        err.contains("  --> secrets/cluster-secrets.sops.yaml:")
            && err.contains("  = and 2 more warnings at this place, for other Kustomizations (`-v` prints each)\n"),
        "{err}"
    );
    let (code, _, err) = run(&["build", "-o", "names", "-v"], &repo);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err.matches(sops).count(), 3, "{err}");
    assert!(!err.contains("more warnings at this place"), "{err}");
}

#[test]
fn an_entry_directory_that_fails_to_build_is_counted_in_the_summary() {
    // No Flux Kustomization syncs the entry: it is built as it stands, and is not one of the
    // Kustomizations the summary counts.
    let tmp = tempfile::tempdir().expect("tempdir");
    let kustomization = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - missing.yaml\n";
    cli::write(tmp.path(), "clusters/dev/kustomization.yaml", kustomization);
    let entry = ["--entry", "clusters/dev"];
    let (code, _, err) = run(
        &[&["build", "-o", "names"][..], &entry].concat(),
        tmp.path(),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("error: kustomize build failed"), "{err}");
    assert_eq!(
        err.lines().last().unwrap_or_default(),
        "plumb: 0 Kustomizations in 1 cluster: 0 built, 0 failed, 0 not built, 1 entry directory failed to build; 0 objects",
        "{err}"
    );
    let (_, _, err) = run(&[&["check", "--offline"][..], &entry].concat(), tmp.path());
    assert!(
        err.contains("checked 0 of 0 Kustomizations in 1 cluster; not checked: 1 entry directory that failed to build"),
        "{err}"
    );

    // Built, the entry is not mentioned.
    cli::write(
        tmp.path(),
        "clusters/dev/missing.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: dev\n",
    );
    let (code, _, err) = run(
        &[&["build", "-o", "names"][..], &entry].concat(),
        tmp.path(),
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        err.lines().last().unwrap_or_default(),
        "plumb: 0 Kustomizations in 1 cluster: 0 built, 0 failed, 0 not built; 1 object",
        "{err}"
    );
}

#[test]
fn what_could_not_be_fetched_is_named_without_verbose() {
    // Offline with an empty cache: the other repositories cannot be had, which makes the
    // build incomplete; without -v the summary counted them and nothing said which.
    let cache = tempfile::tempdir().expect("tempdir");
    let cache_dir = cache.path().to_string_lossy().into_owned();
    let args = [
        "build",
        "-o",
        "names",
        "--offline",
        "--cache-dir",
        &cache_dir,
    ];
    let (code, _, err) = run(&args, &fixture("checkout-remote"));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(
            "unavailable flux-system/remote-crds (crds): source GitRepository/flux-system/charts"
        ),
        "{err}"
    );
    assert!(
        err.contains("2 unavailable (source could not be fetched)"),
        "{err}"
    );
    // What was built is listed with -v only.
    assert!(!err.contains(": built "), "{err}");
    let (_, _, verbose) = run(&[&args[..], &["-v"]].concat(), &fixture("checkout-remote"));
    assert!(verbose.contains(": built "), "{verbose}");
}
