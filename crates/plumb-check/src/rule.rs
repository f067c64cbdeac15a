//! The rule interface: every rule is a type in its own file under `rules/<area>/`, whose doc
//! comment (What it does / Why is this bad? / Example / Use instead) is what `plumb explain`
//! prints.

use crate::config::CheckConfig;
use crate::finding::Finding;
use plumb_flux::build::RepositoryBuild;
use std::path::Path;
use std::sync::OnceLock;

/// What a rule looks at: the repository, its build and the configuration.
pub struct CheckContext<'a> {
    pub root: &'a Path,
    pub build: &'a RepositoryBuild,
    pub config: &'a CheckConfig,
    /// The apply-order analysis ORD001–ORD004 and the summary share, made once.
    pub(crate) placement: OnceLock<crate::rules::ord::placement::Placement<'a>>,
}

impl<'a> CheckContext<'a> {
    pub fn new(root: &'a Path, build: &'a RepositoryBuild, config: &'a CheckConfig) -> Self {
        CheckContext {
            root,
            build,
            config,
            placement: OnceLock::new(),
        }
    }
}

pub trait Rule: Send + Sync {
    /// The stable code (`SUB001`).
    fn code(&self) -> &'static str;
    /// One line: what the rule finds.
    fn summary(&self) -> &'static str;
    /// Appends its findings.
    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>);
}
