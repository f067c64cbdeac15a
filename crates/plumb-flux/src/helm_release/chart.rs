//! Where a HelmRelease's chart comes from, as helm-controller and source-controller find it:
//! `spec.chartRef` (an OCIRepository holding a chart, a HelmChart, an ExternalArtifact) or
//! `spec.chart.spec` (a chart of a HelmRepository, or a chart directory of a GitRepository or
//! Bucket tree), fetched once per build however many releases use it, with `valuesFiles`
//! merged to replace the chart's `values.yaml`.

use super::Inputs;
use crate::diagnostic::{Code, Diagnostic};
use crate::fetch::{FetchedChart, SourceProblem, Unfetched};
use crate::model::{Object, ObjectRef, Source};
use crate::source::{self, Resolution};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A chart ready to render.
#[derive(Debug, Clone)]
pub struct Chart {
    pub fetched: FetchedChart,
    /// The source the chart came from (`OCIRepository flux-system/app-template`).
    pub source: ObjectRef,
    /// `valuesFiles` merged: the chart's `values.yaml` replaced by this.
    pub values_override: Option<Value>,
}

/// Why a release gets no chart.
#[derive(Debug, Clone)]
pub enum ChartProblem {
    /// Not an error of the repository: plumb does not fetch this.
    NotBuilt(String),
    /// It could not be fetched here (unreachable, offline and not cached).
    Unavailable(String),
    /// helm-controller would fail too.
    Failed(Diagnostic),
}

/// The chart of the HelmRelease `hr`.
pub fn chart_of(hr: &Object, inputs: &Inputs<'_>) -> Result<Chart, ChartProblem> {
    let namespace = hr.namespace_or_default();
    let spec = &hr.value["spec"];
    if let Some(chart_ref) = spec.get("chartRef").filter(|v| v.is_object()) {
        let at = hr.node_at(&["spec", "chartRef"]);
        let id = reference(chart_ref, namespace);
        return match id.kind.as_str() {
            "OCIRepository" => oci_chart(&id, inputs).map_err(|p| p.located(at)),
            "HelmChart" => {
                let Some(chart) = inputs.sources.known.get(&id) else {
                    return Err(missing(&id, "spec.chartRef", at));
                };
                let spec = chart.spec.clone();
                chart_spec(&spec, &id.namespace, inputs, Some(&id)).map_err(|p| p.located(at))
            }
            "ExternalArtifact" => artifact_chart(&id, inputs).map_err(|p| p.located(at)),
            other => Err(ChartProblem::Failed(
                Diagnostic::error(
                    Code::InvalidSpec,
                    format!("spec.chartRef kind {other:?} is not one helm-controller accepts (OCIRepository, HelmChart, ExternalArtifact)"),
                )
                .at(at),
            )),
        };
    }
    let Some(chart_spec_value) = spec["chart"].get("spec").filter(|v| v.is_object()) else {
        return Err(ChartProblem::Failed(
            Diagnostic::error(
                Code::InvalidSpec,
                "HelmRelease has neither spec.chart.spec nor spec.chartRef",
            )
            .at(hr.node_at(&["spec"])),
        ));
    };
    let at = hr.node_at(&["spec", "chart", "spec"]);
    chart_spec(chart_spec_value, namespace, inputs, None).map_err(|p| p.located(at))
}

/// A problem before it is placed at the field that names the chart.
enum Unplaced {
    NotBuilt(String),
    Unavailable(String),
    Failed(Code, String),
}

impl Unplaced {
    fn located(self, at: Option<&plumb_yaml::Node>) -> ChartProblem {
        match self {
            Unplaced::NotBuilt(why) => ChartProblem::NotBuilt(why),
            Unplaced::Unavailable(why) => ChartProblem::Unavailable(why),
            Unplaced::Failed(code, why) => {
                ChartProblem::Failed(Diagnostic::error(code, why).at(at))
            }
        }
    }
}

