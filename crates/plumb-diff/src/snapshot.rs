//! One side of a diff: what each producer of each cluster applies, read from a
//! [`RepositoryBuild`].
//!
//! A producer is what writes objects to the cluster: a Flux Kustomization (its built objects), a
//! HelmRelease (its rendered objects, applied by helm-controller), a helmfile release of the
//! bootstrap, or an entry directory no Kustomization syncs (built as it stands).

use plumb_flux::build::{RepositoryBuild, Status};
use plumb_flux::diagnostic::Diagnostic;
use plumb_flux::helm_release::ReleaseBuild;
use serde_json::Value;
use std::fmt;

/// What each cluster of one revision applies.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub clusters: Vec<Cluster>,
}

/// One entry path of the build: a cluster.
#[derive(Debug, Clone)]
pub struct Cluster {
    pub entry: String,
    /// In build order: bootstrap releases, then each Kustomization followed by its
    /// HelmReleases.
    pub producers: Vec<Producer>,
}

/// The kind of thing that applies objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProducerKind {
    Kustomization,
    HelmRelease,
    /// A release of a bootstrap helmfile, applied before Flux.
    HelmfileRelease,
    /// An entry directory built as it stands: no Kustomization syncs it.
    Entry,
}

impl ProducerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProducerKind::Kustomization => "Kustomization",
            ProducerKind::HelmRelease => "HelmRelease",
            ProducerKind::HelmfileRelease => "HelmfileRelease",
            ProducerKind::Entry => "Entry",
        }
    }
}

/// A producer's identity, the same on both sides of a diff.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProducerId {
    pub kind: ProducerKind,
    pub namespace: String,
    pub name: String,
}

impl fmt::Display for ProducerId {
    /// `Kustomization flux-system/apps`, `Entry clusters/dev`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind.as_str(), self.name)
        } else {
            write!(f, "{} {}/{}", self.kind.as_str(), self.namespace, self.name)
        }
    }
}

/// Whether a producer's objects are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Built,
    /// Its build or render failed: the controller would fail too. The errors, as printed.
    Failed(Vec<String>),
    /// Not built or not rendered, for a reason that is not the repository's error (a source
    /// or chart that could not be fetched, no helm).
    NotBuilt(String),
}

/// A chart and its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chart {
    pub name: String,
    pub version: String,
}

/// One producer and what it applies.
#[derive(Debug, Clone)]
pub struct Producer {
    pub id: ProducerId,
    /// `Kustomization flux-system/apps (clusters/dev/apps)`, as `plumb build` titles it.
    pub title: String,
    pub state: State,
    /// Its objects, in output order.
    pub objects: Vec<Value>,
    /// Whether an object that leaves its output is deleted from the cluster: a Kustomization
    /// with `spec.prune: true`, a HelmRelease (helm removes what a release no longer
    /// renders). A bootstrap release is applied once, by hand: nothing it drops is deleted.
    pub prune: bool,
    /// A Kustomization's `spec.force`: an object the API server refuses to patch is deleted
    /// and created again.
    pub force: bool,
    /// The Kustomization whose objects hold this producer's object.
    pub parent: Option<ProducerId>,
    /// A HelmRelease's or helmfile release's chart: the rendered one, else as the spec
    /// names it.
    pub chart: Option<Chart>,
}

