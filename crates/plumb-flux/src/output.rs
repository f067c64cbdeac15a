//! `plumb build`'s outputs: the YAML stream grouped per Kustomization, object names, and the
//! `plumb.build/v1` JSON document (documented in `docs/build.md`).

use crate::build::{EntryBuild, KustomizationBuild, RepositoryBuild, Status};
use crate::helm_release::ReleaseBuild;
use crate::model::{Object, ObjectRef};
use crate::source::Inference;
use rayon::prelude::*;
use serde_json::{json, Value};
use std::fmt;

/// How much of a build was built: the line `plumb build` and `plumb check` end with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub clusters: usize,
    /// Kustomizations of the clusters (an entry directory built as it stands is not one).
    pub kustomizations: usize,
    pub built: usize,
    pub failed: usize,
    /// Not built because their source is another repository, which is not fetched.
    pub not_built: usize,
    /// Not built because their source could not be fetched.
    pub unavailable: usize,
    /// Entry directories no Flux Kustomization syncs, built as they stand, whose build failed
    /// (they are not Kustomizations, so not among `failed`).
    pub entries_failed: usize,
    /// Such entry directories not built because what they list could not be fetched (a
    /// remote resource unreachable) or was not (offline, or not supported).
    pub entries_unavailable: usize,
    pub entries_not_built: usize,
    pub objects: usize,
    /// flux-operator ResourceSets; what they generate is built with the Kustomization that
    /// holds them ([`crate::resourceset`]).
    pub resource_sets: usize,
    /// HelmReleases, and how many were rendered, failed, could not get their chart, or were
    /// not rendered (no helm, a chart source plumb does not fetch, values it cannot know).
    pub releases: usize,
    pub rendered: usize,
    pub releases_failed: usize,
    pub releases_unavailable: usize,
    pub releases_not_rendered: usize,
    /// Objects the rendered releases produce.
    pub release_objects: usize,
    /// helmfile releases applied at bootstrap, and how many were rendered (the rest failed,
    /// were unavailable or not rendered).
    pub bootstrap_releases: usize,
    pub bootstrap_rendered: usize,
    pub bootstrap_failed: usize,
    pub bootstrap_unavailable: usize,
    pub bootstrap_not_rendered: usize,
}

impl Summary {
    fn add(&mut self, entry: &EntryBuild) {
        self.clusters += 1;
        for k in &entry.kustomizations {
            self.objects += k.objects.len();
            self.resource_sets += k
                .objects
                .iter()
                .filter(|o| o.is(crate::sync::OPERATOR_GROUP, "ResourceSet"))
                .count();
            if k.synthetic {
                match k.status {
                    Status::Failed => self.entries_failed += 1,
                    Status::Unavailable(_) => self.entries_unavailable += 1,
                    Status::NotBuilt(_) => self.entries_not_built += 1,
                    Status::Built => {}
                }
                continue;
            }
            self.kustomizations += 1;
            match k.status {
                Status::Built => self.built += 1,
                Status::Failed => self.failed += 1,
                Status::NotBuilt(_) => self.not_built += 1,
                Status::Unavailable(_) => self.unavailable += 1,
            }
        }
        self.add_bootstrap(entry);
        for r in &entry.releases {
            self.releases += 1;
            self.release_objects += r.objects.len();
            match r.status {
                Status::Built => self.rendered += 1,
                Status::Failed => self.releases_failed += 1,
                Status::NotBuilt(_) => self.releases_not_rendered += 1,
                Status::Unavailable(_) => self.releases_unavailable += 1,
            }
        }
    }

    fn add_bootstrap(&mut self, entry: &EntryBuild) {
        for r in &entry.bootstrap_releases {
            self.bootstrap_releases += 1;
            match r.status {
                Status::Built => self.bootstrap_rendered += 1,
                Status::Failed => self.bootstrap_failed += 1,
                Status::NotBuilt(_) => self.bootstrap_not_rendered += 1,
                Status::Unavailable(_) => self.bootstrap_unavailable += 1,
            }
        }
    }

