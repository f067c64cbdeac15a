//! Remote entries of a kustomization (`resources:`, `bases:`, `components:`): git repository
//! specs and `http(s)` files, fetched by a [`Remote`] the caller provides, so that this crate
//! stays free of network clients.
//!
//! Without one, remote entries are refused ([`crate::KustomizeError::Remote`]). With one, a
//! repository is built as a kustomization inside its own confined file system rooted at the
//! fetched tree (as kustomize builds a clone: nothing outside it is read, whatever the load
//! restrictor of the build), and a file's text is read as resources.

use std::fmt;
use std::path::PathBuf;

/// What an entry names, by kustomize's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteKind {
    /// A local path (kustomize's git URL parser refuses it).
    Local,
    /// A git repository spec (`github.com/org/repo//dir?ref=v1`, `git@host:org/repo.git`, ...).
    Repository,
    /// An `http(s)` URL, which kustomize fetches as a file first; `repository` says whether it
    /// is also a git repository spec, tried when it does not read as a file.
    Http { repository: bool },
}

/// A repository fetched for a remote base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteTree {
    /// The repository's tree: the root of the file system the base is built in.
    pub root: PathBuf,
    /// The kustomization's directory in it.
    pub dir: PathBuf,
}

/// Why a remote entry could not be had: a message that names the URL fetched and why, and
/// whether the entry itself is wrong (no such ref, a 404) rather than the fetch impossible here
/// (unreachable, not in the cache offline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteFailure {
    pub message: String,
    pub broken: bool,
}

impl From<String> for RemoteFailure {
    /// A fetch that could not be done here.
    fn from(message: String) -> RemoteFailure {
        RemoteFailure {
            message,
            broken: false,
        }
    }
}

/// Fetches what remote entries name.
pub trait Remote: Send + Sync + std::panic::RefUnwindSafe + fmt::Debug {
    /// What `entry` names.
    fn classify(&self, entry: &str) -> RemoteKind;
    /// The tree of a repository entry ([`RemoteKind::Repository`] or an `http(s)` one).
    fn directory(&self, entry: &str) -> Result<RemoteTree, RemoteFailure>;
    /// The text of an `http(s)` file entry.
    fn file(&self, url: &str) -> Result<String, RemoteFailure>;
    /// The bytes of an `http(s)` file a generator names, which need not be text (kustomize puts
    /// them under `binaryData`).
    fn file_bytes(&self, url: &str) -> Result<Vec<u8>, RemoteFailure> {
        self.file(url).map(String::into_bytes)
    }
}

/// Threads reading remote entries ahead of the builds that list them ([`prefetch`]).
#[must_use = "dropping the handle leaves the threads running; join or forget it"]
pub struct Prefetch {
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Prefetch {
    /// Waits until every entry has been read.
    pub fn join(self) {
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// How many threads read entries ahead at most: each mostly waits on the network.
const PREFETCH_THREADS: usize = 8;

/// Reads `entries` through `remote` on threads of their own, as a build reads each (an `http(s)`
/// entry as a file, then as a repository when it is one and the file could not be had), so that
/// the builds listing them, which ask `remote` for the same entries, find them read or being
/// read instead of each waiting on the network in turn. A [`Remote`] that reads each entry once
/// per run and makes the others wait for it is what makes this pay; what is read here is only
/// what the builds would read. Local entries are skipped.
pub fn prefetch(remote: std::sync::Arc<dyn Remote>, entries: Vec<String>) -> Prefetch {
    let entries: Vec<String> = entries
        .into_iter()
        .filter(|e| remote.classify(e) != RemoteKind::Local)
        .collect();
    let count = entries.len().min(PREFETCH_THREADS);
    let mut shares: Vec<Vec<String>> = vec![Vec::new(); count];
    for (i, entry) in entries.into_iter().enumerate() {
        shares[i % count].push(entry);
    }
    let threads = shares
        .into_iter()
        .filter_map(|share| {
            let remote = remote.clone();
            std::thread::Builder::new()
                .name("plumb-prefetch".into())
                .spawn(move || share.iter().for_each(|e| read_ahead(&*remote, e)))
                .ok()
        })
        .collect();
    Prefetch { threads }
}

fn read_ahead(remote: &dyn Remote, entry: &str) {
    match remote.classify(entry) {
        RemoteKind::Local => {}
        RemoteKind::Repository => {
            let _ = remote.directory(entry);
        }
        RemoteKind::Http { repository } => {
            if remote.file(entry).is_err() && repository {
                let _ = remote.directory(entry);
            }
        }
    }
}