fn missing(id: &ObjectRef, field: &str, at: Option<&plumb_yaml::Node>) -> ChartProblem {
    ChartProblem::Failed(
        Diagnostic::error(
            Code::SourceNotFound,
            format!("{field} names {id}, which no Kustomization of this cluster creates"),
        )
        .at(at),
    )
}

fn reference(v: &Value, namespace: &str) -> ObjectRef {
    ObjectRef::new(
        v["kind"].as_str().unwrap_or(""),
        v["namespace"].as_str().unwrap_or(namespace),
        v["name"].as_str().unwrap_or(""),
    )
}

fn from_unfetched(what: &str, e: Unfetched) -> Unplaced {
    match e {
        Unfetched::Unsupported(why) => Unplaced::NotBuilt(format!("{what}: {why}")),
        Unfetched::Failed(why) => Unplaced::Unavailable(format!("{what} is unavailable: {why}")),
        Unfetched::Broken(why) => Unplaced::Failed(Code::ChartNotReady, format!("{what}: {why}")),
    }
}

fn source_object<'a>(id: &ObjectRef, inputs: &'a Inputs<'_>) -> Result<&'a Source, Unplaced> {
    inputs.sources.known.get(id).ok_or_else(|| {
        Unplaced::Failed(
            Code::SourceNotFound,
            format!("the chart's source {id} is not created by any Kustomization of this cluster"),
        )
    })
}

fn oci_chart(id: &ObjectRef, inputs: &Inputs<'_>) -> Result<Chart, Unplaced> {
    if let Resolution::Dir(dir) | Resolution::Assumed(dir, _) = inputs.sources.resolve(id) {
        return local_chart(&source::join(inputs.root, &dir), id, inputs);
    }
    let source = source_object(id, inputs)?;
    let Some(fetcher) = inputs.fetcher else {
        return Err(Unplaced::NotBuilt(format!(
            "chart source {id} is not fetched"
        )));
    };
    let secret = crate::fetch::source_secret(source, inputs.lookup, inputs.keys);
    let what = format!("chart of {id}{}", url_of(source));
    let fetched = inputs
        .charts
        .get(&format!("ref {id} {}", source.spec), || {
            fetcher.fetch_chart_ref(source, secret.as_ref())
        })
        .map_err(|e| from_unfetched(&what, e))?;
    Ok(Chart {
        fetched,
        source: id.clone(),
        values_override: None,
    })
}

fn url_of(source: &Source) -> String {
    source
        .url
        .as_deref()
        .map(|u| format!(" ({u})"))
        .unwrap_or_default()
}

fn artifact_chart(id: &ObjectRef, inputs: &Inputs<'_>) -> Result<Chart, Unplaced> {
    match inputs.sources.resolve(id) {
        Resolution::Staged(tree) => local_chart(&chart_root(&tree.dir), id, inputs),
        Resolution::Dir(dir) | Resolution::Assumed(dir, _) => {
            local_chart(&chart_root(&source::join(inputs.root, &dir)), id, inputs)
        }
        Resolution::Unstaged { reason, error, .. } => Err(if error {
            Unplaced::Failed(
                Code::SourceNotReady,
                format!("chart source {id} is not ready: {reason}"),
            )
        } else {
            Unplaced::NotBuilt(reason)
        }),
        _ => Err(Unplaced::Failed(
            Code::SourceNotFound,
            format!("spec.chartRef names {id}, which no ArtifactGenerator of this cluster stages"),
        )),
    }
}

/// An artifact holding a chart: at its root, or in its only directory.
fn chart_root(dir: &Path) -> PathBuf {
    if dir.join("Chart.yaml").is_file() {
        return dir.to_path_buf();
    }
    let dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("Chart.yaml").is_file())
        .collect();
    match dirs.as_slice() {
        [only] => only.clone(),
        _ => dir.to_path_buf(),
    }
}

