//! Building a whole repository as the cluster would: from each entry path, every Flux
//! Kustomization that will reconcile, each built exactly as kustomize-controller builds it.
//!
//! The root of an entry is the Kustomization that syncs it: one in the entry directory whose
//! path is the entry (the `flux bootstrap` layout), else the one a FluxInstance's sync creates
//! ([`crate::sync`]); with neither, the entry directory is built as it stands. Each built Kustomization's objects may hold child
//! Kustomizations, which are built in turn from their spec as the parent produced it (patched
//! and substituted). A Kustomization whose `substituteFrom` names a ConfigMap or Secret another
//! Kustomization produces waits for that one; everything else ready at the same time is built
//! in parallel. The result does not depend on the number of threads.

use crate::config::Config;
use crate::diagnostic::{Code, Diagnostic};
use crate::dir_build::Unfetched;
use crate::fetch::SourceProblem;
use crate::found::Found;
use crate::model::{FluxKustomization, HelmRelease, Object, ObjectRef, Source};
use crate::postbuild::{self, ObjectLookup};
use crate::produced::Produced;
use crate::runtime::RuntimeSecret;
use crate::source::{self, Inference, Resolution, Sources};
use crate::sync::{self, Discovery};
use crate::trees::FileSystems;
use crate::varsub::Mode;
use rayon::prelude::*;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What to build and how.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Entry paths relative to the repository root; empty means `.plumb.yaml`'s `clusters:`, or
    /// the entries found in the repository.
    pub entries: Vec<String>,
    /// Strict substitution (kustomize-controller v1.9+) or lenient (older controllers).
    pub mode: Mode,
    /// Age keys for SOPS-encrypted Secrets read through `substituteFrom`.
    pub age_keys: Option<std::sync::Arc<crate::sops::AgeKeys>>,
    /// Fetches sources that are not in the checkout; without one they are not built.
    pub fetcher: Option<std::sync::Arc<dyn crate::fetch::Fetcher>>,
    /// Fetches kustomizations' remote bases and files; without one they are not built.
    pub remote: Option<std::sync::Arc<dyn plumb_kustomize::Remote>>,
    /// Renders HelmReleases; without one they are not rendered.
    pub renderer: Option<crate::helm_release::LazyRenderer>,
    /// The git checkout the tree stands for, when it is not the one holding `root` (a
    /// revision exported for `plumb diff` has no `.git`, and is still that checkout).
    pub checkout: Option<crate::sync::Checkout>,
    /// The caller ends its process soon after the build (a command that builds once): the
    /// files the build read and parsed are then left for the exit to free. Otherwise they are
    /// freed on a thread of their own, which on a real repository took 3% of the build's CPU
    /// while the output was being written.
    pub exits_after: bool,
}

/// One Flux Kustomization and what it builds.
#[derive(Debug, Clone)]
pub struct KustomizationBuild {
    pub kustomization: FluxKustomization,
    /// The directory built, relative to the repository root (`""` is the root).
    pub path: String,
    /// The source, as `Kind/namespace/name`.
    pub source: String,
    /// The Kustomization whose objects hold this one (`None` for the root).
    pub parent: Option<String>,
    /// The Kustomizations from the root down to this one, as `namespace/name`.
    pub chain: Vec<String>,
    /// Built objects, in kustomize's output order.
    pub objects: Vec<Object>,
    pub diagnostics: Vec<Diagnostic>,
    /// Not a Kustomization of the cluster: the entry directory built as it stands, because no
    /// Kustomization or FluxInstance in it syncs it.
    pub synthetic: bool,
    pub status: Status,
    /// How long it took to build (its source resolved or fetched, kustomize, postBuild), in
    /// seconds.
    pub seconds: f64,
}

/// Whether a Kustomization was built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Built without errors (warnings allowed).
    Built,
    /// Its build has errors: Flux would fail on it too.
    Failed,
    /// Not built, for a reason that is not an error of the repository (its source is another
    /// repository, which is not fetched).
    NotBuilt(String),
    /// Its source is another repository or artifact that could not be fetched (unreachable,
    /// offline and not cached).
    Unavailable(String),
}

impl Status {
    /// `built`, `failed`, `not-built`: the JSON output's `status`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Built => "built",
            Status::Failed => "failed",
            Status::NotBuilt(_) => "not-built",
            Status::Unavailable(_) => "unavailable",
        }
    }
}

