//! A ResourceSet's `spec.dependsOn`, as the cluster's graph sees it. The operator applies
//! nothing a ResourceSet generates until every dependency exists and, with `ready: true`, is
//! ready; so each Kustomization the ResourceSet generates waits for:
//!
//! - a Kustomization dependency with `ready: true` and no `readyExpr`: its Ready condition,
//!   as a Kustomization's own `dependsOn` waits for it;
//! - a ResourceSet dependency with `ready: true` and no `readyExpr`, when that ResourceSet has
//!   `wait: true` (its Ready then means every object it applied is healthy): the
//!   Kustomizations that ResourceSet generates.
//!
//! Those become `dependsOn` edges of the generated Kustomizations, so the ordering rules and
//! the cycle check see them. A `readyExpr` is a CEL expression over the object's status, which
//! no repository holds, and a dependency without `ready` only has to exist: neither orders
//! anything. A dependency on a Kustomization, HelmRelease or ResourceSet that nothing of the
//! cluster creates keeps the ResourceSet waiting forever ([`missing`]); other kinds (a CRD,
//! a Namespace) may come from a chart or a controller, and are not judged.

use super::{is_reconciled, key};
use crate::build::{KustomizationBuild, Status};
use crate::diagnostic::{Code, Diagnostic};
use crate::model::{group_of, Object, ObjectRef, HELM_GROUP, KUSTOMIZE_GROUP};
use crate::sync::OPERATOR_GROUP;
use serde_json::Value;
use std::collections::HashSet;

/// The labels the operator sets on every object a ResourceSet generates.
pub const OWNER_NAME: &str = "resourceset.fluxcd.controlplane.io/name";
pub const OWNER_NAMESPACE: &str = "resourceset.fluxcd.controlplane.io/namespace";

/// One entry of a ResourceSet's `spec.dependsOn`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// `ready: true`.
    pub ready: bool,
    /// A `readyExpr` is given: readiness is a CEL expression over the object's status.
    pub ready_expr: bool,
}

impl Dependency {
    /// `Kind namespace/name`.
    pub fn describe(&self) -> String {
        match self.namespace.as_str() {
            "" => format!("{} {}", self.kind, self.name),
            ns => format!("{} {ns}/{}", self.kind, self.name),
        }
    }

    /// Ready by the object's own Ready condition (not an expression the build cannot read).
    fn waits_for_ready(&self) -> bool {
        self.ready && !self.ready_expr
    }

    fn is(&self, group: &str, kind: &str) -> bool {
        group_of(&self.api_version) == group && self.kind == kind
    }
}

/// The `spec.dependsOn` of a ResourceSet, in order (entries without a name are skipped).
pub fn dependencies(rset: &Object) -> Vec<Dependency> {
    let Some(items) = rset.value["spec"]["dependsOn"].as_array() else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|d| {
            let text = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let name = text("name");
            (!name.is_empty()).then(|| Dependency {
                api_version: text("apiVersion"),
                kind: text("kind"),
                namespace: text("namespace"),
                name,
                ready: d.get("ready").and_then(Value::as_bool).unwrap_or(false),
                ready_expr: !text("readyExpr").is_empty(),
            })
        })
        .collect()
}

/// `namespace/name` of the ResourceSet that generated `object`, from the operator's labels.
pub fn owner(object: &Object) -> Option<String> {
    let labels = &object.value["metadata"]["labels"];
    let name = labels[OWNER_NAME].as_str()?;
    let namespace = labels[OWNER_NAMESPACE].as_str()?;
    Some(format!("{namespace}/{name}"))
}

/// A ResourceSet of the cluster and the Kustomization whose objects hold it.
struct Held<'a> {
    object: &'a Object,
    holder: usize,
}

/// The cluster's ResourceSets the operator reconciles, each once (the first Kustomization
/// holding it: a second writer is a mistake of its own).
fn resource_sets(kustomizations: &[KustomizationBuild]) -> Vec<Held<'_>> {
    let mut seen = HashSet::new();
    kustomizations
        .iter()
        .enumerate()
        .flat_map(|(holder, k)| k.objects.iter().map(move |object| Held { object, holder }))
        .filter(|h| h.object.is(OPERATOR_GROUP, "ResourceSet") && is_reconciled(h.object))
        .filter(|h| seen.insert(key(h.object)))
        .collect()
}

