//! The cluster checks: the build of one cluster entry against what the API says, each a pass,
//! a fail or an unknown, with the evidence (the object, the field, the value seen).

use crate::read::Live;
use plumb_flux::build::{EntryBuild, Status};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};

/// A check's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail,
    /// The cluster or the build cannot say (a kind not served, an object not built).
    Unknown,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Unknown => "unknown",
        }
    }
}

/// One check of one subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// `controllers`, `reconcile`, `extra`, `inventory`, `drift`, `owner`, `workload`, `crd`.
    pub check: &'static str,
    /// What was checked: `Kustomization flux-system/apps`.
    pub subject: String,
    pub outcome: Outcome,
    /// What was seen.
    pub evidence: Vec<String>,
}

fn check(check: &'static str, subject: String, outcome: Outcome, evidence: Vec<String>) -> Check {
    Check {
        check,
        subject,
        outcome,
        evidence,
    }
}

const KS_GROUP: &str = "kustomize.toolkit.fluxcd.io";
const HR_GROUP: &str = "helm.toolkit.fluxcd.io";
const SOURCE_GROUP: &str = "source.toolkit.fluxcd.io";

fn s<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

fn find<'a>(list: &'a [Value], namespace: &str, name: &str) -> Option<&'a Value> {
    list.iter().find(|o| {
        s(o, "/metadata/name") == Some(name)
            && s(o, "/metadata/namespace").unwrap_or("") == namespace
    })
}

/// The condition `type` of an object: (status, reason, message).
fn condition<'a>(o: &'a Value, kind: &str) -> Option<(&'a str, &'a str, &'a str)> {
    o.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
        .map(|c| {
            (
                c.get("status").and_then(Value::as_str).unwrap_or(""),
                c.get("reason").and_then(Value::as_str).unwrap_or(""),
                c.get("message").and_then(Value::as_str).unwrap_or(""),
            )
        })
}

/// What the checks need besides the build and the cluster.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// The repository's commit (full hex): the sources that fetch this repository must be at it.
    pub commit: Option<String>,
}

/// The (`apiVersion`, kind) of every object `entry` applies: what [`crate::Cluster::read`]
/// asks discovery about and lists.
pub fn wanted(entry: &EntryBuild) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = entry
        .kustomizations
        .iter()
        .flat_map(|k| &k.objects)
        .chain(entry.releases.iter().flat_map(|r| &r.objects))
        .map(|o| (o.api_version().to_string(), o.kind().to_string()))
        .filter(|(v, k)| !v.is_empty() && !k.is_empty())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Every check of `entry` against `live`.
pub fn verify(entry: &EntryBuild, live: &Live, expect: &Expect) -> Vec<Check> {
    let mut out = Vec::new();
    controllers(entry, live, &mut out);
    reconcile(entry, live, expect, &mut out);
    extra(entry, live, &mut out);
    inventory(entry, live, &mut out);
    objects(entry, live, &mut out);
    out
}

