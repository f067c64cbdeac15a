//! The S3 backend, for AWS and every S3-compatible server, through `object_store`.
//!
//! Conditional puts are `object_store`'s (`If-None-Match: *` and `If-Match`). `object_store` has
//! no conditional delete, so this backend presigns a `DELETE` with the `If-Match` header folded
//! into the signature and sends it itself.

use super::{check_key, Backend, BackendError, ETag, Object, WriteCondition};
use futures::TryStreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder, S3ConditionalPut};
use object_store::path::Path as StorePath;
use object_store::signer::{SignedUrlOptions, Signer};
use object_store::{
    ClientOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, RetryConfig,
    UpdateVersion,
};
use std::time::Duration;

/// Where an S3 store lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3Location {
    pub bucket: String,
    /// Key prefix inside the bucket, without leading or trailing `/` (may be empty).
    pub prefix: String,
    /// A custom endpoint (`http://127.0.0.1:9000`); `None` for AWS itself.
    pub endpoint: Option<String>,
    pub region: Option<String>,
}

/// An S3 bucket prefix; blocking calls over a private async runtime.
pub struct S3Backend {
    location: S3Location,
    store: AmazonS3,
    http: reqwest::Client,
    runtime: tokio::runtime::Runtime,
}

impl S3Backend {
    /// Connects with credentials from the usual `AWS_*` environment variables.
    pub fn new(location: S3Location) -> Result<Self, BackendError> {
        // reqwest is built without a default TLS provider so that aws-lc stays out of the build.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = AmazonS3Builder::from_env()
            .with_bucket_name(&location.bucket)
            .with_conditional_put(S3ConditionalPut::ETagMatch)
            .with_client_options(
                ClientOptions::new()
                    .with_timeout(Duration::from_secs(30))
                    .with_connect_timeout(Duration::from_secs(10)),
            )
            .with_retry(RetryConfig {
                max_retries: 3,
                retry_timeout: Duration::from_secs(60),
                ..RetryConfig::default()
            });
        if let Some(region) = &location.region {
            builder = builder.with_region(region);
        }
        if let Some(endpoint) = &location.endpoint {
            // Without credentials object_store asks the cloud's instance-metadata address for
            // some, which a server at a custom endpoint never takes: say what is missing.
            if !has_credentials() {
                return Err(BackendError::Config(format!(
                    "s3://{} (endpoint {endpoint}): no credentials for the server at {endpoint}: \
                     set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
                    location.bucket
                )));
            }
            builder = builder
                .with_endpoint(endpoint)
                .with_allow_http(endpoint.starts_with("http://"))
                .with_virtual_hosted_style_request(false);
        }
        let store = builder
            .build()
            .map_err(|e| BackendError::Config(format!("s3://{}: {e}", location.bucket)))?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| BackendError::Config(format!("HTTP client: {e}")))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| BackendError::Config(format!("async runtime: {e}")))?;
        Ok(Self {
            location,
            store,
            http,
            runtime,
        })
    }

    fn path(&self, key: &str) -> Result<StorePath, BackendError> {
        check_key(key)?;
        let full = if self.location.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}/{key}", self.location.prefix)
        };
        StorePath::parse(&full).map_err(|e| BackendError::Config(format!("{key}: {e}")))
    }

    fn relative<'a>(&self, full: &'a str) -> &'a str {
        if self.location.prefix.is_empty() {
            full
        } else {
            full.strip_prefix(&self.location.prefix)
                .and_then(|rest| rest.strip_prefix('/'))
                .unwrap_or(full)
        }
    }
}

/// Whether the environment names credentials object_store reads (static keys, a web identity
/// token, a container credentials URL), rather than leaving it to the instance metadata.
fn has_credentials() -> bool {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    set("AWS_ACCESS_KEY_ID")
        || set("AWS_WEB_IDENTITY_TOKEN_FILE")
        || set("AWS_CONTAINER_CREDENTIALS_FULL_URI")
        || set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
}

fn map_error(key: &str, e: object_store::Error) -> BackendError {
    match e {
        object_store::Error::AlreadyExists { .. } => BackendError::AlreadyExists {
            key: key.to_string(),
        },
        object_store::Error::Precondition { .. } => BackendError::PreconditionFailed {
            key: key.to_string(),
        },
        object_store::Error::NotFound { .. } => BackendError::NotFound {
            key: key.to_string(),
        },
        other => BackendError::io(key, other),
    }
}