    pub fn of_entry(entry: &EntryBuild) -> Summary {
        let mut s = Summary::default();
        s.add(entry);
        s
    }
}

impl fmt::Display for Summary {
    /// `94 Kustomizations in 1 cluster: 90 built, 1 failed, 3 not built (source in another
    /// repository, not fetched); 1204 objects`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        write!(
            f,
            "{} in {}: {} built, {} failed, {} not built",
            plural(self.kustomizations, "Kustomization", "Kustomizations"),
            plural(self.clusters, "cluster", "clusters"),
            self.built,
            self.failed,
            self.not_built,
        )?;
        if self.not_built > 0 {
            write!(
                f,
                " (source or resource not fetched or not supported: -v lists them)"
            )?;
        }
        if self.unavailable > 0 {
            write!(
                f,
                ", {} unavailable (source could not be fetched)",
                self.unavailable
            )?;
        }
        let entries = |n: usize| plural(n, "entry directory", "entry directories");
        if self.entries_failed > 0 {
            write!(f, ", {} failed to build", entries(self.entries_failed))?;
        }
        if self.entries_not_built > 0 {
            write!(
                f,
                ", {} not built (a resource not fetched: -v says which)",
                entries(self.entries_not_built)
            )?;
        }
        if self.entries_unavailable > 0 {
            write!(
                f,
                ", {} unavailable (a resource could not be fetched)",
                entries(self.entries_unavailable)
            )?;
        }
        write!(f, "; {}", plural(self.objects, "object", "objects"))?;
        if self.releases > 0 {
            write!(
                f,
                "; {}: {} rendered",
                plural(self.releases, "HelmRelease", "HelmReleases"),
                self.rendered
            )?;
            if self.release_objects > 0 {
                write!(
                    f,
                    " ({})",
                    plural(self.release_objects, "object", "objects")
                )?;
            }
            if self.releases_failed > 0 {
                write!(f, ", {} failed", self.releases_failed)?;
            }
            if self.releases_unavailable > 0 {
                write!(
                    f,
                    ", {} unavailable (chart could not be fetched)",
                    self.releases_unavailable
                )?;
            }
            if self.releases_not_rendered > 0 {
                write!(f, ", {} not rendered", self.releases_not_rendered)?;
            }
        }
        if self.bootstrap_releases > 0 {
            write!(
                f,
                "; {}: {} rendered",
                plural(
                    self.bootstrap_releases,
                    "bootstrap release",
                    "bootstrap releases"
                ),
                self.bootstrap_rendered
            )?;
            if self.bootstrap_failed > 0 {
                write!(f, ", {} failed", self.bootstrap_failed)?;
            }
            if self.bootstrap_unavailable > 0 {
                write!(f, ", {} unavailable", self.bootstrap_unavailable)?;
            }
            if self.bootstrap_not_rendered > 0 {
                write!(f, ", {} not rendered", self.bootstrap_not_rendered)?;
            }
        }
        if self.resource_sets > 0 {
            write!(
                f,
                "; {} expanded",
                plural(self.resource_sets, "ResourceSet", "ResourceSets")
            )?;
        }
        Ok(())
    }
}

/// An inference as `-o json` lists it.
fn assumption_json(entry: &str, why: &Inference) -> Value {
    let mut v = json!({
        "entry": entry,
        "source": why.source().to_string(),
        "message": why.message(),
        "help": why.help(),
    });
    if let (Inference::ClusterSync { file, line, .. }, Some(map)) = (why, v.as_object_mut()) {
        if let Some(file) = file {
            map.insert("file".into(), json!(file));
        }
        if let Some(line) = line {
            map.insert("line".into(), json!(line));
        }
    }
    v
}

