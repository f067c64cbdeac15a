//! Fetches Flux sources into plumb's cache as source-controller would produce their artifacts.
//!
//! For now this covers GitRepository: `spec.ref` with source-controller's precedence and
//! revision strings, its default exclusions and `.sourceignore`, a content-addressed cache that
//! concurrent runs share, and an offline mode that uses only the cache.
//!
//! ```no_run
//! use plumb_source::{Cache, GitRef, GitSource, Mode};
//!
//! let cache = Cache::from_env().expect("a cache directory");
//! let source = GitSource {
//!     url: "https://github.com/stefanprodan/podinfo".into(),
//!     reference: GitRef::semver(">=6.0.0 <7.0.0"),
//!     ignore: None,
//! };
//! let artifact = cache.fetch_git(&source, Mode::Online)?;
//! println!("{} at {}", artifact.revision, artifact.dir.display());
//! # Ok::<(), plumb_source::FetchError>(())
//! ```

mod bucket;
mod cache;
mod error;
mod git;
mod ignore;
mod reference;
mod semver_range;
mod tree;

pub use bucket::{BucketArtifact, BucketCredentials, BucketError, BucketSource};
pub use cache::{Artifact, Cache, GitSource, Mode};
pub use error::FetchError;
pub use reference::{GitRef, DEFAULT_BRANCH};
