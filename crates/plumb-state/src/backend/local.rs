//! The directory backend: the same guarantees as a conditional-write object store, from POSIX
//! primitives.
//!
//! Create-if-absent is a hard link of a fully written, fsynced temporary file (`link` fails if
//! the name exists, so a reader never sees a half-written object). Update-if-match and
//! delete-if-match hold an exclusive `flock` on a per-object side file while they compare and
//! rename; the kernel drops that lock when a process dies, so a killed writer never wedges a key.
//! ETags are content hashes: two writes of identical bytes share one, which the state layout
//! never produces because every HEAD names a new serial.

use super::{check_key, Backend, BackendError, ETag, Object, WriteCondition};
use sha2::{Digest, Sha256};
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Objects as files under a root directory.
pub struct LocalBackend {
    root: PathBuf,
}

impl LocalBackend {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, key: &str) -> Result<PathBuf, BackendError> {
        check_key(key)?;
        if key
            .split('/')
            .any(|part| part.starts_with(".tmp-") || part.ends_with(".cas"))
        {
            return Err(BackendError::Config(format!(
                "invalid object key {key:?}: reserved name"
            )));
        }
        Ok(key
            .split('/')
            .fold(self.root.clone(), |p, part| p.join(part)))
    }

    fn read(&self, key: &str, path: &Path) -> Result<Option<Object>, BackendError> {
        match fs::read(path) {
            Ok(data) => Ok(Some(Object {
                etag: etag_of(&data),
                data,
            })),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(BackendError::io(key, e)),
        }
    }

    /// Takes the exclusive compare-and-swap lock of the object at `path`.
    fn cas_lock(&self, key: &str, path: &Path) -> Result<File, BackendError> {
        let dir = parent(path);
        fs::create_dir_all(dir).map_err(|e| BackendError::io(key, e))?;
        let lock_path = dir.join(format!(".{}.cas", file_name(path)));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| BackendError::io(key, format!("{}: {e}", lock_path.display())))?;
        file.lock().map_err(|e| BackendError::io(key, e))?;
        Ok(file)
    }
}

fn etag_of(data: &[u8]) -> ETag {
    let digest = Sha256::digest(data);
    ETag(format!("\"{}\"", hex(&digest[..16])))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn parent(path: &Path) -> &Path {
    path.parent().unwrap_or_else(|| Path::new("."))
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Writes `data` to a new temporary file beside `path` and fsyncs it.
fn write_temp(key: &str, path: &Path, data: &[u8]) -> Result<PathBuf, BackendError> {
    let dir = parent(path);
    fs::create_dir_all(dir).map_err(|e| BackendError::io(key, e))?;
    for _ in 0..16 {
        let tmp = dir.join(format!(
            ".tmp-{}-{}",
            std::process::id(),
            hex(&rand::random::<[u8; 8]>())
        ));
        let mut file = match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(BackendError::io(key, e)),
        };
        let written = file.write_all(data).and_then(|()| file.sync_all());
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(BackendError::io(key, e));
        }
        return Ok(tmp);
    }
    Err(BackendError::io(key, "could not create a temporary file"))
}

fn sync_dir(key: &str, dir: &Path) -> Result<(), BackendError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| BackendError::io(key, e))
}

impl Backend for LocalBackend {
    fn describe(&self) -> String {
        format!("file://{}", self.root.display())
    }

    fn get(&self, key: &str) -> Result<Option<Object>, BackendError> {
        let path = self.path(key)?;
        self.read(key, &path)
    }