/// Adds to each Kustomization a ResourceSet generated the Kustomizations it waits for through
/// the ResourceSet's `dependsOn` (see the module's documentation). Only Kustomizations of the
/// cluster are added: a missing one is [`missing`]'s to report.
pub fn add_edges(kustomizations: &mut [KustomizationBuild]) {
    let sets = resource_sets(kustomizations);
    if sets.is_empty() {
        return;
    }
    let existing: HashSet<String> = kustomizations.iter().map(|k| k.key()).collect();
    let as_dependency =
        |namespace: &str, name: &str| ObjectRef::new("Kustomization", namespace, name);
    let generated_by = |rset: &str| -> Vec<ObjectRef> {
        kustomizations
            .iter()
            .filter(|k| !k.synthetic && owner(&k.kustomization.object).as_deref() == Some(rset))
            .map(|k| as_dependency(&k.kustomization.namespace, &k.kustomization.name))
            .collect()
    };
    let mut edges: Vec<(usize, Vec<ObjectRef>)> = Vec::new();
    for (i, k) in kustomizations
        .iter()
        .enumerate()
        .filter(|(_, k)| !k.synthetic)
    {
        let Some(rset_key) = owner(&k.kustomization.object) else {
            continue;
        };
        let Some(rset) = sets.iter().find(|s| key(s.object) == rset_key) else {
            continue;
        };
        let mut waits = Vec::new();
        for dep in dependencies(rset.object)
            .iter()
            .filter(|d| d.waits_for_ready())
        {
            let target = format!("{}/{}", dep.namespace, dep.name);
            if dep.is(KUSTOMIZE_GROUP, "Kustomization") && existing.contains(&target) {
                waits.push(as_dependency(&dep.namespace, &dep.name));
            } else if dep.is(OPERATOR_GROUP, "ResourceSet") {
                let waited = sets.iter().find(|s| key(s.object) == target);
                if waited.is_some_and(|s| s.object.value["spec"]["wait"] == Value::Bool(true)) {
                    waits.extend(generated_by(&target));
                }
            }
        }
        if !waits.is_empty() {
            edges.push((i, waits));
        }
    }
    for (i, waits) in edges {
        let ks = &mut kustomizations[i].kustomization;
        for dep in waits {
            if dep.key() != ks.key() && !ks.depends_on.contains(&dep) {
                ks.depends_on.push(dep);
            }
        }
    }
}

/// A dependency of a ResourceSet that nothing of the cluster creates, with the ResourceSet and
/// the index of the entry in its `dependsOn`.
pub struct Missing<'a> {
    pub rset: &'a Object,
    pub chain: &'a [String],
    pub index: usize,
    pub dependency: Dependency,
}

/// The ResourceSets' dependencies on a Kustomization, HelmRelease or ResourceSet that no
/// object of the cluster is: the operator waits for them forever. Nothing is judged when a
/// Kustomization of the cluster was not built, since what it would create is not known.
pub fn missing(kustomizations: &[KustomizationBuild]) -> Vec<Missing<'_>> {
    if kustomizations
        .iter()
        .any(|k| !matches!(k.status, Status::Built))
    {
        return Vec::new();
    }
    let sets = resource_sets(kustomizations);
    if sets.is_empty() {
        return Vec::new();
    }
    let ks_keys: HashSet<String> = kustomizations.iter().map(|k| k.key()).collect();
    let objects: HashSet<(String, String, String)> = kustomizations
        .iter()
        .flat_map(|k| &k.objects)
        .filter(|o| o.group() == HELM_GROUP || o.group() == OPERATOR_GROUP)
        .map(|o| {
            (
                o.kind().to_string(),
                o.namespace_or_default().to_string(),
                o.name().to_string(),
            )
        })
        .collect();
    let mut out = Vec::new();
    for set in &sets {
        for (index, dependency) in dependencies(set.object).into_iter().enumerate() {
            if dependency.namespace.is_empty() {
                continue;
            }
            let found = if dependency.is(KUSTOMIZE_GROUP, "Kustomization") {
                ks_keys.contains(&format!("{}/{}", dependency.namespace, dependency.name))
            } else if dependency.is(HELM_GROUP, "HelmRelease")
                || dependency.is(OPERATOR_GROUP, "ResourceSet")
            {
                objects.contains(&(
                    dependency.kind.clone(),
                    dependency.namespace.clone(),
                    dependency.name.clone(),
                ))
            } else {
                true
            };
            if !found {
                out.push(Missing {
                    rset: set.object,
                    chain: &kustomizations[set.holder].chain,
                    index,
                    dependency,
                });
            }
        }
    }
    out
}

/// The build's warnings for [`missing`] dependencies, at the `dependsOn` entry.
pub fn missing_diagnostics(kustomizations: &[KustomizationBuild]) -> Vec<Diagnostic> {
    missing(kustomizations)
        .into_iter()
        .map(|m| {
            let node = m
                .rset
                .node_at(&["spec", "dependsOn"])
                .and_then(|n| n.as_sequence().and_then(|s| s.get(m.index)).or(Some(n)));
            Diagnostic::warning(
                Code::DependencyMissing,
                format!(
                    "ResourceSet {} depends on {}, which nothing of this cluster creates: the operator applies none of its objects until it exists",
                    key(m.rset),
                    m.dependency.describe()
                ),
            )
            .at(node)
            .with_chain(m.chain)
        })
        .collect()
}
