//! Charts from an HTTP HelmRepository (`type: default`), fetched as source-controller does:
//! the repository's `index.yaml`, the chart version it names, the `.tgz` its entry points at
//! (its `digest` checked), extracted safely into the cache.
//!
//! Version selection follows source-controller's `ChartRepository.GetChartVersion`: a version
//! written exactly as an index entry's wins; otherwise the text is a semver range and the
//! highest version in it is chosen; `*` or nothing is the latest stable version (a range
//! admits pre-releases only when it names one). A relative `urls[0]` is resolved against the
//! repository URL taken as a directory. Cache layout, as every other kind:
//! `chart/<sha256(repo URL, user)>/` holds `source`, `refs/` (the last online resolution of each
//! chart and version range) and `<chart>-<version>-<digest12>/` with the chart at `<chart>/`.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use semver::Version;
use sha2::{Digest, Sha256};

use crate::archive::{extract_tar_gz, ArchiveError};
use crate::cache::sha256_hex;
use crate::semver_range::{tag_version, Range};
use crate::{Cache, Credentials, Mode, MAX_HTTP_FILE_SIZE};

/// A chart of an HTTP HelmRepository, as a HelmChart (or a HelmRelease's `chart.spec`) names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HelmChartSource {
    /// The HelmRepository's `spec.url` (`http://` or `https://`).
    pub repo_url: String,
    /// The chart's name in the index.
    pub chart: String,
    /// An exact version or a semver range; empty or `*` is the latest stable version.
    pub version: String,
    /// Basic credentials from the repository's `spec.secretRef`; sent to the index and to
    /// chart URLs on the repository's own host only, as Helm does without `passCredentials`.
    pub credentials: Option<Credentials>,
}

/// A chart fetched into the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartArtifact {
    /// The chart's directory (holding `Chart.yaml`).
    pub dir: PathBuf,
    /// The chart's name.
    pub name: String,
    /// The chart version chosen, as the index writes it.
    pub version: String,
    /// The `.tgz`'s digest, `sha256:<hex>`.
    pub digest: String,
}

