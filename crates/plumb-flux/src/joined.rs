//! Entries that are one cluster. A repository moving from `flux bootstrap` to flux-operator
//! keeps both roots for a while: the bootstrap Kustomization `flux-system/cluster` (path
//! `kubernetes/flux`) applies `kubernetes/flux/cluster`, the directory the flux-instance chart's
//! sync names as well. Discovery finds two entries; built apart, the sync's entry lacks what only
//! the bootstrap tree defines (HelmRepositories, a GitRepository of another name), and each
//! HelmRelease or Kustomization there that uses them reads as never installed or failed.
//!
//! An entry whose root is a FluxInstance sync is part of another entry's cluster when it lies
//! inside that entry's directory and a Kustomization of that cluster (applying to the cluster
//! itself: no `kubeConfig`) applies every object the sync's root applies, from the same files.
//! Its Kustomizations are then that cluster's already, and it is not built as a cluster of its
//! own; a note says so. Entries the user names (`--entry`, `clusters:`) are never joined.

use crate::build::EntryBuild;
use crate::config::SourceMapping;
use crate::model::Object;
use crate::source::Inference;
use crate::sync::Discovery;

/// `entries` with each entry that is part of another's cluster left out, and a note of it in
/// that cluster's assumptions.
pub(crate) fn join_nested_syncs(
    mut entries: Vec<EntryBuild>,
    discovery: &Discovery,
    mappings: &[SourceMapping],
) -> Vec<EntryBuild> {
    // (the entry joined, the entry it joins, the note)
    let mut joins: Vec<(usize, usize, Inference)> = Vec::new();
    for (j, nested) in entries.iter().enumerate() {
        let Some(sync) = discovery.sync_for(&nested.entry, mappings) else {
            continue;
        };
        let Some(root) = nested.kustomizations.first() else {
            continue;
        };
        if root.synthetic || root.objects.is_empty() || root.key() != sync.kustomization().key() {
            continue;
        }
        let applier = entries.iter().enumerate().find_map(|(i, outer)| {
            let inside = i != j
                && outer.entry != nested.entry
                && crate::sync::is_within(&nested.entry, &outer.entry);
            if !inside {
                return None;
            }
            outer
                .kustomizations
                .iter()
                .find(|k| {
                    !k.synthetic
                        && k.kustomization.object.value["spec"]
                            .get("kubeConfig")
                            .is_none()
                        && root
                            .objects
                            .iter()
                            .all(|o| k.objects.iter().any(|p| same_object(o, p)))
                })
                .map(|k| (i, k.key()))
        });
        if let Some((i, by)) = applier {
            let why = Inference::JoinedEntry {
                source: sync.source.clone(),
                entry: nested.entry.clone(),
                into: entries[i].entry.clone(),
                kustomization: by,
                via: sync.via.clone(),
            };
            joins.push((j, i, why));
        }
    }
    // An entry that joins another keeps no entries joined to it: they join nothing.
    let joined: Vec<usize> = joins.iter().map(|(j, _, _)| *j).collect();
    for (_, i, why) in joins.iter().filter(|(_, i, _)| !joined.contains(i)) {
        if !entries[*i].assumptions.contains(why) {
            entries[*i].assumptions.push(why.clone());
        }
    }
    let kept = |i: usize| {
        !joins
            .iter()
            .any(|(j, into, _)| *j == i && !joined.contains(into))
    };
    entries
        .into_iter()
        .enumerate()
        .filter(|(i, _)| kept(*i))
        .map(|(_, e)| e)
        .collect()
}

/// The same object from the same file: one Kustomization's build of a file another builds.
fn same_object(a: &Object, b: &Object) -> bool {
    a.kind() == b.kind()
        && a.name() == b.name()
        && a.namespace_or_default() == b.namespace_or_default()
        && origin_file(a) == origin_file(b)
}

fn origin_file(o: &Object) -> Option<&std::path::Path> {
    o.origin
        .as_ref()
        .and_then(|n| n.span.as_ref())
        .map(|s| s.file.path())
}
