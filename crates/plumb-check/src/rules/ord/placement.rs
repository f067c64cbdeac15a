//! Where each custom kind's CRD comes from, and whether it is there when Flux dry-runs the
//! objects of that kind: the analysis behind ORD001–ORD004.
//!
//! kustomize-controller applies a Kustomization's objects in stages (CRDs, Namespaces and
//! ClusterRoles first, and waited on), each stage server-side dry-run before anything is
//! applied. So a CRD object in the same Kustomization, in one it `dependsOn`, or in one that
//! created it is in place; a CRD a HelmRelease installs, or a controller creates when it
//! reconciles some CR, exists only once that Kustomization is Ready, so only `dependsOn` helps.

use super::builtin_kinds::is_builtin;
use super::known_charts;
use super::order::EntryOrder;
use crate::config::RuntimeCrd;
use crate::finding::{Finding, Location};
use crate::rule::CheckContext;
use plumb_flux::build::{EntryBuild, KustomizationBuild};
use plumb_flux::model::{Object, HELM_GROUP};
use plumb_yaml::Node;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// What provides a kind's CRD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProviderKind {
    /// A CustomResourceDefinition object of the build.
    Crd,
    /// A HelmRelease whose chart installs the CRD.
    HelmRelease,
    /// A CR whose controller creates the CRD at runtime (`runtimeCRDs` with `createdBy`).
    Controller,
}

/// One provider of a kind's CRD: the object, and the Kustomization that applies it.
#[derive(Clone, Copy)]
pub(crate) struct Provider<'a> {
    pub kind: ProviderKind,
    pub ks: &'a KustomizationBuild,
    pub object: &'a Object,
}

impl Provider<'_> {
    /// The text to point at: the CRD's kind name, the HelmRelease's chart, the CR's kind.
    pub(crate) fn node(&self) -> Option<&Node> {
        match self.kind {
            ProviderKind::Crd => self.object.node_at(&["spec", "names", "kind"]),
            ProviderKind::HelmRelease => {
                let origin = self.object.origin.as_ref()?;
                origin
                    .get_path(&["spec", "chartRef", "name"])
                    .or_else(|| origin.get_path(&["spec", "chart", "spec", "chart"]))
                    .or(Some(origin))
            }
            ProviderKind::Controller => self.object.node_at(&["kind"]),
        }
    }

    /// `CustomResourceDefinition certificates.cert-manager.io`, `HelmRelease cert-manager/cert-manager`.
    pub(crate) fn describe(&self) -> String {
        let o = self.object;
        match o.namespace() {
            "" => format!("{} {}", o.kind(), o.name()),
            ns => format!("{} {ns}/{}", o.kind(), o.name()),
        }
    }
}

/// Why an object's kind will not exist when it is dry-run.
#[derive(Clone, Copy)]
pub(crate) enum Verdict<'a> {
    /// Nothing provides the kind (ORD001).
    Unknown,
    /// Nothing the build saw provides the kind, but part of the cluster was not seen (a
    /// HelmRelease or helmfile release not rendered, a Kustomization not built): it may be
    /// there. No finding; the summary counts such kinds.
    Unseen,
    /// A provider exists, but in a Kustomization not ordered before this one (ORD002).
    NotOrdered(Provider<'a>),
    /// The only provider is a HelmRelease in the same Kustomization (ORD003).
    SameHelmRelease(Provider<'a>),
    /// The only provider is a CR in the same Kustomization whose controller creates the CRD
    /// when it reconciles it (ORD004).
    SameController(Provider<'a>),
}

/// An object whose kind will not exist when Flux dry-runs it.
pub(crate) struct Problem<'a> {
    pub ks: &'a KustomizationBuild,
    pub object: &'a Object,
    pub verdict: Verdict<'a>,
}

impl Problem<'_> {
    /// The object's `kind` text.
    pub(crate) fn node(&self) -> Option<&Node> {
        self.object.node_at(&["kind"])
    }

    /// A finding of `code` at the object's `kind`, with the chain of Kustomizations that
    /// applies it.
    pub(crate) fn finding(
        &self,
        cx: &CheckContext<'_>,
        code: &'static str,
        message: String,
        help: impl Into<String>,
    ) -> Finding {
        Finding::new(code, message, help)
            .at(self.node().and_then(|n| Location::of(n, cx.root)))
            .with_chain(&self.ks.chain)
    }

    /// The help of ORD003 and ORD004, whose provider is in the object's own Kustomization.
    pub(crate) fn move_after_help(&self) -> String {
        format!(
            "move the `{}` objects to a Kustomization that dependsOn {} (which should have `wait: true`)",
            self.object.kind(),
            describe(self.ks),
        )
    }
}

