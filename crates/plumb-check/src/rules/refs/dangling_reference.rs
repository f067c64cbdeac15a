use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};
use crate::rules::ord::{claimed_by, list_item};
use plumb_flux::build::{EntryBuild, KustomizationBuild};
use plumb_flux::model::{HelmRelease, Object, ObjectRef, HELM_GROUP};
use plumb_flux::unseen::unbuilt_holder;

/// ## What it does
/// Finds references of Flux objects that point at nothing: a Kustomization's `sourceRef` or
/// `spec.path`, a HelmRelease's `chart.spec.sourceRef` or `chartRef`, and non-optional
/// `valuesFrom` ConfigMaps and Secrets that no Kustomization of the cluster creates. Where a
/// Kustomization of the cluster was not built (its source or a remote resource could not be
/// fetched, its source is another repository) and could hold the object (no `targetNamespace`, or the object's
/// namespace), whether the object exists is not known, and the HelmRelease's references are
/// not reported.
///
/// ## Why is this bad?
/// The object never becomes Ready: the Kustomization reports `Source not found` or
/// `kustomization path not found`, the HelmRelease never installs, and everything that
/// `dependsOn` it waits forever. These are mostly renames that missed one reference, and the
/// cluster shows them only as a stuck condition.
///
/// ## Example
/// ```yaml
/// apiVersion: helm.toolkit.fluxcd.io/v2
/// kind: HelmRelease
/// metadata:
///   name: podinfo
///   namespace: podinfo
/// spec:
///   chartRef:
///     kind: OCIRepository
///     name: podinfo-chart   # the OCIRepository is called podinfo
///   valuesFrom:
///     - kind: ConfigMap
///       name: podinfo-values   # no Kustomization creates it
/// ```
///
/// Use instead:
/// ```yaml
/// spec:
///   chartRef:
///     kind: OCIRepository
///     name: podinfo
///   valuesFrom:
///     - kind: ConfigMap
///       name: podinfo-values
///       optional: true   # or commit the ConfigMap next to the HelmRelease
/// ```
pub struct DanglingReference;

impl Rule for DanglingReference {
    fn code(&self) -> &'static str {
        "REF001"
    }

    fn summary(&self) -> &'static str {
        "sourceRef, chartRef, valuesFrom or spec.path pointing at nothing"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        let mapped = plumb_flux::config::Config::load(cx.root)
            .map(|c| c.sources)
            .unwrap_or_default();
        for entry in &cx.build.entries {
            for k in entry.kustomizations.iter().filter(|k| !k.synthetic) {
                self.kustomization(cx, k, out);
            }
            let releases = entry
                .kustomizations
                .iter()
                .flat_map(|k| k.objects.iter().map(move |o| (k, o)))
                .filter(|(_, o)| o.is(HELM_GROUP, "HelmRelease"));
            for (k, object) in releases {
                let Some(hr) = HelmRelease::from_object(object) else {
                    continue;
                };
                if let Some(source) = &hr.chart_source {
                    let known = entry.sources.iter().any(|(s, _)| &s.id == source)
                        || entry.repository_source.as_ref() == Some(source)
                        || mapped
                            .iter()
                            .any(|m| m.matches(&source.kind, &source.namespace, &source.name))
                        || generated_helm_chart(entry, source)
                        || unbuilt_holder(&entry.kustomizations, &source.namespace).is_some();
                    if !known {
                        let field: &[&str] = if object.value["spec"].get("chartRef").is_some() {
                            &["spec", "chartRef", "name"]
                        } else {
                            &["spec", "chart", "spec", "sourceRef", "name"]
                        };
                        out.push(
                            Finding::new(
                                self.code(),
                                format!(
                                    "HelmRelease {} takes its chart from {source}, which no Kustomization of this cluster creates: it is never installed",
                                    hr.id.key()
                                ),
                                format!(
                                    "fix the name, or add the {} (sources are namespaced: set `namespace:` when it is in another one)",
                                    source.kind
                                ),
                            )
                            .at(object.node_at(field).and_then(|n| Location::of(n, cx.root)))
                            .with_chain(&k.chain),
                        );
                    }
                }
                self.values_from(cx, entry, k, object, &hr.id, out);
            }
        }
    }
}

