//! The rule catalogue, one file per rule, grouped by area.
//!
//! # Convention (read by `build.rs`)
//!
//! A rule is a `pub struct` in `rules/<area>/<rule_name>.rs` with `impl Rule for ThatStruct`,
//! whose `fn code` returns a string literal (`"SUB001"`). The `///` block directly above the
//! `pub struct` (attribute lines may stand between) is the rule's documentation, printed by
//! `plumb explain CODE`, with these sections:
//!
//! ```text
//! /// ## What it does
//! /// ...
//! ///
//! /// ## Why is this bad?
//! /// ...
//! ///
//! /// ## Example
//! /// ```yaml
//! /// ...
//! /// ```
//! ///
//! /// Use instead:
//! /// ```yaml
//! /// ...
//! /// ```
//! ```
//!
//! `build.rs` extracts it into a table at compile time, so it is written only here; a test
//! (`explain::tests::every_rule_is_documented`) fails for a registered rule without it. Each rule
//! also has fixture repositories `tests/fixtures/<CODE>/bad` (must produce findings of CODE) and
//! `tests/fixtures/<CODE>/good` (must produce none), whose text output is snapshotted by
//! `tests/fixtures.rs`.

pub mod api;
pub(crate) mod generated;
pub mod lck;
pub mod pin;
pub(crate) mod repo_files;
pub mod sec;

use crate::rule::Rule;

mod bld;
mod ign;

pub mod env;
pub mod sub;

pub(crate) mod ord;
mod own;
mod refs;

mod det;
mod releases;

/// Every rule, in code order.
pub fn all() -> Vec<Box<dyn Rule>> {
    let mut rules: Vec<Box<dyn Rule>> = vec![
        // Each area adds its rules here.
        Box::new(pin::image_without_digest::ImageWithoutDigest),
        Box::new(pin::floating_chart_version::FloatingChartVersion),
        Box::new(pin::action_not_pinned::ActionNotPinned),
        Box::new(sec::plaintext_secret::PlaintextSecret),
        Box::new(sec::broken_sops_file::BrokenSopsFile),
        Box::new(api::removed_api_version::RemovedApiVersion),
        Box::new(lck::missing_lock_file::MissingLockFile),
        Box::new(bld::BuildError),
        Box::new(bld::BuildWarning),
        Box::new(ign::IgnoreWithoutReason),
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
        Box::new(own::bootstrap_adoption::BootstrapAdoption),
        Box::new(det::nondeterministic_render::NondeterministicRender),
        Box::new(refs::dangling_reference::DanglingReference),
    ];
    rules.sort_by_key(|r| r.code());
    rules
}