impl KustomizationBuild {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        self.kustomization.key()
    }

    /// `Kustomization ns/name (path)`, as the YAML output's group comment says it.
    pub fn title(&self) -> String {
        let path = if self.path.is_empty() {
            "."
        } else {
            &self.path
        };
        if self.synthetic {
            format!("entry {path} (no Flux Kustomization syncs it)")
        } else {
            format!("Kustomization {} ({path})", self.key())
        }
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Everything built from one entry path: one cluster.
#[derive(Debug, Clone)]
pub struct EntryBuild {
    pub entry: String,
    /// In tree order: each parent before its children, children in the order produced.
    pub kustomizations: Vec<KustomizationBuild>,
    /// Every HelmRelease built, with the Kustomization that produced it.
    pub helm_releases: Vec<(HelmRelease, String)>,
    /// What each HelmRelease renders ([`crate::helm_release`]), in the Kustomizations' order.
    pub releases: Vec<crate::helm_release::ReleaseBuild>,
    /// Every source object built, with the Kustomization that produced it.
    pub sources: Vec<(Source, String)>,
    /// The source whose tree is this repository.
    pub repository_source: Option<ObjectRef>,
    /// The Flux minor version the cluster's FluxInstance pins, when it pins one.
    pub flux_version: Option<(u32, u32)>,
    /// Problems of the graph rather than of one Kustomization (dependsOn cycles).
    pub diagnostics: Vec<Diagnostic>,
    /// What was assumed to build this cluster (its sync source is this repository), once each.
    pub assumptions: Vec<Inference>,
    /// What is applied before Flux ([`crate::bootstrap`]).
    pub bootstrap: crate::bootstrap::Bootstrap,
    /// What its helmfile releases render ([`crate::helm_release::bootstrap`]), in the
    /// helmfiles' order; `kustomization` is the helmfile's path.
    pub bootstrap_releases: Vec<crate::helm_release::ReleaseBuild>,
    /// Secrets controllers create from objects of the build ([`crate::runtime`]).
    pub runtime_secrets: Vec<RuntimeSecret>,
    /// The directory the ExternalArtifacts of ArtifactGenerators were staged in (removed when
    /// the last build that refers to it is dropped).
    pub staging: Option<std::sync::Arc<tempfile::TempDir>>,
    /// How long the entry took to build.
    pub seconds: f64,
    /// How long its stages took.
    pub stages: crate::timing::Stages,
}

/// A whole repository's build.
#[derive(Debug, Clone)]
pub struct RepositoryBuild {
    pub root: PathBuf,
    pub entries: Vec<EntryBuild>,
    /// Every cluster entry of the repository, built or not: the entries built, or when
    /// `--entry` chose some, `.plumb.yaml`'s `clusters:`, else those discovered.
    pub clusters: Vec<String>,
    /// How long reading `.plumb.yaml` and discovering the entries and sources took, in seconds.
    pub discovery_seconds: f64,
    /// How many directory builds were copies of another Kustomization's build of the same
    /// directory with the same spec.
    pub copied_builds: usize,
    /// The age keys it decrypted with ([`Options::age_keys`]).
    pub age_keys: Option<std::sync::Arc<crate::sops::AgeKeys>>,
}

impl RepositoryBuild {
    /// Every diagnostic, paths relative to the repository root.
    pub fn diagnostics(&self) -> impl Iterator<Item = &Diagnostic> {
        self.entries.iter().flat_map(|e| {
            e.diagnostics
                .iter()
                .chain(e.kustomizations.iter().flat_map(|k| k.diagnostics.iter()))
                .chain(e.releases.iter().flat_map(|r| r.diagnostics.iter()))
                .chain(
                    e.bootstrap_releases
                        .iter()
                        .flat_map(|r| r.diagnostics.iter()),
                )
        })
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics().any(Diagnostic::is_error)
    }

    /// Ends this build for a process that exits next: the staging directories of its
    /// ArtifactGenerators are removed, and the object trees are left for the exit to free
    /// (freeing them one by one was 4% of a build's time).
    pub fn leave_to_exit(mut self) {
        for entry in &mut self.entries {
            drop(entry.staging.take());
        }
        std::mem::forget(self);
    }
}

/// Why a repository cannot be built at all (exit code 2: usage or configuration).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    #[error("repository {0} is not a directory")]
    NoRepository(PathBuf),
    #[error("entry path {0} is not a directory in the repository")]
    NoEntry(String),
    #[error(
        "entry path {0} is outside the repository {1}: it must be relative to the repository root"
    )]
    EntryOutside(String, PathBuf),
    #[error("no entry path: nothing in the repository syncs a cluster; pass --entry PATH or list `clusters:` in .plumb.yaml")]
    NoEntries,
}

/// The entries a build starts from: `options.entries`, else `.plumb.yaml`'s `clusters:`, else
/// every directory the repository syncs a cluster from ([`sync::discover`]).
pub fn entries(
    root: &Path,
    config: &Config,
    options: &Options,
    discovery: &Discovery,
) -> Result<Vec<String>, SetupError> {
    let list: Vec<String> = if !options.entries.is_empty() {
        options.entries.clone()
    } else if !config.clusters.is_empty() {
        config.clusters.clone()
    } else {
        discovery.entries.clone()
    };
    if list.is_empty() {
        return Err(SetupError::NoEntries);
    }
    let mut out = Vec::new();
    for e in list {
        let rel = if Path::new(&e).is_absolute() {
            // An absolute path inside the repository is taken as the path it names in it.
            let path = std::fs::canonicalize(&e).map_err(|_| SetupError::NoEntry(e.clone()))?;
            match path.strip_prefix(root) {
                Ok(inside) => inside.to_string_lossy().replace('\\', "/"),
                Err(_) => return Err(SetupError::EntryOutside(e, root.to_path_buf())),
            }
        } else {
            source::clean_relative(&e)
        };
        if !source::join(root, &rel).is_dir() {
            return Err(SetupError::NoEntry(e));
        }
        if !out.contains(&rel) {
            out.push(rel);
        }
    }
    Ok(out)
}

/// Builds every entry of the repository at `root`.
pub fn build_repository(root: &Path, options: &Options) -> Result<RepositoryBuild, SetupError> {
    if !root.is_dir() {
        return Err(SetupError::NoRepository(root.to_path_buf()));
    }
    let started = Instant::now();
    // The kustomize tables are parsed while discovery reads the repository, not by the first
    // build while the other threads wait for it; on the thread pool, which this starts while
    // the configuration and the checkout are read, not on one more thread of its own.
    rayon::spawn(plumb_kustomize::prepare);
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let config = Config::load(&root)?;
    let discovery = match &options.checkout {
        Some(checkout) => sync::discover_in(&root, &config.sources, checkout.clone()),
        None => sync::discover(&root, &config.sources),
    };
    let entries = entries(&root, &config, options, &discovery)?;
    let cluster = Cluster {
        config: &config,
        discovery: &discovery,
        fetched: Default::default(),
        charts: Default::default(),
        file_systems: FileSystems::new(&root, options.remote.clone()),
        shared_builds: crate::shared_builds::SharedBuilds::new(discovery.path_uses.clone()),
    };
    if let Some(fs) = &discovery.file_system {
        cluster.file_systems.seed(&root, fs.clone());
    }
    // The remote entries the kustomization files list are fetched ahead, on threads of their
    // own, instead of by each build that lists one while a thread of the pool waits on the
    // network.
    let prefetch = options
        .remote
        .clone()
        .filter(|_| !discovery.remote_entries.is_empty())
        .map(|remote| plumb_kustomize::prefetch(remote, discovery.remote_entries.clone()));
    let discovery_seconds = started.elapsed().as_secs_f64();
    let builds = entries
        .par_iter()
        .map(|e| build_entry(&root, e, &cluster, options))
        .collect();
    let builds = if options.entries.is_empty() && config.clusters.is_empty() {
        crate::joined::join_nested_syncs(builds, &discovery, &config.sources)
    } else {
        builds
    };
    // Done by now, unless no build lists what it reads: nothing is left writing to the cache.
    if let Some(prefetch) = prefetch {
        prefetch.join();
    }
    cluster.fetched.join();
    // The files read and parsed are left to a caller that exits next, and otherwise freed on a
    // thread of their own: one by one they were 2% of a build, which no caller need wait for.
    let copied_builds = cluster.shared_builds.copies();
    let caches = (
        cluster.file_systems,
        cluster.shared_builds,
        discovery.file_system,
    );
    if options.exits_after {
        std::mem::forget(caches);
    } else {
        std::thread::spawn(move || drop(caches));
    }
    // Those built, unless `--entry` chose among them.
    let clusters = if options.entries.is_empty() {
        builds
            .iter()
            .map(|e: &EntryBuild| e.entry.clone())
            .collect()
    } else if config.clusters.is_empty() {
        discovery.entries.clone()
    } else {
        config.clusters.clone()
    };
    Ok(RepositoryBuild {
        root,
        entries: builds,
        clusters,
        discovery_seconds,
        copied_builds,
        age_keys: options.age_keys.clone(),
    })
}

