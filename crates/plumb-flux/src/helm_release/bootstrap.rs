//! The helmfile releases applied at bootstrap (`helmfile sync` before Flux starts), rendered
//! with the machinery of the HelmReleases: the chart through the [`Fetcher`] (a repository of
//! `repositories:` or an `oci://` chart, as a HelmRepository built in memory, or a chart
//! directory), the values helmfile hands helm, and a real `helm template` with the release's
//! name and namespace as written.
//!
//! helmfile applies plain helm output: no post-renderers, no origin labels, the chart's CRDs
//! included. The cluster serves, at that point, the CRDs of what bootstrap applies (its
//! manifests and these releases), not yet what Flux will apply. A release whose chart or
//! values come from helmfile templating is not rendered, and says so.

use super::render_cache::RenderCache;
use super::{
    capabilities, ChartInfo, ChartOnce, LazyRenderer, Outcome, ReleaseBuild, Rendered, Renderer,
};
use crate::bootstrap::{Bootstrap, HelmfileChart, HelmfilePlan, HelmfileRelease, Unplanned};
use crate::build::Status;
use crate::diagnostic::{Code, Diagnostic};
use crate::fetch::{FetchedChart, Fetcher, Unfetched};
use crate::model::{Object, ObjectRef, Source};
use plumb_helm::helm::{CrdPolicy, Template};
use rayon::prelude::*;
use serde_json::json;
use std::collections::BTreeSet;
use std::path::Path;

/// What the bootstrap releases of one cluster read.
pub struct BootstrapInputs<'a> {
    pub root: &'a Path,
    pub fetcher: Option<&'a dyn Fetcher>,
    pub charts: &'a ChartOnce,
    /// `1.34.0`.
    pub kube_version: String,
}

/// `helmfile release ns/name (bootstrap/helmfile.yaml, chart cilium 1.18.0)`, as the YAML
/// output's group comment says it.
pub fn title(r: &ReleaseBuild) -> String {
    match &r.chart {
        Some(c) => format!(
            "helmfile release {} ({}, chart {} {})",
            r.key(),
            r.kustomization,
            c.name,
            c.version
        ),
        None => format!("helmfile release {} ({})", r.key(), r.kustomization),
    }
}

/// A release with its chart, ready to render.
struct Ready<'a> {
    release: &'a HelmfileRelease,
    plan: &'a HelmfilePlan,
    chart: FetchedChart,
    source: String,
}

/// Renders the helmfile releases of `bootstrap`, in their order. Without a renderer, each is
/// reported not rendered.
pub fn render_bootstrap(
    bootstrap: &Bootstrap,
    inputs: &BootstrapInputs<'_>,
    renderer: Option<&LazyRenderer>,
) -> Vec<ReleaseBuild> {
    if bootstrap.releases.is_empty() {
        return Vec::new();
    }
    let renderer = super::resolve(renderer, super::HELMFILE_RELEASES);
    let prepared: Vec<Result<Ready<'_>, Outcome>> = bootstrap
        .releases
        .par_iter()
        .map(|r| prepare(r, inputs, renderer.as_ref().err()))
        .collect();
    let renderer = match renderer {
        Ok(r) => r,
        Err(no_helm) => {
            return bootstrap
                .releases
                .iter()
                .zip(prepared)
                .map(|(r, p)| {
                    let why = match p {
                        Err(why) => why,
                        Ok(_) => Outcome::NotBuilt(no_helm.clone()),
                    };
                    finish(r, Err(why), inputs.root)
                })
                .collect();
        }
    };
    // What the cluster serves while bootstrap runs: the CRDs of its manifests and of these
    // charts, rendered again while their rendered CRDs add API versions.
    let mut api: BTreeSet<String> = capabilities::crd_api_versions(bootstrap.objects.iter());
    api.extend(super::charts_api_versions(
        prepared
            .iter()
            .flatten()
            .map(|ready| ready.chart.dir.as_path()),
    ));
    let ready: Vec<Option<&Ready<'_>>> = prepared.iter().map(|p| p.as_ref().ok()).collect();
    let rendered = super::render_until_stable(&ready, api, |ready, api_list| {
        render_one(ready, api_list, inputs, renderer)
    });
    let scopes = capabilities::crd_scopes(
        bootstrap
            .objects
            .iter()
            .chain(rendered.iter().flatten().flat_map(|r| r.objects.iter())),
    );
    bootstrap
        .releases
        .iter()
        .zip(prepared.into_iter().zip(rendered))
        .map(|(release, (ready, rendered))| {
            let chart = ready.as_ref().ok().map(chart_info);
            let outcome = ready.and(rendered).map(|mut r| {
                let namespace = release_namespace(release);
                r.objects = r
                    .objects
                    .into_iter()
                    .map(|o| super::with_namespace(o, &namespace, &scopes))
                    .collect();
                r
            });
            let mut out = finish(release, outcome, inputs.root);
            out.chart = chart;
            out
        })
        .collect()
}

