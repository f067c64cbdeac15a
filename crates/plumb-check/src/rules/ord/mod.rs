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
pub(crate) mod distributions;
pub(crate) mod order;
pub(crate) mod placement;
mod providers;

use plumb_flux::diagnostic::{Code, Diagnostic};
use plumb_flux::model::Object;
use plumb_yaml::Node;

/// The rule that reports a build diagnostic (`plumb_flux::build`) under its own code, by the
/// diagnostic's kind: ORD006 and REF001 turn the build's dependsOn cycles and missing sources
/// and paths into findings, ORD005, OWN001 and SUB004 find missing dependencies, two writers of
/// a Kustomization and missing substitution sources themselves (with more precise positions),
/// SUB001 every `${VAR}` left unresolved, which strict mode fails on.
/// `None` for a diagnostic that is no mistake of the repository (a suspended Kustomization, a
/// value that is only known at runtime or with a key not given): BLD001/BLD002 leave those out
/// too, and the build's summary says what could not be checked.
pub(crate) fn claimed_by(d: &Diagnostic) -> Option<&'static str> {
    match d.code {
        Code::DependencyCycle => Some("ORD006"),
        Code::PathNotFound | Code::SourceNotFound => Some("REF001"),
        Code::DependencyMissing => Some("ORD005"),
        Code::TwoWriters => Some("OWN001"),
        Code::SubstituteSourceMissing => Some("SUB004"),
        Code::VariableNotSet => Some("SUB001"),
        Code::RenderNondeterministic => Some("DET001"),
        _ => None,
    }
}

/// Whether a build diagnostic says nothing is wrong with the repository: what the build could
/// not know or chose not to apply.
pub(crate) fn is_not_a_mistake(d: &Diagnostic) -> bool {
    matches!(
        d.code,
        Code::Suspended
            | Code::SubstituteSourceAssumed
            | Code::SecretUndecrypted
            | Code::ResourceSetNotExpanded
    )
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
