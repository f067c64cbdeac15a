//! Building a whole repository as the cluster would: from each entry path, every Flux
//! Kustomization that will reconcile, each built exactly as kustomize-controller builds it.
//!
//! An entry directory is built first as it stands, to find the Kustomization (or FluxInstance)
//! that syncs it; that one is the root. Each built Kustomization's objects may hold child
//! Kustomizations, which are built in turn from their spec as the parent produced it (patched
//! and substituted). A Kustomization whose `substituteFrom` names a ConfigMap or Secret another
//! Kustomization produces waits for that one; everything else ready at the same time is built
//! in parallel. The result does not depend on the number of threads.

use crate::config::Config;
use crate::diagnostic::{self, Diagnostic};
use crate::generate;
use crate::model::{
    FluxInstanceSync, FluxKustomization, HelmRelease, Object, ObjectRef, Source, KUSTOMIZE_GROUP,
};
use crate::postbuild::{self, ObjectLookup};
use crate::source::{self, Resolution, Sources};
use crate::varsub::Mode;
use rayon::prelude::*;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

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
    /// Every source object built, with the Kustomization that produced it.
    pub sources: Vec<(Source, String)>,
    /// The source whose tree is this repository.
    pub repository_source: Option<ObjectRef>,
    /// Problems of the graph rather than of one Kustomization (dependsOn cycles).
    pub diagnostics: Vec<Diagnostic>,
}

/// A whole repository's build.
#[derive(Debug, Clone)]
pub struct RepositoryBuild {
    pub root: PathBuf,
    pub entries: Vec<EntryBuild>,
}

impl RepositoryBuild {
    /// Every diagnostic, paths relative to the repository root.
    pub fn diagnostics(&self) -> impl Iterator<Item = &Diagnostic> {
        self.entries.iter().flat_map(|e| {
            e.diagnostics
                .iter()
                .chain(e.kustomizations.iter().flat_map(|k| k.diagnostics.iter()))
        })
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics().any(Diagnostic::is_error)
    }

    /// One YAML stream of the selected Kustomizations' objects, each group preceded by a
    /// `# Source: Kustomization ns/name (path)` line (and `# Entry: path` with several entries).
    pub fn to_yaml(&self, select: &dyn Fn(&KustomizationBuild) -> bool) -> String {
        let mut out = String::new();
        let several = self.entries.len() > 1;
        let mut first = true;
        for entry in &self.entries {
            for k in entry.kustomizations.iter().filter(|k| select(k)) {
                if !first {
                    out.push_str("---\n");
                }
                first = false;
                if several {
                    out.push_str(&format!("# Entry: {}\n", entry.entry));
                }
                out.push_str(&format!("# Source: {}\n", k.title()));
                let values: Vec<&Value> = k.objects.iter().map(|o| &o.value).collect();
                out.push_str(&plumb_yaml::write_stream(values));
            }
        }
        out
    }

    /// `kind/namespace/name` per object, one a line (`kind//name` when cluster-scoped).
    pub fn to_names(&self, select: &dyn Fn(&KustomizationBuild) -> bool) -> String {
        let mut out = String::new();
        for entry in &self.entries {
            for k in entry.kustomizations.iter().filter(|k| select(k)) {
                for o in &k.objects {
                    out.push_str(&o.display_id());
                    out.push('\n');
                }
            }
        }
        out
    }

