//! Build errors, worded as kustomize words them so that people (and the conformance corpus)
//! recognise them, with the file and line where plumb knows it.

use plumb_yaml::YamlError;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum KustomizeError {
    /// The YAML of a resource or kustomization file is malformed.
    #[error("MalformedYAMLError: {0}")]
    MalformedYaml(#[from] YamlError),
    /// No kustomization file in a directory that needs one.
    #[error("unable to find one of 'kustomization.yaml', 'kustomization.yml' or 'Kustomization' in directory '{}'", .0.display())]
    MissingKustomization(PathBuf),
    #[error("Found multiple kustomization files under: {}", .0.display())]
    MultipleKustomizations(PathBuf),
    /// A kustomization file that is not valid (unknown field, wrong type).
    #[error("invalid Kustomization: {message} in {}{}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    InvalidKustomization {
        path: PathBuf,
        line: Option<usize>,
        message: String,
    },
    /// A kustomization whose `kind` or `apiVersion` kustomize refuses; `dir` is its directory,
    /// which kustomize's message names.
    #[error("Failed to read kustomization file under {}:\n{}", dir.display(), problems.join("\n"))]
    KindOrVersion {
        dir: PathBuf,
        path: PathBuf,
        line: Option<usize>,
        problems: Vec<String>,
    },
    /// Context added while accumulating a resource entry.
    #[error("accumulating resources: accumulating resources from '{entry}': {source}")]
    Accumulating {
        entry: String,
        /// The kustomization file and line of the entry, when it came from a file.
        at: Option<(PathBuf, usize)>,
        #[source]
        source: Box<KustomizeError>,
    },
    #[error("security; file '{}' is not in or below '{}'", file.display(), root.display())]
    OutsideRoot { file: PathBuf, root: PathBuf },
    /// A path that leaves the root of a confined build, lexically or through a symlink.
    #[error("{}", outside_source(path, real, root))]
    OutsideSource {
        path: PathBuf,
        real: PathBuf,
        root: PathBuf,
    },
    #[error("{}: not a regular file (a device, a FIFO or a socket): plumb reads only regular files", .0.display())]
    NotRegularFile(PathBuf),
    #[error("{}: larger than {}, the most plumb reads from one file", path.display(), size(*limit))]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("cycle detected: {} refers to itself through its resources", .0.display())]
    Cycle(PathBuf),
    #[error("{}: {message}", path.display())]
    Io { path: PathBuf, message: String },
    /// Something plumb will not do offline or at all (plugins, helm charts).
    #[error("{0}")]
    Unsupported(String),
    /// A remote resource or base (`https://...`, `github.com/org/repo//path?ref=v1`), which
    /// this build does not fetch.
    #[error("remote {what} {url:?}: plumb builds offline; vendor it into the repository")]
    Remote { what: String, url: String },
    /// A remote resource, base or component that could not be fetched or read; `message` names
    /// the URL fetched and why; `broken` when the entry itself is wrong (no such ref, a 404),
    /// not the fetch impossible here.
    #[error("remote {what} {url}: {message}")]
    RemoteFetch {
        what: String,
        url: String,
        message: String,
        broken: bool,
    },
    /// A generator's error, prefixed with the kustomization file (and line) declaring it.
    #[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Generator {
        path: PathBuf,
        line: Option<usize>,
        message: String,
    },
    /// Any other error, with kustomize's wording.
    #[error("{0}")]
    Other(String),
}

fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

fn outside_source(path: &Path, real: &Path, root: &Path) -> String {
    if path == real {
        format!(
            "security; file '{}' is not in or below '{}': a build reads only inside its source",
            path.display(),
            root.display()
        )
    } else {
        format!(
            "security; file '{}' leads to '{}', which is not in or below '{}': a build reads only inside its source",
            path.display(),
            real.display(),
            root.display()
        )
    }
}

impl KustomizeError {
    pub fn accumulating(
        entry: &str,
        at: Option<(PathBuf, usize)>,
        source: KustomizeError,
    ) -> KustomizeError {
        KustomizeError::Accumulating {
            entry: entry.to_string(),
            at,
            source: Box::new(source),
        }
    }
}
