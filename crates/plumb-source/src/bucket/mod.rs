//! Flux `Bucket` sources (source.toolkit.fluxcd.io/v1) fetched as source-controller does: the
//! objects of an S3-compatible bucket under `spec.prefix`, filtered by the bucket's root
//! `.sourceignore` and `spec.ignore`, under the revision the controller reports.
//!
//! A Bucket has no immutable pin, so an online fetch lists the bucket every time and downloads
//! only when the listing gives a revision the cache does not hold. Layout under the cache:
//!
//! ```text
//! bucket/<sha256(endpoint, bucket, prefix, access key)>/<revision hex>/   the objects
//! bucket/<sha256(...)>/refs/last                                       the last online revision
//! bucket/<sha256(...)>/source                                          endpoint/bucket/prefix
//! ```

mod error;
mod keys;
mod s3;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use object_store::aws::AwsCredential;
use sha2::{Digest, Sha256};

pub use error::BucketError;

use crate::{Cache, Mode};
use keys::KeyIgnore;
use s3::{S3Error, S3};

/// The object at the bucket's root whose patterns apply to every key.
const SOURCEIGNORE: &str = ".sourceignore";

/// Objects downloaded at the same time.
const PARALLEL_DOWNLOADS: usize = 8;

/// A Bucket's spec, as plumb fetches it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BucketSource {
    /// `spec.provider`: `generic` (the default) or `aws` are fetched; `gcp` and `azure` are not.
    pub provider: String,
    /// `spec.bucketName`.
    pub bucket_name: String,
    /// `spec.endpoint`: `host[:port]`, no scheme.
    pub endpoint: String,
    /// `spec.insecure`: plain HTTP instead of HTTPS.
    pub insecure: bool,
    /// `spec.region`; requests are signed for `us-east-1` when it is empty.
    pub region: Option<String>,
    /// `spec.prefix`: only keys starting with it (a plain string prefix, as S3 lists). The
    /// artifact keeps the full keys, prefix included, as source-controller's does.
    pub prefix: Option<String>,
    /// `spec.ignore`: patterns applied after the bucket's root `.sourceignore`.
    pub ignore: Option<String>,
    /// `spec.timeout` (Go duration, default `60s`), for each request.
    pub timeout: Option<String>,
}

/// The access key pair of `spec.secretRef` (`accesskey`, `secretkey`) or of the environment.
/// Its `Debug` never shows the secret key.
#[derive(Clone, PartialEq, Eq)]
pub struct BucketCredentials {
    pub access_key: String,
    pub secret_key: String,
}

impl std::fmt::Debug for BucketCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BucketCredentials")
            .field("access_key", &self.access_key)
            .field("secret_key", &"******")
            .finish()
    }
}

impl BucketCredentials {
    /// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` when both are set and not empty.
    pub fn from_env() -> Option<BucketCredentials> {
        let var = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
        Some(BucketCredentials {
            access_key: var("AWS_ACCESS_KEY_ID")?,
            secret_key: var("AWS_SECRET_ACCESS_KEY")?,
        })
    }
}

/// A fetched Bucket: the directory holding its objects and the revision source-controller
/// would report for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketArtifact {
    pub dir: PathBuf,
    /// `sha256:<hex>` of the index of keys and ETags.
    pub revision: String,
}

impl BucketSource {
    /// A Bucket's `spec`, as the object holds it (JSON). Missing fields stay empty; the fetch
    /// reports what is missing.
    pub fn from_spec(spec: &serde_json::Value) -> BucketSource {
        let text = |key: &str| spec[key].as_str().map(str::to_string);
        BucketSource {
            provider: text("provider").unwrap_or_default(),
            bucket_name: text("bucketName").unwrap_or_default(),
            endpoint: text("endpoint").unwrap_or_default(),
            insecure: spec["insecure"].as_bool().unwrap_or(false),
            region: text("region").filter(|r| !r.is_empty()),
            prefix: text("prefix").filter(|p| !p.is_empty()),
            ignore: text("ignore"),
            timeout: text("timeout"),
        }
    }

