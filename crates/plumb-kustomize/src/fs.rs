//! The file system a build reads through: every kustomization, resource, patch and generator
//! file is opened here. It reads only regular files, at most [`MAX_FILE_SIZE`] bytes of each,
//! and when confined to a root (a source's tree, as kustomize-controller builds inside a file
//! system rooted at the source) it refuses any path that leaves the root once symlinks are
//! resolved.

use crate::error::KustomizeError;
use plumb_yaml::Node;
use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The most plumb reads from one file: far above any manifest, and a bound on what a
/// `/dev/zero` or a runaway generated file can cost.
pub const MAX_FILE_SIZE: u64 = 64 << 20;

/// A file's YAML documents, shared.
type Documents = Arc<Vec<Node>>;

/// What the file system remembers of a file it parsed.
enum Parsed {
    /// Parsed once and not kept: keeping every document of a large repository for the whole
    /// run cost more memory than a second parse of the few files read twice costs time.
    Once,
    /// Parsed for a reader that said the file would be read again (discovery, before the
    /// build): the next read takes the documents, with nobody else holding them, so that a
    /// build that changes them need not copy them first.
    HandOver(Documents),
    /// Parsed twice: kept, and shared by every later read; `true` once a reader vouched for
    /// them ([`FileSystem::vouch`]).
    Kept(Documents, bool),
}

/// Where a build may read, and how much.
///
/// A file system reads one snapshot of the tree: what it resolved, found and read is
/// remembered (shared by its clones), so a run does not ask the kernel for every component of
/// every path, nor read a file, again. Make a new one to see a tree that changed.
#[derive(Clone)]
pub struct FileSystem {
    /// The canonical root every read must stay in or below; `None` reads anywhere (the load
    /// restrictor still applies).
    root: Option<PathBuf>,
    max_file_size: u64,
    /// Absolute, lexically clean directory paths and what they resolve to.
    resolved_dirs: Arc<Mutex<PathMap<PathBuf>>>,
    /// The YAML documents of the files parsed so far, by the path as given: a base or
    /// component that many kustomizations of a run use is parsed twice, not once per use.
    documents: Arc<Mutex<PathMap<Parsed>>>,
    /// The text of the files read so far, by the path as given: a patch or resource file that
    /// many kustomizations name is opened once.
    texts: Arc<Mutex<PathMap<Arc<str>>>>,
    /// What [`FileSystem::entry`] found at each path asked about: a component or base that
    /// many kustomizations use is looked up once, not a dozen `stat`s per use.
    entries: Arc<Mutex<PathMap<Option<Entry>>>>,
    /// What [`FileSystem::resolve`] answered for each path inside the root.
    resolved: Arc<Mutex<PathMap<Option<PathBuf>>>>,
    /// What [`FileSystem::absolute`] answered for each path: a resource's or component's
    /// address is asked for by every build that lists it.
    absolutes: Arc<Mutex<PathMap<PathBuf>>>,
    /// The bytes of the files [`FileSystem::read`] read so far (a generator's files, which
    /// every build using the generator's component reads).
    bytes: Arc<Mutex<PathMap<Arc<[u8]>>>>,
}

impl std::fmt::Debug for FileSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // What it reads, not what it remembers.
        f.debug_struct("FileSystem")
            .field("root", &self.root)
            .field("max_file_size", &self.max_file_size)
            .finish_non_exhaustive()
    }
}

impl PartialEq for FileSystem {
    fn eq(&self, other: &FileSystem) -> bool {
        self.root == other.root && self.max_file_size == other.max_file_size
    }
}

impl Eq for FileSystem {}

impl Default for FileSystem {
    fn default() -> FileSystem {
        FileSystem::unconfined()
    }
}

/// What is at a path, once symlinks are resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    File,
    Dir,
    /// A device, FIFO or socket: never read.
    Special,
}

impl FileSystem {
    /// Reads anywhere the process can (`plumb kustomize build`, where the load restrictor
    /// decides, as in kustomize).
    pub fn unconfined() -> FileSystem {
        FileSystem {
            root: None,
            max_file_size: MAX_FILE_SIZE,
            resolved_dirs: Arc::default(),
            documents: Arc::default(),
            texts: Arc::default(),
            entries: Arc::default(),
            resolved: Arc::default(),
            absolutes: Arc::default(),
            bytes: Arc::default(),
        }
    }

    /// Reads only in or below `root` (a repository or a fetched source directory).
    pub fn confined(root: &Path) -> Result<FileSystem, KustomizeError> {
        let root = root.canonicalize().map_err(|e| KustomizeError::Io {
            path: root.to_path_buf(),
            message: e.to_string(),
        })?;
        Ok(FileSystem {
            root: Some(root),
            ..FileSystem::unconfined()
        })
    }

