//! What syncs an entry (a cluster's directory): the Kustomization `flux bootstrap` committed
//! there, a FluxInstance's sync, or the bootstrap Kustomization Flux would have for a
//! directory nothing else covers.

use crate::diagnostic::Diagnostic;
use crate::dir_build::build_dir;
use crate::model::{FluxKustomization, Object, ObjectRef, KUSTOMIZE_GROUP};
use crate::source::{self, Inference};
use crate::sync::{self, Discovery};
use crate::trees::FileSystems;
use serde_json::Value;
use std::path::Path;

/// The entry built as it stands, and the Kustomization that syncs it, with how that was
/// found when the repository does not declare it: from the entry's own objects (the one
/// `flux bootstrap` committed), a FluxInstance's sync, the `flux bootstrap` Kustomization of
/// the entry's directory that its build no longer includes (the cluster still has it: it is
/// what builds the entry), or the bootstrap Kustomization Flux would have for a directory
/// nothing else covers. `operator_sync` is the FluxInstance sync of
/// the entry, if there is one ([`Discovery::sync_for`]).
pub(crate) fn self_sync(
    root: &Path,
    entry: &str,
    operator_sync: Option<&sync::ClusterSync>,
    discovery: &Discovery,
    file_systems: &FileSystems,
) -> (
    Result<Vec<Object>, Diagnostic>,
    Option<FluxKustomization>,
    Option<Inference>,
) {
    let entry_dir = source::join(root, entry);
    let built = build_dir(file_systems, None, root, &entry_dir, None);
    let bootstrapped = built
        .as_deref()
        .unwrap_or_default()
        .iter()
        .filter(|o| o.is(KUSTOMIZE_GROUP, "Kustomization"))
        .map(|o| FluxKustomization::from_object(o.clone()))
        .filter(|k| source::clean_relative(k.path.as_deref().unwrap_or("")) == entry)
        .min_by_key(|k| k.source_ref.kind != "GitRepository");
    let declared = discovery
        .entry_kustomizations
        .iter()
        .find(|(e, _)| e == entry)
        .map(|(_, o)| FluxKustomization::from_object(o.clone()));
    let (self_sync, repository_inference) = match (bootstrapped, operator_sync) {
        (Some(ks), _) => (Some(ks), None),
        (None, Some(sync)) => (Some(sync.kustomization()), Some(sync.inference())),
        (None, None) if declared.is_some() => (declared, None),
        (None, None) if discovery.bootstrap_entries.iter().any(|e| e == entry) => {
            let name = sync::BOOTSTRAP_NAME;
            let source = ObjectRef::new("GitRepository", name, name);
            let root = sync::ClusterSync {
                source: source.clone(),
                url: None,
                path: entry.to_string(),
                root: String::new(),
                via: String::new(),
                origin: None,
                flux_version: None,
                instance: Value::Null,
            };
            let why = Inference::BootstrapEntry {
                source,
                entry: entry.to_string(),
            };
            (Some(root.kustomization()), Some(why))
        }
        (None, None) => {
            let why = discovery
                .hand_applied
                .iter()
                .find(|why| matches!(why, Inference::HandApplied { entry: e, .. } if e == entry));
            (None, why.cloned())
        }
    };
    (built, self_sync, repository_inference)
}