/// The Flux controllers run in `flux-system`.
fn controllers(entry: &EntryBuild, live: &Live, out: &mut Vec<Check>) {
    let mut wanted = vec!["source-controller", "kustomize-controller"];
    if !entry.helm_releases.is_empty() {
        wanted.push("helm-controller");
    }
    let deployments = live.list("apps", "Deployment");
    for name in wanted {
        let subject = format!("Deployment flux-system/{name}");
        match find(deployments, "flux-system", name) {
            None => out.push(check(
                "controllers",
                subject,
                Outcome::Fail,
                vec!["no such Deployment in the cluster".into()],
            )),
            Some(d) => {
                let available = d
                    .pointer("/status/availableReplicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                let image = s(d, "/spec/template/spec/containers/0/image").unwrap_or("?");
                out.push(check(
                    "controllers",
                    subject,
                    if available > 0 {
                        Outcome::Pass
                    } else {
                        Outcome::Fail
                    },
                    vec![
                        format!("status.availableReplicas: {available}"),
                        format!("image: {image}"),
                    ],
                ));
            }
        }
    }
}

/// Each Kustomization and HelmRelease the build expects exists, is Ready, not suspended,
/// observed at its generation, and applied at its source's revision, which for this
/// repository's source is the repository's commit.
fn reconcile(entry: &EntryBuild, live: &Live, expect: &Expect, out: &mut Vec<Check>) {
    let kustomizations = live.list(KS_GROUP, "Kustomization");
    for k in entry.kustomizations.iter().filter(|k| !k.synthetic) {
        let subject = format!("Kustomization {}", k.key());
        let Some(o) = find(
            kustomizations,
            &k.kustomization.namespace,
            &k.kustomization.name,
        ) else {
            out.push(check(
                "reconcile",
                subject,
                Outcome::Fail,
                vec!["not in the cluster".into()],
            ));
            continue;
        };
        let mut evidence = Vec::new();
        let mut failed = state_of(o, &mut evidence);
        let applied = s(o, "/status/lastAppliedRevision").unwrap_or("");
        let source_ns = k.kustomization.source_ref.namespace.as_str();
        let source = live
            .list(SOURCE_GROUP, &k.kustomization.source_ref.kind)
            .iter()
            .find(|x| {
                s(x, "/metadata/name") == Some(k.kustomization.source_ref.name.as_str())
                    && s(x, "/metadata/namespace") == Some(source_ns)
            });
        match source.and_then(|x| s(x, "/status/artifact/revision")) {
            Some(revision) => {
                if applied != revision {
                    failed = true;
                    evidence.push(format!(
                        "status.lastAppliedRevision {applied:?}, but {} {source_ns}/{} has {revision:?}",
                        k.kustomization.source_ref.kind, k.kustomization.source_ref.name
                    ));
                } else {
                    evidence.push(format!("applied revision {applied}"));
                }
                // The source that syncs this repository: the entry's own sync source, else
                // (an entry no Kustomization of the repository syncs) `flux bootstrap`'s
                // GitRepository flux-system/flux-system.
                let is_repository = match &entry.repository_source {
                    Some(r) => {
                        r.kind == k.kustomization.source_ref.kind
                            && r.namespace == source_ns
                            && r.name == k.kustomization.source_ref.name
                    }
                    None => {
                        k.kustomization.source_ref.kind == "GitRepository"
                            && source_ns == "flux-system"
                            && k.kustomization.source_ref.name == "flux-system"
                    }
                };
                if let (true, Some(commit)) = (is_repository, &expect.commit) {
                    if !revision.ends_with(commit.as_str()) {
                        failed = true;
                        evidence.push(format!(
                            "the repository is at {commit}; its source is at {revision:?}"
                        ));
                    }
                }
            }
            None => evidence.push(format!(
                "source {} {source_ns}/{} has no artifact revision in the cluster",
                k.kustomization.source_ref.kind, k.kustomization.source_ref.name
            )),
        }
        out.push(check(
            "reconcile",
            subject,
            if failed { Outcome::Fail } else { Outcome::Pass },
            evidence,
        ));
    }
    let releases = live.list(HR_GROUP, "HelmRelease");
    for (hr, _) in &entry.helm_releases {
        let subject = format!("HelmRelease {}/{}", hr.id.namespace, hr.id.name);
        let Some(o) = find(releases, &hr.id.namespace, &hr.id.name) else {
            out.push(check(
                "reconcile",
                subject,
                Outcome::Fail,
                vec!["not in the cluster".into()],
            ));
            continue;
        };
        let mut evidence = Vec::new();
        let failed = state_of(o, &mut evidence);
        out.push(check(
            "reconcile",
            subject,
            if failed { Outcome::Fail } else { Outcome::Pass },
            evidence,
        ));
    }
}

/// Ready, suspended and generation of a Flux object; whether any of them fails.
fn state_of(o: &Value, evidence: &mut Vec<String>) -> bool {
    let mut failed = false;
    if o.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) {
        failed = true;
        evidence.push("spec.suspend: true".into());
    }
    match condition(o, "Ready") {
        Some(("True", reason, _)) => evidence.push(format!("Ready=True ({reason})")),
        Some((status, reason, message)) => {
            failed = true;
            evidence.push(format!("Ready={status} ({reason}): {message}"));
        }
        None => {
            failed = true;
            evidence.push("no Ready condition".into());
        }
    }
    let generation = o.pointer("/metadata/generation").and_then(Value::as_i64);
    let observed = o
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64);
    if generation != observed {
        failed = true;
        evidence.push(format!(
            "status.observedGeneration {} but metadata.generation {}",
            observed.map_or("none".into(), |g| g.to_string()),
            generation.map_or("none".into(), |g| g.to_string())
        ));
    }
    failed
}

