//! `plumb diff` on a git history the test makes with the real `git`: one commit per kind of
//! pull request (a Renovate image bump, a chart version bump rendered by a real helm, a
//! `cluster-vars` value used by several Kustomizations, a values ConfigMap that changes a
//! HelmRelease's render, a parent's patch of its child Kustomizations, an object moved to
//! another Kustomization, a PersistentVolumeClaim removed under `prune: true`, a StatefulSet
//! selector changed, a Secret's values changed, a Kustomization broken). Each is diffed against
//! its parent commit; text, markdown and JSON are insta snapshots, and the JSON is checked for
//! each change and each danger exactly once. Then the default base, the work tree as head,
//! `--exit-code`, `--base-path`, and the errors of bad revisions, shallow clones and directories
//! that are not repositories.

#[path = "support/cli.rs"]
mod cli;
#[path = "support/git.rs"]
mod git;
#[path = "support/helm.rs"]
mod helm;
#[path = "support/schema.rs"]
mod schema;

use cli::write;
use git::git;
use helm::plumb;
use serde_json::Value;
use std::path::Path;

fn commit(dir: &Path, message: &str) -> String {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
    git(dir, &["rev-parse", "--short", "HEAD"])
}

fn edit(root: &Path, rel: &str, from: &str, to: &str) {
    let path = root.join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{rel} does not contain {from:?}");
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

const SYNC: &str = "apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec:
  interval: 1m
  url: ssh://git@example.com/platform
  ref: {branch: main}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec:
  interval: 10m
  path: ./clusters/dev
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
";

fn kustomization(name: &str, vars: bool) -> String {
    let post_build = if vars {
        "  postBuild:\n    substituteFrom:\n      - {kind: ConfigMap, name: cluster-vars}\n"
    } else {
        ""
    };
    format!(
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: {name}, namespace: flux-system}}\nspec:\n  interval: 10m\n  path: ./{name}\n  prune: true\n  sourceRef: {{kind: GitRepository, name: flux-system}}\n{post_build}"
    )
}

fn deployment(name: &str, image: &str, env: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: apps}}\nspec:\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n        - name: {name}\n          image: {image}\n{env}"
    )
}

/// The repository every scenario starts from.
fn initial(root: &Path) {
    write(root, "clusters/dev/flux-system/gotk-sync.yaml", SYNC);
    write(
        root,
        "clusters/dev/flux-system/kustomization.yaml",
        "resources: [gotk-sync.yaml]\n",
    );
    write(
        root,
        "clusters/dev/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [flux-system, vars.yaml, apps.yaml]\n",
    );
    write(
        root,
        "clusters/dev/vars.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster-vars, namespace: flux-system}\ndata:\n  DOMAIN: example.com\n",
    );
    write(
        root,
        "clusters/dev/apps.yaml",
        &[
            kustomization("apps", true),
            kustomization("infra", false),
            kustomization("db", true),
        ]
        .join("---\n"),
    );
    write(
        root,
        "apps/kustomization.yaml",
        "resources: [web.yaml, api.yaml, secret.yaml]\n",
    );
    write(
        root,
        "apps/web.yaml",
        &deployment(
            "web",
            "ghcr.io/example/web:1.4.2",
            "          env:\n            - {name: HOST, value: \"web.${DOMAIN}\"}\n",
        ),
    );
    write(
        root,
        "apps/api.yaml",
        &deployment("api", "ghcr.io/example/api:2.0.0", ""),
    );
    write(
        root,
        "apps/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: api-keys, namespace: apps}\nstringData:\n  token: first-token-value\n  user: admin\n",
    );
    write(
        root,
        "infra/kustomization.yaml",
        "resources: [release.yaml, values.yaml]\n",
    );
    write(
        root,
        "infra/release.yaml",
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: app, namespace: infra}\nspec:\n  interval: 30m\n  chart:\n    spec:\n      chart: ./charts/app\n      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}\n  valuesFrom:\n    - {kind: ConfigMap, name: app-values}\n",
    );
    write(
        root,
        "infra/values.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-values, namespace: infra}\ndata:\n  values.yaml: |\n    replicaCount: 1\n",
    );
    write(
        root,
        "charts/app/Chart.yaml",
        "apiVersion: v2\nname: app\nversion: 1.0.0\nappVersion: \"1.0.0\"\n",
    );
    write(root, "charts/app/values.yaml", "replicaCount: 1\n");
    write(
        root,
        "charts/app/templates/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n  labels:\n    helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}\n    app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}\nspec:\n  replicas: {{ .Values.replicaCount }}\n  selector:\n    matchLabels: {app: {{ .Release.Name }}}\n  template:\n    metadata:\n      labels:\n        app: {{ .Release.Name }}\n        helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}\n    spec:\n      containers:\n        - name: app\n          image: nginx:1.27.0\n",
    );
    write(
        root,
        "db/kustomization.yaml",
        "resources: [statefulset.yaml, pvc.yaml]\n",
    );
    write(
        root,
        "db/statefulset.yaml",
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: pg, namespace: db}\nspec:\n  serviceName: pg\n  selector:\n    matchLabels: {app: pg}\n  template:\n    metadata:\n      labels: {app: pg}\n    spec:\n      containers:\n        - name: pg\n          image: postgres:16.4\n          env:\n            - {name: DOMAIN, value: \"db.${DOMAIN}\"}\n",
    );
    write(
        root,
        "db/pvc.yaml",
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: backup, namespace: db}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests: {storage: 10Gi}\n",
    );
}

