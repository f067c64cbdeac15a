//! Two revisions of the user's own repository for `plumb diff`: finding the git repository that
//! holds a directory, resolving revision specs as `git rev-parse` does, choosing the default base
//! (the merge base of HEAD with its upstream or the main branch), and writing a revision's tree.
//!
//! Everything is read from the object database with gix: no `git` program, no checkout, no
//! extra work tree, nothing written inside the repository.
//!
//! ```no_run
//! use std::path::Path;
//! use plumb_source::revision::Checkout;
//!
//! let checkout = Checkout::open(Path::new("clusters/home"))?;
//! let base = checkout.default_base()?;
//! let dir = tempfile::tempdir().expect("a temporary directory");
//! checkout.export(&base, dir.path())?;
//! println!("{} at {} ({})", base.label, base.short, base.summary);
//! # Ok::<(), plumb_source::revision::RevisionError>(())
//! ```

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;
use gix::discover::upwards::Error as Upwards;
use gix::remote::Direction;

use crate::tree::{self, TreeError};

/// The branches `plumb diff` compares with when HEAD has no upstream and the remote names no
/// default branch, in order of preference.
const DEFAULT_BRANCHES: &[&str] = &["main", "master"];

/// A git repository holding a directory of a Flux repository (which may be a subdirectory of
/// the work tree).
pub struct Checkout {
    repo: gix::Repository,
    root: PathBuf,
    subdir: String,
}

/// A commit of the repository, with how it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision {
    /// The full hex commit id.
    pub id: String,
    /// The shortest unambiguous abbreviation of `id` (at least 7 hex digits), as git shows it.
    pub short: String,
    /// The first line of the commit message.
    pub summary: String,
    /// What the user asked for (`main`, `HEAD~1`) or how it was chosen
    /// (`merge base of HEAD and origin/main`).
    pub label: String,
}

impl fmt::Display for Revision {
    /// `main (1a2b3c4)`, or the short id alone when that is what was asked for.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.id.starts_with(&self.label) {
            write!(f, "{}", self.short)
        } else {
            write!(f, "{} ({})", self.label, self.short)
        }
    }
}

/// What [`Checkout::export`] met in the tree and did not write.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Exported {
    /// Symlinks left out because their target is absolute or leaves the exported directory:
    /// (path relative to the destination, target).
    pub skipped_symlinks: Vec<(String, String)>,
    /// Submodules, which are never written: their paths relative to the destination.
    pub submodules: Vec<String>,
}

