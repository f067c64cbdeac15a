//! Sources that are not in the checkout (another git repository, an OCI artifact, a bucket),
//! fetched as source-controller would. plumb-flux only asks: the [`Fetcher`] is implemented
//! outside it (crate plumb-source), so that git, OCI and object-store clients stay out of the
//! build crates; without one, such sources are reported as not fetched.

use crate::model::Source;
use crate::postbuild::ObjectLookup;
use crate::sops::AgeKeys;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// A source's tree, fetched or from the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The artifact's tree (absolute).
    pub dir: PathBuf,
    /// As source-controller reports it: `main@sha1:<commit>`, `latest@sha256:<digest>`.
    pub revision: String,
}

/// A chart fetched or built, ready for `helm template`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedChart {
    /// The chart's directory (absolute), holding `Chart.yaml`.
    pub dir: PathBuf,
    /// The chart's name, from its `Chart.yaml`.
    pub name: String,
    /// The chart's version, from its `Chart.yaml` (for a repository: the version chosen).
    pub version: String,
    /// `sha256:<hex>` of the artifact: the chart `.tgz` for a fetched chart, the built tree
    /// for a built one.
    pub digest: String,
}

/// Why a source's tree cannot be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unfetched {
    /// The fetcher does not fetch this kind of source (yet): what uses it is not built.
    Unsupported(String),
    /// The fetch could not be done here (the server unreachable, offline and not cached, the
    /// cache not writable): what uses it is unavailable. The message names the source's URL.
    Failed(String),
    /// The server answered and the source is wrong (no such branch or tag, a corrupt archive,
    /// a path that would leave the artifact): source-controller would mark it not ready, and
    /// what uses it fails. The message names the source's URL.
    Broken(String),
}

/// The data of the Secret a source's `spec.secretRef` names (credentials: `username` and
/// `password`, `accesskey` and `secretkey`, `.dockerconfigjson`...), when the build holds it in
/// plain text or decrypted. Never printed: its `Debug` shows only the keys.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct SecretData(pub BTreeMap<String, String>);

impl SecretData {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }
}

impl std::fmt::Debug for SecretData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SecretData")
            .field(&self.0.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Fetches the artifact of a source object.
pub trait Fetcher: Send + Sync + std::fmt::Debug {
    /// The tree of `source`, or why it cannot be had.
    fn fetch(&self, source: &Source) -> Result<Fetched, Unfetched>;

    /// The tree of `source` fetched with the credentials of its `spec.secretRef`, when the
    /// build has that Secret.
    fn fetch_with(
        &self,
        source: &Source,
        secret: Option<&SecretData>,
    ) -> Result<Fetched, Unfetched> {
        let _ = secret;
        self.fetch(source)
    }

    /// A chart of a HelmRepository (an HTTP index, or `type: oci`) by name and version (an
    /// exact version or a range), with the credentials of the repository's `spec.secretRef`
    /// when the build has that Secret.
    fn fetch_chart(
        &self,
        repository: &Source,
        chart: &str,
        version: &str,
        secret: Option<&SecretData>,
    ) -> Result<FetchedChart, Unfetched> {
        let _ = (repository, chart, version, secret);
        Err(Unfetched::Unsupported(
            "HelmRepository charts are not supported by this fetcher".into(),
        ))
    }

    /// The chart an OCIRepository holds (a HelmRelease's `spec.chartRef`).
    fn fetch_chart_ref(
        &self,
        source: &Source,
        secret: Option<&SecretData>,
    ) -> Result<FetchedChart, Unfetched> {
        let _ = (source, secret);
        Err(Unfetched::Unsupported(
            "charts from an OCIRepository are not supported by this fetcher".into(),
        ))
    }

    /// A chart directory of a fetched tree (GitRepository, Bucket, this repository), packaged
    /// as source-controller does: its missing dependencies resolved.
    fn build_chart(&self, dir: &Path) -> Result<FetchedChart, Unfetched> {
        let _ = dir;
        Err(Unfetched::Unsupported(
            "building charts from a directory is not supported by this fetcher".into(),
        ))
    }

    /// `base` with the trees of a GitRepository's `spec.include` copied in.
    fn compose(&self, base: &Fetched, includes: &[Include]) -> Result<Fetched, Unfetched> {
        let _ = (base, includes);
        Err(Unfetched::Unsupported(
            "spec.include is not supported by this fetcher".into(),
        ))
    }
}

/// One entry of a GitRepository's `spec.include`, its repository fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Include {
    pub tree: PathBuf,
    /// `fromPath` (empty: the whole artifact).
    pub from: String,
    /// `toPath` (default: the included GitRepository's name).
    pub to: String,
}

