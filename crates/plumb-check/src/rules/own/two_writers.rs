use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};
use crate::rules::ord::order::EntryOrder;
use plumb_flux::build::{EntryBuild, KustomizationBuild};
use plumb_flux::model::Object;
use plumb_kustomize::schema::Schema;
use std::collections::{HashMap, HashSet};

/// ## What it does
/// Finds objects (same API group, kind, namespace and name) that two Flux Kustomizations
/// apply: an app listed in two waves, a Namespace declared by every app that uses it, a
/// shared ConfigMap copied into two directories.
///
/// ## Why is this bad?
/// Two writers fight. Each Kustomization applies its version with server-side apply and
/// records the object in its inventory; whichever reconciled last wins, the object flips on
/// every reconciliation, and when one of the two is deleted or stops listing the object, its
/// garbage collection (`prune: true`) deletes the object the other still needs.
///
/// ## Example
/// ```yaml
/// # apps/wave-1/kustomization.yaml
/// resources:
///   - monitoring
///   - ../wave-0/podinfo   # also in apps/wave-0
/// ```
///
/// Use instead:
/// ```yaml
/// # apps/wave-1/kustomization.yaml
/// resources:
///   - monitoring
/// # and, if monitoring needs podinfo first, apps-wave-1 dependsOn apps-wave-0
/// ```
pub struct TwoWriters;

impl Rule for TwoWriters {
    fn code(&self) -> &'static str {
        "OWN001"
    }

    fn summary(&self) -> &'static str {
        "the same object is produced by two Kustomizations: two writers"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        for entry in &cx.build.entries {
            let cluster_scoped = cluster_scoped_crds(entry);
            let order = EntryOrder::new(entry);
            type Writers<'a> = Vec<(usize, &'a Object)>;
            let mut writers: HashMap<(String, String, String, String), Writers<'_>> =
                HashMap::new();
            let mut ids = Vec::new();
            for (i, k) in entry.kustomizations.iter().enumerate() {
                for object in &k.objects {
                    if object.kind().is_empty() || object.name().is_empty() {
                        continue;
                    }
                    let id = identity(object, &cluster_scoped);
                    let list = writers.entry(id.clone()).or_default();
                    if list.is_empty() {
                        ids.push(id);
                    }
                    if list.iter().all(|(j, _)| *j != i) {
                        list.push((i, object));
                    }
                }
            }
            for id in &ids {
                let list = &writers[id];
                if list.len() < 2 {
                    continue;
                }
                // The owner is the writer applied first: the others depend on it, so they
                // are the ones that should not list the object.
                let owner = list
                    .iter()
                    .position(|(i, _)| {
                        list.iter()
                            .all(|(j, _)| !order.applied_before(*i, *j) || i == j)
                    })
                    .unwrap_or(0);
                let (o, other_object) = list[owner];
                let other = &entry.kustomizations[o];
                for (n, &(i, object)) in list.iter().enumerate() {
                    if n == owner {
                        continue;
                    }
                    let k = &entry.kustomizations[i];
                    let here = name_node(object).and_then(|n| Location::of(n, cx.root));
                    let mut there = name_node(other_object).and_then(|n| Location::of(n, cx.root));
                    // The same file built twice: point at the other writer instead.
                    if there == here {
                        there = other
                            .kustomization
                            .object
                            .node_at(&["spec", "path"])
                            .and_then(|n| Location::of(n, cx.root));
                    }
                    let shown = match object.namespace() {
                        "" => format!("{} {}", object.kind(), object.name()),
                        ns => format!("{} {ns}/{}", object.kind(), object.name()),
                    };
                    out.push(
                        Finding::new(
                            self.code(),
                            format!(
                                "{shown} is applied by both {} and {}: two writers overwrite each other, and pruning by either deletes it for both",
                                writer(other),
                                writer(k),
                            ),
                            if order.applied_before(i, o) {
                                format!(
                                    "remove it from {}: {} applies it first, and is the one to keep it",
                                    writer(k),
                                    writer(other),
                                )
                            } else {
                                format!(
                                    "keep it in one of them; if {} needs it first, make it dependsOn {}",
                                    writer(k),
                                    writer(other),
                                )
                            },
                        )
                        .at(here)
                        .with_chain(&k.chain)
                        .related(there, format!("also applied by {}", writer(other))),
                    );
                }
            }
        }
    }
}

/// The Kustomization as a writer: `Kustomization flux-system/apps-wave-0 (apps/wave-0)`.
fn writer(k: &KustomizationBuild) -> String {
    let path = if k.path.is_empty() { "." } else { &k.path };
    if k.synthetic {
        format!("the entry {path}")
    } else {
        format!("Kustomization {} ({path})", k.key())
    }
}

fn name_node(object: &Object) -> Option<&plumb_yaml::Node> {
    object.node_at(&["metadata", "name"])
}

/// `(group, kind)` of the CRDs in the build that define cluster-scoped kinds.
fn cluster_scoped_crds(entry: &EntryBuild) -> HashSet<(String, String)> {
    entry
        .kustomizations
        .iter()
        .flat_map(|k| k.objects.iter())
        .filter(|o| o.is("apiextensions.k8s.io", "CustomResourceDefinition"))
        .filter(|o| o.str_at(&["spec", "scope"]) == Some("Cluster"))
        .map(|o| {
            (
                o.str_at(&["spec", "group"]).unwrap_or("").to_string(),
                o.str_at(&["spec", "names", "kind"])
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect()
}

/// Group, kind, namespace (empty when cluster-scoped, `default` when left out) and name: the
/// object as the API server knows it.
fn identity(
    object: &Object,
    cluster_scoped: &HashSet<(String, String)>,
) -> (String, String, String, String) {
    let group = object.group().to_string();
    let kind = object.kind().to_string();
    let cluster = Schema::builtin().is_namespaced(object.api_version(), &kind) == Some(false)
        || cluster_scoped.contains(&(group.clone(), kind.clone()));
    let namespace = if cluster {
        String::new()
    } else {
        object.namespace_or_default().to_string()
    };
    (group, kind, namespace, object.name().to_string())
}
