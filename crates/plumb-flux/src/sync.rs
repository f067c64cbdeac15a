//! The cluster's own source: which Flux source syncs this repository into a cluster, where each
//! cluster's entry path is, and the checkout's own remotes.
//!
//! The source a cluster syncs from is rarely in the repository: `flux bootstrap` creates the
//! GitRepository `flux-system/flux-system`, and flux-operator creates it from a FluxInstance's
//! `spec.sync`, which is often only the values of a `flux-instance` HelmRelease. This module
//! finds those syncs in the repository's files, before anything is built, so that each cluster
//! can be built from its entry path with the root Kustomization the cluster really has.

use crate::config::SourceMapping;
use crate::model::{FluxKustomization, Object, ObjectRef, HELM_GROUP, KUSTOMIZE_GROUP};
use crate::source;
use plumb_yaml::Node;
use rayon::prelude::*;
use regex::Regex;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// The API group of flux-operator's kinds.
pub const OPERATOR_GROUP: &str = "fluxcd.controlplane.io";

/// Namespace and name of the source and Kustomization `flux bootstrap` creates, and of those
/// flux-operator creates (it names them after the FluxInstance's namespace).
pub const BOOTSTRAP_NAME: &str = "flux-system";

/// The source kinds a cluster can sync from.
pub const SYNC_KINDS: [&str; 3] = ["GitRepository", "OCIRepository", "Bucket"];

/// A source and root Kustomization that something outside the repository's Flux objects
/// creates: flux-operator from a FluxInstance's `spec.sync`.
#[derive(Debug, Clone)]
pub struct ClusterSync {
    /// The source object the operator creates.
    pub source: ObjectRef,
    pub url: Option<String>,
    /// `spec.sync.path`, cleaned: relative to the source's root.
    pub path: String,
    /// The directory of this repository taken to be the source's tree when no mapping says:
    /// `""` (the root), or for an artifact (OCIRepository, Bucket) whose `path` is not at the
    /// root, the one directory that holds it: the directory CI pushes (`kubernetes`).
    pub root: String,
    /// What declares it, for notes: `FluxInstance flux-system/flux`, `HelmRelease
    /// flux-system/flux-instance (values of the flux-instance chart)`.
    pub via: String,
    /// The `sync` mapping, for its file and line.
    pub origin: Option<Node>,
    /// `distribution.version` of the FluxInstance (`2.x`, `2.6.4`, `2.6.x`), when given.
    pub flux_version: Option<String>,
    /// The FluxInstance's `spec` (or the chart's `instance` values): its `sync`,
    /// `kustomize.patches` and `commonMetadata` are what the operator generates the sync from.
    pub instance: Value,
}

impl ClusterSync {
    /// What a build assumed when this sync stood for the repository's own: where it was found.
    pub fn inference(&self) -> crate::source::Inference {
        let (file, line) = match self.origin.as_ref().and_then(|n| n.span.as_ref()) {
            Some(span) => (
                Some(span.file.path().to_path_buf()),
                u32::try_from(span.location().line).ok(),
            ),
            None => (None, None),
        };
        crate::source::Inference::ClusterSync {
            source: self.source.clone(),
            via: self.via.clone(),
            dir: self.root.clone(),
            file,
            line,
        }
    }

    /// A FluxInstance's sync, from the object.
    pub fn from_flux_instance(object: &Object) -> Option<ClusterSync> {
        if !object.is(OPERATOR_GROUP, "FluxInstance") {
            return None;
        }
        let namespace = object.namespace_or_default();
        let spec = object.value.get("spec")?;
        let mut sync = ClusterSync::from_sync(
            spec.get("sync")?,
            namespace,
            object.node_at(&["spec", "sync"]).cloned(),
            format!("FluxInstance {namespace}/{}", object.name()),
        );
        sync.flux_version = distribution_version(spec);
        sync.instance = spec.clone();
        Some(sync)
    }

    /// The sync of the FluxInstance a `flux-instance` HelmRelease renders from its inline
    /// values (`instance.sync`). The chart creates the FluxInstance in the release's namespace.
    pub fn from_helm_release(object: &Object) -> Option<ClusterSync> {
        if !object.is(HELM_GROUP, "HelmRelease") || !is_flux_instance_chart(&object.value) {
            return None;
        }
        let spec = object.value.get("spec")?;
        let sync = spec.get("values")?.get("instance")?.get("sync")?;
        let namespace = spec
            .get("targetNamespace")
            .and_then(Value::as_str)
            .or_else(|| object.value["metadata"]["namespace"].as_str())
            .unwrap_or(BOOTSTRAP_NAME);
        let mut found = ClusterSync::from_sync(
            sync,
            namespace,
            object
                .node_at(&["spec", "values", "instance", "sync"])
                .cloned(),
            format!(
                "HelmRelease {namespace}/{} (values of the flux-instance chart)",
                object.name()
            ),
        );
        found.flux_version = distribution_version(&spec["values"]["instance"]);
        found.instance = spec["values"]["instance"].clone();
        Some(found)
    }

    /// The sync in a values file of the `flux-instance` chart (a file whose top level is
    /// `instance: {sync: ...}`, read by a HelmRelease through `valuesFrom`). Its namespace is
    /// not in the file: flux-operator's documented `flux-system` is assumed.
    pub fn from_values_file(path: &Path, value: &Value, node: &Node) -> Option<ClusterSync> {
        let sync = value.get("instance")?.get("sync")?;
        sync.get("path")?;
        if value.get("apiVersion").is_some() || value.get("kind").is_some() {
            return None;
        }
        let mut found = ClusterSync::from_sync(
            sync,
            BOOTSTRAP_NAME,
            node.get("instance").and_then(|n| n.get("sync")).cloned(),
            format!("{} (values of the flux-instance chart)", path.display()),
        );
        found.flux_version = distribution_version(&value["instance"]);
        found.instance = value["instance"].clone();
        Some(found)
    }

    fn from_sync(sync: &Value, namespace: &str, origin: Option<Node>, via: String) -> ClusterSync {
        let text = |k: &str| sync.get(k).and_then(Value::as_str);
        ClusterSync {
            source: ObjectRef::new(
                text("kind").unwrap_or("GitRepository"),
                namespace,
                text("name").unwrap_or(namespace),
            ),
            url: text("url").map(str::to_string),
            path: source::clean_relative(text("path").unwrap_or("")),
            root: String::new(),
            via,
            origin,
            flux_version: None,
            instance: serde_json::json!({ "sync": sync }),
        }
    }

    /// The sync of an object whose file names no namespace, placed in `namespace`: the
    /// targetNamespace of the Flux Kustomization that applies the file. The operator creates
    /// the sync's source and Kustomization in the FluxInstance's namespace, named after it
    /// unless `sync.name` says otherwise.
    fn place_in(&mut self, namespace: &str) {
        let old = std::mem::replace(&mut self.source.namespace, namespace.to_string());
        if self.instance["sync"].get("name").is_none() {
            self.source.name = namespace.to_string();
        }
        self.via = self
            .via
            .replacen(&format!(" {old}/"), &format!(" {namespace}/"), 1);
    }

    /// Whether the Flux this sync's FluxInstance installs substitutes leniently: a pinned
    /// version before 2.9 (kustomize-controller v1.9 made strict substitution the default).
    pub fn lenient_flux(&self) -> bool {
        self.flux_version
            .as_deref()
            .is_some_and(crate::flux_version::is_lenient)
    }

    /// The Flux minor version this sync's FluxInstance pins (`2.5.1` and `v2.5` are 2.5); `None`
    /// for a range (`2.x`, `>=2.4`) or no version, where the newest is what runs.
    pub fn flux_minor(&self) -> Option<(u32, u32)> {
        crate::flux_version::FluxPin::of_sync(self)?.minor()
    }

    /// The Kustomization the operator creates for this sync: named like its source, syncing
    /// `path` from it, with the FluxInstance's `spec.kustomize.patches` applied
    /// ([`crate::fluxinstance`]). Patches that fail are the Kustomization's problems.
    pub fn kustomization(&self) -> FluxKustomization {
        crate::fluxinstance::sync_kustomization(self)
    }

    /// Where the sync's path is in this checkout: `path` inside the directory `.plumb.yaml`
    /// maps the source to, else inside [`ClusterSync::root`].
    pub fn entry(&self, mappings: &[SourceMapping]) -> String {
        match self.mapping(mappings) {
            Some(m) => source::clean_relative(&format!("{}/{}", m.path.display(), self.path)),
            None => source::clean_relative(&format!("{}/{}", self.root, self.path)),
        }
    }

    fn mapping<'m>(&self, mappings: &'m [SourceMapping]) -> Option<&'m SourceMapping> {
        let s = &self.source;
        mappings
            .iter()
            .find(|m| m.matches(&s.kind, &s.namespace, &s.name))
    }

    /// The syncs this one stands for. A path holding variables
    /// (`kubernetes/clusters/${CLUSTER}/bootstrap`, substituted where the FluxInstance is
    /// built) stands for each directory of `dirs` (every directory of the repository,
    /// relative) it matches, a variable matching one whole name between slashes; a path with
    /// no segment free of variables matches nothing, and one that matches no directory stays
    /// as it is (no entry is found for it).
    fn instances(self, dirs: &[String]) -> Vec<ClusterSync> {
        if !self.path.contains("${") || self.path.split('/').all(|s| s.contains("${")) {
            return vec![self];
        }
        let variable = Regex::new(r"\$\{[^}/]*\}").expect("a valid pattern");
        let mut pattern = String::from("^");
        let mut rest = self.path.as_str();
        while let Some(m) = variable.find(rest) {
            pattern.push_str(&regex::escape(&rest[..m.start()]));
            pattern.push_str("[^/]+");
            rest = &rest[m.end()..];
        }
        pattern.push_str(&regex::escape(rest));
        pattern.push('$');
        let Ok(matcher) = Regex::new(&pattern) else {
            return vec![self];
        };
        let prefix = if self.root.is_empty() {
            String::new()
        } else {
            format!("{}/", self.root)
        };
        let found: Vec<ClusterSync> = dirs
            .iter()
            .filter_map(|d| d.strip_prefix(&prefix))
            .filter(|rel| matcher.is_match(rel))
            .map(|rel| {
                let mut instance = self.instance.clone();
                if let Some(sync) = instance.get_mut("sync").and_then(Value::as_object_mut) {
                    sync.insert("path".into(), Value::from(rel));
                }
                ClusterSync {
                    path: rel.to_string(),
                    via: format!("{}, whose sync path {} names {rel}", self.via, self.path),
                    instance,
                    ..self.clone()
                }
            })
            .collect();
        if found.is_empty() {
            vec![self]
        } else {
            found
        }
    }

    /// For an artifact whose path is not a directory at the repository root, the one directory
    /// of `dirs` (every directory of the repository, relative) under which it is: CI pushes a
    /// subdirectory (`flux push artifact --path=./kubernetes`) and the sync's path is relative
    /// to it. None, or several, leave the root: the entry is then not found.
    fn artifact_root(&self, root: &Path, dirs: &[String], mappings: &[SourceMapping]) -> String {
        let artifact = matches!(self.source.kind.as_str(), "OCIRepository" | "Bucket");
        if !artifact
            || self.path.is_empty()
            || self.mapping(mappings).is_some()
            || root.join(&self.path).is_dir()
        {
            return String::new();
        }
        let suffix = format!("/{}", self.path);
        let mut found = dirs
            .iter()
            .filter_map(|d| d.strip_suffix(&suffix))
            .filter(|d| !d.is_empty());
        match (found.next(), found.next()) {
            (Some(only), None) => only.to_string(),
            _ => String::new(),
        }
    }
}

