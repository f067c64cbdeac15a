//! Sources as local directories: which directory of this checkout stands for the artifact a
//! Flux source would fetch, and how a Kustomization's `spec.path` is read inside it.
//!
//! The source that syncs this repository is the repository root: the one the entry's root
//! Kustomization names, `flux-system/flux-system` when nothing defines it (`flux bootstrap`
//! creates it), the source a FluxInstance's `spec.sync` creates, and a GitRepository whose URL
//! is the syncing one's or a remote of the checkout. Other sources are mapped by `.plumb.yaml`
//! (`sources:`); what is left is another repository, which is not fetched yet.

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

/// Why a source the repository does not define, or defines with a remote URL, was taken to be
/// this repository. Each is reported once, as a note saying how to override it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inference {
    /// `flux-system/flux-system`, which `flux bootstrap` creates and the repository does not
    /// define.
    Bootstrap(ObjectRef),
    /// An entry directory whose root `flux bootstrap --path=<entry>` created: the Kustomization
    /// and GitRepository `flux-system/flux-system`, neither committed.
    BootstrapEntry { source: ObjectRef, entry: String },
    /// An entry directory no Kustomization builds, applied by hand (`kubectl apply -k`), that
    /// defines `source`, a GitRepository of `url`: the checkout, as its remote says or as the
    /// entries Flux syncs itself fetch it ([`crate::sync::Discovery::hand_applied`]).
    HandApplied {
        source: ObjectRef,
        entry: String,
        url: String,
    },
    /// The source a FluxInstance's `spec.sync` creates; `dir`: the directory of this
    /// repository taken to be its tree (`""`: the root; see [`crate::sync::ClusterSync::root`]).
    ClusterSync {
        source: ObjectRef,
        via: String,
        dir: String,
        file: Option<PathBuf>,
        line: Option<u32>,
    },
    /// A GitRepository whose URL is a remote of the checkout.
    CheckoutRemote { source: ObjectRef, url: String },
    /// The cluster's FluxInstance pins a Flux before 2.9: substitution is lenient there.
    LenientFlux {
        source: ObjectRef,
        version: String,
        via: String,
    },
    /// `entry`, the path of a FluxInstance sync (`source`, declared by `via`), is built as part
    /// of cluster `into`, whose Kustomization `kustomization` applies that directory too
    /// ([`crate::joined`]).
    JoinedEntry {
        source: ObjectRef,
        entry: String,
        into: String,
        kustomization: String,
        via: String,
    },
    /// A `substituteFrom` ConfigMap or Secret that the Kustomization produces itself: once
    /// applied, the cluster holds the values it applied (a new cluster needs it applied first,
    /// at bootstrap). `created_by`: a Secret created at runtime by an object the Kustomization
    /// produces (`ExternalSecret flux-system/cluster-secrets`), whose values are placeholders.
    SelfProduced {
        object: ObjectRef,
        kustomization: String,
        created_by: Option<String>,
    },
}

impl Inference {
    /// The directory of this repository the source is taken to be (`""`: the root).
    pub fn dir(&self) -> &str {
        match self {
            Inference::ClusterSync { dir, .. } => dir,
            _ => "",
        }
    }

    pub fn source(&self) -> &ObjectRef {
        match self {
            Inference::Bootstrap(s) => s,
            Inference::ClusterSync { source, .. }
            | Inference::CheckoutRemote { source, .. }
            | Inference::BootstrapEntry { source, .. }
            | Inference::HandApplied { source, .. }
            | Inference::LenientFlux { source, .. }
            | Inference::JoinedEntry { source, .. } => source,
            Inference::SelfProduced { object, .. } => object,
        }
    }