/// Why a chart could not be fetched; each names the repository URL, the chart and the version
/// asked for.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// The repository or the chart URL could not be reached (connection, TLS, timeout).
    #[error("HelmRepository {repo_url}: chart {chart} version {version:?}: GET {url}: {message}")]
    Unreachable {
        repo_url: String,
        chart: String,
        version: String,
        url: String,
        message: String,
    },
    /// The server answered the index or the chart download with an error status.
    #[error("HelmRepository {repo_url}: chart {chart} version {version:?}: GET {url}: HTTP {status}{}", if *status == 404 { " (not found)" } else { "" })]
    HttpStatus {
        repo_url: String,
        chart: String,
        version: String,
        url: String,
        status: u16,
    },
    /// A download is larger than plumb reads.
    #[error("HelmRepository {repo_url}: chart {chart} version {version:?}: GET {url}: larger than {limit} bytes")]
    TooLarge {
        repo_url: String,
        chart: String,
        version: String,
        url: String,
        limit: u64,
    },
    /// `index.yaml` is not YAML, or not a Helm repository index.
    #[error("HelmRepository {repo_url}: chart {chart} version {version:?}: {url}: invalid index: {message}")]
    InvalidIndex {
        repo_url: String,
        chart: String,
        version: String,
        url: String,
        message: String,
    },
    /// The index has no entry for the chart.
    #[error("HelmRepository {repo_url}: no chart named {chart:?} in {url}")]
    ChartNotInIndex {
        repo_url: String,
        chart: String,
        url: String,
    },
    /// The version is neither an entry's version nor a valid semver range.
    #[error(
        "HelmRepository {repo_url}: chart {chart}: invalid version or range {version:?}: {reason}"
    )]
    InvalidVersion {
        repo_url: String,
        chart: String,
        version: String,
        reason: String,
    },
    /// No version of the chart satisfies the range.
    #[error("HelmRepository {repo_url}: chart {chart}: no version satisfies {version:?} (the index has {})", if available.is_empty() { "none".to_owned() } else { available.join(", ") })]
    NoVersion {
        repo_url: String,
        chart: String,
        version: String,
        available: Vec<String>,
    },
    /// The downloaded `.tgz` does not have the digest the index gives.
    #[error("HelmRepository {repo_url}: chart {chart} version {version}: {url}: digest mismatch: the index says sha256:{}, the download is sha256:{}", digests.expected, digests.actual)]
    DigestMismatch {
        repo_url: String,
        chart: String,
        version: String,
        url: String,
        /// Boxed to keep every `Result` of this error small.
        digests: Box<Digests>,
    },
    /// The `.tgz` is not a chart archive: not tar+gzip, an unsafe entry, or no `<chart>/Chart.yaml`.
    #[error("HelmRepository {repo_url}: chart {chart} version {version}: {url}: corrupt chart archive: {message}")]
    CorruptArchive {
        repo_url: String,
        chart: String,
        version: String,
        url: String,
        message: String,
    },
    /// Offline mode was asked for and the cache holds no resolution of this chart and version.
    #[error("HelmRepository {repo_url}: chart {chart} version {version:?} is not in the cache at {} and offline mode forbids fetching it", cache.display())]
    NotCached {
        repo_url: String,
        chart: String,
        version: String,
        cache: PathBuf,
    },
    /// A chart of a HelmRepository of `type: oci` could not be fetched from the registry.
    #[error("HelmRepository {repo_url}: chart {chart} version {version:?}: {source}")]
    Oci {
        repo_url: String,
        chart: String,
        version: String,
        /// Boxed to keep every `Result` of this error small.
        #[source]
        source: Box<crate::OciError>,
    },
    /// The OCIRepository a `spec.chartRef` names could not be fetched.
    #[error("{0}")]
    OciRepository(#[source] Box<crate::OciError>),
    /// The artifact fetched is not a Helm chart.
    #[error("{url} does not hold a Helm chart: {message}")]
    NotAChart { url: String, message: String },
    /// The cache directory cannot be written.
    #[error("HelmRepository {repo_url}: chart {chart}: cache directory {} is not writable: {source}", dir.display())]
    CacheNotWritable {
        repo_url: String,
        chart: String,
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ChartError {
    /// Whether the repository answered and the chart is wrong (no such chart or version, a
    /// digest that does not match, a corrupt archive), as opposed to a fetch that could not be
    /// done here (unreachable, refused credentials, offline, the cache not writable).
    pub fn is_source_error(&self) -> bool {
        match self {
            ChartError::HttpStatus { status, .. } => matches!(status, 404 | 410),
            ChartError::TooLarge { .. }
            | ChartError::InvalidIndex { .. }
            | ChartError::ChartNotInIndex { .. }
            | ChartError::InvalidVersion { .. }
            | ChartError::NoVersion { .. }
            | ChartError::DigestMismatch { .. }
            | ChartError::CorruptArchive { .. }
            | ChartError::NotAChart { .. } => true,
            ChartError::Oci { source, .. } => source.is_source_error(),
            ChartError::OciRepository(source) => source.is_source_error(),
            ChartError::Unreachable { .. }
            | ChartError::NotCached { .. }
            | ChartError::CacheNotWritable { .. } => false,
        }
    }
}

/// The sha256 digests (hex) of a chart archive that does not match its index entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digests {
    /// What the index gives.
    pub expected: String,
    /// What the download has.
    pub actual: String,
}

/// The index entry chosen for a chart.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ChartVersion {
    version: String,
    url: String,
    /// The sha256 hex the index gives, when it gives one.
    digest: Option<String>,
}

