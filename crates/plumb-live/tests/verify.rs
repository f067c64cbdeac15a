//! The cluster checks through the real `kube` client against the in-process API server of
//! support/fake_api.rs, starting from the homelab cluster in sync of support/cluster.rs; one
//! scenario per test changes it.

#[path = "support/cluster.rs"]
mod cluster;
#[path = "support/fake_api.rs"]
mod fake_api;

use cluster::{homelab, in_sync, item, revision, COMMIT};
use fake_api::{FakeApi, State};
use plumb_flux::build::EntryBuild;
use plumb_live::{verify, Check, Cluster, Expect, LiveError, Outcome};
use serde_json::{json, Value};
use std::path::Path;

/// Runs the checks of `entry` against `state`: (checks, requests made).
fn run(entry: &EntryBuild, state: State) -> (Vec<Check>, Vec<String>) {
    let api = FakeApi::start(state);
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::connect(Some(&api.kubeconfig(dir.path())), None).unwrap();
    let live = cluster.read(&plumb_live::checks::wanted(entry)).unwrap();
    let checks = verify(
        entry,
        &live,
        &Expect {
            commit: Some(COMMIT.into()),
        },
    );
    (checks, api.requests())
}

fn failures(checks: &[Check]) -> Vec<&Check> {
    checks
        .iter()
        .filter(|c| c.outcome == Outcome::Fail)
        .collect()
}

#[test]
fn a_cluster_in_sync_passes_every_check_with_one_list_per_kind() {
    let entry = homelab();
    let started = std::time::Instant::now();
    let (checks, requests) = run(&entry, in_sync(&entry));
    let seconds = started.elapsed().as_secs_f64();
    eprintln!("verify of examples/homelab clusters/dev against the fake API: {seconds:.3} s, {} requests, {} checks", requests.len(), checks.len());
    assert!(failures(&checks).is_empty(), "{:#?}", failures(&checks));
    for kind in ["reconcile", "inventory", "drift", "owner", "controllers"] {
        assert!(
            checks
                .iter()
                .any(|c| c.check == kind && c.outcome == Outcome::Pass),
            "no passing {kind} check"
        );
    }
    let mut lists = requests.clone();
    lists.sort();
    let before = lists.len();
    lists.dedup();
    assert_eq!(before, lists.len(), "a path was asked twice: {requests:?}");
    assert!(
        requests.iter().all(|r| r.starts_with("GET ")),
        "{requests:?}"
    );
}

#[test]
fn a_kustomization_at_an_older_revision_suspended_or_not_ready_fails_with_the_evidence() {
    let entry = homelab();
    let mut state = in_sync(&entry);
    item(&mut state, "Kustomization", "platform")["status"]["lastAppliedRevision"] =
        json!("main@sha1:1111111111111111111111111111111111111111");
    item(&mut state, "Kustomization", "apps-wave-0")["spec"]["suspend"] = json!(true);
    let wave1 = item(&mut state, "Kustomization", "apps-wave-1");
    wave1["status"]["conditions"][0] = json!({"type": "Ready", "status": "False", "reason": "HealthCheckFailed",
        "message": "timeout waiting for: [Deployment/media/jellyfin status: 'InProgress']"});
    let (checks, _) = run(&entry, state);
    let fail = |subject: &str| -> String {
        failures(&checks)
            .iter()
            .filter(|c| c.check == "reconcile" && c.subject == subject)
            .flat_map(|c| c.evidence.clone())
            .collect::<Vec<_>>()
            .join("; ")
    };
    assert!(
        fail("Kustomization flux-system/platform")
            .contains("status.lastAppliedRevision \"main@sha1:1111"),
        "{checks:#?}"
    );
    assert!(fail("Kustomization flux-system/apps-wave-0").contains("spec.suspend: true"));
    assert!(fail("Kustomization flux-system/apps-wave-1")
        .contains("HealthCheckFailed): timeout waiting for"));
    assert_eq!(
        failures(&checks)
            .iter()
            .filter(|c| c.check == "reconcile")
            .count(),
        3,
        "{:#?}",
        failures(&checks)
    );
}