    /// The URL requests go to: `https://endpoint`, `http://` when insecure.
    pub fn endpoint_url(&self) -> String {
        let scheme = if self.insecure { "http" } else { "https" };
        format!("{scheme}://{}", self.endpoint)
    }
}

impl Cache {
    /// Fetches `source` as source-controller would; `credentials` sign the requests, anonymous
    /// when `None`. Online, the bucket is listed every time and objects are downloaded only for
    /// a revision not cached yet; offline, the last online revision is used.
    pub fn fetch_bucket(
        &self,
        source: &BucketSource,
        credentials: Option<&BucketCredentials>,
        mode: Mode,
    ) -> Result<BucketArtifact, BucketError> {
        let fetch = Fetch::new(self, source, credentials)?;
        match mode {
            Mode::Offline => fetch.offline(),
            Mode::Online => fetch.online(),
        }
    }
}

/// One fetch of one Bucket.
struct Fetch<'a> {
    cache: &'a Cache,
    source: &'a BucketSource,
    credentials: Option<&'a BucketCredentials>,
    endpoint: String,
    timeout: Duration,
    /// `bucket/<sha256(...)>`.
    dir: PathBuf,
}

impl<'a> Fetch<'a> {
    fn new(
        cache: &'a Cache,
        source: &'a BucketSource,
        credentials: Option<&'a BucketCredentials>,
    ) -> Result<Self, BucketError> {
        let endpoint = source.endpoint_url();
        let invalid = |reason: String| BucketError::InvalidSpec {
            endpoint: endpoint.clone(),
            bucket: source.bucket_name.clone(),
            reason,
        };
        match source.provider.as_str() {
            "" | "generic" | "aws" => {}
            "gcp" | "azure" => {
                return Err(BucketError::UnsupportedProvider {
                    endpoint: endpoint.clone(),
                    bucket: source.bucket_name.clone(),
                    provider: source.provider.clone(),
                })
            }
            other => return Err(invalid(format!("unknown spec.provider '{other}'"))),
        }
        if source.bucket_name.is_empty() {
            return Err(invalid("spec.bucketName is empty".into()));
        }
        // minio-go takes a host and port only: a scheme or a path is an error there too.
        if source.endpoint.is_empty() || source.endpoint.contains(['/', '?', '#', '@']) {
            return Err(invalid(format!(
                "spec.endpoint {:?} must be host[:port] without a scheme or path",
                source.endpoint
            )));
        }
        let timeout = match source.timeout.as_deref() {
            None | Some("") => Duration::from_secs(60),
            Some(text) => parse_duration(text)
                .ok_or_else(|| invalid(format!("spec.timeout {text:?} is not a duration")))?,
        };
        let identity = format!(
            "{endpoint}\n{}\n{}\n{}",
            source.bucket_name,
            source.prefix.as_deref().unwrap_or(""),
            credentials.map(|c| c.access_key.as_str()).unwrap_or("")
        );
        Ok(Fetch {
            dir: cache
                .dir()
                .join("bucket")
                .join(sha256_hex(identity.as_bytes())),
            cache,
            source,
            credentials,
            endpoint,
            timeout,
        })
    }

    fn tree_dir(&self, revision: &str) -> PathBuf {
        self.dir
            .join(revision.strip_prefix("sha256:").unwrap_or(revision))
    }

    fn record_path(&self) -> PathBuf {
        self.dir.join(crate::manage::REFS_DIR).join("last")
    }

    fn cached(&self, revision: &str) -> Option<BucketArtifact> {
        let dir = self.tree_dir(revision);
        if !dir.is_dir() {
            return None;
        }
        crate::manage::touch(&dir);
        Some(BucketArtifact {
            dir,
            revision: revision.to_owned(),
        })
    }

    fn offline(&self) -> Result<BucketArtifact, BucketError> {
        let not_cached = || BucketError::NotCached {
            endpoint: self.endpoint.clone(),
            bucket: self.source.bucket_name.clone(),
            cache: self.cache.dir().to_owned(),
        };
        let record = fs::read_to_string(self.record_path()).map_err(|_| not_cached())?;
        let revision = record.lines().next().ok_or_else(not_cached)?;
        self.cached(revision).ok_or_else(not_cached)
    }

