//! plumb-check: the rules that catch what costs operators days, run over a Flux repository's
//! build, with findings that point at the offending text.
//!
//! [`check`] builds nothing itself: it takes a [`plumb_flux::build::RepositoryBuild`] and the
//! configuration, runs every rule, and returns the findings sorted by file and line.
//! [`Report::run`] is what `plumb check` does: only the selected rules, with the configuration's
//! severity overrides, per-path ignores and `# plumb:ignore` comments applied; [`render`] prints
//! a report as text, JSON, SARIF or GitHub annotations.
//!
//! ```no_run
//! use plumb_check::{render, CheckConfig, Report, Selection};
//! use plumb_flux::build::{build_repository, Options};
//! use std::path::Path;
//!
//! let root = Path::new("examples/homelab");
//! let config = CheckConfig::load(root).unwrap();
//! let build = build_repository(root, &Options::default()).unwrap();
//! let selection = Selection::new(&config.rules, &[], &[]);
//! let mut report = Report::run(&build, &config, &selection);
//! print!("{}", render::text::render(&mut report, Default::default()));
//! ```

pub mod config;
pub mod explain;
pub mod finding;
mod glob;
pub mod render;
pub mod report;
pub mod rule;
pub mod rules;
pub mod selection;
pub mod sources;
pub mod suppression;

pub use config::CheckConfig;
pub use finding::{Finding, Location, Severity};
pub use report::Report;
pub use rule::{CheckContext, Rule};
pub use selection::Selection;

use plumb_flux::build::RepositoryBuild;
use std::path::Path;

/// Runs every rule on a build.
pub fn check(root: &Path, build: &RepositoryBuild, config: &CheckConfig) -> Vec<Finding> {
    let cx = CheckContext::new(root, build, config);
    let mut findings = Vec::new();
    for rule in rules::all() {
        rule.check(&cx, &mut findings);
    }
    finding::merge(&mut findings);
    findings
}