/// `distribution.version` under `spec` (a FluxInstance) or `instance` (chart values).
fn distribution_version(spec: &Value) -> Option<String> {
    spec.get("distribution")?
        .get("version")?
        .as_str()
        .map(str::to_string)
}

/// Whether a HelmRelease's node may pass [`is_flux_instance_chart`]: its chart or chart
/// reference names the flux-instance chart. Read on the text of the scalars, which the
/// converted values' strings are made from.
fn may_be_flux_instance(hr: &Node) -> bool {
    [
        &["spec", "chart", "spec", "chart"][..],
        &["spec", "chartRef", "name"][..],
    ]
    .iter()
    .any(|path| hr.str_at(path).is_some_and(|t| t.contains("flux-instance")))
}

/// Whether a HelmRelease installs flux-operator's `flux-instance` chart: by `spec.chart.spec`'s
/// chart name, or a `chartRef` whose name says so (an OCIRepository of
/// `oci://ghcr.io/controlplaneio-fluxcd/charts/flux-instance`).
fn is_flux_instance_chart(hr: &Value) -> bool {
    let spec = &hr["spec"];
    let chart = spec["chart"]["spec"]["chart"].as_str().unwrap_or("");
    let chart_ref = spec["chartRef"]["name"].as_str().unwrap_or("");
    chart.rsplit('/').next() == Some("flux-instance") || chart_ref.contains("flux-instance")
}

/// What the repository says about its clusters, read from its files before any build.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// Entry paths, relative to the repository root, sorted.
    pub entries: Vec<String>,
    /// Every FluxInstance sync found (in a manifest, a HelmRelease's values, a values file).
    pub syncs: Vec<ClusterSync>,
    /// Entries found only because `flux bootstrap --path` must have created their root: the
    /// repository has no sync at all, they hold Flux Kustomizations, and no Kustomization
    /// builds their directory.
    pub bootstrap_entries: Vec<String>,
    /// Entries applied by hand (`kubectl apply -k`), each as the [`source::Inference`] that
    /// says so: the GitRepository it defines that is this checkout ([`applied_by_hand`]).
    pub hand_applied: Vec<source::Inference>,
    /// The Kustomization that makes each entry one in the `flux bootstrap` layout (inside the
    /// path it syncs, from this repository's source), by entry: the cluster has it, and it
    /// builds the entry, even where the entry's own kustomization no longer lists its file.
    pub entry_kustomizations: Vec<(String, Object)>,
    /// The git checkout holding the repository (read once, for discovery and the build).
    pub checkout: Checkout,
    /// The file system discovery read the repository through, with the files it read and
    /// parsed, for the build to read them from.
    pub file_system: Option<plumb_kustomize::FileSystem>,
    /// The remote entries (git repositories, `http(s)` files) the kustomization files of the
    /// repository list, each once, for the build to fetch ahead.
    pub remote_entries: Vec<String>,
    /// How many Kustomizations of the repository name each directory of it in `spec.path`,
    /// as written (a parent's patch or substitution may change it before the build).
    pub path_uses: HashMap<PathBuf, usize>,
}

impl Discovery {
    /// The sync whose path is `entry`.
    pub fn sync_for(&self, entry: &str, mappings: &[SourceMapping]) -> Option<&ClusterSync> {
        self.syncs.iter().find(|s| s.entry(mappings) == entry)
    }
}

/// Reads every YAML file of the repository that can declare a cluster: the `flux bootstrap`
/// layout (a Kustomization inside the path it syncs, with its GitRepository beside it:
/// `clusters/dev/flux-system/gotk-sync.yaml`), and FluxInstance syncs wherever they are.
pub fn discover(root: &Path, mappings: &[SourceMapping]) -> Discovery {
    discover_in(root, mappings, checkout(root))
}

