//! The changes that hurt in a cluster, each named with a code that `plumb explain` documents.
//!
//! A note is made only from what both builds say: an object removed by a producer that does
//! not prune is left alone by Flux and gets no note; a CRD dropped from a chart is kept by helm
//! when it came from the chart's `crds/` directory, which the render does not tell apart, so it
//! gets none either.

use crate::snapshot::{Cluster, Producer, ProducerId, ProducerKind};
use crate::summary::pod_spec;
use crate::{Action, Change, ClusterDiff, ObjectKey};
use serde_json::Value;

/// One dangerous change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Danger {
    pub code: &'static str,
    pub entry: String,
    pub producer: ProducerId,
    pub object: ObjectKey,
    /// One line: what changes and what the cluster does about it.
    pub message: String,
}

/// What `plumb explain` says about a danger code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DangerDoc {
    pub code: &'static str,
    pub name: &'static str,
    pub summary: &'static str,
    pub doc: &'static str,
}

const FLUX_KS: &str = "kustomize.toolkit.fluxcd.io";
const FLUX_HR: &str = "helm.toolkit.fluxcd.io";
const RBAC: &str = "rbac.authorization.k8s.io";

/// The notes for every change of a cluster.
pub fn find(cluster: &ClusterDiff, base: Option<&Cluster>, head: Option<&Cluster>) -> Vec<Danger> {
    let producer = |side: Option<&'_ Cluster>, id: &ProducerId| {
        side.and_then(|c| c.producers.iter().find(|p| &p.id == id))
            .cloned()
    };
    let mut out = Vec::new();
    for p in &cluster.producers {
        let base_p = producer(base, &p.id);
        let head_p = producer(head, &p.id);
        for change in &p.changes {
            let mut note = |code: &'static str, message: String| {
                out.push(Danger {
                    code,
                    entry: cluster.entry.clone(),
                    producer: p.id.clone(),
                    object: change.object.clone(),
                    message,
                });
            };
            match change.action {
                Action::Changed | Action::Moved => {
                    let (Some(b), Some(h)) = (&change.base, &change.head) else {
                        continue;
                    };
                    let force = head_p.as_ref().is_some_and(forces);
                    immutable(change, b, h, &p.id, force, &mut note);
                    shrunk(change, b, h, &mut note);
                    scaled_to_zero(change, b, h, &mut note);
                    suspended(change, b, h, &mut note);
                    prune_turned_on(change, b, h, base, &mut note);
                    widened(change, Some(b), h, &mut note);
                    privileged(change, Some(b), h, &mut note);
                }
                Action::Added => {
                    let Some(h) = &change.head else { continue };
                    widened(change, None, h, &mut note);
                    privileged(change, None, h, &mut note);
                }
                Action::Removed => {
                    let Some(b) = &change.base else { continue };
                    removed(change, b, &p.id, base, head, base_p.as_ref(), &mut note);
                }
            }
        }
    }
    out
}

/// `spec.force: true` on a Kustomization: Flux deletes and recreates an object the API
/// server refuses to patch.
fn forces(p: &Producer) -> bool {
    p.id.kind == ProducerKind::Kustomization && p.force
}

fn at<'a>(v: &'a Value, pointer: &str) -> Option<&'a Value> {
    v.pointer(pointer).filter(|v| !v.is_null())
}

/// DIF001: a field the API server refuses to change.
fn immutable(
    change: &Change,
    b: &Value,
    h: &Value,
    producer: &ProducerId,
    force: bool,
    note: &mut impl FnMut(&'static str, String),
) {
    let k = &change.object;
    let mut fields: Vec<&str> = Vec::new();
    let mut check = |pointer: &'static str| {
        let (old, new) = (at(b, pointer), at(h, pointer));
        // Compared as built: a chart label in a claim template is refused like any other
        // change there.
        if (old.is_some() || new.is_some()) && old != new {
            fields.push(pointer);
        }
    };
    match (k.group.as_str(), k.kind.as_str()) {
        ("apps", "Deployment" | "ReplicaSet" | "DaemonSet") => check("/spec/selector"),
        ("apps", "StatefulSet") => {
            check("/spec/selector");
            check("/spec/volumeClaimTemplates");
            check("/spec/serviceName");
            check("/spec/podManagementPolicy");
        }
        ("batch", "Job") => {
            check("/spec/selector");
            check("/spec/template");
        }
        ("", "PersistentVolumeClaim") => {
            check("/spec/storageClassName");
            check("/spec/accessModes");
            check("/spec/volumeMode");
            check("/spec/selector");
            check("/spec/dataSource");
        }
        ("", "Service") => {
            // An address written on both sides and different; an empty or absent one is
            // allocated by the API server and kept.
            let ip = |v: &Value| {
                at(v, "/spec/clusterIP")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
            };
            if let (Some(old), Some(new)) = (ip(b), ip(h)) {
                if old != new {
                    fields.push("/spec/clusterIP");
                }
            }
        }
        (RBAC, "RoleBinding" | "ClusterRoleBinding") => check("/roleRef"),
        ("", "ConfigMap" | "Secret")
            if at(b, "/immutable").and_then(Value::as_bool) == Some(true) =>
        {
            check("/data");
            check("/binaryData");
            check("/stringData");
        }
        _ => {}
    }
    if fields.is_empty() {
        return;
    }
    let list = fields
        .iter()
        .map(|p| p.trim_start_matches('/').replace('/', "."))
        .collect::<Vec<_>>()
        .join(", ");
    let consequence = if force {
        "the API server refuses the patch; with `force: true` Flux deletes and recreates the object"
            .to_string()
    } else {
        format!("the API server refuses the patch and {producer} fails until the object is deleted by hand")
    };
    note(
        "DIF001",
        format!("{k}: immutable {list} changed: {consequence}"),
    );
}