/// Nothing reconciles that the repository does not define.
fn extra(entry: &EntryBuild, live: &Live, out: &mut Vec<Check>) {
    let built: BTreeSet<(String, String)> = entry
        .kustomizations
        .iter()
        .filter(|k| !k.synthetic)
        .map(|k| {
            (
                k.kustomization.namespace.clone(),
                k.kustomization.name.clone(),
            )
        })
        .collect();
    // A Kustomization that syncs the entry itself is the cluster's root, made by bootstrap or
    // a FluxInstance: the repository defines it by being synced.
    let entry_path = entry.entry.trim_start_matches("./");
    for o in live.list(KS_GROUP, "Kustomization") {
        let ns = s(o, "/metadata/namespace").unwrap_or("").to_string();
        let name = s(o, "/metadata/name").unwrap_or("").to_string();
        let path = s(o, "/spec/path")
            .unwrap_or("")
            .trim_start_matches("./")
            .trim_end_matches('/');
        if built.contains(&(ns.clone(), name.clone())) || path == entry_path {
            continue;
        }
        out.push(check(
            "extra",
            format!("Kustomization {ns}/{name}"),
            Outcome::Fail,
            vec![format!(
                "reconciles spec.path {path:?}, which the repository's build does not define"
            )],
        ));
    }
    let releases: BTreeSet<(String, String)> = entry
        .helm_releases
        .iter()
        .map(|(hr, _)| (hr.id.namespace.clone(), hr.id.name.clone()))
        .collect();
    for o in live.list(HR_GROUP, "HelmRelease") {
        let ns = s(o, "/metadata/namespace").unwrap_or("").to_string();
        let name = s(o, "/metadata/name").unwrap_or("").to_string();
        if !releases.contains(&(ns.clone(), name.clone())) {
            out.push(check(
                "extra",
                format!("HelmRelease {ns}/{name}"),
                Outcome::Fail,
                vec!["in the cluster, not in the repository's build".into()],
            ));
        }
    }
}

/// `namespace_name_group_kind`, as Flux writes inventory entries.
fn inventory_id(o: &Value, namespaced: bool) -> String {
    let api_version = s(o, "/apiVersion").unwrap_or("");
    let group = plumb_flux::model::group_of(api_version);
    let ns = match s(o, "/metadata/namespace") {
        Some(ns) => ns,
        None if namespaced => "default",
        None => "",
    };
    format!(
        "{ns}_{}_{group}_{}",
        s(o, "/metadata/name").unwrap_or(""),
        s(o, "/kind").unwrap_or("")
    )
}

fn namespaced(live: &Live, o: &Value) -> bool {
    let api_version = s(o, "/apiVersion").unwrap_or("");
    let kind = s(o, "/kind").unwrap_or("");
    live.resources
        .get(api_version)
        .and_then(|list| list.iter().find(|(k, _, _)| k == kind))
        .is_none_or(|(_, _, namespaced)| *namespaced)
}