impl Cache {
    /// Fetches a chart of an HTTP HelmRepository (see the module documentation). Online, an
    /// exact version already in the cache is used without a request; any other version is
    /// resolved against the index again. Offline, the last online resolution is used.
    pub fn fetch_chart(
        &self,
        source: &HelmChartSource,
        mode: Mode,
    ) -> Result<ChartArtifact, ChartError> {
        let entry = self
            .dir()
            .join("chart")
            .join(sha256_hex(&source.cache_identity()));
        let reference = entry
            .join("refs")
            .join(sha256_hex(&format!("{}\n{}", source.chart, source.version)));
        let exact = is_exact(&source.version);
        if mode == Mode::Offline || exact {
            let exact_tree = || {
                exact
                    .then(|| cached_exact(&entry, &source.chart, source.version.trim()))
                    .flatten()
            };
            if let Some(artifact) = cached(&entry, &reference, &source.chart).or_else(exact_tree) {
                return Ok(artifact);
            }
            if mode == Mode::Offline {
                return Err(ChartError::NotCached {
                    repo_url: source.repo_url.clone(),
                    chart: source.chart.clone(),
                    version: source.version.clone(),
                    cache: self.dir().to_owned(),
                });
            }
        }
        let chosen = source.resolve()?;
        let tgz = source.download(&chosen)?;
        let actual: String = Sha256::digest(&tgz)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if let Some(expected) = &chosen.digest {
            if !expected.eq_ignore_ascii_case(&actual) {
                return Err(ChartError::DigestMismatch {
                    repo_url: source.repo_url.clone(),
                    chart: source.chart.clone(),
                    version: chosen.version,
                    url: chosen.url,
                    digests: Box::new(Digests {
                        expected: expected.clone(),
                        actual,
                    }),
                });
            }
        }
        let name = format!("{}-{}-{}", source.chart, chosen.version, &actual[..12]);
        let revision = entry.join(&name);
        let not_writable = |e| ChartError::CacheNotWritable {
            repo_url: source.repo_url.clone(),
            chart: source.chart.clone(),
            dir: self.dir().to_owned(),
            source: e,
        };
        let tmp = self.dir().join(crate::manage::TMP_DIR);
        fs::create_dir_all(&tmp)
            .and_then(|()| fs::create_dir_all(entry.join("refs")))
            .map_err(not_writable)?;
        crate::manage::record_source(&entry, &source.repo_url);
        if !revision.is_dir() {
            let staging = tempfile::Builder::new()
                .prefix("chart-")
                .tempdir_in(&tmp)
                .map_err(not_writable)?;
            let corrupt = |message: String| ChartError::CorruptArchive {
                repo_url: source.repo_url.clone(),
                chart: source.chart.clone(),
                version: chosen.version.clone(),
                url: chosen.url.clone(),
                message,
            };
            match extract_tar_gz(tgz.as_slice(), staging.path()) {
                Ok(()) => {}
                Err(ArchiveError::Io(e)) => return Err(not_writable(e)),
                Err(ArchiveError::Corrupt(m)) => return Err(corrupt(m)),
                Err(ArchiveError::Unsafe { path, reason }) => {
                    return Err(corrupt(format!("entry {path:?}: {reason}")))
                }
            }
            if !staging
                .path()
                .join(&source.chart)
                .join("Chart.yaml")
                .is_file()
            {
                return Err(corrupt(format!("no {}/Chart.yaml in it", source.chart)));
            }
            fs::write(staging.path().join(DIGEST_FILE), &actual).map_err(not_writable)?;
            // Another process may have put the same chart in place first: it is as good.
            if let Err(e) = fs::rename(staging.path(), &revision) {
                if !revision.is_dir() {
                    return Err(not_writable(e));
                }
            }
        }
        crate::manage::touch(&revision);
        let mut record = tempfile::NamedTempFile::new_in(&tmp).map_err(not_writable)?;
        std::io::Write::write_all(
            &mut record,
            format!("{name}\n{}\n", chosen.version).as_bytes(),
        )
        .map_err(not_writable)?;
        record
            .persist(&reference)
            .map_err(|e| not_writable(e.error))?;
        Ok(ChartArtifact {
            dir: revision.join(&source.chart),
            name: source.chart.clone(),
            version: chosen.version,
            digest: format!("sha256:{actual}"),
        })
    }
}