/// DIF002: a PersistentVolumeClaim asks for less storage.
fn shrunk(change: &Change, b: &Value, h: &Value, note: &mut impl FnMut(&'static str, String)) {
    if !change.object.is("", "PersistentVolumeClaim") {
        return;
    }
    let size = |v: &Value| {
        at(v, "/spec/resources/requests/storage")
            .and_then(Value::as_str)
            .and_then(|s| plumb_flux::model::quantity(s).map(|q| (s.to_string(), q)))
    };
    if let (Some((old, a)), Some((new, b))) = (size(b), size(h)) {
        if b < a {
            note(
                "DIF002",
                format!(
                    "{}: storage request shrinks from {old} to {new}: a volume cannot shrink, the API server refuses it",
                    change.object
                ),
            );
        }
    }
}

/// DIF004: a workload scaled to zero.
fn scaled_to_zero(
    change: &Change,
    b: &Value,
    h: &Value,
    note: &mut impl FnMut(&'static str, String),
) {
    let k = &change.object;
    let defaults_to_one =
        k.group == "apps" && matches!(k.kind.as_str(), "Deployment" | "StatefulSet" | "ReplicaSet");
    let replicas = |v: &Value| at(v, "/spec/replicas").and_then(Value::as_i64);
    let old = replicas(b).or(defaults_to_one.then_some(1));
    if matches!(old, Some(n) if n > 0) && replicas(h) == Some(0) {
        note(
            "DIF004",
            format!(
                "{k}: replicas {} → 0: every pod of it stops",
                old.unwrap_or(1)
            ),
        );
    }
}

/// DIF005: a Kustomization or HelmRelease suspended or resumed.
fn suspended(change: &Change, b: &Value, h: &Value, note: &mut impl FnMut(&'static str, String)) {
    let k = &change.object;
    if !(k.is(FLUX_KS, "Kustomization") || k.is(FLUX_HR, "HelmRelease")) {
        return;
    }
    let flag = |v: &Value| {
        at(v, "/spec/suspend")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    match (flag(b), flag(h)) {
        (false, true) => note(
            "DIF005",
            format!("{k} is suspended: Flux stops applying it, this change and every later one included, until it is resumed"),
        ),
        (true, false) => note(
            "DIF005",
            format!("{k} is resumed: Flux applies at once everything that changed while it was suspended"),
        ),
        _ => {}
    }
}

/// DIF008: `prune` turned on for a Kustomization that already applies objects.
fn prune_turned_on(
    change: &Change,
    b: &Value,
    h: &Value,
    base: Option<&Cluster>,
    note: &mut impl FnMut(&'static str, String),
) {
    let k = &change.object;
    if !k.is(FLUX_KS, "Kustomization") {
        return;
    }
    let prune = |v: &Value| {
        at(v, "/spec/prune")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    if prune(b) || !prune(h) {
        return;
    }
    let id = ProducerId {
        kind: ProducerKind::Kustomization,
        namespace: if k.namespace.is_empty() {
            "default".into()
        } else {
            k.namespace.clone()
        },
        name: k.name.clone(),
    };
    let applied = base
        .and_then(|c| c.producers.iter().find(|p| p.id == id))
        .map_or(0, |p| p.objects.len());
    if applied == 0 {
        return;
    }
    note(
        "DIF008",
        format!("{k}: prune turned on over the {applied} objects it applies: from now on an object that leaves its build is deleted from the cluster, and an object another Kustomization now applies can be deleted before that one takes it over"),
    );
}

/// The rules of a Role or ClusterRole that hold a `*`, as sorted text, and a binding to
/// `cluster-admin`.
fn wildcards(v: &Value, kind: &str) -> Vec<String> {
    match kind {
        "Role" | "ClusterRole" => v
            .get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|rule| {
                let list = |field: &str| -> Vec<String> {
                    let mut l: Vec<String> = rule
                        .get(field)
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect();
                    l.sort();
                    l
                };
                let (groups, resources, verbs, urls) = (
                    list("apiGroups"),
                    list("resources"),
                    list("verbs"),
                    list("nonResourceURLs"),
                );
                let star = |l: &[String]| l.iter().any(|x| x == "*");
                if !(star(&groups) || star(&resources) || star(&verbs) || star(&urls)) {
                    return None;
                }
                let mut text = format!("verbs [{}]", verbs.join(", "));
                if !urls.is_empty() {
                    text.push_str(&format!(" on URLs [{}]", urls.join(", ")));
                } else {
                    text.push_str(&format!(
                        " on [{}] of groups [{}]",
                        resources.join(", "),
                        groups
                            .iter()
                            .map(|g| if g.is_empty() { "\"\"" } else { g.as_str() })
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                Some(text)
            })
            .collect(),
        "RoleBinding" | "ClusterRoleBinding" => {
            if at(v, "/roleRef/name").and_then(Value::as_str) == Some("cluster-admin") {
                vec!["binds cluster-admin".to_string()]
            } else {
                Vec::new()
            }
        }
        _ => Vec::new(),
    }
}

/// DIF006: RBAC gains a `*` rule or a `cluster-admin` binding.
fn widened(
    change: &Change,
    b: Option<&Value>,
    h: &Value,
    note: &mut impl FnMut(&'static str, String),
) {
    let k = &change.object;
    if k.group != RBAC {
        return;
    }
    let before = b.map(|b| wildcards(b, &k.kind)).unwrap_or_default();
    let new: Vec<String> = wildcards(h, &k.kind)
        .into_iter()
        .filter(|w| !before.contains(w))
        .collect();
    if new.is_empty() {
        return;
    }
    let verb = if b.is_some() { "widened" } else { "added" };
    note("DIF006", format!("{k}: RBAC {verb}: {}", new.join("; ")));
}

/// The privileged containers and hostPath volumes of a pod template.
fn host_access(v: &Value) -> Vec<String> {
    let Some(spec) = pod_spec(v) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for c in spec
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if c.pointer("/securityContext/privileged")
                .and_then(Value::as_bool)
                == Some(true)
            {
                let name = c.get("name").and_then(Value::as_str).unwrap_or("?");
                out.push(format!("privileged container {name}"));
            }
        }
    }
    for vol in spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(path) = vol.pointer("/hostPath/path").and_then(Value::as_str) {
            let name = vol.get("name").and_then(Value::as_str).unwrap_or("?");
            out.push(format!("hostPath volume {name} ({path})"));
        }
    }
    out
}

/// DIF007: a privileged container or a hostPath volume appears.
fn privileged(
    change: &Change,
    b: Option<&Value>,
    h: &Value,
    note: &mut impl FnMut(&'static str, String),
) {
    let before = b.map(host_access).unwrap_or_default();
    let new: Vec<String> = host_access(h)
        .into_iter()
        .filter(|x| !before.contains(x))
        .collect();
    if new.is_empty() {
        return;
    }
    note(
        "DIF007",
        format!(
            "{}: {} added: it reaches the node's host",
            change.object,
            new.join(", ")
        ),
    );
}

/// Whether deleting an object from `id`'s output deletes it from the cluster, as seen from
/// the head side: the producer prunes (its head spec, or its base spec when the producer
/// itself goes, which its parent deletes only when the parent prunes too).
fn prunes(id: &ProducerId, base: Option<&Cluster>, head: Option<&Cluster>) -> Option<String> {
    let find = |side: Option<&'_ Cluster>, id: &ProducerId| {
        side.and_then(|c| c.producers.iter().find(|p| &p.id == id))
            .cloned()
    };
    let mut current = id.clone();
    let mut chain: Vec<String> = Vec::new();
    for _ in 0..64 {
        if let Some(h) = find(head, &current) {
            return h.prune.then(|| {
                if chain.is_empty() {
                    format!("{current} prunes")
                } else {
                    format!("{} is deleted ({current} prunes)", chain.join(", "))
                }
            });
        }
        // Gone on the head side: deleted with its object, if whoever held that prunes; what
        // it applied goes only if it pruned itself.
        let b = find(base, &current)?;
        if !b.prune && current.kind != ProducerKind::HelmRelease {
            return None;
        }
        chain.push(current.to_string());
        current = b.parent.clone()?;
    }
    None
}

/// DIF003: a CRD, Namespace, PersistentVolumeClaim or StatefulSet removed by a producer that
/// prunes: the data goes.
fn removed(
    change: &Change,
    b: &Value,
    id: &ProducerId,
    base: Option<&Cluster>,
    head: Option<&Cluster>,
    base_producer: Option<&Producer>,
    note: &mut impl FnMut(&'static str, String),
) {
    let k = &change.object;
    let what = match (k.group.as_str(), k.kind.as_str()) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            // helm keeps CRDs of a chart's crds/ directory, and the render does not say
            // which came from there.
            if id.kind == ProducerKind::HelmRelease {
                return;
            }
            "every custom resource of this kind is deleted with it"
        }
        ("", "Namespace") => "everything in the namespace is deleted with it",
        ("", "PersistentVolumeClaim") => {
            "its volume goes with it when the storage class's reclaim policy is Delete"
        }
        ("apps", "StatefulSet") => "its pods stop; claims made from its templates stay",
        _ => return,
    };
    let annotation = |name: &str| {
        b.pointer("/metadata/annotations")
            .and_then(|a| a.get(name))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    if annotation("kustomize.toolkit.fluxcd.io/prune").as_deref() == Some("disabled")
        || annotation("helm.sh/resource-policy").as_deref() == Some("keep")
    {
        return;
    }
    if id.kind == ProducerKind::HelmfileRelease || base_producer.is_none() {
        return;
    }
    let Some(why) = prunes(id, base, head) else {
        return;
    };
    note("DIF003", format!("{k} is removed and {why}: {what}"));
}

/// Every danger code, for `plumb explain`.
pub const DOCS: &[DangerDoc] = &[
    DangerDoc {
        code: "DIF001",
        name: "ImmutableFieldChanged",
        summary: "a field the API server refuses to change is changed",
        doc: r#"## What it does
Notes, in `plumb diff`, an object whose immutable field differs between the two revisions: a
Deployment's, ReplicaSet's, DaemonSet's or StatefulSet's `spec.selector`; a StatefulSet's
`volumeClaimTemplates`, `serviceName` or `podManagementPolicy`; a Job's `selector` or
`template`; a Service's `clusterIP` (written on both sides); a PersistentVolumeClaim's
`storageClassName`, `accessModes`, `volumeMode`, `selector` or `dataSource`; a binding's
`roleRef`; the data of a ConfigMap or Secret marked `immutable: true`.

## Why is this bad?
The API server refuses the patch (`field is immutable`), so the Kustomization or HelmRelease
fails and stops applying everything else it holds until someone deletes the object by hand.
With `force: true` Flux deletes and recreates it instead: a StatefulSet's pods restart, a
Service gets a new address.

## Example
```yaml
# a chart bump changes the selector labels of a StatefulSet
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: postgres
      app.kubernetes.io/component: primary   # new
```

Use instead:
```yaml
# keep the selector; when it must change, delete the StatefulSet with --cascade=orphan
# before the change is applied, so its pods and claims stay
```
"#,
    },
    DangerDoc {
        code: "DIF002",
        name: "VolumeShrunk",
        summary: "a PersistentVolumeClaim asks for less storage than before",
        doc: r#"## What it does
Notes, in `plumb diff`, a PersistentVolumeClaim whose `spec.resources.requests.storage` is
smaller on the head side.

## Why is this bad?
Volumes can grow, never shrink: the API server refuses the change and the Kustomization fails.

## Example
```yaml
resources:
  requests:
    storage: 5Gi   # was 10Gi
```

Use instead:
```yaml
# keep the size; to get a smaller volume, make a new claim and move the data
```
"#,
    },
    DangerDoc {
        code: "DIF003",
        name: "StatefulObjectPruned",
        summary:
            "a CRD, Namespace, PersistentVolumeClaim or StatefulSet leaves a producer that prunes",
        doc: r#"## What it does
Notes, in `plumb diff`, a CustomResourceDefinition, Namespace, PersistentVolumeClaim or
StatefulSet that the head revision no longer applies, when Flux will delete it: its
Kustomization has `prune: true` (or the Kustomization itself goes, deleted by a parent that
prunes, and prunes itself), or a HelmRelease no longer renders it. Objects annotated
`kustomize.toolkit.fluxcd.io/prune: disabled` or `helm.sh/resource-policy: keep` are left out,
and so are CRDs of HelmReleases (helm keeps the CRDs of a chart's `crds/` directory).

## Why is this bad?
Deleting a CRD deletes every custom resource of its kind; a Namespace, everything in it; a
PersistentVolumeClaim, its volume when the reclaim policy is `Delete`. A refactoring that moves
files between Kustomizations can do this by accident.

## Example
```yaml
# apps/media/kustomization.yaml, with prune: true on its Flux Kustomization
resources:
  - deployment.yaml
  # - pvc.yaml   removed
```

Use instead:
```yaml
# annotate what must outlive its manifest before removing it
metadata:
  annotations:
    kustomize.toolkit.fluxcd.io/prune: disabled
```
"#,
    },
    DangerDoc {
        code: "DIF004",
        name: "ScaledToZero",
        summary: "a workload's replicas go to 0",
        doc: r#"## What it does
Notes, in `plumb diff`, a Deployment, StatefulSet or ReplicaSet (or any object with an
explicit `spec.replicas`) whose replicas go from a positive number, or the default of 1, to 0.

## Why is this bad?
Every pod stops when the change is applied. Sometimes that is the point; often it is a value
copied from a development overlay.

## Example
```yaml
spec:
  replicas: 0
```

Use instead:
```yaml
# suspend the Kustomization or HelmRelease instead when the stop is temporary
```
"#,
    },
    DangerDoc {
        code: "DIF005",
        name: "SuspendChanged",
        summary: "a Kustomization or HelmRelease is suspended or resumed",
        doc: r#"## What it does
Notes, in `plumb diff`, a Flux Kustomization or HelmRelease whose `spec.suspend` changes.

## Why is this bad?
Suspended, Flux applies nothing of it: neither this change nor any later one, and drift is no
longer corrected. Resumed, everything that changed while it was suspended is applied at once.

## Example
```yaml
spec:
  suspend: true
```

Use instead:
```yaml
# suspend from the command line for a short intervention: flux suspend kustomization apps
```
"#,
    },
    DangerDoc {
        code: "DIF006",
        name: "RbacWidened",
        summary: "a Role or ClusterRole gains a `*` rule, or a binding grants cluster-admin",
        doc: r#"## What it does
Notes, in `plumb diff`, a Role or ClusterRole that gains a rule with `*` in its verbs,
resources, API groups or URLs, and a RoleBinding or ClusterRoleBinding that now binds
`cluster-admin` (new objects included).

## Why is this bad?
A wildcard grants what exists and everything added later, Secrets included. A chart bump that
widens its ClusterRole is easy to miss in a long diff.

## Example
```yaml
rules:
  - apiGroups: ["*"]
    resources: ["*"]
    verbs: ["*"]
```

Use instead:
```yaml
rules:
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get, list, watch]
```
"#,
    },
    DangerDoc {
        code: "DIF007",
        name: "HostAccessAdded",
        summary: "a privileged container or a hostPath volume is added",
        doc: r#"## What it does
Notes, in `plumb diff`, a pod template (of a Pod, workload or CronJob) that gains a container
with `securityContext.privileged: true` or a `hostPath` volume (new objects included).

## Why is this bad?
Either gives the pod the node: its files, its devices, every other pod's data on it.

## Example
```yaml
volumes:
  - name: docker
    hostPath:
      path: /var/run/docker.sock
```

Use instead:
```yaml
# a PersistentVolumeClaim, or the narrowest capability the workload needs
```
"#,
    },
    DangerDoc {
        code: "DIF008",
        name: "PruneTurnedOn",
        summary: "`prune` is turned on for a Kustomization that already applies objects",
        doc: r#"## What it does
Notes, in `plumb diff`, a Flux Kustomization whose `spec.prune` goes from false (or absent) to
true while it already applies objects.

## Why is this bad?
From then on, every object that leaves its build is deleted from the cluster, including one
that is being moved to another Kustomization: if this one reconciles first, the object is
deleted before the other takes it over (a PersistentVolumeClaim loses its volume).

## Example
```yaml
spec:
  prune: true   # was false
```

Use instead:
```yaml
# turn prune on in a change of its own, after checking that the build holds everything the
# Kustomization applied before
```
"#,
    },
];

/// The documentation of a danger code (case-insensitive).
pub fn doc(code: &str) -> Option<&'static DangerDoc> {
    DOCS.iter().find(|d| d.code.eq_ignore_ascii_case(code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_doc_has_the_sections() {
        for d in DOCS {
            for section in ["## What it does", "## Why is this bad?", "## Example"] {
                assert!(d.doc.contains(section), "{}: no {section}", d.code);
            }
        }
    }
}