    /// What was assumed, as the note says it.
    pub fn message(&self) -> String {
        match self {
            Inference::Bootstrap(s) => format!(
                "{s} is not defined in the repository: taken to be this repository, as `flux bootstrap` creates it"
            ),
            Inference::BootstrapEntry { source, entry } => format!(
                "{entry} is taken to be a cluster entry synced by `flux bootstrap --path={entry}` from {source}, which the repository does not define: it holds Flux Kustomizations and no Kustomization builds it"
            ),
            Inference::HandApplied { source, entry, url } => format!(
                "{entry} is taken to be a cluster entry applied by hand (`kubectl apply -k {entry}`): no Kustomization builds it, and its {source} fetches {url}, this repository at this branch, for the Kustomizations it defines"
            ),
            Inference::LenientFlux { version, via, .. } => format!(
                "{via} installs Flux {version}: postBuild substitution is lenient there (an undefined variable becomes an empty string; strict is the default from Flux 2.9)"
            ),
            Inference::ClusterSync {
                source, via, dir, ..
            } if dir.is_empty() => format!(
                "{source} is created by {via}: taken to be this repository"
            ),
            Inference::ClusterSync {
                source, via, dir, ..
            } => format!(
                "{source} is created by {via}: taken to be directory {dir} of this repository, the only one that holds its sync path"
            ),
            Inference::JoinedEntry {
                entry,
                into,
                kustomization,
                via,
                ..
            } => format!(
                "{entry}, which the sync of {via} names, is built as part of cluster {into}: Kustomization {kustomization} there applies that directory too, so its Kustomizations are that cluster's"
            ),
            Inference::CheckoutRemote { source, url } => format!(
                "{source} fetches {url}, a remote of this checkout: taken to be this repository"
            ),
            Inference::SelfProduced {
                object,
                kustomization,
                created_by: None,
            } => format!(
                "{object}, which Kustomization {kustomization} substitutes from, is produced by that Kustomization itself: its values are read from this build, as the cluster holds them once it is applied"
            ),
            Inference::SelfProduced {
                object,
                kustomization,
                created_by: Some(producer),
            } => format!(
                "{object}, which Kustomization {kustomization} substitutes from, is created at runtime by {producer}, which that Kustomization produces itself: the cluster holds it once that is applied"
            ),
        }
    }

    /// How to override it.
    pub fn help(&self) -> String {
        if let Inference::LenientFlux { .. } = self {
            return "plumb check reports each undefined variable (SUB001); build with --no-strict to make every cluster lenient".to_string();
        }
        if let Inference::JoinedEntry { entry, .. } = self {
            return format!("to build {entry} as a cluster of its own, list the cluster entries under `clusters:` in .plumb.yaml, or pass --entry {entry}");
        }
        if let Inference::BootstrapEntry { .. } | Inference::HandApplied { .. } = self {
            return "list the cluster entries under `clusters:` in .plumb.yaml, or pass --entry PATH".to_string();
        }
        if let Inference::SelfProduced { .. } = self {
            return "a new cluster fails this Kustomization until the object exists: apply it at bootstrap, or produce it from a Kustomization this one dependsOn".to_string();
        }
        let s = self.source();
        format!(
            "to read it from elsewhere, map it in .plumb.yaml: `sources: [{{kind: {}, namespace: {}, name: {}, path: <directory of its tree>}}]`",
            s.kind, s.namespace, s.name
        )
    }
}

/// Where a source's tree is, or why it is not known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// The directory, relative to the repository root.
    Dir(String),
    /// The directory, taken to be this repository for the reason given.
    Assumed(String, Inference),
    /// The source object exists but is another repository or artifact, and `.plumb.yaml` does
    /// not map it: what uses it cannot be built without fetching it.
    Unmapped { url: Option<String> },
    /// No object of that kind and name was built, and `.plumb.yaml` does not map it.
    NotFound,
    /// An ExternalArtifact an ArtifactGenerator of the build staged: its tree.
    Staged(std::sync::Arc<crate::artifact::Staged>),
    /// An ExternalArtifact that could not be staged: why (its generator failed, or reads a
    /// source that is not fetched), whether that is an error of the repository, and where in
    /// the ArtifactGenerator the failing field is written.
    Unstaged {
        reason: String,
        error: bool,
        at: Option<crate::artifact::Place>,
    },
}

