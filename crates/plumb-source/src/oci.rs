//! OCIRepository (`source.toolkit.fluxcd.io/v1`) fetched as source-controller does: `spec.ref`
//! with its precedence (digest, then semver with `semverFilter`, then tag, default `latest`),
//! `spec.layerSelector` (first layer with the media type, extracted or copied), `spec.ignore`,
//! and the revision it reports (`<tag>@sha256:<digest>`, or `sha256:<digest>` for a digest pin).
//!
//! Cache layout under the cache directory (see [`crate::Cache`] for the git side):
//!
//! ```text
//! oci/<sha256(url, identity)>/source                              the URL (see `plumb cache`)
//! oci/<sha256(url, identity)>/<manifest hex>[-<selector hash>]/   the artifact's tree
//! oci/<sha256(url, identity)>/<manifest hex>.manifest.json        its manifest (annotations)
//! oci/<sha256(url, identity)>/refs/<sha256(ref)>                  the last resolution of a tag or range
//! ```
//!
//! The identity is a hash of the user name of the credentials used (or `anonymous`), so two
//! identities never share entries. Trees appear through an atomic rename of a complete staging
//! directory in `tmp/`, so concurrent runs see a whole tree or none.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::archive::{self, ArchiveError};
use crate::cache::{Cache, Mode};
use crate::docker_config::{self, RegistryLogin};
use crate::error::OciError;
use crate::ignore::Ignore;
use crate::registry::{self, Client, RegistryError, Repository};
use crate::semver_range::{self, Range};

/// The layer media type of Helm charts, whose OCI tags write semver's `+` as `_`.
pub(crate) const HELM_CHART_LAYER: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";

/// An OCIRepository as plumb fetches it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OciSource {
    /// `spec.url`: `oci://host[:port]/repository`.
    pub url: String,
    /// `spec.ref`.
    pub reference: OciRef,
    /// `spec.layerSelector`.
    pub layer_selector: LayerSelector,
    /// `spec.insecure`: plain HTTP is allowed for any registry.
    pub insecure: bool,
    /// `spec.ignore`: patterns applied to the extracted layer after its `.sourceignore` files.
    pub ignore: Option<String>,
    /// The `.dockerconfigjson` of `spec.secretRef`, when the build has that Secret: used
    /// instead of the user's Docker configuration.
    pub docker_config_json: Option<String>,
    /// The `username` and `password` of `spec.secretRef` (a HelmRepository of `type: oci`):
    /// used before `docker_config_json` and the user's Docker configuration.
    pub credentials: Option<crate::Credentials>,
}

/// `spec.ref` of an OCIRepository, field for field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OciRef {
    pub digest: Option<String>,
    pub semver: Option<String>,
    pub semver_filter: Option<String>,
    pub tag: Option<String>,
}

impl OciRef {
    pub fn tag(tag: impl Into<String>) -> Self {
        OciRef {
            tag: Some(tag.into()),
            ..OciRef::default()
        }
    }

    pub fn digest(digest: impl Into<String>) -> Self {
        OciRef {
            digest: Some(digest.into()),
            ..OciRef::default()
        }
    }

    pub fn semver(range: impl Into<String>) -> Self {
        OciRef {
            semver: Some(range.into()),
            ..OciRef::default()
        }
    }
}

/// What is done with the selected layer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LayerOperation {
    /// Untarred into the artifact's tree (the default).
    #[default]
    Extract,
    /// Stored as it is, one file in the artifact's directory.
    Copy,
}

/// `spec.layerSelector`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LayerSelector {
    /// The first layer with this media type is selected; `None` selects the first layer.
    pub media_type: Option<String>,
    pub operation: LayerOperation,
}