impl DanglingReference {
    /// A missing source or path, as the build found it (not found again here).
    fn kustomization(&self, cx: &CheckContext<'_>, k: &KustomizationBuild, out: &mut Vec<Finding>) {
        for d in k
            .diagnostics
            .iter()
            .filter(|d| claimed_by(d) == Some(self.code()))
        {
            let (field, help) = if d.code == plumb_flux::diagnostic::Code::PathNotFound {
                (
                    "path",
                    "spec.path is relative to the root of the source; fix it to an existing directory",
                )
            } else {
                (
                    "sourceRef",
                    "fix the name, add the source, or map it to a directory under `sources:` in .plumb.yaml",
                )
            };
            out.push(
                Finding::new(self.code(), d.message.clone(), help)
                    .at(k
                        .kustomization
                        .object
                        .node_at(&["spec", field])
                        .and_then(|n| Location::of(n, cx.root)))
                    .with_chain(&k.chain),
            );
        }
    }

    /// `valuesFrom` ConfigMaps and Secrets that nothing creates.
    fn values_from(
        &self,
        cx: &CheckContext<'_>,
        entry: &EntryBuild,
        k: &KustomizationBuild,
        object: &Object,
        hr: &ObjectRef,
        out: &mut Vec<Finding>,
    ) {
        let Some(items) = object.value["spec"]
            .get("valuesFrom")
            .and_then(|v| v.as_array())
        else {
            return;
        };
        // One finding per missing object, however many entries take keys from it.
        let mut reported: Vec<(&str, &str)> = Vec::new();
        for (j, item) in items.iter().enumerate() {
            let kind = item.get("kind").and_then(|v| v.as_str()).unwrap_or("");
            let name = item.get("name").and_then(|v| v.as_str()).unwrap_or("");
            let optional = item.get("optional").and_then(|v| v.as_bool()) == Some(true);
            if optional
                || name.is_empty()
                || reported.contains(&(kind, name))
                || produced(entry, kind, &hr.namespace, name)
                || unbuilt_holder(&entry.kustomizations, &hr.namespace).is_some()
            {
                continue;
            }
            reported.push((kind, name));
            out.push(
                Finding::new(
                    self.code(),
                    format!(
                        "HelmRelease {} takes values from {kind} {}/{name}, which no Kustomization of this cluster creates: it is never installed",
                        hr.key(),
                        hr.namespace
                    ),
                    format!(
                        "commit the {kind} (a generated one needs `disableNameSuffixHash: true`, since its name gets a hash), fix the name, or mark the entry `optional: true`"
                    ),
                )
                .at(list_item(object, &["spec", "valuesFrom"], j, "name")
                    .and_then(|n| Location::of(n, cx.root)))
                .with_chain(&k.chain),
            );
        }
    }
}

/// Whether some Kustomization creates the ConfigMap or Secret `namespace`/`name`, directly or
/// through an object whose controller writes the Secret at runtime (an ExternalSecret, a
/// SealedSecret, a CloudNativePG Cluster's `-app` Secret: angelnu/k8s-gitops's HelmReleases
/// take their database settings from it).
fn produced(entry: &EntryBuild, kind: &str, namespace: &str, name: &str) -> bool {
    entry
        .kustomizations
        .iter()
        .flat_map(|k| k.objects.iter())
        .any(|o| {
            let direct = o.namespace_or_default() == namespace
                && o.group().is_empty()
                && o.kind() == kind
                && o.name() == name;
            let generated = kind == "Secret"
                && plumb_flux::runtime::secret_created_by(o)
                    .is_some_and(|secret| secret.is(namespace, name));
            direct || generated
        })
}

/// A `chartRef` to the HelmChart helm-controller makes for a HelmRelease's `spec.chart`
/// (`<namespace>-<name>` in the source's namespace).
fn generated_helm_chart(entry: &EntryBuild, source: &ObjectRef) -> bool {
    source.kind == "HelmChart"
        && entry.helm_releases.iter().any(|(hr, _)| {
            hr.chart.is_some() && format!("{}-{}", hr.id.namespace, hr.id.name) == source.name
        })
}