/// What one scenario must show: (action, producer, object) of every change, and
/// (code, object) of every danger.
struct Expect {
    name: &'static str,
    changes: &'static [(&'static str, &'static str, &'static str)],
    dangers: &'static [(&'static str, &'static str)],
}

/// The scenarios, in commit order: each edits the tree left by the previous one.
fn scenarios(root: &Path) -> Vec<(Expect, String, String)> {
    let mut out = Vec::new();
    let mut parent = commit(root, "initial");
    let mut step = |expect: Expect, change: &dyn Fn(&Path)| {
        change(root);
        let id = commit(root, expect.name);
        out.push((expect, parent.clone(), id.clone()));
        parent = id;
    };
    step(
        Expect {
            name: "renovate-image-bump",
            changes: &[
                (
                    "changed",
                    "Kustomization flux-system/apps",
                    "Deployment apps/web",
                ),
                (
                    "changed",
                    "Kustomization flux-system/apps",
                    "Deployment apps/api",
                ),
            ],
            dangers: &[],
        },
        &|r| {
            edit(r, "apps/web.yaml", "web:1.4.2", "web:1.4.3");
            edit(r, "apps/api.yaml", "api:2.0.0", "api:3.0.0");
        },
    );
    step(
        Expect {
            name: "chart-version-bump",
            changes: &[("changed", "HelmRelease infra/app", "Deployment infra/app")],
            dangers: &[],
        },
        &|r| {
            edit(
                r,
                "charts/app/Chart.yaml",
                "version: 1.0.0",
                "version: 1.1.0",
            );
            edit(r, "charts/app/Chart.yaml", "\"1.0.0\"", "\"1.1.0\"");
            edit(
                r,
                "charts/app/templates/deployment.yaml",
                "image: nginx:1.27.0\n",
                "image: nginx:1.27.0\n          resources:\n            limits: {memory: 128Mi}\n",
            );
        },
    );
    step(
        Expect {
            name: "cluster-vars-value",
            changes: &[
                (
                    "changed",
                    "Kustomization flux-system/flux-system",
                    "ConfigMap flux-system/cluster-vars",
                ),
                (
                    "changed",
                    "Kustomization flux-system/apps",
                    "Deployment apps/web",
                ),
                (
                    "changed",
                    "Kustomization flux-system/db",
                    "StatefulSet db/pg",
                ),
            ],
            dangers: &[],
        },
        &|r| edit(r, "clusters/dev/vars.yaml", "example.com", "example.org"),
    );
    step(
        Expect {
            name: "values-configmap",
            changes: &[
                (
                    "changed",
                    "Kustomization flux-system/infra",
                    "ConfigMap infra/app-values",
                ),
                ("changed", "HelmRelease infra/app", "Deployment infra/app"),
            ],
            dangers: &[],
        },
        &|r| edit(r, "infra/values.yaml", "replicaCount: 1", "replicaCount: 3"),
    );
    step(
        Expect {
            name: "parent-patch",
            changes: &[
                (
                    "changed",
                    "Kustomization flux-system/flux-system",
                    "Kustomization flux-system/apps",
                ),
                (
                    "changed",
                    "Kustomization flux-system/apps",
                    "Deployment apps/web",
                ),
                (
                    "changed",
                    "Kustomization flux-system/apps",
                    "Deployment apps/api",
                ),
                (
                    "changed",
                    "Kustomization flux-system/apps",
                    "Secret apps/api-keys",
                ),
            ],
            dangers: &[],
        },
        &|r| {
            edit(
                r,
                "clusters/dev/kustomization.yaml",
                "resources: [flux-system, vars.yaml, apps.yaml]\n",
                "resources: [flux-system, vars.yaml, apps.yaml]\npatches:\n  - target: {kind: Kustomization, name: apps}\n    patch: |\n      - op: add\n        path: /spec/commonMetadata\n        value: {labels: {team: platform}}\n",
            );
        },
    );
    step(
        Expect {
            name: "moved-object",
            changes: &[(
                "moved",
                "Kustomization flux-system/infra",
                "Deployment apps/api",
            )],
            dangers: &[],
        },
        &|r| {
            std::fs::rename(r.join("apps/api.yaml"), r.join("infra/api.yaml")).unwrap();
            edit(
                r,
                "apps/kustomization.yaml",
                "web.yaml, api.yaml,",
                "web.yaml,",
            );
            edit(
                r,
                "infra/kustomization.yaml",
                "values.yaml]",
                "values.yaml, api.yaml]",
            );
        },
    );
    step(
        Expect {
            name: "pvc-deleted-with-prune",
            changes: &[(
                "removed",
                "Kustomization flux-system/db",
                "PersistentVolumeClaim db/backup",
            )],
            dangers: &[("DIF003", "PersistentVolumeClaim db/backup")],
        },
        &|r| {
            edit(r, "db/kustomization.yaml", ", pvc.yaml]", "]");
            std::fs::remove_file(r.join("db/pvc.yaml")).unwrap();
        },
    );
    step(
        Expect {
            name: "statefulset-selector",
            changes: &[(
                "changed",
                "Kustomization flux-system/db",
                "StatefulSet db/pg",
            )],
            dangers: &[("DIF001", "StatefulSet db/pg")],
        },
        &|r| {
            edit(
                r,
                "db/statefulset.yaml",
                "matchLabels: {app: pg}",
                "matchLabels: {app: postgres}",
            );
            edit(
                r,
                "db/statefulset.yaml",
                "labels: {app: pg}",
                "labels: {app: postgres}",
            );
        },
    );
    step(
        Expect {
            name: "secret-values",
            changes: &[(
                "changed",
                "Kustomization flux-system/apps",
                "Secret apps/api-keys",
            )],
            dangers: &[],
        },
        &|r| {
            edit(
                r,
                "apps/secret.yaml",
                "first-token-value",
                "second-token-value",
            );
            edit(
                r,
                "apps/secret.yaml",
                "user: admin\n",
                "user: admin\n  extra: added-value\n",
            );
        },
    );
    step(
        Expect {
            name: "kustomization-broken",
            changes: &[],
            dangers: &[],
        },
        &|r| {
            edit(
                r,
                "apps/kustomization.yaml",
                "web.yaml,",
                "web.yaml, missing.yaml,",
            )
        },
    );
    out
}