/// `Kustomization flux-system/apps`, or the entry directory when no Kustomization syncs it.
pub(crate) fn describe(ks: &KustomizationBuild) -> String {
    if ks.synthetic {
        format!(
            "the entry {}",
            if ks.path.is_empty() { "." } else { &ks.path }
        )
    } else {
        format!("Kustomization {}", ks.key())
    }
}

/// Every object of the build whose kind will not exist at its dry-run.
pub(crate) fn problems<'a>(cx: &CheckContext<'a>) -> Vec<Problem<'a>> {
    let mut out = Vec::new();
    for entry in &cx.build.entries {
        analyse_entry(entry, &cx.config.runtime_crds, &mut out);
    }
    out
}

/// The problems whose verdict `pick` selects, each with what `pick` takes out of the verdict:
/// ORD001–ORD004 each report one kind of verdict.
pub(crate) fn problems_where<'a, T>(
    cx: &CheckContext<'a>,
    pick: impl Fn(Verdict<'a>) -> Option<T>,
) -> Vec<(Problem<'a>, T)> {
    problems(cx)
        .into_iter()
        .filter_map(|p| pick(p.verdict).map(|t| (p, t)))
        .collect()
}

fn analyse_entry<'a>(entry: &'a EntryBuild, runtime: &'a [RuntimeCrd], out: &mut Vec<Problem<'a>>) {
    let order = EntryOrder::new(entry);
    let objects: Vec<(usize, &Object)> = entry
        .kustomizations
        .iter()
        .enumerate()
        .flat_map(|(i, k)| k.objects.iter().map(move |o| (i, o)))
        .collect();
    let mut crds: HashMap<(&str, &str), Vec<(usize, &Object)>> = HashMap::new();
    for &(i, o) in &objects {
        if o.is("apiextensions.k8s.io", "CustomResourceDefinition") {
            let group = o.str_at(&["spec", "group"]).unwrap_or("");
            let kind = o.str_at(&["spec", "names", "kind"]).unwrap_or("");
            crds.entry((group, kind)).or_default().push((i, o));
        }
    }
    // CRDs applied at bootstrap (its manifests, its rendered helmfile releases) are in the
    // cluster before Flux applies anything.
    let before_flux: HashSet<(&str, &str)> = entry
        .bootstrap
        .objects
        .iter()
        .chain(plumb_flux::helm_release::bootstrap::rendered_objects(
            &entry.bootstrap_releases,
        ))
        .filter(|o| o.is("apiextensions.k8s.io", "CustomResourceDefinition"))
        .map(|o| {
            (
                o.str_at(&["spec", "group"]).unwrap_or(""),
                o.str_at(&["spec", "names", "kind"]).unwrap_or(""),
            )
        })
        .collect();
    // A bootstrap release that is not rendered (helmfile templating) is known by its chart's
    // name, as an unrendered HelmRelease is.
    let unrendered_charts: Vec<&str> = entry
        .bootstrap
        .releases
        .iter()
        .filter(|r| {
            !entry.bootstrap_releases.iter().any(|b| {
                b.status == plumb_flux::build::Status::Built
                    && b.name == r.name
                    && Path::new(&b.kustomization) == r.file
            })
        })
        .filter_map(|r| r.chart.as_deref())
        .filter_map(|c| c.trim_end_matches('/').rsplit('/').next())
        .collect();
    let releases: Vec<(usize, &Object)> = objects
        .iter()
        .filter(|(_, o)| o.is(HELM_GROUP, "HelmRelease"))
        .copied()
        .collect();
    let unseen = has_unseen_parts(entry);
    let provider = |kind, i: usize, object| Provider {
        kind,
        ks: &entry.kustomizations[i],
        object,
    };
    for &(i, object) in &objects {
        let (group, kind) = (object.group(), object.kind());
        if kind.is_empty()
            || is_builtin(group, kind)
            || before_flux.contains(&(group, kind))
            || unrendered_charts
                .iter()
                .any(|c| known_charts::chart_installs(c, group, kind))
        {
            continue;
        }
        let mut providers: Vec<(usize, Provider<'a>)> = Vec::new();
        for &(j, o) in crds.get(&(group, kind)).into_iter().flatten() {
            providers.push((j, provider(ProviderKind::Crd, j, o)));
        }
        for &(j, o) in &releases {
            if release_installs(entry, o, group, kind) {
                providers.push((j, provider(ProviderKind::HelmRelease, j, o)));
            }
        }
        let mut accepted = false;
        for r in runtime.iter().filter(|r| provides(r, group, kind)) {
            let creators: Vec<(usize, &Object)> = objects
                .iter()
                .filter(|(_, o)| creates(r, o))
                .copied()
                .collect();
            // Without a creator in the build there is no order to check: the kind is trusted.
            accepted |= creators.is_empty();
            for (j, o) in creators {
                providers.push((j, provider(ProviderKind::Controller, j, o)));
            }
        }
        if accepted {
            continue;
        }
        let ks = &entry.kustomizations[i];
        if providers.is_empty() {
            out.push(Problem {
                ks,
                object,
                verdict: if unseen {
                    Verdict::Unseen
                } else {
                    Verdict::Unknown
                },
            });
            continue;
        }
        // A Kustomization that never applies fails no dry-run (ORD005/ORD006 say why).
        if order.blocked(i) {
            continue;
        }
        let in_place = providers.iter().any(|(j, p)| match p.kind {
            ProviderKind::Crd => order.applied_before(i, *j),
            ProviderKind::HelmRelease | ProviderKind::Controller => {
                *j != i && order.ready_before(i, *j)
            }
        });
        if in_place {
            continue;
        }
        let first = |k: ProviderKind, same: bool| {
            providers
                .iter()
                .find(|(j, p)| p.kind == k && (*j == i) == same)
                .map(|(_, p)| *p)
        };
        let verdict = if let Some(crd) = first(ProviderKind::Crd, false) {
            Verdict::NotOrdered(crd)
        } else if let Some(hr) = first(ProviderKind::HelmRelease, true) {
            Verdict::SameHelmRelease(hr)
        } else if let Some(cr) = first(ProviderKind::Controller, true) {
            Verdict::SameController(cr)
        } else {
            Verdict::NotOrdered(providers[0].1)
        };
        out.push(Problem {
            ks,
            object,
            verdict,
        });
    }
}

/// Whether part of what the cluster will have was not seen: a HelmRelease or helmfile release
/// not rendered (its chart unavailable, no helm, templating), a Kustomization not built. A kind
/// nothing seen provides may come from there.
fn has_unseen_parts(entry: &EntryBuild) -> bool {
    use plumb_flux::build::Status;
    // A failed one is reported by itself; what it would have provided is not a second finding.
    let unseen = |s: &Status| *s != Status::Built;
    // An unrendered release whose chart the table lists is known by the table.
    let known = |r: &plumb_flux::helm_release::ReleaseBuild| {
        entry
            .kustomizations
            .iter()
            .flat_map(|k| k.objects.iter())
            .find(|o| {
                o.is(HELM_GROUP, "HelmRelease")
                    && o.name() == r.name
                    && o.namespace_or_default() == r.namespace
            })
            .is_some_and(|o| known_charts::knows(entry, o))
    };
    entry
        .releases
        .iter()
        .any(|r| unseen(&r.status) && !known(r))
        || entry.bootstrap_releases.iter().any(|r| {
            let chart = entry
                .bootstrap
                .releases
                .iter()
                .find(|h| h.name == r.name && Path::new(&r.kustomization) == h.file)
                .and_then(|h| h.chart.as_deref())
                .and_then(|c| c.trim_end_matches('/').rsplit('/').next());
            unseen(&r.status) && !chart.is_some_and(known_charts::knows_chart)
        })
        || entry
            .kustomizations
            .iter()
            .any(|k| !k.synthetic && unseen(&k.status))
}

/// The kinds (`group/Kind`) whose provider may be in a part of the cluster that was not seen:
/// not reported, counted in the summary.
pub(crate) fn unseen_kinds(cx: &CheckContext<'_>) -> Vec<String> {
    let mut kinds: Vec<String> = problems(cx)
        .into_iter()
        .filter(|p| matches!(p.verdict, Verdict::Unseen))
        .map(|p| format!("{}/{}", p.object.group(), p.object.kind()))
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// Whether the HelmRelease `hr` installs the CRD of `group`/`kind`: measured from its render
/// when it was rendered, else from the table of charts known to install CRDs.
fn release_installs(entry: &EntryBuild, hr: &Object, group: &str, kind: &str) -> bool {
    let rendered = entry.releases.iter().find(|r| {
        r.status == plumb_flux::build::Status::Built
            && r.name == hr.name()
            && r.namespace == hr.namespace_or_default()
    });
    match rendered {
        Some(r) => r.objects.iter().any(|o| {
            o.is("apiextensions.k8s.io", "CustomResourceDefinition")
                && o.str_at(&["spec", "group"]) == Some(group)
                && o.str_at(&["spec", "names", "kind"]) == Some(kind)
        }),
        None => known_charts::installs(entry, hr, group, kind),
    }
}

/// Whether a `runtimeCRDs` entry lists `group`/`kind`.
fn provides(r: &RuntimeCrd, group: &str, kind: &str) -> bool {
    r.kinds.iter().any(|k| k == kind) && r.group.as_deref().is_none_or(|g| g == group)
}

/// Whether `object` is the CR whose reconciling creates `r`'s CRDs.
fn creates(r: &RuntimeCrd, object: &Object) -> bool {
    !r.created_by_kind.is_empty()
        && object.kind() == r.created_by_kind
        && r.created_by_group
            .as_deref()
            .is_none_or(|g| g == object.group())
}