    fn online(&self) -> Result<BucketArtifact, BucketError> {
        let mut client = S3::new(
            self.endpoint.clone(),
            self.source.bucket_name.clone(),
            self.source
                .region
                .clone()
                .unwrap_or_else(|| "us-east-1".into()),
            self.credentials.map(|c| AwsCredential {
                key_id: c.access_key.clone(),
                secret_key: c.secret_key.clone(),
                token: None,
            }),
            self.timeout,
        )
        .map_err(|e| self.s3(e))?;
        // Signatures name the region: without spec.region, ask the bucket (anonymous requests
        // are not signed, so they need no region).
        if self.source.region.is_none() && self.credentials.is_some() {
            if let Some(region) = client.bucket_region() {
                client = client.with_region(region);
            }
        }
        if !client.bucket_exists().map_err(|e| self.s3(e))? {
            return Err(self.not_found());
        }
        let sourceignore = match client.get(SOURCEIGNORE).map_err(|e| self.s3(e))? {
            Some((mut response, _)) => {
                let mut data = Vec::new();
                std::io::Read::read_to_end(&mut response, &mut data).map_err(|e| {
                    self.s3(S3Error::Unreachable(format!("reading {SOURCEIGNORE}: {e}")))
                })?;
                Some(data)
            }
            None => None,
        };
        let index = self.index(&client, sourceignore.as_deref())?;
        let revision = keys::revision(&index);
        if let Some(artifact) = self.cached(&revision) {
            self.record(&revision)?;
            return Ok(artifact);
        }
        let revision = self.download(&client, index, sourceignore.as_deref())?;
        self.record(&revision)?;
        self.cached(&revision)
            .ok_or_else(|| self.not_writable(std::io::Error::other("the artifact vanished")))
    }

    /// The keys and ETags of the artifact (source-controller `fetchEtagIndex`).
    fn index(
        &self,
        client: &S3,
        sourceignore: Option<&[u8]>,
    ) -> Result<BTreeMap<String, String>, BucketError> {
        let ignore = KeyIgnore::new(sourceignore, self.source.ignore.as_deref());
        let listed = client
            .list(self.source.prefix.as_deref().unwrap_or(""))
            .map_err(|e| self.s3(e))?;
        let mut index = BTreeMap::new();
        for object in listed {
            let key = object.key;
            if key.ends_with('/') || key == SOURCEIGNORE || ignore.is_excluded(&key) {
                continue;
            }
            if !keys::is_safe(&key) {
                return Err(BucketError::UnsafeKey {
                    endpoint: self.endpoint.clone(),
                    bucket: self.source.bucket_name.clone(),
                    key,
                });
            }
            index.insert(key, object.etag);
        }
        for key in index.keys() {
            let dir = format!("{key}/");
            if let Some((below, _)) = index.range(dir.clone()..).next() {
                if below.starts_with(&dir) {
                    return Err(BucketError::KeyConflict {
                        endpoint: self.endpoint.clone(),
                        bucket: self.source.bucket_name.clone(),
                        file: key.clone(),
                        below: below.clone(),
                    });
                }
            }
        }
        Ok(index)
    }

    /// Downloads the indexed objects into a staging directory and renames it into place;
    /// returns the revision of what was downloaded (an object changed or deleted since the
    /// listing changes it, as in source-controller's `fetchIndexFiles`).
    fn download(
        &self,
        client: &S3,
        mut index: BTreeMap<String, String>,
        sourceignore: Option<&[u8]>,
    ) -> Result<String, BucketError> {
        let tmp = self.cache.dir().join("tmp");
        let work = fs::create_dir_all(&tmp)
            .and_then(|()| fs::create_dir_all(&self.dir))
            .and_then(|()| tempfile::Builder::new().prefix("bucket-").tempdir_in(&tmp))
            .map_err(|e| self.not_writable(e))?;
        let staging = work.path().join("tree");
        fs::create_dir(&staging).map_err(|e| self.not_writable(e))?;
        // The controller downloads the root .sourceignore into the artifact directory.
        if let Some(data) = sourceignore {
            write_new(&staging.join(SOURCEIGNORE), data).map_err(|e| self.not_writable(e))?;
        }
        for (key, etag) in self.download_all(client, &staging, index.keys().cloned().collect())? {
            match etag {
                None => {
                    index.remove(&key);
                }
                Some(etag) if !etag.is_empty() => {
                    index.insert(key, etag);
                }
                Some(_) => {}
            }
        }
        let revision = keys::revision(&index);
        let dest = self.tree_dir(&revision);
        if let Err(e) = fs::rename(&staging, &dest) {
            // Another process put the same revision in place first: its copy is as good.
            if !dest.is_dir() {
                return Err(self.not_writable(e));
            }
        }
        Ok(revision)
    }

