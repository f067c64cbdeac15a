//! The rule catalogue, one file per rule, grouped by area.

use crate::rule::Rule;

pub mod env;
pub mod sub;

mod ord;
mod own;
mod refs;

/// Every rule, in code order.
pub fn all() -> Vec<Box<dyn Rule>> {
    let mut rules: Vec<Box<dyn Rule>> = vec![
        // Each area adds its rules here.
        Box::new(sub::UnresolvedVariable),
        Box::new(sub::PlaceholderValue),
        Box::new(sub::ShellSyntax),
        Box::new(sub::MissingSubstituteSource),
        Box::new(env::OverlayChangesBase),
        Box::new(env::InvariantViolated),
        Box::new(env::InheritedBaseDefault),
        Box::new(ord::unknown_kind::UnknownKind),
        Box::new(ord::crd_not_in_dependencies::CrdNotInDependencies),
        Box::new(ord::crd_from_helm_release::CrdFromHelmRelease),
        Box::new(ord::runtime_crd_deadlock::RuntimeCrdDeadlock),
        Box::new(ord::missing_dependency::MissingDependency),
        Box::new(ord::dependency_cycle::DependencyCycle),
        Box::new(own::two_writers::TwoWriters),
        Box::new(refs::dangling_reference::DanglingReference),
    ];
    rules.sort_by_key(|r| r.code());
    rules
}
