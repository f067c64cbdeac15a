//! Writing a commit's tree to a directory the way source-controller's artifact holds it: regular
//! files and directories only.
//!
//! source-controller archives the checkout with `filepath.Walk` and skips everything that is
//! neither a regular file nor a directory, so symlinks never reach an artifact; plumb never
//! creates them, which also means nothing written here can point outside the artifact. Entry
//! names that could climb out of it (`..`, names with a slash) are refused.

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

/// Writes the tree `tree_id` into `dest`, which must exist and be empty, skipping what `ignore`
/// excludes. Returns the submodules it holds (path, commit), which it does not write.
pub(crate) fn write_tree(
    repo: &gix::Repository,
    tree_id: gix::ObjectId,
    dest: &Path,
    ignore: &mut Ignore,
) -> Result<Vec<(String, String)>, TreeError> {
    let mut links = Vec::new();
    write_dir(repo, tree_id, dest, "", ignore, &mut links)?;
    Ok(links)
}

fn write_dir(
    repo: &gix::Repository,
    tree_id: gix::ObjectId,
    dir: &Path,
    rel: &str,
    ignore: &mut Ignore,
    links: &mut Vec<(String, String)>,
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
    if let Some((_, _, id)) = entries
        .iter()
        .find(|(name, kind, _)| name == ".sourceignore" && is_file(*kind))
    {
        let data = blob(repo, *id)?;
        ignore.add_sourceignore(rel, &data);
    }
    for (name, kind, id) in entries {
        let name = safe_name(name.as_ref(), rel)?;
        let path = if rel.is_empty() {
            name.to_owned()
        } else {
            format!("{rel}/{name}")
        };
        match kind {
            EntryKind::Tree => {
                if ignore.is_excluded(&path, true) {
                    continue;
                }
                let sub = dir.join(name);
                fs::create_dir(&sub)?;
                write_dir(repo, id, &sub, &path, ignore, links)?;
            }
            EntryKind::Blob | EntryKind::BlobExecutable => {
                if ignore.is_excluded(&path, false) {
                    continue;
                }
                let data = blob(repo, id)?;
                write_file(&dir.join(name), &data, kind == EntryKind::BlobExecutable)?;
            }
            // Symlinks are not part of source-controller artifacts.
            EntryKind::Link => {}
            // A submodule: its commit, written only with `spec.recurseSubmodules`.
            EntryKind::Commit => {
                if !ignore.is_excluded(&path, true) {
                    links.push((path, id.to_hex().to_string()));
                }
            }
        }
    }
    Ok(())
}

fn is_file(kind: EntryKind) -> bool {
    matches!(kind, EntryKind::Blob | EntryKind::BlobExecutable)
}

fn blob(repo: &gix::Repository, id: gix::ObjectId) -> Result<Vec<u8>, TreeError> {
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