    /// Downloads `keys` into `staging`, a few at a time (source-controller fetches up to 20 at
    /// once); for each key the ETag it was read with, `None` when it was deleted meanwhile.
    fn download_all(
        &self,
        client: &S3,
        staging: &Path,
        keys: Vec<String>,
    ) -> Result<Vec<(String, Option<String>)>, BucketError> {
        let queue = Mutex::new(keys.into_iter());
        let done = Mutex::new(Vec::new());
        let failed: Mutex<Option<BucketError>> = Mutex::new(None);
        std::thread::scope(|scope| {
            for _ in 0..PARALLEL_DOWNLOADS {
                scope.spawn(|| loop {
                    if lock(&failed).is_some() {
                        return;
                    }
                    let Some(key) = lock(&queue).next() else {
                        return;
                    };
                    match self.download_one(client, staging, &key) {
                        Ok(etag) => lock(&done).push((key, etag)),
                        Err(e) => {
                            lock(&failed).get_or_insert(e);
                            return;
                        }
                    }
                });
            }
        });
        if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
            return Err(e);
        }
        let done = done.into_inner().unwrap_or_else(|e| e.into_inner());
        Ok(done)
    }

    fn download_one(
        &self,
        client: &S3,
        staging: &Path,
        key: &str,
    ) -> Result<Option<String>, BucketError> {
        let Some((mut response, etag)) = client.get(key).map_err(|e| self.s3(e))? else {
            return Ok(None);
        };
        let path = staging.join(key);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| self.not_writable(e))?;
        }
        let mut file = new_file(&path).map_err(|e| self.not_writable(e))?;
        std::io::copy(&mut response, &mut file)
            .map_err(|e| self.s3(S3Error::Unreachable(format!("downloading {key:?}: {e}"))))?;
        Ok(Some(etag))
    }

    fn record(&self, revision: &str) -> Result<(), BucketError> {
        let tmp = self.cache.dir().join("tmp");
        fs::create_dir_all(&tmp)
            .and_then(|()| fs::create_dir_all(self.dir.join(crate::manage::REFS_DIR)))
            .map_err(|e| self.not_writable(e))?;
        // What `plumb cache ls` shows for the entry.
        let prefix = self.source.prefix.as_deref().unwrap_or("");
        crate::manage::record_source(
            &self.dir,
            &format!("{}/{}/{prefix}", self.endpoint, self.source.bucket_name),
        );
        let mut file = tempfile::NamedTempFile::new_in(&tmp).map_err(|e| self.not_writable(e))?;
        writeln!(file, "{revision}").map_err(|e| self.not_writable(e))?;
        file.persist(self.record_path())
            .map_err(|e| self.not_writable(e.error))?;
        Ok(())
    }

    fn not_found(&self) -> BucketError {
        BucketError::BucketNotFound {
            endpoint: self.endpoint.clone(),
            bucket: self.source.bucket_name.clone(),
        }
    }

    fn not_writable(&self, source: std::io::Error) -> BucketError {
        BucketError::CacheNotWritable {
            endpoint: self.endpoint.clone(),
            bucket: self.source.bucket_name.clone(),
            dir: self.cache.dir().to_owned(),
            source,
        }
    }

    fn s3(&self, e: S3Error) -> BucketError {
        let endpoint = self.endpoint.clone();
        let bucket = self.source.bucket_name.clone();
        match &e {
            S3Error::Unreachable(message) => BucketError::Unreachable {
                endpoint,
                bucket,
                message: message.clone(),
            },
            S3Error::Status { code, .. } if code == "NoSuchBucket" => self.not_found(),
            S3Error::Status { status: 403, .. } => BucketError::AccessDenied {
                endpoint,
                bucket,
                message: e.describe(),
            },
            S3Error::Status { code, .. }
                if matches!(
                    code.as_str(),
                    "InvalidAccessKeyId" | "SignatureDoesNotMatch" | "AccessDenied"
                ) =>
            {
                BucketError::AccessDenied {
                    endpoint,
                    bucket,
                    message: e.describe(),
                }
            }
            S3Error::Status { .. } => BucketError::Storage {
                endpoint,
                bucket,
                message: e.describe(),
            },
        }
    }
}