/// A chart directory on disk (this repository, a fetched tree): packaged with its
/// dependencies when a fetcher can fetch them, else as it stands.
fn local_chart(dir: &Path, source: &ObjectRef, inputs: &Inputs<'_>) -> Result<Chart, Unplaced> {
    if !dir.join("Chart.yaml").is_file() {
        return Err(Unplaced::Failed(
            Code::ChartNotReady,
            format!("{source}: no chart at {} (no Chart.yaml)", dir.display()),
        ));
    }
    let fetched = match inputs.fetcher {
        Some(fetcher) => inputs
            .charts
            .get(&format!("dir {}", dir.display()), || {
                fetcher.build_chart(dir)
            })
            .map_err(|e| from_unfetched(&format!("chart {} of {source}", dir.display()), e))?,
        None => unpackaged(dir),
    };
    Ok(Chart {
        fetched,
        source: source.clone(),
        values_override: None,
    })
}

/// A chart directory taken as it stands: its name and version from Chart.yaml, its digest of
/// the files.
pub(crate) fn unpackaged(dir: &Path) -> FetchedChart {
    let text = std::fs::read_to_string(dir.join("Chart.yaml")).unwrap_or_default();
    let meta = plumb_yaml::parse_documents(dir.join("Chart.yaml"), &text)
        .ok()
        .and_then(|docs| docs.into_iter().next())
        .and_then(|d| plumb_yaml::to_json(&d).ok())
        .unwrap_or(Value::Null);
    FetchedChart {
        dir: dir.to_path_buf(),
        name: meta["name"].as_str().unwrap_or("").to_string(),
        version: crate::model::scalar_text(&meta["version"]),
        digest: format!("dir:{}", tree_digest(dir)),
    }
}

/// A digest of every file under `dir`: names and contents, in order.
pub fn tree_digest(dir: &Path) -> String {
    use sha2::{Digest, Sha256};
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut hash = Sha256::new();
    for f in files {
        let rel = f
            .strip_prefix(dir)
            .unwrap_or(&f)
            .to_string_lossy()
            .into_owned();
        hash.update(rel.len().to_le_bytes());
        hash.update(rel.as_bytes());
        let bytes = std::fs::read(&f).unwrap_or_default();
        hash.update(bytes.len().to_le_bytes());
        hash.update(&bytes);
    }
    hex::encode(hash.finalize())
}

/// `spec.chart.spec` (or a HelmChart's spec): `chart`, `version`, `sourceRef`, `valuesFiles`.
fn chart_spec(
    spec: &Value,
    namespace: &str,
    inputs: &Inputs<'_>,
    helm_chart: Option<&ObjectRef>,
) -> Result<Chart, Unplaced> {
    let chart = spec["chart"].as_str().unwrap_or("");
    let version = spec["version"].as_str().unwrap_or("");
    let source_id = reference(&spec["sourceRef"], namespace);
    let via = helm_chart
        .map(|h| format!(" (through {h})"))
        .unwrap_or_default();
    let (mut out, values_base) = match source_id.kind.as_str() {
        "HelmRepository" => {
            let source = source_object(&source_id, inputs)?;
            let Some(fetcher) = inputs.fetcher else {
                return Err(Unplaced::NotBuilt(format!(
                    "chart {chart} of {source_id} is not fetched"
                )));
            };
            let secret = crate::fetch::source_secret(source, inputs.lookup, inputs.keys);
            let what = format!("chart {chart} version {version:?} of {source_id}{}{via}", url_of(source));
            let fetched = inputs
                .charts
                .get(
                    &format!("repo {source_id} {} {chart} {version}", source.spec),
                    || fetcher.fetch_chart(source, chart, version, secret.as_ref()),
                )
                .map_err(|e| from_unfetched(&what, e))?;
            let base = fetched.dir.clone();
            (
                Chart {
                    fetched,
                    source: source_id.clone(),
                    values_override: None,
                },
                base,
            )
        }
        "GitRepository" | "Bucket" => {
            let tree = tree_of(&source_id, inputs)?;
            let path = source::clean_relative(chart);
            let dir = source::join(&tree, &path);
            if !dir.starts_with(&tree) {
                return Err(Unplaced::Failed(
                    Code::OutsideSource,
                    format!("chart path {chart:?} leads outside {source_id}"),
                ));
            }
            (local_chart(&dir, &source_id, inputs)?, tree)
        }
        other => {
            return Err(Unplaced::Failed(
                Code::InvalidSpec,
                format!("sourceRef kind {other:?} is not one a chart comes from (HelmRepository, GitRepository, Bucket)"),
            ))
        }
    };
    out.values_override = values_files(spec, &values_base)?;
    Ok(out)
}