    /// The `plumb.build/v1` document (documented in `docs/build.md`).
    pub fn to_json(&self, select: &dyn Fn(&KustomizationBuild) -> bool) -> Value {
        let several = self.entries.len() > 1;
        let mut kustomizations = Vec::new();
        let mut errors = Vec::new();
        for entry in &self.entries {
            for k in entry.kustomizations.iter().filter(|k| select(k)) {
                let mut item = json!({
                    "namespace": k.kustomization.namespace,
                    "name": k.kustomization.name,
                    "path": k.path,
                    "source": k.source,
                    "depends_on": k.kustomization.depends_on.iter().map(ObjectRef::key).collect::<Vec<_>>(),
                    "objects": k.objects.iter().map(|o| o.value.clone()).collect::<Vec<_>>(),
                    "errors": k.diagnostics,
                });
                if let Some(map) = item.as_object_mut() {
                    map.insert("entry".into(), json!(entry.entry));
                    map.insert("parent".into(), json!(k.parent));
                    if k.synthetic {
                        map.insert("synthetic".into(), json!(true));
                    }
                }
                kustomizations.push(item);
            }
            for d in &entry.diagnostics {
                let mut v = json!(d);
                if several {
                    if let Some(map) = v.as_object_mut() {
                        map.insert("entry".into(), json!(entry.entry));
                    }
                }
                errors.push(v);
            }
        }
        json!({
            "schema": "plumb.build/v1",
            "kustomizations": kustomizations,
            "errors": errors,
        })
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
    #[error("no entry path: nothing in the repository syncs a cluster; pass --entry PATH or list `clusters:` in .plumb.yaml")]
    NoEntries,
}

/// The entries a build starts from: `options.entries`, else `.plumb.yaml`'s `clusters:`, else
/// every directory a Flux Kustomization or FluxInstance in the repository syncs from inside it.
pub fn entries(root: &Path, config: &Config, options: &Options) -> Result<Vec<String>, SetupError> {
    let list: Vec<String> = if !options.entries.is_empty() {
        options.entries.clone()
    } else if !config.clusters.is_empty() {
        config.clusters.clone()
    } else {
        discover_entries(root)
    };
    if list.is_empty() {
        return Err(SetupError::NoEntries);
    }
    let mut out = Vec::new();
    for e in list {
        let rel = source::clean_relative(&e);
        if !source::join(root, &rel).is_dir() {
            return Err(SetupError::NoEntry(e));
        }
        if !out.contains(&rel) {
            out.push(rel);
        }
    }
    Ok(out)
}

/// Directories that sync a cluster: the path of a Kustomization found inside that path whose
/// GitRepository is defined in the same directory (the `flux bootstrap` layout:
/// `clusters/dev/flux-system/gotk-sync.yaml`), or a FluxInstance's `spec.sync.path`.
pub fn discover_entries(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(fs) = plumb_kustomize::FileSystem::confined(root) else {
        return found;
    };
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs.read_dir(&dir) else {
            continue;
        };
        let dir_rel = dir
            .strip_prefix(root)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut objects = Vec::new();
        for path in entries {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.starts_with('.') {
                continue;
            }
            // Real directories only: a symlink to an ancestor would make the walk endless.
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                stack.push(path);
                continue;
            }
            if !(name.ends_with(".yaml") || name.ends_with(".yml")) {
                continue;
            }
            let Ok(text) = fs.read_text(&path) else {
                continue;
            };
            if !text.contains("Kustomization") && !text.contains("FluxInstance") {
                continue;
            }
            let Ok(docs) = plumb_yaml::parse_documents(&path, &text) else {
                continue;
            };
            objects.extend(
                docs.iter()
                    .filter_map(|d| plumb_yaml::to_json(d).ok())
                    .map(|value| Object {
                        value,
                        origin: None,
                    }),
            );
        }
        let git_repositories: Vec<ObjectRef> = objects
            .iter()
            .filter(|o| o.is(crate::model::SOURCE_GROUP, "GitRepository"))
            .map(|o| ObjectRef::new("GitRepository", o.namespace_or_default(), o.name()))
            .collect();
        for object in &objects {
            if object.is(KUSTOMIZE_GROUP, "Kustomization") {
                let ks = FluxKustomization::from_object(object.clone());
                let p = source::clean_relative(ks.path.as_deref().unwrap_or(""));
                let inside = p.is_empty() || dir_rel == p || dir_rel.starts_with(&format!("{p}/"));
                if inside && git_repositories.contains(&ks.source_ref) && !found.contains(&p) {
                    found.push(p);
                }
            } else if let Some(sync) = FluxInstanceSync::from_object(object) {
                let p = source::clean_relative(&sync.path);
                if !found.contains(&p) {
                    found.push(p);
                }
            }
        }
    }
    found.sort();
    found
}