/// Where ArtifactGenerators stage their ExternalArtifacts: a directory made on first use.
struct Staging<'a> {
    root: &'a Path,
    dir: Option<tempfile::TempDir>,
}

impl Staging<'_> {
    fn dir(&mut self) -> std::io::Result<&Path> {
        if self.dir.is_none() {
            self.dir = Some(
                tempfile::Builder::new()
                    .prefix("plumb-artifacts-")
                    .tempdir()?,
            );
        }
        Ok(self
            .dir
            .as_ref()
            .map(tempfile::TempDir::path)
            .unwrap_or(self.root))
    }
}

/// What every entry of one repository shares.
struct Cluster<'a> {
    config: &'a Config,
    discovery: &'a Discovery,
    /// Remote sources fetched so far, or being fetched ahead, shared by every entry.
    fetched: crate::fetch::FetchAhead,
    /// Charts fetched so far, shared by every entry.
    charts: crate::helm_release::ChartOnce,
    /// One file system per source tree, shared by every entry.
    file_systems: FileSystems,
    /// Builds of the directories several Kustomizations build, shared by every entry.
    shared_builds: crate::shared_builds::SharedBuilds,
}

/// A Kustomization waiting to be built.
struct Node {
    ks: FluxKustomization,
    parent: Option<usize>,
    chain: Vec<String>,
    synthetic: bool,
}

/// The result of building one node.
struct Built {
    path: String,
    objects: Vec<Object>,
    diagnostics: Vec<Diagnostic>,
    /// What was assumed to build it (its source is this repository, a variable source it
    /// produces itself).
    assumed: Vec<Inference>,
    /// Why it was not built, when that is not an error of the repository.
    not_built: Option<String>,
    /// Why its source could not be fetched.
    unavailable: Option<String>,
}

impl Built {
    /// Nothing built, for the reason given.
    fn unbuilt(path: String, not_built: Option<String>, unavailable: Option<String>) -> Built {
        Built {
            path,
            objects: Vec::new(),
            diagnostics: Vec::new(),
            assumed: Vec::new(),
            not_built,
            unavailable,
        }
    }

    /// Whether a required substituteFrom source was missing.
    fn lacks_source(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.code == Code::SubstituteSourceMissing)
    }

    fn failed(path: String, diagnostic: Diagnostic) -> Built {
        Built {
            path,
            objects: Vec::new(),
            diagnostics: vec![diagnostic],
            assumed: Vec::new(),
            not_built: None,
            unavailable: None,
        }
    }
}

struct Context<'a> {
    root: &'a Path,
    fetcher: Option<&'a dyn crate::fetch::Fetcher>,
    fetched: &'a crate::fetch::FetchOnce,
    sources: &'a Sources,
    produced: &'a Produced,
    mode: Mode,
    keys: Option<&'a crate::sops::AgeKeys>,
    file_systems: &'a FileSystems,
    shared_builds: &'a crate::shared_builds::SharedBuilds,
}

