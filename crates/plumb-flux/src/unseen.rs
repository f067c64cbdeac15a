//! What the build of a cluster did not see: Kustomizations that were not built (their source
//! or a remote resource could not be fetched, their source is another repository; one that
//! failed applies nothing in the cluster either, so what it would hold is missing there too). Their objects are unknown, so a ConfigMap, Secret or source that no built
//! Kustomization produces may still be theirs: a Kustomization that needs one is then not
//! built either, for that reason, rather than failed for a mistake that may not be there.

use crate::model::FluxKustomization;

/// The Kustomizations not built so far, each with the namespace every namespaced object of it
/// is in (`targetNamespace`), if it sets one.
#[derive(Debug, Default)]
pub(crate) struct Unseen {
    kustomizations: Vec<(String, Option<String>)>,
}

impl Unseen {
    pub(crate) fn add(&mut self, ks: &FluxKustomization) {
        let target = ks.target_namespace.clone().filter(|t| !t.is_empty());
        self.kustomizations.push((ks.key(), target));
    }

    /// The first Kustomization not built that could hold a namespaced object in `namespace`.
    pub(crate) fn may_hold(&self, namespace: &str) -> Option<&str> {
        self.kustomizations
            .iter()
            .find(|(_, target)| target.as_deref().is_none_or(|t| t == namespace))
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
mod tests {
    use super::Unseen;
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
}
