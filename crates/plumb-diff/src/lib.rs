//! What a change to a Flux repository does to the cluster: the builds of two revisions
//! ([`Snapshot`]s) paired object by object.
//!
//! Objects are paired by cluster (entry path), producer (the Kustomization, HelmRelease or
//! bootstrap release that applies them) and `group`/`kind`/`namespace`/`name`: each is added,
//! removed, changed (a unified diff of its YAML) or moved (the same object, applied by another
//! producer). A producer whose build fails, or that could not be built, on either side shows
//! why instead of every object it applies as removed or added.
//!
//! What is not a change is left out of the diffs and listed ([`noise`]): the chart labels that
//! change with every chart version, a generated name whose hash changed while its content did
//! not. Secret values never appear ([`mask`]). Changes that hurt in a cluster (an immutable field,
//! a pruned PersistentVolumeClaim, RBAC widened) are named with a code ([`danger`]). The result
//! is printed for a terminal, as one review comment ([`markdown`], cut to a size limit) or as
//! `plumb.diff/v1` JSON ([`json`]).

mod compare;
pub mod danger;
pub mod json;
pub mod markdown;
pub mod mask;
pub mod noise;
pub mod snapshot;
pub mod summary;
pub mod text;
mod unified;

pub use compare::diff;
pub use danger::{Danger, DangerDoc};
pub use snapshot::{Chart, Cluster, Producer, ProducerId, ProducerKind, Snapshot, State};
pub use summary::{ChartChange, ImageChange};

use serde_json::Value;
use std::fmt;

/// How to compare.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Diff objects as built, chart labels and generated-name hashes included.
    pub show_noise: bool,
}

/// An object's identity inside one producer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    /// The key of a built object.
    pub fn of(value: &Value) -> ObjectKey {
        let s = |p: &str| value.pointer(p).and_then(Value::as_str).unwrap_or("");
        let api_version = s("/apiVersion");
        ObjectKey {
            group: plumb_flux::model::group_of(api_version).to_string(),
            kind: s("/kind").to_string(),
            namespace: s("/metadata/namespace").to_string(),
            name: s("/metadata/name").to_string(),
        }
    }

    pub fn is(&self, group: &str, kind: &str) -> bool {
        self.group == group && self.kind == kind
    }
}

impl fmt::Display for ObjectKey {
    /// `Deployment media/plex`, `ClusterRole admin` (cluster-scoped), with the group for
    /// kinds outside the core and `apps` groups when it tells two kinds apart (`Kustomization`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// Which side of the diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Base,
    Head,
}

impl Side {
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Base => "base",
            Side::Head => "head",
        }
    }
}

/// What happened to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Added,
    Removed,
    Changed,
    /// Applied by another producer on the head side (with or without changes).
    Moved,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Added => "added",
            Action::Removed => "removed",
            Action::Changed => "changed",
            Action::Moved => "moved",
        }
    }
}

/// One object's change.
#[derive(Debug, Clone)]
pub struct Change {
    pub object: ObjectKey,
    pub action: Action,
    /// The producer that applied it on the base side, for a moved object.
    pub moved_from: Option<ProducerId>,
    /// Its base name, when a generated name's hash changed with its content.
    pub renamed_from: Option<String>,
    /// A unified diff of its YAML, secrets masked, noise left out unless asked for.
    pub diff: String,
    /// Noise was left out of `diff`.
    pub noise_hidden: bool,
    /// The object as built on each side (not masked: for the danger rules, never printed).
    pub base: Option<Value>,
    pub head: Option<Value>,
}

/// Why a producer's objects could not be compared, on one side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unknown {
    /// Its build or render fails there: the errors.
    Failed(Vec<String>),
    /// It was not built there, and why.
    NotBuilt(String),
}

