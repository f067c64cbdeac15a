//! What a new user trips over in the first hour (issue #17, items 3-8; items 1, 2, 9-11 are in cli_first_hour.rs), as they see it: the
//! exit code and the message of a wrong argument, a broken `.plumb.yaml`, a store that cannot be
//! probed, names and paths in messages, malformed Flux fields. The S3 tests need
//! `PLUMB_MOTO_SERVER`; run through scripts/test.

#[path = "support/cli.rs"]
mod cli;
#[path = "../../plumb-state/tests/support/moto.rs"]
mod moto;

use cli::write;
use moto::Moto;
use std::path::Path;
use std::process::Command;

/// Exit code, stdout and stderr of `plumb ARGS`, run in `cwd`, without the user's
/// configuration or any AWS setting of the machine running the tests.
fn plumb_in(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_plumb"));
    command
        .args(args)
        .current_dir(cwd)
        .env("PLUMB_CONFIG", cwd.join("no-user-config.yaml"))
        .env_remove("PLUMB_STATE_STORE");
    for (name, _) in std::env::vars() {
        if name.starts_with("AWS_") {
            command.env_remove(name);
        }
    }
    for (name, value) in env {
        command.env(name, value);
    }
    let out = command.output().expect("plumb runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn plumb(args: &[&str]) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    plumb_in(dir.path(), args, &[])
}

const CONFIG_MAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n";

/// A Flux Kustomization `flux-system/NAME` building `./PATH`.
fn flux_kustomization(name: &str, path: &str) -> String {
    format!(
        "apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: {name}
  namespace: flux-system
spec:
  interval: 10m
  path: ./{path}
  sourceRef:
    kind: GitRepository
    name: flux-system
"
    )
}

/// Two clusters syncing the same Kustomization `flux-system/apps`, and a plain kustomize
/// directory no Flux Kustomization syncs, holding a HelmRelease.
fn two_clusters_and_a_plain_directory(root: &Path) {
    write(
        root,
        "clusters/a/apps.yaml",
        &flux_kustomization("apps", "apps"),
    );
    write(
        root,
        "clusters/b/apps.yaml",
        &flux_kustomization("apps", "apps"),
    );
    write(
        root,
        "apps/kustomization.yaml",
        "resources: [settings.yaml]\n",
    );
    write(root, "apps/settings.yaml", CONFIG_MAP);
    write(
        root,
        "plain/kustomization.yaml",
        "resources: [settings.yaml, release.yaml]\n",
    );
    write(root, "plain/settings.yaml", CONFIG_MAP);
    write(
        root,
        "plain/release.yaml",
        "apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: default
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      sourceRef:
        kind: HelmRepository
        name: podinfo
",
    );
}

fn repo_str(repo: &Path) -> &str {
    repo.to_str().unwrap()
}

// Item 3: `plumb state probe` on a store it cannot test.

#[test]
fn probe_of_an_unreachable_store_could_not_test() {
    let port = moto::free_port();
    let store = format!("s3://state/p?endpoint=http://127.0.0.1:{port}&region=us-east-1");
    let credentials = moto::AWS_ENV;
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = plumb_in(
        dir.path(),
        &["state", "probe", "--store", &store],
        &credentials,
    );
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(
        err.starts_with(
            "error: could not test the store: s3://state/p (endpoint http://127.0.0.1:"
        ),
        "{err}"
    );
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    assert!(!out.contains("NOT SAFE"), "{out}");
}

#[test]
fn probe_of_a_missing_bucket_could_not_test() {
    let moto = Moto::start();
    let store = format!(
        "s3://no-such-bucket/p?endpoint={}&region=us-east-1",
        moto.endpoint()
    );
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = plumb_in(
        dir.path(),
        &["state", "probe", "--store", &store],
        &moto::AWS_ENV,
    );
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(
        err.contains("could not test the store: s3://no-such-bucket/p")
            && err.contains("the bucket does not exist"),
        "{err}"
    );
    assert!(!out.contains("NOT SAFE"), "{out}");
}

#[test]
fn probe_without_credentials_names_the_endpoint() {
    let moto = Moto::start();
    moto.create_bucket("state");
    let endpoint = moto.endpoint();
    let store = format!("s3://state/p?endpoint={endpoint}&region=us-east-1");
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = plumb_in(dir.path(), &["state", "probe", "--store", &store], &[]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(
        err.contains(&format!("no credentials for the server at {endpoint}"))
            && err.contains("AWS_ACCESS_KEY_ID"),
        "{err}"
    );
    assert!(!err.contains("169.254"), "{err}");
    // With credentials the same store is probed, and safe.
    let (code, out, err) = plumb_in(
        dir.path(),
        &["state", "probe", "--store", &store, "--rounds", "1"],
        &moto::AWS_ENV,
    );
    assert_eq!(code, Some(0), "{out}{err}");
}

#[test]
fn a_plain_directory_is_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let (code, out, err) = plumb_in(
        dir.path(),
        &["state", "probe", "--store", store.to_str().unwrap()],
        &[],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains(&format!("probe of file://{}", store.display())) || out.contains("probe of"),
        "{out}"
    );
    assert!(out.contains("safe: all 11 properties honoured"), "{out}");
    // Relative to the current directory, as a path on the command line is.
    let env = [("PLUMB_STATE_PASSPHRASE", "first hour")];
    let (code, _, err) = plumb_in(
        dir.path(),
        &[
            "state",
            "init",
            "--stack",
            "apps",
            "--store",
            "relative/store",
        ],
        &env,
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(dir.path().join("relative/store").is_dir());
}

// Item 4: `--entry` as an absolute path.

#[test]
fn an_absolute_entry_inside_the_repository_is_the_same_entry() {
    let repo = tempfile::tempdir().unwrap();
    two_clusters_and_a_plain_directory(repo.path());
    let root = repo_str(repo.path());
    let absolute = repo.path().join("clusters/a");
    let (code, by_absolute, err) = plumb(&[
        "build",
        root,
        "-o",
        "names",
        "--entry",
        absolute.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let (code, by_relative, err) = plumb(&["build", root, "-o", "names", "--entry", "clusters/a"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(by_absolute, by_relative);
    assert!(by_absolute.contains("ConfigMap//settings"), "{by_absolute}");

    let outside = tempfile::tempdir().unwrap();
    let (code, _, err) = plumb(&["build", root, "--entry", repo_str(outside.path())]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "entry path {} is outside the repository",
            outside.path().display()
        )) && err.contains("it must be relative to the repository root"),
        "{err}"
    );
}

// Item 5: `.plumb.yaml` validated once, the same way, every error at once.

const BROKEN_CONFIG: &str = "clusters: [clusters/a]
kubernetesVersion: banana
placeholder: [x]
rules:
  selec: [PIN]
sources: 3
";

#[test]
fn every_command_reports_every_error_of_the_configuration() {
    let repo = tempfile::tempdir().unwrap();
    two_clusters_and_a_plain_directory(repo.path());
    write(repo.path(), ".plumb.yaml", BROKEN_CONFIG);
    let root = repo_str(repo.path());
    let expected =
        "error: .plumb.yaml:2: `kubernetesVersion` must be a version such as \"1.33\", not `banana`
error: .plumb.yaml:3: unknown key `placeholder`; did you mean `placeholders`?
error: .plumb.yaml:5: unknown key `selec` in `rules`; did you mean `select`?
error: .plumb.yaml:6: `sources` must be a list of mappings
";
    for command in [
        vec!["build", root],
        vec!["check", root],
        vec!["graph", root],
        vec!["verify", root],
        vec!["render", root],
    ] {
        let (code, out, err) = plumb(&command);
        assert_eq!(code, Some(2), "{command:?}: {out}{err}");
        assert_eq!(err, expected, "{command:?}");
    }
    // diff validates each side's own file, named by its side.
    let base = tempfile::tempdir().unwrap();
    two_clusters_and_a_plain_directory(base.path());
    let (code, _, err) = plumb(&["diff", "--base-path", repo_str(base.path()), root]);
    assert_eq!(code, Some(2), "{err}");
    for line in [
        ".plumb.yaml:2: ",
        ".plumb.yaml:3: ",
        ".plumb.yaml:5: ",
        ".plumb.yaml:6: ",
    ] {
        assert!(err.contains(line), "{line}: {err}");
    }
    assert_eq!(err.matches("error: ").count(), 4, "{err}");
    assert!(!err.contains(root), "{err}");
}

#[test]
fn a_mistake_in_the_render_block_is_reported_by_every_command() {
    let repo = tempfile::tempdir().unwrap();
    two_clusters_and_a_plain_directory(repo.path());
    write(
        repo.path(),
        ".plumb.yaml",
        "kubernetesVersion: banana\nrender:\n  catalog: \"\"\n",
    );
    let root = repo_str(repo.path());
    let expected =
        "error: .plumb.yaml:1: `kubernetesVersion` must be a version such as \"1.33\", not `banana`
error: .plumb.yaml:3: `render.catalog` must be a non-empty string
";
    for command in [
        vec!["build", root],
        vec!["check", root],
        vec!["render", root],
    ] {
        let (code, out, err) = plumb(&command);
        assert_eq!(code, Some(2), "{command:?}: {out}{err}");
        assert_eq!(err, expected, "{command:?}");
    }
    // Without a render: block, the commands that do not render do not ask for one.
    write(repo.path(), ".plumb.yaml", "kubernetesVersion: banana\n");
    let (_, _, err) = plumb(&["build", root]);
    assert_eq!(err.matches("error: ").count(), 1, "{err}");
}

#[test]
fn every_wrong_item_inside_one_key_is_reported() {
    let repo = tempfile::tempdir().unwrap();
    two_clusters_and_a_plain_directory(repo.path());
    write(
        repo.path(),
        ".plumb.yaml",
        "rules:\n  selec: [SUB001]\n  ignor: [SUB002]\n  ignore: [NOPE1, NOPE2]\nsources:\n  - 7\n  - 8\noverlays:\n  paths: 1\n  mayPatch: 2\n",
    );
    let (code, out, err) = plumb(&["check", repo_str(repo.path())]);
    assert_eq!(code, Some(2), "{out}{err}");
    for line in [2, 3, 4, 6, 7, 9, 10] {
        assert!(
            err.contains(&format!("error: .plumb.yaml:{line}: ")),
            "line {line}: {err}"
        );
    }
    // Both wrong codes of one line.
    assert!(err.contains("`NOPE1`") && err.contains("`NOPE2`"), "{err}");
    // In the order of the file.
    let lines: Vec<usize> = err
        .lines()
        .filter_map(|l| l.strip_prefix("error: .plumb.yaml:"))
        .filter_map(|l| l.split(':').next()?.parse().ok())
        .collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted, "{err}");
}

// Item 6: names of entries and Kustomizations.

#[test]
fn ks_without_a_slash_is_a_usage_error() {
    let repo = tempfile::tempdir().unwrap();
    two_clusters_and_a_plain_directory(repo.path());
    let (code, out, err) = plumb(&["build", repo_str(repo.path()), "--ks", "apps"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("invalid value 'apps' for '--ks <NS/NAME>'")
            && err.contains("is not NAMESPACE/NAME"),
        "{err}"
    );
}

#[test]
fn the_known_kustomizations_are_listed_once_each() {
    let repo = tempfile::tempdir().unwrap();
    two_clusters_and_a_plain_directory(repo.path());
    let root = repo_str(repo.path());
    let (code, _, err) = plumb(&[
        "build",
        root,
        "--entry",
        "clusters/a",
        "--entry",
        "clusters/b",
        "--ks",
        "flux-system/nope",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(
            "--ks flux-system/nope: no such Kustomization in this build (known: flux-system/flux-system, flux-system/apps)\n"
        ),
        "{err}"
    );
    let (code, _, err) = plumb(&[
        "build",
        root,
        "--entry",
        "plain",
        "--ks",
        "flux-system/apps",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("(none: no Flux Kustomization syncs the entries"),
        "{err}"
    );
    assert!(!err.contains("/plain"), "{err}");
}

#[test]
fn an_entry_without_a_kustomization_is_named_entry_path() {
    let repo = tempfile::tempdir().unwrap();
    two_clusters_and_a_plain_directory(repo.path());
    let (code, out, err) = plumb(&[
        "build",
        repo_str(repo.path()),
        "--entry",
        "plain",
        "--no-helm",
        "-o",
        "json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(doc["helm_releases"][0]["kustomization"], "entry plain");
    assert!(!out.contains("\"/plain\""), "{out}");
}

#[test]
fn names_of_several_entries_are_separated_by_entry() {
    let repo = tempfile::tempdir().unwrap();
    two_clusters_and_a_plain_directory(repo.path());
    let (code, out, err) = plumb(&[
        "build",
        repo_str(repo.path()),
        "--entry",
        "clusters/a",
        "--entry",
        "clusters/b",
        "-o",
        "names",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        out,
        "# Entry: clusters/a
Kustomization/flux-system/apps
ConfigMap//settings
# Entry: clusters/b
Kustomization/flux-system/apps
ConfigMap//settings
"
    );
    let (code, out, _) = plumb(&[
        "build",
        repo_str(repo.path()),
        "--entry",
        "clusters/a",
        "-o",
        "names",
    ]);
    assert_eq!(code, Some(0));
    assert!(!out.contains("# Entry"), "{out}");
}

// Item 7: paths in messages, relative and once; a generated kustomization named as such.

#[test]
fn a_generated_kustomization_is_named_as_generated() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    write(
        root,
        "clusters/dev/apps.yaml",
        &flux_kustomization("apps", "apps"),
    );
    // No kustomization.yaml: kustomize-controller generates one listing both files.
    write(root, "apps/a.yaml", CONFIG_MAP);
    write(root, "apps/b.yaml", CONFIG_MAP);
    let (code, _, err) = plumb(&["build", repo_str(root), "-o", "names"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(
            "may not add resource with an already registered id: ConfigMap.v1.[noGrp]/settings.[noNs] (in the kustomization.yaml kustomize-controller generates for this directory, which has none)\n  --> apps\n"
        ),
        "{err}"
    );
    assert!(!err.contains("apps/kustomization.yaml"), "{err}");
}

#[test]
fn a_missing_file_is_named_relative_to_the_repository_once() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    write(
        root,
        "clusters/dev/apps.yaml",
        &flux_kustomization("apps", "apps"),
    );
    write(
        root,
        "apps/kustomization.yaml",
        "resources:\n  - missing.yaml\n",
    );
    let (code, _, err) = plumb(&["build", repo_str(root), "-o", "names"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(
            "accumulating resources from 'missing.yaml': apps/missing.yaml: no such file or directory\n  --> apps/kustomization.yaml:2:1\n"
        ),
        "{err}"
    );
    let canonical = root.canonicalize().unwrap();
    assert!(!err.contains(canonical.to_str().unwrap()), "{err}");
}

// Item 8: malformed Flux fields, with file and line.

#[test]
fn malformed_flux_fields_are_diagnosed_with_file_and_line() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    write(
        root,
        "apps/kustomization.yaml",
        "resources: [settings.yaml]\n",
    );
    write(root, "apps/settings.yaml", CONFIG_MAP);
    write(
        root,
        "clusters/dev/apps.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  path: ./apps
  sourceRef:
    kind: GitRepository
    name: flux-system
  dependsOn: infra
  postBuild:
    substitute: [a, b]
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: no-source
  namespace: flux-system
spec:
  interval: 10m
  path: ./apps
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: bad-kind
  namespace: flux-system
spec:
  interval: 10m
  path: ./apps
  sourceRef:
    kind: GitRepo
    name: flux-system
  dependsOn:
    - namespace: flux-system
",
    );
    let (code, _, err) = plumb(&["build", repo_str(root), "-o", "names"]);
    assert_eq!(code, Some(1), "{err}");
    for expected in [
        "error: spec.dependsOn must be a list, not a string: the API server refuses this Kustomization\n  --> clusters/dev/apps.yaml:12:14\n",
        "error: spec.postBuild.substitute must be a mapping of variable: value, not a list: the API server refuses this Kustomization\n  --> clusters/dev/apps.yaml:14:17\n",
        "error: this Kustomization has no spec.sourceRef: the API server refuses it\n  --> clusters/dev/apps.yaml:22:3\n",
        "error: spec.sourceRef.kind `GitRepo` is not a kind a Kustomization builds from: the API server refuses this Kustomization\n  --> clusters/dev/apps.yaml:34:11\n",
        "= help: did you mean `GitRepository`?",
        "error: spec.dependsOn[0] must be a mapping with a `name` (and an optional `namespace`), not a mapping\n  --> clusters/dev/apps.yaml:37:7\n",
    ] {
        assert!(err.contains(expected), "{expected}\n---\n{err}");
    }
    // The wrong sourceRef is reported once, not again as a source that is not found.
    assert!(!err.contains("not found"), "{err}");
}

#[test]
fn a_kustomization_without_a_name_is_diagnosed() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    write(
        root,
        "apps/kustomization.yaml",
        "resources: [settings.yaml]\n",
    );
    write(root, "apps/settings.yaml", CONFIG_MAP);
    write(
        root,
        "clusters/dev/apps.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  namespace: flux-system
spec:
  interval: 10m
  path: ./apps
  sourceRef:
    kind: GitRepository
    name: flux-system
",
    );
    let (code, out, err) = plumb(&["build", repo_str(root), "-o", "names"]);
    assert_eq!(code, Some(1), "{err}");
    // kustomize-controller's build of clusters/dev refuses a resource without a name, as
    // kustomize does, before anything reaches the API server.
    assert!(
        err.contains(
            "accumulating resources from './apps.yaml': clusters/dev/apps.yaml:1:1: missing metadata.name in object (apiVersion `kustomize.toolkit.fluxcd.io/v1`, kind `Kustomization`)"
        ),
        "{err}"
    );
    // Nothing of it is built.
    assert!(!out.contains("ConfigMap//settings"), "{out}");
}

#[test]
fn a_repository_that_is_not_there_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-repo");
    let missing = missing.to_str().unwrap();
    for command in ["build", "check", "graph"] {
        let (code, _, err) = plumb(&[command, missing]);
        assert_eq!(code, Some(2), "{command}: {err}");
        assert_eq!(
            err,
            format!("error: repository {missing} is not a directory\n"),
            "{command}"
        );
    }
}

#[test]
fn render_without_a_configuration_names_it_relative_to_the_repository() {
    let repo = tempfile::tempdir().unwrap();
    let (code, _, err) = plumb(&["render", repo_str(repo.path())]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.starts_with("error: .plumb.yaml: the repository has no .plumb.yaml"),
        "{err}"
    );
}

#[test]
fn an_empty_store_is_refused_with_what_a_store_is() {
    let (code, out, err) = plumb(&["state", "probe", "--store", ""]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(
        err.contains("use file:///dir, a directory path, or s3://bucket/prefix"),
        "{err}"
    );
}

#[test]
fn verify_with_a_missing_kubeconfig_fails_before_building() {
    let repo = tempfile::tempdir().unwrap();
    two_clusters_and_a_plain_directory(repo.path());
    let missing = repo.path().join("no-such-kubeconfig");
    let (code, _, err) = plumb(&[
        "verify",
        repo_str(repo.path()),
        "--kubeconfig",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot load the kubeconfig"), "{err}");
    assert!(err.contains("no-such-kubeconfig"), "{err}");
    // Nothing of the build came first: no helm warning, no summary line.
    assert!(!err.contains("HelmReleases"), "{err}");
    assert!(!err.contains("plumb: "), "{err}");
}