fn build_entry(root: &Path, entry: &str, cluster: &Cluster<'_>, options: &Options) -> EntryBuild {
    let started = Instant::now();
    let config = cluster.config;
    let operator_sync = cluster.discovery.sync_for(entry, &config.sources);
    // What bootstrap applies before Flux, read and rendered beside the entry's own build.
    let ((bootstrap, bootstrap_releases), (discovery, self_sync, repository_inference)) =
        rayon::join(
            || {
                let bootstrap = cluster
                    .file_systems
                    .confined(root)
                    .map(|fs| crate::bootstrap::load(&fs, root, &config.bootstrap, entry))
                    .unwrap_or_default();
                let releases = crate::helm_release::bootstrap::render_bootstrap(
                    &bootstrap,
                    &crate::helm_release::bootstrap::BootstrapInputs {
                        root,
                        fetcher: options.fetcher.as_deref(),
                        charts: &cluster.charts,
                        kube_version: crate::helm_release::capabilities::kube_version(
                            config.kubernetes_version.as_deref(),
                        ),
                    },
                    options.renderer.as_ref(),
                );
                (bootstrap, releases)
            },
            || {
                crate::entry_sync::self_sync(
                    root,
                    entry,
                    operator_sync,
                    cluster.discovery,
                    &cluster.file_systems,
                )
            },
        );
    // An entry applied by hand has no Kustomization of its own: the GitRepository it defines
    // is the repository.
    let repository_source = self_sync
        .as_ref()
        .map(|k| k.source_ref.clone())
        .or_else(|| match &repository_inference {
            Some(Inference::HandApplied { source, .. }) => Some(source.clone()),
            _ => None,
        });
    // The Flux the cluster runs decides how it substitutes, when its FluxInstance pins it or
    // `flux bootstrap` wrote its version.
    let flux_pin = operator_sync
        .and_then(crate::flux_version::FluxPin::of_sync)
        .or_else(|| {
            let bootstrap = sync::BOOTSTRAP_NAME;
            let source = repository_source.clone().unwrap_or_else(|| {
                crate::model::ObjectRef::new("GitRepository", bootstrap, bootstrap)
            });
            crate::flux_version::FluxPin::of_bootstrap(root, entry, source)
        });
    let lenient_flux = flux_pin
        .as_ref()
        .filter(|p| p.lenient())
        .map(crate::flux_version::FluxPin::lenient_inference);
    let mode = match &lenient_flux {
        Some(_) => Mode::Lenient,
        None => options.mode,
    };
    let mut sources = Sources::new(repository_source.clone(), config.sources.clone());
    sources.repository_inference = repository_inference;
    sources.cluster_syncs = cluster
        .discovery
        .syncs
        .iter()
        .map(sync::ClusterSync::inference)
        .collect();
    sources.checkout = cluster.discovery.checkout.clone();
    let mut nodes: Vec<Node> = Vec::new();
    let mut results: Vec<Option<Built>> = Vec::new();
    let mut by_key: HashMap<String, usize> = HashMap::new();
    let mut produced = Produced::default();
    let before_flux = crate::helm_release::bootstrap::before_flux(&bootstrap, &bootstrap_releases);
    for object in &before_flux {
        if object.group().is_empty() && matches!(object.kind(), "ConfigMap" | "Secret") {
            produced.add_bootstrap(object);
        }
    }
    let mut helm_releases = Vec::new();
    let mut found_sources = Vec::new();
    let mut staging = Staging { root, dir: None };
    let mut seconds: HashMap<usize, f64> = HashMap::new();
    // Kustomizations whose substituteFrom source was missing, held back while others may still
    // produce it (ahgraber/homelab-gitops-k3s's ClusterExternalSecret makes cluster-secrets in
    // every namespace, built beside its users): once nothing else is left to build, those whose
    // source now exists are built again, as Flux retries them until it exists.
    let mut held: Vec<(usize, (Built, Vec<Found>), f64)> = Vec::new();
    let mut retried: HashSet<usize> = HashSet::new();
    let kustomize_started = Instant::now();

    match self_sync {
        Some(ks) => {
            by_key.insert(ks.key(), 0);
            nodes.push(Node {
                chain: vec![ks.key()],
                ks,
                parent: None,
                synthetic: false,
            });
            results.push(None);
        }
        None => {
            let value = json!({
                "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
                "kind": "Kustomization",
                "metadata": {"name": entry, "namespace": ""},
                "spec": {"path": entry},
            });
            let mut ks = FluxKustomization::from_object(Object {
                value,
                origin: None,
            });
            ks.namespace = String::new();
            // It stands for a directory, not an object: it has no sourceRef to diagnose.
            ks.problems.clear();
            // An entry whose build needs what could not be fetched is left unbuilt, as a
            // Kustomization is: not a mistake of the repository.
            let (mut objects, mut diagnostics, unfetched) = match discovery {
                Ok(objects) => (objects, Vec::new(), Unfetched::default()),
                Err(d) => match Unfetched::of(&d, root) {
                    Some(unfetched) => (Vec::new(), Vec::new(), unfetched),
                    None => (Vec::new(), vec![d], Unfetched::default()),
                },
            };
            crate::resourceset::expand_all(&mut objects, &mut diagnostics);
            nodes.push(Node {
                chain: vec![format!(
                    "entry {}",
                    if entry.is_empty() { "." } else { entry }
                )],
                ks,
                parent: None,
                synthetic: true,
            });
            results.push(None);
            let built = Built {
                path: entry.to_string(),
                objects,
                diagnostics,
                assumed: Vec::new(),
                not_built: unfetched.not_built,
                unavailable: unfetched.unavailable,
            };
            register(
                0,
                &built,
                crate::found::classify(&built.objects),
                &mut nodes,
                &mut results,
                &mut by_key,
                &mut produced,
                &mut sources,
                &mut helm_releases,
                &mut found_sources,
                &mut staging,
            );
            results[0] = Some(built);
            fetch_ahead(cluster, options, &found_sources, &sources, &nodes, &results);
        }
    }

    loop {
        let pending: Vec<usize> = (0..nodes.len())
            .filter(|&i| results[i].is_none() && !held.iter().any(|h| h.0 == i))
            .collect();
        let finished: Vec<(usize, (Built, Vec<Found>), f64)> = if pending.is_empty() {
            if held.is_empty() {
                break;
            }
            // Nothing else is left to build: those whose source now exists are built again
            // (they stay pending), the others fail as they are.
            std::mem::take(&mut held)
                .into_iter()
                .filter(|(i, ..)| !(retried.insert(*i) && produced.has_sources_of(&nodes[*i].ks)))
                .collect()
        } else {
            let ready = select_ready(&pending, &nodes, &produced, &sources);
            let ctx = Context {
                root,
                fetcher: options.fetcher.as_deref(),
                fetched: &cluster.fetched.once,
                sources: &sources,
                produced: &produced,
                mode,
                keys: options.age_keys.as_deref(),
                file_systems: &cluster.file_systems,
                shared_builds: &cluster.shared_builds,
            };
            // What each object adds to the graph is found beside its build, in parallel.
            let built: Vec<((Built, Vec<Found>), f64)> = ready
                .par_iter()
                .map(|&i| {
                    crate::timing::timed(|| {
                        let b = build_node(&nodes[i], &ctx);
                        let found = crate::found::classify(&b.objects);
                        (b, found)
                    })
                })
                .collect();
            let (waiting, done): (Vec<_>, Vec<_>) = ready
                .into_iter()
                .zip(built)
                .map(|(i, (b, took))| (i, b, took))
                .partition(|(i, (b, _), _)| b.lacks_source() && !retried.contains(i));
            held.extend(waiting);
            done
        };
        let sources_before = found_sources.len();
        for (i, (b, found), took) in finished {
            seconds.insert(i, took);
            register(
                i,
                &b,
                found,
                &mut nodes,
                &mut results,
                &mut by_key,
                &mut produced,
                &mut sources,
                &mut helm_releases,
                &mut found_sources,
                &mut staging,
            );
            results[i] = Some(b);
        }
        fetch_ahead(
            cluster,
            options,
            &found_sources[sources_before..],
            &sources,
            &nodes,
            &results,
        );
    }

    let order = tree_order(&nodes);
    let mut kustomizations = Vec::with_capacity(nodes.len());
    let mut slots: Vec<Option<Node>> = nodes.into_iter().map(Some).collect();
    let mut built: Vec<Option<Built>> = results;
    let mut assumptions: Vec<Inference> = lenient_flux.into_iter().collect();
    for i in order {
        let (Some(node), Some(b)) = (slots[i].take(), built[i].take()) else {
            continue;
        };
        let parent = node
            .parent
            .and_then(|p| kustomizations_key(&kustomizations, p, &by_key));
        let diagnostics: Vec<Diagnostic> = node
            .ks
            .problems
            .iter()
            .cloned()
            .chain(b.diagnostics)
            .map(|d| d.with_chain(&node.chain).relative_to(root))
            .collect();
        for why in b.assumed {
            if !assumptions.contains(&why) {
                assumptions.push(why);
            }
        }
        let status = match (b.not_built, b.unavailable) {
            (Some(reason), _) => Status::NotBuilt(reason),
            (None, Some(reason)) => Status::Unavailable(reason),
            _ if diagnostics.iter().any(Diagnostic::is_error) => Status::Failed,
            _ => Status::Built,
        };
        let source = if node.synthetic {
            String::new()
        } else {
            node.ks.source_ref.to_string()
        };
        kustomizations.push((
            i,
            KustomizationBuild {
                source,
                path: b.path,
                parent,
                chain: node.chain,
                objects: b.objects,
                diagnostics,
                synthetic: node.synthetic,
                status,
                kustomization: node.ks,
                seconds: seconds.get(&i).copied().unwrap_or_default(),
            },
        ));
    }
    let mut kustomizations: Vec<KustomizationBuild> =
        kustomizations.into_iter().map(|(_, k)| k).collect();
    crate::resourceset::depends_on::add_edges(&mut kustomizations);
    let kustomize_seconds = kustomize_started.elapsed().as_secs_f64();
    let helm_started = Instant::now();
    let releases = crate::helm_release::render_releases(
        &kustomizations,
        &before_flux,
        &crate::helm_release::Inputs {
            root,
            fetcher: options.fetcher.as_deref(),
            fetched: &cluster.fetched.once,
            sources: &sources,
            lookup: &produced,
            keys: options.age_keys.as_deref(),
            charts: &cluster.charts,
            kube_version: crate::helm_release::capabilities::kube_version(
                config.kubernetes_version.as_deref(),
            ),
        },
        options.renderer.as_ref(),
    )
    .into_iter()
    .map(|mut r| {
        r.diagnostics = r
            .diagnostics
            .into_iter()
            .map(|d| d.relative_to(root))
            .collect();
        r
    })
    .collect();
    let helm_seconds = helm_started.elapsed().as_secs_f64();
    let diagnostics = crate::dependencies::graph_diagnostics(&kustomizations, &helm_releases)
        .into_iter()
        .map(|d| d.relative_to(root))
        .collect();
    EntryBuild {
        entry: entry.to_string(),
        kustomizations,
        helm_releases,
        releases,
        sources: found_sources,
        repository_source,
        flux_version: flux_pin
            .as_ref()
            .and_then(crate::flux_version::FluxPin::minor),
        diagnostics,
        assumptions,
        bootstrap,
        bootstrap_releases,
        runtime_secrets: produced.runtime,
        staging: staging.dir.map(std::sync::Arc::new),
        seconds: started.elapsed().as_secs_f64(),
        stages: crate::timing::Stages {
            kustomize: kustomize_seconds,
            helm: helm_seconds,
        },
    }
}

