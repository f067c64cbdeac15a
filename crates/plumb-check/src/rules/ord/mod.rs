//! Apply order: whether every object's kind exists when Flux dry-runs it, and whether the
//! `dependsOn` graph can ever become ready.
//!
//! ORD001–ORD004 share one analysis ([`placement`]): for each object of a custom kind, what
//! provides its CRD (a CRD object, a HelmRelease whose chart installs it, a controller that
//! creates it at runtime) and whether that provider is in place before the object's
//! Kustomization is applied.

pub mod crd_from_helm_release;
pub mod crd_not_in_dependencies;
pub mod dependency_cycle;
pub mod missing_dependency;
pub mod runtime_crd_deadlock;
pub mod unknown_kind;

mod builtin_kinds;
mod known_charts;
pub(crate) mod order;
pub(crate) mod placement;

use plumb_flux::diagnostic::Diagnostic;
use plumb_flux::model::Object;
use plumb_yaml::Node;

/// The rule that reports a build diagnostic (`plumb_flux::build`) under its own code, if one
/// does: ORD006 and REF001 turn the build's dependsOn cycles and missing sources and paths
/// into findings, ORD005 and OWN001 find missing dependencies and two writers of a
/// Kustomization themselves (with more precise positions). BLD001/BLD002 can leave these out.
pub(crate) fn claimed_by(d: &Diagnostic) -> Option<&'static str> {
    let m = d.message.as_str();
    if m.starts_with("dependsOn cycle: ") {
        Some("ORD006")
    } else if m.starts_with("kustomization path not found: ")
        || (m.starts_with("source ") && m.contains(" not found: "))
    {
        Some("REF001")
    } else if m.contains(", which no Kustomization of this cluster creates") {
        Some("ORD005")
    } else if m.contains(": two writers of one object") {
        Some("OWN001")
    } else {
        None
    }
}

/// The text of `field` in item `index` of the list at `path` (`spec.dependsOn[1].name`), or
/// the nearest enclosing node that has a position.
pub(crate) fn list_item<'a>(
    object: &'a Object,
    path: &[&str],
    index: usize,
    field: &str,
) -> Option<&'a Node> {
    let list = object.node_at(path)?;
    match list.as_sequence().and_then(|items| items.get(index)) {
        Some(item) => item.get(field).or(Some(item)),
        None => Some(list),
    }
}