/// [`discover`] for a tree that stands for `checkout` (an exported revision of it).
pub fn discover_in(root: &Path, mappings: &[SourceMapping], checkout: Checkout) -> Discovery {
    let mut discovery = Discovery::default();
    // (directory of the file, spec.path in this tree) of every Kustomization: for
    // repositories whose bootstrap files are not committed.
    let mut kustomizations: Vec<(String, String, ObjectRef)> = Vec::new();
    // The file of each of them (relative to the root), and the files kustomization files
    // list one by one, each with the directories of the kustomizations that list it, in walk
    // order: a Kustomization in a listed file is applied where it is first listed.
    let mut kustomization_files: Vec<String> = Vec::new();
    let mut file_listers: HashMap<String, Vec<String>> = HashMap::new();
    // The Kustomizations that may sync the directory that applies them (a GitRepository
    // source), in walk order: each by its place in `kustomizations`, with its object; and the
    // GitRepositories that may be this tree, with their file and whether that is known (the
    // bootstrap one, a remote's URL).
    let mut self_sync_candidates: Vec<(usize, Object)> = Vec::new();
    let mut tree_sources: Vec<(ObjectRef, bool, String)> = Vec::new();
    // The directories each kustomization file lists, by the directory it is in.
    let mut listing: HashMap<String, Vec<String>> = HashMap::new();
    // Sources the repository defines, and directories its kustomization.yaml files list.
    let mut defined: Vec<DefinedSource> = Vec::new();
    let mut referenced: Vec<String> = Vec::new();
    // Directories kustomization files list in comments: taken out by hand.
    let mut commented: Vec<String> = Vec::new();
    // Syncs of objects whose file names no namespace (by index, with the file's directory), and
    // the targetNamespace of each Kustomization's path that sets one: the Kustomization that
    // applies the file decides the namespace.
    let mut unplaced: Vec<(usize, String)> = Vec::new();
    let mut targets: Vec<(String, String)> = Vec::new();
    // The remote entries of each directory's kustomization file.
    let mut remote: Vec<(String, String)> = Vec::new();
    discovery.checkout = checkout.clone();
    let Ok(fs) = plumb_kustomize::FileSystem::confined(root) else {
        return discovery;
    };
    // Listing the directories and reading and parsing the files run in parallel, each file
    // parsed once; what they find comes back in the order of a serial walk.
    let dirs = scan_tree(&fs, root, root);
    let all_dirs: Vec<String> = dirs.iter().map(|(d, _)| d.clone()).collect();
    let walked: HashSet<&str> = all_dirs.iter().map(String::as_str).collect();
    // Where the checkout cannot say its own URL, the bootstrap GitRepositories say it: a
    // GitRepository of any other URL is another repository (tyzbit/fleet-infra's private
    // secrets, synced at `./clusters/corpus` of their own tree).
    let own_urls: HashSet<String> = dirs
        .iter()
        .flat_map(|(_, scans)| scans.iter().flat_map(|s| &s.objects))
        .filter(|o| o.is(crate::model::SOURCE_GROUP, "GitRepository") && o.name() == BOOTSTRAP_NAME)
        .filter_map(|o| o.str_at(&["spec", "url"]))
        .map(normalize_git_url)
        .collect();
    let own_url = |url: &str| own_urls.is_empty() || own_urls.contains(&normalize_git_url(url));
    for (dir_rel, scans) in dirs {
        let dir_rel = &dir_rel;
        let mut objects = Vec::new();
        // The file of each object of `objects`.
        let mut files: Vec<std::rc::Rc<str>> = Vec::new();
        for scan in scans {
            if !scan.objects.is_empty() {
                let file: std::rc::Rc<str> = scan.file.into();
                files.extend(scan.objects.iter().map(|_| file.clone()));
            }
            // Directories, as the walk found them or, for one it did not enter (a symlink),
            // as the file system finds it; the rest are files (or nothing).
            if scan.kustomization {
                listing.entry(dir_rel.clone()).or_default();
            }
            for rel in scan.referenced {
                if walked.contains(rel.as_str()) || fs.is_dir(&root.join(&rel)) {
                    listing
                        .entry(dir_rel.clone())
                        .or_default()
                        .push(rel.clone());
                    referenced.push(rel);
                } else {
                    let listers = file_listers.entry(rel).or_default();
                    if !listers.contains(dir_rel) {
                        listers.push(dir_rel.clone());
                    }
                }
            }
            commented.extend(scan.commented);
            remote.extend(scan.remote.into_iter().map(|e| (dir_rel.clone(), e)));
            discovery.syncs.extend(scan.syncs);
            objects.extend(scan.objects);
        }
        // The GitRepositories of this directory that sync this checkout: the bootstrap one, or
        // one of the checkout's remotes at its branch (a tenant's GitRepository of another
        // branch is another tree).
        // A tree with no git remote to compare with (an export, an unpacked archive) cannot
        // say which URL it is: there, a GitRepository of a branch counts too, for a
        // Kustomization beside it whose path (not the root) holds them both.
        tree_sources.extend(
            objects
                .iter()
                .zip(&files)
                .filter(|(o, _)| o.is(crate::model::SOURCE_GROUP, "GitRepository"))
                .filter_map(|(o, file)| {
                    let reference = o.value["spec"].get("ref").unwrap_or(&Value::Null);
                    let url = o.str_at(&["spec", "url"]);
                    let known = o.name() == BOOTSTRAP_NAME
                        || url.is_some_and(|url| checkout.is_checked_out(url, reference));
                    let unknown = !known
                        && ((checkout.cannot_say(reference) && url.is_none_or(own_url))
                            || url.is_some_and(|url| checkout.may_fork(url, reference)));
                    (known || unknown).then(|| {
                        let id =
                            ObjectRef::new("GitRepository", o.namespace_or_default(), o.name());
                        (id, known, file.to_string())
                    })
                }),
        );
        for object in &objects {
            if let Some((id, url)) = crate::model::Source::id_and_url(object) {
                let reference = object.value["spec"]
                    .get("ref")
                    .cloned()
                    .unwrap_or(Value::Null);
                defined.push(DefinedSource {
                    id,
                    url,
                    reference,
                    dir: dir_rel.clone(),
                });
            }
            if object.is(KUSTOMIZE_GROUP, "Kustomization") {
                continue;
            }
            if let Some(sync) = ClusterSync::from_flux_instance(object)
                .or_else(|| ClusterSync::from_helm_release(object))
            {
                let named = object.value["metadata"].get("namespace").is_some()
                    || object.value["spec"].get("targetNamespace").is_some();
                if !named {
                    unplaced.push((discovery.syncs.len(), dir_rel.clone()));
                }
                discovery.syncs.push(sync);
            } else if object.is(OPERATOR_GROUP, "ResourceSet") {
                discovery.syncs.extend(generated_syncs(object, &objects));
            }
        }
        // The Kustomizations last, each read from the object itself, not a copy.
        for (object, file) in objects.into_iter().zip(files) {
            if !object.is(KUSTOMIZE_GROUP, "Kustomization") {
                continue;
            }
            // A patch of a Kustomization (no sourceRef) is not one.
            let has_source = object.value["spec"].get("sourceRef").is_some();
            let (path, source_ref) = FluxKustomization::path_and_source(&object);
            let p = source::clean_relative(path.as_deref().unwrap_or(""));
            if let Some(target) = object.str_at(&["spec", "targetNamespace"]) {
                if !target.is_empty() {
                    targets.push((p.clone(), target.to_string()));
                }
            }
            if has_source {
                if source_ref.kind == "GitRepository" {
                    self_sync_candidates.push((kustomizations.len(), object));
                }
                kustomizations.push((dir_rel.clone(), p, source_ref));
                kustomization_files.push(file.to_string());
            }
        }
    }
    // A Kustomization syncs the cluster's directory when that directory's build applies both
    // it and the GitRepository of this tree it syncs from (a kustomization there may list them
    // from elsewhere: clementd64/fleet-infra-legacy's clusters/maktha); a path that holds
    // their directory but whose kustomization does not list it does not (Apocrathia/homelab's
    // flux/manifests lists its layers, not the bootstrap directory inside it).
    let applies = Applies {
        listing: &listing,
        file_listers: &file_listers,
    };
    let syncs_itself: Vec<bool> = self_sync_candidates
        .iter()
        .map(|&(k, _)| {
            let (_, p, source_ref) = &kustomizations[k];
            let file = &kustomization_files[k];
            let from_tree = |applied: &dyn Fn(&str) -> bool| {
                tree_sources.iter().any(|(id, known, source_file)| {
                    id == source_ref && (*known || !p.is_empty()) && applied(source_file)
                })
            };
            let applied_here =
                applies.file(p, file) && from_tree(&|source_file| applies.file(p, source_file));
            // Or, as `flux bootstrap` leaves it, the Kustomization and its GitRepository are
            // written in one directory inside the path, which nothing else applies (a cluster's
            // kustomization may leave its flux-system directory out: bootstrap applied it).
            let bootstrapped = !applied_here
                && is_within(dir_of(file), p)
                && from_tree(&|source_file| dir_of(source_file) == dir_of(file))
                && !self_sync_candidates.iter().any(|&(j, _)| {
                    // Another Kustomization applies this one, and is not one this path applies in
                    // turn (abaas-madscience/home-k8s-gitops-flux's cluster re-applies its
                    // flux-system directory through a child).
                    let other = &kustomizations[j].1;
                    j != k && applies.file(other, file) && !applies.file(p, &kustomization_files[j])
                });
            applied_here || bootstrapped
        })
        .collect();
    for ((k, object), chosen) in self_sync_candidates.into_iter().zip(syncs_itself) {
        let p = &kustomizations[k].1;
        if !chosen {
            continue;
        }
        push_unique(&mut discovery.entries, p.clone());
        if !discovery.entry_kustomizations.iter().any(|(e, _)| e == p) {
            discovery.entry_kustomizations.push((p.clone(), object));
        }
    }
    for (i, dir) in unplaced {
        let nearest = targets
            .iter()
            .filter(|(path, _)| !path.is_empty() && is_within(&dir, path))
            .max_by_key(|(path, _)| path.len());
        if let Some((_, namespace)) = nearest {
            discovery.syncs[i].place_in(namespace);
        }
    }
    for (_, path, _) in &kustomizations {
        *discovery
            .path_uses
            .entry(source::join(root, path))
            .or_default() += 1;
    }
    for sync in &mut discovery.syncs {
        sync.root = sync.artifact_root(root, &all_dirs, mappings);
    }
    discovery.syncs = std::mem::take(&mut discovery.syncs)
        .into_iter()
        .flat_map(|sync| sync.instances(&all_dirs))
        .collect();
    for sync in &discovery.syncs {
        let entry = sync.entry(mappings);
        if root.join(&entry).is_dir() {
            push_unique(&mut discovery.entries, entry);
        }
    }
    // A path of this tree is built by a Kustomization of this repository's source: the
    // bootstrap one, one the repository does not define, or a GitRepository of the
    // checked-out branch. A path in another repository or an ExternalArtifact is not.
    let covering: Vec<(String, Option<String>)> = kustomizations
        .iter()
        .zip(&kustomization_files)
        .map(|((dir, path, source), file)| {
            let elsewhere = source.kind == "ExternalArtifact"
                || (source.name != BOOTSTRAP_NAME
                    && defined.iter().any(|d| {
                        d.id == *source
                            && !d
                                .url
                                .as_deref()
                                .is_some_and(|u| checkout.is_checked_out(u, &d.reference))
                    }));
            let applied_in = file_listers
                .get(file)
                .and_then(|l| l.first())
                .unwrap_or(dir);
            (applied_in.clone(), (!elsewhere).then(|| path.clone()))
        })
        .collect();
    // Directories whose files other kustomizations list one by one hold parts that clusters
    // pick (gandazgul/k8s-infrastructure's `apps/`, one file per app): a file of one that no
    // cluster picks is an app none runs, and the directory is no cluster's root.
    let parts: HashSet<&str> = file_listers
        .iter()
        .filter_map(|(file, listers)| {
            let dir = dir_of(file);
            (listers.first().is_some_and(|first| first != dir)).then_some(dir)
        })
        .collect();
    let by_hand = if discovery.entries.is_empty() {
        // Not the bootstrap GitRepository: `flux bootstrap` syncs the cluster's directory
        // from it, and that inference (the flux-system Kustomization) stands.
        let this_tree = |d: &DefinedSource| {
            d.id.kind == "GitRepository"
                && d.id.name != BOOTSTRAP_NAME
                && d.url.as_deref().is_some_and(|url| {
                    checkout.is_checked_out(url, &d.reference)
                        || (checkout.cannot_say(&d.reference) && own_url(url))
                })
        };
        let kustomizations: Vec<crate::kubectl_applied::Syncing> = kustomizations
            .iter()
            .filter(|(_, path, _)| !path.is_empty() && root.join(path).is_dir())
            .filter_map(|(dir, path, source)| {
                let d = defined.iter().find(|d| d.id == *source && this_tree(d))?;
                Some(crate::kubectl_applied::Syncing {
                    dir: dir.as_str(),
                    path: path.as_str(),
                    source: &d.id,
                    source_dir: d.dir.as_str(),
                    url: d.url.as_deref().unwrap_or_default(),
                })
            })
            .collect();
        crate::kubectl_applied::roots(&listing, &referenced, &kustomizations)
    } else {
        Vec::new()
    };
    if !by_hand.is_empty() {
        // Kustomizations a kustomization applied by hand sets up (microscaler's
        // `kubectl apply -k gitops/clusters/dev`, whose patch points the sync at the
        // cluster's own directory): those directories are the clusters.
        for why in by_hand {
            if let source::Inference::HandApplied { entry, .. } = &why {
                push_unique(&mut discovery.entries, entry.clone());
            }
            discovery.hand_applied.push(why);
        }
    } else if discovery.entries.is_empty() {
        // A directory a kustomization lists only in a comment (`# - ../apps/ollama`, "pruned
        // for now") was taken out of the cluster by hand: an app, not a cluster's root.
        discovery.bootstrap_entries = uncovered_roots(&covering, &referenced);
        discovery
            .bootstrap_entries
            .retain(|root| !commented.contains(root) && !parts.contains(root.as_str()));
        discovery.entries = discovery.bootstrap_entries.clone();
    } else {
        // What the entries found sync from is this checkout, whatever its URL says.
        let synced: Vec<ObjectRef> = discovery
            .entry_kustomizations
            .iter()
            .map(|(_, o)| FluxKustomization::path_and_source(o).1)
            .collect();
        let covering: Vec<(String, Option<String>)> = covering
            .into_iter()
            .zip(&kustomizations)
            .map(|((dir, covers), (_, path, source))| {
                (
                    dir,
                    covers.or_else(|| synced.contains(source).then(|| path.clone())),
                )
            })
            .collect();
        let mut roots = uncovered_roots(&covering, &referenced);
        roots.retain(|root| !parts.contains(root.as_str()));
        let applied = applied_by_hand(root, &discovery, roots, &kustomizations, &defined);
        for why in applied {
            if let source::Inference::HandApplied { entry, .. } = &why {
                push_unique(&mut discovery.entries, entry.clone());
            }
            discovery.hand_applied.push(why);
        }
    }
    discovery.entries.sort();
    // Only those of a directory something builds: a Kustomization's path, an entry, or one a
    // kustomization lists. A kustomization file nothing builds fetches nothing.
    let built = |dir: &str| {
        referenced.iter().any(|r| r == dir)
            || discovery.entries.iter().any(|e| e == dir)
            || kustomizations.iter().any(|(_, path, _)| path == dir)
    };
    for (dir, entry) in remote {
        if built(&dir) {
            push_unique(&mut discovery.remote_entries, entry);
        }
    }
    discovery.file_system = Some(fs);
    discovery
}

/// Which files the build of a directory applies, as far as the walk can tell: a directory
/// with a kustomization file applies the files it lists and what the directories it lists
/// apply; one without (kustomize-controller generates its kustomization) applies its files and
/// those below it, down to directories with a kustomization file, which apply as above.
struct Applies<'a> {
    /// The directories each kustomization file lists, by its directory.
    listing: &'a HashMap<String, Vec<String>>,
    /// The directories of the kustomizations that list each file.
    file_listers: &'a HashMap<String, Vec<String>>,
}

impl Applies<'_> {
    /// Whether the build of `dir` applies `file` (both relative to the root).
    fn file(&self, dir: &str, file: &str) -> bool {
        let mut seen = HashSet::new();
        self.file_from(dir, file, &mut seen)
    }

    fn file_from<'s>(&'s self, dir: &'s str, file: &str, seen: &mut HashSet<&'s str>) -> bool {
        if !seen.insert(dir) {
            return false;
        }
        if let Some(listed) = self.listing.get(dir) {
            return self
                .file_listers
                .get(file)
                .is_some_and(|listers| listers.iter().any(|l| l == dir))
                || listed.iter().any(|d| self.file_from(d, file, seen));
        }
        let file_dir = dir_of(file);
        if !is_within(file_dir, dir) {
            return false;
        }
        // The first directory below `dir` on the way to the file that has a kustomization
        // file decides; with none, the generated kustomization holds the file.
        let below = file_dir
            .strip_prefix(dir)
            .unwrap_or(file_dir)
            .trim_start_matches('/');
        let mut at = dir.to_string();
        for name in below.split('/').filter(|n| !n.is_empty()) {
            at = if at.is_empty() {
                name.to_string()
            } else {
                format!("{at}/{name}")
            };
            if let Some((key, _)) = self.listing.get_key_value(at.as_str()) {
                return self.file_from(key, file, seen);
            }
        }
        true
    }
}