    fn put(
        &self,
        key: &str,
        data: &[u8],
        condition: &WriteCondition,
    ) -> Result<ETag, BackendError> {
        let path = self.path(key)?;
        match condition {
            WriteCondition::Create => {
                let tmp = write_temp(key, &path, data)?;
                let linked = fs::hard_link(&tmp, &path);
                let _ = fs::remove_file(&tmp);
                match linked {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                        return Err(BackendError::AlreadyExists {
                            key: key.to_string(),
                        })
                    }
                    Err(e) => return Err(BackendError::io(key, e)),
                }
                sync_dir(key, parent(&path))?;
                Ok(etag_of(data))
            }
            WriteCondition::Match(want) => {
                let _guard = self.cas_lock(key, &path)?;
                match self.read(key, &path)? {
                    Some(current) if &current.etag == want => {}
                    _ => {
                        return Err(BackendError::PreconditionFailed {
                            key: key.to_string(),
                        })
                    }
                }
                let tmp = write_temp(key, &path, data)?;
                if let Err(e) = fs::rename(&tmp, &path) {
                    let _ = fs::remove_file(&tmp);
                    return Err(BackendError::io(key, e));
                }
                sync_dir(key, parent(&path))?;
                Ok(etag_of(data))
            }
        }
    }

    fn delete_if_match(&self, key: &str, etag: &ETag) -> Result<(), BackendError> {
        let path = self.path(key)?;
        let _guard = self.cas_lock(key, &path)?;
        match self.read(key, &path)? {
            None => Err(BackendError::NotFound {
                key: key.to_string(),
            }),
            Some(current) if &current.etag != etag => Err(BackendError::PreconditionFailed {
                key: key.to_string(),
            }),
            Some(_) => {
                fs::remove_file(&path).map_err(|e| BackendError::io(key, e))?;
                sync_dir(key, parent(&path))
            }
        }
    }

    /// Also removes the object's side file and the directories it leaves empty: this is the
    /// probe's clean-up, never used on a key another process may be comparing and swapping.
    fn delete(&self, key: &str) -> Result<(), BackendError> {
        let path = self.path(key)?;
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(BackendError::io(key, e)),
        }
        let dir = parent(&path);
        let _ = fs::remove_file(dir.join(format!(".{}.cas", file_name(&path))));
        let mut dir = dir.to_path_buf();
        while dir.starts_with(&self.root) && dir != self.root && fs::remove_dir(&dir).is_ok() {
            if !dir.pop() {
                break;
            }
        }
        sync_dir(key, &self.root).or(Ok(()))
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>, BackendError> {
        let mut keys = Vec::new();
        let mut pending = vec![(self.root.clone(), String::new())];
        while let Some((dir, key_prefix)) = pending.pop() {
            let entries = match fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(BackendError::io(prefix, format!("{}: {e}", dir.display()))),
            };
            for entry in entries {
                let entry = entry.map_err(|e| BackendError::io(prefix, e))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let key = format!("{key_prefix}{name}");
                let file_type = entry.file_type().map_err(|e| BackendError::io(&key, e))?;
                if file_type.is_dir() {
                    // Only descend where a key under `prefix` could live.
                    let as_dir = format!("{key}/");
                    if as_dir.starts_with(prefix) || prefix.starts_with(&as_dir) {
                        pending.push((entry.path(), as_dir));
                    }
                } else if !name.starts_with(".tmp-")
                    && !name.ends_with(".cas")
                    && key.starts_with(prefix)
                {
                    keys.push(key);
                }
            }
        }
        keys.sort();
        Ok(keys)
    }

    fn remove_stale_temporaries(
        &self,
        dir: &str,
        min_age: Duration,
    ) -> Result<Vec<String>, BackendError> {
        check_key(dir)?;
        let path = dir
            .split('/')
            .fold(self.root.clone(), |p, part| p.join(part));
        let entries = match fs::read_dir(&path) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(BackendError::io(dir, format!("{}: {e}", path.display()))),
        };
        let mut removed = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| BackendError::io(dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with(".tmp-") {
                continue;
            }
            let key = format!("{dir}/{name}");
            let metadata = match entry.metadata() {
                Ok(m) => m,
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(BackendError::io(&key, e)),
            };
            // A temporary file younger than `min_age` may belong to a write still under way.
            let idle = metadata
                .modified()
                .ok()
                .and_then(|t| t.elapsed().ok())
                .unwrap_or(Duration::ZERO);
            if !metadata.is_file() || idle < min_age {
                continue;
            }
            match fs::remove_file(entry.path()) {
                Ok(()) => removed.push(key),
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(BackendError::io(&key, e)),
            }
        }
        removed.sort();
        Ok(removed)
    }
}
