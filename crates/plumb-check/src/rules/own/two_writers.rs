use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};
use crate::rules::ord::order::EntryOrder;
use plumb_flux::build::{EntryBuild, KustomizationBuild};
use plumb_flux::model::Object;
use plumb_flux::source::Inference;
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
            let mut writers: HashMap<Identity, Writers<'_>> = HashMap::new();
            let mut ids = Vec::new();
            // An entry applied by hand (`kubectl apply -k`) is applied once, not reconciled:
            // what it hands to a Kustomization (its GitRepository) has one writer, Flux.
            let hand_applied = entry
                .assumptions
                .iter()
                .any(|a| matches!(a, Inference::HandApplied { .. }));
            for (i, k) in entry.kustomizations.iter().enumerate() {
                if hand_applied && k.synthetic {
                    continue;
                }
                for object in &k.objects {
                    if object.kind().is_empty() || object.name().is_empty() {
                        continue;
                    }
                    // A name postBuild could not substitute (`${APP}-postgres-db` in
                    // budimanjojo's component, one name per app once substituted) is no
                    // object's: the Kustomization fails, and that failure is its finding.
                    if object.name().contains("${") || object.namespace().contains("${") {
                        continue;
                    }
                    let id = identity(object, &cluster_scoped, target(k));
                    let list = writers.entry(id.clone()).or_default();
                    if list.is_empty() {
                        ids.push(id);
                    }
                    if list.iter().all(|(j, _)| *j != i) {
                        list.push((i, object));
                    }
                }
            }
            // One mistake is one finding: the objects that the same Kustomizations all write
            // are reported together.
            let mut groups: Vec<(Vec<usize>, Vec<&Identity>)> = Vec::new();
            for id in &ids {
                let list = &writers[id];
                if list.len() < 2 {
                    continue;
                }
                let mut set: Vec<usize> = list.iter().map(|(i, _)| *i).collect();
                set.sort_unstable();
                match groups.iter_mut().find(|(s, _)| *s == set) {
                    Some((_, members)) => members.push(id),
                    None => groups.push((set, vec![id])),
                }
            }
            for (_, members) in &groups {
                out.push(self.finding(cx, entry, &order, &writers, members));
            }
        }
    }
}

/// The cluster an object is applied to (`spec.kubeConfig` of its Kustomization: empty for
/// the cluster Flux runs in), its group, kind, namespace and name.
type Identity = (String, String, String, String, String);

/// The cluster a Kustomization applies to: a hub's Kustomizations with a `kubeConfig` write
/// to other clusters, where the same object is another object.
fn target(k: &KustomizationBuild) -> String {
    k.kustomization
        .object
        .value
        .pointer("/spec/kubeConfig")
        .map(|v| format!("{}/{v}", k.kustomization.namespace))
        .unwrap_or_default()
}

impl TwoWriters {
    /// The finding for objects that the same Kustomizations all write: at the first object
    /// of a writer that should not list it, the other writers related.
    fn finding(
        &self,
        cx: &CheckContext<'_>,
        entry: &EntryBuild,
        order: &EntryOrder,
        writers: &HashMap<Identity, Vec<(usize, &Object)>>,
        members: &[&Identity],
    ) -> Finding {
        let list = &writers[members[0]];
        // The owner is the writer applied first: the others depend on it, so they are the
        // ones that should not list the objects.
        let owner = list
            .iter()
            .position(|(i, _)| {
                list.iter()
                    .all(|(j, _)| !order.applied_before(*i, *j) || i == j)
            })
            .unwrap_or(0);
        let (o, owner_object) = list[owner];
        let first = if owner == 0 { 1 } else { 0 };
        let (i, object) = list[first];
        let k = &entry.kustomizations[i];
        let other = &entry.kustomizations[o];
        let here = name_node(object).and_then(|n| Location::of(n, cx.root));
        let shown: Vec<String> = members
            .iter()
            .map(|id| {
                let (_, obj) = writers[*id][0];
                match obj.namespace() {
                    "" => format!("{} {}", obj.kind(), obj.name()),
                    ns => format!("{} {ns}/{}", obj.kind(), obj.name()),
                }
            })
            .collect();
        let what = match shown.as_slice() {
            [one] => format!("{one} is"),
            many if many.len() <= 5 => format!("{} objects ({}) are", many.len(), many.join(", ")),
            many => format!(
                "{} objects ({}, and {} more) are",
                many.len(),
                many[..5].join(", "),
                many.len() - 5
            ),
        };
        let names: Vec<String> = list
            .iter()
            .map(|(j, _)| writer(&entry.kustomizations[*j]))
            .collect();
        let by = match names.as_slice() {
            [a, b] => format!("both {a} and {b}"),
            many => {
                let keys: Vec<String> = list
                    .iter()
                    .map(|(j, _)| entry.kustomizations[*j].key())
                    .collect();
                format!("{} Kustomizations ({})", many.len(), keys.join(", "))
            }
        };
        let it = if members.len() == 1 { "it" } else { "them" };
        let help = if list.len() > 2 {
            format!(
                "keep {it} in one Kustomization ({} applies {it} first) and make the others dependsOn it, or give each writer objects of its own names",
                writer(other),
            )
        } else if order.applied_before(i, o) {
            format!(
                "remove {it} from {}: {} applies {it} first, and is the one to keep {it}",
                writer(k),
                writer(other),
            )
        } else {
            format!(
                "keep {it} in one of the two; if {} needs {it} first, make it dependsOn {}",
                writer(k),
                writer(other),
            )
        };
        let mut finding = Finding::new(
            self.code(),
            format!(
                "{what} applied by {by}: {}",
                if list.len() == 2 {
                    format!("two writers overwrite each other, and pruning by either deletes {it} for both")
                } else {
                    format!("the writers overwrite each other, and pruning by any of them deletes {it} for all")
                }
            ),
            help,
        )
        .at(here.clone())
        .with_chain(&k.chain);
        for (n, &(j, obj)) in list.iter().enumerate() {
            if n == first {
                continue;
            }
            let w = &entry.kustomizations[j];
            let mut there = name_node(obj).and_then(|n| Location::of(n, cx.root));
            // The same file built twice: point at the other writer instead.
            if there == here {
                there = w
                    .kustomization
                    .object
                    .node_at(&["spec", "path"])
                    .and_then(|n| Location::of(n, cx.root));
            }
            let label = if std::ptr::eq(obj, owner_object) {
                format!("also applied by {} (first)", writer(w))
            } else {
                format!("also applied by {}", writer(w))
            };
            finding = finding.related(there, label);
        }
        finding
    }
}

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
    target: String,
) -> Identity {
    let group = object.group().to_string();
    let kind = object.kind().to_string();
    let cluster = Schema::builtin().is_namespaced(object.api_version(), &kind) == Some(false)
        || cluster_scoped.contains(&(group.clone(), kind.clone()));
    let namespace = if cluster {
        String::new()
    } else {
        object.namespace_or_default().to_string()
    };
    (target, group, kind, namespace, object.name().to_string())
}