/// Why a revision of the repository could not be found or written.
#[derive(Debug, thiserror::Error)]
pub enum RevisionError {
    /// No git repository holds the directory.
    #[error(
        "{} is not inside a git repository (no .git in it or any parent directory): \
         plumb diff compares two commits of the repository that holds it",
        path.display()
    )]
    NotARepository {
        /// The directory given.
        path: PathBuf,
    },
    /// The revision spec names no commit.
    #[error(
        "unknown revision `{rev}` in {}: {detail}; name a branch, tag or commit of this \
         repository (`git log --oneline --all` lists them)",
        repo.display()
    )]
    UnknownRevision {
        /// The spec as given.
        rev: String,
        /// The repository's work tree.
        repo: PathBuf,
        /// What git found wrong with it.
        detail: String,
    },
    /// None of the default base's candidates exists.
    #[error(
        "no base revision to compare with in {}: tried {}{}; pass --base REV",
        repo.display(),
        tried.join(", "),
        if *shallow {
            " (this is a shallow clone, which may not have them: `git fetch origin main` fetches one)"
        } else {
            ""
        }
    )]
    NoBase {
        /// The repository's work tree.
        repo: PathBuf,
        /// The candidates, in order.
        tried: Vec<String>,
        /// Whether the repository is a shallow clone.
        shallow: bool,
    },
    /// A shallow clone's history stops before the merge base.
    #[error(
        "shallow clone: the merge base of HEAD and {against} is not in the history of {}; \
         fetch more (`git fetch --unshallow`) or pass --base",
        repo.display()
    )]
    Shallow {
        /// The repository's work tree.
        repo: PathBuf,
        /// The ref HEAD was compared with.
        against: String,
    },
    /// HEAD and the chosen base share no history.
    #[error(
        "HEAD and {against} have no common ancestor in {}; pass --base REV",
        repo.display()
    )]
    NoMergeBase {
        /// The repository's work tree.
        repo: PathBuf,
        /// The ref HEAD was compared with.
        against: String,
    },
    /// The directory to export is not a directory at that revision.
    #[error(
        "`{path}` is not a directory at {rev} in {}: it did not exist there or was a file; \
         pass --base-path with its path at that revision",
        repo.display()
    )]
    MissingPath {
        /// The revision, as [`Revision`] displays it.
        rev: String,
        /// The directory, relative to the work tree root.
        path: String,
        /// The repository's work tree.
        repo: PathBuf,
    },
    /// The tree holds an entry that cannot be written safely (not UTF-8, `..`, a slash).
    #[error("the tree of {rev} in {} holds `{path}`, which cannot be written safely", repo.display())]
    UnsafePath {
        /// The revision, as [`Revision`] displays it.
        rev: String,
        /// The entry, relative to the exported directory.
        path: String,
        /// The repository's work tree.
        repo: PathBuf,
    },
    /// Reading the repository failed.
    #[error("git repository {}: {detail}", repo.display())]
    Git {
        /// The repository's work tree (or the directory given, before one was found).
        repo: PathBuf,
        /// What failed.
        detail: String,
    },
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl Checkout {
    /// Discovers the repository containing `dir` as git does (a `.git` directory or file in
    /// `dir` or one of its parents). A bare repository is its own root.
    pub fn open(dir: &Path) -> Result<Checkout, RevisionError> {
        let canonical = dir.canonicalize().map_err(|source| RevisionError::Io {
            path: dir.to_owned(),
            source,
        })?;
        let git = |detail: String| RevisionError::Git {
            repo: dir.to_owned(),
            detail,
        };
        if let Err(e) = gix::discover::upwards(&canonical) {
            return Err(match e.downcast_any_ref::<Upwards>() {
                Some(
                    Upwards::NoGitRepository { .. }
                    | Upwards::NoGitRepositoryWithinCeiling { .. }
                    | Upwards::NoGitRepositoryWithinFs { .. },
                ) => RevisionError::NotARepository {
                    path: dir.to_owned(),
                },
                _ => git(error_text(&e)),
            });
        }
        let mut repo = gix::discover(&canonical).map_err(|e| git(error_text(&e)))?;
        // Merge bases walk the history; a cache keeps commits read once.
        repo.object_cache_size_if_unset(4 * 1024 * 1024);
        let top = repo.workdir().unwrap_or_else(|| repo.git_dir()).to_owned();
        let root = top.canonicalize().map_err(|source| RevisionError::Io {
            path: top.clone(),
            source,
        })?;
        let relative = canonical.strip_prefix(&root).map_err(|_| {
            git(format!(
                "{} is not inside the work tree {}",
                dir.display(),
                root.display()
            ))
        })?;
        let mut parts = Vec::new();
        for part in relative.components() {
            let part = part
                .as_os_str()
                .to_str()
                .ok_or_else(|| git(format!("{} is not a UTF-8 path", relative.display())))?;
            parts.push(part);
        }
        let subdir = parts.join("/");
        Ok(Checkout { repo, root, subdir })
    }

    /// The work tree's root directory (the repository itself when it is bare).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The opened directory relative to the work tree root, `/`-separated; `""` at the root.
    pub fn subdir(&self) -> &str {
        &self.subdir
    }

    /// Resolves a revision spec to a commit as `git rev-parse REV^{commit}` does: full or short
    /// hex ids, branches, tags (annotated tags peeled), remote-tracking branches (`origin/main`),
    /// `HEAD`, and ancestry suffixes (`HEAD~2`, `HEAD^1`).
    pub fn resolve(&self, rev: &str) -> Result<Revision, RevisionError> {
        let unknown = |detail: String| RevisionError::UnknownRevision {
            rev: rev.to_owned(),
            repo: self.root.clone(),
            detail,
        };
        let id = self
            .repo
            .rev_parse_single(rev)
            .map_err(|e| unknown(rev_parse_detail(rev, &e)))?;
        let object = id.object().map_err(|e| unknown(error_text(&e)))?;
        let kind = object.kind;
        let commit = object
            .peel_to_commit()
            .map_err(|_| unknown(format!("it names a {kind}, not a commit")))?;
        self.revision(&commit, rev.to_owned())
    }

    /// The default base of `plumb diff`: the merge base of HEAD with the first of these that
    /// exists: HEAD's upstream (`branch.<b>.remote` and `branch.<b>.merge`, mapped through the
    /// remote's fetch refspecs to its tracking branch), `refs/remotes/origin/HEAD`, `main`, then
    /// `master` (each the local branch, else `origin/<name>`).
    ///
    /// The first candidate that exists is used even when it is HEAD's own branch: on `main`
    /// with no upstream and no `origin`, the base is HEAD itself.
    pub fn default_base(&self) -> Result<Revision, RevisionError> {
        let head = self.head_id()?;
        let mut tried = Vec::new();
        let mut chosen = None;
        match self.upstream()? {
            Upstream::Detached => tried.push("the upstream of HEAD (HEAD is detached)".to_owned()),
            Upstream::None(branch) => tried.push(format!("the upstream of {branch} (none set)")),
            Upstream::Ref(branch, name) => match self.peel(&name)? {
                Some(found) => chosen = Some(found),
                None => tried.push(format!(
                    "the upstream of {branch}, {} (not fetched)",
                    short_name(&name)
                )),
            },
        }
        let mut candidates = vec!["refs/remotes/origin/HEAD".to_owned()];
        for branch in DEFAULT_BRANCHES {
            candidates.push(format!("refs/heads/{branch}"));
            candidates.push(format!("refs/remotes/origin/{branch}"));
        }
        for name in candidates {
            if chosen.is_some() {
                break;
            }
            match self.peel(&name)? {
                Some(found) => chosen = Some(found),
                None => tried.push(short_name(&name)),
            }
        }
        let shallow = self.repo.is_shallow().unwrap_or(false);
        let Some((against, base)) = chosen else {
            return Err(RevisionError::NoBase {
                repo: self.root.clone(),
                tried,
                shallow,
            });
        };
        let found = self.repo.merge_base(head, base);
        let merge_base = match found {
            Ok(Some(id)) => id.detach(),
            Ok(None) if shallow => {
                return Err(RevisionError::Shallow {
                    repo: self.root.clone(),
                    against,
                })
            }
            Ok(None) => {
                return Err(RevisionError::NoMergeBase {
                    repo: self.root.clone(),
                    against,
                })
            }
            // A walk that reaches the edge of a shallow history may fail to read a parent.
            Err(_) if shallow => {
                return Err(RevisionError::Shallow {
                    repo: self.root.clone(),
                    against,
                })
            }
            Err(e) => {
                return Err(self.git(format!(
                    "merge base of HEAD and {against}: {}",
                    error_text(&e)
                )))
            }
        };
        let commit = self
            .repo
            .find_commit(merge_base)
            .map_err(|e| self.git(error_text(&e)))?;
        self.revision(&commit, format!("merge base of HEAD and {against}"))
    }

    /// Writes the tree of `rev` at [`subdir()`](Self::subdir) into `dest`, which must exist and
    /// be empty; see [`export_path`](Self::export_path).
    pub fn export(&self, rev: &Revision, dest: &Path) -> Result<Exported, RevisionError> {
        self.export_path(rev, &self.subdir, dest)
    }

    /// Writes the tree of `rev` at `path` (relative to the work tree root, `/`-separated, `""`
    /// for the root) into `dest`, which must exist and be empty, as a checkout of `rev` would
    /// hold it: every regular file (executable bit kept) and directory, with no exclusions.
    ///
    /// A symlink is written as a symlink with the same relative target when that target stays
    /// inside the exported directory (checked on the target's text, then again on the written
    /// tree so that a chain of links cannot leave it either), so that a build of the export
    /// reads what a build of the checkout reads; any other symlink is skipped, and so is every
    /// submodule. Both are listed in the returned [`Exported`].
    ///
    /// On an error `dest` holds part of the tree: the caller discards it.
    pub fn export_path(
        &self,
        rev: &Revision,
        path: &str,
        dest: &Path,
    ) -> Result<Exported, RevisionError> {
        let id = gix::ObjectId::from_hex(rev.id.as_bytes())
            .map_err(|e| self.git(format!("commit id {}: {e}", rev.id)))?;
        let commit = self
            .repo
            .find_commit(id)
            .map_err(|e| self.git(error_text(&e)))?;
        let root_tree = commit.tree().map_err(|e| self.git(error_text(&e)))?;
        let path = path.trim_matches('/');
        let missing = || RevisionError::MissingPath {
            rev: rev.to_string(),
            path: path.to_owned(),
            repo: self.root.clone(),
        };
        let tree_id = if path.is_empty() {
            root_tree.id
        } else {
            let entry = root_tree
                .lookup_entry_by_path(path)
                .map_err(|e| self.git(error_text(&e)))?
                .ok_or_else(missing)?;
            if !entry.mode().is_tree() {
                return Err(missing());
            }
            entry.object_id()
        };
        let unwritten = tree::write_worktree(&self.repo, tree_id, dest).map_err(|e| match e {
            TreeError::Unsafe(name) => RevisionError::UnsafePath {
                rev: rev.to_string(),
                path: name,
                repo: self.root.clone(),
            },
            TreeError::Io(source) => RevisionError::Io {
                path: dest.to_owned(),
                source,
            },
            TreeError::Git(detail) => self.git(detail),
        })?;
        let mut exported = Exported {
            skipped_symlinks: Vec::new(),
            submodules: unwritten.submodules.into_iter().map(|(p, _)| p).collect(),
        };
        let mut written = Vec::new();
        for (link, blob) in unwritten.symlinks {
            let target = tree::blob(&self.repo, blob).map_err(|e| match e {
                TreeError::Git(detail) | TreeError::Unsafe(detail) => self.git(detail),
                TreeError::Io(source) => RevisionError::Io {
                    path: dest.to_owned(),
                    source,
                },
            })?;
            let target = String::from_utf8_lossy(&target).into_owned();
            if !target_stays_inside(&link, &target) || !write_symlink(&target, &dest.join(&link))? {
                exported.skipped_symlinks.push((link, target));
                continue;
            }
            written.push((link, target));
        }
        // A link whose text stays inside may still leave through another link (`a -> .`,
        // `b -> a/../x`): resolve what was written, and remove what resolves outside. A link
        // that resolves to nothing (dangling, a loop) reads nothing and stays, as in a checkout.
        let inside = dest.canonicalize().map_err(|source| RevisionError::Io {
            path: dest.to_owned(),
            source,
        })?;
        let escaping: Vec<usize> = written
            .iter()
            .enumerate()
            .filter(|(_, (link, _))| {
                dest.join(link)
                    .canonicalize()
                    .is_ok_and(|real| !real.starts_with(&inside))
            })
            .map(|(i, _)| i)
            .collect();
        for i in escaping.into_iter().rev() {
            let (link, target) = written.remove(i);
            let file = dest.join(&link);
            fs::remove_file(&file).map_err(|source| RevisionError::Io { path: file, source })?;
            exported.skipped_symlinks.push((link, target));
        }
        exported.skipped_symlinks.sort();
        Ok(exported)
    }

    fn revision(&self, commit: &gix::Commit<'_>, label: String) -> Result<Revision, RevisionError> {
        let id = commit.id();
        let hex = id.to_hex().to_string();
        let short = id
            .shorten()
            .map(|prefix| prefix.to_string())
            .unwrap_or_else(|_| hex[..7].to_owned());
        let summary = commit
            .message()
            .map_err(|e| self.git(format!("commit {hex}: {}", error_text(&e))))?
            .summary()
            .to_str_lossy()
            .into_owned();
        Ok(Revision {
            id: hex,
            short,
            summary,
            label,
        })
    }

    fn head_id(&self) -> Result<gix::ObjectId, RevisionError> {
        self.repo
            .head_id()
            .map(|id| id.detach())
            .map_err(|e| RevisionError::UnknownRevision {
                rev: "HEAD".to_owned(),
                repo: self.root.clone(),
                detail: format!("the current branch has no commit yet ({})", error_text(&e)),
            })
    }

    /// HEAD's upstream as a ref of this repository.
    fn upstream(&self) -> Result<Upstream, RevisionError> {
        let Some(head) = self
            .repo
            .head_name()
            .map_err(|e| self.git(error_text(&e)))?
        else {
            return Ok(Upstream::Detached);
        };
        let branch = head.shorten().to_str_lossy().into_owned();
        let Some(remote) = self
            .repo
            .branch_remote_name(head.shorten(), Direction::Fetch)
        else {
            return Ok(Upstream::None(branch));
        };
        // `branch.<b>.remote = .` makes another local branch the upstream.
        let name = if remote.as_bstr() == "." {
            self.repo
                .branch_remote_ref_name(head.as_ref(), Direction::Fetch)
        } else {
            self.repo
                .branch_remote_tracking_ref_name(head.as_ref(), Direction::Fetch)
        };
        match name {
            None => Ok(Upstream::None(branch)),
            Some(Ok(name)) => Ok(Upstream::Ref(
                branch,
                name.as_bstr().to_str_lossy().into_owned(),
            )),
            Some(Err(e)) => Err(self.git(format!("the upstream of {branch}: {}", error_text(&e)))),
        }
    }

    /// The commit a full ref name points to and the name to show for it (what a symbolic ref
    /// such as `origin/HEAD` points to), `None` when the ref does not exist.
    fn peel(&self, name: &str) -> Result<Option<(String, gix::ObjectId)>, RevisionError> {
        let Some(mut reference) = self
            .repo
            .try_find_reference(name)
            .map_err(|e| self.git(format!("{name}: {}", error_text(&e))))?
        else {
            return Ok(None);
        };
        let shown = match reference.target() {
            gix::refs::TargetRef::Symbolic(referent) => {
                short_name(&referent.as_bstr().to_str_lossy())
            }
            gix::refs::TargetRef::Object(_) => short_name(name),
        };
        let id = reference
            .peel_to_commit()
            .map_err(|e| self.git(format!("{name}: {}", error_text(&e))))?;
        Ok(Some((shown, id.id)))
    }

    fn git(&self, detail: String) -> RevisionError {
        RevisionError::Git {
            repo: self.root.clone(),
            detail,
        }
    }
}