/// A fetched OCI artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciArtifact {
    /// The artifact's directory: the extracted tree, or for `operation: copy` the directory
    /// holding [`file`](Self::file).
    pub dir: PathBuf,
    /// As in `.status.artifact.revision`: `latest@sha256:<hex>`, `sha256:<hex>` for a digest pin.
    pub revision: String,
    /// The manifest's digest, `sha256:<hex>`.
    pub digest: String,
    /// For `operation: copy`: the layer as it was pushed, named as source-controller names it
    /// (`sha256:<manifest hex>.tgz`).
    pub file: Option<PathBuf>,
    /// The manifest's annotations (`org.opencontainers.image.revision`, `.source`, ...), which
    /// source-controller copies to the artifact's metadata.
    pub annotations: BTreeMap<String, String>,
    /// The selected layer's digest (`sha256:<hex>`, the digest of the blob as pushed: a Helm
    /// chart's `.tgz`), when the cache holds the manifest.
    pub layer: Option<String>,
}

impl OciSource {
    /// An OCIRepository's `spec.url`, `spec.ref`, `spec.layerSelector`, `spec.insecure` and
    /// `spec.ignore`, as the object's `spec` holds them (JSON). An operation other than
    /// `extract` or `copy` is an error, as the CRD's validation makes it.
    pub fn from_spec(url: &str, spec: &serde_json::Value) -> Result<OciSource, OciError> {
        let text = |v: &serde_json::Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_string);
        let r = &spec["ref"];
        let reference = OciRef {
            digest: text(&r["digest"]),
            semver: text(&r["semver"]),
            semver_filter: text(&r["semverFilter"]),
            tag: text(&r["tag"]),
        };
        let selector = &spec["layerSelector"];
        let operation = match text(&selector["operation"]).as_deref() {
            None | Some("extract") => LayerOperation::Extract,
            Some("copy") => LayerOperation::Copy,
            Some(other) => {
                return Err(OciError::InvalidSpec {
                    url: url.to_owned(),
                    reference: describe_ref(&reference),
                    reason: format!(
                        "layerSelector.operation must be 'extract' or 'copy', not {other:?}"
                    ),
                })
            }
        };
        Ok(OciSource {
            url: url.to_owned(),
            reference,
            layer_selector: LayerSelector {
                media_type: text(&selector["mediaType"]),
                operation,
            },
            insecure: spec["insecure"].as_bool().unwrap_or(false),
            ignore: spec["ignore"].as_str().map(str::to_string),
            docker_config_json: None,
            credentials: None,
        })
    }
}

/// The one thing `spec.ref` asks for, after precedence.
enum Pin {
    Digest(String),
    Semver {
        text: String,
        range: Range,
        filter: Option<(String, regex::Regex)>,
    },
    Tag(String),
}

fn set(field: &Option<String>) -> Option<&str> {
    field.as_deref().filter(|s| !s.is_empty())
}

/// The ref as errors name it.
fn describe_ref(r: &OciRef) -> String {
    if let Some(digest) = set(&r.digest) {
        format!("digest {digest}")
    } else if let Some(range) = set(&r.semver) {
        match set(&r.semver_filter) {
            Some(filter) => format!("semver {range:?} with filter {filter:?}"),
            None => format!("semver {range:?}"),
        }
    } else {
        format!("tag {:?}", set(&r.tag).unwrap_or("latest"))
    }
}

impl Pin {
    fn parse(r: &OciRef) -> Result<Pin, String> {
        if let Some(digest) = set(&r.digest) {
            if !registry::valid_digest(digest) {
                return Err(format!(
                    "digest {digest:?} is not of the form sha256:<64 lowercase hex digits>"
                ));
            }
            return Ok(Pin::Digest(digest.to_owned()));
        }
        if let Some(text) = set(&r.semver) {
            let range =
                Range::parse(text).map_err(|e| format!("semver '{text}' parse error: {e}"))?;
            let filter = match set(&r.semver_filter) {
                Some(f) => Some((
                    f.to_owned(),
                    regex::Regex::new(f).map_err(|e| format!("semverFilter {f:?}: {e}"))?,
                )),
                None => None,
            };
            return Ok(Pin::Semver {
                text: text.to_owned(),
                range,
                filter,
            });
        }
        Ok(Pin::Tag(set(&r.tag).unwrap_or("latest").to_owned()))
    }

