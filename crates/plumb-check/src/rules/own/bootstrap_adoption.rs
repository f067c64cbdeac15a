use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};
use crate::rules::releases;
use plumb_flux::bootstrap::HelmfileRelease;
use plumb_flux::build::Status;
use plumb_flux::diagnostic::Code;
use plumb_flux::helm_release::{changed_fields, shown_fields, ReleaseBuild};
use plumb_flux::model::Object;
use plumb_yaml::Node;
use serde_json::Value;

/// ## What it does
/// Finds a Helm release installed at bootstrap (a helmfile release) that a Flux HelmRelease
/// then adopts (same release name and namespace) with another chart, another chart version
/// or other values: the chart versions are compared, and when both are rendered, their objects
/// (Flux's origin labels aside). When either side is not rendered (helmfile templating, a chart
/// that cannot be fetched, no helm), nothing is compared.
///
/// ## Why is this bad?
/// Adoption is meant to be a no-op: helm-controller finds the release bootstrap installed and
/// upgrades it to what the HelmRelease says. With another version or other values, the first
/// reconcile changes the cluster's core components (the CNI, the CSI, the secrets operator)
/// while everything depends on them, in the middle of the bootstrap, and what the repository
/// shows for bootstrap is not what ran.
///
/// ## Example
/// ```yaml
/// # bootstrap/helmfile.yaml
/// releases:
///   - name: cilium
///     namespace: kube-system
///     chart: cilium/cilium
///     version: 1.17.4
/// ---
/// # kubernetes/apps/kube-system/cilium/helmrelease.yaml
/// spec:
///   chart:
///     spec:
///       chart: cilium
///       version: 1.18.0
/// ```
///
/// Use instead:
/// ```yaml
/// # the same chart version and values in both; upgrade through the HelmRelease once Flux
/// # owns the release (helmfile values can read the HelmRelease's values file)
/// spec:
///   chart:
///     spec:
///       chart: cilium
///       version: 1.17.4
/// ```
pub struct BootstrapAdoption;

impl Rule for BootstrapAdoption {
    fn code(&self) -> &'static str {
        "OWN002"
    }

    fn summary(&self) -> &'static str {
        "a release installed at bootstrap is adopted by a HelmRelease with another chart or values"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        for entry in &cx.build.entries {
            // A helmfile rendered only for its CRDs installs no release to adopt.
            for (helmfile, installed) in
                releases::bootstrap_releases(entry).filter(|(h, _)| !h.crds_only)
            {
                for adopter in entry.releases.iter().filter(|r| {
                    r.release_name == installed.release_name
                        && r.release_namespace == installed.release_namespace
                }) {
                    let Some(difference) = difference(helmfile, installed, adopter) else {
                        continue;
                    };
                    let found = releases::helm_release(entry, adopter);
                    let hr = found.map(|(_, hr)| hr);
                    let (here, there, label) = match &difference {
                        Difference::Chart(_) => (
                            chart_node(hr, &["chart"]),
                            helmfile_node(helmfile, &["chart"]),
                            "installed at bootstrap from this chart",
                        ),
                        Difference::Version(_) => (
                            chart_node(hr, &["version"]),
                            helmfile_node(helmfile, &["version", "chart"]),
                            "installed at bootstrap with this version",
                        ),
                        Difference::Objects(_) => (
                            hr.and_then(|hr| {
                                hr.node_at(&["spec", "values"])
                                    .or_else(|| hr.node_at(&["spec", "valuesFrom"]))
                                    .or_else(|| hr.node_at(&["spec"]))
                            }),
                            helmfile_node(helmfile, &["values", "set", "chart"]),
                            "installed at bootstrap with these values",
                        ),
                    };
                    let helmfile_at = format!("{}:{}", helmfile.file.display(), helmfile.line);
                    let mut finding = Finding::new(
                        self.code(),
                        format!(
                            "HelmRelease {} adopts helmfile release {} ({helmfile_at}), but not as installed: {}",
                            adopter.key(),
                            installed.key(),
                            difference.describe(),
                        ),
                        "give the HelmRelease the chart, version and values of the helmfile release so that its first reconcile changes nothing; change them once Flux owns the release",
                    )
                    .at(here.and_then(|n| Location::of(n, cx.root)))
                    .related(there.and_then(|n| Location::of(n, cx.root)), label);
                    if let Some((k, _)) = found {
                        finding = finding.with_chain(&k.chain);
                    }
                    out.push(finding);
                }
            }
        }
    }
}

/// How the HelmRelease differs from what bootstrap installed.
enum Difference {
    /// The chart's name at bootstrap and in Flux.
    Chart((String, String)),
    /// The chart's version at bootstrap and in Flux.
    Version((String, String)),
    /// The objects that differ, one line each.
    Objects(Vec<String>),
}

impl Difference {
    fn describe(&self) -> String {
        match self {
            Difference::Chart((a, b)) => format!("chart {a} at bootstrap, {b} in Flux"),
            Difference::Version((a, b)) => {
                format!("chart version {a} at bootstrap, {b} in Flux")
            }
            Difference::Objects(list) => {
                format!("rendered objects differ: {}", shown(list, 5))
            }
        }
    }
}