fn release_namespace(r: &HelmfileRelease) -> String {
    r.namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".into())
}

fn chart_info(ready: &Ready<'_>) -> ChartInfo {
    ChartInfo {
        name: ready.chart.name.clone(),
        version: ready.chart.version.clone(),
        digest: ready.chart.digest.clone(),
        source: ready.source.clone(),
    }
}

/// An error at the release's entry in its helmfile.
fn failed(release: &HelmfileRelease, code: Code, message: String) -> Outcome {
    Outcome::Failed(
        Diagnostic::error(
            code,
            format!(
                "helmfile release {}/{}: {message}",
                release_namespace(release),
                release.name
            ),
        )
        .at(release.origin.as_ref()),
    )
}

/// The release's chart fetched, or why it is not rendered.
fn prepare<'a>(
    release: &'a HelmfileRelease,
    inputs: &BootstrapInputs<'_>,
    no_helm: Option<&String>,
) -> Result<Ready<'a>, Outcome> {
    let plan = match &release.plan {
        Ok(plan) => plan,
        Err(Unplanned::NotEvaluated(why)) => return Err(Outcome::NotBuilt(why.clone())),
        Err(Unplanned::Invalid(why)) => {
            return Err(failed(release, Code::InvalidSpec, why.clone()))
        }
    };
    if let Some(why) = no_helm {
        return Err(Outcome::NotBuilt(why.clone()));
    }
    // A chart directory of the repository is rendered as it stands when nothing fetches its
    // dependencies, as a HelmRelease's is.
    if let (None, HelmfileChart::Local(dir)) = (inputs.fetcher, &plan.chart) {
        let rel = dir.strip_prefix(inputs.root).unwrap_or(dir);
        if !dir.join("Chart.yaml").is_file() {
            return Err(failed(
                release,
                Code::ChartNotReady,
                format!("no chart at {} (no Chart.yaml)", rel.display()),
            ));
        }
        return Ok(Ready {
            release,
            plan,
            chart: super::chart::unpackaged(dir),
            source: rel.display().to_string(),
        });
    }
    let Some(fetcher) = inputs.fetcher else {
        return Err(Outcome::NotBuilt("charts are not fetched".into()));
    };
    let version = release.version.as_deref().unwrap_or("");
    let (key, source, fetched) = match &plan.chart {
        HelmfileChart::Repository {
            repository,
            url,
            oci,
            chart,
        } => {
            let source = repository_source(repository, url, *oci);
            let key = format!("helmfile {url} {chart} {version}");
            let fetched = inputs
                .charts
                .get(&key, || fetcher.fetch_chart(&source, chart, version, None));
            (
                format!(
                    "chart {chart} version {version:?} of helmfile repository {repository} ({url})"
                ),
                format!("helmfile repository {repository} ({url})"),
                fetched,
            )
        }
        HelmfileChart::Oci { url, chart } => {
            let source = repository_source("oci", url, true);
            let key = format!("helmfile {url} {chart} {version}");
            let fetched = inputs
                .charts
                .get(&key, || fetcher.fetch_chart(&source, chart, version, None));
            let full = format!("{url}/{chart}");
            (format!("chart {full} version {version:?}"), full, fetched)
        }
        HelmfileChart::Local(dir) => {
            let fetched = inputs.charts.get(&format!("dir {}", dir.display()), || {
                fetcher.build_chart(dir)
            });
            let rel = dir.strip_prefix(inputs.root).unwrap_or(dir);
            let shown = rel.display().to_string();
            (format!("chart directory {shown}"), shown, fetched)
        }
    };
    match fetched {
        Ok(chart) => Ok(Ready {
            release,
            plan,
            chart,
            source,
        }),
        Err(Unfetched::Unsupported(why)) => Err(Outcome::NotBuilt(format!("{key}: {why}"))),
        Err(Unfetched::Failed(why)) => {
            Err(Outcome::Unavailable(format!("{key} is unavailable: {why}")))
        }
        Err(Unfetched::Broken(why)) => Err(failed(
            release,
            Code::ChartNotReady,
            format!("{key}: {why}"),
        )),
    }
}

/// A HelmRepository as helmfile's repository entry describes it, built in memory: the
/// Fetcher fetches its charts as it fetches a Flux HelmRepository's.
fn repository_source(name: &str, url: &str, oci: bool) -> Source {
    let mut spec = json!({ "url": url });
    if oci {
        spec["type"] = json!("oci");
    }
    Source {
        id: ObjectRef::new("HelmRepository", "helmfile", name),
        url: Some(url.to_string()),
        spec,
    }
}

