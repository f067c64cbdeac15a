//! Clusters bootstrapped with `kubectl apply -k DIR`: a kustomization nothing else lists and no
//! Kustomization builds, whose build brings a GitRepository of this tree and a Kustomization
//! syncing a directory of it (microscaler/shared-gitops-k8s-cluster: `gitops/clusters/dev`
//! lists Flux's components and `root/flux/sync`, and patches the sync's path to the cluster's
//! own directory). Each such directory is a cluster entry, built as the cluster's first apply
//! builds it; the Kustomizations it sets up follow from its output.

use std::collections::{HashMap, HashSet};

use crate::model::ObjectRef;
use crate::source::Inference;
use crate::sync::is_within;

/// A Kustomization that syncs a directory of this tree from a GitRepository of it.
pub(crate) struct Syncing<'a> {
    /// The directory of its file, relative to the root.
    pub dir: &'a str,
    /// The directory it syncs.
    pub path: &'a str,
    pub source: &'a ObjectRef,
    /// The directory of the GitRepository's file.
    pub source_dir: &'a str,
    pub url: &'a str,
}

/// The kustomization directories (keys of `listing`, with the directories each lists) that
/// nothing lists (`referenced`) and no Kustomization's path holds, whose build reaches both a
/// Kustomization of `syncing` and its GitRepository: one inference each, in name order.
pub(crate) fn roots(
    listing: &HashMap<String, Vec<String>>,
    referenced: &[String],
    syncing: &[Syncing<'_>],
) -> Vec<Inference> {
    if syncing.is_empty() {
        return Vec::new();
    }
    let listed: HashSet<&str> = referenced.iter().map(String::as_str).collect();
    let mut candidates: Vec<&String> = listing
        .keys()
        .filter(|dir| !dir.is_empty() && !listed.contains(dir.as_str()))
        .filter(|dir| !syncing.iter().any(|k| is_within(dir, k.path)))
        .collect();
    candidates.sort();
    let mut out = Vec::new();
    for dir in candidates {
        let reach = reached(dir, listing);
        let found = syncing
            .iter()
            .find(|k| reach.contains(k.dir) && reach.contains(k.source_dir));
        if let Some(k) = found {
            out.push(Inference::HandApplied {
                source: k.source.clone(),
                entry: dir.clone(),
                url: k.url.to_string(),
            });
        }
    }
    out
}

/// `dir` and every directory its kustomization lists, and theirs, in turn.
fn reached<'a>(dir: &'a str, listing: &'a HashMap<String, Vec<String>>) -> HashSet<&'a str> {
    let mut seen: HashSet<&str> = HashSet::from([dir]);
    let mut next = vec![dir];
    while let Some(d) = next.pop() {
        for listed in listing.get(d).into_iter().flatten() {
            if seen.insert(listed.as_str()) {
                next.push(listed.as_str());
            }
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kustomization_that_sets_up_a_sync_of_this_tree_is_a_cluster() {
        let listing: HashMap<String, Vec<String>> = [
            (
                "gitops/clusters/dev",
                vec!["gitops/clusters/base", "gitops/root/sync"],
            ),
            ("gitops/clusters/staging", vec!["gitops/root/sync"]),
            ("gitops/clusters/base", vec![]),
            ("gitops/root/sync", vec![]),
            // Lists nothing that syncs: no cluster.
            ("gitops/deferred", vec!["gitops/clusters/base"]),
            // Inside what the sync builds: applied by Flux, not by hand.
            ("gitops/clusters/dev/control", vec!["gitops/root/sync"]),
        ]
        .into_iter()
        .map(|(d, l)| (d.to_string(), l.into_iter().map(str::to_string).collect()))
        .collect();
        let referenced: Vec<String> = listing.values().flatten().cloned().collect();
        let source = ObjectRef::new("GitRepository", "flux-system", "shared-gitops");
        let syncing = [Syncing {
            dir: "gitops/root/sync",
            path: "gitops/clusters/dev/control",
            source: &source,
            source_dir: "gitops/root/sync",
            url: "https://github.com/example/shared.git",
        }];
        let entries: Vec<String> = roots(&listing, &referenced, &syncing)
            .into_iter()
            .filter_map(|i| match i {
                Inference::HandApplied { entry, .. } => Some(entry),
                _ => None,
            })
            .collect();
        assert_eq!(entries, ["gitops/clusters/dev", "gitops/clusters/staging"]);
        assert!(roots(&listing, &referenced, &[]).is_empty());
    }
}