/// (action, producer, object) of every change in a `plumb.diff/v1` document.
fn changes_of(doc: &Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for c in doc["clusters"].as_array().unwrap() {
        for p in c["producers"].as_array().unwrap() {
            let producer = format!(
                "{} {}/{}",
                p["kind"].as_str().unwrap(),
                p["namespace"].as_str().unwrap(),
                p["name"].as_str().unwrap()
            );
            for ch in p["changes"].as_array().unwrap() {
                out.push((
                    ch["action"].as_str().unwrap().to_string(),
                    producer.clone(),
                    object(&ch["object"]),
                ));
            }
        }
    }
    out
}

fn object(o: &Value) -> String {
    let ns = o["namespace"].as_str().unwrap();
    let (kind, name) = (o["kind"].as_str().unwrap(), o["name"].as_str().unwrap());
    if ns.is_empty() {
        format!("{kind} {name}")
    } else {
        format!("{kind} {ns}/{name}")
    }
}

fn diff(repo: &Path, cache: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec!["diff", "--color", "never"];
    all.extend_from_slice(args);
    plumb(repo, cache, &all)
}

#[test]
fn each_kind_of_pull_request_shows_its_changes_and_dangers_once() {
    let repo = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let root = repo.path();
    git(root, &["init", "-q"]);
    initial(root);
    let scenarios = scenarios(root);
    let mut failures = Vec::new();
    let mut documents = Vec::new();
    for (expect, base, head) in &scenarios {
        let revs = ["--base", base.as_str(), "--head", head.as_str()];
        let (code, json, stderr) = diff(root, cache.path(), &[&revs[..], &["-o", "json"]].concat());
        assert_eq!(code, Some(0), "{}: {stderr}", expect.name);
        let doc: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
        documents.push((expect.name.to_string(), json.clone()));
        let mut got = changes_of(&doc);
        let mut want: Vec<(String, String, String)> = expect
            .changes
            .iter()
            .map(|(a, p, o)| (a.to_string(), p.to_string(), o.to_string()))
            .collect();
        got.sort();
        want.sort();
        if got != want {
            failures.push(format!(
                "{}: changes {got:?}, expected {want:?}",
                expect.name
            ));
        }
        let mut dangers: Vec<(String, String)> = doc["dangers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["code"].as_str().unwrap().to_string(),
                    object(&d["object"]),
                )
            })
            .collect();
        dangers.sort();
        let want: Vec<(String, String)> = expect
            .dangers
            .iter()
            .map(|(c, o)| (c.to_string(), o.to_string()))
            .collect();
        if dangers != want {
            failures.push(format!(
                "{}: dangers {dangers:?}, expected {want:?}",
                expect.name
            ));
        }
        let (_, text, _) = diff(root, cache.path(), &revs);
        let (_, markdown, _) = diff(
            root,
            cache.path(),
            &[&revs[..], &["-o", "markdown"]].concat(),
        );
        insta::assert_snapshot!(format!("diff_{}_text", expect.name), text);
        insta::assert_snapshot!(format!("diff_{}_markdown", expect.name), markdown);
        insta::assert_snapshot!(format!("diff_{}_json", expect.name), json);
        // Secret values never reach any output.
        for secret in ["first-token-value", "second-token-value", "added-value"] {
            for (format, out) in [("text", &text), ("markdown", &markdown), ("json", &json)] {
                if out.contains(secret) {
                    failures.push(format!(
                        "{}: {format} shows the secret {secret}",
                        expect.name
                    ));
                }
            }
        }
    }
    failures.extend(schema::schema_errors("diff.schema.json", &documents));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A clone of a repository holding [`initial`], with a feature branch tracking `origin/main`.