/// helm's output for a release: from the cache, else rendered twice and compared.
fn render_one(
    ready: &Ready<'_>,
    api_versions: &[String],
    inputs: &BootstrapInputs<'_>,
    renderer: &Renderer,
) -> Result<Rendered, Outcome> {
    let release = ready.release;
    let chart = &ready.chart;
    let namespace = release_namespace(release);
    let what = format!("chart {} {} ({})", chart.name, chart.version, ready.source);
    let values = ready.plan.values.to_string();
    let key = RenderCache::key(&[
        "plumb-helmfile-render-1",
        renderer.helm.version(),
        &chart.digest,
        &values,
        &ready.plan.set.join("\n"),
        &release.name,
        &namespace,
        &inputs.kube_version,
        &api_versions.join(","),
    ]);
    let fail =
        |e: &dyn std::fmt::Display| failed(release, Code::RenderFailed, format!("{what}: {e}"));
    let (cached, hit) = match renderer.cache.as_ref().and_then(|c| c.get(&key)) {
        Some(c) => (c, true),
        None => {
            let template = Template {
                chart_dir: &chart.dir,
                release_name: &release.name,
                namespace: &namespace,
                values: &ready.plan.values,
                set: &ready.plan.set,
                kube_version: &inputs.kube_version,
                api_versions,
                // `helmfile sync` installs with helm's defaults: CRDs and hooks.
                crds: CrdPolicy::Create,
                hooks: true,
                is_upgrade: false,
                skip_schema_validation: false,
            };
            (
                super::render_twice(renderer, &key, &template).map_err(|e| fail(&e))?,
                false,
            )
        }
    };
    // helm runs test hooks only on `helm test`, which `helmfile sync` does not.
    let (objects, changed) = super::read_render(&cached, false)
        .map_err(|e| fail(&format!("renders invalid YAML: {e}")))?;
    let mut diagnostics = Vec::new();
    if !changed.is_empty() {
        diagnostics.push(
            Diagnostic::warning(
                Code::RenderNondeterministic,
                format!(
                    "helmfile release {}/{}: {what} renders differently each time with the same values ({})",
                    namespace,
                    release.name,
                    changed.join(", ")
                ),
            )
            .at(release.origin.as_ref())
            .with_help("values that generate certificates, passwords or timestamps at render time: set them in values, or generate them outside the chart"),
        );
    }
    Ok(Rendered {
        objects: objects
            .into_iter()
            .map(|r| Object {
                value: r.value,
                origin: None,
            })
            .collect(),
        diagnostics,
        notes: cached.notes.clone(),
        cached: hit,
    })
}

/// The release as the build reports it: `kustomization` is its helmfile.
fn finish(
    release: &HelmfileRelease,
    outcome: Result<Rendered, Outcome>,
    root: &Path,
) -> ReleaseBuild {
    let namespace = release_namespace(release);
    let mut out = ReleaseBuild {
        namespace: namespace.clone(),
        name: release.name.clone(),
        kustomization: release.file.display().to_string(),
        release_name: release.name.clone(),
        release_namespace: namespace,
        chart: None,
        objects: Vec::new(),
        diagnostics: Vec::new(),
        status: Status::Built,
        cached: false,
        notes: Vec::new(),
    };
    match outcome {
        Ok(r) => {
            out.objects = r.objects;
            out.diagnostics = r.diagnostics;
            out.notes = r.notes;
            out.cached = r.cached;
            if out.diagnostics.iter().any(Diagnostic::is_error) {
                out.status = Status::Failed;
            }
        }
        Err(Outcome::NotBuilt(why)) => out.status = Status::NotBuilt(why),
        Err(Outcome::Unavailable(why)) => out.status = Status::Unavailable(why),
        Err(Outcome::Failed(d)) => {
            out.diagnostics.push(d);
            out.status = Status::Failed;
        }
    }
    out.diagnostics = out
        .diagnostics
        .into_iter()
        .map(|d| d.relative_to(root))
        .collect();
    out
}

/// The objects of the rendered bootstrap releases: what the cluster has, with the bootstrap
/// manifests, before Flux.
pub fn rendered_objects(releases: &[ReleaseBuild]) -> impl Iterator<Item = &Object> {
    releases
        .iter()
        .filter(|r| r.status == Status::Built)
        .flat_map(|r| r.objects.iter())
}

/// What exists before Flux: the bootstrap manifests' objects and those its rendered helmfile
/// releases add.
pub fn before_flux(bootstrap: &Bootstrap, releases: &[ReleaseBuild]) -> Vec<Object> {
    bootstrap
        .objects
        .iter()
        .chain(rendered_objects(releases))
        .cloned()
        .collect()
}