    /// A stable key naming this ref in the cache's record of resolutions.
    fn cache_key(&self) -> String {
        match self {
            Pin::Digest(d) => format!("digest\0{d}"),
            Pin::Semver { text, filter, .. } => format!(
                "semver\0{text}\0{}",
                filter.as_ref().map(|(f, _)| f.as_str()).unwrap_or("")
            ),
            Pin::Tag(t) => format!("tag\0{t}"),
        }
    }

    fn revision(&self, digest: &str, tag: Option<&str>) -> String {
        match (self, tag) {
            (Pin::Digest(_), _) | (_, None) => digest.to_owned(),
            (_, Some(tag)) => format!("{tag}@{digest}"),
        }
    }
}

impl Cache {
    /// Fetches `source` as source-controller would and returns its artifact.
    ///
    /// A digest pin found in the cache is never fetched again; tags and ranges are resolved
    /// against the registry in [`Mode::Online`] and taken from the last resolution in
    /// [`Mode::Offline`].
    pub fn fetch_oci(&self, source: &OciSource, mode: Mode) -> Result<OciArtifact, OciError> {
        let fetch = OciFetch::new(self, source)?;
        if let Pin::Digest(digest) = &fetch.pin {
            if let Some(artifact) = fetch.cached(digest, None) {
                return Ok(artifact);
            }
        }
        match mode {
            Mode::Offline => fetch.offline(),
            Mode::Online => fetch.online(),
        }
    }
}

impl OciSource {
    /// The directory where this repository's resolutions are recorded (`oci/<sha256(url,
    /// identity)>/refs`), for a caller that resolves a ref its own way (a Helm chart's version
    /// range) and keeps its record beside the others.
    pub(crate) fn refs_dir(&self, cache: &Cache) -> Result<PathBuf, OciError> {
        Ok(OciFetch::new(cache, self)?.repo_dir.join("refs"))
    }

    /// Every tag of the repository, with the credentials a fetch would use.
    pub(crate) fn list_tags(&self, cache: &Cache) -> Result<Vec<String>, OciError> {
        let fetch = OciFetch::new(cache, self)?;
        let client = Client::connect(&fetch.repo, self.insecure, fetch.credentials.as_ref())
            .map_err(|e| fetch.remote(e, "the registry"))?;
        client.tags().map_err(|e| fetch.remote(e, "the tag list"))
    }
}

/// One fetch: the source, its parsed ref and URL, its credentials and cache entries.
struct OciFetch<'a> {
    cache: &'a Cache,
    source: &'a OciSource,
    pin: Pin,
    reference: String,
    repo: Repository,
    credentials: Option<RegistryLogin>,
    /// `oci/<sha256(url, identity)>`.
    repo_dir: PathBuf,
    /// Appended to the manifest digest in a tree's directory name for a non-default layer
    /// selector or `spec.ignore`.
    suffix: String,
}

impl<'a> OciFetch<'a> {
    fn new(cache: &'a Cache, source: &'a OciSource) -> Result<Self, OciError> {
        let reference = describe_ref(&source.reference);
        let invalid = |reason: String| OciError::InvalidSpec {
            url: source.url.clone(),
            reference: reference.clone(),
            reason,
        };
        let repo = Repository::parse(&source.url).map_err(invalid)?;
        let pin = Pin::parse(&source.reference).map_err(invalid)?;
        let credentials = match (&source.credentials, &source.docker_config_json) {
            (Some(c), _) => Ok(Some(RegistryLogin::new(
                &c.username,
                &c.password,
                "the username and password of spec.secretRef",
            ))),
            (None, Some(json)) => docker_config::from_json(
                json.as_bytes(),
                &repo.registry,
                "the .dockerconfigjson of spec.secretRef",
            ),
            (None, None) => docker_config::for_registry(&repo.registry),
        };
        let credentials = credentials.map_err(|message| OciError::Registry {
            url: source.url.clone(),
            reference: reference.clone(),
            message: format!("reading registry credentials: {message}"),
        })?;
        let identity = credentials
            .as_ref()
            .map_or_else(|| "anonymous".to_owned(), RegistryLogin::identity);
        let selector = &source.layer_selector;
        let default_content = selector.media_type.is_none()
            && selector.operation == LayerOperation::Extract
            && source.ignore.is_none();
        let suffix = if default_content {
            String::new()
        } else {
            let key = format!(
                "{}\0{:?}\0{}",
                selector.media_type.as_deref().unwrap_or(""),
                selector.operation,
                source.ignore.as_deref().unwrap_or("\0none")
            );
            format!("-{}", &hex(&key)[..16])
        };
        Ok(OciFetch {
            cache,
            source,
            pin,
            reference,
            repo,
            credentials,
            repo_dir: cache
                .dir()
                .join("oci")
                .join(hex(&format!("{}\0{identity}", source.url))),
            suffix,
        })
    }