fn clone_with_feature(dir: &Path) -> std::path::PathBuf {
    let origin = dir.join("origin");
    std::fs::create_dir_all(&origin).unwrap();
    git(&origin, &["init", "-q"]);
    initial(&origin);
    commit(&origin, "initial");
    let work = dir.join("work");
    git(dir, &["clone", "-q", origin.to_str().unwrap(), "work"]);
    git(
        &work,
        &["checkout", "-q", "-b", "feature", "--track", "origin/main"],
    );
    work
}

#[test]
fn the_default_base_is_the_merge_base_and_the_default_head_the_work_tree() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let work = clone_with_feature(dir.path());
    // main moves on after the branch was made: the base stays where the branch forked.
    let origin = dir.path().join("origin");
    edit(&origin, "apps/api.yaml", "api:2.0.0", "api:9.9.9");
    commit(&origin, "later on main");
    git(&work, &["fetch", "-q"]);
    // An uncommitted edit is part of the head.
    edit(&work, "apps/web.yaml", "web:1.4.2", "web:1.5.0");
    let (code, json, stderr) = diff(&work, cache.path(), &["-o", "json", "--exit-code"]);
    assert_eq!(code, Some(1), "{stderr}");
    let doc: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["base"]["label"], "merge base of HEAD and origin/main");
    assert_eq!(doc["head"]["label"], "work tree");
    assert_eq!(
        changes_of(&doc),
        vec![(
            "changed".to_string(),
            "Kustomization flux-system/apps".to_string(),
            "Deployment apps/web".to_string()
        )]
    );
    assert_eq!(doc["images"][0]["to"], "1.5.0");
    // Nothing is left behind in the repository: no worktree, no checkout.
    assert_eq!(git(&work, &["status", "--porcelain"]), "M apps/web.yaml");
    assert_eq!(git(&work, &["worktree", "list"]).lines().count(), 1);

    // No difference: exit 0 even with --exit-code.
    git(&work, &["checkout", "-q", "--", "."]);
    let (code, text, stderr) = diff(&work, cache.path(), &["--exit-code"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        text.contains("no change to what the clusters apply"),
        "{text}"
    );
}

