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
pub fn legacy_sort(resources: &mut [Resource], first: &[String], last: &[String]) {
    let rank = |kind: &str| -> i64 {
        if let Some(i) = first.iter().position(|k| k == kind) {
            i as i64 - first.len() as i64
        } else if let Some(i) = last.iter().position(|k| k == kind) {
            1 + i as i64
        } else {
            0
        }
    };
    resources.sort_by(|a, b| {
        let (ga, gb) = (a.gvk(), b.gvk());
        if ga != gb {
            return gvk_order(&ga, &gb, rank(&ga.kind), rank(&gb.kind));
        }
        id_sort_string(a).cmp(&id_sort_string(b))
    });
}

fn gvk_order(a: &Gvk, b: &Gvk, ra: i64, rb: i64) -> Ordering {
    if ra != rb {
        return ra.cmp(&rb);
    }
    let (sa, sb) = (gvk_sort_string(a), gvk_sort_string(b));
    if a.kind == "Namespace" && b.kind == "Namespace" && (a.group.is_empty() || b.group.is_empty())
    {
        return sb.cmp(&sa);
    }
    sa.cmp(&sb)
}

fn gvk_sort_string(g: &Gvk) -> String {
    let or = |s: &str, d: &'static str| {
        if s.is_empty() {
            d.to_string()
        } else {
            s.to_string()
        }
    };
    format!(
        "{}_{}_{}",
        or(&g.group, "~G"),
        or(&g.version, "~V"),
        or(&g.kind, "~K")
    )
}

fn id_sort_string(r: &Resource) -> String {
    let ns = if r.namespace().is_empty() {
        "~X"
    } else {
        r.namespace()
    };
    let name = if r.name().is_empty() { "~N" } else { r.name() };
    format!("{}|{}|{}", r.gvk(), ns, name)
}

/// The default lists as owned strings.
pub fn default_lists() -> (Vec<String>, Vec<String>) {
    (
        ORDER_FIRST.iter().map(|s| s.to_string()).collect(),
        ORDER_LAST.iter().map(|s| s.to_string()).collect(),
    )
}
