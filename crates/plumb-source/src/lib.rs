//! Fetches Flux sources into plumb's cache as source-controller would produce their artifacts.
//!
//! This covers GitRepository (`spec.ref` with source-controller's precedence and revision
//! strings, its default exclusions and `.sourceignore`), OCIRepository (a small OCI
//! distribution client: tags, semver, digests checked, Docker-configuration credentials, layer
//! selection, safe extraction), Bucket (the S3 API: prefix, ignore rules, the controller's
//! revision of keys and ETags) and Helm charts: of an HTTP HelmRepository ([`HelmChartSource`]:
//! the index, source-controller's choice of version, the digest checked), of a HelmRepository
//! of `type: oci` ([`OciChartSource`]: the tags, the chart layer), of an OCIRepository a
//! `chartRef` names ([`Cache::fetch_chart_ref`]), and chart directories of a fetched tree built
//! with their dependencies as source-controller packages them ([`Cache::build_chart`]); all in
//! a content-addressed cache that concurrent runs share, with an offline mode that uses only
//! the cache. It also
//! fetches what a kustomization's remote entries name ([`remote`]): git repository specs and
//! `http(s)` files.
//! For `plumb diff`, it reads two revisions of the user's own repository ([`revision`]).
//!
//! ```no_run
//! use plumb_source::{Cache, GitRef, GitSource, Mode};
//!
//! let cache = Cache::from_env().expect("a cache directory");
//! let source = GitSource {
//!     url: "https://github.com/stefanprodan/podinfo".into(),
//!     reference: GitRef::semver(">=6.0.0 <7.0.0"),
//!     ignore: None,
//!     credentials: None,
//!     ssh: None,
//!     recurse_submodules: false,
//! };
//! let artifact = cache.fetch_git(&source, Mode::Online)?;
//! println!("{} at {}", artifact.revision, artifact.dir.display());
//! # Ok::<(), plumb_source::FetchError>(())
//! ```
//!
//! ```no_run
//! use plumb_source::{Cache, Mode, OciRef, OciSource};
//!
//! let cache = Cache::from_env().expect("a cache directory");
//! let source = OciSource {
//!     url: "oci://ghcr.io/stefanprodan/manifests/podinfo".into(),
//!     reference: OciRef::semver("6.x"),
//!     ..OciSource::default()
//! };
//! let artifact = cache.fetch_oci(&source, Mode::Online)?;
//! println!("{} at {}", artifact.revision, artifact.dir.display());
//! # Ok::<(), plumb_source::OciError>(())
//! ```
//!
//! ```no_run
//! use plumb_source::{BucketCredentials, BucketSource, Cache, Mode};
//!
//! let cache = Cache::from_env().expect("a cache directory");
//! let spec = serde_json::json!({"bucketName": "manifests", "endpoint": "minio.example.com:9000"});
//! let source = BucketSource::from_spec(&spec);
//! let artifact = cache.fetch_bucket(&source, BucketCredentials::from_env().as_ref(), Mode::Online)?;
//! println!("{} at {}", artifact.revision, artifact.dir.display());
//! # Ok::<(), plumb_source::BucketError>(())
//! ```

mod archive;
mod bucket;
mod cache;
mod chart_build;
mod docker_config;
mod error;
mod fetch_remote;
mod git;
mod helm;
mod helm_oci;
mod ignore;
mod include;
mod manage;
mod mirror;
mod oci;
mod reference;
mod registry;
pub mod remote;
pub mod revision;
mod semver_range;
mod tls;
mod tree;

pub use bucket::{BucketArtifact, BucketCredentials, BucketError, BucketSource};
pub use cache::{Artifact, Cache, Credentials, GitSource, Mode, SshKey};
pub use chart_build::{ChartBuildError, ChartDependency, ChartMetadata};
pub use error::{FetchError, OciError};
pub use fetch_remote::{file_text, RemoteTree, HTTP_TIMEOUT, MAX_HTTP_FILE_SIZE};
pub use helm::{ChartArtifact, ChartError, Digests, HelmChartSource};
pub use helm_oci::OciChartSource;
pub use include::{IncludeError, Included};
pub use manage::{Entry, Removed};
pub use mirror::{Mirror, Mirrors};
pub use oci::{LayerOperation, LayerSelector, OciArtifact, OciRef, OciSource};
pub use reference::{GitRef, DEFAULT_BRANCH};