/// The data of the Secret that `source`'s `spec.secretRef` names, in its namespace, when
/// `lookup` holds it readable: a SOPS Secret no key decrypts gives `None`, never placeholders.
pub fn source_secret(
    source: &Source,
    lookup: &dyn ObjectLookup,
    keys: Option<&AgeKeys>,
) -> Option<SecretData> {
    let name = source.spec["secretRef"]["name"].as_str()?;
    let secret = lookup.find("Secret", &source.id.namespace, name)?;
    let mut problems = Vec::new();
    let data = crate::postbuild::data_of(secret, keys, &mut problems);
    if !problems.is_empty() {
        return None;
    }
    Some(SecretData(data.into_iter().collect()))
}

/// One source's fetch, done by the first Kustomization that needs it.
type Slot = Arc<OnceLock<Result<Fetched, Unfetched>>>;

/// Fetches each source at most once per build, however many Kustomizations use it, and
/// while other sources are fetched in parallel. A source is its id and its spec: clusters of
/// one repository may declare the same OCIRepository with different tags, and each gets its
/// own artifact (or its own reason why not).
#[derive(Debug, Default)]
pub struct FetchOnce {
    results: Mutex<HashMap<String, Slot>>,
}

impl FetchOnce {
    pub fn fetch(
        &self,
        fetcher: &dyn Fetcher,
        source: &Source,
        secret: Option<&SecretData>,
    ) -> Result<Fetched, Unfetched> {
        let cell = {
            let mut map = self.results.lock().unwrap_or_else(|e| e.into_inner());
            let key = format!("{}\n{}", source.id, source.spec);
            map.entry(key).or_default().clone()
        };
        cell.get_or_init(|| fetcher.fetch_with(source, secret))
            .clone()
    }
}

/// Sources fetched ahead of the builds that use them, each on a thread of its own: a thread
/// then waits on the network while the others build, instead of a build waiting in turn.
#[derive(Debug, Default)]
pub struct FetchAhead {
    pub once: Arc<FetchOnce>,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

impl FetchAhead {
    /// Starts fetching each source of `found` that a Kustomization still to be built uses
    /// (`pending`: their sourceRefs) and that its build would fetch: neither mapped nor this
    /// repository, nor one with credentials or included repositories, which the build looks up
    /// first. The build then asks [`FetchOnce::fetch`] for the same source, with the same spec,
    /// and finds it fetched or being fetched.
    pub fn start<'a>(
        &self,
        fetcher: Option<&Arc<dyn Fetcher>>,
        found: impl IntoIterator<Item = &'a Source>,
        sources: &crate::source::Sources,
        pending: &[&crate::model::ObjectRef],
    ) {
        let Some(fetcher) = fetcher else {
            return;
        };
        for source in found {
            let Some(known) = sources.known.get(&source.id) else {
                continue;
            };
            let plain = ["secretRef", "include"]
                .iter()
                .all(|key| known.spec.get(key).is_none_or(serde_json::Value::is_null));
            if !matches!(
                known.id.kind.as_str(),
                "GitRepository" | "OCIRepository" | "Bucket"
            ) || !plain
                || !matches!(
                    sources.resolve(&known.id),
                    crate::source::Resolution::Unmapped { .. }
                )
                || !pending.contains(&&known.id)
            {
                continue;
            }
            let (once, fetcher, known) = (self.once.clone(), fetcher.clone(), known.clone());
            let thread = std::thread::Builder::new()
                .name("plumb-fetch".into())
                .spawn(move || {
                    let _ = once.fetch(&*fetcher, &known, None);
                });
            if let Ok(thread) = thread {
                self.threads
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(thread);
            }
        }
    }

    /// Waits for the fetches started: nothing is left writing to the cache.
    pub fn join(&self) {
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        for thread in threads {
            let _ = thread.join();
        }
    }
}

/// Why a Kustomization whose source is elsewhere gets no tree, each message naming the source
/// and its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceProblem {
    /// The source is wrong (source-controller would mark it not ready): the Kustomization
    /// fails.
    NotReady(String),
    /// plumb does not fetch this (kind, transport): not built.
    NotFetched(String),
    /// The fetch cannot be done here: unavailable.
    Unavailable(String),
}

