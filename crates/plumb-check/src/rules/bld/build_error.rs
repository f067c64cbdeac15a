use crate::finding::Finding;
use crate::rule::{CheckContext, Rule};
use plumb_flux::diagnostic::Severity;

/// ## What it does
/// Reports every error of the build itself: a kustomization that kustomize refuses, a patch
/// that matches nothing, a variable strict substitution cannot resolve, a Secret that cannot be
/// decrypted, a `dependsOn` cycle: anything `plumb build` exits 1 for.
///
/// ## Why is this bad?
/// kustomize-controller fails the same way: the Kustomization stays not Ready, nothing in it
/// (or after it, through `dependsOn`) is applied, and the other rules cannot see the objects it
/// would have produced.
///
/// ## Example
/// ```yaml
/// # apps/kustomization.yaml
/// resources:
///   - deployment.yaml
///   - service.yml        # the file is service.yaml
/// ```
///
/// Use instead:
/// ```yaml
/// resources:
///   - deployment.yaml
///   - service.yaml
/// ```
pub struct BuildError;

impl Rule for BuildError {
    fn code(&self) -> &'static str {
        "BLD001"
    }

    fn summary(&self) -> &'static str {
        "the repository does not build as kustomize-controller would build it"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        super::diagnostics_as_findings(cx, self.code(), Severity::Error, out);
    }
}