/// What HEAD's upstream is.
enum Upstream {
    Detached,
    /// The branch HEAD is on has none.
    None(String),
    /// The branch and its upstream's full ref name.
    Ref(String, String),
}

/// `origin/main` for `refs/remotes/origin/main`, `main` for `refs/heads/main`.
fn short_name(name: &str) -> String {
    name.strip_prefix("refs/heads/")
        .or_else(|| name.strip_prefix("refs/remotes/"))
        .or_else(|| name.strip_prefix("refs/"))
        .unwrap_or(name)
        .to_owned()
}

/// Whether the symlink at `link` (relative to the exported root) with `target` stays inside the
/// root, on the text alone: not absolute, and no `..` climbing above the root.
fn target_stays_inside(link: &str, target: &str) -> bool {
    if target.is_empty() || target.starts_with('/') || target.contains(['\\', '\0']) {
        return false;
    }
    let mut depth: Vec<&str> = link.split('/').collect();
    depth.pop();
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if depth.pop().is_none() {
                    return false;
                }
            }
            name => depth.push(name),
        }
    }
    true
}

/// Creates the symlink; `false` where the platform has none to create.
fn write_symlink(target: &str, path: &Path) -> Result<bool, RevisionError> {
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(target, path).map_err(|source| RevisionError::Io {
            path: path.to_owned(),
            source,
        })?;
        Ok(true)
    }
    #[cfg(not(unix))]
    {
        let _ = (target, path);
        Ok(false)
    }
}