impl RepositoryBuild {
    /// The summary of every entry.
    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for e in &self.entries {
            s.add(e);
        }
        s
    }

    /// Every inference of the build, once each (the same one in several clusters is one).
    pub fn assumptions(&self) -> Vec<&Inference> {
        let mut out: Vec<&Inference> = Vec::new();
        for why in self.entries.iter().flat_map(|e| &e.assumptions) {
            if !out.contains(&why) {
                out.push(why);
            }
        }
        out
    }

    /// One YAML stream of the selected Kustomizations' objects, each group preceded by a
    /// `# Source: Kustomization ns/name (path)` line (and `# Entry: path` with several entries).
    pub fn to_yaml(&self, select: &dyn Fn(&KustomizationBuild) -> bool) -> String {
        self.yaml_sections(select).concat()
    }

    /// [`RepositoryBuild::to_yaml`] in parts, in order: what a caller writing the stream out
    /// writes one after another, without first copying them into one string. A section (one
    /// Kustomization's or release's objects) is written in pieces of a few objects, in
    /// parallel: a cluster's root Kustomization may hold a third of all objects.
    pub fn yaml_sections<'a>(
        &'a self,
        select: &dyn Fn(&KustomizationBuild) -> bool,
    ) -> Vec<String> {
        // Each piece: its first line (a section's separator, entry and source, or the
        // separator between two objects of one section) and its objects, in output order.
        let mut pieces: Vec<(String, &'a [Object])> = Vec::new();
        let several = self.entries.len() > 1;
        let mut section = |title: String, objects: &'a [Object], entry: &str| {
            let mut header = String::new();
            if !pieces.is_empty() {
                header.push_str("---\n");
            }
            if several {
                header.push_str(&format!("# Entry: {entry}\n"));
            }
            header.push_str(&format!("# Source: {title}\n"));
            let mut chunks = objects.chunks(OBJECTS_PER_PIECE);
            pieces.push((header, chunks.next().unwrap_or_default()));
            pieces.extend(chunks.map(|chunk| ("---\n".to_string(), chunk)));
        };
        for entry in &self.entries {
            // What bootstrap applies comes first: the cluster has it before Flux.
            for r in bootstrap_of(entry, select).filter(|r| !r.objects.is_empty()) {
                section(
                    crate::helm_release::bootstrap::title(r),
                    &r.objects,
                    &entry.entry,
                );
            }
            for k in entry.kustomizations.iter().filter(|k| select(k)) {
                section(k.title(), &k.objects, &entry.entry);
                for r in releases_of(entry, k).filter(|r| !r.objects.is_empty()) {
                    section(r.title(), &r.objects, &entry.entry);
                }
            }
        }
        pieces
            .into_par_iter()
            .map(|(mut text, objects)| {
                text.push_str(&plumb_yaml::write_stream(objects.iter().map(|o| &o.value)));
                text
            })
            .collect()
    }

    /// `kind/namespace/name` per object, one a line (`kind//name` when cluster-scoped); with
    /// several entries, each entry's names follow a `# Entry: path` line, as in the YAML.
    pub fn to_names(&self, select: &dyn Fn(&KustomizationBuild) -> bool) -> String {
        let mut out = String::new();
        let several = self.entries.len() > 1;
        for entry in &self.entries {
            if several {
                out.push_str(&format!("# Entry: {}\n", entry.entry));
            }
            for o in entry
                .bootstrap_releases
                .iter()
                .flat_map(|r| r.objects.iter())
            {
                out.push_str(&o.display_id());
                out.push('\n');
            }
            for k in entry.kustomizations.iter().filter(|k| select(k)) {
                let rendered = releases_of(entry, k).flat_map(|r| r.objects.iter());
                for o in k.objects.iter().chain(rendered) {
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
        let mut assumptions = Vec::new();
        let mut entries = Vec::new();
        let mut releases = Vec::new();
        let mut bootstrap_releases = Vec::new();
        for entry in &self.entries {
            bootstrap_releases
                .extend(bootstrap_of(entry, select).map(|r| release_json(&entry.entry, r)));
            assumptions.extend(
                entry
                    .assumptions
                    .iter()
                    .map(|why| assumption_json(&entry.entry, why)),
            );
            let s = Summary::of_entry(entry);
            entries.push(json!({
                "entry": entry.entry,
                "kustomizations": s.kustomizations,
                "built": s.built,
                "failed": s.failed,
                "not_built": s.not_built,
                "unavailable": s.unavailable,
                "objects": s.objects,
                "resource_sets": s.resource_sets,
                "helm_releases": s.releases,
                "rendered": s.rendered,
                "bootstrap_releases": s.bootstrap_releases,
                "bootstrap_rendered": s.bootstrap_rendered,
                "seconds": entry.seconds,
            }));
            for k in entry.kustomizations.iter().filter(|k| select(k)) {
                let mut item = json!({
                    "namespace": k.kustomization.namespace,
                    "name": k.kustomization.name,
                    "path": k.path,
                    "source": k.source,
                    "depends_on": k.kustomization.depends_on.iter().map(ObjectRef::key).collect::<Vec<_>>(),
                    "objects": k.objects.iter().map(|o| o.value.clone()).collect::<Vec<_>>(),
                    "errors": k.diagnostics,
                    "status": k.status.as_str(),
                });
                if let Some(map) = item.as_object_mut() {
                    if let Status::NotBuilt(reason) | Status::Unavailable(reason) = &k.status {
                        map.insert("reason".into(), json!(reason));
                    }
                    map.insert("entry".into(), json!(entry.entry));
                    map.insert("parent".into(), json!(k.parent));
                    if k.synthetic {
                        map.insert("synthetic".into(), json!(true));
                    }
                }
                kustomizations.push(item);
                releases.extend(releases_of(entry, k).map(|r| release_json(&entry.entry, r)));
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
            "helm_releases": releases,
            "bootstrap_releases": bootstrap_releases,
            "errors": errors,
            "assumptions": assumptions,
            "entries": entries,
        })
    }
}

/// How many objects [`RepositoryBuild::yaml_sections`] writes in one piece.
const OBJECTS_PER_PIECE: usize = 32;

/// The helmfile releases of `entry`'s bootstrap, when the whole cluster is selected (`--ks`
/// picking some Kustomizations shows only theirs).
fn bootstrap_of<'a>(
    entry: &'a EntryBuild,
    select: &dyn Fn(&KustomizationBuild) -> bool,
) -> impl Iterator<Item = &'a ReleaseBuild> + 'a {
    let whole = entry.kustomizations.iter().all(select);
    entry.bootstrap_releases.iter().filter(move |_| whole)
}

/// The HelmReleases that Kustomization `k` of `entry` produced.
fn releases_of<'a>(
    entry: &'a EntryBuild,
    k: &'a KustomizationBuild,
) -> impl Iterator<Item = &'a ReleaseBuild> + 'a {
    let key = k.key();
    entry
        .releases
        .iter()
        .filter(move |r| r.kustomization == key)
}

/// A HelmRelease as `-o json` lists it.
fn release_json(entry: &str, r: &ReleaseBuild) -> Value {
    let mut v = json!({
        "entry": entry,
        "namespace": r.namespace,
        "name": r.name,
        "kustomization": r.kustomization,
        "release_name": r.release_name,
        "release_namespace": r.release_namespace,
        "chart": r.chart.as_ref().map(|c| json!({
            "name": c.name,
            "version": c.version,
            "digest": c.digest,
            "source": c.source,
        })),
        "status": r.status.as_str(),
        "cached": r.cached,
        "notes": r.notes,
        "objects": r.objects.iter().map(|o| o.value.clone()).collect::<Vec<_>>(),
        "errors": r.diagnostics,
    });
    if let (Status::NotBuilt(reason) | Status::Unavailable(reason), Some(map)) =
        (&r.status, v.as_object_mut())
    {
        map.insert("reason".into(), json!(reason));
    }
    v
}
