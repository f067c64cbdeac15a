//! What `plumb cache ls|gc|clear` sees and removes.
//!
//! Every kind of source keeps the same shape under the cache directory:
//! `<kind>/<sha256 of what it fetches>/` holds a `source` file (the URL, written at the first
//! fetch), `refs/` (the last online resolutions) and one directory per fetched revision. A
//! revision directory's modification time is when a build last used it.
//!
//! Removal never leaves half a tree where a reader may look: a tree is first renamed into
//! `tmp/`, then deleted. A concurrent build that already resolved to a tree being removed may
//! fail to read it; run `gc` when no build runs, or accept a retry.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::cache::Cache;

/// The name of the file holding an entry's URL.
pub(crate) const SOURCE_FILE: &str = "source";
/// The directory of an entry's ref resolutions.
pub(crate) const REFS_DIR: &str = "refs";
/// Where trees are staged and deleted.
pub(crate) const TMP_DIR: &str = "tmp";

/// One fetched revision of one source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `git`, `oci`, `bucket`, `http`, `chart`: the top-level directory.
    pub kind: String,
    /// The URL it was fetched from, when recorded.
    pub url: Option<String>,
    /// The revision directory's name (a commit, a digest).
    pub revision: String,
    pub dir: PathBuf,
    /// Bytes of its files.
    pub bytes: u64,
    /// When a build last used it.
    pub used: Option<SystemTime>,
}

/// What a `gc` or `clear` removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Removed {
    pub entries: Vec<Entry>,
    /// Leftovers of interrupted fetches removed from `tmp/`.
    pub staging: usize,
}

impl Removed {
    pub fn bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.bytes).sum()
    }
}

impl Cache {
    /// Every cached revision, sorted by kind, URL and revision. A cache directory that does not
    /// exist holds nothing.
    pub fn entries(&self) -> std::io::Result<Vec<Entry>> {
        let mut out = Vec::new();
        for kind in read_dir_sorted(self.dir())? {
            let name = file_name(&kind);
            if name == TMP_DIR || !kind.is_dir() {
                continue;
            }
            for source in read_dir_sorted(&kind)? {
                if !source.is_dir() {
                    continue;
                }
                let url = fs::read_to_string(source.join(SOURCE_FILE))
                    .ok()
                    .map(|u| u.trim().to_string());
                for tree in read_dir_sorted(&source)? {
                    let revision = file_name(&tree);
                    if revision == REFS_DIR || !tree.is_dir() {
                        continue;
                    }
                    out.push(Entry {
                        kind: name.clone(),
                        url: url.clone(),
                        used: fs::metadata(&tree).and_then(|m| m.modified()).ok(),
                        bytes: size(&tree),
                        revision,
                        dir: tree,
                    });
                }
            }
        }
        out.sort_by(|a, b| (&a.kind, &a.url, &a.revision).cmp(&(&b.kind, &b.url, &b.revision)));
        Ok(out)
    }

    /// Removes the revisions no build used for `older_than`, the sources left with none, and
    /// staging leftovers older than a day.
    pub fn gc(&self, older_than: Duration, now: SystemTime) -> std::io::Result<Removed> {
        let mut removed = Removed::default();
        for entry in self.entries()? {
            let age = entry
                .used
                .and_then(|t| now.duration_since(t).ok())
                .unwrap_or(Duration::MAX);
            if age >= older_than {
                self.discard(&entry.dir)?;
                // What a kind keeps beside a tree (an OCI manifest: `<digest>.manifest.json`).
                if let Some(parent) = entry.dir.parent() {
                    let prefix = format!("{}.", entry.revision);
                    for side in read_dir_sorted(parent)? {
                        if side.is_file() && file_name(&side).starts_with(&prefix) {
                            fs::remove_file(&side)?;
                        }
                    }
                }
                removed.entries.push(entry);
            }
        }
        for kind in read_dir_sorted(self.dir())? {
            if file_name(&kind) == TMP_DIR || !kind.is_dir() {
                continue;
            }
            for source in read_dir_sorted(&kind)? {
                let trees = read_dir_sorted(&source)?
                    .into_iter()
                    .filter(|t| t.is_dir() && file_name(t) != REFS_DIR)
                    .count();
                if source.is_dir() && trees == 0 {
                    self.discard(&source)?;
                }
            }
        }
        removed.staging = self.clean_staging(Duration::from_secs(24 * 3600), now)?;
        Ok(removed)
    }

    /// Removes everything the cache holds.
    pub fn clear(&self) -> std::io::Result<Removed> {
        let removed = Removed {
            entries: self.entries()?,
            staging: 0,
        };
        for kind in read_dir_sorted(self.dir())? {
            if file_name(&kind) != TMP_DIR {
                self.discard(&kind)?;
            }
        }
        let tmp = self.dir().join(TMP_DIR);
        if tmp.exists() {
            fs::remove_dir_all(&tmp)?;
        }
        Ok(removed)
    }

