//! What the build of a cluster did not see: Kustomizations that were not built (their source
//! or a remote resource could not be fetched, their source is another repository). Their
//! objects are unknown, so a ConfigMap, Secret, source or dependency that no built
//! Kustomization produces may still be theirs: a Kustomization that needs one is then not built
//! either, for that reason, and a check stays silent rather than report a mistake that may not
//! be there. One that failed applies nothing in the cluster, so what it would hold is missing
//! there too, and is reported as missing.
//!
//! Their `targetNamespace` bounds where they can hold anything: Flux sets it on every
//! namespaced object a Kustomization applies.

use crate::build::{KustomizationBuild, Status};
use crate::model::FluxKustomization;

/// Whether a Kustomization with `target_namespace` could apply a namespaced object in
/// `namespace`: it sets none (an empty one is none), or that one.
fn reaches(target_namespace: Option<&str>, namespace: &str) -> bool {
    target_namespace.is_none_or(|t| t.is_empty() || t == namespace)
}

/// The first Kustomization of a cluster's build that was not built (not failed) and could hold
/// a namespaced object in `namespace`.
pub fn unbuilt_holder<'a>(
    kustomizations: &'a [KustomizationBuild],
    namespace: &str,
) -> Option<&'a KustomizationBuild> {
    kustomizations.iter().find(|k| {
        !k.synthetic
            && matches!(k.status, Status::NotBuilt(_) | Status::Unavailable(_))
            && reaches(k.kustomization.target_namespace.as_deref(), namespace)
    })
}

/// The Kustomizations not built so far in a build under way, each with its `targetNamespace`.
#[derive(Debug, Default)]
pub(crate) struct Unseen {
    kustomizations: Vec<(String, Option<String>)>,
}

impl Unseen {
    pub(crate) fn add(&mut self, ks: &FluxKustomization) {
        self.kustomizations
            .push((ks.key(), ks.target_namespace.clone()));
    }

    /// The first Kustomization not built that could hold a namespaced object in `namespace`.
    pub(crate) fn may_hold(&self, namespace: &str) -> Option<&str> {
        self.kustomizations
            .iter()
            .find(|(_, target)| reaches(target.as_deref(), namespace))
            .map(|(key, _)| key.as_str())
    }

    /// Why a Kustomization needing `what` (`Secret database/dragonfly-secret`), which no built
    /// Kustomization produces, is not built: one that was not built may hold it.
    pub(crate) fn reason(&self, what: &str, namespace: &str) -> Option<String> {
        self.may_hold(namespace).map(|k| {
            format!("{what} may be an object of Kustomization {k}, which was not built: what it holds is not known")
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::{unbuilt_holder, Unseen};
    use crate::build::{KustomizationBuild, Status};
    use crate::model::{FluxKustomization, Object};

    fn ks(name: &str, target: Option<&str>) -> FluxKustomization {
        let mut value = serde_json::json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": name, "namespace": "flux-system"},
            "spec": {"path": "./x", "sourceRef": {"kind": "GitRepository", "name": "flux-system"}},
        });
        if let Some(t) = target {
            value["spec"]["targetNamespace"] = serde_json::json!(t);
        }
        FluxKustomization::from_object(Object {
            value,
            origin: None,
        })
    }

    fn built(target: Option<&str>, status: Status) -> KustomizationBuild {
        built_with(ks("a", target), status)
    }

    /// A Kustomization's build with `status`, nothing else: for the tests of what a cluster's
    /// builds tell.
    pub(crate) fn built_with(
        kustomization: FluxKustomization,
        status: Status,
    ) -> KustomizationBuild {
        KustomizationBuild {
            kustomization,
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

    #[test]
    fn an_unbuilt_kustomization_may_hold_objects_only_where_its_target_namespace_puts_them() {
        let mut unseen = Unseen::default();
        assert_eq!(unseen.may_hold("database"), None);
        unseen.add(&ks("media-app", Some("media")));
        assert_eq!(unseen.may_hold("database"), None);
        assert_eq!(unseen.may_hold("media"), Some("flux-system/media-app"));
        unseen.add(&ks("anywhere", None));
        assert_eq!(unseen.may_hold("database"), Some("flux-system/anywhere"));
        assert!(unseen
            .reason("Secret database/s", "database")
            .is_some_and(|r| r.contains("Kustomization flux-system/anywhere")));
    }

    #[test]
    fn only_an_unbuilt_kustomization_that_can_reach_the_namespace_hides_an_object() {
        let unavailable = Status::Unavailable("offline".into());
        let holder = |k: KustomizationBuild, ns: &str| unbuilt_holder(&[k], ns).is_some();
        assert!(!holder(built(None, Status::Built), "database"));
        assert!(!holder(
            built(Some("media"), unavailable.clone()),
            "database"
        ));
        assert!(holder(built(Some("media"), unavailable), "media"));
        assert!(holder(
            built(None, Status::NotBuilt("remote".into())),
            "database"
        ));
        // One that failed applies nothing in the cluster: what it would hold is missing there.
        assert!(!holder(built(None, Status::Failed), "database"));
    }
}
