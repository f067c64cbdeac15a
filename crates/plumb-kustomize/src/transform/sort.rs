//! Output order. `legacy` is kustomize's fixed kind order (Namespaces and CRDs first, webhooks
//! last, the rest by group, version, kind, then namespace and name); `fifo` keeps the order in
//! which resources were accumulated.

use crate::resource::{Gvk, Resource};
use std::cmp::Ordering;

/// kustomize's default `orderFirst` list.
pub const ORDER_FIRST: &[&str] = &[
    "Namespace",
    "ResourceQuota",
    "StorageClass",
    "CustomResourceDefinition",
    "ServiceAccount",
    "PodSecurityPolicy",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "Service",
    "LimitRange",
    "PriorityClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Deployment",
    "StatefulSet",
    "CronJob",
    "PodDisruptionBudget",
];

/// kustomize's default `orderLast` list.
pub const ORDER_LAST: &[&str] = &[
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// Sorts resources in kustomize's legacy order with the given first and last kinds.
pub fn legacy_sort<S: AsRef<str>>(resources: &mut Vec<Resource>, first: &[S], last: &[S]) {
    // Each resource's keys are made once, not at each of the sort's n log n comparisons. The
    // order is a total one (rank, then the kind's sort string, Namespaces without a group
    // reversed ahead of the rest, then the id), so sorting indices by it gives what sorting
    // the resources gave.
    let keys: Vec<SortKey> = resources
        .iter()
        .map(|r| SortKey::of(r, first, last))
        .collect();
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by(|&a, &b| legacy_order(&keys[a], &keys[b]));
    let mut taken: Vec<Option<Resource>> =
        std::mem::take(resources).into_iter().map(Some).collect();
    // Room for all at once: grown one doubling at a time, the list was copied over and over.
    resources.reserve_exact(taken.len());
    resources.extend(order.into_iter().filter_map(|i| taken[i].take()));
}

/// Where `kind` ranks: the kinds of `first` before the rest (negative), those of `last` after
/// (positive), every other kind at 0.
fn rank<S: AsRef<str>>(kind: &str, first: &[S], last: &[S]) -> i64 {
    if let Some(i) = first.iter().position(|k| k.as_ref() == kind) {
        i as i64 - first.len() as i64
    } else if let Some(i) = last.iter().position(|k| k.as_ref() == kind) {
        1 + i as i64
    } else {
        0
    }
}

/// The legacy order of two resources' keys.
fn legacy_order(a: &SortKey, b: &SortKey) -> Ordering {
    if a.gvk != b.gvk {
        return gvk_order(a, b);
    }
    a.id.cmp(&b.id)
}

/// What the legacy order compares of one resource.
struct SortKey {
    gvk: Gvk,
    rank: i64,
    /// `gvk_sort_string` of `gvk`.
    text: String,
    /// `id_sort_string` of the resource.
    id: String,
}

impl SortKey {
    fn of<S: AsRef<str>>(r: &Resource, first: &[S], last: &[S]) -> SortKey {
        let gvk = r.gvk();
        SortKey {
            rank: rank(&gvk.kind, first, last),
            text: gvk_sort_string(&gvk),
            id: id_sort_string(r, &gvk),
            gvk,
        }
    }
}

fn gvk_order(a: &SortKey, b: &SortKey) -> Ordering {
    if a.rank != b.rank {
        return a.rank.cmp(&b.rank);
    }
    let (ga, gb) = (&a.gvk, &b.gvk);
    if ga.kind == "Namespace"
        && gb.kind == "Namespace"
        && (ga.group.is_empty() || gb.group.is_empty())
    {
        return b.text.cmp(&a.text);
    }
    a.text.cmp(&b.text)
}

fn gvk_sort_string(g: &Gvk) -> String {
    fn or<'a>(s: &'a str, empty: &'static str) -> &'a str {
        if s.is_empty() {
            empty
        } else {
            s
        }
    }
    format!(
        "{}_{}_{}",
        or(&g.group, "~G"),
        or(&g.version, "~V"),
        or(&g.kind, "~K")
    )
}

/// The id's sort string of `r`, whose group, version and kind are `gvk` (read once by the
/// caller, as its namespace and name are here).
fn id_sort_string(r: &Resource, gvk: &Gvk) -> String {
    let (namespace, name) = (r.namespace(), r.name());
    let ns = if namespace.is_empty() {
        "~X"
    } else {
        namespace
    };
    let name = if name.is_empty() { "~N" } else { name };
    format!("{gvk}|{ns}|{name}")
}

/// The default lists as owned strings.
pub fn default_lists() -> (Vec<String>, Vec<String>) {
    (
        ORDER_FIRST.iter().map(|s| s.to_string()).collect(),
        ORDER_LAST.iter().map(|s| s.to_string()).collect(),
    )
}

/// [`default_lists`] as the tables they are made from, for a sort that only reads them.
pub fn default_order() -> (&'static [&'static str], &'static [&'static str]) {
    (ORDER_FIRST, ORDER_LAST)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(api_version: &str, kind: &str, namespace: &str, name: &str) -> Resource {
        let text = format!(
            "apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: {namespace}\n"
        );
        Resource::new(
            plumb_yaml::parse_documents("t.yaml", &text)
                .unwrap()
                .remove(0),
        )
    }

    /// The legacy order on resources of every rank, Namespaces with and without a group, and
    /// equal kinds in several namespaces, from several starting orders: what sorting the
    /// resources with the comparison made at each step gives.
    #[test]
    fn sorts_as_comparing_the_resources_does() {
        let (first, last) = default_lists();
        let specs = [
            ("v1", "Namespace", "", "b"),
            ("v1", "Namespace", "", "a"),
            ("x.io/v1", "Namespace", "", "c"),
            ("y.io/v1", "Namespace", "", "c"),
            ("v1", "ConfigMap", "n1", "z"),
            ("v1", "ConfigMap", "n2", "a"),
            ("v1", "ConfigMap", "", "m"),
            ("apps/v1", "Deployment", "n1", "d"),
            ("apps/v1beta1", "Deployment", "n1", "d"),
            (
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
                "",
                "w",
            ),
            (
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                "",
                "crd",
            ),
            ("example.com/v1", "Widget", "n1", "w"),
            ("v1", "Service", "n1", "s"),
        ];
        for rotation in 0..specs.len() {
            let mut resources: Vec<Resource> = specs
                .iter()
                .cycle()
                .skip(rotation)
                .take(specs.len())
                .map(|(a, k, ns, n)| resource(a, k, ns, n))
                .collect();
            if rotation % 2 == 1 {
                resources.reverse();
            }
            let mut expected = resources.clone();
            let key = |r: &Resource| SortKey::of(r, &first, &last);
            expected.sort_by(|a, b| legacy_order(&key(a), &key(b)));
            legacy_sort(&mut resources, &first, &last);
            let ids = |list: &[Resource]| {
                list.iter()
                    .map(|r| id_sort_string(r, &r.gvk()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(ids(&resources), ids(&expected), "rotation {rotation}");
            assert_eq!(resources[0].kind(), "Namespace");
        }
    }
}