/// The artifact the ref file `reference` records, when its tree is still in `entry`.
fn cached(entry: &Path, reference: &Path, chart: &str) -> Option<ChartArtifact> {
    let text = fs::read_to_string(reference).ok()?;
    let mut lines = text.lines();
    let name = lines.next()?.trim();
    let version = lines.next()?.trim();
    cached_tree(entry, name, chart, version)
}

/// A tree of exactly `version` in `entry`, however it was resolved (a range may have chosen
/// it); the one a build used last when the index had the version at different digests.
fn cached_exact(entry: &Path, chart: &str, version: &str) -> Option<ChartArtifact> {
    let prefix = format!("{chart}-{version}-");
    let mut found: Vec<(std::time::SystemTime, String)> = fs::read_dir(entry)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let digest12 = name.strip_prefix(&prefix)?;
            let hex = digest12.len() == 12 && digest12.bytes().all(|b| b.is_ascii_hexdigit());
            let used = e.metadata().and_then(|m| m.modified()).ok()?;
            hex.then_some((used, name))
        })
        .collect();
    found.sort();
    let (_, name) = found.pop()?;
    cached_tree(entry, &name, chart, version)
}

/// The revision directory `name` of `entry` as an artifact, when it is complete.
fn cached_tree(entry: &Path, name: &str, chart: &str, version: &str) -> Option<ChartArtifact> {
    let digest12 = name.rsplit('-').next()?;
    let revision = entry.join(name);
    let dir = revision.join(chart);
    if name.is_empty() || name.contains('/') || !dir.join("Chart.yaml").is_file() {
        return None;
    }
    let tgz_digest = fs::read_to_string(revision.join(DIGEST_FILE))
        .ok()
        .map(|d| d.trim().to_owned())
        .filter(|d| d.starts_with(digest12))?;
    crate::manage::touch(&revision);
    Some(ChartArtifact {
        dir,
        name: chart.to_owned(),
        version: version.to_owned(),
        digest: format!("sha256:{tgz_digest}"),
    })
}

/// Next to the chart in a revision directory: the full sha256 of the `.tgz` it came from.
const DIGEST_FILE: &str = "digest";

/// Whether `version` names one version rather than a range: then a cached copy is final.
fn is_exact(version: &str) -> bool {
    tag_version(version.trim()).is_some()
}

impl HelmChartSource {
    /// The cache key: the repository URL and who fetches it, never a secret.
    fn cache_identity(&self) -> String {
        let mut key = self.repo_url.clone();
        if let Some(c) = &self.credentials {
            key.push_str(&format!("\nuser {}", c.username));
        }
        key
    }

    fn index_url(&self) -> String {
        format!("{}/index.yaml", self.repo_url.trim_end_matches('/'))
    }