    fn tree_dir(&self, digest: &str) -> PathBuf {
        self.repo_dir
            .join(format!("{}{}", digest_hex(digest), self.suffix))
    }

    fn manifest_path(&self, digest: &str) -> PathBuf {
        self.repo_dir
            .join(format!("{}.manifest.json", digest_hex(digest)))
    }

    fn record_path(&self) -> PathBuf {
        self.repo_dir.join("refs").join(hex(&self.pin.cache_key()))
    }

    fn cached(&self, digest: &str, tag: Option<&str>) -> Option<OciArtifact> {
        let dir = self.tree_dir(digest);
        if !dir.is_dir() {
            return None;
        }
        crate::manage::touch(&dir);
        let file = (self.source.layer_selector.operation == LayerOperation::Copy)
            .then(|| dir.join(copy_name(digest)));
        let manifest = fs::read(self.manifest_path(digest)).ok();
        let layer = manifest
            .as_deref()
            .and_then(|bytes| self.select_layer(bytes).ok())
            .map(|l| l.digest);
        let annotations = manifest
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
            .and_then(|m| m.get("annotations").and_then(|a| a.as_object()).cloned())
            .map(|map| {
                map.into_iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k, v.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        Some(OciArtifact {
            dir,
            revision: self.pin.revision(digest, tag),
            digest: digest.to_owned(),
            file,
            annotations,
            layer,
        })
    }

    fn offline(&self) -> Result<OciArtifact, OciError> {
        let not_cached = || OciError::NotCached {
            url: self.source.url.clone(),
            reference: self.reference.clone(),
            cache: self.cache.dir().to_owned(),
        };
        if matches!(self.pin, Pin::Digest(_)) {
            return Err(not_cached());
        }
        let record = fs::read_to_string(self.record_path()).map_err(|_| not_cached())?;
        let mut lines = record.lines();
        let digest = lines.next().filter(|d| registry::valid_digest(d));
        let digest = digest.ok_or_else(not_cached)?;
        let tag = lines.next().filter(|t| !t.is_empty());
        self.cached(digest, tag).ok_or_else(not_cached)
    }

    fn online(&self) -> Result<OciArtifact, OciError> {
        let tmp = self.cache.dir().join("tmp");
        fs::create_dir_all(&tmp)
            .and_then(|()| fs::create_dir_all(self.repo_dir.join("refs")))
            .map_err(|e| self.not_writable(e))?;
        crate::manage::record_source(&self.repo_dir, &self.source.url);
        let client = Client::connect(&self.repo, self.source.insecure, self.credentials.as_ref())
            .map_err(|e| self.remote(e, "the registry"))?;
        let (digest, tag) = match &self.pin {
            Pin::Digest(digest) => (digest.clone(), None),
            Pin::Tag(tag) => (
                client
                    .resolve_tag(tag)
                    .map_err(|e| self.remote(e, "the tag"))?,
                Some(tag.clone()),
            ),
            Pin::Semver { range, filter, .. } => {
                let tag = self.select_tag(&client, range, filter.as_ref().map(|(_, r)| r))?;
                let digest = client
                    .resolve_tag(&tag)
                    .map_err(|e| self.remote(e, "the tag"))?;
                (digest, Some(tag))
            }
        };
        if self.cached(&digest, tag.as_deref()).is_none() {
            self.download(&client, &digest, &tmp)?;
        }
        if !matches!(self.pin, Pin::Digest(_)) {
            self.record(&digest, tag.as_deref(), &tmp)?;
        }
        self.cached(&digest, tag.as_deref())
            .ok_or_else(|| OciError::Registry {
                url: self.source.url.clone(),
                reference: self.reference.clone(),
                message: format!(
                    "{} vanished from the cache",
                    self.tree_dir(&digest).display()
                ),
            })
    }

    /// The highest tag in `range` among those `filter` keeps, as source-controller's
    /// `getTagBySemver` picks it.
    fn select_tag(
        &self,
        client: &Client,
        range: &Range,
        filter: Option<&regex::Regex>,
    ) -> Result<String, OciError> {
        let tags = client.tags().map_err(|e| self.remote(e, "the tag list"))?;
        let helm = self.source.layer_selector.media_type.as_deref() == Some(HELM_CHART_LAYER);
        let versions: Vec<String> = tags
            .iter()
            .filter(|t| filter.is_none_or(|f| f.is_match(t)))
            .map(|t| if helm { t.replace('_', "+") } else { t.clone() })
            .collect();
        let chosen = semver_range::highest_matching(range, versions.iter().map(String::as_str))
            .ok_or_else(|| OciError::NotFound {
                url: self.source.url.clone(),
                reference: self.reference.clone(),
                detail: format!(
                    "no match found for the semver range among {} tags",
                    tags.len()
                ),
            })?;
        Ok(if helm {
            chosen.replace('+', "_")
        } else {
            chosen.to_owned()
        })
    }

    /// Downloads the manifest and the selected layer and puts the artifact's tree in place.
    fn download(&self, client: &Client, digest: &str, tmp: &Path) -> Result<(), OciError> {
        let work = tempfile::Builder::new()
            .prefix("oci-")
            .tempdir_in(tmp)
            .map_err(|e| self.not_writable(e))?;
        let manifest_bytes = client
            .manifest(digest)
            .map_err(|e| self.remote(e, "the manifest"))?;
        let layer = self.select_layer(&manifest_bytes)?;
        let blob_path = work.path().join("layer");
        {
            let file = fs::File::create(&blob_path).map_err(|e| self.not_writable(e))?;
            let mut out = BufWriter::new(file);
            client
                .blob(&layer.digest, layer.size, &mut out)
                .map_err(|e| self.remote(e, &format!("layer {}", layer.digest)))?;
            out.flush().map_err(|e| self.not_writable(e))?;
        }
        let staging = work.path().join("tree");
        fs::create_dir(&staging).map_err(|e| self.not_writable(e))?;
        match self.source.layer_selector.operation {
            LayerOperation::Extract => {
                let blob = fs::File::open(&blob_path).map_err(|e| self.not_writable(e))?;
                archive::extract_tar_gz(BufReader::new(blob), &staging).map_err(|e| match e {
                    ArchiveError::Corrupt(message) => OciError::CorruptArchive {
                        url: self.source.url.clone(),
                        reference: self.reference.clone(),
                        layer: layer.digest.clone(),
                        message,
                    },
                    ArchiveError::Unsafe { path, reason } => OciError::UnsafePath {
                        url: self.source.url.clone(),
                        reference: self.reference.clone(),
                        path,
                        reason,
                    },
                    ArchiveError::Io(e) => self.not_writable(e),
                })?;
                let mut ignore = Ignore::without_defaults(self.source.ignore.as_deref());
                prune(&staging, "", &mut ignore).map_err(|e| self.not_writable(e))?;
            }
            LayerOperation::Copy => {
                fs::rename(&blob_path, staging.join(copy_name(digest)))
                    .map_err(|e| self.not_writable(e))?;
            }
        }
        self.write_atomically(&self.manifest_path(digest), &manifest_bytes, tmp)?;
        let dest = self.tree_dir(digest);
        if let Err(e) = fs::rename(&staging, &dest) {
            // Another process put the same artifact in place first: its copy is as good as ours.
            if !dest.is_dir() {
                return Err(self.not_writable(e));
            }
        }
        Ok(())
    }

    /// The layer `spec.layerSelector` picks from the manifest, as source-controller's
    /// `selectLayer`: the first with the media type, else the first layer.
    fn select_layer(&self, manifest: &[u8]) -> Result<Layer, OciError> {
        let protocol = |message: String| OciError::Registry {
            url: self.source.url.clone(),
            reference: self.reference.clone(),
            message,
        };
        let manifest: serde_json::Value = serde_json::from_slice(manifest)
            .map_err(|e| protocol(format!("the manifest is not JSON: {e}")))?;
        let media_type = manifest["mediaType"].as_str().unwrap_or("");
        if media_type.ends_with(".index.v1+json") || media_type.ends_with(".list.v2+json") {
            return Err(protocol(format!(
                "the manifest is an image index ({media_type}), not an artifact"
            )));
        }
        let layers = manifest["layers"].as_array().cloned().unwrap_or_default();
        if layers.is_empty() {
            return Err(protocol("no layers found in artifact".into()));
        }
        let wanted = self.source.layer_selector.media_type.as_deref();
        let layer = match wanted {
            Some(wanted) => layers
                .iter()
                .find(|l| l["mediaType"].as_str() == Some(wanted))
                .ok_or_else(|| OciError::NoMatchingLayer {
                    url: self.source.url.clone(),
                    reference: self.reference.clone(),
                    media_type: wanted.to_owned(),
                })?,
            None => &layers[0],
        };
        let digest = layer["digest"].as_str().unwrap_or("");
        if !registry::valid_digest(digest) {
            return Err(protocol(format!(
                "layer digest {digest:?} is not a sha256 digest"
            )));
        }
        Ok(Layer {
            digest: digest.to_owned(),
            size: layer["size"].as_u64(),
        })
    }

    fn record(&self, digest: &str, tag: Option<&str>, tmp: &Path) -> Result<(), OciError> {
        let text = format!("{digest}\n{}\n", tag.unwrap_or(""));
        self.write_atomically(&self.record_path(), text.as_bytes(), tmp)
    }

    fn write_atomically(&self, path: &Path, data: &[u8], tmp: &Path) -> Result<(), OciError> {
        let mut file = tempfile::NamedTempFile::new_in(tmp).map_err(|e| self.not_writable(e))?;
        file.write_all(data).map_err(|e| self.not_writable(e))?;
        file.persist(path).map_err(|e| self.not_writable(e.error))?;
        Ok(())
    }

    fn not_writable(&self, source: std::io::Error) -> OciError {
        OciError::CacheNotWritable {
            url: self.source.url.clone(),
            reference: self.reference.clone(),
            dir: self.cache.dir().to_owned(),
            source,
        }
    }

    fn remote(&self, e: RegistryError, what: &str) -> OciError {
        let url = self.source.url.clone();
        let reference = self.reference.clone();
        match e {
            RegistryError::Unreachable(message) => OciError::Unreachable {
                url,
                reference,
                message,
            },
            RegistryError::NotFound(detail) => OciError::NotFound {
                url,
                reference,
                detail,
            },
            RegistryError::Unauthorized(message) => {
                let whose = match &self.credentials {
                    Some(c) => format!("with the credentials from {}", c.origin),
                    None => format!(
                        "anonymously (no credentials for {} in the Docker configuration)",
                        self.repo.registry
                    ),
                };
                OciError::Unauthorized {
                    url,
                    reference,
                    message: format!("{message}; tried {whose}"),
                }
            }
            RegistryError::DigestMismatch { expected, actual } => OciError::DigestMismatch {
                url,
                reference,
                what: what.to_owned(),
                expected,
                actual,
            },
            RegistryError::Io(e) => self.not_writable(e),
            RegistryError::Protocol(message) => OciError::Registry {
                url,
                reference,
                message,
            },
        }
    }
}

/// The selected layer's descriptor.
struct Layer {
    digest: String,
    size: Option<u64>,
}

/// The file a copied layer is stored as: source-controller's `<manifest digest>.tgz`.
fn copy_name(digest: &str) -> String {
    format!("{digest}.tgz")
}

/// Removes what `.sourceignore` files and `spec.ignore` exclude from an extracted tree.
fn prune(dir: &Path, rel: &str, ignore: &mut Ignore) -> std::io::Result<()> {
    let sourceignore = dir.join(".sourceignore");
    if fs::symlink_metadata(&sourceignore).is_ok_and(|m| m.is_file()) {
        ignore.add_sourceignore(rel, &fs::read(&sourceignore)?);
    }
    let mut entries: Vec<_> = fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        let is_dir = entry.file_type()?.is_dir();
        if ignore.is_excluded(&path, is_dir) {
            if is_dir {
                fs::remove_dir_all(entry.path())?;
            } else {
                fs::remove_file(entry.path())?;
            }
        } else if is_dir {
            prune(&entry.path(), &path, ignore)?;
        }
    }
    Ok(())
}

fn hex(text: &str) -> String {
    digest_hex(&registry::sha256_digest(text.as_bytes())).to_owned()
}

fn digest_hex(digest: &str) -> &str {
    digest.strip_prefix("sha256:").unwrap_or(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn ref_precedence_and_revisions_as_source_controller() {
        let mut r = OciRef::tag("v1");
        r.semver = Some(">=1".into());
        r.digest = Some(DIGEST.into());
        let pin = Pin::parse(&r).unwrap();
        assert!(matches!(pin, Pin::Digest(_)));
        assert_eq!(pin.revision(DIGEST, None), DIGEST);
        r.digest = None;
        assert!(matches!(Pin::parse(&r).unwrap(), Pin::Semver { .. }));
        r.semver = None;
        let tag = Pin::parse(&r).unwrap();
        assert_eq!(tag.revision(DIGEST, Some("v1")), format!("v1@{DIGEST}"));
        assert!(matches!(Pin::parse(&OciRef::default()).unwrap(), Pin::Tag(t) if t == "latest"));
        assert!(Pin::parse(&OciRef::digest("sha256:abc")).is_err());
        assert!(Pin::parse(&OciRef::semver("not a range")).is_err());
    }

    #[test]
    fn a_flux_spec_gives_ref_selector_insecure_and_ignore() {
        let spec = serde_json::json!({
            "url": "oci://r/a",
            "ref": {"semver": ">=1.0.0", "semverFilter": ".*-rc.*", "tag": "x"},
            "layerSelector": {"mediaType": "application/x", "operation": "copy"},
            "insecure": true,
            "ignore": "*.md\n",
        });
        let s = OciSource::from_spec("oci://r/a", &spec).unwrap();
        assert_eq!(s.reference.semver.as_deref(), Some(">=1.0.0"));
        assert_eq!(s.reference.semver_filter.as_deref(), Some(".*-rc.*"));
        assert_eq!(
            s.layer_selector.media_type.as_deref(),
            Some("application/x")
        );
        assert_eq!(s.layer_selector.operation, LayerOperation::Copy);
        assert!(s.insecure);
        assert_eq!(s.ignore.as_deref(), Some("*.md\n"));
        let plain = OciSource::from_spec("oci://r/a", &serde_json::Value::Null).unwrap();
        assert_eq!(plain.reference, OciRef::default());
        assert_eq!(plain.layer_selector, LayerSelector::default());
        let bad = serde_json::json!({"layerSelector": {"operation": "unpack"}});
        assert!(matches!(
            OciSource::from_spec("oci://r/a", &bad),
            Err(OciError::InvalidSpec { .. })
        ));
    }
}
