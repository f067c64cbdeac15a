//! PIN002: charts and OCI artifacts by a floating tag or a semver range.

use super::version::is_exact_version;
use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};
use plumb_flux::model::{Object, HELM_GROUP, SOURCE_GROUP};
use std::collections::HashSet;

/// ## What it does
/// Finds chart and OCI sources that follow a moving target instead of naming an exact version
/// or a digest:
///
/// - an `OCIRepository` whose `spec.ref` is a tag that is not an exact version (`latest`,
///   `v1`, `1.17`), a `semver` range (`>=1.0.0`, `1.x`, `*`), or missing (Flux then pulls
///   `latest`); `spec.ref.digest` is always fine;
/// - a `HelmRelease` whose `spec.chart.spec` takes its chart from a `HelmRepository` with a
///   `version` range or no `version` at all (Flux then installs the newest chart, `*`);
/// - a `HelmChart` from a `HelmRepository`, likewise.
///
/// ## Why is this bad?
/// A range or a floating tag upgrades the cluster when somebody else publishes, not when this
/// repository changes. The commit that "broke production" is then nowhere in Git, a rollback
/// of the repository does not roll the chart back, and dev and prod run different charts from
/// the same commit depending on when each last reconciled.
///
/// ## Example
/// ```yaml
/// apiVersion: helm.toolkit.fluxcd.io/v2
/// kind: HelmRelease
/// spec:
///   chart:
///     spec:
///       chart: cert-manager
///       version: ">=1.0.0"
///       sourceRef:
///         kind: HelmRepository
///         name: jetstack
/// ```
///
/// Use instead:
/// ```yaml
///       version: 1.17.2
/// ```
///
/// For an `OCIRepository`, `ref: {tag: 1.17.2}` or, better, `ref: {digest: "sha256:..."}`.
/// Let a bot (Renovate, Flux image automation) propose the upgrades as commits.
pub struct FloatingChartVersion;

impl Rule for FloatingChartVersion {
    fn code(&self) -> &'static str {
        "PIN002"
    }

    fn summary(&self) -> &'static str {
        "a chart/OCI source by a floating tag or semver range instead of an exact version or digest"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        let mut seen = HashSet::new();
        for entry in &cx.build.entries {
            for k in &entry.kustomizations {
                for object in &k.objects {
                    let Some(problem) = problem(object) else {
                        continue;
                    };
                    let location = object
                        .node_at(&problem.path)
                        .and_then(|n| Location::of(n, cx.root))
                        .or_else(|| {
                            crate::rules::generated::location(entry, object, &problem.path, cx.root)
                        });
                    if !seen.insert((location.clone(), problem.message.clone())) {
                        continue;
                    }
                    out.push(
                        Finding::new("PIN002", problem.message, problem.help)
                            .at(location)
                            .with_chain(&k.chain),
                    );
                }
            }
        }
    }
}

struct Problem {
    message: String,
    help: String,
    /// Where to point: the field at fault, or the one that should have had it.
    path: Vec<&'static str>,
}

fn problem(object: &Object) -> Option<Problem> {
    let id = object.display_id();
    if object.is(SOURCE_GROUP, "OCIRepository") {
        let text = |field: &str| {
            object
                .str_at(&["spec", "ref", field])
                .map(str::trim)
                .filter(|s| !s.is_empty())
        };
        if text("digest").is_some() {
            return None;
        }
        let url = object.str_at(&["spec", "url"]).unwrap_or("the artifact");
        let help = format!("pin an exact version (`ref: {{tag: 1.2.3}}`) or, better, the digest (`ref: {{digest: \"sha256:...\"}}`; `flux pull artifact {url}` or `crane digest` prints it)");
        if let Some(range) = text("semver") {
            return (!is_exact_version(range)).then(|| Problem {
                message: format!("{id} follows the semver range `{range}`: it upgrades whenever a matching version is published"),
                help,
                path: vec!["spec", "ref", "semver"],
            });
        }
        if let Some(tag) = text("tag") {
            return (!is_exact_version(tag)).then(|| Problem {
                message: format!("{id} pulls the floating tag `{tag}`: it changes whenever the publisher moves it"),
                help,
                path: vec!["spec", "ref", "tag"],
            });
        }
        return Some(Problem {
            message: format!("{id} has no `spec.ref`: Flux pulls the `latest` tag, whatever it is at each reconciliation"),
            help,
            path: vec!["spec", "url"],
        });
    }
    if object.is(HELM_GROUP, "HelmRelease") {
        let chart = object.value.pointer("/spec/chart/spec")?;
        return chart_version(
            &id,
            chart,
            &["spec", "chart", "spec", "version"],
            &["spec", "chart", "spec", "chart"],
        );
    }
    if object.is(SOURCE_GROUP, "HelmChart") {
        let spec = object.value.get("spec")?;
        return chart_version(&id, spec, &["spec", "version"], &["spec", "chart"]);
    }
    None
}

/// A chart spec's `version`, when the chart comes from a Helm repository (a chart from a
/// GitRepository or Bucket is read from a path and has no version to pin).
fn chart_version(
    id: &str,
    spec: &serde_json::Value,
    version_path: &[&'static str],
    chart_path: &[&'static str],
) -> Option<Problem> {
    let source_kind = spec.pointer("/sourceRef/kind").and_then(|k| k.as_str());
    if source_kind != Some("HelmRepository") {
        return None;
    }
    let chart = spec
        .get("chart")
        .and_then(|c| c.as_str())
        .unwrap_or("the chart");
    let help = format!("set `version` to the exact chart version (`helm search repo {chart} --versions` lists them)");
    match spec.get("version").map(plumb_flux::model::scalar_text) {
        Some(v) if is_exact_version(&v) => None,
        Some(v) if !v.trim().is_empty() && v.trim() != "*" => Some(Problem {
            message: format!("{id} installs `{chart}` by the version range `{v}`: it upgrades whenever a matching chart is published"),
            help,
            path: version_path.to_vec(),
        }),
        Some(v) if !v.trim().is_empty() => Some(Problem {
            message: format!("{id} installs `{chart}` at version `{v}`: the newest chart, whatever it is at each reconciliation"),
            help,
            path: version_path.to_vec(),
        }),
        _ => Some(Problem {
            message: format!("{id} installs `{chart}` without a `version`: Flux takes `*`, the newest chart at each reconciliation"),
            help,
            path: chart_path.to_vec(),
        }),
    }
}
