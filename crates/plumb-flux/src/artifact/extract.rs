//! The Extract strategy: a `.tar.gz`/`.tgz` file of a source unpacked into the artifact as
//! fluxcd/pkg's `tar.Untar` unpacks it (source-watcher's `extractTarball`): names that are
//! empty, absolute, hold `\` or `../` are refused, symlinks and special files are an error,
//! and the archive may not unpack to more than 100 MiB.

use super::Staged;
use std::path::{Component, Path, PathBuf};

/// fluxcd/pkg `tar.DefaultMaxUntarSize`.
const MAX_UNTAR_SIZE: u64 = 100 << 20;

/// Whether source-watcher takes `path` for a tarball (by its name only).
pub fn is_tarball(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.ends_with(".tar.gz") || lower.ends_with(".tgz")
}

/// Extracts the tarball `src` (relative to `root`) into `dest` of the staged tree.
pub fn extract(root: &Path, src: &str, dest: &str, staged: &mut Staged) -> Result<(), String> {
    untar(root, src, dest, staged)
        .map_err(|e| format!("failed to extract tarball '{src}' to '{dest}': {e}"))
}

fn untar(root: &Path, src: &str, dest: &str, staged: &mut Staged) -> Result<(), String> {
    let from = root.join(src);
    let file =
        std::fs::File::open(&from).map_err(|e| format!("failed to open tarball {src:?}: {e}"))?;
    let base = staged.dir.join(dest);
    std::fs::create_dir_all(&base)
        .map_err(|e| format!("failed to create destination directory {dest:?}: {e}"))?;
    let mut reader = std::io::BufReader::new(file);
    // `gzip.NewReader` reads the header first: a file that is not gzip fails before any entry.
    let magic = std::io::BufRead::fill_buf(&mut reader).map_err(|e| format!("{src}: {e}"))?;
    if !magic.starts_with(&[0x1f, 0x8b]) {
        return Err("requires gzip-compressed body: gzip: invalid header".into());
    }
    let gz = flate2::read::GzDecoder::new(reader);
    let mut archive = tar::Archive::new(gz);
    let mut total = 0u64;
    for entry in archive.entries().map_err(|e| format!("tar error: {e}"))? {
        let mut entry = entry.map_err(|e| format!("tar error: {e}"))?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        total += entry.header().size().unwrap_or(0);
        if total > MAX_UNTAR_SIZE {
            return Err(format!(
                "tar {name:?} is bigger than max archive size of {MAX_UNTAR_SIZE} bytes"
            ));
        }
        if !valid_rel_path(&name) {
            return Err(format!("tar contained invalid name error {name:?}"));
        }
        // `..` alone or at the end passes Untar's check; it may still not leave the artifact.
        let rel = lexical(&name).ok_or_else(|| format!("entry {name:?} leaves the destination"))?;
        let to = base.join(&rel);
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            std::fs::create_dir_all(&to).map_err(|e| format!("{name}: {e}"))?;
        } else if kind.is_file() || kind == tar::EntryType::Continuous {
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(|e| format!("{name}: {e}"))?;
            }
            let mut out = std::fs::File::create(&to)
                .map_err(|e| format!("error writing to {}: {e}", to.display()))?;
            std::io::copy(&mut entry, &mut out)
                .map_err(|e| format!("error copying buffer: {e}"))?;
            let staged_path = PathBuf::from(dest).join(&rel);
            staged.origins.insert(staged_path.clone(), from.clone());
            staged.rewritten.insert(staged_path);
        } else if kind.is_symlink() {
            return Err(format!(
                "tar file entry {name} is a symlink, which is not allowed in this context"
            ));
        } else if kind.is_hard_link() {
            // Go's tar reader gives a hard link a regular mode and no content: an empty file.
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(|e| format!("{name}: {e}"))?;
            }
            std::fs::write(&to, b"")
                .map_err(|e| format!("error writing to {}: {e}", to.display()))?;
        } else if kind.is_pax_global_extensions()
            || kind.is_pax_local_extensions()
            || kind.is_gnu_longname()
        {
            continue;
        } else {
            return Err(format!(
                "tar file entry {name} contained unsupported file type"
            ));
        }
    }
    Ok(())
}

/// fluxcd/pkg `validRelPath`.
fn valid_rel_path(p: &str) -> bool {
    !(p.is_empty() || p.contains('\\') || p.starts_with('/') || p.contains("../"))
}

/// The entry's path with `.` and `..` resolved, or `None` when it leaves the destination.
fn lexical(name: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in Path::new(name).components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}
