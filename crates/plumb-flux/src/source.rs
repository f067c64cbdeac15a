//! Sources as local directories: which directory of this checkout stands for the artifact a
//! Flux source would fetch, and how a Kustomization's `spec.path` is read inside it.
//!
//! The GitRepository that syncs this repository is the repository root. Other sources are
//! mapped by `.plumb.yaml` (`sources:`); a GitRepository with the same URL as the syncing one is
//! the same repository.

use crate::config::SourceMapping;
use crate::model::{ObjectRef, Source};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `spec.path` as Flux reads it: relative to the source root whether it starts with `/`, `./`
/// or neither, `.` and `..` resolved without ever leaving the root (Flux's secure join).
pub fn clean_relative(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// Where a source's tree is, or why it is not known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// The directory, relative to the repository root.
    Dir(String),
    /// The source object exists but is not this repository and `.plumb.yaml` does not map it.
    Unmapped { url: Option<String> },
    /// No object of that kind and name was built, and `.plumb.yaml` does not map it.
    NotFound,
}

/// The sources of one cluster, as they are discovered.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// The source that syncs this repository (its tree is the repository root).
    pub repository: Option<ObjectRef>,
    pub mappings: Vec<SourceMapping>,
    /// Every source object the build has produced so far.
    pub known: BTreeMap<ObjectRef, Source>,
}

impl Sources {
    pub fn new(repository: Option<ObjectRef>, mappings: Vec<SourceMapping>) -> Sources {
        Sources {
            repository,
            mappings,
            known: BTreeMap::new(),
        }
    }

    pub fn add(&mut self, source: Source) {
        self.known.entry(source.id.clone()).or_insert(source);
    }

    /// The directory of `source`.
    pub fn resolve(&self, source: &ObjectRef) -> Resolution {
        if let Some(m) = self
            .mappings
            .iter()
            .find(|m| m.matches(&source.kind, &source.namespace, &source.name))
        {
            return Resolution::Dir(m.path.to_string_lossy().into_owned());
        }
        if self.repository.as_ref() == Some(source) {
            return Resolution::Dir(String::new());
        }
        let Some(found) = self.known.get(source) else {
            return Resolution::NotFound;
        };
        let repo_url = self
            .repository
            .as_ref()
            .and_then(|r| self.known.get(r))
            .and_then(|s| s.url.as_deref());
        if source.kind == "GitRepository" && found.url.is_some() && found.url.as_deref() == repo_url
        {
            return Resolution::Dir(String::new());
        }
        Resolution::Unmapped {
            url: found.url.clone(),
        }
    }
}

/// `root` joined with a cleaned relative path.
pub fn join(root: &Path, rel: &str) -> PathBuf {
    if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_relative_to_the_source_root() {
        assert_eq!(clean_relative("./apps/dev"), "apps/dev");
        assert_eq!(clean_relative("/apps/dev/"), "apps/dev");
        assert_eq!(clean_relative("apps//dev/./x/.."), "apps/dev");
        assert_eq!(clean_relative("../../etc"), "etc");
        assert_eq!(clean_relative("./"), "");
    }

    #[test]
    fn same_url_is_the_same_repository() {
        let repo = ObjectRef::new("GitRepository", "flux-system", "flux-system");
        let mut s = Sources::new(Some(repo.clone()), Vec::new());
        s.add(Source {
            id: repo.clone(),
            url: Some("ssh://git@example.com/r".into()),
        });
        let other = ObjectRef::new("GitRepository", "apps", "mirror");
        assert_eq!(s.resolve(&other), Resolution::NotFound);
        s.add(Source {
            id: other.clone(),
            url: Some("ssh://git@example.com/r".into()),
        });
        assert_eq!(s.resolve(&other), Resolution::Dir(String::new()));
        let oci = ObjectRef::new("OCIRepository", "flux-system", "platform");
        s.add(Source {
            id: oci.clone(),
            url: Some("oci://ghcr.io/x/platform".into()),
        });
        assert!(matches!(s.resolve(&oci), Resolution::Unmapped { .. }));
    }
}
