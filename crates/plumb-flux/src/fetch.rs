//! Sources that are not in the checkout (another git repository, an OCI artifact, a bucket),
//! fetched as source-controller would. plumb-flux only asks: the [`Fetcher`] is implemented
//! outside it (crate plumb-source), so that git, OCI and object-store clients stay out of the
//! build crates; without one, such sources are reported as not fetched.

use crate::model::Source;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

/// A source's tree, fetched or from the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The artifact's tree (absolute).
    pub dir: PathBuf,
    /// As source-controller reports it: `main@sha1:<commit>`, `latest@sha256:<digest>`.
    pub revision: String,
}

/// Why a source's tree cannot be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unfetched {
    /// The fetcher does not fetch this kind of source (yet): what uses it is not built.
    Unsupported(String),
    /// The fetch could not be done here (the server unreachable, offline and not cached, the
    /// cache not writable): what uses it is unavailable. The message names the source's URL.
    Failed(String),
    /// The server answered and the source is wrong (no such branch or tag, a corrupt archive,
    /// a path that would leave the artifact): source-controller would mark it not ready, and
    /// what uses it fails. The message names the source's URL.
    Broken(String),
}

/// Fetches the artifact of a source object.
pub trait Fetcher: Send + Sync + std::fmt::Debug {
    /// The tree of `source`, or why it cannot be had.
    fn fetch(&self, source: &Source) -> Result<Fetched, Unfetched>;
}

/// One source's fetch, done by the first Kustomization that needs it.
type Slot = Arc<OnceLock<Result<Fetched, Unfetched>>>;

/// Fetches each source at most once per build, however many Kustomizations use it, and
/// while other sources are fetched in parallel.
#[derive(Debug, Default)]
pub struct FetchOnce {
    results: Mutex<HashMap<String, Slot>>,
}

impl FetchOnce {
    pub fn fetch(&self, fetcher: &dyn Fetcher, source: &Source) -> Result<Fetched, Unfetched> {
        let cell = {
            let mut map = self.results.lock().unwrap_or_else(|e| e.into_inner());
            map.entry(source.id.to_string()).or_default().clone()
        };
        cell.get_or_init(|| fetcher.fetch(source)).clone()
    }
}