fn shown(list: &[String], max: usize) -> String {
    let mut text = list
        .iter()
        .take(max)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if list.len() > max {
        text.push_str(&format!("; and {} more", list.len() - max));
    }
    text
}

/// What differs between the bootstrap release and its adopter, when both sides are known.
fn difference(
    helmfile: &HelmfileRelease,
    installed: &ReleaseBuild,
    adopter: &ReleaseBuild,
) -> Option<Difference> {
    let flux = adopter.chart.as_ref()?;
    if let Some(chart) = &installed.chart {
        if chart.name != flux.name {
            return Some(Difference::Chart((chart.name.clone(), flux.name.clone())));
        }
    }
    let version = installed
        .chart
        .as_ref()
        .map(|c| c.version.clone())
        .or_else(|| helmfile.version.clone().filter(|v| exact_version(v)));
    if let Some(version) = version {
        if version.trim_start_matches('v') != flux.version.trim_start_matches('v') {
            return Some(Difference::Version((version, flux.version.clone())));
        }
    }
    let comparable = |r: &ReleaseBuild| {
        r.status == Status::Built
            && !r
                .diagnostics
                .iter()
                .any(|d| d.code == Code::RenderNondeterministic)
    };
    if installed.chart.is_none() || !comparable(installed) || !comparable(adopter) {
        return None;
    }
    let objects = differing_objects(&installed.objects, &adopter.objects);
    (!objects.is_empty()).then_some(Difference::Objects(objects))
}

/// A version helm fetches as written: no range, no wildcard, no template.
fn exact_version(v: &str) -> bool {
    let v = v.trim().trim_start_matches('v');
    v.starts_with(|c: char| c.is_ascii_digit())
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'))
        && !v.split('.').any(|part| part == "x" || part == "X")
}

/// The objects of the two renders that differ, as `Kind namespace/name (fields)`, `… only at
/// bootstrap` or `… only in Flux`; helm-controller's origin labels are not compared (they are
/// the adoption's own mark).
fn differing_objects(installed: &[Object], adopter: &[Object]) -> Vec<String> {
    let bootstrap: Vec<Comparable> = installed.iter().map(Comparable::of).collect();
    let flux: Vec<Comparable> = adopter.iter().map(Comparable::of).collect();
    let mut out = Vec::new();
    for after in &flux {
        match bootstrap.iter().find(|b| b.id == after.id) {
            Some(before) if before.value == after.value => {}
            Some(before) => out.push(format!(
                "{} ({})",
                after.shown,
                shown_fields(&changed_fields(&before.value, &after.value), 3)
            )),
            None => out.push(format!("{} only in Flux", after.shown)),
        }
    }
    for before in &bootstrap {
        if !flux.iter().any(|after| after.id == before.id) {
            out.push(format!("{} only at bootstrap", before.shown));
        }
    }
    out
}

/// A rendered object as the two renders are compared.
struct Comparable {
    /// API group, kind, namespace, name.
    id: (String, String, String, String),
    /// `Kind namespace/name`.
    shown: String,
    /// The object without helm-controller's origin labels.
    value: Value,
}

impl Comparable {
    fn of(object: &Object) -> Comparable {
        let shown = match object.namespace() {
            "" => format!("{} {}", object.kind(), object.name()),
            ns => format!("{} {ns}/{}", object.kind(), object.name()),
        };
        let mut value = object.value.clone();
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            if let Some(labels) = meta.get_mut("labels").and_then(Value::as_object_mut) {
                labels.remove("helm.toolkit.fluxcd.io/name");
                labels.remove("helm.toolkit.fluxcd.io/namespace");
                if labels.is_empty() {
                    meta.remove("labels");
                }
            }
        }
        Comparable {
            id: (
                object.group().to_string(),
                object.kind().to_string(),
                object.namespace().to_string(),
                object.name().to_string(),
            ),
            shown,
            value,
        }
    }
}

/// `spec.chart.spec.FIELD` of the HelmRelease, else its `spec.chartRef`, else its `spec`.
fn chart_node<'a>(hr: Option<&'a Object>, field: &[&str]) -> Option<&'a Node> {
    let hr = hr?;
    let mut path = vec!["spec", "chart", "spec"];
    path.extend_from_slice(field);
    hr.node_at(&path)
        .or_else(|| hr.node_at(&["spec", "chartRef"]))
        .or_else(|| hr.node_at(&["spec"]))
}

