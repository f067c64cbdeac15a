use super::placement::{self, Verdict};
use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};

/// ## What it does
/// Finds objects whose CRD is installed by a HelmRelease in the same Flux Kustomization: the
/// HelmRelease's chart is known to install the CRD (plumb keeps a table of common charts), and
/// no CustomResourceDefinition object for the kind is in the repository.
///
/// ## Why is this bad?
/// kustomize-controller dry-runs every object of the Kustomization before it applies any, and
/// the chart is installed by helm-controller only after the HelmRelease has been applied. So
/// the dry-run of the CR fails with `no matches for kind`, the HelmRelease is never applied
/// either, and the Kustomization stays failed on every retry.
///
/// ## Example
/// ```yaml
/// # platform/kustomization.yaml
/// resources:
///   - cert-manager/release.yaml   # HelmRelease of the cert-manager chart
///   - cluster-issuer.yaml         # kind: ClusterIssuer
/// ```
///
/// Use instead:
/// ```yaml
/// # platform/kustomization.yaml
/// resources:
///   - cert-manager/release.yaml
/// # platform-config/kustomization.yaml, a Kustomization that dependsOn platform
/// resources:
///   - cluster-issuer.yaml
/// ```
pub struct CrdFromHelmRelease;

impl Rule for CrdFromHelmRelease {
    fn code(&self) -> &'static str {
        "ORD003"
    }

    fn summary(&self) -> &'static str {
        "the CRD comes from a HelmRelease in the same Kustomization"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        let same_release = |v| match v {
            Verdict::SameHelmRelease(release) => Some(release),
            _ => None,
        };
        for (p, release) in placement::problems_where(cx, same_release) {
            let o = p.object;
            out.push(
                p.finding(
                    cx,
                    self.code(),
                    format!(
                        "the CRD of `{}` ({}) is installed by {} in the same {}: the dry-run runs before the chart is installed and fails with \"no matches for kind\", so neither is ever applied",
                        o.kind(),
                        o.group(),
                        release.describe(),
                        placement::describe(p.ks),
                    ),
                    p.move_after_help(),
                )
                .related(
                    release.node().and_then(|n| Location::of(n, cx.root)),
                    format!("{} installs the CRD", release.describe()),
                ),
            );
        }
    }
}