#[test]
fn a_source_behind_the_repository_fails() {
    let entry = homelab();
    let mut state = in_sync(&entry);
    let old = json!("main@sha1:2222222222222222222222222222222222222222");
    item(&mut state, "GitRepository", "flux-system")["status"]["artifact"]["revision"] =
        old.clone();
    for k in state.kinds.iter_mut().filter(|k| k.kind == "Kustomization") {
        for i in &mut k.items {
            i["status"]["lastAppliedRevision"] = old.clone();
        }
    }
    let (checks, _) = run(&entry, state);
    let evidence: Vec<String> = failures(&checks)
        .iter()
        .flat_map(|c| c.evidence.clone())
        .collect();
    assert!(
        evidence
            .iter()
            .any(|e| e.contains(&format!("the repository is at {COMMIT}"))),
        "{checks:#?}"
    );
}

#[test]
fn inventories_say_what_is_not_applied_and_what_the_next_prune_deletes() {
    let entry = homelab();
    let mut state = in_sync(&entry);
    let platform = item(&mut state, "Kustomization", "platform");
    let entries = platform["status"]["inventory"]["entries"]
        .as_array_mut()
        .unwrap();
    let dropped = entries.remove(0)["id"].as_str().unwrap().to_string();
    entries.push(json!({"id": "media_old-app_apps_Deployment", "v": "v1"}));
    let (checks, _) = run(&entry, state);
    let c = checks
        .iter()
        .find(|c| c.check == "inventory" && c.subject == "Kustomization flux-system/platform")
        .unwrap();
    assert_eq!(c.outcome, Outcome::Fail);
    let text = c.evidence.join("\n");
    assert!(
        text.contains(&format!(
            "not in the inventory (not applied yet): {dropped}"
        )),
        "{text}"
    );
    assert!(text.contains("media_old-app_apps_Deployment"), "{text}");
}

#[test]
fn a_field_changed_by_hand_is_drift_and_another_manager_is_a_second_writer() {
    let entry = homelab();
    let mut state = in_sync(&entry);
    let (namespace_kind, target) = state
        .kinds
        .iter()
        .filter(|k| k.kind == "ConfigMap")
        .flat_map(|k| k.items.iter())
        .find(|i| i["data"].as_object().is_some_and(|d| !d.is_empty()))
        .map(|i| {
            (
                "ConfigMap",
                i["metadata"]["name"].as_str().unwrap().to_string(),
            )
        })
        .expect("a ConfigMap with data in the homelab build");
    let cm = item(&mut state, namespace_kind, &target);
    let key = cm["data"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    cm["data"][&key] = json!("edited by hand");
    cm["metadata"]["managedFields"].as_array_mut().unwrap().push(json!({
        "manager": "kubectl-edit", "operation": "Update", "apiVersion": "v1", "time": "2026-01-02T00:00:00Z",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {format!("f:{key}"): {}}}}));
    let (checks, _) = run(&entry, state);
    let of = |check: &str| {
        failures(&checks)
            .iter()
            .filter(|c| c.check == check)
            .map(|c| format!("{}: {}", c.subject, c.evidence.join("; ")))
            .collect::<Vec<_>>()
    };
    let drift = of("drift");
    assert_eq!(drift.len(), 1, "{drift:?}");
    assert!(
        drift[0].contains(&format!("data.{key}: repository"))
            && drift[0].contains("\"edited by hand\""),
        "{drift:?}"
    );
    let owner = of("owner");
    assert_eq!(owner.len(), 1, "{owner:?}");
    assert!(
        owner[0].contains(&format!("kubectl-edit (Update) also writes data.{key}")),
        "{owner:?}"
    );
}

#[test]
fn a_real_kubectl_lists_the_flux_objects_from_the_fake() {
    let kubectl = std::env::var_os("PLUMB_HELM")
        .map(|h| Path::new(&h).with_file_name("kubectl"))
        .filter(|k| k.is_file())
        .expect("kubectl beside PLUMB_HELM (scripts/ensure-helm installs both)");
    let entry = homelab();
    let state = in_sync(&entry);
    let want = state
        .kinds
        .iter()
        .find(|k| k.kind == "Kustomization")
        .unwrap()
        .items
        .len();
    let api = FakeApi::start(state);
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(api.kubeconfig(dir.path()))
        .args([
            "get",
            "kustomizations.kustomize.toolkit.fluxcd.io",
            "-A",
            "-o",
            "json",
        ])
        .env("HOME", dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["items"].as_array().unwrap().len(), want);
    assert!(doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["status"]["lastAppliedRevision"] == json!(revision())));
}

