//! Extracting an OCI layer (tar+gzip) into a staging directory without ever writing outside it.
//!
//! source-controller untars a layer with fluxcd/pkg `tar.Untar` and skips symlinks; plumb does
//! the same for symlinks that stay inside the tree, and refuses what could reach outside it: a
//! name that is absolute or climbs with `..`, a symlink that is absolute or leaves the tree, a
//! hard link to a path outside it, device files and FIFOs. Since no symlink is ever created,
//! no later entry can be written through one.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use tar::EntryType;

/// Why a layer could not be extracted.
#[derive(Debug)]
pub(crate) enum ArchiveError {
    /// Not gzip, not tar, or truncated.
    Corrupt(String),
    /// An entry that would leave the staging directory or is not a file or directory.
    Unsafe { path: String, reason: String },
    /// Writing to the staging directory failed.
    Io(io::Error),
}

/// Extracts the tar+gzip stream `reader` into `dest`, an existing empty directory.
pub(crate) fn extract_tar_gz(reader: impl Read, dest: &Path) -> Result<(), ArchiveError> {
    let corrupt = |e: io::Error| ArchiveError::Corrupt(e.to_string());
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(reader));
    let entries = archive.entries().map_err(corrupt)?;
    let mut buf = vec![0u8; 64 * 1024];
    for entry in entries {
        let mut entry = entry.map_err(corrupt)?;
        let kind = entry.header().entry_type();
        if matches!(kind, EntryType::XGlobalHeader | EntryType::XHeader) {
            continue;
        }
        let raw = entry.path_bytes().into_owned();
        let shown = String::from_utf8_lossy(&raw).into_owned();
        let unsafe_entry = |reason: &str| ArchiveError::Unsafe {
            path: shown.clone(),
            reason: reason.to_owned(),
        };
        let components = relative_components(&raw).map_err(unsafe_entry)?;
        if components.is_empty() {
            // The archive's root directory (`./`).
            continue;
        }
        let target = components.iter().fold(dest.to_path_buf(), |p, c| p.join(c));
        match kind {
            EntryType::Directory => make_dirs(dest, &components)?,
            EntryType::Regular | EntryType::Continuous => {
                make_dirs(dest, &components[..components.len() - 1])?;
                let executable = entry
                    .header()
                    .mode()
                    .map(|m| m & 0o111 != 0)
                    .unwrap_or(false);
                let mut file = create_file(&target, executable, &shown)?;
                loop {
                    let n = entry.read(&mut buf).map_err(corrupt)?;
                    if n == 0 {
                        break;
                    }
                    file.write_all(&buf[..n]).map_err(ArchiveError::Io)?;
                }
            }
            EntryType::Symlink => {
                let link = entry
                    .link_name_bytes()
                    .map(|l| l.into_owned())
                    .unwrap_or_default();
                if link.starts_with(b"/") {
                    return Err(unsafe_entry(&format!(
                        "symlink to the absolute path {:?}",
                        String::from_utf8_lossy(&link)
                    )));
                }
                // Relative to the link's own directory.
                if climbs_out(components.len() - 1, &link) {
                    return Err(unsafe_entry(&format!(
                        "symlink to {:?}, outside the artifact",
                        String::from_utf8_lossy(&link)
                    )));
                }
                // Inside the tree: skipped, as source-controller's untar skips every symlink.
            }
            EntryType::Link => {
                let link = entry
                    .link_name_bytes()
                    .map(|l| l.into_owned())
                    .unwrap_or_default();
                let linked = relative_components(&link)
                    .ok()
                    .filter(|c| !c.is_empty())
                    .ok_or_else(|| {
                        unsafe_entry(&format!(
                            "hard link to {:?}, outside the artifact",
                            String::from_utf8_lossy(&link)
                        ))
                    })?;
                let source = linked.iter().fold(dest.to_path_buf(), |p, c| p.join(c));
                let meta = fs::symlink_metadata(&source).ok().filter(|m| m.is_file());
                let Some(meta) = meta else {
                    return Err(ArchiveError::Corrupt(format!(
                        "hard link {shown:?} to {:?}, which is not a file extracted before it",
                        String::from_utf8_lossy(&link)
                    )));
                };
                make_dirs(dest, &components[..components.len() - 1])?;
                #[cfg(unix)]
                let executable = {
                    use std::os::unix::fs::PermissionsExt;
                    meta.permissions().mode() & 0o111 != 0
                };
                #[cfg(not(unix))]
                let executable = {
                    let _ = meta;
                    false
                };
                let data = fs::read(&source).map_err(ArchiveError::Io)?;
                let mut file = create_file(&target, executable, &shown)?;
                file.write_all(&data).map_err(ArchiveError::Io)?;
            }
            EntryType::Char | EntryType::Block => return Err(unsafe_entry("a device file")),
            EntryType::Fifo => return Err(unsafe_entry("a FIFO")),
            other => {
                return Err(ArchiveError::Corrupt(format!(
                    "entry {shown:?} has the unsupported type {other:?}"
                )))
            }
        }
    }
    // Read to the end so that gzip's trailer (its CRC and length) is checked too.
    let mut rest = archive.into_inner();
    io::copy(&mut rest, &mut io::sink()).map_err(corrupt)?;
    Ok(())
}