/// The tree of a GitRepository or Bucket: this repository, a mapped directory or a fetched
/// artifact.
fn tree_of(id: &ObjectRef, inputs: &Inputs<'_>) -> Result<PathBuf, Unplaced> {
    match inputs.sources.resolve(id) {
        Resolution::Dir(dir) | Resolution::Assumed(dir, _) => Ok(source::join(inputs.root, &dir)),
        Resolution::Staged(tree) => Ok(tree.dir.clone()),
        Resolution::NotFound => Err(Unplaced::Failed(
            Code::SourceNotFound,
            format!("the chart's source {id} is not created by any Kustomization of this cluster"),
        )),
        Resolution::Unstaged { reason, .. } => Err(Unplaced::NotBuilt(reason)),
        Resolution::Unmapped { url } => {
            let source = inputs.sources.known.get(id);
            let secret =
                source.and_then(|s| crate::fetch::source_secret(s, inputs.lookup, inputs.keys));
            match crate::fetch::fetch_for(
                inputs.fetcher,
                inputs.fetched,
                id,
                source,
                url.as_deref(),
                secret.as_ref(),
                &inputs.sources.known,
            ) {
                Ok(dir) => Ok(dir),
                Err(SourceProblem::NotReady(why)) => {
                    Err(Unplaced::Failed(Code::SourceNotReady, why))
                }
                Err(SourceProblem::NotFetched(why)) => Err(Unplaced::NotBuilt(why)),
                Err(SourceProblem::Unavailable(why)) => Err(Unplaced::Unavailable(why)),
            }
        }
    }
}

/// `valuesFiles` (and the older `valuesFile`) merged in order, as source-controller packages
/// the chart: paths relative to `base` (the chart for a HelmRepository, the source's tree for
/// Git and Bucket, as its `mergeFileValues` reads them); a missing file fails unless
/// `ignoreMissingValuesFiles`.
fn values_files(spec: &Value, base: &Path) -> Result<Option<Value>, Unplaced> {
    let mut names: Vec<String> = spec["valuesFiles"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    if let Some(one) = spec["valuesFile"].as_str() {
        if !names.iter().any(|n| n == one) {
            names.insert(0, one.to_string());
        }
    }
    if names.is_empty() {
        return Ok(None);
    }
    let ignore_missing = spec["ignoreMissingValuesFiles"].as_bool() == Some(true);
    let mut files = Vec::new();
    for name in names {
        let path = source::join(base, &source::clean_relative(&name));
        if !path.starts_with(base) {
            return Err(Unplaced::Failed(
                Code::OutsideSource,
                format!("valuesFiles: {name} leads outside the chart's source"),
            ));
        }
        match std::fs::read_to_string(&path) {
            Ok(text) => files.push((name, text)),
            Err(_) if ignore_missing => continue,
            Err(e) => {
                return Err(Unplaced::Failed(
                    Code::ChartNotReady,
                    format!("valuesFiles: {name}: {e}"),
                ))
            }
        }
    }
    plumb_helm::values::merge_values_files(&files)
        .map(Some)
        .map_err(|e| Unplaced::Failed(Code::ChartNotReady, format!("valuesFiles: {e}")))
}