impl Snapshot {
    /// The producers of every entry of `build`.
    pub fn of(build: &RepositoryBuild) -> Snapshot {
        // Messages quoting the tree's absolute path (kustomize's) read the same on both
        // sides when it is cut off: one side is a temporary export.
        let root = format!("{}/", build.root.display());
        let state = |status: &Status, diagnostics: &[Diagnostic]| match state(status, diagnostics) {
            State::Failed(errors) => {
                State::Failed(errors.into_iter().map(|e| e.replace(&root, "")).collect())
            }
            State::NotBuilt(reason) => State::NotBuilt(reason.replace(&root, "")),
            built => built,
        };
        let release = |r: &ReleaseBuild, kind: ProducerKind, parent: Option<ProducerId>| {
            let mut p = release(r, kind, parent);
            p.state = state(&r.status, &r.diagnostics);
            p
        };
        let clusters = build
            .entries
            .iter()
            .map(|entry| {
                let mut producers = Vec::new();
                for r in &entry.bootstrap_releases {
                    producers.push(release(r, ProducerKind::HelmfileRelease, None));
                }
                for k in &entry.kustomizations {
                    let id = if k.synthetic {
                        ProducerId {
                            kind: ProducerKind::Entry,
                            namespace: String::new(),
                            name: if k.path.is_empty() {
                                ".".into()
                            } else {
                                k.path.clone()
                            },
                        }
                    } else {
                        kustomization_id(&k.key())
                    };
                    let flag = |name: &str| {
                        k.kustomization
                            .object
                            .value
                            .pointer(&format!("/spec/{name}"))
                            .and_then(Value::as_bool)
                            .unwrap_or(false)
                    };
                    producers.push(Producer {
                        id,
                        title: k.title(),
                        state: state(&k.status, &k.diagnostics),
                        objects: k.objects.iter().map(|o| o.value.clone()).collect(),
                        prune: flag("prune"),
                        force: flag("force"),
                        parent: k.parent.as_deref().map(kustomization_id),
                        chart: None,
                    });
                    let key = k.key();
                    for r in entry.releases.iter().filter(|r| r.kustomization == key) {
                        let mut p =
                            release(r, ProducerKind::HelmRelease, Some(kustomization_id(&key)));
                        if p.chart.is_none() {
                            p.chart = spec_chart(&k.objects, r);
                        }
                        producers.push(p);
                    }
                }
                Cluster {
                    entry: entry.entry.clone(),
                    producers,
                }
            })
            .collect();
        Snapshot { clusters }
    }
}

/// The producer a Kustomization key names: `entry PATH` is an entry directory no
/// Kustomization syncs ([`plumb_flux::model::FluxKustomization::key`]).
fn kustomization_id(key: &str) -> ProducerId {
    if let Some(path) = key.strip_prefix("entry ") {
        return ProducerId {
            kind: ProducerKind::Entry,
            namespace: String::new(),
            name: path.into(),
        };
    }
    let (namespace, name) = key.split_once('/').unwrap_or(("", key));
    ProducerId {
        kind: ProducerKind::Kustomization,
        namespace: namespace.into(),
        name: name.into(),
    }
}

fn state(status: &Status, diagnostics: &[Diagnostic]) -> State {
    match status {
        Status::Built => State::Built,
        Status::Failed => State::Failed(
            diagnostics
                .iter()
                .filter(|d| d.is_error())
                .map(ToString::to_string)
                .collect(),
        ),
        Status::NotBuilt(reason) | Status::Unavailable(reason) => State::NotBuilt(reason.clone()),
    }
}

fn release(r: &ReleaseBuild, kind: ProducerKind, parent: Option<ProducerId>) -> Producer {
    let title = match kind {
        ProducerKind::HelmfileRelease => plumb_flux::helm_release::bootstrap::title(r),
        _ => r.title(),
    };
    Producer {
        id: ProducerId {
            kind,
            namespace: r.namespace.clone(),
            name: r.name.clone(),
        },
        title,
        state: state(&r.status, &r.diagnostics),
        objects: r.objects.iter().map(|o| o.value.clone()).collect(),
        prune: kind == ProducerKind::HelmRelease,
        force: false,
        parent,
        chart: r.chart.as_ref().map(|c| Chart {
            name: c.name.clone(),
            version: c.version.clone(),
        }),
    }
}

/// The chart a HelmRelease's spec names (`spec.chart.spec.chart` and `version`), for one that
/// was not rendered.
fn spec_chart(objects: &[plumb_flux::model::Object], r: &ReleaseBuild) -> Option<Chart> {
    let hr = objects.iter().find(|o| {
        o.kind() == "HelmRelease" && o.name() == r.name && o.namespace_or_default() == r.namespace
    })?;
    let spec = hr.value.pointer("/spec/chart/spec")?;
    Some(Chart {
        name: spec.get("chart")?.as_str()?.to_string(),
        version: spec
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("*")
            .to_string(),
    })
}