/// The directory of a file's path relative to the root (`""` for one at the root).
fn dir_of(file: &str) -> &str {
    file.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// A source the repository defines: its id, URL and `spec.ref`, and the directory of its
/// file.
struct DefinedSource {
    id: ObjectRef,
    url: Option<String>,
    reference: Value,
    dir: String,
}

/// Cluster entries applied by hand (`kubectl apply -k DIR`) beside those Flux syncs itself:
/// each of the `uncovered` directories (the outermost no Kustomization of this repository's
/// source builds and no kustomization lists) that defines
/// a GitRepository of this checkout and a Kustomization syncing a directory of this tree
/// from it. This checkout is known from its remote, else by the URL and reference of a
/// GitRepository an entry found already syncs from (tvories/k8s-gitops: cluster `nas`
/// syncs itself; `cluster-0` and `cluster-test` are applied by hand, each with its own copy
/// of that GitRepository). A directory of old manifests (an `archive/` whose paths moved)
/// syncs no directory of the tree, and is no entry.
fn applied_by_hand(
    root: &Path,
    discovery: &Discovery,
    uncovered: Vec<String>,
    kustomizations: &[(String, String, ObjectRef)],
    defined: &[DefinedSource],
) -> Vec<source::Inference> {
    // The URLs and references of the GitRepositories the entries found sync from, each as
    // the entry defines it (clusters define their own copies, under one name).
    let synced: Vec<(String, &Value)> = discovery
        .entry_kustomizations
        .iter()
        .flat_map(|(entry, o)| {
            let (_, source) = FluxKustomization::path_and_source(o);
            defined
                .iter()
                .filter(move |d| d.id == source && is_within(&d.dir, entry))
                .filter_map(|d| Some((normalize_git_url(d.url.as_deref()?), &d.reference)))
        })
        .collect();
    let this_checkout = |d: &DefinedSource| {
        d.id.kind == "GitRepository"
            && d.url.as_deref().is_some_and(|url| {
                if discovery.checkout.is_checked_out(url, &d.reference) {
                    return true;
                }
                let url = normalize_git_url(url);
                synced.iter().any(|(u, r)| *u == url && **r == d.reference)
            })
    };
    let mut out = Vec::new();
    for r in uncovered {
        if r.is_empty()
            || discovery
                .entries
                .iter()
                .any(|e| is_within(e, &r) || is_within(&r, e))
        {
            continue;
        }
        let found = kustomizations.iter().find_map(|(dir, path, source)| {
            if !is_within(dir, &r) || path.is_empty() || !root.join(path).is_dir() {
                return None;
            }
            defined
                .iter()
                .find(|d| d.id == *source && is_within(&d.dir, &r) && this_checkout(d))
        });
        if let Some(d) = found {
            out.push(source::Inference::HandApplied {
                source: d.id.clone(),
                entry: r,
                url: d.url.clone().unwrap_or_default(),
            });
        }
    }
    out
}

/// The syncs of the FluxInstances (or `flux-instance` HelmReleases) a ResourceSet generates,
/// with the ResourceSetInputProviders of its directory. One that does not expand here gives
/// none: the build reports why.
fn generated_syncs(rset: &Object, beside: &[Object]) -> Vec<ClusterSync> {
    // Expanding is for a sync: a ResourceSet whose text names neither kind generates none.
    let spec = rset.value["spec"].to_string();
    if !spec.contains("FluxInstance") && !spec.contains("flux-instance") {
        return Vec::new();
    }
    let providers: Vec<&Object> = beside
        .iter()
        .filter(|o| o.is(OPERATOR_GROUP, "ResourceSetInputProvider"))
        .collect();
    let Ok(crate::resourceset::Expanded::Objects(values)) =
        crate::resourceset::expand(rset, &providers)
    else {
        return Vec::new();
    };
    values
        .into_iter()
        .filter_map(|value| {
            // Located at the ResourceSet: the generated object has no text of its own.
            let object = Object {
                value,
                origin: rset.origin.clone(),
            };
            let mut sync = ClusterSync::from_flux_instance(&object)
                .or_else(|| ClusterSync::from_helm_release(&object))?;
            sync.via = format!(
                "{} (generated by ResourceSet {}/{})",
                sync.via,
                rset.namespace_or_default(),
                rset.name()
            );
            Some(sync)
        })
        .collect()
}

/// Directories (relative to the root) with the scans of their YAML files.
type DirScans = Walked<FileScan>;

/// What the YAML files of `dir` and of every directory below it tell discovery: each
/// directory with its path relative to the root and the scans of its YAML files in name order,
/// in the order of a depth-first walk that takes the last subdirectory first (as a stack pops
/// them). Hidden names are skipped and symlinks are not followed: a link out of the repository
/// is not part of it. What each listing saw is told to the file system (every directory and
/// file walked is its own real path), so that reading the files and the builds after it look
/// nothing up again.
fn scan_tree(fs: &plumb_kustomize::FileSystem, root: &Path, dir: &Path) -> DirScans {
    // A walk's paths are real ones only from the canonical root, which the file system's
    // root is.
    let noted = fs.root() == Some(root);
    walk(
        root,
        dir,
        &|dir, files| {
            if noted {
                let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
                fs.note_walked(&[dir], &paths);
            }
        },
        &|dir_rel, path| scan_file(fs, root, dir_rel, path, noted),
    )
}

/// Each directory of the tree at `dir` (relative to `root`, and as it was reached) with
/// `on_file` of each of its YAML files, in name order, in [`scan_tree`]'s order: a directory,
/// then its subdirectories' trees in reverse name order. `on_listed` hears each directory's
/// YAML files before `on_file` does. A directory's files and its subdirectories are taken in
/// parallel: listing, reading and parsing one directory is work enough to hand to another
/// thread, where listing alone (microseconds) was not.
fn walk<T: Send>(
    root: &Path,
    dir: &Path,
    on_listed: &(dyn Fn(&Path, &[PathBuf]) + Sync),
    on_file: &(dyn Fn(&str, &Path) -> T + Sync),
) -> Walked<T> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut entries: Vec<_> = read.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    let dir_rel = dir
        .strip_prefix(root)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (mut files, mut subdirs) = (Vec::new(), Vec::new());
    for entry in entries {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        if file_type.is_dir() {
            subdirs.push(entry.path());
        } else if file_type.is_file() && (name.ends_with(".yaml") || name.ends_with(".yml")) {
            files.push(entry.path());
        }
    }
    on_listed(dir, &files);
    let (found, below): (Vec<T>, Vec<Walked<T>>) = rayon::join(
        || {
            files
                .par_iter()
                .with_min_len(FILES_PER_TASK)
                .map(|f| on_file(&dir_rel, f))
                .collect()
        },
        || {
            subdirs
                .par_iter()
                .rev()
                .map(|sub| walk(root, sub, on_listed, on_file))
                .collect()
        },
    );
    let mut out = vec![(dir_rel, found)];
    out.extend(below.into_iter().flatten());
    out
}

/// Directories relative to the root, each with what was made of its YAML files.
type Walked<T> = Vec<(String, Vec<T>)>;

/// How many files of one directory a thread takes at least: most directories hold a few, read
/// and parsed faster than they could be handed over.
const FILES_PER_TASK: usize = 4;

/// The API groups whose objects discovery reads: sources, Kustomizations, HelmReleases (of the
/// flux-instance chart) and flux-operator's kinds.
const DISCOVERED_GROUPS: [&str; 4] = [
    crate::model::SOURCE_GROUP,
    KUSTOMIZE_GROUP,
    HELM_GROUP,
    OPERATOR_GROUP,
];

/// What one YAML file tells discovery.
#[derive(Default)]
struct FileScan {
    /// Local entries a kustomization file lists (directories, and files until discovery keeps
    /// the directories).
    referenced: Vec<String>,
    /// Directories a kustomization file lists in a comment (`# - ../apps/ollama`).
    commented: Vec<String>,
    /// Remote entries a kustomization file lists.
    remote: Vec<String>,
    /// FluxInstance syncs of a values file.
    syncs: Vec<ClusterSync>,
    /// Objects of a file that may declare a Kustomization or a source.
    objects: Vec<Object>,
    /// The file, relative to the root, when it has objects.
    file: String,
    /// It is its directory's kustomization file.
    kustomization: bool,
}

/// What `path`, a YAML file in `dir_rel`, tells discovery; `walked`: the file system noted
/// the walk that found it ([`plumb_kustomize::FileSystem::note_walked`]).
fn scan_file(
    fs: &plumb_kustomize::FileSystem,
    root: &Path,
    dir_rel: &str,
    path: &Path,
    walked: bool,
) -> FileScan {
    let mut scan = FileScan::default();
    let text = match walked {
        true => fs.walked_text(path),
        false => fs.shared_text(path),
    };
    let Ok(text) = text else {
        return scan;
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let kustomization_file = plumb_kustomize::loader::KUSTOMIZATION_FILE_NAMES.contains(&&*name);
    // Sources too: a Kustomization of another repository's source builds no path here.
    let may_declare = text.contains("Kustomization")
        || text.contains("Repository")
        || text.contains("kind: Bucket")
        || text.contains("FluxInstance")
        || text.contains("ResourceSetInputProvider")
        || (text.contains("instance:") && text.contains("sync:"));
    if !kustomization_file && !may_declare {
        return scan;
    }
    // Parsed through the file system and kept there: the build reads nearly all of these
    // files again (a kustomization file, a Flux Kustomization's manifest).
    let Ok(docs) = fs.read_documents_kept(path) else {
        return scan;
    };
    if kustomization_file {
        scan.kustomization = true;
        (scan.referenced, scan.remote) = listed_entries(dir_rel, docs.first());
        scan.commented = commented_entries(&text, dir_rel);
    }
    if !may_declare {
        return scan;
    }
    let rel = path.strip_prefix(root).unwrap_or(path);
    scan.file = rel.to_string_lossy().into_owned();
    for doc in docs.iter() {
        // Only Flux's and flux-operator's objects and kind-less values files say anything
        // here: the rest (most documents of an app's manifests) are not converted.
        let group = doc.str_at(&["apiVersion"]).map(crate::model::group_of);
        if let Some(group) = group {
            if !DISCOVERED_GROUPS.contains(&group) {
                continue;
            }
            // A HelmRelease says something here only as the flux-instance chart's: the others,
            // most of a repository's HelmReleases, are neither converted nor copied.
            if group == HELM_GROUP && !may_be_flux_instance(doc) {
                continue;
            }
        }
        let Ok(value) = plumb_yaml::to_json(doc) else {
            continue;
        };
        if let Some(sync) = ClusterSync::from_values_file(rel, &value, doc) {
            scan.syncs.push(sync);
            continue;
        }
        // Discovery reads a Kustomization's path and source and a source's URL, and drops
        // them: only what may declare a sync keeps its text, for the sync to point at.
        let dropped =
            group.is_some_and(|g| g == KUSTOMIZE_GROUP || g == crate::model::SOURCE_GROUP);
        scan.objects.push(Object {
            value,
            origin: (!dropped).then(|| std::sync::Arc::new(doc.clone())),
        });
    }
    scan
}

/// The directories relative to the root that a kustomization file in `dir_rel` lists in
/// comments, as list items (`# - ../../apps/ollama`): entries taken out by hand.
fn commented_entries(text: &str, dir_rel: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.trim_start().strip_prefix('#'))
        .filter_map(|rest| rest.trim_start().strip_prefix("- "))
        .map(|entry| entry.trim().trim_matches(['"', '\'']))
        .filter(|entry| !entry.is_empty() && !entry.contains("://") && !entry.contains(' '))
        .map(|entry| source::clean_relative(&format!("{dir_rel}/{entry}")))
        .collect()
}