#[test]
fn an_unreachable_api_and_a_refusal_are_errors_not_passes() {
    let entry = homelab();
    // A port nothing listens on.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(&path, format!("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:{port}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: t\n")).unwrap();
    let cluster = Cluster::connect(Some(&path), None).unwrap();
    match cluster.read(&plumb_live::checks::wanted(&entry)) {
        Err(LiveError::Unreachable { server, .. }) => assert!(server.contains(&port.to_string())),
        other => panic!("expected Unreachable, got {other:?}"),
    }

    let mut state = in_sync(&entry);
    state
        .forbidden
        .push("/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations".into());
    let api = FakeApi::start(state);
    let cluster = Cluster::connect(Some(&api.kubeconfig(dir.path())), None).unwrap();
    let err = cluster
        .read(&plumb_live::checks::wanted(&entry))
        .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, LiveError::Forbidden { code: 403, .. }),
        "{text}"
    );
    assert!(
        text.contains("`list` on `kustomizations.kustomize.toolkit.fluxcd.io`"),
        "{text}"
    );
}

#[test]
fn a_kustomization_nobody_defines_and_an_unavailable_workload_fail() {
    let entry = homelab();
    let mut state = in_sync(&entry);
    let mut orphan = item(&mut state, "Kustomization", "platform").clone();
    orphan["metadata"]["name"] = json!("old-monitoring");
    orphan["spec"]["path"] = json!("./platform/monitoring");
    state
        .kinds
        .iter_mut()
        .find(|k| k.kind == "Kustomization")
        .unwrap()
        .items
        .push(orphan);
    let deployment = state
        .kinds
        .iter_mut()
        .find(|k| k.kind == "Deployment")
        .and_then(|k| {
            k.items
                .iter_mut()
                .find(|i| i["metadata"]["namespace"] != "flux-system")
        });
    let unavailable = deployment.map(|d| {
        d["status"]["availableReplicas"] = json!(0);
        format!(
            "Deployment {}/{}",
            d["metadata"]["namespace"].as_str().unwrap(),
            d["metadata"]["name"].as_str().unwrap()
        )
    });
    let (checks, _) = run(&entry, state);
    let extra: Vec<&Check> = failures(&checks)
        .into_iter()
        .filter(|c| c.check == "extra")
        .collect();
    assert_eq!(extra.len(), 1, "{extra:#?}");
    assert_eq!(extra[0].subject, "Kustomization flux-system/old-monitoring");
    assert!(
        extra[0].evidence[0].contains("platform/monitoring"),
        "{extra:#?}"
    );
    if let Some(subject) = unavailable {
        let w = checks
            .iter()
            .find(|c| c.check == "workload" && c.subject == subject)
            .unwrap();
        assert_eq!(w.outcome, Outcome::Fail);
        assert!(
            w.evidence[0].starts_with("status.availableReplicas 0 of"),
            "{w:#?}"
        );
    }
}

#[test]
fn a_kind_whose_crd_is_missing_fails() {
    let entry = homelab();
    let mut state = in_sync(&entry);
    // The cluster serves no CDI DataVolumes: their CRD was never installed.
    let before = state.kinds.len();
    state.kinds.retain(|k| k.kind != "DataVolume");
    assert!(
        state.kinds.len() < before,
        "the homelab build has DataVolumes"
    );
    let (checks, _) = run(&entry, state);
    let crd: Vec<&Check> = failures(&checks)
        .into_iter()
        .filter(|c| c.check == "crd")
        .collect();
    assert!(!crd.is_empty());
    assert!(
        crd.iter().all(|c| c.subject.starts_with("DataVolume ")),
        "{crd:#?}"
    );
    assert!(
        crd[0].evidence[0].contains("its CRD is not installed"),
        "{crd:#?}"
    );
}
