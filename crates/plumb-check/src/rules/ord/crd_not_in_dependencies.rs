use super::placement::{self, ProviderKind, Verdict};
use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};

/// ## What it does
/// Finds objects whose CRD comes from another Flux Kustomization that this object's
/// Kustomization does not (transitively) `dependsOn`: a CRD object there, a HelmRelease whose
/// chart installs it, or a CR whose controller creates it at runtime.
///
/// ## Why is this bad?
/// Flux reconciles independent Kustomizations in any order. Whenever this one goes first —
/// always on a fresh cluster, during a disaster recovery — the dry-run fails with
/// `no matches for kind` and none of its objects are applied. It works on the cluster where
/// it was written only because the CRD happened to be there already.
///
/// ## Example
/// ```yaml
/// apiVersion: kustomize.toolkit.fluxcd.io/v1
/// kind: Kustomization
/// metadata:
///   name: platform-config      # holds a ClusterIssuer
/// spec:
///   path: ./platform-config
///   sourceRef: {kind: GitRepository, name: flux-system}
/// ```
///
/// Use instead:
/// ```yaml
/// apiVersion: kustomize.toolkit.fluxcd.io/v1
/// kind: Kustomization
/// metadata:
///   name: platform-config
/// spec:
///   path: ./platform-config
///   sourceRef: {kind: GitRepository, name: flux-system}
///   dependsOn:
///     - name: platform         # installs cert-manager and its CRDs
/// ```
pub struct CrdNotInDependencies;

impl Rule for CrdNotInDependencies {
    fn code(&self) -> &'static str {
        "ORD002"
    }

    fn summary(&self) -> &'static str {
        "the CRD comes from a Kustomization this one does not (transitively) dependsOn"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        let not_ordered = |v| match v {
            Verdict::NotOrdered(provider) => Some(provider),
            _ => None,
        };
        // One missing dependsOn is one mistake, however many objects of the kind the
        // Kustomization holds: the first object's finding stands for the others, which are
        // counted (its place in `out`, and how many more).
        let mut first: std::collections::HashMap<(String, &str, &str, String), (usize, usize)> =
            std::collections::HashMap::new();
        for (p, provider) in placement::problems_where(cx, not_ordered) {
            let o = p.object;
            let mistake = (
                p.ks.kustomization.key(),
                o.group(),
                o.kind(),
                provider.ks.kustomization.key(),
            );
            if let Some((_, more)) = first.get_mut(&mistake) {
                *more += 1;
                continue;
            }
            first.insert(mistake, (out.len(), 0));
            let how = match provider.kind {
                ProviderKind::Crd => "is defined",
                ProviderKind::HelmRelease => "is installed by a HelmRelease",
                ProviderKind::Controller => "is created at runtime by a controller",
            };
            let label = match provider.kind {
                ProviderKind::Crd => "the CRD is defined here",
                ProviderKind::HelmRelease => "this HelmRelease installs the CRD",
                ProviderKind::Controller => "reconciling this creates the CRD",
            };
            let wait = if provider.ks.synthetic {
                "move the object, or its CRD, so that the CRD is applied first".to_string()
            } else {
                format!(
                    "add `{{name: {}, namespace: {}}}` to `spec.dependsOn` of {} (the dependency with `wait: true`)",
                    provider.ks.kustomization.name,
                    provider.ks.kustomization.namespace,
                    placement::describe(p.ks),
                )
            };
            out.push(
                p.finding(
                    cx,
                    self.code(),
                    format!(
                        "the CRD of `{}` ({}) {how} in {}, which {} does not dependsOn: when it is reconciled first, its dry-run fails with \"no matches for kind\"",
                        o.kind(),
                        o.group(),
                        placement::describe(provider.ks),
                        placement::describe(p.ks),
                    ),
                    wait,
                )
                .related(
                    provider.node().and_then(|n| Location::of(n, cx.root)),
                    format!("{label}: {}", provider.describe()),
                ),
            );
        }
        for ((_, _, kind, _), (at, n)) in first.into_iter().filter(|(_, (_, n))| *n > 0) {
            out[at].message.push_str(&format!(
                " ({n} more `{kind}` object{} of it: the same dependsOn)",
                if n == 1 { "" } else { "s" }
            ));
        }
    }
}
