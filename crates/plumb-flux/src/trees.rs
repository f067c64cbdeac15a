//! What a build reads source trees through: one confined file system per tree, shared by
//! every Kustomization built from it, and the fetcher of remote kustomize entries (remote
//! bases and `http(s)` files), which the caller provides so that no network client is linked
//! into this crate.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::diagnostic::{self, Diagnostic};

/// The file system of each source tree a build reads, made once: each remembers the
/// directories it resolved, which every Kustomization of the tree then shares.
#[derive(Default)]
pub(crate) struct FileSystems {
    trees: Mutex<HashMap<PathBuf, plumb_kustomize::FileSystem>>,
    remote: Option<Arc<dyn plumb_kustomize::Remote>>,
    /// The canonical root of the repository being built, whose working tree stands for its
    /// GitRepository's artifact.
    repository: Option<PathBuf>,
}

impl FileSystems {
    pub(crate) fn new(
        repository: &Path,
        remote: Option<Arc<dyn plumb_kustomize::Remote>>,
    ) -> FileSystems {
        FileSystems {
            trees: Mutex::default(),
            remote,
            repository: Some(repository.to_path_buf()),
        }
    }

    /// What the tree `fs` reads is to the artifact Flux builds from: the repository's working
    /// tree, or a tree written as its source was packed.
    pub(crate) fn tree_of(&self, fs: &plumb_kustomize::FileSystem) -> crate::generate::Tree {
        match fs.root().is_some() && fs.root() == self.repository.as_deref() {
            true => crate::generate::Tree::Repository,
            false => crate::generate::Tree::Packed,
        }
    }

    /// Reads the tree at `root` through `fs` (one that already read some of its files).
    pub(crate) fn seed(&self, root: &Path, fs: plumb_kustomize::FileSystem) {
        let mut map = self.trees.lock().unwrap_or_else(PoisonError::into_inner);
        map.entry(root.to_path_buf()).or_insert(fs);
    }

    pub(crate) fn confined(&self, root: &Path) -> Result<plumb_kustomize::FileSystem, Diagnostic> {
        let mut map = self.trees.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(fs) = map.get(root) {
            return Ok(fs.clone());
        }
        let fs = plumb_kustomize::FileSystem::confined(root)
            .map_err(|e| diagnostic::from_kustomize(&e))?;
        map.insert(root.to_path_buf(), fs.clone());
        Ok(fs)
    }

    /// The kustomize options of a build inside `fs`, as kustomize-controller builds: no load
    /// restrictor (the file system confines), remote entries fetched when a fetcher is set.
    pub(crate) fn build_options(
        &self,
        fs: plumb_kustomize::FileSystem,
    ) -> plumb_kustomize::BuildOptions {
        plumb_kustomize::BuildOptions {
            load_restrictor: plumb_kustomize::LoadRestrictor::None,
            fs,
            remote: self.remote.clone(),
            ..Default::default()
        }
    }
}
