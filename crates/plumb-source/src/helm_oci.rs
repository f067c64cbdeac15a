//! Charts from OCI registries: a HelmRepository of `type: oci` (the chart at
//! `<spec.url>/<chart>`, its version chosen among the tags as source-controller's
//! `OCIChartRepository` chooses it) and an OCIRepository that a HelmRelease's `spec.chartRef`
//! names (the Helm chart layer of its artifact).
//!
//! Both go through the OCIRepository fetch ([`Cache::fetch_oci`]): the manifest and the chart
//! layer (`application/vnd.cncf.helm.chart.content.v1.tar+gzip`) are checked against their
//! digests and the layer is extracted into `oci/` of the cache. A version range's resolution
//! (the tag it chose) is recorded beside that repository's other records, so offline builds
//! reuse it.

use std::fs;
use std::io::Write;
use std::path::Path;

use semver::Version;

use crate::error::OciError;
use crate::helm::{ChartArtifact, ChartError};
use crate::oci::{LayerOperation, LayerSelector, OciRef, OciSource, HELM_CHART_LAYER};
use crate::semver_range::Range;
use crate::{Cache, Credentials, Mode};

/// A chart of a HelmRepository of `type: oci`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OciChartSource {
    /// The HelmRepository's `spec.url`: `oci://host[:port]/path`.
    pub repo_url: String,
    /// The chart's name: its repository is `<repo_url>/<chart>`.
    pub chart: String,
    /// An exact version or a semver range; empty or `*` is the latest stable version.
    pub version: String,
    /// `spec.insecure`: plain HTTP is allowed for any registry.
    pub insecure: bool,
    /// The `username` and `password` of `spec.secretRef`.
    pub credentials: Option<Credentials>,
    /// The `.dockerconfigjson` of `spec.secretRef`, when it is a registry Secret.
    pub docker_config_json: Option<String>,
}

impl OciChartSource {
    /// `oci://host/path/<chart>`.
    pub fn chart_url(&self) -> String {
        format!("{}/{}", self.repo_url.trim_end_matches('/'), self.chart)
    }

    fn oci(&self, reference: OciRef) -> OciSource {
        OciSource {
            url: self.chart_url(),
            reference,
            layer_selector: LayerSelector {
                media_type: Some(HELM_CHART_LAYER.to_owned()),
                operation: LayerOperation::Extract,
            },
            insecure: self.insecure,
            ignore: None,
            docker_config_json: self.docker_config_json.clone(),
            credentials: self.credentials.clone(),
        }
    }

    fn wrap(&self, version: &str) -> impl Fn(OciError) -> ChartError + '_ {
        let version = version.to_owned();
        move |e| ChartError::Oci {
            repo_url: self.repo_url.clone(),
            chart: self.chart.clone(),
            version: version.clone(),
            source: Box::new(e),
        }
    }
}