/// Each built Kustomization's `status.inventory` holds what the build applies, and nothing
/// else (what it holds besides is deleted by the next prune).
fn inventory(entry: &EntryBuild, live: &Live, out: &mut Vec<Check>) {
    let kustomizations = live.list(KS_GROUP, "Kustomization");
    for k in entry.kustomizations.iter().filter(|k| !k.synthetic) {
        let subject = format!("Kustomization {}", k.key());
        let Some(o) = find(
            kustomizations,
            &k.kustomization.namespace,
            &k.kustomization.name,
        ) else {
            continue;
        };
        if k.status != Status::Built {
            out.push(check(
                "inventory",
                subject,
                Outcome::Unknown,
                vec![format!("not built here ({})", k.status.as_str())],
            ));
            continue;
        }
        let Some(entries) = o
            .pointer("/status/inventory/entries")
            .and_then(Value::as_array)
        else {
            out.push(check(
                "inventory",
                subject,
                Outcome::Unknown,
                vec!["no status.inventory".into()],
            ));
            continue;
        };
        let have: BTreeSet<String> = entries
            .iter()
            .filter_map(|e| e.get("id").and_then(Value::as_str).map(str::to_string))
            .collect();
        let want: BTreeSet<String> = k
            .objects
            .iter()
            .map(|o| inventory_id(&o.value, namespaced(live, &o.value)))
            .collect();
        let missing: Vec<&String> = want.difference(&have).collect();
        let more: Vec<&String> = have.difference(&want).collect();
        let mut evidence = Vec::new();
        for id in &missing {
            evidence.push(format!(
                "built, not in the inventory (not applied yet): {id}"
            ));
        }
        let prune = k
            .kustomization
            .object
            .value
            .pointer("/spec/prune")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        for id in &more {
            evidence.push(if prune {
                format!("in the inventory, not built: the next prune deletes {id}")
            } else {
                format!("in the inventory, not built: left in the cluster, unmanaged (prune is off): {id}")
            });
        }
        if evidence.is_empty() {
            evidence.push(format!("{} entries, as built", have.len()));
        }
        out.push(check(
            "inventory",
            subject,
            if missing.is_empty() && more.is_empty() {
                Outcome::Pass
            } else {
                Outcome::Fail
            },
            evidence,
        ));
    }
}

/// Leaf paths (`spec.replicas`) of what the build sets, arrays as leaves, with their values.
fn leaves(v: &Value, prefix: &str, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(map) if !map.is_empty() => {
            for (k, child) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                leaves(child, &path, out);
            }
        }
        other => out.push((prefix.to_string(), other.clone())),
    }
}

/// Whether `fields` (a managedFields entry's `fieldsV1`) covers `path`.
fn owns(fields: &Value, path: &str) -> bool {
    let mut node = fields;
    for part in path.split('.') {
        match node.get(format!("f:{part}")) {
            Some(next) => node = next,
            None => return false,
        }
    }
    true
}

/// For each built object: drift (a field the repository sets that the live object holds
/// otherwise), a second writer (a field the repository sets that another field manager
/// owns), workloads available, CRDs established, kinds served.
fn objects(entry: &EntryBuild, live: &Live, out: &mut Vec<Check>) {
    let mut by_kind: HashMap<(String, String), Vec<&Value>> = HashMap::new();
    for (key, list) in &live.objects {
        by_kind.insert(key.clone(), list.iter().collect());
    }
    let producers = entry
        .kustomizations
        .iter()
        .filter(|k| k.status == Status::Built)
        .map(|k| ("kustomize-controller", &k.objects))
        .chain(
            entry
                .releases
                .iter()
                .filter(|r| r.status == Status::Built)
                .map(|r| ("helm-controller", &r.objects)),
        );
    for (manager, objects) in producers {
        for built in objects {
            let v = &built.value;
            let api_version = s(v, "/apiVersion").unwrap_or("");
            let kind = s(v, "/kind").unwrap_or("");
            let name = s(v, "/metadata/name").unwrap_or("");
            let group = plumb_flux::model::group_of(api_version);
            let ns_written = s(v, "/metadata/namespace");
            let is_namespaced = namespaced(live, v);
            let ns = match ns_written {
                Some(ns) => ns,
                None if is_namespaced => "default",
                None => "",
            };
            let subject = if ns.is_empty() {
                format!("{kind} {name}")
            } else {
                format!("{kind} {ns}/{name}")
            };
            if live.serves(api_version, kind) == Some(false) {
                out.push(check(
                    "crd",
                    subject,
                    Outcome::Fail,
                    vec![format!("the cluster does not serve {kind} of {api_version}: its CRD is not installed")],
                ));
                continue;
            }
            let Some(list) = by_kind.get(&(group.to_string(), kind.to_string())) else {
                continue;
            };
            let Some(o) = list.iter().find(|o| {
                s(o, "/metadata/name") == Some(name)
                    && s(o, "/metadata/namespace").unwrap_or("") == ns
            }) else {
                out.push(check(
                    "drift",
                    subject,
                    Outcome::Fail,
                    vec!["built, not in the cluster".into()],
                ));
                continue;
            };
            drift(&subject, v, o, manager, out);
            status_of(&subject, kind, group, o, out);
        }
    }
}

