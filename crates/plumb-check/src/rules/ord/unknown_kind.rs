use super::placement::{self, Verdict};
use crate::finding::Finding;
use crate::rule::{CheckContext, Rule};

/// ## What it does
/// Finds objects whose kind the cluster does not know: it is not a Kubernetes or Flux kind,
/// no CustomResourceDefinition in the repository defines it (nor the charts of its rendered
/// HelmReleases, nor what is applied at bootstrap), and `.plumb.yaml` does not list it under
/// `runtimeCRDs`. Only when everything that could provide it was seen: with a HelmRelease not
/// rendered (its chart not fetched, no helm) or a Kustomization not built, the kind is counted
/// in the summary as not checked instead.
///
/// ## Why is this bad?
/// kustomize-controller server-side dry-runs every object before it applies any; for a kind
/// the API server does not serve, the dry-run fails with `no matches for kind`, and nothing of
/// the Kustomization is applied. The cause is usually a typo in `kind` or `apiVersion`, a CRD
/// that was never committed, or a controller installed outside the repository.
///
/// ## Example
/// ```yaml
/// apiVersion: cert-manager.io/v1
/// kind: ClusterIssuer   # no CRD, no cert-manager HelmRelease anywhere
/// metadata:
///   name: letsencrypt
/// ```
///
/// Use instead:
/// ```yaml
/// # platform/cert-manager/release.yaml, in a Kustomization the issuer's one dependsOn
/// apiVersion: helm.toolkit.fluxcd.io/v2
/// kind: HelmRelease
/// metadata:
///   name: cert-manager
///   namespace: cert-manager
/// spec:
///   chartRef: {kind: OCIRepository, name: cert-manager}
///   values: {crds: {enabled: true}}
/// ```
/// or, when a controller installed outside the repository creates the kind, say so in
/// `.plumb.yaml`: `runtimeCRDs: [{group: cert-manager.io, kinds: [ClusterIssuer]}]`.
pub struct UnknownKind;

impl Rule for UnknownKind {
    fn code(&self) -> &'static str {
        "ORD001"
    }

    fn summary(&self) -> &'static str {
        "an object's kind has no CRD in the repository and is not built in"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        let unknown = |v| matches!(v, Verdict::Unknown).then_some(());
        for (p, ()) in placement::problems_where(cx, unknown) {
            let o = p.object;
            out.push(
                p.finding(
                    cx,
                    self.code(),
                    format!(
                        "no CustomResourceDefinition for `{}` ({}) in this repository, and it is not a built-in kind: the dry-run of {} fails with \"no matches for kind\"",
                        o.kind(),
                        o.api_version(),
                        placement::describe(p.ks),
                    ),
                    "commit the CRD (or the HelmRelease that installs it) in a Kustomization this one dependsOn, fix the kind or apiVersion if it is a typo, or list the kind under `runtimeCRDs` in .plumb.yaml if a controller creates it",
                ),
            );
        }
    }
}