/// A file that did not exist (never written through something already there).
fn new_file(path: &Path) -> std::io::Result<fs::File> {
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}

fn write_new(path: &Path, data: &[u8]) -> std::io::Result<()> {
    new_file(path)?.write_all(data)
}

/// A Go duration as the Bucket CRD allows it: `([0-9]+(\.[0-9]+)?(ms|s|m|h))+`.
fn parse_duration(text: &str) -> Option<Duration> {
    let mut total = 0f64;
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let (unit, seconds) = if rest.starts_with("ms") {
            ("ms", 0.001)
        } else if rest.starts_with('s') {
            ("s", 1.0)
        } else if rest.starts_with('m') {
            ("m", 60.0)
        } else if rest.starts_with('h') {
            ("h", 3600.0)
        } else {
            return None;
        };
        total += number * seconds;
        rest = &rest[unit.len()..];
    }
    Some(Duration::from_secs_f64(total))
}

/// A poisoned lock only means another download thread panicked; the data is still whole.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flux_spec_gives_every_field() {
        let spec = serde_json::json!({
            "provider": "aws", "bucketName": "podinfo", "endpoint": "minio.example.com:9000",
            "insecure": true, "region": "eu-west-1", "prefix": "apps/", "ignore": "*.md\n",
            "timeout": "1m30s", "secretRef": {"name": "creds"}
        });
        let s = BucketSource::from_spec(&spec);
        assert_eq!(s.provider, "aws");
        assert_eq!(s.bucket_name, "podinfo");
        assert_eq!(s.endpoint_url(), "http://minio.example.com:9000");
        assert_eq!(s.region.as_deref(), Some("eu-west-1"));
        assert_eq!(s.prefix.as_deref(), Some("apps/"));
        assert_eq!(s.ignore.as_deref(), Some("*.md\n"));
        let plain = BucketSource::from_spec(
            &serde_json::json!({"bucketName": "b", "endpoint": "s3.amazonaws.com"}),
        );
        assert_eq!(plain.endpoint_url(), "https://s3.amazonaws.com");
        assert_eq!(plain.region, None);
    }

    #[test]
    fn durations_as_the_crd_allows_them() {
        assert_eq!(parse_duration("60s"), Some(Duration::from_secs(60)));
        assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("5d"), None);
    }

    #[test]
    fn credentials_never_show_the_secret() {
        let c = BucketCredentials {
            access_key: "AKIA".into(),
            secret_key: "very-secret".into(),
        };
        let shown = format!("{c:?}");
        assert!(
            shown.contains("AKIA") && !shown.contains("very-secret"),
            "{shown}"
        );
    }

    #[test]
    fn gcp_and_azure_are_reported_unsupported() {
        let cache = Cache::new("/nonexistent");
        for provider in ["gcp", "azure"] {
            let source = BucketSource {
                provider: provider.into(),
                bucket_name: "b".into(),
                endpoint: "storage.googleapis.com".into(),
                ..BucketSource::default()
            };
            let e = cache.fetch_bucket(&source, None, Mode::Online).unwrap_err();
            assert!(matches!(e, BucketError::UnsupportedProvider { .. }), "{e}");
            assert!(e.to_string().contains(provider), "{e}");
        }
        let scheme = BucketSource {
            bucket_name: "b".into(),
            endpoint: "https://minio:9000".into(),
            ..BucketSource::default()
        };
        let e = cache.fetch_bucket(&scheme, None, Mode::Online).unwrap_err();
        assert!(matches!(e, BucketError::InvalidSpec { .. }), "{e}");
    }
}