/// One producer's part of the diff.
#[derive(Debug, Clone)]
pub struct ProducerDiff {
    pub id: ProducerId,
    /// The head side's title, else the base side's.
    pub title: String,
    /// Present on the base side, on the head side.
    pub in_base: bool,
    pub in_head: bool,
    /// Why its objects are not compared, per side; both `None` when they are.
    pub base_unknown: Option<Unknown>,
    pub head_unknown: Option<Unknown>,
    pub changes: Vec<Change>,
    /// A HelmRelease whose render is not compared while the HelmRelease object or a
    /// ConfigMap or Secret its `valuesFrom` reads changed: what the change renders is unknown,
    /// and the output says so.
    pub render_unknown: bool,
}

impl ProducerDiff {
    /// Whether its objects were compared.
    pub fn compared(&self) -> bool {
        self.base_unknown.is_none() && self.head_unknown.is_none()
    }

    /// Added, changed, removed and moved objects.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for change in &self.changes {
            match change.action {
                Action::Added => c.added += 1,
                Action::Removed => c.removed += 1,
                Action::Changed => c.changed += 1,
                Action::Moved => c.moved += 1,
            }
        }
        c
    }

    /// Whether it is worth showing: objects changed, or it cannot be compared while it is
    /// not the same failure on both sides.
    pub fn is_interesting(&self) -> bool {
        !self.changes.is_empty()
            || (!self.compared() && (self.base_unknown != self.head_unknown || self.render_unknown))
            || self.in_base != self.in_head
    }
}

/// Objects added, changed, removed, moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub added: usize,
    pub changed: usize,
    pub removed: usize,
    pub moved: usize,
}

impl Counts {
    pub fn add(&mut self, other: Counts) {
        self.added += other.added;
        self.changed += other.changed;
        self.removed += other.removed;
        self.moved += other.moved;
    }

    pub fn total(&self) -> usize {
        self.added + self.changed + self.removed + self.moved
    }
}

/// One cluster's part of the diff.
#[derive(Debug, Clone)]
pub struct ClusterDiff {
    pub entry: String,
    pub in_base: bool,
    pub in_head: bool,
    /// Every producer of either side, in the head side's build order, then the producers
    /// only the base side has.
    pub producers: Vec<ProducerDiff>,
}

/// An object whose only difference is noise, left out of the diffs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Noise {
    pub entry: String,
    pub producer: ProducerId,
    pub object: ObjectKey,
    /// What differed: `chart labels (helm.sh/chart)`, `generated name hash (a-x → a-y)`.
    pub why: String,
}

/// The whole comparison.
#[derive(Debug, Clone, Default)]
pub struct Diff {
    pub clusters: Vec<ClusterDiff>,
    pub images: Vec<ImageChange>,
    pub charts: Vec<ChartChange>,
    pub dangers: Vec<Danger>,
    pub noise: Vec<Noise>,
    /// Noise was kept in the diffs (`--show-noise`).
    pub show_noise: bool,
}

impl Diff {
    /// Whether anything differs (noise aside).
    pub fn has_changes(&self) -> bool {
        self.clusters
            .iter()
            .any(|c| c.in_base != c.in_head || c.producers.iter().any(ProducerDiff::is_interesting))
    }

    /// All objects added, changed, removed, moved.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for p in self.clusters.iter().flat_map(|c| &c.producers) {
            c.add(p.counts());
        }
        c
    }

    /// The changes whose diff leaves noise out.
    pub fn noise_hidden(&self) -> usize {
        self.clusters
            .iter()
            .flat_map(|c| &c.producers)
            .flat_map(|p| &p.changes)
            .filter(|c| c.noise_hidden)
            .count()
    }

    /// What the output says about noise left out, when there was some: one line.
    pub fn noise_line(&self) -> Option<String> {
        let (only, hidden) = (self.noise.len(), self.noise_hidden());
        if self.show_noise || (only == 0 && hidden == 0) {
            return None;
        }
        let mut parts = Vec::new();
        if only > 0 {
            parts.push(format!(
                "{} that differ only in them",
                plural(only, "object")
            ));
        }
        if hidden > 0 {
            parts.push(format!("{} shown without them", plural(hidden, "diff")));
        }
        Some(format!(
            "Chart labels (helm.sh/chart, app.kubernetes.io/version) and generated-name hashes are left out: {}. --show-noise shows them.",
            parts.join(", ")
        ))
    }

    /// The producers whose objects could not be compared on at least one side.
    pub fn uncompared(&self) -> usize {
        self.clusters
            .iter()
            .flat_map(|c| &c.producers)
            .filter(|p| !p.compared())
            .count()
    }
}