    /// Moves `path` out of sight into `tmp/`, then deletes it.
    fn discard(&self, path: &Path) -> std::io::Result<()> {
        let tmp = self.dir().join(TMP_DIR);
        fs::create_dir_all(&tmp)?;
        let grave = tempfile::Builder::new()
            .prefix("discard-")
            .tempdir_in(&tmp)?
            .keep();
        let target = grave.join("x");
        match fs::rename(path, &target) {
            Ok(()) => {}
            // Someone else removed it first.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                let _ = fs::remove_dir(&grave);
                return Err(e);
            }
        }
        fs::remove_dir_all(&grave)
    }

    fn clean_staging(&self, older_than: Duration, now: SystemTime) -> std::io::Result<usize> {
        let mut count = 0;
        for item in read_dir_sorted(&self.dir().join(TMP_DIR))? {
            let old = fs::symlink_metadata(&item)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .is_some_and(|age| age >= older_than);
            if old {
                if item.is_dir() {
                    fs::remove_dir_all(&item)?;
                } else {
                    fs::remove_file(&item)?;
                }
                count += 1;
            }
        }
        Ok(count)
    }
}

/// Records `url` as what the entry directory `dir` fetches, once.
pub(crate) fn record_source(dir: &Path, url: &str) {
    let path = dir.join(SOURCE_FILE);
    if !path.exists() {
        let _ = fs::write(path, format!("{url}\n"));
    }
}

/// Marks the tree at `dir` as used now (its modification time).
pub(crate) fn touch(dir: &Path) {
    if let Ok(file) = fs::File::open(dir) {
        let _ = file.set_modified(SystemTime::now());
    }
}

fn read_dir_sorted(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let read = match fs::read_dir(dir) {
        Ok(read) => read,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out: Vec<PathBuf> = read.filter_map(|e| e.ok().map(|e| e.path())).collect();
    out.sort();
    Ok(out)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Bytes of the regular files under `dir` (symlinks not followed).
fn size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(read) = fs::read_dir(&d) else {
            continue;
        };
        for entry in read.flatten() {
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(entry.path()),
                Ok(t) if t.is_file() => total += entry.metadata().map(|m| m.len()).unwrap_or(0),
                _ => {}
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(root: &Path, kind: &str, source: &str, revision: &str, url: Option<&str>) -> PathBuf {
        let dir = root.join(kind).join(source).join(revision);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("file.yaml"), "kind: ConfigMap\n").unwrap();
        fs::create_dir_all(root.join(kind).join(source).join(REFS_DIR)).unwrap();
        if let Some(url) = url {
            record_source(&root.join(kind).join(source), url);
        }
        dir
    }

    #[test]
    fn entries_gc_and_clear() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::new(tmp.path());
        assert_eq!(cache.entries().unwrap(), Vec::new());
        let old = tree(tmp.path(), "git", "aaa", "1111", Some("https://g/x"));
        fs::write(tmp.path().join("git/aaa/1111.manifest.json"), "{}").unwrap();
        let new = tree(tmp.path(), "git", "aaa", "2222", Some("https://g/x"));
        let other = tree(tmp.path(), "oci", "bbb", "sha256-ff", None);
        let entries = cache.entries().unwrap();
        let names: Vec<_> = entries
            .iter()
            .map(|e| {
                (
                    e.kind.as_str(),
                    e.url.as_deref(),
                    e.revision.as_str(),
                    e.bytes,
                )
            })
            .collect();
        assert_eq!(
            names,
            vec![
                ("git", Some("https://g/x"), "1111", 16),
                ("git", Some("https://g/x"), "2222", 16),
                ("oci", None, "sha256-ff", 16),
            ]
        );

        // 1111 and the oci tree were last used ten days ago, 2222 now.
        let now = SystemTime::now();
        let ten_days = Duration::from_secs(10 * 24 * 3600);
        for dir in [&old, &other] {
            fs::File::open(dir)
                .unwrap()
                .set_modified(now - ten_days)
                .unwrap();
        }
        touch(&new);
        fs::create_dir_all(tmp.path().join(TMP_DIR).join("git-stale")).unwrap();
        let removed = cache
            .gc(
                Duration::from_secs(7 * 24 * 3600),
                now + Duration::from_secs(2 * 24 * 3600),
            )
            .unwrap();
        let gone: Vec<_> = removed
            .entries
            .iter()
            .map(|e| e.revision.as_str())
            .collect();
        assert_eq!(gone, vec!["1111", "sha256-ff"]);
        assert_eq!(removed.staging, 1);
        assert!(!old.exists() && new.exists());
        assert!(!tmp.path().join("git/aaa/1111.manifest.json").exists());
        // The oci source has no revision left: gone with its refs.
        assert!(!tmp.path().join("oci/bbb").exists());
        assert_eq!(fs::read_dir(tmp.path().join(TMP_DIR)).unwrap().count(), 0);

        let removed = cache.clear().unwrap();
        assert_eq!(removed.entries.len(), 1);
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0);
    }
}
