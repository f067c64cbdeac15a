//! What a cluster's build did not see. A Kustomization that was not built (its source or a
//! remote resource could not be fetched, it is another repository's) holds
//! objects no rule can read, so that "no Kustomization of this cluster creates" an object is
//! known only when none of them could have created it. The summary counts them as not checked.

use plumb_flux::build::{EntryBuild, Status};

/// Whether a Kustomization of `entry` that was not built could have created a namespaced
/// object in `namespace`: one without `targetNamespace`, or with that one (Flux sets it on every
/// namespaced object the Kustomization applies).
pub(crate) fn unbuilt_may_create(entry: &EntryBuild, namespace: &str) -> bool {
    entry
        .kustomizations
        .iter()
        // One that failed applies nothing in the cluster: what it would hold is missing there.
        .filter(|k| {
            !k.synthetic && matches!(k.status, Status::NotBuilt(_) | Status::Unavailable(_))
        })
        .any(|k| {
            k.kustomization
                .target_namespace
                .as_deref()
                .is_none_or(|t| t.is_empty() || t == namespace)
        })
}

#[cfg(test)]
mod tests {
    use super::unbuilt_may_create;
    use plumb_flux::build::{EntryBuild, KustomizationBuild, Status};
    use plumb_flux::model::{FluxKustomization, Object};

    fn ks(name: &str, target: Option<&str>, status: Status) -> KustomizationBuild {
        let mut spec = serde_json::json!({"path": "./x", "sourceRef": {"kind": "GitRepository", "name": "flux-system"}});
        if let Some(t) = target {
            spec["targetNamespace"] = serde_json::json!(t);
        }
        let object = Object {
            value: serde_json::json!({
                "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
                "kind": "Kustomization",
                "metadata": {"name": name, "namespace": "flux-system"},
                "spec": spec,
            }),
            origin: None,
        };
        KustomizationBuild {
            kustomization: FluxKustomization::from_object(object),
            path: "x".into(),
            source: "GitRepository/flux-system/flux-system".into(),
            parent: None,
            chain: vec![],
            objects: vec![],
            diagnostics: vec![],
            synthetic: false,
            status,
            seconds: 0.0,
        }
    }

    fn entry(kustomizations: Vec<KustomizationBuild>) -> EntryBuild {
        EntryBuild {
            entry: "clusters/dev".into(),
            kustomizations,
            helm_releases: vec![],
            releases: vec![],
            sources: vec![],
            repository_source: None,
            diagnostics: vec![],
            assumptions: vec![],
            bootstrap: Default::default(),
            bootstrap_releases: vec![],
            runtime_secrets: vec![],
            staging: None,
            seconds: 0.0,
            stages: Default::default(),
        }
    }

    #[test]
    fn only_an_unbuilt_kustomization_that_can_reach_the_namespace_hides_an_object() {
        let unavailable = Status::Unavailable("offline".into());
        let built = entry(vec![ks("a", None, Status::Built)]);
        assert!(!unbuilt_may_create(&built, "database"));
        let targeted = entry(vec![ks("a", Some("media"), unavailable.clone())]);
        assert!(!unbuilt_may_create(&targeted, "database"));
        assert!(unbuilt_may_create(&targeted, "media"));
        let anywhere = entry(vec![ks("a", None, Status::NotBuilt("remote".into()))]);
        assert!(unbuilt_may_create(&anywhere, "database"));
        let failed = entry(vec![ks("a", None, Status::Failed)]);
        assert!(!unbuilt_may_create(&failed, "database"));
    }
}
