//! Paths of a build: finding a directory's kustomization file, cleaning paths, and enforcing the
//! load restrictor. Files are read through [`crate::fs::FileSystem`].

use crate::error::KustomizeError;
use crate::fs::{Entry, FileSystem};
use std::path::{Component, Path, PathBuf};

/// The names kustomize accepts for a kustomization file, in its order of preference.
pub const KUSTOMIZATION_FILE_NAMES: [&str; 3] =
    ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// Which files a kustomization may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LoadRestrictor {
    /// Files must be in or below the kustomization's directory (kustomize's default).
    #[default]
    RootOnly,
    /// Any file may be read.
    None,
}

/// The kustomization file of `dir`, or kustomize's error when there is none or more than one.
///
/// A name that is a symlink leading out of `dir` does not count under the root-only restrictor,
/// as in kustomize (whose loader refuses to read it); one leading out of a confined file
/// system's root is an error naming it.
pub fn find_kustomization(
    fs: &FileSystem,
    restrictor: LoadRestrictor,
    dir: &Path,
) -> Result<PathBuf, KustomizeError> {
    let dir_real = fs.resolve(dir)?;
    let mut found = Vec::new();
    for name in KUSTOMIZATION_FILE_NAMES {
        let path = dir.join(name);
        let Some(real) = fs.resolve(&path)? else {
            continue;
        };
        if fs.entry(&path)? == Some(Entry::Dir) {
            continue;
        }
        let escapes = match &dir_real {
            Some(d) => !real.starts_with(d),
            None => true,
        };
        if restrictor == LoadRestrictor::RootOnly && escapes {
            continue;
        }
        found.push(path);
    }
    match found.len() {
        0 => Err(KustomizeError::MissingKustomization(dir.to_path_buf())),
        1 => Ok(found.into_iter().next().unwrap_or_default()),
        _ => Err(KustomizeError::MultipleKustomizations(dir.to_path_buf())),
    }
}

/// `path` with `.` and `..` removed lexically, as Go's `filepath.Clean` does.
pub fn clean(path: &Path) -> PathBuf {
    // Never longer than the path (plus a `.`): room for all of it at once.
    let mut out = PathBuf::with_capacity(path.as_os_str().len() + 1);
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// Checks that `file` may be read by a kustomization rooted at `root`.
pub fn check_restrictor(
    restrictor: LoadRestrictor,
    root: &Path,
    file: &Path,
) -> Result<(), KustomizeError> {
    if restrictor == LoadRestrictor::None {
        return Ok(());
    }
    let root_abs = absolute(root);
    let file_abs = absolute(file);
    if file_abs.starts_with(&root_abs) {
        Ok(())
    } else {
        Err(KustomizeError::OutsideRoot {
            file: file_abs,
            root: root_abs,
        })
    }
}

/// An absolute, lexically cleaned path (symlinks resolved when the path exists).
pub fn absolute(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    clean(&joined)
}

/// Whether a resource entry names something remote (a URL or a git reference).
pub fn is_remote(entry: &str) -> bool {
    let lower = entry.to_ascii_lowercase();
    [
        "http://",
        "https://",
        "git::",
        "git@",
        "ssh://",
        "github.com/",
        "gitlab.com/",
        "bitbucket.org/",
    ]
    .iter()
    .any(|p| lower.starts_with(p))
        || lower.contains("?ref=")
        || lower.contains(".git//")
}