/// Whether directory `dir` is `path` or inside it (`""` is the root, which holds everything).
pub(crate) fn is_within(dir: &str, path: &str) -> bool {
    path.is_empty()
        || dir
            .strip_prefix(path)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// `dir` and each directory above it, innermost first, ending with the root `""`.
fn self_and_ancestors(dir: &str) -> impl Iterator<Item = &str> {
    let inner = std::iter::successors(Some(dir), |d| d.rfind('/').map(|i| &d[..i]));
    inner.chain((!dir.is_empty()).then_some(""))
}

/// The directories holding Flux Kustomizations that no Kustomization's path builds and no
/// kustomization.yaml lists, outermost only. Each Kustomization comes with the directory that
/// applies it (its file's, or that of the kustomization that lists its file) and the path it
/// builds, if any.
fn uncovered_roots(
    kustomizations: &[(String, Option<String>)],
    referenced: &[String],
) -> Vec<String> {
    // A directory is covered when it or one of its ancestors is a path some Kustomization
    // builds or some kustomization.yaml lists: one set lookup per ancestor, not a scan of
    // every path per directory (a repository of 1,000 Kustomizations made that quadratic).
    let covering: HashSet<&str> = kustomizations
        .iter()
        .filter_map(|(_, p)| p.as_deref())
        .chain(referenced.iter().map(String::as_str))
        .collect();
    let mut roots: Vec<String> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for (dir, _) in kustomizations {
        let covered = self_and_ancestors(dir).any(|d| covering.contains(d));
        if !covered && seen.insert(dir) {
            roots.push(dir.clone());
        }
    }
    let all: HashSet<&str> = roots.iter().map(String::as_str).collect();
    let outermost: Vec<bool> = roots
        .iter()
        .map(|r| !self_and_ancestors(r).skip(1).any(|o| all.contains(o)))
        .collect();
    let mut keep = outermost.into_iter();
    roots.retain(|_| keep.next().unwrap_or(true));
    roots
}

/// What a kustomization.yaml in `dir_rel` lists under `resources`, `bases` or `components`:
/// the local entries, relative to the repository root (never the root itself, nor its own
/// directory), files too: which of them are directories is told once the whole tree is walked;
/// and the remote entries, as written.
fn listed_entries(dir_rel: &str, doc: Option<&Node>) -> (Vec<String>, Vec<String>) {
    let Some(value) = doc.and_then(|d| plumb_yaml::to_json(d).ok()) else {
        return Default::default();
    };
    let (remote, local): (Vec<&str>, Vec<&str>) = ["resources", "bases", "components"]
        .iter()
        .filter_map(|field| value[*field].as_array())
        .flatten()
        .filter_map(Value::as_str)
        .partition(|entry| plumb_kustomize::loader::is_remote(entry));
    let dirs = local
        .into_iter()
        .map(|entry| source::clean_relative(&format!("{dir_rel}/{entry}")))
        .filter(|rel| !rel.is_empty() && rel != dir_rel)
        .collect();
    (dirs, remote.into_iter().map(str::to_string).collect())
}

fn push_unique(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// What the git checkout holding the repository says about itself: its remotes and the branch
/// it has checked out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checkout {
    /// `remote.*.url`, normalised with [`normalize_git_url`].
    pub remotes: Vec<String>,
    /// The branch HEAD names; `None` when HEAD is detached or there is no checkout.
    pub branch: Option<String>,
}

impl Checkout {
    /// Whether a GitRepository of one of the checkout's remotes, with `spec.ref` `reference`,
    /// fetches what is checked out: no ref (the remote's default branch) or the checked-out
    /// branch. A tag, semver range, commit or ref name is another revision, and so is another
    /// branch.
    pub fn is_checked_out(&self, url: &str, reference: &serde_json::Value) -> bool {
        self.remotes.contains(&normalize_git_url(url)) && self.at_checked_out_branch(reference)
    }

    /// Whether `spec.ref` `reference` fetches the checked-out branch: no ref (the default
    /// branch) or that branch; a tag, semver range, commit or ref name is a fixed revision.
    fn at_checked_out_branch(&self, reference: &serde_json::Value) -> bool {
        let Some(r) = reference.as_object().filter(|r| !r.is_empty()) else {
            return true;
        };
        if pinned(r) {
            return false;
        }
        match (r.get("branch").and_then(|v| v.as_str()), &self.branch) {
            (Some(wanted), Some(current)) => wanted == current,
            _ => true,
        }
    }

    /// Whether this is a tree with no git remote (an export, an unpacked archive), where a
    /// GitRepository of a branch (or of no ref) may be what is checked out: nothing says
    /// which URL the tree is. A tag, semver range, commit or ref name is a fixed revision.
    pub fn cannot_say(&self, reference: &serde_json::Value) -> bool {
        self.remotes.is_empty() && !reference.as_object().is_some_and(pinned)
    }

    /// Whether a GitRepository of `url` at `reference` may be a fork's upstream of this
    /// checkout: `url` is none of its remotes, yet names a repository of the same name as one
    /// of them (`github.com/me/home-ops` cloned, `github.com/owner/home-ops` synced), at the
    /// checked-out branch or no ref. A fork keeps the upstream's files, URLs included.
    pub fn may_fork(&self, url: &str, reference: &serde_json::Value) -> bool {
        let url = normalize_git_url(url);
        let name = |u: &str| u.rsplit('/').next().unwrap_or(u).to_string();
        !self.remotes.contains(&url)
            && self.remotes.iter().any(|r| name(r) == name(&url))
            && self.at_checked_out_branch(reference)
    }
}

/// A `spec.ref` naming a fixed revision: a tag, semver range, commit or ref name.
fn pinned(r: &serde_json::Map<String, Value>) -> bool {
    ["tag", "semver", "commit", "name"].iter().any(|k| {
        r.get(*k)
            .and_then(|v| v.as_str())
            .is_some_and(|v| !v.is_empty())
    })
}

/// The checkout of `root` (the `.git` of `root` or of the nearest directory above it).
pub fn checkout(root: &Path) -> Checkout {
    let mut dir = Some(root);
    while let Some(d) = dir {
        let git = d.join(".git");
        let (config, head) = if git.is_dir() {
            (Some(git.join("config")), Some(git.join("HEAD")))
        } else if git.is_file() {
            // A worktree or submodule: `gitdir: PATH` holds HEAD; its config is in the common
            // directory.
            std::fs::read_to_string(&git)
                .ok()
                .and_then(|t| {
                    let gitdir = d.join(t.trim().strip_prefix("gitdir:")?.trim());
                    let common = std::fs::read_to_string(gitdir.join("commondir"))
                        .map(|c| gitdir.join(c.trim()))
                        .unwrap_or_else(|_| gitdir.clone());
                    Some((Some(common.join("config")), Some(gitdir.join("HEAD"))))
                })
                .unwrap_or((None, None))
        } else {
            (None, None)
        };
        if let Some(text) = config.and_then(|c| std::fs::read_to_string(c).ok()) {
            let branch = head
                .and_then(|h| std::fs::read_to_string(h).ok())
                .and_then(|h| {
                    h.trim()
                        .strip_prefix("ref: refs/heads/")
                        .map(str::to_string)
                });
            return Checkout {
                remotes: remote_urls(&text),
                branch,
            };
        }
        dir = d.parent();
    }
    Checkout::default()
}

/// `url = ...` of every `[remote "..."]` section of a git config.
fn remote_urls(config: &str) -> Vec<String> {
    let mut in_remote = false;
    let mut out = Vec::new();
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_remote = line.starts_with("[remote ");
            continue;
        }
        if !in_remote {
            continue;
        }
        if let Some((key, value)) = line.split_once('=') {
            if key.trim().eq_ignore_ascii_case("url") {
                let url = normalize_git_url(value.trim().trim_matches('"'));
                if !out.contains(&url) {
                    out.push(url);
                }
            }
        }
    }
    out
}

/// A git URL reduced to `host/path`, so that the https, ssh and scp-like spellings of one
/// repository compare equal: no scheme, user or port, no `.git` or trailing slash, host in
/// lower case, and the path too on hosting services that ignore its case.
pub fn normalize_git_url(url: &str) -> String {
    let url = url.trim();
    let (rest, had_scheme) = match url.split_once("://") {
        Some((_, rest)) => (rest, true),
        None => (url, false),
    };
    let rest = match rest.split_once('@') {
        Some((user, after)) if !user.contains('/') => after,
        _ => rest,
    };
    let (host, path) = if had_scheme {
        rest.split_once('/').unwrap_or((rest, ""))
    } else {
        // scp-like `host:path`
        rest.split_once(':')
            .or_else(|| rest.split_once('/'))
            .unwrap_or((rest, ""))
    };
    let host = host.split(':').next().unwrap_or(host).to_ascii_lowercase();
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    // These services name one repository whatever the case of its owner and name
    // (`github.com/Org/Home-Ops` is `github.com/org/home-ops`); another server's paths may be
    // case-sensitive, as a file system's are.
    if CASE_INSENSITIVE_HOSTS.contains(&host.strip_prefix("www.").unwrap_or(&host)) {
        return format!("{host}/{}", path.to_ascii_lowercase());
    }
    format!("{host}/{path}")
}

/// Git hosting services whose repository paths are case-insensitive.
const CASE_INSENSITIVE_HOSTS: [&str; 4] =
    ["github.com", "gitlab.com", "codeberg.org", "bitbucket.org"];

#[cfg(test)]
mod tests {
    use super::*;