    /// Reads the index and chooses the chart version.
    fn resolve(&self) -> Result<ChartVersion, ChartError> {
        let url = self.index_url();
        let body = self.get(&url, true)?;
        let invalid = |message: String| ChartError::InvalidIndex {
            repo_url: self.repo_url.clone(),
            chart: self.chart.clone(),
            version: self.version.clone(),
            url: url.clone(),
            message,
        };
        let text = String::from_utf8(body).map_err(|_| invalid("not UTF-8 text".into()))?;
        let docs = plumb_yaml::parse_documents(&url, &text).map_err(|e| invalid(e.to_string()))?;
        let doc = docs.first().ok_or_else(|| invalid("empty".into()))?;
        let index = plumb_yaml::to_json(doc).map_err(|e| invalid(e.to_string()))?;
        let entries = index
            .get("entries")
            .and_then(|e| e.as_object())
            .ok_or_else(|| invalid("no `entries` map".into()))?;
        let versions = entries
            .get(&self.chart)
            .and_then(|v| v.as_array())
            .ok_or_else(|| ChartError::ChartNotInIndex {
                repo_url: self.repo_url.clone(),
                chart: self.chart.clone(),
                url: url.clone(),
            })?;
        let listed: Vec<(String, &serde_json::Value)> = versions
            .iter()
            .filter_map(|v| Some((v.get("version")?.as_str()?.to_owned(), v)))
            .collect();
        let chosen = self.choose(&listed)?;
        let (version, entry) = chosen;
        let first_url = entry
            .get("urls")
            .and_then(|u| u.as_array())
            .and_then(|u| u.first())
            .and_then(|u| u.as_str())
            .ok_or_else(|| {
                invalid(format!(
                    "chart {} version {version} has no urls",
                    self.chart
                ))
            })?;
        let chart_url = self
            .chart_url(first_url)
            .map_err(|e| invalid(format!("chart URL {first_url:?}: {e}")))?;
        let digest = entry
            .get("digest")
            .and_then(|d| d.as_str())
            .map(|d| d.trim().trim_start_matches("sha256:").to_owned())
            .filter(|d| !d.is_empty());
        Ok(ChartVersion {
            version,
            url: chart_url,
            digest,
        })
    }