/// Starts fetching the sources just `found` that the Kustomizations still to be built use.
fn fetch_ahead(
    cluster: &Cluster<'_>,
    options: &Options,
    found: &[(Source, String)],
    sources: &Sources,
    nodes: &[Node],
    results: &[Option<Built>],
) {
    let pending: Vec<&ObjectRef> = nodes
        .iter()
        .zip(results)
        .filter(|(n, r)| r.is_none() && !n.synthetic)
        .map(|(n, _)| &n.ks.source_ref)
        .collect();
    let found = found.iter().map(|(s, _)| s);
    cluster
        .fetched
        .start(options.fetcher.as_ref(), found, sources, &pending);
}

fn kustomizations_key(
    done: &[(usize, KustomizationBuild)],
    parent: usize,
    _by_key: &HashMap<String, usize>,
) -> Option<String> {
    done.iter()
        .find(|(i, _)| *i == parent)
        .map(|(_, k)| k.key())
}

/// Nodes whose inputs are all there; when none is, those missing only optional inputs; when
/// none is, all of them (their build reports what is missing).
fn select_ready(
    pending: &[usize],
    nodes: &[Node],
    produced: &Produced,
    sources: &Sources,
) -> Vec<usize> {
    let missing = |i: usize| -> (usize, usize) {
        let ks = &nodes[i].ks;
        let mut required = 0;
        let mut optional = 0;
        if let Some(post) = &ks.post_build {
            for r in &post.substitute_from {
                if !produced.holds(&r.kind, &ks.namespace, &r.name) {
                    if r.optional {
                        optional += 1;
                    } else {
                        required += 1;
                    }
                }
            }
        }
        if sources.resolve(&ks.source_ref) == Resolution::NotFound {
            required += 1;
        }
        (required, optional)
    };
    let counts: Vec<(usize, (usize, usize))> = pending.iter().map(|&i| (i, missing(i))).collect();
    let complete: Vec<usize> = counts
        .iter()
        .filter(|(_, (r, o))| *r == 0 && *o == 0)
        .map(|(i, _)| *i)
        .collect();
    if !complete.is_empty() {
        return complete;
    }
    let only_optional: Vec<usize> = counts
        .iter()
        .filter(|(_, (r, _))| *r == 0)
        .map(|(i, _)| *i)
        .collect();
    if !only_optional.is_empty() {
        return only_optional;
    }
    pending.to_vec()
}