fn drift(subject: &str, built: &Value, o: &Value, manager: &str, out: &mut Vec<Check>) {
    // An encrypted object that was not decrypted cannot be compared.
    if built.get("sops").is_some() {
        return;
    }
    let secret = s(built, "/kind") == Some("Secret");
    let mut set = Vec::new();
    for part in [
        "metadata",
        "spec",
        "data",
        "stringData",
        "rules",
        "subjects",
        "roleRef",
        "webhooks",
    ] {
        if let Some(v) = built.get(part) {
            leaves(v, part, &mut set);
        }
    }
    // What the owner check looks for; stringData is written to data by the server.
    set.retain(|(p, _)| !p.starts_with("metadata.") && !p.starts_with("stringData"));
    let mut drifted = Vec::new();
    for part in [
        "metadata", "spec", "data", "rules", "subjects", "roleRef", "webhooks",
    ] {
        if let Some(want) = built.get(part) {
            let mut found = Vec::new();
            subset(want, o.get(part), part, &mut found);
            for (path, want, have) in found {
                if matches!(path.as_str(), "metadata.namespace" | "metadata.name") {
                    continue;
                }
                if secret && path.starts_with("data") {
                    drifted.push(format!("{path} differs"));
                } else {
                    drifted.push(format!(
                        "{path}: repository {want}, cluster {}",
                        have.map_or("absent".into(), |v| v.to_string())
                    ));
                }
            }
        }
    }
    out.push(check(
        "drift",
        subject.to_string(),
        if drifted.is_empty() {
            Outcome::Pass
        } else {
            Outcome::Fail
        },
        if drifted.is_empty() {
            vec!["every field as the repository sets it".to_string()]
        } else {
            drifted
        },
    ));
    let mut writers = Vec::new();
    for entry in o
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let who = entry.get("manager").and_then(Value::as_str).unwrap_or("");
        if who == manager || who == "before-first-apply" {
            continue;
        }
        let Some(fields) = entry.get("fieldsV1") else {
            continue;
        };
        let owned: Vec<&str> = set
            .iter()
            .map(|(p, _)| p.as_str())
            .filter(|p| owns(fields, p))
            .collect();
        if !owned.is_empty() {
            writers.push(format!(
                "{who} ({}) also writes {}",
                entry
                    .get("operation")
                    .and_then(Value::as_str)
                    .unwrap_or("?"),
                owned.join(", ")
            ));
        }
    }
    out.push(check(
        "owner",
        subject.to_string(),
        if writers.is_empty() {
            Outcome::Pass
        } else {
            Outcome::Fail
        },
        if writers.is_empty() {
            vec![format!("only {manager} writes what the repository sets")]
        } else {
            writers
        },
    ));
}

