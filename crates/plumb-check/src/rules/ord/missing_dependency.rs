use super::list_item;
use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};
use plumb_flux::model::{HelmRelease, HELM_GROUP};
use plumb_flux::unseen::unbuilt_holder;

/// ## What it does
/// Finds `dependsOn` entries of Flux Kustomizations and HelmReleases that name an object no
/// Kustomization of the cluster creates, and those of flux-operator's ResourceSets that name a
/// Kustomization, HelmRelease or ResourceSet nothing of the cluster creates. Where a
/// Kustomization of the cluster was not built (its source or a remote resource could not be
/// fetched, its source is another repository) and could hold the dependency (no `targetNamespace`, or the
/// dependency's namespace), whether it exists is not known, and nothing is reported.
///
/// ## Why is this bad?
/// Flux waits for every dependency to be Ready before it reconciles the dependent. A
/// dependency that does not exist never becomes Ready: the Kustomization or HelmRelease, and
/// everything that depends on it in turn, is never applied, and the only sign is a
/// `dependency 'flux-system/apps-wave-3' not found` condition on the cluster.
///
/// ## Example
/// ```yaml
/// apiVersion: kustomize.toolkit.fluxcd.io/v1
/// kind: Kustomization
/// metadata:
///   name: apps-wave-2
///   namespace: flux-system
/// spec:
///   dependsOn:
///     - name: apps-wave-3   # there is no wave 3
/// ```
///
/// Use instead:
/// ```yaml
/// apiVersion: kustomize.toolkit.fluxcd.io/v1
/// kind: Kustomization
/// metadata:
///   name: apps-wave-2
///   namespace: flux-system
/// spec:
///   dependsOn:
///     - name: apps-wave-1
/// ```
pub struct MissingDependency;

impl Rule for MissingDependency {
    fn code(&self) -> &'static str {
        "ORD005"
    }

    fn summary(&self) -> &'static str {
        "dependsOn names a Kustomization, HelmRelease or ResourceSet that does not exist"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        for entry in &cx.build.entries {
            let kustomizations: Vec<String> =
                entry.kustomizations.iter().map(|k| k.key()).collect();
            for k in entry.kustomizations.iter().filter(|k| !k.synthetic) {
                let ks = &k.kustomization;
                for (j, dep) in ks.depends_on.iter().enumerate() {
                    if kustomizations.contains(&dep.key())
                        || unbuilt_holder(&entry.kustomizations, &dep.namespace).is_some()
                    {
                        continue;
                    }
                    out.push(
                        Finding::new(
                            self.code(),
                            format!(
                                "Kustomization {} dependsOn Kustomization {}, which no Kustomization of this cluster creates: it waits forever and is never applied",
                                ks.key(),
                                dep.key()
                            ),
                            fix(&dep.namespace, &dep.name, &kustomizations, &ks.key()),
                        )
                        .at(list_item(&ks.object, &["spec", "dependsOn"], j, "name")
                            .and_then(|n| Location::of(n, cx.root)))
                        .with_chain(&k.chain),
                    );
                }
            }
            for m in plumb_flux::resourceset::depends_on::missing(&entry.kustomizations) {
                out.push(
                    Finding::new(
                        self.code(),
                        format!(
                            "ResourceSet {}/{} dependsOn {}, which nothing of this cluster creates: the operator waits for it forever and applies none of the ResourceSet's objects",
                            m.rset.namespace_or_default(),
                            m.rset.name(),
                            m.dependency.describe()
                        ),
                        "remove the entry, or add the object it names (its `namespace:` must be the object's own)".to_string(),
                    )
                    .at(list_item(m.rset, &["spec", "dependsOn"], m.index, "name")
                        .and_then(|n| Location::of(n, cx.root)))
                    .with_chain(m.chain),
                );
            }
            let releases: Vec<(&plumb_flux::build::KustomizationBuild, &_, HelmRelease)> = entry
                .kustomizations
                .iter()
                .flat_map(|k| k.objects.iter().map(move |o| (k, o)))
                .filter(|(_, o)| o.is(HELM_GROUP, "HelmRelease"))
                .filter_map(|(k, o)| HelmRelease::from_object(o).map(|hr| (k, o, hr)))
                .collect();
            let release_keys: Vec<String> = releases.iter().map(|(_, _, hr)| hr.id.key()).collect();
            for (k, object, hr) in &releases {
                for (j, dep) in hr.depends_on.iter().enumerate() {
                    let known = match dep.kind.as_str() {
                        "HelmRelease" => &release_keys,
                        _ => &kustomizations,
                    };
                    if known.contains(&dep.key())
                        || unbuilt_holder(&entry.kustomizations, &dep.namespace).is_some()
                    {
                        continue;
                    }
                    out.push(
                        Finding::new(
                            self.code(),
                            format!(
                                "HelmRelease {} dependsOn {} {}, which no Kustomization of this cluster creates: it waits forever and is never installed",
                                hr.id.key(),
                                dep.kind,
                                dep.key()
                            ),
                            fix(&dep.namespace, &dep.name, known, &hr.id.key()),
                        )
                        .at(list_item(object, &["spec", "dependsOn"], j, "name")
                            .and_then(|n| Location::of(n, cx.root)))
                        .with_chain(&k.chain),
                    );
                }
            }
        }
    }
}

/// The help line: the closest existing name in the same namespace (other than the dependent
/// itself), when one is close.
fn fix(namespace: &str, name: &str, existing: &[String], dependent: &str) -> String {
    let prefix = format!("{namespace}/");
    let names: Vec<&str> = existing
        .iter()
        .filter(|k| *k != dependent)
        .filter_map(|k| k.strip_prefix(&prefix))
        .collect();
    match plumb_kustomize::kustomization::closest(name, &names) {
        Some(c) => format!("did you mean `{c}`? Otherwise remove the entry, or add what it names"),
        None => "remove the entry, or add the object it names (set `namespace:` when it is in another namespace)".into(),
    }
}