/// The fetched tree of `source` (the object `source_ref` names, when the build has it), once
/// per build however many Kustomizations ask.
pub fn fetch_for(
    fetcher: Option<&dyn Fetcher>,
    once: &FetchOnce,
    source_ref: &crate::model::ObjectRef,
    source: Option<&Source>,
    url: Option<&str>,
    secret: Option<&SecretData>,
    known: &BTreeMap<crate::model::ObjectRef, Source>,
) -> Result<PathBuf, SourceProblem> {
    let fetched = match (fetcher, source) {
        (Some(f), Some(source)) => once
            .fetch(f, source, secret)
            .and_then(|base| with_includes(f, once, source, base, known)),
        _ => Err(Unfetched::Failed(format!("source {source_ref} has no URL"))),
    };
    let url = url.map(|u| format!(" ({u})")).unwrap_or_default();
    match fetched {
        Ok(tree) => Ok(tree.dir),
        Err(Unfetched::Broken(why)) => Err(SourceProblem::NotReady(format!(
            "source {source_ref}{url} is not ready: {why}"
        ))),
        Err(Unfetched::Unsupported(why)) => Err(SourceProblem::NotFetched(format!(
            "source {source_ref}{url} is not fetched: {why}"
        ))),
        Err(Unfetched::Failed(why)) => Err(SourceProblem::Unavailable(format!(
            "source {source_ref}{url} is unavailable: {why}"
        ))),
    }
}