    /// The canonical directory it is confined to, `None` when it reads anywhere.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// The same file system with another per-file cap.
    pub fn with_max_file_size(mut self, bytes: u64) -> FileSystem {
        self.max_file_size = bytes;
        self
    }

    /// Records what a walk of the tree saw, so that reading it later asks the kernel nothing
    /// more: `dirs` are directories and `files` regular files, each at a path that is its real
    /// path, as it is for a walk that started at the canonical root and went down only
    /// through directories that are not symlinks. Paths outside the root are left out.
    pub fn note_walked(&self, dirs: &[&Path], files: &[&Path]) {
        // By bytes, not components: a walk's paths are the root's followed by `/` and names.
        // A path written otherwise (`root/./x`) is left out, which costs a lookup later,
        // never a wrong answer.
        let inside = |p: &&&Path| {
            self.root.as_ref().is_none_or(|root| {
                let (root, p) = (
                    root.as_os_str().as_encoded_bytes(),
                    p.as_os_str().as_encoded_bytes(),
                );
                p.strip_prefix(root).is_some_and(|rest| {
                    rest.is_empty() || rest.starts_with(b"/") || root.ends_with(b"/")
                })
            })
        };
        {
            let mut resolved = lock(&self.resolved);
            for path in dirs.iter().chain(files).filter(inside) {
                resolved.or_insert(path, Some(path.to_path_buf()));
            }
        }
        {
            let mut resolved_dirs = lock(&self.resolved_dirs);
            for dir in dirs.iter().filter(inside) {
                resolved_dirs.or_insert(dir, dir.to_path_buf());
            }
        }
        let mut entries = lock(&self.entries);
        for dir in dirs.iter().filter(inside) {
            entries.or_insert(dir, Some(Entry::Dir));
        }
        for file in files.iter().filter(inside) {
            entries.or_insert(file, Some(Entry::File));
        }
    }

    /// `path` with every symlink resolved, refused when that leaves the root. `Ok(None)` when
    /// nothing is there (a dangling symlink included).
    pub fn resolve(&self, path: &Path) -> Result<Option<PathBuf>, KustomizeError> {
        if let Some(found) = lock(&self.resolved).get(path) {
            return Ok(found.clone());
        }
        let found = self.resolve_now(path)?;
        lock(&self.resolved).insert(path.to_path_buf(), found.clone());
        Ok(found)
    }