/// What a revision is, as the output names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Revision {
    /// What the user asked for or how it was chosen (`main`, `merge base of HEAD and
    /// origin/main`, `work tree`).
    pub label: String,
    /// The commit, full hex; `None` for the work tree.
    pub commit: Option<String>,
    /// Its short form and summary line, for the title.
    pub short: Option<String>,
    pub summary: Option<String>,
}

impl Revision {
    /// `main (1a2b3c4 Bump plex)`, `work tree`.
    pub fn describe(&self) -> String {
        let asked_for_the_commit = self
            .commit
            .as_deref()
            .is_some_and(|c| !self.label.is_empty() && c.starts_with(&self.label));
        match (&self.short, &self.summary) {
            (Some(short), Some(summary)) if asked_for_the_commit => format!("{short} {summary}"),
            (Some(short), _) if asked_for_the_commit => short.clone(),
            (Some(short), Some(summary)) if !summary.is_empty() => {
                format!("{} ({short} {summary})", self.label)
            }
            (Some(short), _) => format!("{} ({short})", self.label),
            _ => self.label.clone(),
        }
    }
}

impl ProducerDiff {
    /// What happened to it in a few words: `2 added, 1 changed`, `new`, `fails on head`.
    pub fn status_text(&self) -> String {
        let side = |u: &Option<Unknown>, name: &str| match u {
            Some(Unknown::Failed(_)) => Some(format!("fails on {name}")),
            Some(Unknown::NotBuilt(_)) => Some(format!("not built on {name}")),
            None => None,
        };
        let mut parts: Vec<String> = Vec::new();
        // Absent on a side whose build did not reach it is unknown there, not new or gone.
        match (self.in_base, self.in_head) {
            (false, true) if self.base_unknown.is_none() => parts.push("new".into()),
            (true, false) if self.head_unknown.is_none() => parts.push("gone".into()),
            _ => {}
        }
        if self.base_unknown.is_some() && self.base_unknown == self.head_unknown {
            parts.extend(match &self.head_unknown {
                Some(Unknown::Failed(_)) => Some("fails on both sides".to_string()),
                _ => Some("not built on either side".to_string()),
            });
            if self.render_unknown {
                parts.push(
                    "its HelmRelease or its values changed: what it renders is unknown".into(),
                );
            }
        } else {
            parts.extend(side(&self.base_unknown, "base"));
            parts.extend(side(&self.head_unknown, "head"));
        }
        let c = self.counts();
        for (n, word) in [
            (c.added, "added"),
            (c.changed, "changed"),
            (c.removed, "removed"),
            (c.moved, "moved in"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {word}"));
            }
        }
        if parts.is_empty() {
            parts.push("no change".into());
        }
        parts.join(", ")
    }

    /// The errors or reasons that kept its objects from being compared, one per side.
    pub fn unknown_text(&self) -> Vec<String> {
        let mut out = Vec::new();
        let sides: &[(&Option<Unknown>, &str)] =
            if self.base_unknown.is_some() && self.base_unknown == self.head_unknown {
                &[(&self.head_unknown, "both sides")]
            } else {
                &[(&self.base_unknown, "base"), (&self.head_unknown, "head")]
            };
        for &(u, name) in sides {
            match u {
                Some(Unknown::Failed(errors)) => {
                    out.push(format!("fails on {name}:"));
                    out.extend(errors.iter().cloned());
                }
                Some(Unknown::NotBuilt(reason)) => {
                    out.push(format!("not built on {name}: {reason}"));
                }
                None => {}
            }
        }
        out
    }
}

/// `1 object`, `2 objects`.
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}
