use super::placement::{self, Verdict};
use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};

/// ## What it does
/// Finds objects whose CRD a controller creates only after it reconciles another object of
/// the same Flux Kustomization, as `.plumb.yaml` describes it:
/// `runtimeCRDs: [{createdBy: {kind: CDI}, group: cdi.kubevirt.io, kinds: [DataVolume]}]`.
///
/// ## Why is this bad?
/// It is a deadlock, not a race. kustomize-controller dry-runs every object before applying
/// any: the `DataVolume` fails with `no matches for kind`, so the `CDI` is never applied, so
/// the CDI operator never creates the `DataVolume` CRD, and every retry fails the same way.
///
/// ## Example
/// ```yaml
/// # platform-config/kustomization.yaml
/// resources:
///   - cdi.yaml              # kind: CDI
///   - golden-images.yaml    # kind: DataVolume
/// ```
///
/// Use instead:
/// ```yaml
/// # platform-config/kustomization.yaml
/// resources:
///   - cdi.yaml
/// # platform-config-cdi/kustomization.yaml, a Kustomization that dependsOn platform-config
/// resources:
///   - golden-images.yaml
/// ```
pub struct RuntimeCrdDeadlock;

impl Rule for RuntimeCrdDeadlock {
    fn code(&self) -> &'static str {
        "ORD004"
    }

    fn summary(&self) -> &'static str {
        "a CR whose CRD a controller creates only after reconciling another CR of the same Kustomization"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        let same_controller = |v| match v {
            Verdict::SameController(creator) => Some(creator),
            _ => None,
        };
        for (p, creator) in placement::problems_where(cx, same_controller) {
            let o = p.object;
            out.push(
                p.finding(
                    cx,
                    self.code(),
                    format!(
                        "the CRD of `{}` ({}) is created at runtime only after {} is reconciled, and both are in {}: the dry-run of `{}` fails, so {} is never applied and the CRD never appears",
                        o.kind(),
                        o.group(),
                        creator.describe(),
                        placement::describe(p.ks),
                        o.kind(),
                        creator.describe(),
                    ),
                    p.move_after_help(),
                )
                .related(
                    creator.node().and_then(|n| Location::of(n, cx.root)),
                    format!("reconciling {} creates the CRD", creator.describe()),
                ),
            );
        }
    }
}