    fn resolve_now(&self, path: &Path) -> Result<Option<PathBuf>, KustomizeError> {
        // What the shortcut's `lstat` saw, for `entry` to reuse once the root check passed.
        let mut seen = None;
        let resolved = match self.resolve_under_known_dir(path) {
            Some(found) => Ok(found.map(|(real, entry)| {
                seen = Some(entry);
                real
            })),
            None => path.canonicalize().map(Some),
        };
        let real = match resolved {
            Ok(Some(p)) => p,
            Ok(None) => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(KustomizeError::Io {
                    path: path.to_path_buf(),
                    message: e.to_string(),
                })
            }
        };
        match &self.root {
            Some(root) if !real.starts_with(root) => Err(KustomizeError::OutsideSource {
                path: shown(path),
                real,
                root: root.clone(),
            }),
            _ => {
                if let Some(entry) = seen {
                    lock(&self.entries).or_insert(path, Some(entry));
                }
                Ok(Some(real))
            }
        }
    }

    /// [`crate::loader::absolute`]: the path with symlinks resolved when it exists (inside
    /// the root or not), else absolute and lexically clean; resolved through the directories
    /// this file system remembers.
    pub fn absolute(&self, path: &Path) -> PathBuf {
        if let Some(found) = lock(&self.absolutes).get(path) {
            return found.clone();
        }
        // Inside the root, what `resolve` found (and remembers); elsewhere, or nothing there,
        // what `canonicalize` or the lexical cleaning says.
        let found = match self.resolve(path) {
            Ok(Some(real)) => real,
            _ => match self.resolve_under_known_dir(path) {
                Some(Some((real, _))) => real,
                _ => crate::loader::absolute(path),
            },
        };
        lock(&self.absolutes).insert(path.to_path_buf(), found.clone());
        found
    }

    /// `path.canonicalize()` for an absolute path whose parent directory resolves (remembered
    /// after the first time; `..` taken as it comes, as `realpath` does, after the symlinks
    /// before it) and whose last component is a name and no symlink: the parent's
    /// real path joined with the name, at the cost of one `lstat`, with what that `lstat` found
    /// there. `Some(None)` when nothing is there; `None` when this shortcut does not apply or
    /// anything fails, for the caller to ask `canonicalize` and get its exact answer.
    fn resolve_under_known_dir(&self, path: &Path) -> Option<Option<(PathBuf, Entry)>> {
        let mut components = path.components();
        // A trailing `/` asks for a directory, which `canonicalize` checks.
        if path.as_os_str().as_encoded_bytes().ends_with(b"/")
            || components.next() != Some(Component::RootDir)
            || !components.all(|c| matches!(c, Component::Normal(_) | Component::ParentDir))
        {
            return None;
        }
        let (parent, name) = (path.parent()?, path.file_name()?);
        let real_parent = self.resolved_dir(parent)?;
        let candidate = real_parent.join(name);
        match std::fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() => None,
            Ok(meta) => {
                if meta.is_dir() {
                    self.remember_dir(path, &candidate);
                }
                Some(Some((candidate, entry_of(&meta))))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(None),
            Err(_) => None,
        }
    }

    /// The real path of the directory `dir` (absolute), remembered.
    fn resolved_dir(&self, dir: &Path) -> Option<PathBuf> {
        if let Some(real) = lock(&self.resolved_dirs).get(dir) {
            return Some(real.clone());
        }
        // Through its parent when that is known and the name is no symlink: one `lstat`
        // instead of a `readlink` per component of the path. A `..` is the real parent of the
        // directory before it (a real path has no symlink to go back through).
        let through_parent = match (dir.parent(), dir.file_name()) {
            (Some(parent), Some(name)) => self.resolved_dir(parent).and_then(|real_parent| {
                let candidate = real_parent.join(name);
                match std::fs::symlink_metadata(&candidate) {
                    Ok(meta) if meta.is_dir() => Some(candidate),
                    _ => None,
                }
            }),
            (Some(parent), None) if dir.components().next_back() == Some(Component::ParentDir) => {
                self.resolved_dir(parent)
                    .filter(|real| real.is_dir())
                    .and_then(|real| real.parent().map(Path::to_path_buf))
            }
            _ => None,
        };
        let real = match through_parent {
            Some(real) => real,
            None => dir.canonicalize().ok()?,
        };
        self.remember_dir(dir, &real);
        Some(real)
    }

    fn remember_dir(&self, dir: &Path, real: &Path) {
        lock(&self.resolved_dirs).insert(dir.to_path_buf(), real.to_path_buf());
    }

    /// What is at `path`: `Ok(None)` when nothing is, an error when it is outside the root.
    pub fn entry(&self, path: &Path) -> Result<Option<Entry>, KustomizeError> {
        if let Some(found) = lock(&self.entries).get(path) {
            return Ok(*found);
        }
        let found = self.find_entry(path)?;
        lock(&self.entries).insert(path.to_path_buf(), found);
        Ok(found)
    }

    fn find_entry(&self, path: &Path) -> Result<Option<Entry>, KustomizeError> {
        let Some(real) = self.resolve(path)? else {
            return Ok(None);
        };
        // Resolving may have seen what is there already.
        if let Some(found) = lock(&self.entries).get(path) {
            return Ok(*found);
        }
        let meta = std::fs::metadata(&real).map_err(|e| KustomizeError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Ok(Some(entry_of(&meta)))
    }

    /// Whether `path` is a directory inside the root.
    pub fn is_dir(&self, path: &Path) -> bool {
        matches!(self.entry(path), Ok(Some(Entry::Dir)))
    }

    /// Whether `path` is a regular file inside the root.
    pub fn is_file(&self, path: &Path) -> bool {
        matches!(self.entry(path), Ok(Some(Entry::File)))
    }

    /// Whether anything is at `path`, inside the root or not: the caller goes on to read it and
    /// gets the reason it may not.
    pub fn exists(&self, path: &Path) -> bool {
        // Resolved (and remembered) inside the root, as the read that follows resolves it;
        // anywhere else, asked.
        match self.resolve(path) {
            Ok(real) => real.is_some(),
            Err(_) => path.exists(),
        }
    }

    /// [`FileSystem::resolve`], with nothing there an error that names `path`.
    fn resolve_existing(&self, path: &Path) -> Result<PathBuf, KustomizeError> {
        self.resolve(path)?.ok_or_else(|| KustomizeError::Io {
            path: path.to_path_buf(),
            message: "no such file or directory".into(),
        })
    }

    /// The bytes of a regular file inside the root, at most the cap; remembered, as
    /// [`FileSystem::read_text`] is.
    pub fn read(&self, path: &Path) -> Result<Vec<u8>, KustomizeError> {
        if let Some(bytes) = lock(&self.bytes).get(path) {
            return Ok(bytes.to_vec());
        }
        let bytes = self.read_file(path)?;
        lock(&self.bytes).insert(path.to_path_buf(), Arc::from(&bytes[..]));
        Ok(bytes)
    }

    /// [`FileSystem::read`] from the disk.
    fn read_file(&self, path: &Path) -> Result<Vec<u8>, KustomizeError> {
        let real = self.resolve_existing(path)?;
        // Checked before the open: opening a FIFO blocks until something writes to it. The
        // kind is what resolving the path already saw, where it could.
        match self.entry(path)? {
            Some(Entry::Dir) => {
                return Err(KustomizeError::Io {
                    path: path.to_path_buf(),
                    message: "is a directory".into(),
                })
            }
            Some(Entry::Special) => return Err(KustomizeError::NotRegularFile(path.to_path_buf())),
            // Nothing there was refused above.
            Some(Entry::File) | None => {}
        }
        self.read_real(path, &real)
    }

    /// The bytes of the regular file at `real`, the real path of `path` (which errors name).
    fn read_real(&self, path: &Path, real: &Path) -> Result<Vec<u8>, KustomizeError> {
        let io = io_error(path);
        let mut file = std::fs::File::open(real).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if !meta.is_file() {
            return Err(KustomizeError::NotRegularFile(path.to_path_buf()));
        }
        // Read up to the cap rather than by the size the file reports: /proc files say 0. The
        // size is the first guess of the buffer, and of where the file ends: one read that
        // returns exactly that many bytes (of one more asked for) has read it all, with no
        // second read to find its end, which was one system call in five of reading a tree.
        // Any other count (a file that changed size, or says 0) goes on reading to the end.
        let size = meta.len().min(self.max_file_size);
        let mut bytes = vec![0; size as usize + 1];
        let first = read_once(&mut file, &mut bytes).map_err(io)?;
        bytes.truncate(first);
        if first as u64 != size || size == 0 {
            (&mut file)
                .take(self.max_file_size.saturating_add(1) - first as u64)
                .read_to_end(&mut bytes)
                .map_err(io)?;
        }
        if bytes.len() as u64 > self.max_file_size {
            return Err(KustomizeError::TooLarge {
                path: path.to_path_buf(),
                limit: self.max_file_size,
            });
        }
        Ok(bytes)
    }

    /// A regular file inside the root, as UTF-8 text.
    /// Remembered per file system (and its clones), as [`FileSystem::read_documents`] is.
    pub fn read_text(&self, path: &Path) -> Result<String, KustomizeError> {
        Ok(self.shared_text(path)?.to_string())
    }

    /// [`FileSystem::read_text`] without a copy of the text.
    pub fn shared_text(&self, path: &Path) -> Result<Arc<str>, KustomizeError> {
        self.remembered_text(path, || self.read_file(path))
    }

    /// [`FileSystem::shared_text`] of a file a walk of the tree listed
    /// ([`FileSystem::note_walked`]): its path is its real one and it was a regular file, so
    /// nothing is looked up before it is opened. A file that is no longer one is refused as any
    /// read refuses it.
    pub fn walked_text(&self, path: &Path) -> Result<Arc<str>, KustomizeError> {
        self.remembered_text(path, || self.read_real(path, path))
    }

    /// The text of `path` read before, else `read` of it, remembered.
    fn remembered_text(
        &self,
        path: &Path,
        read: impl FnOnce() -> Result<Vec<u8>, KustomizeError>,
    ) -> Result<Arc<str>, KustomizeError> {
        if let Some(text) = lock(&self.texts).get(path) {
            return Ok(Arc::clone(text));
        }
        let text: Arc<str> = utf8(path, read()?)?.into();
        lock(&self.texts).insert(path.to_path_buf(), Arc::clone(&text));
        Ok(text)
    }

    /// The YAML documents of a regular file inside the root; from its second read on, the
    /// documents parsed then (the tree is a snapshot: a later read would find the same text).
    /// A parse that fails is not remembered; its error comes again each time.
    pub fn read_documents(&self, path: &Path) -> Result<Arc<Vec<Node>>, KustomizeError> {
        self.documents_of(path, false).map(|(docs, _)| docs)
    }

    /// [`FileSystem::read_documents`], and whether these documents are ones kept for every
    /// reader that a reader already vouched for: the resources of a component or base that
    /// many kustomizations use are checked the first time, not at every use.
    pub fn read_documents_vouched(
        &self,
        path: &Path,
    ) -> Result<(Arc<Vec<Node>>, bool), KustomizeError> {
        self.documents_of(path, false)
    }

    /// Says that `docs`, read from `path`, passed the reader's checks: a later
    /// [`FileSystem::read_documents_vouched`] of the same kept documents says so. Documents
    /// not kept (a later read parses the file again) are not remembered.
    pub fn vouch(&self, path: &Path, docs: &Arc<Vec<Node>>) {
        if let Some(Parsed::Kept(kept, vouched)) = lock(&self.documents).get_mut(path) {
            if Arc::ptr_eq(kept, docs) {
                *vouched = true;
            }
        }
    }

    /// [`FileSystem::read_documents`], remembering the documents for the next read, which takes
    /// them: for a reader that knows the file will be read again (discovery reads the files a
    /// build reads next). A read after that one parses the file again and keeps it for all.
    pub fn read_documents_kept(&self, path: &Path) -> Result<Arc<Vec<Node>>, KustomizeError> {
        self.documents_of(path, true).map(|(docs, _)| docs)
    }

    fn documents_of(
        &self,
        path: &Path,
        keep: bool,
    ) -> Result<(Arc<Vec<Node>>, bool), KustomizeError> {
        let parsed_before = {
            let mut documents = lock(&self.documents);
            match documents.get(path) {
                Some(Parsed::Kept(docs, vouched)) => return Ok((Arc::clone(docs), *vouched)),
                Some(Parsed::HandOver(docs)) if !keep => {
                    let docs = Arc::clone(docs);
                    documents.insert(path.to_path_buf(), Parsed::Once);
                    return Ok((docs, false));
                }
                Some(Parsed::HandOver(docs)) => return Ok((Arc::clone(docs), false)),
                Some(Parsed::Once) => true,
                None => false,
            }
        };
        let text = self.shared_text(path)?;
        let docs = Arc::new(plumb_yaml::parse_source(&plumb_yaml::SourceFile::new(
            path, text,
        ))?);
        let remembered = if parsed_before {
            Parsed::Kept(Arc::clone(&docs), false)
        } else if keep {
            Parsed::HandOver(Arc::clone(&docs))
        } else {
            Parsed::Once
        };
        lock(&self.documents).insert(path.to_path_buf(), remembered);
        Ok((docs, false))
    }

    /// The names in a directory inside the root, sorted; each joined to `path` as given, so
    /// that the caller's paths stay as the user wrote them.
    pub fn read_dir(&self, path: &Path) -> Result<Vec<PathBuf>, KustomizeError> {
        let io = io_error(path);
        let real = self.resolve_existing(path)?;
        let mut names = std::fs::read_dir(real)
            .map_err(io)?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(io)?;
        names.sort();
        Ok(names.into_iter().map(|n| path.join(n)).collect())
    }
}

