//! The cluster in sync that the tests of plumb verify start from: the build of
//! `examples/homelab` (clusters/dev) applied the way the controllers leave it. Each
//! Kustomization with the status kustomize-controller writes (the `Ready` condition,
//! `lastAppliedRevision`, `inventory`; the shapes of
//! <https://fluxcd.io/flux/components/kustomize/kustomizations/#kustomization-status>), each
//! source with `status.artifact.revision` (`main@sha1:…`,
//! <https://fluxcd.io/flux/components/source/gitrepositories/#artifact>), each HelmRelease
//! Ready, each applied object with the `managedFields` entry of an SSA apply by
//! `kustomize-controller`
//! (<https://kubernetes.io/docs/reference/using-api/server-side-apply/#field-management>).

#![allow(dead_code)]

use super::fake_api::{plural, Served, State};
use plumb_flux::build::{build_repository, EntryBuild, Options};
use serde_json::{json, Value};
use std::path::Path;

pub const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

pub fn revision() -> String {
    format!("main@sha1:{COMMIT}")
}

pub fn homelab() -> EntryBuild {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/homelab");
    let build = build_repository(
        &root,
        &Options {
            entries: vec!["clusters/dev".into()],
            ..Options::default()
        },
    )
    .unwrap();
    build.entries.into_iter().next().unwrap()
}

const CLUSTER_SCOPED: &[&str] = &[
    "Namespace",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "StorageClass",
    "PersistentVolume",
    "PriorityClass",
    "ClusterIssuer",
];

/// `fieldsV1` owning every field of `v` (arrays as a whole).
fn fields_of(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "status")
                .map(|(k, v)| (format!("f:{k}"), fields_of(v)))
                .collect(),
        ),
        _ => json!({}),
    }
}

fn inventory_id(v: &Value) -> String {
    let api_version = v["apiVersion"].as_str().unwrap_or("");
    let group = api_version.split_once('/').map_or("", |(g, _)| g);
    let kind = v["kind"].as_str().unwrap_or("");
    let ns = v["metadata"]["namespace"]
        .as_str()
        .unwrap_or(if CLUSTER_SCOPED.contains(&kind) {
            ""
        } else {
            "default"
        });
    format!(
        "{ns}_{}_{group}_{kind}",
        v["metadata"]["name"].as_str().unwrap_or("")
    )
}

fn flux_status(v: &mut Value) {
    v["metadata"]["generation"] = json!(1);
    v["status"] = json!({
        "observedGeneration": 1,
        "conditions": [{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded",
                        "message": format!("Applied revision: {}", revision()),
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "lastAppliedRevision": revision(),
        "lastAttemptedRevision": revision(),
    });
}

/// The cluster as the controllers leave it after applying `entry` at [`COMMIT`].
pub fn in_sync(entry: &EntryBuild) -> State {
    let mut kinds: Vec<Served> = Vec::new();
    let mut add = |v: Value| {
        let api_version = v["apiVersion"].as_str().unwrap().to_string();
        let kind = v["kind"].as_str().unwrap().to_string();
        let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
        let (group, version) = (group.to_string(), version.to_string());
        match kinds
            .iter_mut()
            .find(|k| k.group == group && k.kind == kind)
        {
            Some(k) => k.items.push(v),
            None => kinds.push(Served {
                plural: plural(&kind),
                namespaced: !CLUSTER_SCOPED.contains(&kind.as_str()),
                group,
                version,
                kind,
                items: vec![v],
            }),
        }
    };
    // The controllers.
    for name in [
        "source-controller",
        "kustomize-controller",
        "helm-controller",
    ] {
        add(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "flux-system"},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "manager", "image": format!("ghcr.io/fluxcd/{name}:v1.7.0")}]}}},
            "status": {"replicas": 1, "availableReplicas": 1, "readyReplicas": 1}}));
    }
    // The bootstrap sync of the entry and the repository's source.
    let mut root = json!({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": "flux-system", "namespace": "flux-system"},
        "spec": {"interval": "10m", "path": "./clusters/dev", "prune": true, "sourceRef": {"kind": "GitRepository", "name": "flux-system"}}});
    flux_status(&mut root);
    add(root);
    let defined = entry
        .sources
        .iter()
        .any(|(src, _)| src.id.kind == "GitRepository" && src.id.name == "flux-system");
    if !defined {
        add(
            json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": "flux-system", "namespace": "flux-system", "generation": 1},
        "spec": {"interval": "1m", "url": "ssh://git@example.com/homelab", "ref": {"branch": "main"}},
        "status": {"observedGeneration": 1, "artifact": {"revision": revision(), "digest": "sha256:00", "path": "x", "url": "http://source-controller/x"},
                   "conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded", "message": "stored artifact"}]}}),
        );
    }
    for k in &entry.kustomizations {
        for o in &k.objects {
            let mut v = o.value.clone();
            let kind = v["kind"].as_str().unwrap_or("").to_string();
            if kind == "Kustomization" || kind == "HelmRelease" {
                flux_status(&mut v);
                if kind == "Kustomization" {
                    let child = entry.kustomizations.iter().find(|c| {
                        c.kustomization.name == v["metadata"]["name"].as_str().unwrap_or("")
                    });
                    let ids: Vec<Value> = child
                        .map(|c| {
                            c.objects
                                .iter()
                                .map(|o| json!({"id": inventory_id(&o.value), "v": "v1"}))
                                .collect()
                        })
                        .unwrap_or_default();
                    v["status"]["inventory"] = json!({"entries": ids});
                }
            }
            if kind == "GitRepository" || kind == "OCIRepository" {
                v["status"] = json!({"artifact": {"revision": revision()}});
            }
            if kind == "Deployment" || kind == "StatefulSet" {
                let n = v["spec"]["replicas"].as_i64().unwrap_or(1);
                v["status"] = json!({"availableReplicas": n, "readyReplicas": n});
            }
            if kind == "DaemonSet" {
                v["status"] = json!({"desiredNumberScheduled": 2, "numberAvailable": 2});
            }
            if kind == "CustomResourceDefinition" {
                v["status"] = json!({"conditions": [{"type": "Established", "status": "True", "reason": "InitialNamesAccepted"}]});
            }
            if v["metadata"]["namespace"].is_null() && !CLUSTER_SCOPED.contains(&kind.as_str()) {
                v["metadata"]["namespace"] = json!("default");
            }
            v["metadata"]["managedFields"] = json!([{"manager": "kustomize-controller", "operation": "Apply",
                "apiVersion": v["apiVersion"], "fieldsType": "FieldsV1", "fieldsV1": fields_of(&o.value)}]);
            add(v);
        }
    }
    State {
        kinds,
        ..State::default()
    }
}

/// The item `kind` `name` of `state`.
pub fn item<'a>(state: &'a mut State, kind: &str, name: &str) -> &'a mut Value {
    state
        .kinds
        .iter_mut()
        .find(|k| k.kind == kind)
        .and_then(|k| k.items.iter_mut().find(|i| i["metadata"]["name"] == name))
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}