/// Records what node `i` produced: child Kustomizations to build, ConfigMaps and Secrets for
/// substitution, sources and HelmReleases.
#[allow(clippy::too_many_arguments)]
fn register(
    i: usize,
    built: &Built,
    found: Vec<Found>,
    nodes: &mut Vec<Node>,
    results: &mut Vec<Option<Built>>,
    by_key: &mut HashMap<String, usize>,
    produced: &mut Produced,
    sources: &mut Sources,
    helm_releases: &mut Vec<(HelmRelease, String)>,
    found_sources: &mut Vec<(Source, String)>,
    staging: &mut Staging<'_>,
) {
    // The synthetic root is named by its chain entry (`entry clusters/dev`), not `/path`.
    let parent_key = nodes[i].chain.last().cloned().unwrap_or_default();
    let parent_chain = nodes[i].chain.clone();
    // A Kustomization that failed applies nothing in the cluster either: what it would hold
    // is missing there too, and is reported as missing.
    let unbuilt = built.not_built.is_some() || built.unavailable.is_some();
    if unbuilt && !nodes[i].synthetic {
        produced.unseen.add(&nodes[i].ks);
    }
    let mut late = Vec::new();
    for (object, found) in built.objects.iter().zip(found) {
        match found {
            Found::Plain => {}
            Found::Produced => produced.add(object),
            Found::Kustomization(ks) => {
                let key = ks.key();
                match by_key.get(&key) {
                    Some(&existing) if existing == i || nodes[existing].parent.is_none() => {}
                    Some(&existing) => late.push(
                        Diagnostic::warning(
                            Code::TwoWriters,
                            format!(
                            "Kustomization {key} is also produced by {}: two writers of one object",
                            nodes[existing]
                                .parent
                                .map(|p| nodes[p].ks.key())
                                .unwrap_or_default()
                        ),
                        )
                        .at(object.origin.as_deref()),
                    ),
                    None => {
                        by_key.insert(key.clone(), nodes.len());
                        let mut chain = parent_chain.clone();
                        chain.push(key);
                        nodes.push(Node {
                            ks: *ks,
                            parent: Some(i),
                            chain,
                            synthetic: false,
                        });
                        results.push(None);
                    }
                }
            }
            Found::Other(other) => {
                let other = *other;
                if let Some(secret) = other.runtime_secret {
                    produced.runtime.push(secret);
                }
                if let Some(generator) = other.generator {
                    let root = staging.root;
                    let generated = match staging.dir() {
                        Ok(dir) => crate::artifact::stage_generator(&generator, sources, root, dir),
                        Err(e) => crate::artifact::Generated::unstaged(
                            &generator,
                            &format!("cannot stage artifacts: {e}"),
                        ),
                    };
                    for out in generated.outputs {
                        let id = out.source.id.clone();
                        sources.generated.insert(id.clone(), out.place);
                        sources.add(out.source.clone());
                        found_sources.push((out.source, parent_key.clone()));
                        sources.artifacts.insert(id, out.resolution);
                    }
                    sources.undiscovered.extend(generated.undiscovered);
                }
                if let Some(source) = other.source {
                    sources.add(source.clone());
                    found_sources.push((source, parent_key.clone()));
                } else if let Some(hr) = other.helm_release {
                    helm_releases.push((hr, parent_key.clone()));
                }
            }
        }
    }
    // Warnings found while registering belong to the producing node, reported with its build.
    if !late.is_empty() {
        nodes[i].ks.problems.extend(late);
    }
}

/// Parents before children, children in the order they were produced.
fn tree_order(nodes: &[Node]) -> Vec<usize> {
    let mut children: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    let mut roots = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        match n.parent {
            Some(p) => children.entry(p).or_default().push(i),
            None => roots.push(i),
        }
    }
    let mut out = Vec::with_capacity(nodes.len());
    let mut stack: Vec<usize> = roots.into_iter().rev().collect();
    while let Some(i) = stack.pop() {
        out.push(i);
        if let Some(c) = children.get(&i) {
            stack.extend(c.iter().rev());
        }
    }
    out
}

/// What the ArtifactGenerators of the cluster do generate in `wanted`'s namespace, and where
/// each is named, for an ExternalArtifact that none generates.
fn generated_help(ctx: &Context<'_>, wanted: &ObjectRef) -> String {
    let same_namespace: Vec<String> = ctx
        .sources
        .generated
        .iter()
        .filter(|(id, _)| id.namespace == wanted.namespace)
        .map(|(id, place)| match place {
            Some(p) => {
                let file = p.file.strip_prefix(ctx.root).unwrap_or(&p.file);
                format!("'{}' ({}:{})", id.name, file.display(), p.line)
            }
            None => format!("'{}'", id.name),
        })
        .collect();
    if same_namespace.is_empty() {
        format!(
            "add an ArtifactGenerator with an artifact named '{}' in namespace {}, or map the name in .plumb.yaml `sources:`",
            wanted.name, wanted.namespace
        )
    } else {
        format!(
            "the ArtifactGenerators of namespace {} generate {}",
            wanted.namespace,
            same_namespace.join(", ")
        )
    }
}