/// The components of a tar entry name, without `.` and empty ones; an error for a name that
/// is absolute, climbs with `..`, or is not UTF-8.
fn relative_components(raw: &[u8]) -> Result<Vec<String>, &'static str> {
    let name = std::str::from_utf8(raw).map_err(|_| "a name that is not UTF-8")?;
    if name.starts_with('/') {
        return Err("an absolute path");
    }
    if name.contains(['\\', '\0']) {
        return Err("a backslash or NUL in the name");
    }
    let mut out = Vec::new();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("a path that climbs out with '..'"),
            other => out.push(other.to_owned()),
        }
    }
    Ok(out)
}

/// Whether `link`, read from a directory `depth` levels below the root, resolves above the root.
fn climbs_out(depth: usize, link: &[u8]) -> bool {
    let mut depth = depth as isize;
    for part in link.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                depth -= 1;
                if depth < 0 {
                    return true;
                }
            }
            _ => depth += 1,
        }
    }
    false
}

/// Creates each directory of `components` under `dest` that does not exist yet; a component
/// that exists as a file is an error (the archive is inconsistent).
fn make_dirs(dest: &Path, components: &[String]) -> Result<(), ArchiveError> {
    let mut dir = dest.to_path_buf();
    for component in components {
        dir.push(component);
        match fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(ArchiveError::Corrupt(format!(
                    "{} is both a file and a directory in the archive",
                    shown_rel(dest, &dir)
                )))
            }
            Err(_) => fs::create_dir(&dir).map_err(ArchiveError::Io)?,
        }
    }
    Ok(())
}

/// A new file at `path`; a file an earlier entry wrote there is replaced, as tar does.
fn create_file(path: &Path, executable: bool, shown: &str) -> Result<fs::File, ArchiveError> {
    if let Ok(meta) = fs::symlink_metadata(path) {
        if meta.is_dir() {
            return Err(ArchiveError::Corrupt(format!(
                "{shown:?} is both a directory and a file in the archive"
            )));
        }
        fs::remove_file(path).map_err(ArchiveError::Io)?;
    }
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
    options.open(path).map_err(ArchiveError::Io)
}

fn shown_rel(dest: &Path, path: &Path) -> String {
    path.strip_prefix(dest)
        .map(PathBuf::from)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_climb_or_are_absolute_are_refused() {
        assert_eq!(relative_components(b"./a/b.yaml").unwrap(), ["a", "b.yaml"]);
        assert_eq!(relative_components(b"a//b/").unwrap(), ["a", "b"]);
        assert!(relative_components(b"./").unwrap().is_empty());
        assert!(relative_components(b"../x").is_err());
        assert!(relative_components(b"a/../../x").is_err());
        assert!(relative_components(b"a/..").is_err());
        assert!(relative_components(b"/etc/passwd").is_err());
        assert!(relative_components(b"a\\b").is_err());
        assert!(relative_components(b"\xff").is_err());
    }

    #[test]
    fn symlinks_that_resolve_above_the_root_climb_out() {
        assert!(!climbs_out(1, b"../other.yaml"));
        assert!(climbs_out(1, b"../../x"));
        assert!(climbs_out(0, b"../x"));
        assert!(!climbs_out(0, b"a/../b"));
        assert!(climbs_out(0, b"a/../../b"));
    }
}