/// Why `rev` resolves to no single commit, in gix's words without its parser's frames
/// (`couldn't parse revision`, `delegate.traverse(...) failed`): the first frame that says
/// what is missing.
fn rev_parse_detail(rev: &str, e: &gix::Error) -> String {
    if rev.contains("..") {
        return "a range names two commits; name one".to_owned();
    }
    e.iter_errors()
        .map(|cause| cause.to_string())
        .find(|text| !text.starts_with("couldn't parse revision") && !text.starts_with("delegate."))
        .unwrap_or_else(|| error_text(e))
}

/// A gix error with its causes, on one line: gix puts what went wrong in the innermost one.
fn error_text(e: &gix::Error) -> String {
    let mut text = String::new();
    for cause in e.iter_errors() {
        let cause = cause.to_string();
        if text.contains(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_inside_and_outside() {
        assert!(target_stays_inside("a/link", "file.yaml"));
        assert!(target_stays_inside("a/link", "../b/file.yaml"));
        assert!(target_stays_inside("a/b/link", "./../../c"));
        assert!(!target_stays_inside("link", "../outside"));
        assert!(!target_stays_inside("a/link", "../../outside"));
        assert!(!target_stays_inside("a/link", "/etc/passwd"));
        assert!(!target_stays_inside("a/link", ""));
    }

    #[test]
    fn short_names() {
        assert_eq!(short_name("refs/remotes/origin/main"), "origin/main");
        assert_eq!(short_name("refs/heads/main"), "main");
        assert_eq!(short_name("refs/tags/v1"), "tags/v1");
    }
}
