//! Kinds the API server serves without a CRD: Kubernetes' own (the 1.21.2 schema plumb embeds,
//! plus the kinds added to built-in groups since) and Flux's, whose controllers reconcile the
//! repository in the first place.

use plumb_kustomize::schema::Schema;

/// Versions a built-in group has served; a kind counts as built in whatever version the object
/// names (a removed version is API001's finding, not a missing CRD).
const VERSIONS: &[&str] = &[
    "v1", "v1beta1", "v1beta2", "v1alpha1", "v2", "v2beta1", "v2beta2",
];

/// Kinds added to built-in API groups after Kubernetes 1.21, from the Kubernetes API reference
/// (<https://kubernetes.io/docs/reference/kubernetes-api/>, v1.34) and the release notes of
/// 1.22–1.34.
const NEWER_KINDS: &[(&str, &str)] = &[
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
    ),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicyBinding",
    ),
    ("authentication.k8s.io", "SelfSubjectReview"),
    ("certificates.k8s.io", "ClusterTrustBundle"),
    ("coordination.k8s.io", "LeaseCandidate"),
    ("networking.k8s.io", "IPAddress"),
    ("networking.k8s.io", "ServiceCIDR"),
    ("resource.k8s.io", "DeviceClass"),
    ("resource.k8s.io", "ResourceClaim"),
    ("resource.k8s.io", "ResourceClaimTemplate"),
    ("resource.k8s.io", "ResourceSlice"),
    ("storage.k8s.io", "CSIStorageCapacity"),
    ("storage.k8s.io", "VolumeAttributesClass"),
    ("storagemigration.k8s.io", "StorageVersionMigration"),
    ("internal.apiserver.k8s.io", "StorageVersion"),
];

/// Whether `group`/`kind` exists in a cluster without a CRD from this repository.
pub(crate) fn is_builtin(group: &str, kind: &str) -> bool {
    if is_flux(group) || NEWER_KINDS.contains(&(group, kind)) {
        return true;
    }
    let schema = Schema::builtin();
    if group.is_empty() {
        return schema.resource("v1", kind).is_some();
    }
    VERSIONS
        .iter()
        .any(|v| schema.resource(&format!("{group}/{v}"), kind).is_some())
}

/// Flux's own groups: their CRDs come with Flux (bootstrap or the Flux Operator), which must
/// already run for the repository to be reconciled at all; source-watcher's
/// (`source.extensions.fluxcd.io`: ArtifactGenerator) with its extra components.
fn is_flux(group: &str) -> bool {
    group.ends_with(".toolkit.fluxcd.io")
        || group.ends_with(".extensions.fluxcd.io")
        || group == "fluxcd.controlplane.io"
}

#[cfg(test)]
mod tests {
    use super::is_builtin;

    #[test]
    fn kubernetes_and_flux_kinds_are_built_in() {
        assert!(is_builtin("", "ConfigMap"));
        assert!(is_builtin("apps", "Deployment"));
        assert!(is_builtin("autoscaling", "HorizontalPodAutoscaler"));
        assert!(is_builtin("kustomize.toolkit.fluxcd.io", "Kustomization"));
        assert!(is_builtin(
            "source.extensions.fluxcd.io",
            "ArtifactGenerator"
        ));
        assert!(is_builtin("resource.k8s.io", "ResourceClaim"));
        assert!(!is_builtin("cert-manager.io", "Certificate"));
        assert!(!is_builtin("", "Certificate"));
    }
}