    /// An exact match of the version text first, else the highest version in the range.
    fn choose<'a>(
        &self,
        listed: &[(String, &'a serde_json::Value)],
    ) -> Result<(String, &'a serde_json::Value), ChartError> {
        let wanted = self.version.trim();
        if let Some((v, e)) = listed
            .iter()
            .find(|(v, _)| !wanted.is_empty() && v == wanted)
        {
            return Ok((v.clone(), e));
        }
        let range_text = if wanted.is_empty() { "*" } else { wanted };
        let range = Range::parse(range_text).map_err(|reason| ChartError::InvalidVersion {
            repo_url: self.repo_url.clone(),
            chart: self.chart.clone(),
            version: self.version.clone(),
            reason,
        })?;
        listed
            .iter()
            .filter_map(|(text, e)| tag_version(text).map(|v| (v, text, e)))
            .filter(|(v, _, _)| range.matches(v))
            // Equal versions (build metadata apart) in the order the charts were created.
            .max_by(|(a, _, ea), (b, _, eb)| {
                let created = |e: &serde_json::Value| {
                    e.get("created").and_then(|c| c.as_str()).map(str::to_owned)
                };
                Version::cmp_precedence(a, b).then_with(|| created(ea).cmp(&created(eb)))
            })
            .map(|(_, text, e)| (text.clone(), *e))
            .ok_or_else(|| ChartError::NoVersion {
                repo_url: self.repo_url.clone(),
                chart: self.chart.clone(),
                version: self.version.clone(),
                available: listed.iter().map(|(v, _)| v.clone()).collect(),
            })
    }

    /// `urls[0]` as source-controller reads it: absolute as is, else relative to the
    /// repository URL taken as a directory (its query kept).
    fn chart_url(&self, url: &str) -> Result<String, String> {
        if let Ok(absolute) = reqwest::Url::parse(url) {
            return Ok(absolute.to_string());
        }
        let mut base = reqwest::Url::parse(&self.repo_url).map_err(|e| e.to_string())?;
        let query = base.query().map(str::to_owned);
        base.set_query(None);
        let path = format!("{}/", base.path().trim_end_matches('/'));
        base.set_path(&path);
        let mut joined = base.join(url).map_err(|e| e.to_string())?;
        if joined.query().is_none() {
            joined.set_query(query.as_deref());
        }
        Ok(joined.to_string())
    }

    /// Downloads the chart's `.tgz`, sending credentials only to the repository's own host.
    fn download(&self, chosen: &ChartVersion) -> Result<Vec<u8>, ChartError> {
        let same_host = |u: &str| {
            reqwest::Url::parse(u)
                .ok()
                .map(|u| (u.host_str().map(str::to_owned), u.port_or_known_default()))
        };
        let with_credentials = same_host(&chosen.url) == same_host(&self.repo_url);
        // Its errors name the version chosen rather than the range asked for.
        let at_version = HelmChartSource {
            version: chosen.version.clone(),
            ..self.clone()
        };
        at_version.get(&chosen.url, with_credentials)
    }

    /// One GET, its body read up to the size limit.
    fn get(&self, url: &str, with_credentials: bool) -> Result<Vec<u8>, ChartError> {
        let unreachable = |message: String| ChartError::Unreachable {
            repo_url: self.repo_url.clone(),
            chart: self.chart.clone(),
            version: self.version.clone(),
            url: url.to_owned(),
            message,
        };
        let client = crate::fetch_remote::http_client().map_err(unreachable)?;
        let mut request = client.get(url);
        if let (true, Some(c)) = (with_credentials, &self.credentials) {
            request = request.basic_auth(&c.username, Some(&c.password));
        }
        let response = request
            .send()
            .map_err(|e| unreachable(crate::fetch_remote::error_chain(&e)))?;
        let status = response.status();
        if !status.is_success() {
            return Err(ChartError::HttpStatus {
                repo_url: self.repo_url.clone(),
                chart: self.chart.clone(),
                version: self.version.clone(),
                url: url.to_owned(),
                status: status.as_u16(),
            });
        }
        let mut body = Vec::new();
        response
            .take(MAX_HTTP_FILE_SIZE + 1)
            .read_to_end(&mut body)
            .map_err(|e| unreachable(e.to_string()))?;
        if body.len() as u64 > MAX_HTTP_FILE_SIZE {
            return Err(ChartError::TooLarge {
                repo_url: self.repo_url.clone(),
                chart: self.chart.clone(),
                version: self.version.clone(),
                url: url.to_owned(),
                limit: MAX_HTTP_FILE_SIZE,
            });
        }
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(repo_url: &str) -> HelmChartSource {
        HelmChartSource {
            repo_url: repo_url.into(),
            chart: "podinfo".into(),
            ..HelmChartSource::default()
        }
    }

    #[test]
    fn chart_urls_resolve_against_the_repository_as_a_directory() {
        let repo = at("https://charts.example.com/stable?token=abc");
        assert_eq!(
            repo.chart_url("podinfo-1.0.0.tgz").unwrap(),
            "https://charts.example.com/stable/podinfo-1.0.0.tgz?token=abc"
        );
        assert_eq!(
            repo.chart_url("../other/podinfo-1.0.0.tgz").unwrap(),
            "https://charts.example.com/other/podinfo-1.0.0.tgz?token=abc"
        );
        assert_eq!(
            repo.chart_url("/dl/podinfo-1.0.0.tgz").unwrap(),
            "https://charts.example.com/dl/podinfo-1.0.0.tgz?token=abc"
        );
        assert_eq!(
            at("https://charts.example.com/stable/")
                .chart_url("https://cdn.example.com/p.tgz")
                .unwrap(),
            "https://cdn.example.com/p.tgz"
        );
        assert_eq!(
            at("https://charts.example.com/stable/").index_url(),
            "https://charts.example.com/stable/index.yaml"
        );
    }

    #[test]
    fn only_a_parsable_version_is_exact() {
        assert!(is_exact("1.2.3"));
        assert!(is_exact("v1.2.3-rc.1"));
        assert!(!is_exact("1.2"));
        assert!(!is_exact(">=1.0.0"));
        assert!(!is_exact("*"));
        assert!(!is_exact(""));
    }
}