/// The first of `fields` the helmfile release's entry has, else its `name:`.
fn helmfile_node<'a>(helmfile: &'a HelmfileRelease, fields: &[&str]) -> Option<&'a Node> {
    let origin = helmfile.origin.as_ref()?;
    fields
        .iter()
        .find_map(|f| origin.get(f))
        .or_else(|| origin.get("name"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_flux::bootstrap::Unplanned;
    use plumb_flux::diagnostic::Diagnostic;
    use plumb_flux::helm_release::ChartInfo;
    use serde_json::json;

    fn helmfile(version: Option<&str>) -> HelmfileRelease {
        HelmfileRelease {
            name: "cilium".into(),
            namespace: Some("kube-system".into()),
            chart: Some("cilium/cilium".into()),
            version: version.map(str::to_string),
            file: "bootstrap/helmfile.yaml".into(),
            line: 5,
            plan: Err(Unplanned::NotEvaluated("templating".into())),
            origin: None,
            crds_only: false,
        }
    }

    fn release(chart: Option<(&str, &str)>, objects: &[Value]) -> ReleaseBuild {
        ReleaseBuild {
            namespace: "kube-system".into(),
            name: "cilium".into(),
            kustomization: "flux-system/apps".into(),
            release_name: "cilium".into(),
            release_namespace: "kube-system".into(),
            chart: chart.map(|(name, version)| ChartInfo {
                name: name.into(),
                version: version.into(),
                digest: "sha256:0".into(),
                source: "HelmRepository/kube-system/cilium".into(),
            }),
            objects: objects
                .iter()
                .map(|v| Object {
                    value: v.clone(),
                    origin: None,
                })
                .collect(),
            diagnostics: Vec::new(),
            status: Status::Built,
            cached: false,
            notes: Vec::new(),
        }
    }

    fn configmap(data: Value, labels: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cilium-config", "namespace": "kube-system", "labels": labels},
            "data": data})
    }

    fn described(d: Option<Difference>) -> Option<String> {
        d.map(|d| d.describe())
    }

    #[test]
    fn another_chart_or_version_differs() {
        let installed = release(Some(("cilium", "1.17.4")), &[]);
        assert_eq!(
            described(difference(
                &helmfile(Some("1.17.4")),
                &installed,
                &release(Some(("cilium", "1.18.0")), &[])
            )),
            Some("chart version 1.17.4 at bootstrap, 1.18.0 in Flux".into())
        );
        assert_eq!(
            described(difference(
                &helmfile(None),
                &installed,
                &release(Some(("cilium-agent", "1.17.4")), &[])
            )),
            Some("chart cilium at bootstrap, cilium-agent in Flux".into())
        );
        // `v1.17.4` and `1.17.4` are one version.
        assert!(difference(
            &helmfile(None),
            &installed,
            &release(Some(("cilium", "v1.17.4")), &[])
        )
        .is_none());
    }

    #[test]
    fn the_helmfile_version_counts_when_written_exactly() {
        let not_fetched = ReleaseBuild {
            status: Status::NotBuilt("helmfile templating is not evaluated".into()),
            ..release(None, &[])
        };
        let flux = release(Some(("cilium", "1.18.0")), &[]);
        assert_eq!(
            described(difference(&helmfile(Some("1.17.4")), &not_fetched, &flux)),
            Some("chart version 1.17.4 at bootstrap, 1.18.0 in Flux".into())
        );
        for unknown in ["~1.17", ">=1.17.0", "1.17.x", "{{ .Values.v }}", "*"] {
            assert!(
                difference(&helmfile(Some(unknown)), &not_fetched, &flux).is_none(),
                "{unknown}"
            );
        }
        // The Flux side's chart not fetched: nothing known to compare.
        assert!(difference(&helmfile(Some("1.17.4")), &not_fetched, &release(None, &[])).is_none());
    }

    #[test]
    fn renders_differ_by_their_objects_not_by_flux_origin_labels() {
        let chart = Some(("cilium", "1.17.4"));
        let installed = release(
            chart,
            &[configmap(
                json!({"tunnel": "geneve"}),
                json!({"app": "cilium"}),
            )],
        );
        let origin = json!({"app": "cilium", "helm.toolkit.fluxcd.io/name": "cilium",
            "helm.toolkit.fluxcd.io/namespace": "kube-system"});
        let same = release(
            chart,
            &[configmap(json!({"tunnel": "geneve"}), origin.clone())],
        );
        assert!(difference(&helmfile(None), &installed, &same).is_none());

        let other = release(
            chart,
            &[
                configmap(json!({"tunnel": "vxlan"}), origin.clone()),
                json!({"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": "cilium", "namespace": "kube-system"}}),
            ],
        );
        assert_eq!(
            described(difference(&helmfile(None), &installed, &other)),
            Some("rendered objects differ: ConfigMap kube-system/cilium-config (data.tunnel); ServiceAccount kube-system/cilium only in Flux".into())
        );
        assert_eq!(
            described(difference(&helmfile(None), &other, &installed)),
            Some("rendered objects differ: ConfigMap kube-system/cilium-config (data.tunnel); ServiceAccount kube-system/cilium only at bootstrap".into())
        );

        // A render that differs each time, or one not rendered, is not compared.
        let mut random = other.clone();
        random.diagnostics.push(Diagnostic::warning(
            Code::RenderNondeterministic,
            "renders differently",
        ));
        assert!(difference(&helmfile(None), &installed, &random).is_none());
        let failed = ReleaseBuild {
            status: Status::Failed,
            ..other
        };
        assert!(difference(&helmfile(None), &installed, &failed).is_none());
    }
}