/// The sources of one cluster, as they are discovered.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// The source that syncs this repository (its tree is the repository root).
    pub repository: Option<ObjectRef>,
    /// Why `repository` is this repository, when that was inferred.
    pub repository_inference: Option<Inference>,
    pub mappings: Vec<SourceMapping>,
    /// Every source object the build has produced so far.
    pub known: BTreeMap<ObjectRef, Source>,
    /// Sources that FluxInstances of the repository create, with what declares them.
    pub cluster_syncs: Vec<Inference>,
    /// The git checkout holding the repository: its remotes and branch.
    pub checkout: crate::sync::Checkout,
    /// ExternalArtifacts staged from ArtifactGenerators, or why they could not be.
    pub artifacts: BTreeMap<ObjectRef, Resolution>,
    /// Where each ExternalArtifact an ArtifactGenerator generates is named (its
    /// `spec.artifacts[].name`), to say what exists when a name is not found.
    pub generated: BTreeMap<ObjectRef, Option<crate::artifact::Place>>,
    /// ArtifactGenerators whose `pathPattern` could not be walked: the ExternalArtifacts of
    /// their namespace that nothing else generates may be theirs.
    pub undiscovered: Vec<crate::artifact::Undiscovered>,
}

impl Sources {
    pub fn new(repository: Option<ObjectRef>, mappings: Vec<SourceMapping>) -> Sources {
        Sources {
            repository,
            mappings,
            ..Sources::default()
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
        if let Some(staged) = self.artifacts.get(source) {
            return staged.clone();
        }
        if self.repository.as_ref() == Some(source) {
            return match &self.repository_inference {
                Some(why) => Resolution::Assumed(why.dir().to_string(), why.clone()),
                None => Resolution::Dir(String::new()),
            };
        }
        let Some(found) = self.known.get(source) else {
            if let Some(why) = self.cluster_syncs.iter().find(|i| i.source() == source) {
                return Resolution::Assumed(why.dir().to_string(), why.clone());
            }
            let bootstrap = crate::sync::BOOTSTRAP_NAME;
            if crate::sync::SYNC_KINDS.contains(&source.kind.as_str())
                && source.namespace == bootstrap
                && source.name == bootstrap
            {
                return Resolution::Assumed(String::new(), Inference::Bootstrap(source.clone()));
            }
            return Resolution::NotFound;
        };
        let repo_url = self
            .repository
            .as_ref()
            .and_then(|r| self.known.get(r))
            .and_then(|s| s.url.as_deref());
        // The same URL at another branch or tag is another tree.
        let repo_ref = self
            .repository
            .as_ref()
            .and_then(|r| self.known.get(r))
            .and_then(|s| s.spec.get("ref"));
        if source.kind == "GitRepository" {
            if let Some(url) = found.url.as_deref() {
                // One repository whatever the spelling: `ssh://git@github.com/o/r` is
                // `https://github.com/o/r.git` (Mirantis-PS/k0rdent-fluxcd-example).
                let same = repo_url.is_some_and(|r| {
                    crate::sync::normalize_git_url(r) == crate::sync::normalize_git_url(url)
                });
                if same && found.spec.get("ref") == repo_ref {
                    return Resolution::Dir(String::new());
                }
                if self.checkout.is_checked_out(url, &found.spec["ref"]) {
                    return Resolution::Assumed(
                        String::new(),
                        Inference::CheckoutRemote {
                            source: source.clone(),
                            url: url.to_string(),
                        },
                    );
                }
            }
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
            spec: serde_json::Value::Null,
        });
        let other = ObjectRef::new("GitRepository", "apps", "mirror");
        assert_eq!(s.resolve(&other), Resolution::NotFound);
        s.add(Source {
            id: other.clone(),
            url: Some("ssh://git@example.com/r".into()),
            spec: serde_json::Value::Null,
        });
        assert_eq!(s.resolve(&other), Resolution::Dir(String::new()));
        // Spelled over https with `.git`, it is the same repository.
        let https = ObjectRef::new("GitRepository", "apps", "https");
        s.add(Source {
            id: https.clone(),
            url: Some("https://Example.com/r.git".into()),
            spec: serde_json::Value::Null,
        });
        assert_eq!(s.resolve(&https), Resolution::Dir(String::new()));
        let oci = ObjectRef::new("OCIRepository", "flux-system", "platform");
        s.add(Source {
            id: oci.clone(),
            url: Some("oci://ghcr.io/x/platform".into()),
            spec: serde_json::Value::Null,
        });
        assert!(matches!(s.resolve(&oci), Resolution::Unmapped { .. }));
    }
}