impl Backend for S3Backend {
    fn describe(&self) -> String {
        let mut s = format!("s3://{}", self.location.bucket);
        if !self.location.prefix.is_empty() {
            s.push('/');
            s.push_str(&self.location.prefix);
        }
        if let Some(endpoint) = &self.location.endpoint {
            s.push_str(&format!(" (endpoint {endpoint})"));
        }
        s
    }

    fn get(&self, key: &str) -> Result<Option<Object>, BackendError> {
        let path = self.path(key)?;
        self.runtime.block_on(async {
            let result = match self.store.get(&path).await {
                Ok(r) => r,
                Err(object_store::Error::NotFound { .. }) => return Ok(None),
                Err(e) => return Err(map_error(key, e)),
            };
            let etag = result
                .meta
                .e_tag
                .clone()
                .ok_or_else(|| BackendError::io(key, "the server sent no ETag"))?;
            let data = result.bytes().await.map_err(|e| map_error(key, e))?;
            Ok(Some(Object {
                data: data.to_vec(),
                etag: ETag(etag),
            }))
        })
    }

    fn put(
        &self,
        key: &str,
        data: &[u8],
        condition: &WriteCondition,
    ) -> Result<ETag, BackendError> {
        let path = self.path(key)?;
        let mode = match condition {
            WriteCondition::Create => PutMode::Create,
            WriteCondition::Match(etag) => PutMode::Update(UpdateVersion {
                e_tag: Some(etag.0.clone()),
                version: None,
            }),
        };
        let opts = PutOptions {
            mode,
            ..PutOptions::default()
        };
        let payload = PutPayload::from(data.to_vec());
        self.runtime.block_on(async {
            let result = self
                .store
                .put_opts(&path, payload, opts)
                .await
                .map_err(|e| map_error(key, e))?;
            result
                .e_tag
                .map(ETag)
                .ok_or_else(|| BackendError::io(key, "the server sent no ETag"))
        })
    }

    fn delete_if_match(&self, key: &str, etag: &ETag) -> Result<(), BackendError> {
        let path = self.path(key)?;
        self.runtime.block_on(async {
            let mut options = SignedUrlOptions::default();
            let value = reqwest::header::HeaderValue::from_str(&etag.0)
                .map_err(|e| BackendError::io(key, format!("ETag {etag}: {e}")))?;
            options
                .signed_headers
                .insert(reqwest::header::IF_MATCH, value.clone());
            let url = self
                .store
                .signed_url_opts(
                    reqwest::Method::DELETE,
                    &path,
                    Duration::from_secs(300),
                    &options,
                )
                .await
                .map_err(|e| map_error(key, e))?;
            let response = self
                .http
                .delete(url)
                .header(reqwest::header::IF_MATCH, value)
                .send()
                .await
                .map_err(|e| BackendError::io(key, e))?;
            let status = response.status();
            match status.as_u16() {
                200..=299 => Ok(()),
                404 => Err(BackendError::NotFound {
                    key: key.to_string(),
                }),
                412 => Err(BackendError::PreconditionFailed {
                    key: key.to_string(),
                }),
                _ => {
                    let body = response.text().await.unwrap_or_default();
                    Err(BackendError::io(
                        key,
                        format!("conditional DELETE answered {status}: {}", body.trim()),
                    ))
                }
            }
        })
    }

    fn delete(&self, key: &str) -> Result<(), BackendError> {
        let path = self.path(key)?;
        self.runtime.block_on(async {
            match self.store.delete(&path).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(map_error(key, e)),
            }
        })
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>, BackendError> {
        // List the enclosing "directory" and filter: object_store lists by whole path segments.
        let dir = match prefix.rfind('/') {
            Some(i) => &prefix[..i],
            None => "",
        };
        let base = if dir.is_empty() {
            if self.location.prefix.is_empty() {
                None
            } else {
                Some(StorePath::from(self.location.prefix.as_str()))
            }
        } else {
            Some(self.path(dir)?)
        };
        let metas: Vec<_> = self.runtime.block_on(async {
            self.store
                .list(base.as_ref())
                .try_collect()
                .await
                .map_err(|e| map_error(prefix, e))
        })?;
        let mut keys: Vec<String> = metas
            .iter()
            .map(|m| self.relative(m.location.as_ref()).to_string())
            .filter(|k| k.starts_with(prefix))
            .collect();
        keys.sort();
        Ok(keys)
    }
}