/// Builds one Flux Kustomization.
fn build_node(node: &Node, ctx: &Context<'_>) -> Built {
    let ks = &node.ks;
    let raw_path = ks.path.clone().unwrap_or_default();
    if ks.name.is_empty()
        || ks.source_ref.name.is_empty()
        || !crate::model::KUSTOMIZATION_SOURCE_KINDS.contains(&ks.source_ref.kind.as_str())
    {
        // The API server refuses it, so nothing of it is applied; its problems say why, and
        // looking its source up would only add a second error about the same field.
        return Built::unbuilt(source::clean_relative(&raw_path), None, None);
    }
    let mut staged = None;
    let (source_dir, assumed) = match ctx.sources.resolve(&ks.source_ref) {
        Resolution::Dir(dir) => (dir, None),
        Resolution::Assumed(dir, why) => (dir, Some(why)),
        Resolution::Staged(tree) => {
            let dir = tree.dir.to_string_lossy().into_owned();
            staged = Some(tree);
            (dir, None)
        }
        Resolution::Unstaged { reason, error, at } => {
            let path = source::clean_relative(&raw_path);
            if !error {
                return Built {
                    path,
                    objects: Vec::new(),
                    diagnostics: Vec::new(),
                    assumed: Vec::new(),
                    not_built: Some(reason),
                    unavailable: None,
                };
            }
            let d = Diagnostic::error(
                Code::SourceNotReady,
                format!("source {} is not ready: {reason}", ks.source_ref),
            );
            // The mistake is in the ArtifactGenerator: point there, and say who needed it.
            let d = match &at {
                Some(p) => d.at_line(&p.file, p.line, p.column).with_help(format!(
                    "Kustomization {} reads this ExternalArtifact through its sourceRef{}",
                    ks.key(),
                    ks.object
                        .node_at(&["spec", "sourceRef"])
                        .and_then(|n| n.span.as_ref())
                        .map(|s| {
                            let file = s.file.path();
                            let file = file.strip_prefix(ctx.root).unwrap_or(file);
                            format!(" ({}:{})", file.display(), s.location().line)
                        })
                        .unwrap_or_default()
                )),
                None => d.at(ks.object.node_at(&["spec", "sourceRef"])),
            };
            return Built::failed(path, d);
        }
        Resolution::Unmapped { url } if ctx.fetcher.is_some() => {
            let source = ctx.sources.known.get(&ks.source_ref);
            let secret =
                source.and_then(|s| crate::fetch::source_secret(s, ctx.produced, ctx.keys));
            let fetched = crate::fetch::fetch_for(
                ctx.fetcher,
                ctx.fetched,
                &ks.source_ref,
                source,
                url.as_deref(),
                secret.as_ref(),
                &ctx.sources.known,
            );
            let path = source::clean_relative(&raw_path);
            match fetched {
                Ok(dir) => (dir.to_string_lossy().into_owned(), None),
                Err(SourceProblem::NotReady(why)) => {
                    return Built::failed(
                        path,
                        Diagnostic::error(Code::SourceNotReady, why)
                            .at(ks.object.node_at(&["spec", "sourceRef"])),
                    );
                }
                Err(SourceProblem::NotFetched(why)) => {
                    return Built::unbuilt(path, Some(why), None)
                }
                Err(SourceProblem::Unavailable(why)) => {
                    return Built::unbuilt(path, None, Some(why))
                }
            }
        }
        Resolution::Unmapped { url } => {
            return Built {
                path: source::clean_relative(&raw_path),
                objects: Vec::new(),
                diagnostics: Vec::new(),
                assumed: Vec::new(),
                not_built: Some(if ks.source_ref.kind == "ExternalArtifact" {
                    format!(
                        "source {} is an ExternalArtifact that no ArtifactGenerator of this cluster stages",
                        ks.source_ref
                    )
                } else {
                    format!(
                        "source {}{} is another repository or artifact: not fetched",
                        ks.source_ref,
                        url.map(|u| format!(" ({u})")).unwrap_or_default()
                    )
                }),
                unavailable: None,
            };
        }
        Resolution::NotFound
            if ctx
                .produced
                .unseen
                .may_hold(&ks.source_ref.namespace)
                .is_some() =>
        {
            let what = format!("source {}", ks.source_ref);
            let why = ctx.produced.unseen.reason(&what, &ks.source_ref.namespace);
            return Built::unbuilt(source::clean_relative(&raw_path), why, None);
        }
        Resolution::NotFound if ks.source_ref.kind == "ExternalArtifact" => {
            // A generator whose pathPattern could not be walked may be what generates it.
            let pending = ctx
                .sources
                .undiscovered
                .iter()
                .find(|u| u.namespace == ks.source_ref.namespace);
            if let Some(u) = pending {
                let path = source::clean_relative(&raw_path);
                if !u.error {
                    return Built {
                        path,
                        objects: Vec::new(),
                        diagnostics: Vec::new(),
                        assumed: Vec::new(),
                        not_built: Some(u.reason.clone()),
                        unavailable: None,
                    };
                }
                let d = Diagnostic::error(
                    Code::SourceNotReady,
                    format!(
                        "source {} is not ready: its artifacts are not known: {}",
                        ks.source_ref, u.reason
                    ),
                );
                let d = match &u.at {
                    Some(p) => d.at_line(&p.file, p.line, p.column),
                    None => d.at(ks.object.node_at(&["spec", "sourceRef"])),
                };
                return Built::failed(path, d);
            }
            return Built::failed(
                source::clean_relative(&raw_path),
                Diagnostic::error(
                    Code::SourceNotFound,
                    format!(
                        "source {} not found: no ArtifactGenerator of this cluster generates it and .plumb.yaml does not map it",
                        ks.source_ref
                    ),
                )
                .at(ks.object.node_at(&["spec", "sourceRef"]))
                .with_help(generated_help(ctx, &ks.source_ref)),
            );
        }
        Resolution::NotFound => {
            return Built::failed(
                source::clean_relative(&raw_path),
                Diagnostic::error(
                    Code::SourceNotFound,
                    format!(
                        "source {} not found: no Kustomization of this cluster produces it and .plumb.yaml does not map it",
                        ks.source_ref
                    ),
                )
                .at(ks.object.node_at(&["spec", "sourceRef"])),
            );
        }
    };
    // In a tree outside the checkout (a staged or fetched artifact) the path is shown as
    // `@namespace/name/path`.
    let outside = Path::new(&source_dir).is_absolute();
    let rel = match outside {
        true => format!(
            "@{}/{}",
            ks.source_ref.key(),
            source::clean_relative(&raw_path)
        )
        .trim_end_matches('/')
        .to_string(),
        false => source::clean_relative(&format!("{source_dir}/{raw_path}")),
    };
    if raw_path.contains("${") {
        return Built::failed(
            rel,
            postbuild::unsubstituted_path(&node.chain, ks, &raw_path),
        );
    }
    let dir = match outside {
        true => source::join(Path::new(&source_dir), &source::clean_relative(&raw_path)),
        false => source::join(ctx.root, &rel),
    };
    if !dir.is_dir() {
        let shown = if raw_path.is_empty() {
            "(source root)"
        } else {
            &raw_path
        };
        return Built::failed(
            rel.clone(),
            Diagnostic::error(
                Code::PathNotFound,
                format!(
                    "kustomization path not found: spec.path `{shown}` is not a directory of {}",
                    ks.source_ref
                ),
            )
            .at(ks.object.node_at(&["spec", "path"])),
        );
    }
    let mut diagnostics = Vec::new();
    if ks.suspend {
        diagnostics.push(
            Diagnostic::warning(
                Code::Suspended,
                format!(
                    "Kustomization {} is suspended: the cluster does not apply what is built here",
                    ks.key()
                ),
            )
            .at(ks.object.node_at(&["spec", "suspend"])),
        );
    }
    let built = crate::dir_build::build_dir(
        ctx.file_systems,
        Some(ctx.shared_builds),
        &source::join(ctx.root, &source_dir),
        &dir,
        Some(ks),
    );
    let built = match &staged {
        Some(tree) => tree.remap(built),
        None => built,
    };
    let mut objects = match built {
        Ok(objects) => objects,
        Err(d) => {
            let unfetched = Unfetched::of(&d, ctx.root).unwrap_or_else(|| {
                diagnostics.push(d);
                Unfetched::default()
            });
            return Built {
                path: rel,
                objects: Vec::new(),
                diagnostics,
                assumed: assumed.into_iter().collect(),
                not_built: unfetched.not_built,
                unavailable: unfetched.unavailable,
            };
        }
    };
    for object in &objects {
        if object.api_version().is_empty() || object.kind().is_empty() || object.name().is_empty() {
            diagnostics.push(
                Diagnostic::error(
                    Code::InvalidManifest,
                    "failed to decode Kubernetes apiVersion, kind and name from an object",
                )
                .at(object.origin.as_deref()),
            );
        }
    }
    let mut assumed: Vec<Inference> = assumed.into_iter().collect();
    if let Some(post) = &ks.post_build {
        let lookup = WithOwn {
            cluster: ctx.produced,
            own: &objects,
            own_runtime: std::cell::OnceCell::new(),
        };
        // A required object that no built Kustomization produces, and one that was not built
        // may hold: this Kustomization is not built either.
        let mut unseen = None;
        for r in &post.substitute_from {
            // Read as collect_vars reads it: an object of the cluster, else one of its own, else
            // a Secret created at runtime by an object of the cluster, else by one of its own.
            let (ns, name) = (ks.namespace.as_str(), r.name.as_str());
            let found = lookup.find(&r.kind, ns, name);
            let own_object = found.is_some() && ctx.produced.find(&r.kind, ns, name).is_none();
            let own_runtime = (r.kind == "Secret"
                && found.is_none()
                && ctx.produced.runtime_secret(ns, name).is_none())
            .then(|| lookup.runtime_secret(ns, name))
            .flatten();
            if own_object || own_runtime.is_some() {
                assumed.push(Inference::SelfProduced {
                    object: ObjectRef::new(&r.kind, &ks.namespace, &r.name),
                    kustomization: ks.key(),
                    created_by: own_runtime.map(|s| s.producer.clone()),
                });
            }
            let missing = !lookup.holds(&r.kind, ns, name);
            if missing && !r.optional && unseen.is_none() {
                let what = format!("substituteFrom {} {ns}/{name}", r.kind);
                unseen = ctx.produced.unseen.reason(&what, ns);
            }
        }
        if let Some(why) = unseen {
            return Built::unbuilt(rel, Some(why), None);
        }
        let mut collected = postbuild::collect_vars(ks, &lookup, ctx.keys);
        postbuild::assume_open_vars(&mut collected, &objects);
        let source_missing = collected.source_missing();
        diagnostics.extend(collected.problems);
        let vars = collected.vars;
        // Flux refuses the whole substitution for one bad name: one error, at the name.
        let invalid = vars.keys().find(|k| !crate::varsub::is_valid_var_name(k));
        if let Some(name) = invalid {
            let at = ks
                .object
                .node_at(&["spec", "postBuild", "substitute"])
                .and_then(|m| m.as_mapping())
                .and_then(|m| {
                    m.iter()
                        .find(|(k, _)| k.scalar_value() == Some(name.as_str()))
                        .map(|(k, _)| k)
                })
                .or_else(|| ks.object.node_at(&["spec", "postBuild", "substituteFrom"]));
            diagnostics.push(
                Diagnostic::error(
                    Code::SubstitutionFailed,
                    format!(
                        "post build failed for Kustomization {}: '{name}' var name is invalid, must match '^[_[:alpha:]][_[:alpha:][:digit:]]*$'",
                        ks.key()
                    ),
                )
                .at(at)
                .with_help("rename the variable: letters, digits and `_`, not starting with a digit"),
            );
        }
        if invalid.is_none() {
            let failures = crate::parallel::map(objects.iter_mut().collect(), |object| {
                postbuild::substitute_in_place(&mut object.value, &vars, post, ctx.mode)
                    .err()
                    .map(|failure| postbuild::failure_diagnostic(object, &failure))
            });
            if !source_missing {
                diagnostics.extend(failures.into_iter().flatten());
            }
        }
    }
    if !ks.common_labels.is_empty() || !ks.common_annotations.is_empty() {
        for object in &mut objects {
            set_common_metadata(&mut object.value, &ks.common_labels, &ks.common_annotations);
        }
    }
    // flux-operator expands the ResourceSets kustomize-controller applied.
    crate::resourceset::expand_all(&mut objects, &mut diagnostics);
    Built {
        path: rel,
        objects,
        diagnostics,
        assumed,
        not_built: None,
        unavailable: None,
    }
}

