//! Problems of the `dependsOn` graph of one cluster rather than of one Kustomization: a
//! dependency that no Kustomization creates waits forever, and a cycle never becomes ready.
//! A ResourceSet's `dependsOn` is part of the graph too ([`crate::resourceset::depends_on`]).

use crate::build::KustomizationBuild;
use crate::diagnostic::{Code, Diagnostic};
use crate::model::HelmRelease;
use std::collections::HashMap;

/// dependsOn problems of the whole graph: a cycle never reconciles (error); a dependency that
/// does not exist blocks the Kustomization forever (warning here, rule ORD005 in `plumb check`).
pub fn graph_diagnostics(
    kustomizations: &[KustomizationBuild],
    helm_releases: &[(HelmRelease, String)],
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let index: HashMap<String, usize> = kustomizations
        .iter()
        .enumerate()
        .map(|(i, k)| (k.key(), i))
        .collect();
    let dep_node = |k: &KustomizationBuild, j: usize| {
        k.kustomization
            .object
            .node_at(&["spec", "dependsOn"])
            .and_then(|n| n.as_sequence().and_then(|s| s.get(j)).or(Some(n)))
            .cloned()
    };
    // A Kustomization not built (its source or a remote resource not fetched) may hold what
    // no built one does: nothing can be said then ([`crate::unseen`]).
    let unseen =
        |namespace: &str| crate::unseen::unbuilt_holder(kustomizations, namespace).is_some();
    for k in kustomizations {
        for (j, dep) in k.kustomization.depends_on.iter().enumerate() {
            if !index.contains_key(&dep.key()) && !unseen(&dep.namespace) {
                out.push(
                    Diagnostic::warning(Code::DependencyMissing, format!(
                        "Kustomization {} depends on {}, which no Kustomization of this cluster creates: it will wait forever",
                        k.key(),
                        dep.key()
                    ))
                    .at(dep_node(k, j).as_ref())
                    .with_chain(&k.chain),
                );
            }
        }
    }
    // Cycles: depth-first search, each cycle reported once from its first member in tree order.
    let edges: Vec<Vec<usize>> = kustomizations
        .iter()
        .map(|k| {
            k.kustomization
                .depends_on
                .iter()
                .filter_map(|d| index.get(&d.key()).copied())
                .collect()
        })
        .collect();
    let mut state = vec![0u8; kustomizations.len()];
    let mut reported: Vec<Vec<usize>> = Vec::new();
    for start in 0..kustomizations.len() {
        let mut path = Vec::new();
        find_cycles(start, &edges, &mut state, &mut path, &mut reported);
    }
    for cycle in reported {
        let first = &kustomizations[cycle[0]];
        let next = &kustomizations[cycle[1 % cycle.len()]];
        let j = first
            .kustomization
            .depends_on
            .iter()
            .position(|d| d.key() == next.key())
            .unwrap_or(0);
        let names: Vec<String> = cycle
            .iter()
            .chain(std::iter::once(&cycle[0]))
            .map(|&i| kustomizations[i].key())
            .collect();
        out.push(
            Diagnostic::error(
                Code::DependencyCycle,
                format!(
                    "dependsOn cycle: {}: none of these Kustomizations ever becomes ready",
                    names.join(" → ")
                ),
            )
            .at(dep_node(first, j).as_ref())
            .with_chain(&first.chain),
        );
    }
    out.extend(crate::resourceset::depends_on::missing_diagnostics(
        kustomizations,
    ));
    // HelmRelease cycles are rarer; report dependencies on missing HelmReleases only.
    let releases: Vec<String> = helm_releases.iter().map(|(h, _)| h.id.key()).collect();
    for (hr, _) in helm_releases {
        for dep in &hr.depends_on {
            if dep.kind == "HelmRelease"
                && !releases.contains(&dep.key())
                && !unseen(&dep.namespace)
            {
                out.push(Diagnostic::warning(Code::DependencyMissing, format!(
                    "HelmRelease {} depends on HelmRelease {}, which no Kustomization of this cluster creates",
                    hr.id.key(),
                    dep.key()
                )));
            }
        }
    }
    out
}

fn find_cycles(
    i: usize,
    edges: &[Vec<usize>],
    state: &mut [u8],
    path: &mut Vec<usize>,
    reported: &mut Vec<Vec<usize>>,
) {
    match state[i] {
        2 => return,
        1 => {
            if let Some(pos) = path.iter().position(|&p| p == i) {
                let cycle = path[pos..].to_vec();
                let mut sorted = cycle.clone();
                sorted.sort_unstable();
                if !reported.iter().any(|c| {
                    let mut s = c.clone();
                    s.sort_unstable();
                    s == sorted
                }) {
                    reported.push(cycle);
                }
            }
            return;
        }
        _ => {}
    }
    state[i] = 1;
    path.push(i);
    for &j in &edges[i] {
        find_cycles(j, edges, state, path, reported);
    }
    path.pop();
    state[i] = 2;
}

#[cfg(test)]
mod tests {
    use super::graph_diagnostics;
    use crate::build::{KustomizationBuild, Status};
    use crate::model::{FluxKustomization, HelmRelease, Object, ObjectRef};

    fn ks(name: &str, depends_on: &[&str], status: Status) -> KustomizationBuild {
        let value = serde_json::json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": name, "namespace": "flux-system"},
            "spec": {
                "path": "./x",
                "sourceRef": {"kind": "GitRepository", "name": "flux-system"},
                "dependsOn": depends_on.iter().map(|d| serde_json::json!({"name": d})).collect::<Vec<_>>(),
            },
        });
        crate::unseen::tests::built_with(
            FluxKustomization::from_object(Object {
                value,
                origin: None,
            }),
            status,
        )
    }

    #[test]
    fn a_dependency_an_unbuilt_kustomization_may_hold_is_not_called_missing() {
        // gi8lino/k8s-gitops: minio dependsOn storage-system/backup, a release of the `infra`
        // Kustomization, which could not be built offline.
        let release = HelmRelease {
            id: ObjectRef::new("HelmRelease", "minio", "minio"),
            chart_source: None,
            chart: None,
            depends_on: vec![ObjectRef::new("HelmRelease", "storage-system", "backup")],
        };
        let releases = [(release, String::new())];
        let built = [ks("apps", &["infra-typo"], Status::Built)];
        let messages = |k: &[KustomizationBuild]| -> Vec<String> {
            graph_diagnostics(k, &releases)
                .into_iter()
                .map(|d| d.message)
                .collect()
        };
        assert_eq!(messages(&built).len(), 2, "{:?}", messages(&built));
        let unavailable = [
            built[0].clone(),
            ks("infra", &[], Status::Unavailable("offline".into())),
        ];
        assert!(
            messages(&unavailable).is_empty(),
            "{:?}",
            messages(&unavailable)
        );
    }
}
