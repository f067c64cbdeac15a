use crate::finding::Finding;
use crate::rule::{CheckContext, Rule};
use plumb_flux::diagnostic::Severity;

/// ## What it does
/// Reports the warnings of the build: values read through `substituteFrom` from a SOPS Secret
/// that could not be decrypted (no age key given), and other places where the build had to
/// guess instead of measuring.
///
/// ## Why is this bad?
/// The objects built from such values are not what the cluster gets: a rule that reads them
/// (a placeholder, an invariant over the vars) may miss a mistake or report one that is not
/// there.
///
/// ## Example
/// ```sh
/// plumb check --entry clusters/prod      # Secret cluster-secrets is SOPS-encrypted
/// ```
///
/// Use instead:
/// ```sh
/// SOPS_AGE_KEY_FILE=~/.config/sops/age/keys.txt plumb check --entry clusters/prod
/// ```
pub struct BuildWarning;

impl Rule for BuildWarning {
    fn code(&self) -> &'static str {
        "BLD002"
    }

    fn summary(&self) -> &'static str {
        "the build had to stand in for a value it could not read"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        super::diagnostics_as_findings(cx, self.code(), Severity::Warning, out);
    }
}