#[test]
fn a_directory_outside_git_is_diffed_against_a_base_path() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let (base, head) = (dir.path().join("base"), dir.path().join("head"));
    initial(&base);
    initial(&head);
    edit(&head, "db/pvc.yaml", "storage: 10Gi", "storage: 5Gi");
    let (code, text, stderr) = diff(&head, cache.path(), &[]);
    assert_eq!(code, Some(2));
    assert!(text.is_empty());
    assert!(
        stderr.contains("not inside a git repository") && stderr.contains("--base-path DIR"),
        "{stderr}"
    );
    let (code, text, stderr) = diff(
        &head,
        cache.path(),
        &["--base-path", base.to_str().unwrap()],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        text.contains("DIF002") && text.contains("from 10Gi to 5Gi"),
        "{text}"
    );
}

#[test]
fn bad_revisions_and_shallow_clones_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let work = clone_with_feature(dir.path());
    let (code, out, stderr) = diff(&work, cache.path(), &["--base", "no-such-branch"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(out.is_empty());
    assert!(
        stderr.contains("unknown revision `no-such-branch`"),
        "{stderr}"
    );
    let (code, _, stderr) = diff(&work, cache.path(), &["--head", "deadbeef"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("deadbeef"), "{stderr}");

    // A shallow clone whose history stops before the merge base.
    let origin = dir.path().join("origin");
    edit(&origin, "apps/api.yaml", "api:2.0.0", "api:2.1.0");
    commit(&origin, "second");
    let url = format!("file://{}", origin.display());
    git(
        dir.path(),
        &["clone", "-q", "--depth", "1", &url, "shallow"],
    );
    let shallow = dir.path().join("shallow");
    git(&shallow, &["checkout", "-q", "-b", "feature"]);
    edit(&shallow, "apps/web.yaml", "web:1.4.2", "web:1.4.3");
    commit(&shallow, "feature work");
    // Two commits, so that the one after the merge base is not in the shallow history.
    edit(&origin, "apps/api.yaml", "api:2.1.0", "api:2.2.0");
    commit(&origin, "third");
    edit(&origin, "apps/api.yaml", "api:2.2.0", "api:2.3.0");
    commit(&origin, "fourth");
    git(&shallow, &["fetch", "-q", "--depth", "1", "origin", "main"]);
    git(
        &shallow,
        &["branch", "-q", "--set-upstream-to", "origin/main"],
    );
    let (code, _, stderr) = diff(&shallow, cache.path(), &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("shallow"), "{stderr}");
    assert!(
        stderr.contains("--unshallow") || stderr.contains("--base"),
        "{stderr}"
    );

    // A flag the command does not have is a usage error too.
    let (code, _, _) = diff(&work, cache.path(), &["--max-bytes", "10"]);
    assert_eq!(code, Some(2));
}

#[test]
fn danger_codes_are_explained() {
    let out = assert_cmd::Command::cargo_bin("plumb")
        .unwrap()
        .args(["explain", "dif003"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("DIF003 (StatefulObjectPruned): "),
        "{text}"
    );
    assert!(text.contains("## Why is this bad?"), "{text}");
    let out = assert_cmd::Command::cargo_bin("plumb")
        .unwrap()
        .args(["explain", "--list"])
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&out.stdout);
    for code in [
        "DIF001", "DIF002", "DIF003", "DIF004", "DIF005", "DIF006", "DIF007", "DIF008",
    ] {
        assert!(list.contains(code), "{code} not listed");
    }
}