/// The cluster's ConfigMaps and Secrets, then the Kustomization's own: one that substitutes
/// from an object it produces itself reads, once applied, the values it applied, and from a
/// Secret an object of its own creates at runtime (an ExternalSecret), that Secret.
struct WithOwn<'a> {
    cluster: &'a Produced,
    own: &'a [Object],
    /// The Secrets its own objects create, found on the first lookup that needs them: most
    /// Kustomizations never ask.
    own_runtime: std::cell::OnceCell<Vec<RuntimeSecret>>,
}

impl ObjectLookup for WithOwn<'_> {
    fn find(&self, kind: &str, namespace: &str, name: &str) -> Option<&Object> {
        self.cluster.find(kind, namespace, name).or_else(|| {
            self.own.iter().find(|o| {
                o.group().is_empty()
                    && o.kind() == kind
                    && o.namespace_or_default() == namespace
                    && o.name() == name
            })
        })
    }

    fn runtime_secret(&self, namespace: &str, name: &str) -> Option<&RuntimeSecret> {
        self.cluster.runtime_secret(namespace, name).or_else(|| {
            self.own_runtime
                .get_or_init(|| {
                    self.own
                        .iter()
                        .filter_map(crate::runtime::secret_created_by)
                        .collect()
                })
                .iter()
                .find(|s| s.is(namespace, name))
        })
    }
}

/// kustomize-controller's `SetCommonMetadata`: labels and annotations set on every object,
/// over the object's own.
fn set_common_metadata(
    value: &mut Value,
    labels: &[(String, String)],
    annotations: &[(String, String)],
) {
    let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    for (field, pairs) in [("labels", labels), ("annotations", annotations)] {
        if pairs.is_empty() {
            continue;
        }
        let entry = meta
            .entry(field)
            .or_insert_with(|| Value::Object(Default::default()));
        if !entry.is_object() {
            *entry = Value::Object(Default::default());
        }
        if let Some(map) = entry.as_object_mut() {
            for (k, v) in pairs {
                map.insert(k.clone(), Value::String(v.clone()));
            }
        }
    }
}