/// Where `have` differs from what `want` sets: every key of `want` in `have`, arrays element by
/// element (the server adds defaults inside elements, never elements), scalars equal or the
/// same Kubernetes quantity (the server writes `1000m` as `1`). (path, wanted, seen).
fn subset(
    want: &Value,
    have: Option<&Value>,
    path: &str,
    out: &mut Vec<(String, Value, Option<Value>)>,
) {
    match (want, have) {
        (Value::Object(w), Some(Value::Object(h))) => {
            for (k, wv) in w {
                subset(wv, h.get(k), &format!("{path}.{k}"), out);
            }
        }
        (Value::Array(w), Some(Value::Array(h))) if w.len() == h.len() => {
            for (i, (wv, hv)) in w.iter().zip(h).enumerate() {
                subset(wv, Some(hv), &format!("{path}[{i}]"), out);
            }
        }
        (w, Some(h)) if w == h || same_quantity(w, h) => {}
        // `null` and `{}` written in the repository are absent in the cluster.
        (Value::Null, None) => {}
        (Value::Object(w), None) if w.is_empty() => {}
        (w, h) => out.push((path.to_string(), w.clone(), h.cloned())),
    }
}

/// Two values that are the same Kubernetes quantity (`1000m` and `1`, `1Gi` and `1024Mi`),
/// or the same number written as a string and as a number.
fn same_quantity(a: &Value, b: &Value) -> bool {
    let q = |v: &Value| match v {
        Value::String(s) => plumb_flux::model::quantity(s),
        Value::Number(n) => n.as_f64(),
        _ => None,
    };
    matches!((q(a), q(b)), (Some(x), Some(y)) if (x - y).abs() <= f64::EPSILON * x.abs().max(1.0))
}

/// Workloads available, CRDs established.
fn status_of(subject: &str, kind: &str, group: &str, o: &Value, out: &mut Vec<Check>) {
    let int = |p: &str| o.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    let (ok, evidence) = match (group, kind) {
        ("apps", "Deployment") => {
            let want = o
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            let have = int("/status/availableReplicas");
            (
                have >= want,
                format!("status.availableReplicas {have} of {want}"),
            )
        }
        ("apps", "StatefulSet") => {
            let want = o
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            let have = int("/status/readyReplicas");
            (
                have >= want,
                format!("status.readyReplicas {have} of {want}"),
            )
        }
        ("apps", "DaemonSet") => {
            let want = int("/status/desiredNumberScheduled");
            let have = int("/status/numberAvailable");
            (
                have >= want,
                format!("status.numberAvailable {have} of {want}"),
            )
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => match condition(o, "Established") {
            Some(("True", _, _)) => (true, "Established=True".to_string()),
            Some((status, reason, message)) => {
                (false, format!("Established={status} ({reason}): {message}"))
            }
            None => (false, "no Established condition".to_string()),
        },
        _ => return,
    };
    let check_name = if kind == "CustomResourceDefinition" {
        "crd"
    } else {
        "workload"
    };
    out.push(check(
        check_name,
        subject.to_string(),
        if ok { Outcome::Pass } else { Outcome::Fail },
        vec![evidence],
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn managed_fields_cover_paths_through_f_keys() {
        let fields = json!({"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {}}}}}});
        assert!(owns(&fields, "spec.replicas"));
        assert!(owns(&fields, "spec.template.spec.containers"));
        assert!(!owns(&fields, "spec.selector"));
    }

    #[test]
    fn server_defaults_and_normalised_quantities_are_not_drift() {
        let want =
            json!({"containers": [{"name": "a", "resources": {"limits": {"cpu": "1000m"}}}]});
        let have = json!({"containers": [{"name": "a", "imagePullPolicy": "IfNotPresent", "resources": {"limits": {"cpu": "1"}}}]});
        let mut found = Vec::new();
        subset(&want, Some(&have), "spec", &mut found);
        assert!(found.is_empty(), "{found:?}");
        let changed = json!({"containers": [{"name": "a", "resources": {"limits": {"cpu": "2"}}}]});
        subset(&want, Some(&changed), "spec", &mut found);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, "spec.containers[0].resources.limits.cpu");
    }

    #[test]
    fn inventory_ids_are_flux_object_metadata() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "b"}});
        assert_eq!(inventory_id(&cm, true), "b_a__ConfigMap");
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "x.y"}});
        assert_eq!(
            inventory_id(&crd, false),
            "_x.y_apiextensions.k8s.io_CustomResourceDefinition"
        );
    }
}