    /// A Flux Kustomization in flux-system syncing `path` from the GitRepository `source`.
    fn flux_kustomization(name: &str, path: &str, source: &str) -> String {
        format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: {name}, namespace: flux-system}}\nspec:\n  path: {path}\n  sourceRef: {{kind: GitRepository, name: {source}}}\n")
    }

    /// A GitRepository in flux-system fetching `url` at `reference` (`{branch: main}`).
    fn git_repository(name: &str, url: &str, reference: &str) -> String {
        format!("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {{name: {name}, namespace: flux-system}}\nspec:\n  url: {url}\n  ref: {reference}\n")
    }

    #[test]
    fn uncovered_roots_are_the_outermost_directories_nothing_builds() {
        let ks = |dir: &str, path: Option<&str>| (dir.to_string(), path.map(str::to_string));
        let kustomizations = [
            ks("clusters/dev", Some("clusters/dev/apps")),
            ks("clusters/dev/apps", None),
            ks("clusters/dev/apps/deep", None),
            ks("clusters/prod", None),
            ks("clusters/prod/apps", None),
            ks("clusters/prod", None),
            ks("clustersx", None),
            ks("listed/a", None),
        ];
        let referenced = ["listed".to_string()];
        // clusters/dev/apps and below are built by a path; listed/a is listed; clusters/prod is
        // outermost of its two; clustersx is not inside clusters (a prefix of the name only).
        assert_eq!(
            uncovered_roots(&kustomizations, &referenced),
            ["clusters/dev", "clusters/prod", "clustersx"]
        );
        // A Kustomization whose path is the root covers everything.
        let all = [ks("clusters/dev", Some("")), ks("x", None)];
        assert!(uncovered_roots(&all, &[]).is_empty());
        // The root itself uncovered is the one root.
        let root = [ks("", None), ks("clusters/dev", None)];
        assert_eq!(uncovered_roots(&root, &[]), [""]);
    }

    #[test]
    fn a_tree_is_walked_in_the_order_of_a_serial_walk_though_in_parallel() {
        let tree = tempfile::tempdir().unwrap();
        let root = tree.path();
        // `wide` has many subdirectories, each with two of its own, and `many` more files than
        // one thread takes; `.hidden` and non-YAML files are left out.
        let mut expected = vec![(String::new(), vec!["top.yaml".to_string()])];
        for i in (0..35).rev() {
            let app = format!("wide/app{i:02}");
            expected.push((app.clone(), vec!["ks.yaml".to_string()]));
            for sub in ["overlay", "base"] {
                let dir = format!("{app}/{sub}");
                expected.push((dir.clone(), vec!["a.yaml".into(), "b.yml".into()]));
                std::fs::create_dir_all(root.join(&dir)).unwrap();
                for f in ["b.yml", "a.yaml", "notes.txt"] {
                    std::fs::write(root.join(&dir).join(f), "x: 1\n").unwrap();
                }
            }
            std::fs::write(root.join(&app).join("ks.yaml"), "x: 1\n").unwrap();
        }
        expected.insert(1, ("wide".into(), Vec::new()));
        std::fs::write(root.join("top.yaml"), "x: 1\n").unwrap();
        std::fs::create_dir_all(root.join(".hidden/deep")).unwrap();
        std::fs::write(root.join(".hidden/deep/x.yaml"), "x: 1\n").unwrap();

        let many: Vec<String> = (0..FILES_PER_TASK * 3 + 1)
            .map(|i| format!("f{i:02}.yaml"))
            .collect();
        std::fs::create_dir_all(root.join("many")).unwrap();
        for name in &many {
            std::fs::write(root.join("many").join(name), "x: 1\n").unwrap();
        }
        expected.push(("many".into(), many));

        let heard = std::sync::Mutex::new(Vec::new());
        let listed = walk(
            root,
            root,
            &|dir, files| heard.lock().unwrap().push((dir.to_path_buf(), files.len())),
            &|rel, path| {
                assert_eq!(path.parent().unwrap(), root.join(rel));
                path.file_name().unwrap().to_string_lossy().into_owned()
            },
        );
        // Every directory walked was told with its files, before they were read.
        let mut heard = heard.into_inner().unwrap();
        heard.sort();
        let mut told: Vec<(PathBuf, usize)> = expected
            .iter()
            .map(|(rel, files)| (root.join(rel), files.len()))
            .collect();
        told.sort();
        assert_eq!(heard, told);
        assert_eq!(listed, expected);
    }

    #[test]
    fn within_is_by_whole_path_components() {
        assert!(is_within("a/b", "a"));
        assert!(is_within("a", "a"));
        assert!(is_within("a", ""));
        assert!(!is_within("ab", "a"));
        assert!(!is_within("a", "a/b"));
        assert_eq!(
            self_and_ancestors("a/b/c").collect::<Vec<_>>(),
            ["a/b/c", "a/b", "a", ""]
        );
        assert_eq!(self_and_ancestors("").collect::<Vec<_>>(), [""]);
    }

    /// A temporary repository holding `files` (path from its root, text).
    fn repository<T: AsRef<str>>(files: &[(&str, T)]) -> tempfile::TempDir {
        let tree = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            std::fs::create_dir_all(tree.path().join(rel).parent().unwrap()).unwrap();
            std::fs::write(tree.path().join(rel), text.as_ref()).unwrap();
        }
        tree
    }

    /// Through a symlink to the repository, the walk's paths are not the files' real paths and
    /// are not told to the file system as such; what discovery finds is the same.
    #[test]
    fn a_repository_reached_through_a_symlink_is_discovered_as_the_real_one() {
        let tree = tempfile::tempdir().unwrap();
        let real = tree.path().join("repo");
        let sync = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  url: https://example.com/repo.git\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  path: ./clusters/dev\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n";
        for (rel, text) in [
            ("clusters/dev/flux-system/gotk-sync.yaml", sync),
            ("clusters/dev/apps.yaml", "kind: ConfigMap\n"),
        ] {
            std::fs::create_dir_all(real.join(rel).parent().unwrap()).unwrap();
            std::fs::write(real.join(rel), text).unwrap();
        }
        let link = tree.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let real = real.canonicalize().unwrap();
        let (direct, linked) = (discover(&real, &[]), discover(&link, &[]));
        assert_eq!(direct.entries, ["clusters/dev"]);
        assert_eq!(linked.entries, direct.entries);
        assert_eq!(linked.syncs.len(), direct.syncs.len());
    }

    /// The remote entries of the kustomization files of directories something builds (a
    /// Kustomization's path, a directory another kustomization lists), each once, in the order
    /// of the walk; local entries, other files' lists and unbuilt directories' are not among
    /// them.
    #[test]
    fn remote_entries_of_kustomization_files_are_listed_once() {
        let crd = "https://raw.githubusercontent.com/example/op/v1.0.0/crd.yaml";
        let base = "github.com/example/app//deploy?ref=v2";
        let tree = repository(&[
            (
                "apps/a/kustomization.yaml",
                format!("resources:\n  - {crd}\n  - ../b\n  - {base}\n"),
            ),
            (
                "apps/b/kustomization.yaml",
                format!("resources:\n  - {crd}\n  - deploy.yaml\ncomponents:\n  - {base}\n"),
            ),
            ("apps/b/deploy.yaml", "kind: ConfigMap\n".to_string()),
            // Built by nothing: its entry is not fetched.
            (
                "old/kustomization.yaml",
                "resources:\n  - https://example.com/unused.yaml\n".to_string(),
            ),
            (
                "clusters/dev/apps.yaml",
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  path: ./apps/a\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n".to_string(),
            ),
            (
                "apps/c/values.yaml",
                "resources:\n  - https://example.com/not-a-kustomization.yaml\n".to_string(),
            ),
        ]);
        let found = discover(&tree.path().canonicalize().unwrap(), &[]);
        assert_eq!(found.remote_entries, [crd, base]);
    }

    /// carpenike/k8s-gitops and truxnell/home-cluster exported without `.git`: the root
    /// Kustomization `cluster` syncs `kubernetes/<cluster>/flux` from a GitRepository named
    /// after the repository. With no remote to compare its URL with, it is the checkout; a
    /// tenant's Kustomization of the root (`./`) of its own repository and a GitRepository of
    /// a tag are not.
    #[test]
    fn a_tree_without_a_remote_is_the_branch_its_root_kustomization_syncs() {
        let sync = |source: &str, reference: &str, path: &str| {
            format!("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {{name: {source}, namespace: flux-system}}\nspec:\n  url: https://github.com/example/{source}.git\n  ref: {reference}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: {source}, namespace: flux-system}}\nspec:\n  path: {path}\n  sourceRef: {{kind: GitRepository, name: {source}}}\n")
        };
        let tree = repository(&[
            (
                "kubernetes/main/flux/config/cluster.yaml",
                sync("home-ops", "{branch: main}", "./kubernetes/main/flux"),
            ),
            (
                "tenants/dev/sync.yaml",
                sync("dev-team", "{branch: main}", "./"),
            ),
            (
                "kubernetes/old/flux/config/cluster.yaml",
                sync("pinned", "{tag: v1.0.0}", "./kubernetes/old/flux"),
            ),
        ]);
        let root = tree.path().canonicalize().unwrap();
        let found = discover_in(&root, &[], Checkout::default());
        assert_eq!(found.entries, ["kubernetes/main/flux"]);
        // A fork's clone (its remote another owner's repository of the same name) is the
        // branch its upstream's root Kustomization syncs.
        let fork = Checkout {
            remotes: vec![normalize_git_url("git@github.com:someone/home-ops.git")],
            branch: Some("main".into()),
        };
        let found = discover_in(&root, &[], fork);
        assert!(
            found.entries.iter().any(|e| e == "kubernetes/main/flux"),
            "{:?}",
            found.entries
        );
        // A clone of another repository says what it is: none of these.
        let elsewhere = Checkout {
            remotes: vec![normalize_git_url("https://github.com/example/other.git")],
            branch: Some("main".into()),
        };
        let found = discover_in(&root, &[], elsewhere);
        assert!(
            !found.entries.iter().any(|e| e == "kubernetes/main/flux"),
            "{:?}",
            found.entries
        );
    }

    /// deedee-ops/home-ops: one flux-instance HelmRelease for every cluster, its sync path
    /// `kubernetes/clusters/${CLUSTER}/bootstrap` substituted per cluster. It names each
    /// directory it matches, the variable one whole name; a path of variables alone names
    /// none.
    #[test]
    fn an_app_listed_only_in_a_comment_is_no_cluster_entry() {
        // jmuchovej/homelab: `# - ../../../apps/local-ai/ollama`, pruned for now; the app's
        // directory holds its Flux Kustomization and nothing builds it.
        let ks = |name: &str, path: &str| flux_kustomization(name, path, "flux-system");
        let tree = repository(&[
            ("clusters/da/flux/apps.yaml", ks("apps", "./clusters/da/apps")),
            (
                "clusters/da/apps/kustomization.yaml",
                "resources:\n  - ../../../apps/chroma\n  # pruned for now:\n  # - ../../../apps/ollama\n".to_string(),
            ),
            ("apps/chroma/ks.yaml", ks("chroma", "./apps/chroma/app")),
            ("apps/chroma/app/cm.yaml", "kind: ConfigMap".to_string()),
            ("apps/ollama/ks.yaml", ks("ollama", "./apps/ollama/app")),
            ("apps/ollama/app/cm.yaml", "kind: ConfigMap".to_string()),
            // Not listed anywhere, not even in a comment: still taken for a cluster.
            ("apps/orphan/ks.yaml", ks("orphan", "./apps/orphan/app")),
        ]);
        let root = tree.path().canonicalize().unwrap();
        let found = discover_in(&root, &[], Checkout::default());
        assert_eq!(found.entries, ["apps/orphan", "clusters/da/flux"]);
    }

    #[test]
    fn a_kustomization_whose_file_a_kustomization_lists_is_no_cluster_entry() {
        // gandazgul/k8s-infrastructure: one file per app in `apps/`, each cluster's
        // kustomization listing the files of the apps it runs; `apps/` is no cluster.
        let ks = |name: &str, path: &str| flux_kustomization(name, path, "flux-system");
        let tree = repository(&[
            (
                "clusters/da/flux/apps.yaml",
                ks("apps", "./clusters/da/apps"),
            ),
            (
                "clusters/da/apps/kustomization.yaml",
                "resources:\n  - ../../../apps/Mealie.yaml\n".to_string(),
            ),
            ("apps/Mealie.yaml", ks("mealie", "./apps/generic/mealie")),
            ("apps/generic/mealie/cm.yaml", "kind: ConfigMap".to_string()),
            // An app no cluster picks: `apps/` is still no cluster.
            (
                "apps/Jellyfin.yaml",
                ks("jellyfin", "./apps/generic/mealie"),
            ),
            // A file beside it that nothing lists is still a cluster's, and so is one listed
            // by a kustomization nothing builds: that kustomization's directory is the entry.
            (
                "unlisted/Ollama.yaml",
                ks("ollama", "./apps/generic/mealie"),
            ),
            (
                "by-hand/kustomization.yaml",
                "resources:\n  - ../apps/more/Plex.yaml\n".to_string(),
            ),
            ("apps/more/Plex.yaml", ks("plex", "./apps/generic/mealie")),
        ]);
        let root = tree.path().canonicalize().unwrap();
        let found = discover_in(&root, &[], Checkout::default());
        assert_eq!(found.entries, ["by-hand", "clusters/da/flux", "unlisted"]);
    }

    #[test]
    fn in_an_export_a_git_repository_of_another_url_than_the_bootstrap_one_is_no_entry() {
        // tyzbit/fleet-infra: a private repository of secrets synced at `./clusters/corpus` of
        // its own tree. The export cannot say its URL, but its bootstrap GitRepository can.
        let git = |name: &str, url: &str| git_repository(name, url, "{branch: main}");
        let layout = |secrets_url: &str| {
            repository(&[
                (
                    "clusters/a/flux/flux-system/gotk-sync.yaml",
                    format!(
                        "{}---\n{}",
                        git("flux-system", "ssh://git@github.com/example/fleet-infra"),
                        flux_kustomization("flux-system", "./clusters/a/flux", "flux-system")
                    ),
                ),
                (
                    "clusters/a/flux/secrets/kubernetes-secrets.yaml",
                    format!(
                        "{}---\n{}",
                        git("kubernetes-secrets", secrets_url),
                        flux_kustomization(
                            "kubernetes-secrets",
                            "./clusters/a",
                            "kubernetes-secrets"
                        )
                    ),
                ),
                ("clusters/a/apps/ns.yaml", "kind: Namespace".to_string()),
            ])
        };
        let tree = layout("ssh://git@github.com/example/kubernetes-secrets");
        let root = tree.path().canonicalize().unwrap();
        let found = discover_in(&root, &[], Checkout::default());
        assert_eq!(found.entries, ["clusters/a/flux"]);
        // The same repository spelled another way is this tree: its path is an entry.
        let tree = layout("https://github.com/example/fleet-infra.git");
        let root = tree.path().canonicalize().unwrap();
        let found = discover_in(&root, &[], Checkout::default());
        assert_eq!(found.entries, ["clusters/a", "clusters/a/flux"]);
    }

    #[test]
    fn a_kustomization_applied_by_hand_that_sets_up_the_sync_is_the_cluster() {
        // microscaler/shared-gitops-k8s-cluster: `kubectl apply -k clusters/dev` lists the
        // shared sync (a GitRepository of this repository and a Kustomization) and patches its
        // path to the cluster's own directory.
        let tree = repository(&[
            (
                "root/sync/flux-sync.yaml",
                format!(
                    "{}---\n{}",
                    git_repository(
                        "shared",
                        "ssh://git@github.com/example/shared.git",
                        "{branch: main}"
                    ),
                    flux_kustomization("cluster-control", "./clusters/dev/control", "shared")
                ),
            ),
            (
                "root/sync/kustomization.yaml",
                "resources: [flux-sync.yaml]\n".to_string(),
            ),
            (
                "clusters/dev/kustomization.yaml",
                "resources: [../../root/sync]\n".to_string(),
            ),
            (
                "clusters/dev/control/apps.yaml",
                flux_kustomization("apps", "./apps", "shared"),
            ),
            ("apps/cm.yaml", "kind: ConfigMap".to_string()),
        ]);
        let root = tree.path().canonicalize().unwrap();
        let found = discover_in(&root, &[], Checkout::default());
        assert_eq!(found.entries, ["clusters/dev"]);
        assert!(found.bootstrap_entries.is_empty());
        let [source::Inference::HandApplied { entry, source, .. }] = &found.hand_applied[..] else {
            panic!("{:?}", found.hand_applied);
        };
        assert_eq!(entry, "clusters/dev");
        assert_eq!(source.to_string(), "GitRepository/flux-system/shared");
    }

    #[test]
    fn a_cluster_that_reapplies_its_flux_system_through_a_child_is_still_one() {
        // abaas-madscience/home-k8s-gitops-flux: clusters/lab's kustomization leaves
        // flux-system/ out and lists a child Kustomization that applies it.
        let ks = |name: &str, path: &str| flux_kustomization(name, path, "flux-system");
        let tree = repository(&[
            (
                "clusters/lab/flux-system/gotk-sync.yaml",
                format!(
                    "{}---\n{}",
                    git_repository(
                        "flux-system",
                        "ssh://git@github.com/example/lab",
                        "{branch: main}"
                    ),
                    ks("flux-system", "./clusters/lab")
                ),
            ),
            (
                "clusters/lab/flux-system/kustomization.yaml",
                "resources: [gotk-sync.yaml]\n".to_string(),
            ),
            (
                "clusters/lab/kustomization.yaml",
                "resources: [infra-flux-system.yaml]\n".to_string(),
            ),
            (
                "clusters/lab/infra-flux-system.yaml",
                ks("infra-flux-system", "./clusters/lab/flux-system"),
            ),
        ]);
        let root = tree.path().canonicalize().unwrap();
        let found = discover_in(&root, &[], Checkout::default());
        assert_eq!(found.entries, ["clusters/lab"]);
    }

    #[test]
    fn a_cluster_whose_build_lists_its_sync_from_elsewhere_syncs_itself() {
        // clementd64/fleet-infra-legacy: clusters/maktha lists the GitRepository from one
        // directory and the Kustomization syncing ./clusters/maktha from another.
        let tree = repository(&[
            (
                "clusters/c1/kustomization.yaml",
                "resources: [../../shared/sources, flux]\n".to_string(),
            ),
            (
                "clusters/c1/flux/kustomization.yaml",
                "resources: [main.yaml]\n".to_string(),
            ),
            (
                "clusters/c1/flux/main.yaml",
                flux_kustomization("main", "./clusters/c1", "fleet-infra"),
            ),
            (
                "shared/sources/kustomization.yaml",
                "resources: [repository.yaml]\n".to_string(),
            ),
            (
                "shared/sources/repository.yaml",
                git_repository(
                    "fleet-infra",
                    "ssh://git@github.com/example/fleet-infra.git",
                    "{branch: main}",
                ),
            ),
        ]);
        let root = tree.path().canonicalize().unwrap();
        let found = discover_in(&root, &[], Checkout::default());
        assert_eq!(found.entries, ["clusters/c1"]);
        assert_eq!(found.entry_kustomizations[0].1.name(), "main");
    }

    #[test]
    fn a_path_that_holds_the_bootstrap_directory_without_building_it_is_no_cluster() {
        // Apocrathia/homelab: flux-system syncs flux/manifests/01-bootstrap, whose manifests
        // define `manifests`, syncing ./flux/manifests: a child of the one cluster (its
        // kustomization lists the layers, not 01-bootstrap), not a second cluster.
        let git = |name: &str| {
            git_repository(
                name,
                "ssh://git@gitlab.com/example/homelab",
                "{branch: main}",
            )
        };
        let tree = repository(&[
            (
                "flux/manifests/01-bootstrap/flux-system/gotk-sync.yaml",
                format!(
                    "{}---\n{}",
                    git("flux-system"),
                    flux_kustomization(
                        "flux-system",
                        "./flux/manifests/01-bootstrap",
                        "flux-system"
                    )
                ),
            ),
            (
                "flux/manifests/01-bootstrap/flux-system/manifests.yaml",
                format!(
                    "{}---\n{}",
                    git("homelab"),
                    flux_kustomization("manifests", "./flux/manifests", "homelab")
                ),
            ),
            (
                "flux/manifests/01-bootstrap/flux-system/kustomization.yaml",
                "resources: [gotk-sync.yaml, manifests.yaml]\n".to_string(),
            ),
            (
                "flux/manifests/kustomization.yaml",
                "resources: [02-apps.yaml]\n".to_string(),
            ),
            (
                "flux/manifests/02-apps.yaml",
                flux_kustomization("apps", "./apps", "homelab"),
            ),
            ("apps/cm.yaml", "kind: ConfigMap".to_string()),
        ]);
        let root = tree.path().canonicalize().unwrap();
        let found = discover_in(&root, &[], Checkout::default());
        assert_eq!(found.entries, ["flux/manifests/01-bootstrap"]);
    }

    #[test]
    fn a_cluster_applied_by_hand_beside_one_flux_syncs_is_an_entry() {
        let git = |url: &str, reference: &str| git_repository("k8s-gitops", url, reference);
        let ks = |name: &str, path: &str| flux_kustomization(name, path, "k8s-gitops");
        let url = "https://github.com/example/k8s-gitops.git";
        let tree = repository(&[
            // tvories/k8s-gitops: `nas` syncs itself.
            ("clusters/nas/flux/repo.yaml", git(url, "{branch: main}")),
            (
                "clusters/nas/flux/cluster.yaml",
                ks("cluster", "./clusters/nas/flux"),
            ),
            ("clusters/nas/apps/cm.yaml", "kind: ConfigMap".to_string()),
            // `cluster-0` is applied by hand: a kustomization listing its own copy of the
            // GitRepository and a Kustomization syncing its deploy directory.
            (
                "clusters/cluster-0/kustomization.yaml",
                "resources: [repo.yaml, deploy.yaml]".to_string(),
            ),
            ("clusters/cluster-0/repo.yaml", git(url, "{branch: main}")),
            (
                "clusters/cluster-0/deploy.yaml",
                ks("deploy", "./clusters/cluster-0/flux/deploy"),
            ),
            (
                "clusters/cluster-0/flux/deploy/apps.yaml",
                ks("apps", "./clusters/cluster-0/apps"),
            ),
            (
                "clusters/cluster-0/apps/cm.yaml",
                "kind: ConfigMap".to_string(),
            ),
            // Old manifests whose paths moved: no entry.
            ("archive/cluster/repo.yaml", git(url, "{branch: main}")),
            (
                "archive/cluster/deploy.yaml",
                ks("deploy", "./cluster/deploy"),
            ),
            // Another branch of the repository is another tree: no entry.
            ("clusters/staging/repo.yaml", git(url, "{branch: staging}")),
            (
                "clusters/staging/deploy.yaml",
                ks("deploy", "./clusters/cluster-0/apps"),
            ),
        ]);
        let root = tree.path().canonicalize().unwrap();
        let found = discover_in(&root, &[], Checkout::default());
        assert_eq!(found.entries, ["clusters/cluster-0", "clusters/nas/flux"]);
        let [source::Inference::HandApplied {
            entry,
            source,
            url: applied_url,
        }] = &found.hand_applied[..]
        else {
            panic!("{:?}", found.hand_applied);
        };
        assert_eq!(entry, "clusters/cluster-0");
        assert_eq!(source.to_string(), "GitRepository/flux-system/k8s-gitops");
        assert_eq!(applied_url, url);
    }

    #[test]
    fn a_sync_path_with_a_variable_names_each_directory_it_matches() {
        let release = |path: &str| {
            format!("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {{name: flux-instance, namespace: flux-system}}\nspec:\n  chart:\n    spec:\n      chart: flux-instance\n      sourceRef: {{kind: HelmRepository, name: controlplane}}\n  values:\n    instance:\n      sync:\n        kind: GitRepository\n        url: https://github.com/example/home-ops\n        ref: refs/heads/main\n        path: {path}\n")
        };
        let tree = repository(&[
            (
                "kubernetes/apps/flux-system/flux-instance/helmrelease.yaml",
                release("kubernetes/clusters/${CLUSTER}/bootstrap"),
            ),
            ("elsewhere/helmrelease.yaml", release("${CLUSTER_PATH}")),
            (
                "kubernetes/clusters/deedee/bootstrap/entrypoint.yaml",
                String::from("kind: ConfigMap\n"),
            ),
            (
                "kubernetes/clusters/lab/bootstrap/entrypoint.yaml",
                String::from("kind: ConfigMap\n"),
            ),
            (
                "kubernetes/clusters/lab/apps/entrypoint.yaml",
                String::from("kind: ConfigMap\n"),
            ),
        ]);
        let root = tree.path().canonicalize().unwrap();
        let found = discover_in(&root, &[], Checkout::default());
        assert_eq!(
            found.entries,
            [
                "kubernetes/clusters/deedee/bootstrap",
                "kubernetes/clusters/lab/bootstrap"
            ]
        );
        let sync = found
            .sync_for("kubernetes/clusters/lab/bootstrap", &[])
            .expect("the sync of the lab cluster");
        assert_eq!(
            sync.kustomization().path.as_deref(),
            Some("kubernetes/clusters/lab/bootstrap")
        );
        assert!(
            sync.via.ends_with("whose sync path kubernetes/clusters/${CLUSTER}/bootstrap names kubernetes/clusters/lab/bootstrap"),
            "{}",
            sync.via
        );
    }

    /// soulwhisper/home-ops: the flux-instance HelmRelease's file names no namespace; the
    /// Kustomization that applies it puts it in gitops-system, so the operator's sync objects
    /// are gitops-system/gitops-system, which the repository's Kustomizations use.
    #[test]
    fn a_sync_whose_file_names_no_namespace_is_in_the_target_namespace_applying_it() {
        let tree = repository(&[
            (
                "kubernetes/apps/gitops-system/flux-instance/app/helmrelease.yaml",
                "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: flux-instance}\nspec:\n  chartRef: {kind: OCIRepository, name: flux-instance}\n  values:\n    instance:\n      sync: {kind: GitRepository, url: https://github.com/example/home-ops.git, ref: refs/heads/main, path: kubernetes/flux/cluster}\n",
            ),
            (
                "kubernetes/apps/gitops-system/flux-instance/ks.yaml",
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: flux-instance}\nspec:\n  targetNamespace: gitops-system\n  path: ./kubernetes/apps/gitops-system/flux-instance/app\n  sourceRef: {kind: GitRepository, name: gitops-system, namespace: gitops-system}\n",
            ),
            (
                "kubernetes/flux/cluster/cluster.yaml",
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: cluster-apps, namespace: gitops-system}\nspec:\n  path: ./kubernetes/apps\n  sourceRef: {kind: GitRepository, name: gitops-system}\n",
            ),
        ]);
        let root = tree.path().canonicalize().unwrap();
        let found = discover_in(&root, &[], Checkout::default());
        let sync = found
            .sync_for("kubernetes/flux/cluster", &[])
            .expect("the sync of kubernetes/flux/cluster");
        assert_eq!(
            sync.source,
            ObjectRef::new("GitRepository", "gitops-system", "gitops-system")
        );
        assert!(
            sync.via
                .starts_with("HelmRelease gitops-system/flux-instance "),
            "{}",
            sync.via
        );
    }

    #[test]
    fn an_artifact_root_is_the_one_directory_holding_the_sync_path() {
        let tree = tempfile::tempdir().unwrap();
        for dir in [
            "kubernetes/clusters/prod",
            "old/clusters/staging",
            "clusters/dev",
        ] {
            std::fs::create_dir_all(tree.path().join(dir)).unwrap();
        }
        let dirs: Vec<String> = [
            "kubernetes/clusters/prod",
            "old/clusters/staging",
            "clusters/dev",
        ]
        .iter()
        .map(|d| d.to_string())
        .collect();
        let sync = |kind: &str, path: &str| ClusterSync {
            source: ObjectRef::new(kind, "flux-system", "flux-system"),
            url: None,
            path: path.to_string(),
            root: String::new(),
            via: String::new(),
            origin: None,
            flux_version: None,
            instance: Value::Null,
        };
        let root = |s: ClusterSync, dirs: &[String]| s.artifact_root(tree.path(), dirs, &[]);
        assert_eq!(
            root(sync("OCIRepository", "clusters/prod"), &dirs),
            "kubernetes"
        );
        assert_eq!(root(sync("Bucket", "clusters/prod"), &dirs), "kubernetes");
        // At the root already, or a git tree (whose paths are the repository's): the root.
        assert_eq!(root(sync("OCIRepository", "clusters/dev"), &dirs), "");
        assert_eq!(root(sync("GitRepository", "clusters/prod"), &dirs), "");
        // Two directories could be the artifact: neither is guessed.
        let two: Vec<String> = ["a/clusters/prod", "b/clusters/prod"]
            .iter()
            .map(|d| d.to_string())
            .collect();
        assert_eq!(root(sync("OCIRepository", "clusters/prod"), &two), "");
        // A mapping in .plumb.yaml says where it is.
        let mapped = SourceMapping {
            kind: Some("OCIRepository".into()),
            namespace: None,
            name: "flux-system".into(),
            path: "deploy".into(),
        };
        assert_eq!(
            sync("OCIRepository", "clusters/prod").artifact_root(tree.path(), &dirs, &[mapped]),
            ""
        );
    }

    #[test]
    fn git_urls_of_one_repository_compare_equal() {
        let want = "github.com/org/home-ops";
        for url in [
            "https://github.com/org/home-ops",
            "https://github.com/org/home-ops.git",
            "ssh://git@github.com/org/home-ops.git",
            "ssh://git@github.com:22/org/home-ops",
            "git@github.com:org/home-ops.git",
            "https://GitHub.com/org/home-ops/",
        ] {
            assert_eq!(normalize_git_url(url), want, "{url}");
        }
        assert_ne!(
            normalize_git_url("https://github.com/org/other"),
            normalize_git_url("https://github.com/org/home-ops")
        );
        // GitHub's owner and name are case-insensitive: a clone of `truxnell/home-cluster` is
        // what `https://github.com/Truxnell/home-cluster` fetches. A server of one's own may
        // tell paths apart by case.
        assert_eq!(
            normalize_git_url("https://github.com/Truxnell/Home-Cluster"),
            normalize_git_url("git@github.com:truxnell/home-cluster.git")
        );
        assert_ne!(
            normalize_git_url("https://git.example.com/Org/ops"),
            normalize_git_url("https://git.example.com/org/ops")
        );
    }

    #[test]
    fn only_the_checked_out_branch_of_a_remote_is_the_checkout() {
        let checkout = Checkout {
            remotes: vec![normalize_git_url("git@github.com:org/ops.git")],
            branch: Some("main".into()),
        };
        let url = "https://github.com/org/ops";
        let at = |r: Value| checkout.is_checked_out(url, &r);
        assert!(at(Value::Null));
        assert!(at(serde_json::json!({"branch": "main"})));
        assert!(!at(serde_json::json!({"branch": "dev-team"})));
        assert!(!at(serde_json::json!({"branch": "main", "tag": "v1"})));
        assert!(!at(serde_json::json!({"commit": "0123"})));
        assert!(!checkout.is_checked_out("https://github.com/org/other", &Value::Null));
        // The upstream of a fork: another owner's `ops`, at the checked-out branch.
        assert!(checkout.may_fork("https://github.com/upstream/ops", &Value::Null));
        assert!(!checkout.may_fork(
            "https://github.com/upstream/ops",
            &serde_json::json!({"branch": "dev-team"})
        ));
        assert!(!checkout.may_fork("https://github.com/upstream/other", &Value::Null));
        // The checkout's own URL at another branch is another tree, not a fork.
        assert!(!checkout.may_fork(url, &serde_json::json!({"branch": "dev-team"})));
        let detached = Checkout {
            branch: None,
            ..checkout.clone()
        };
        assert!(detached.is_checked_out(url, &serde_json::json!({"branch": "dev-team"})));
    }

    #[test]
    fn remotes_are_read_from_remote_sections_only() {
        let config = "[core]\n\turl = nope\n[remote \"origin\"]\n\turl = git@github.com:org/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[remote \"fork\"]\n\turl = https://gitlab.com/me/r\n[branch \"main\"]\n\tremote = origin\n";
        assert_eq!(
            remote_urls(config),
            vec!["github.com/org/r", "gitlab.com/me/r"]
        );
    }

    #[test]
    fn a_flux_pinned_before_2_9_substitutes_leniently() {
        let sync = |v: Option<&str>| ClusterSync {
            flux_version: v.map(str::to_string),
            ..ClusterSync::from_sync(
                &serde_json::json!({"path": "x"}),
                "flux-system",
                None,
                String::new(),
            )
        };
        for (version, lenient, minor) in [
            (None, false, None),
            (Some("2.x"), false, None),
            (Some(">=2.4.0"), false, None),
            (Some("2.6.4"), true, Some((2, 6))),
            (Some("2.6.x"), true, Some((2, 6))),
            (Some("v2.8.1"), true, Some((2, 8))),
            (Some("2.9.0"), false, Some((2, 9))),
            (Some("2.10.x"), false, Some((2, 10))),
        ] {
            assert_eq!(sync(version).lenient_flux(), lenient, "{version:?}");
            assert_eq!(sync(version).flux_minor(), minor, "{version:?}");
        }
    }

    #[test]
    fn flux_instance_chart_values_declare_a_sync() {
        let hr = serde_json::json!({
            "apiVersion": "helm.toolkit.fluxcd.io/v2",
            "kind": "HelmRelease",
            "metadata": {"name": "flux-instance"},
            "spec": {
                "chartRef": {"kind": "OCIRepository", "name": "flux-instance"},
                "values": {"instance": {"sync": {"kind": "GitRepository", "url": "ssh://git@github.com/o/r", "path": "./kubernetes/flux/cluster"}}}
            }
        });
        let sync = ClusterSync::from_helm_release(&Object {
            value: hr.clone(),
            origin: None,
        })
        .unwrap();
        assert_eq!(sync.source.key(), "flux-system/flux-system");
        assert_eq!(sync.source.kind, "GitRepository");
        assert_eq!(sync.path, "kubernetes/flux/cluster");
        let mut other = hr;
        other["spec"]["chartRef"]["name"] = "podinfo".into();
        assert!(ClusterSync::from_helm_release(&Object {
            value: other,
            origin: None
        })
        .is_none());
    }
}