/// Whether `text` is one version as fluxcd/pkg's `version.ParseVersion` reads it (three
/// dot-separated parts, Masterminds' looser parsing: a `v` prefix, leading zeros): then
/// source-controller pulls that tag without listing any.
fn is_version(text: &str) -> bool {
    let core = text.strip_prefix('v').unwrap_or(text);
    let core = core
        .split_once('+')
        .map_or(core, |(c, build)| if build.is_empty() { "" } else { c });
    let (core, pre) = core.split_once('-').unwrap_or((core, "x"));
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && !pre.is_empty()
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// A version as Helm's registry client lists tags: strict semver (no `v`), `_` read as `+`.
fn listed_version(tag: &str) -> Option<Version> {
    Version::parse(&tag.replace('_', "+")).ok()
}

impl Cache {
    /// Fetches a chart of a HelmRepository of `type: oci`, as source-controller does: a
    /// version that parses as one is the tag itself (`+` written `_`, as Helm pushes it);
    /// otherwise the tags are listed and a tag equal to the text wins, else the highest
    /// version in the range (`*` or empty: the highest stable one). An exact version already
    /// in the cache is used without a request; offline, a range uses its last resolution.
    pub fn fetch_oci_chart(
        &self,
        source: &OciChartSource,
        mode: Mode,
    ) -> Result<ChartArtifact, ChartError> {
        let wanted = source.version.trim();
        if is_version(wanted) {
            let oci = source.oci(OciRef::tag(wanted.replace('+', "_")));
            let artifact = match self.fetch_oci(&oci, Mode::Offline) {
                Ok(artifact) => artifact,
                Err(_) if mode == Mode::Online => self
                    .fetch_oci(&oci, Mode::Online)
                    .map_err(source.wrap(wanted))?,
                Err(e) => return Err(source.wrap(wanted)(e)),
            };
            return chart_of(&artifact, &oci);
        }
        let probe = source.oci(OciRef::default());
        let record =
            probe
                .refs_dir(self)
                .map_err(source.wrap(wanted))?
                .join(crate::cache::sha256_hex(&format!(
                    "helm-chart-version\0{wanted}"
                )));
        let tag = match mode {
            Mode::Offline => {
                let tag = fs::read_to_string(&record)
                    .ok()
                    .map(|t| t.trim().to_owned())
                    .filter(|t| !t.is_empty());
                tag.ok_or_else(|| ChartError::NotCached {
                    repo_url: source.repo_url.clone(),
                    chart: source.chart.clone(),
                    version: source.version.clone(),
                    cache: self.dir().to_owned(),
                })?
            }
            Mode::Online => {
                let tags = probe.list_tags(self).map_err(source.wrap(wanted))?;
                let tag = choose_tag(source, &tags)?;
                self.record_chart_tag(&record, &tag)
                    .map_err(|e| ChartError::CacheNotWritable {
                        repo_url: source.repo_url.clone(),
                        chart: source.chart.clone(),
                        dir: self.dir().to_owned(),
                        source: e,
                    })?;
                tag
            }
        };
        let oci = source.oci(OciRef::tag(tag.clone()));
        let version = tag.replace('_', "+");
        let artifact = self.fetch_oci(&oci, mode).map_err(source.wrap(&version))?;
        chart_of(&artifact, &oci)
    }

    /// Fetches the Helm chart an OCIRepository holds (a HelmRelease's `spec.chartRef`): its
    /// `layerSelector` must select the Helm chart layer (either operation: the chart is
    /// extracted either way) or be absent (the first layer). `spec.ignore` does not apply to a
    /// chart.
    pub fn fetch_chart_ref(
        &self,
        source: &OciSource,
        mode: Mode,
    ) -> Result<ChartArtifact, ChartError> {
        if let Some(media_type) = &source.layer_selector.media_type {
            if media_type != HELM_CHART_LAYER {
                return Err(ChartError::NotAChart {
                    url: source.url.clone(),
                    message: format!(
                        "spec.layerSelector.mediaType is {media_type:?}, not {HELM_CHART_LAYER:?}"
                    ),
                });
            }
        }
        let oci = OciSource {
            layer_selector: LayerSelector {
                media_type: source.layer_selector.media_type.clone(),
                operation: LayerOperation::Extract,
            },
            ignore: None,
            ..source.clone()
        };
        let artifact = self
            .fetch_oci(&oci, mode)
            .map_err(|e| ChartError::OciRepository(Box::new(e)))?;
        chart_of(&artifact, &oci)
    }

    fn record_chart_tag(&self, record: &Path, tag: &str) -> std::io::Result<()> {
        let tmp = self.dir().join(crate::manage::TMP_DIR);
        fs::create_dir_all(&tmp)?;
        if let Some(parent) = record.parent() {
            fs::create_dir_all(parent)?;
        }
        let mut file = tempfile::NamedTempFile::new_in(&tmp)?;
        file.write_all(format!("{tag}\n").as_bytes())?;
        file.persist(record).map_err(|e| e.error)?;
        Ok(())
    }
}

/// The tag source-controller's `getLastMatchingVersionOrConstraint` picks among the versions
/// Helm's registry client lists.
fn choose_tag(source: &OciChartSource, tags: &[String]) -> Result<String, ChartError> {
    let wanted = source.version.trim();
    let listed: Vec<(Version, &String)> = tags
        .iter()
        .filter_map(|t| listed_version(t).map(|v| (v, t)))
        .collect();
    if !wanted.is_empty() {
        if let Some((_, tag)) = listed.iter().find(|(v, _)| v.to_string() == wanted) {
            return Ok((*tag).clone());
        }
    }
    let range_text = if wanted.is_empty() { "*" } else { wanted };
    let range = Range::parse(range_text).map_err(|reason| ChartError::InvalidVersion {
        repo_url: source.repo_url.clone(),
        chart: source.chart.clone(),
        version: source.version.clone(),
        reason,
    })?;
    listed
        .iter()
        .filter(|(v, _)| range.matches(v))
        .max_by(|(a, ta), (b, tb)| a.cmp_precedence(b).then_with(|| ta.cmp(tb)))
        .map(|(_, t)| (*t).clone())
        .ok_or_else(|| ChartError::NoVersion {
            repo_url: source.repo_url.clone(),
            chart: source.chart.clone(),
            version: source.version.clone(),
            available: listed.iter().map(|(v, _)| v.to_string()).collect(),
        })
}

/// The chart directory of an extracted chart layer: `<chart>/` holding `Chart.yaml`, its name and version from `Chart.yaml`,
/// its digest the layer's (the chart `.tgz` as pushed).
fn chart_of(artifact: &crate::OciArtifact, oci: &OciSource) -> Result<ChartArtifact, ChartError> {
    let not_a_chart = |message: String| ChartError::NotAChart {
        url: oci.url.clone(),
        message,
    };
    // A chart archive holds one top-level directory, the chart's (named as the chart, but
    // Helm reads the name from Chart.yaml, not from the directory).
    let mut charts: Vec<_> = fs::read_dir(&artifact.dir)
        .map_err(|e| not_a_chart(e.to_string()))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.join("Chart.yaml").is_file())
        .collect();
    let dir = match charts.len() {
        1 => charts.remove(0),
        0 => return Err(not_a_chart("no <chart>/Chart.yaml in its layer".into())),
        _ => {
            return Err(not_a_chart(
                "more than one top-level chart directory in its layer".into(),
            ))
        }
    };
    let metadata = crate::chart_build::ChartMetadata::read(&dir)
        .map_err(|e| not_a_chart(format!("{}: {e}", dir.join("Chart.yaml").display())))?;
    Ok(ChartArtifact {
        dir,
        name: metadata.name,
        version: metadata.version,
        digest: artifact
            .layer
            .clone()
            .unwrap_or_else(|| artifact.digest.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helm_tags_read_underscore_as_plus_and_need_strict_semver() {
        assert_eq!(
            listed_version("1.0.0_build.1"),
            Some(Version::parse("1.0.0+build.1").unwrap())
        );
        assert_eq!(listed_version("v1.0.0"), None);
        assert_eq!(listed_version("latest"), None);
    }

    #[test]
    fn versions_as_fluxcd_parse_version_reads_them() {
        for exact in [
            "1.2.3",
            "v1.2.3",
            "2025.02.03",
            "1.0.0-rc.1",
            "1.0.0+build.5",
        ] {
            assert!(is_version(exact), "{exact}");
        }
        for range in [
            "1.2",
            "*",
            "",
            ">=1.0.0",
            "1.x.0",
            "1.2.3 - 1.4.0",
            "~1.2.3",
            "1.0.0-",
        ] {
            assert!(!is_version(range), "{range}");
        }
    }
}