/// Builds every entry of the repository at `root`.
pub fn build_repository(root: &Path, options: &Options) -> Result<RepositoryBuild, SetupError> {
    if !root.is_dir() {
        return Err(SetupError::NoRepository(root.to_path_buf()));
    }
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let config = Config::load(&root)?;
    let entries = entries(&root, &config, options)?;
    let builds = entries
        .par_iter()
        .map(|e| build_entry(&root, e, &config, options))
        .collect();
    Ok(RepositoryBuild {
        root,
        entries: builds,
    })
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
}

/// ConfigMaps and Secrets the cluster would hold, by kind, namespace and name.
#[derive(Default)]
struct Produced(HashMap<(String, String, String), Object>);

impl ObjectLookup for Produced {
    fn find(&self, kind: &str, namespace: &str, name: &str) -> Option<&Object> {
        self.0
            .get(&(kind.to_string(), namespace.to_string(), name.to_string()))
    }
}

struct Context<'a> {
    root: &'a Path,
    sources: &'a Sources,
    produced: &'a Produced,
    mode: Mode,
    keys: Option<&'a crate::sops::AgeKeys>,
}

fn build_entry(root: &Path, entry: &str, config: &Config, options: &Options) -> EntryBuild {
    let entry_dir = source::join(root, entry);
    // The entry as it stands, to find what syncs it.
    let discovery = build_dir(root, &entry_dir, None);
    let objects = match &discovery {
        Ok(objects) => objects.clone(),
        Err(_) => Vec::new(),
    };
    let self_sync = objects
        .iter()
        .filter(|o| o.is(KUSTOMIZE_GROUP, "Kustomization"))
        .map(|o| FluxKustomization::from_object(o.clone()))
        .filter(|k| source::clean_relative(k.path.as_deref().unwrap_or("")) == entry)
        .min_by_key(|k| k.source_ref.kind != "GitRepository")
        .or_else(|| {
            objects
                .iter()
                .filter_map(FluxInstanceSync::from_object)
                .find(|s| source::clean_relative(&s.path) == entry)
                .map(|s| s.kustomization())
        });
    let repository_source = self_sync.as_ref().map(|k| k.source_ref.clone());
    let mut sources = Sources::new(repository_source.clone(), config.sources.clone());
    let mut nodes: Vec<Node> = Vec::new();
    let mut results: Vec<Option<Built>> = Vec::new();
    let mut by_key: HashMap<String, usize> = HashMap::new();
    let mut produced = Produced::default();
    let mut helm_releases = Vec::new();
    let mut found_sources = Vec::new();

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
            let (objects, diagnostics) = match discovery {
                Ok(objects) => (objects, Vec::new()),
                Err(d) => (Vec::new(), vec![d]),
            };
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
            };
            register(
                0,
                &built,
                &mut nodes,
                &mut results,
                &mut by_key,
                &mut produced,
                &mut sources,
                &mut helm_releases,
                &mut found_sources,
            );
            results[0] = Some(built);
        }
    }

    loop {
        let pending: Vec<usize> = (0..nodes.len()).filter(|&i| results[i].is_none()).collect();
        if pending.is_empty() {
            break;
        }
        let ready = select_ready(&pending, &nodes, &produced, &sources);
        let ctx = Context {
            root,
            sources: &sources,
            produced: &produced,
            mode: options.mode,
            keys: options.age_keys.as_deref(),
        };
        let built: Vec<Built> = ready
            .par_iter()
            .map(|&i| build_node(&nodes[i], &ctx))
            .collect();
        for (i, b) in ready.into_iter().zip(built) {
            register(
                i,
                &b,
                &mut nodes,
                &mut results,
                &mut by_key,
                &mut produced,
                &mut sources,
                &mut helm_releases,
                &mut found_sources,
            );
            results[i] = Some(b);
        }
    }

    let order = tree_order(&nodes);
    let mut kustomizations = Vec::with_capacity(nodes.len());
    let mut slots: Vec<Option<Node>> = nodes.into_iter().map(Some).collect();
    let mut built: Vec<Option<Built>> = results;
    for i in order {
        let (Some(node), Some(b)) = (slots[i].take(), built[i].take()) else {
            continue;
        };
        let parent = node
            .parent
            .and_then(|p| kustomizations_key(&kustomizations, p, &by_key));
        let diagnostics = node
            .ks
            .problems
            .iter()
            .cloned()
            .chain(b.diagnostics)
            .map(|d| d.with_chain(&node.chain).relative_to(root))
            .collect();
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
                kustomization: node.ks,
            },
        ));
    }
    let kustomizations: Vec<KustomizationBuild> =
        kustomizations.into_iter().map(|(_, k)| k).collect();
    let diagnostics = graph_diagnostics(&kustomizations, &helm_releases)
        .into_iter()
        .map(|d| d.relative_to(root))
        .collect();
    EntryBuild {
        entry: entry.to_string(),
        kustomizations,
        helm_releases,
        sources: found_sources,
        repository_source,
        diagnostics,
    }
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
                if produced.find(&r.kind, &ks.namespace, &r.name).is_none() {
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
    nodes: &mut Vec<Node>,
    results: &mut Vec<Option<Built>>,
    by_key: &mut HashMap<String, usize>,
    produced: &mut Produced,
    sources: &mut Sources,
    helm_releases: &mut Vec<(HelmRelease, String)>,
    found_sources: &mut Vec<(Source, String)>,
) {
    // The synthetic root is named by its chain entry (`entry clusters/dev`), not `/path`.
    let parent_key = nodes[i].chain.last().cloned().unwrap_or_default();
    let parent_chain = nodes[i].chain.clone();
    let mut late = Vec::new();
    for object in &built.objects {
        match (object.group(), object.kind()) {
            ("", "ConfigMap") | ("", "Secret") => {
                produced
                    .0
                    .entry((
                        object.kind().to_string(),
                        object.namespace_or_default().to_string(),
                        object.name().to_string(),
                    ))
                    .or_insert_with(|| object.clone());
            }
            (KUSTOMIZE_GROUP, "Kustomization") => {
                let ks = FluxKustomization::from_object(object.clone());
                let key = ks.key();
                match by_key.get(&key) {
                    Some(&existing) if existing == i || nodes[existing].parent.is_none() => {}
                    Some(&existing) => late.push(
                        Diagnostic::warning(format!(
                            "Kustomization {key} is also produced by {}: two writers of one object",
                            nodes[existing]
                                .parent
                                .map(|p| nodes[p].ks.key())
                                .unwrap_or_default()
                        ))
                        .at(object.origin.as_ref()),
                    ),
                    None => {
                        by_key.insert(key.clone(), nodes.len());
                        let mut chain = parent_chain.clone();
                        chain.push(key);
                        nodes.push(Node {
                            ks,
                            parent: Some(i),
                            chain,
                            synthetic: false,
                        });
                        results.push(None);
                    }
                }
            }
            _ => {
                if let Some(source) = Source::from_object(object) {
                    sources.add(source.clone());
                    found_sources.push((source, parent_key.clone()));
                } else if let Some(hr) = HelmRelease::from_object(object) {
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

/// Builds one Flux Kustomization.
fn build_node(node: &Node, ctx: &Context<'_>) -> Built {
    let ks = &node.ks;
    let fail = |path: String, d: Diagnostic| Built {
        path,
        objects: Vec::new(),
        diagnostics: vec![d],
    };
    let source_dir = match ctx.sources.resolve(&ks.source_ref) {
        Resolution::Dir(dir) => dir,
        Resolution::Unmapped { url } => {
            let m = &ks.source_ref;
            return fail(
                String::new(),
                Diagnostic::error(format!(
                    "source {m}{} is not this repository, and .plumb.yaml does not map it to a directory",
                    url.map(|u| format!(" ({u})")).unwrap_or_default()
                ))
                .at(ks.object.node_at(&["spec", "sourceRef"]))
                .with_help(format!(
                    "add to .plumb.yaml: `sources: [{{kind: {}, namespace: {}, name: {}, path: <directory holding its tree>}}]`",
                    m.kind, m.namespace, m.name
                )),
            );
        }
        Resolution::NotFound => {
            return fail(
                String::new(),
                Diagnostic::error(format!(
                    "source {} not found: no Kustomization of this cluster produces it and .plumb.yaml does not map it",
                    ks.source_ref
                ))
                .at(ks.object.node_at(&["spec", "sourceRef"])),
            );
        }
    };
    let raw_path = ks.path.clone().unwrap_or_default();
    let rel = source::clean_relative(&format!("{source_dir}/{raw_path}"));
    if raw_path.contains("${") {
        return fail(
            rel,
            Diagnostic::error(format!(
                "spec.path `{raw_path}` holds a variable nothing substituted: the parent Kustomization has no postBuild, or the variable is not defined"
            ))
            .at(ks.object.node_at(&["spec", "path"]))
            .with_help("define the variable in the parent's postBuild.substitute or substituteFrom, or give it a default: `${VAR:=value}`"),
        );
    }
    let dir = source::join(ctx.root, &rel);
    if !dir.is_dir() {
        let shown = if raw_path.is_empty() {
            "(source root)"
        } else {
            &raw_path
        };
        return fail(
            rel.clone(),
            Diagnostic::error(format!(
                "kustomization path not found: spec.path `{shown}` is not a directory of {}",
                ks.source_ref
            ))
            .at(ks.object.node_at(&["spec", "path"])),
        );
    }
    let mut diagnostics = Vec::new();
    if ks.suspend {
        diagnostics.push(
            Diagnostic::warning(format!(
                "Kustomization {} is suspended: the cluster does not apply what is built here",
                ks.key()
            ))
            .at(ks.object.node_at(&["spec", "suspend"])),
        );
    }
    let mut objects = match build_dir(&source::join(ctx.root, &source_dir), &dir, Some(ks)) {
        Ok(objects) => objects,
        Err(d) => {
            diagnostics.push(d);
            return Built {
                path: rel,
                objects: Vec::new(),
                diagnostics,
            };
        }
    };
    for object in &objects {
        if object.api_version().is_empty() || object.kind().is_empty() || object.name().is_empty() {
            diagnostics.push(
                Diagnostic::error(
                    "failed to decode Kubernetes apiVersion, kind and name from an object"
                        .to_string(),
                )
                .at(object.origin.as_ref()),
            );
        }
    }
    if let Some(post) = &ks.post_build {
        let (vars, problems) = postbuild::collect_vars(ks, ctx.produced, ctx.keys);
        diagnostics.extend(problems);
        for object in &mut objects {
            match postbuild::substitute_object(&object.value, &vars, post, ctx.mode) {
                Ok(Some(value)) => object.value = value,
                Ok(None) => {}
                Err(failure) => diagnostics.push(postbuild::failure_diagnostic(object, &failure)),
            }
        }
    }
    if !ks.common_labels.is_empty() || !ks.common_annotations.is_empty() {
        for object in &mut objects {
            set_common_metadata(&mut object.value, &ks.common_labels, &ks.common_annotations);
        }
    }
    Built {
        path: rel,
        objects,
        diagnostics,
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

/// Builds `dir` as Flux does (generated kustomization, `ks`'s overlay) and returns the objects.
/// Builds `dir` as kustomize-controller does: no load restrictor, but inside a file system
/// rooted at the source (`root`), so that nothing outside it is read, through `..`, an
/// absolute path or a symlink.
fn build_dir(
    root: &Path,
    dir: &Path,
    ks: Option<&FluxKustomization>,
) -> Result<Vec<Object>, Diagnostic> {
    let fs =
        plumb_kustomize::FileSystem::confined(root).map_err(|e| diagnostic::from_kustomize(&e))?;
    if let Err(e) = fs.resolve(dir) {
        return Err(match ks {
            Some(ks) => Diagnostic::error(format!("spec.path: {e}"))
                .at(ks.object.node_at(&["spec", "path"])),
            None => Diagnostic::error(format!("entry path: {e}")),
        });
    }
    let k = generate::kustomization_for(&fs, dir, ks)?;
    let options = plumb_kustomize::BuildOptions {
        load_restrictor: plumb_kustomize::LoadRestrictor::None,
        fs,
        ..Default::default()
    };
    let list = plumb_kustomize::build_kustomization(&k, &options)
        .map_err(|e| diagnostic::from_kustomize(&e).in_file(&k.path))?;
    list.resources
        .into_iter()
        .map(|r| {
            let value = plumb_yaml::to_json(&r.node).map_err(|e| {
                Diagnostic::error(e.message.clone()).at_line(
                    &e.path,
                    e.location.line,
                    e.location.column,
                )
            })?;
            Ok(Object {
                value,
                origin: Some(r.node),
            })
        })
        .collect()
}

/// dependsOn problems of the whole graph: a cycle never reconciles (error); a dependency that
/// does not exist blocks the Kustomization forever (warning here, rule ORD005 in `plumb check`).
fn graph_diagnostics(
    kustomizations: &[KustomizationBuild],
    helm_releases: &[(HelmRelease, String)],
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let index: HashMap<String, usize> = kustomizations
        .iter()
        .enumerate()
        .map(|(i, k)| (k.key(), i))
        .collect();
    let dep_node = |k: &KustomizationBuild, j: usize| {
        k.kustomization
            .object
            .node_at(&["spec", "dependsOn"])
            .and_then(|n| n.as_sequence().and_then(|s| s.get(j)).or(Some(n)))
            .cloned()
    };
    for k in kustomizations {
        for (j, dep) in k.kustomization.depends_on.iter().enumerate() {
            if !index.contains_key(&dep.key()) {
                out.push(
                    Diagnostic::warning(format!(
                        "Kustomization {} depends on {}, which no Kustomization of this cluster creates: it will wait forever",
                        k.key(),
                        dep.key()
                    ))
                    .at(dep_node(k, j).as_ref())
                    .with_chain(&k.chain),
                );
            }
        }
    }
    // Cycles: depth-first search, each cycle reported once from its first member in tree order.
    let edges: Vec<Vec<usize>> = kustomizations
        .iter()
        .map(|k| {
            k.kustomization
                .depends_on
                .iter()
                .filter_map(|d| index.get(&d.key()).copied())
                .collect()
        })
        .collect();
    let mut state = vec![0u8; kustomizations.len()];
    let mut reported: Vec<Vec<usize>> = Vec::new();
    for start in 0..kustomizations.len() {
        let mut path = Vec::new();
        find_cycles(start, &edges, &mut state, &mut path, &mut reported);
    }
    for cycle in reported {
        let first = &kustomizations[cycle[0]];
        let next = &kustomizations[cycle[1 % cycle.len()]];
        let j = first
            .kustomization
            .depends_on
            .iter()
            .position(|d| d.key() == next.key())
            .unwrap_or(0);
        let names: Vec<String> = cycle
            .iter()
            .chain(std::iter::once(&cycle[0]))
            .map(|&i| kustomizations[i].key())
            .collect();
        out.push(
            Diagnostic::error(format!(
                "dependsOn cycle: {}: none of these Kustomizations ever becomes ready",
                names.join(" → ")
            ))
            .at(dep_node(first, j).as_ref())
            .with_chain(&first.chain),
        );
    }
    // HelmRelease cycles are rarer; report dependencies on missing HelmReleases only.
    let releases: Vec<String> = helm_releases.iter().map(|(h, _)| h.id.key()).collect();
    for (hr, _) in helm_releases {
        for dep in &hr.depends_on {
            if dep.kind == "HelmRelease" && !releases.contains(&dep.key()) {
                out.push(Diagnostic::warning(format!(
                    "HelmRelease {} depends on HelmRelease {}, which no Kustomization of this cluster creates",
                    hr.id.key(),
                    dep.key()
                )));
            }
        }
    }
    out
}

fn find_cycles(
    i: usize,
    edges: &[Vec<usize>],
    state: &mut [u8],
    path: &mut Vec<usize>,
    reported: &mut Vec<Vec<usize>>,
) {
    match state[i] {
        2 => return,
        1 => {
            if let Some(pos) = path.iter().position(|&p| p == i) {
                let cycle = path[pos..].to_vec();
                let mut sorted = cycle.clone();
                sorted.sort_unstable();
                if !reported.iter().any(|c| {
                    let mut s = c.clone();
                    s.sort_unstable();
                    s == sorted
                }) {
                    reported.push(cycle);
                }
            }
            return;
        }
        _ => {}
    }
    state[i] = 1;
    path.push(i);
    for &j in &edges[i] {
        find_cycles(j, edges, state, path, reported);
    }
    path.pop();
    state[i] = 2;
}
