//! Writing a commit's tree to a directory the way source-controller's artifact holds it: regular
//! files and directories only.
//!
//! source-controller archives the checkout with `filepath.Walk` and skips everything that is
//! neither a regular file nor a directory, so symlinks never reach an artifact; plumb never
//! creates them, which also means nothing written here can point outside the artifact. Entry
//! names that could climb out of it (`..`, names with a slash) are refused. The same walk, with
//! no exclusions, writes a revision of the user's own repository for `plumb diff`
//! ([`write_worktree`]), whose caller decides what becomes of its symlinks.

use std::fs;
use std::io::Write;
use std::path::Path;

use gix::bstr::ByteSlice;
use gix::objs::tree::EntryKind;

use crate::ignore::Ignore;

/// Why a tree could not be written.
#[derive(Debug)]
pub(crate) enum TreeError {
    Unsafe(String),
    Io(std::io::Error),
    Git(String),
}

impl From<std::io::Error> for TreeError {
    fn from(e: std::io::Error) -> Self {
        TreeError::Io(e)
    }
}

/// What a walk met and did not write: submodules and symlinks, each by its path relative to
/// the written root and its object id (a submodule's commit, a symlink's target blob).
#[derive(Debug, Default)]
pub(crate) struct Unwritten {
    pub(crate) submodules: Vec<(String, String)>,
    pub(crate) symlinks: Vec<(String, gix::ObjectId)>,
}

/// Writes the tree `tree_id` into `dest`, which must exist and be empty, skipping what `ignore`
/// excludes. Returns the submodules it holds (path, commit), which it does not write.
pub(crate) fn write_tree(
    repo: &gix::Repository,
    tree_id: gix::ObjectId,
    dest: &Path,
    ignore: &mut Ignore,
) -> Result<Vec<(String, String)>, TreeError> {
    let mut unwritten = Unwritten::default();
    write_dir(repo, tree_id, dest, "", Some(ignore), &mut unwritten)?;
    Ok(unwritten.submodules)
}

/// Writes the tree `tree_id` into `dest`, which must exist and be empty, as a checkout holds it:
/// every regular file (executable bit kept) and directory, no exclusions. Returns the
/// submodules and symlinks, which it does not write.
pub(crate) fn write_worktree(
    repo: &gix::Repository,
    tree_id: gix::ObjectId,
    dest: &Path,
) -> Result<Unwritten, TreeError> {
    let mut unwritten = Unwritten::default();
    write_dir(repo, tree_id, dest, "", None, &mut unwritten)?;
    Ok(unwritten)
}

fn write_dir(
    repo: &gix::Repository,
    tree_id: gix::ObjectId,
    dir: &Path,
    rel: &str,
    mut ignore: Option<&mut Ignore>,
    unwritten: &mut Unwritten,
) -> Result<(), TreeError> {
    let tree = repo
        .find_tree(tree_id)
        .map_err(|e| TreeError::Git(e.to_string()))?;
    let mut entries = Vec::new();
    for entry in tree.iter() {
        let entry = entry.map_err(|e| TreeError::Git(e.to_string()))?;
        entries.push((
            entry.filename().to_owned(),
            entry.mode().kind(),
            entry.oid().to_owned(),
        ));
    }
    // .sourceignore files apply to the directory that holds them, so read this one first.
    if let Some(ignore) = ignore.as_deref_mut() {
        if let Some((_, _, id)) = entries
            .iter()
            .find(|(name, kind, _)| name == ".sourceignore" && is_file(*kind))
        {
            let data = blob(repo, *id)?;
            ignore.add_sourceignore(rel, &data);
        }
    }
    let excluded = |ignore: &Option<&mut Ignore>, path: &str, is_dir: bool| {
        ignore
            .as_ref()
            .is_some_and(|ignore| ignore.is_excluded(path, is_dir))
    };
    for (name, kind, id) in entries {
        let name = safe_name(name.as_ref(), rel)?;
        let path = if rel.is_empty() {
            name.to_owned()
        } else {
            format!("{rel}/{name}")
        };
        match kind {
            EntryKind::Tree => {
                if excluded(&ignore, &path, true) {
                    continue;
                }
                let sub = dir.join(name);
                fs::create_dir(&sub)?;
                write_dir(repo, id, &sub, &path, ignore.as_deref_mut(), unwritten)?;
            }
            EntryKind::Blob | EntryKind::BlobExecutable => {
                if excluded(&ignore, &path, false) {
                    continue;
                }
                let data = blob(repo, id)?;
                write_file(&dir.join(name), &data, kind == EntryKind::BlobExecutable)?;
            }
            // Symlinks are not part of source-controller artifacts; a work tree's caller may
            // write them.
            EntryKind::Link => {
                if ignore.is_none() {
                    unwritten.symlinks.push((path, id));
                }
            }
            // A submodule: its commit, written only with `spec.recurseSubmodules`.
            EntryKind::Commit => {
                if !excluded(&ignore, &path, true) {
                    unwritten.submodules.push((path, id.to_hex().to_string()));
                }
            }
        }
    }
    Ok(())
}

fn is_file(kind: EntryKind) -> bool {
    matches!(kind, EntryKind::Blob | EntryKind::BlobExecutable)
}

pub(crate) fn blob(repo: &gix::Repository, id: gix::ObjectId) -> Result<Vec<u8>, TreeError> {
    let object = repo
        .find_object(id)
        .map_err(|e| TreeError::Git(e.to_string()))?;
    Ok(object.detach().data)
}

/// A tree entry name that stays inside its directory, as UTF-8 (Kubernetes manifests and
/// kustomize paths are UTF-8; a name that is not is refused rather than mangled).
fn safe_name<'a>(name: &'a gix::bstr::BStr, rel: &str) -> Result<&'a str, TreeError> {
    let shown = || {
        if rel.is_empty() {
            name.to_str_lossy().into_owned()
        } else {
            format!("{rel}/{}", name.to_str_lossy())
        }
    };
    let name = name.to_str().map_err(|_| TreeError::Unsafe(shown()))?;
    let bad = name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']);
    if bad {
        return Err(TreeError::Unsafe(shown()));
    }
    Ok(name)
}

fn write_file(path: &Path, data: &[u8], executable: bool) -> std::io::Result<()> {
    let mut options = fs::OpenOptions::new();
    // create_new: never write through anything that already exists at the path.
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if executable { 0o755 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = executable;
    let mut file = options.open(path)?;
    file.write_all(data)?;
    Ok(())
}