/// `base` with the GitRepositories of `source`'s `spec.include` (in its namespace) copied in,
/// as source-controller composes the artifact.
fn with_includes(
    fetcher: &dyn Fetcher,
    once: &FetchOnce,
    source: &Source,
    base: Fetched,
    known: &BTreeMap<crate::model::ObjectRef, Source>,
) -> Result<Fetched, Unfetched> {
    let Some(items) = source.spec["include"].as_array().filter(|i| !i.is_empty()) else {
        return Ok(base);
    };
    let mut includes = Vec::new();
    for item in items {
        let name = item["repository"]["name"].as_str().unwrap_or("");
        let id = crate::model::ObjectRef::new("GitRepository", &source.id.namespace, name);
        let Some(included) = known.get(&id) else {
            return Err(Unfetched::Broken(format!(
                "spec.include names {id}, which the build does not define"
            )));
        };
        let tree = once
            .fetch(fetcher, included, None)
            .map_err(|why| match why {
                Unfetched::Broken(w) => Unfetched::Broken(format!("included {id}: {w}")),
                Unfetched::Failed(w) => Unfetched::Failed(format!("included {id}: {w}")),
                Unfetched::Unsupported(w) => Unfetched::Unsupported(format!("included {id}: {w}")),
            })?;
        let text = |key: &str| item[key].as_str().unwrap_or("").to_string();
        let to = Some(text("toPath"))
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| name.to_string());
        includes.push(Include {
            tree: tree.dir,
            from: text("fromPath"),
            to,
        });
    }
    fetcher.compose(&base, &includes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fetcher of trees only, as before charts could be asked for.
    #[derive(Debug)]
    struct TreesOnly;

    impl Fetcher for TreesOnly {
        fn fetch(&self, _: &Source) -> Result<Fetched, Unfetched> {
            Err(Unfetched::Failed("unused".into()))
        }
    }

    /// Answers with the tag it was asked for, and counts the fetches.
    #[derive(Debug, Default)]
    struct ByTag(std::sync::atomic::AtomicUsize);

    impl Fetcher for ByTag {
        fn fetch(&self, source: &Source) -> Result<Fetched, Unfetched> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Err(Unfetched::Failed(format!(
                "tag {}",
                source.spec["ref"]["tag"]
            )))
        }
    }

    /// Two clusters declaring one OCIRepository with different tags: each fetch answers for its
    /// own tag, and asking again for either fetches nothing more.
    #[test]
    fn one_source_id_with_two_specs_is_fetched_for_each() {
        let source = |tag: &str| Source {
            id: crate::model::ObjectRef::new("OCIRepository", "apps", "frontend"),
            url: Some("oci://ghcr.io/example/frontend".into()),
            spec: serde_json::json!({"url": "oci://ghcr.io/example/frontend", "ref": {"tag": tag}}),
        };
        let (fetcher, once) = (ByTag::default(), FetchOnce::default());
        let why = |r: Result<Fetched, Unfetched>| match r {
            Err(Unfetched::Failed(m)) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            why(once.fetch(&fetcher, &source("latest"), None)),
            "tag \"latest\""
        );
        assert_eq!(
            why(once.fetch(&fetcher, &source("latest-stable"), None)),
            "tag \"latest-stable\""
        );
        assert_eq!(
            why(once.fetch(&fetcher, &source("latest"), None)),
            "tag \"latest\""
        );
        assert_eq!(fetcher.0.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    /// Records the name of the thread of each fetch, by source name.
    #[derive(Debug, Default)]
    struct Threads(Mutex<Vec<(String, String)>>);

    impl Fetcher for Threads {
        fn fetch(&self, source: &Source) -> Result<Fetched, Unfetched> {
            let thread = std::thread::current().name().unwrap_or("").to_string();
            self.0
                .lock()
                .unwrap()
                .push((source.id.name.clone(), thread));
            Ok(Fetched {
                dir: PathBuf::from("/fetched").join(&source.id.name),
                revision: "main@sha1:0".into(),
            })
        }
    }

    /// Of the sources found, only those a pending Kustomization uses and its build would fetch
    /// as they are are fetched ahead, on a thread of their own; the build's own fetch of one of
    /// them then fetches nothing more.
    #[test]
    fn sources_a_pending_build_fetches_are_fetched_ahead_once() {
        let git = |name: &str, spec: serde_json::Value| Source {
            id: crate::model::ObjectRef::new("GitRepository", "apps", name),
            url: spec["url"].as_str().map(str::to_string),
            spec,
        };
        let plain = git(
            "plain",
            serde_json::json!({"url": "https://git.example.com/a.git"}),
        );
        let with_secret = git(
            "with-secret",
            serde_json::json!({"url": "https://git.example.com/b.git", "secretRef": {"name": "auth"}}),
        );
        let unused = git(
            "unused",
            serde_json::json!({"url": "https://git.example.com/c.git"}),
        );
        let mapped = git(
            "mapped",
            serde_json::json!({"url": "https://git.example.com/d.git"}),
        );
        let mut sources = crate::source::Sources::new(
            None,
            vec![crate::config::SourceMapping {
                kind: None,
                namespace: None,
                name: "mapped".into(),
                path: PathBuf::from("vendor/d"),
            }],
        );
        let found = [&plain, &with_secret, &unused, &mapped];
        for s in found {
            sources.add(s.clone());
        }
        let pending = [&plain.id, &with_secret.id, &mapped.id];
        let fetcher = Arc::new(Threads::default());
        let ahead = FetchAhead::default();
        let dynamic: Arc<dyn Fetcher> = fetcher.clone();
        ahead.start(Some(&dynamic), found, &sources, &pending);
        ahead.join();
        let fetched = fetcher.0.lock().unwrap().clone();
        assert_eq!(
            fetched,
            vec![("plain".to_string(), "plumb-fetch".to_string())]
        );
        let tree = ahead.once.fetch(&*fetcher, &plain, None).unwrap();
        assert_eq!(tree.dir, PathBuf::from("/fetched/plain"));
        assert_eq!(fetcher.0.lock().unwrap().len(), 1);
        // Without a fetcher, nothing is started.
        let none = FetchAhead::default();
        none.start(None, [&plain], &sources, &pending);
        none.join();
        assert_eq!(fetcher.0.lock().unwrap().len(), 1);
    }

    #[test]
    fn a_fetcher_without_chart_support_says_so() {
        let source = Source {
            id: crate::model::ObjectRef::new("HelmRepository", "flux-system", "charts"),
            url: Some("https://charts.example.com".into()),
            spec: serde_json::Value::Null,
        };
        let unsupported = |r: Result<FetchedChart, Unfetched>| matches!(r, Err(Unfetched::Unsupported(m)) if m.contains("not supported"));
        assert!(unsupported(
            TreesOnly.fetch_chart(&source, "podinfo", "6.x", None)
        ));
        assert!(unsupported(TreesOnly.fetch_chart_ref(&source, None)));
        assert!(unsupported(TreesOnly.build_chart(Path::new("/charts/app"))));
    }
}
