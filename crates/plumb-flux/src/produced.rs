//! What the cluster holds as a build goes on: the ConfigMaps and Secrets Kustomizations apply
//! (and bootstrap before them), the Secrets controllers create at runtime from objects of the
//! build, and the Kustomizations not built yet. A Kustomization's substitution reads it.

use crate::model::{FluxKustomization, Object};
use crate::postbuild::ObjectLookup;
use crate::runtime::RuntimeSecret;
use std::collections::HashMap;

/// ConfigMaps and Secrets the cluster would hold, by kind, namespace and name, and the Secrets
/// controllers create from objects of the build.
#[derive(Default)]
pub(crate) struct Produced {
    pub(crate) objects: HashMap<(String, String, String), Object>,
    /// What bootstrap applied before Flux runs: found only where no Kustomization applies the
    /// same object, as Flux's apply replaces it in the cluster.
    pub(crate) bootstrap: HashMap<(String, String, String), Object>,
    pub(crate) runtime: Vec<RuntimeSecret>,
    /// The Kustomizations not built so far.
    pub(crate) unseen: crate::unseen::Unseen,
}

impl Produced {
    fn key(object: &Object) -> (String, String, String) {
        (
            object.kind().to_string(),
            object.namespace_or_default().to_string(),
            object.name().to_string(),
        )
    }

    /// An object a Kustomization applies: the first Kustomization's stays (two writers are
    /// OWN001's).
    pub(crate) fn add(&mut self, object: &Object) {
        self.objects
            .entry(Produced::key(object))
            .or_insert_with(|| object.clone());
    }

    /// Whether every required substituteFrom source of `ks` is produced.
    pub(crate) fn has_sources_of(&self, ks: &FluxKustomization) -> bool {
        let Some(post) = &ks.post_build else {
            return true;
        };
        post.substitute_from
            .iter()
            .filter(|r| !r.optional)
            .all(|r| self.holds(&r.kind, &ks.namespace, &r.name))
    }

    /// An object bootstrap applies before Flux runs.
    pub(crate) fn add_bootstrap(&mut self, object: &Object) {
        self.bootstrap
            .entry(Produced::key(object))
            .or_insert_with(|| object.clone());
    }
}

impl ObjectLookup for Produced {
    fn find(&self, kind: &str, namespace: &str, name: &str) -> Option<&Object> {
        let key = (kind.to_string(), namespace.to_string(), name.to_string());
        self.objects.get(&key).or_else(|| self.bootstrap.get(&key))
    }

    fn runtime_secret(&self, namespace: &str, name: &str) -> Option<&RuntimeSecret> {
        self.runtime.iter().find(|s| s.is(namespace, name))
    }
}