/// One `read` into `buf`, retried when a signal interrupted it: how many bytes it gave.
fn read_once(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match file.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// `path` absolute and lexically clean, symlinks left as they are: how an error names it.
fn shown(path: &Path) -> PathBuf {
    if path.is_absolute() {
        crate::loader::clean(path)
    } else {
        crate::loader::clean(&std::env::current_dir().unwrap_or_default().join(path))
    }
}

/// A map keyed by paths as written (their bytes: `a//b` and `a/b` are two keys, which costs
/// a cache miss, never a wrong answer), hashed cheaply: with std's `Path` hashing, which walks
/// the components, and SipHash, these lookups were 9% of a build's instructions.
struct PathMap<V>(HashMap<OsString, V, crate::local_hash::LocalHash>);

impl<V> Default for PathMap<V> {
    fn default() -> PathMap<V> {
        PathMap(HashMap::default())
    }
}

impl<V> PathMap<V> {
    fn get(&self, path: &Path) -> Option<&V> {
        self.0.get(path.as_os_str())
    }

    fn get_mut(&mut self, path: &Path) -> Option<&mut V> {
        self.0.get_mut(path.as_os_str())
    }

    fn insert(&mut self, path: PathBuf, value: V) {
        self.0.insert(path.into_os_string(), value);
    }

    fn or_insert(&mut self, path: &Path, value: V) {
        self.0.entry(path.as_os_str().to_owned()).or_insert(value);
    }
}

/// The text of the bytes read from `path`, refused as kustomize refuses a file that is not
/// UTF-8.
fn utf8(path: &Path, bytes: Vec<u8>) -> Result<String, KustomizeError> {
    String::from_utf8(bytes).map_err(|_| KustomizeError::Io {
        path: path.to_path_buf(),
        message: "stream did not contain valid UTF-8".into(),
    })
}

/// An I/O error on `path`, as the build reports it.
fn io_error(path: &Path) -> impl Fn(std::io::Error) -> KustomizeError + Copy + '_ {
    move |e| KustomizeError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// What metadata that followed no symlink says is there.
fn entry_of(meta: &std::fs::Metadata) -> Entry {
    if meta.is_dir() {
        Entry::Dir
    } else if meta.is_file() {
        Entry::File
    } else {
        Entry::Special
    }
}

/// A cache's map; one left by a thread that panicked is still right.
fn lock<T>(map: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    map.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().expect("temp dir");
        let root = tmp.path().join("repo");
        std::fs::create_dir_all(root.join("apps")).expect("mkdir");
        std::fs::create_dir_all(tmp.path().join("outside")).expect("mkdir");
        std::fs::write(root.join("apps/cm.yaml"), "kind: ConfigMap\n").expect("write");
        std::fs::write(tmp.path().join("outside/secret.yaml"), "kind: Secret\n").expect("write");
        (tmp, root)
    }

    #[test]
    fn reads_inside_the_root_and_between_its_directories() {
        let (_tmp, root) = tree();
        let fs = FileSystem::confined(&root).expect("root");
        assert_eq!(
            fs.read_text(&root.join("apps/cm.yaml")).expect("read"),
            "kind: ConfigMap\n"
        );
        let through_parent = crate::loader::clean(&root.join("apps/../apps/cm.yaml"));
        assert!(fs.read(&through_parent).is_ok());
        assert!(fs.is_dir(&root.join("apps")));
        assert_eq!(fs.read_dir(&root).expect("list"), vec![root.join("apps")]);
    }

    #[test]
    fn remembered_directories_resolve_as_canonicalize_does() {
        let (tmp, root) = tree();
        let fs = FileSystem::confined(&root).expect("root");
        std::os::unix::fs::symlink(tmp.path().join("outside"), root.join("apps/link"))
            .expect("symlink");
        std::fs::write(root.join("apps/file"), "x").expect("write");
        // Twice each: the second time the parent directory is remembered.
        for _ in 0..2 {
            let real = root.canonicalize().expect("canonical").join("apps/cm.yaml");
            assert_eq!(
                fs.resolve(&root.join("apps/cm.yaml")).expect("inside"),
                Some(real)
            );
            assert_eq!(
                fs.resolve(&root.join("apps/missing")).expect("missing"),
                None
            );
            let err = fs.resolve(&root.join("apps/link/secret.yaml"));
            assert!(
                matches!(err, Err(KustomizeError::OutsideSource { .. })),
                "{err:?}"
            );
            let err = fs.resolve(&root.join("apps/link"));
            assert!(
                matches!(err, Err(KustomizeError::OutsideSource { .. })),
                "{err:?}"
            );
            // A file's name with a trailing slash, or a path through a file, is canonicalize's
            // error, not a path.
            for bad in ["apps/file/", "apps/file/x"] {
                let path = PathBuf::from(format!("{}/{bad}", root.display()));
                assert!(fs.resolve(&path).is_err(), "{bad}");
            }
        }
    }

    #[test]
    fn parent_components_resolve_as_canonicalize_does() {
        let (_tmp, root) = tree();
        let fs = FileSystem::confined(&root).expect("root");
        std::fs::create_dir_all(root.join("base/deep/sub")).expect("mkdir");
        std::fs::write(root.join("base/deep/x.yaml"), "kind: X\n").expect("write");
        std::fs::write(root.join("apps/file"), "x").expect("write");
        // `..` after a symlink goes back from where the link leads, not from the link.
        symlink(root.join("base/deep/sub"), root.join("apps/via")).expect("symlink");
        let paths = [
            "apps/../base/deep/x.yaml",
            "apps/via/../x.yaml",
            "apps/via/../../deep/./x.yaml",
            "base/deep/sub/../../../apps/cm.yaml",
            "apps/via/../missing.yaml",
            "apps/file/../cm.yaml",
            "apps/missing/../cm.yaml",
        ];
        // Twice each: the second time every directory is remembered.
        for _ in 0..2 {
            for rel in paths {
                let path = root.join(rel);
                let expected = path.canonicalize().ok();
                match fs.resolve(&path) {
                    Ok(found) => assert_eq!(found, expected, "{rel}"),
                    Err(e) => assert!(expected.is_none(), "{rel}: {e}"),
                }
                let expected_exists = path.exists();
                assert_eq!(fs.exists(&path), expected_exists, "{rel}");
                if let Some(real) = &expected {
                    assert_eq!(&fs.absolute(&path), real, "{rel}");
                    assert_eq!(fs.is_file(&path), real.is_file(), "{rel}");
                }
            }
        }
    }

    #[test]
    fn reads_bytes_once() {
        let (_tmp, root) = tree();
        let fs = FileSystem::confined(&root).expect("root");
        let file = root.join("apps/data.bin");
        std::fs::write(&file, [0u8, 159, 146, 150]).expect("write");
        assert_eq!(fs.read(&file).expect("read"), vec![0u8, 159, 146, 150]);
        std::fs::write(&file, "changed").expect("write");
        assert_eq!(
            fs.clone().read(&file).expect("remembered"),
            vec![0u8, 159, 146, 150]
        );
        let err = fs.read(&root.join("apps")).expect_err("a directory");
        assert!(err.to_string().contains("is a directory"), "{err}");
        let err = fs.read(&root.join("apps/none.yaml")).expect_err("missing");
        assert!(err.to_string().contains("no such file"), "{err}");
    }

    #[test]
    fn what_a_walk_saw_is_not_asked_again() {
        let (_tmp, root) = tree();
        let root = root.canonicalize().expect("canonical");
        let fs = FileSystem::confined(&root).expect("root");
        // Noted as a walk saw them: believed without a look at the disk, where neither is.
        let (dir, file) = (root.join("walked"), root.join("walked/x.yaml"));
        let outside = std::env::temp_dir().join("plumb-not-walked.yaml");
        fs.note_walked(&[dir.as_path()], &[file.as_path(), outside.as_path()]);
        assert!(fs.is_dir(&dir));
        assert!(fs.is_file(&file));
        assert_eq!(fs.resolve(&file).expect("inside"), Some(file.clone()));
        // Outside the root nothing is taken on trust: it is refused as before.
        assert!(fs.resolve(&outside).is_err() || fs.resolve(&outside).expect("no").is_none());
        assert!(!fs.is_file(&outside));
        // A sibling whose name begins with the root's is outside too.
        let sibling = PathBuf::from(format!("{}-other/x.yaml", root.display()));
        fs.note_walked(&[], &[sibling.as_path()]);
        assert!(!fs.is_file(&sibling));
    }

    #[test]
    fn a_walked_file_is_read_once_and_shared_with_every_reader() {
        let (_tmp, root) = tree();
        let root = root.canonicalize().expect("canonical");
        let fs = FileSystem::confined(&root).expect("root");
        let cm = root.join("apps/cm.yaml");
        let walked = fs.walked_text(&cm).expect("reads");
        assert_eq!(&*walked, "kind: ConfigMap\n");
        assert!(Arc::ptr_eq(&walked, &fs.shared_text(&cm).expect("kept")));
        assert!(Arc::ptr_eq(&walked, &fs.walked_text(&cm).expect("kept")));
        // What is no longer a regular file is refused, as any read refuses it.
        let err = fs.walked_text(&root.join("apps")).expect_err("a directory");
        assert!(matches!(err, KustomizeError::NotRegularFile(_)), "{err}");
        let err = fs
            .walked_text(&root.join("apps/gone.yaml"))
            .expect_err("missing");
        assert!(err.to_string().contains("apps/gone.yaml"), "{err}");
    }

    #[test]
    fn documents_kept_for_the_next_read_are_handed_to_it() {
        let (_tmp, root) = tree();
        let fs = FileSystem::confined(&root).expect("root");
        let cm = root.join("apps/cm.yaml");
        let discovered = fs.read_documents_kept(&cm).expect("parses");
        let discovered_at = Arc::as_ptr(&discovered);
        drop(discovered);
        // The next read takes them: nobody else holds them, so its reader may change them.
        let taken = fs.read_documents(&cm).expect("kept");
        assert_eq!(Arc::as_ptr(&taken), discovered_at);
        assert_eq!(Arc::strong_count(&taken), 1);
        // A read after that parses the file again, and that parse is shared by the reads after.
        let again = fs.read_documents(&cm).expect("parses");
        assert!(!Arc::ptr_eq(&taken, &again));
        let shared = fs.read_documents(&cm).expect("kept");
        assert!(Arc::ptr_eq(&again, &shared));
    }

    #[test]
    fn reads_a_snapshot_each_file_once() {
        let (tmp, root) = tree();
        let fs = FileSystem::confined(&root).expect("root");
        let cm = root.join("apps/cm.yaml");
        let once = fs.read_documents(&cm).expect("parses");
        assert_eq!(once[0].str_at(&["kind"]), Some("ConfigMap"));
        // Parsed once more, then kept.
        let first = fs.read_documents(&cm).expect("parses");
        assert!(!Arc::ptr_eq(&once, &first));
        // What was read is what the file system shows, also to its clones, until a new one is
        // made: the tree changing under a build does not tear it.
        std::fs::write(&cm, "kind: Secret\n").expect("write");
        let again = fs.clone().read_documents(&cm).expect("remembered");
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(fs.read_text(&cm).expect("text"), "kind: ConfigMap\n");
        let fresh = FileSystem::confined(&root).expect("root");
        assert_eq!(fresh.read_text(&cm).expect("text"), "kind: Secret\n");
        // A parse that fails is not remembered: its error comes each time.
        let bad = root.join("apps/bad.yaml");
        std::fs::write(&bad, "a: [\n").expect("write");
        assert!(fresh.read_documents(&bad).is_err());
        assert!(fresh.read_documents(&bad).is_err());
        // A directory linked inside the root resolves to its target through its remembered
        // parent, as canonicalize resolves it.
        std::fs::create_dir_all(root.join("base")).expect("mkdir");
        std::fs::write(root.join("base/x.yaml"), "kind: X\n").expect("write");
        symlink(root.join("base"), root.join("apps/linked")).expect("symlink");
        let real = root.canonicalize().expect("canonical").join("base/x.yaml");
        for _ in 0..2 {
            assert_eq!(
                fresh
                    .resolve(&root.join("apps/linked/x.yaml"))
                    .expect("inside"),
                Some(real.clone())
            );
        }
        drop(tmp);
    }

    #[test]
    fn refuses_paths_that_leave_the_root() {
        let (tmp, root) = tree();
        let fs = FileSystem::confined(&root).expect("root");
        let outside = tmp.path().join("outside/secret.yaml");
        let lexical = crate::loader::clean(&root.join("../outside/secret.yaml"));
        for path in [&outside, &lexical, &PathBuf::from("/proc/self/environ")] {
            let err = fs.read(path).expect_err("outside");
            assert!(matches!(err, KustomizeError::OutsideSource { .. }), "{err}");
            assert!(err.to_string().contains("is not in or below"), "{err}");
        }
        assert!(!fs.is_dir(&tmp.path().join("outside")));
        assert!(fs.read_dir(&tmp.path().join("outside")).is_err());
    }

    #[test]
    fn resolves_symlinks_before_checking_the_root() {
        let (tmp, root) = tree();
        symlink(
            tmp.path().join("outside/secret.yaml"),
            root.join("link.yaml"),
        )
        .expect("link");
        symlink(tmp.path().join("outside"), root.join("linkdir")).expect("link");
        symlink(root.join("apps/cm.yaml"), root.join("inside.yaml")).expect("link");
        let fs = FileSystem::confined(&root).expect("root");
        let err = fs.read(&root.join("link.yaml")).expect_err("symlink out");
        assert!(
            err.to_string().contains("link.yaml' leads to '"),
            "names the link and its target: {err}"
        );
        assert!(fs.read(&root.join("linkdir/secret.yaml")).is_err());
        assert!(!fs.is_dir(&root.join("linkdir")));
        assert_eq!(
            fs.read_text(&root.join("inside.yaml")).expect("read"),
            "kind: ConfigMap\n"
        );
        // Unconfined, the same link is read: the load restrictor decides, as in kustomize.
        assert!(FileSystem::unconfined()
            .read(&root.join("link.yaml"))
            .is_ok());
    }

    #[test]
    fn refuses_devices_and_fifos_without_opening_them() {
        let (_tmp, root) = tree();
        let fifo = root.join("fifo.yaml");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        // Opening the FIFO would block this test forever: it must be refused before the open.
        let fs = FileSystem::confined(&root).expect("root");
        let err = fs.read(&fifo).expect_err("fifo");
        assert!(matches!(err, KustomizeError::NotRegularFile(_)), "{err}");
        assert!(
            err.to_string().contains("fifo.yaml: not a regular file"),
            "{err}"
        );
        let err = FileSystem::unconfined()
            .read(Path::new("/dev/zero"))
            .expect_err("device");
        assert!(matches!(err, KustomizeError::NotRegularFile(_)), "{err}");
    }

    #[test]
    fn caps_what_it_reads_from_one_file() {
        let (_tmp, root) = tree();
        let fs = FileSystem::confined(&root)
            .expect("root")
            .with_max_file_size(8);
        std::fs::write(root.join("big.yaml"), "123456789").expect("write");
        std::fs::write(root.join("fits.yaml"), "12345678").expect("write");
        let err = fs.read(&root.join("big.yaml")).expect_err("too large");
        assert_eq!(
            err.to_string(),
            format!(
                "{}: larger than 8 bytes, the most plumb reads from one file",
                root.join("big.yaml").display()
            )
        );
        assert_eq!(fs.read(&root.join("fits.yaml")).expect("fits").len(), 8);
        // /proc files report a size of 0: the cap is on what is read, not on what is reported.
        let err = FileSystem::unconfined()
            .with_max_file_size(1)
            .read(Path::new("/proc/self/status"))
            .expect_err("read past the cap");
        assert!(matches!(err, KustomizeError::TooLarge { .. }), "{err}");
        // Under the cap, such a file is read to its end, past the size it reports; an empty
        // file is read as empty.
        let status = FileSystem::unconfined()
            .read(Path::new("/proc/self/status"))
            .expect("read /proc");
        let text = String::from_utf8(status).expect("text");
        assert!(
            text.starts_with("Name:") && text.contains("\nPid:"),
            "{text}"
        );
        assert!(text.ends_with('\n'), "{text}");
        std::fs::write(root.join("empty.yaml"), "").expect("write");
        assert!(fs.read(&root.join("empty.yaml")).expect("empty").is_empty());
    }
}
