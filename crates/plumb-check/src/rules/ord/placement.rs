//! Where each custom kind's CRD comes from, and whether it is there when Flux dry-runs the
//! objects of that kind: the analysis behind ORD001–ORD004.
//!
//! kustomize-controller applies a Kustomization's objects in stages (CRDs, Namespaces and
//! ClusterRoles first, and waited on), each stage server-side dry-run before anything is
//! applied. So a CRD object in the same Kustomization, in one it `dependsOn`, or in one that
//! created it is in place; a CRD a HelmRelease installs, or a controller creates when it
//! reconciles some CR, exists only once that Kustomization is Ready, so only `dependsOn` helps.

use super::builtin_kinds::is_builtin;
use super::order::EntryOrder;
use super::providers::{EntryProviders, Served};
use crate::config::RuntimeCrd;
use crate::finding::{Finding, Location};
use crate::rule::CheckContext;
use plumb_flux::build::{EntryBuild, KustomizationBuild};
use plumb_flux::model::Object;
use plumb_yaml::Node;

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
                let origin = self.object.origin.as_deref()?;
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
    /// there. No finding; the summary counts such kinds. With the distribution that would
    /// serve the kind when none is configured.
    Unseen(Option<crate::config::Distribution>),
    /// A provider exists, but in a Kustomization not ordered before this one (ORD002).
    NotOrdered(Provider<'a>),
    /// The only provider is a HelmRelease in the same Kustomization (ORD003).
    SameHelmRelease(Provider<'a>),
    /// The only provider is a CR in the same Kustomization whose controller creates the CRD
    /// when it reconciles it (ORD004).
    SameController(Provider<'a>),
}

/// An object whose kind will not exist when Flux dry-runs it.
#[derive(Clone, Copy)]
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

/// The apply-order analysis of a build, made once per check.
#[derive(Default)]
pub(crate) struct Placement<'a> {
    /// Every object whose kind will not exist at its dry-run.
    problems: Vec<Problem<'a>>,
    /// What was not seen, over all entries: HelmReleases not rendered, bootstrap helmfile
    /// releases not rendered (nor known by an adopter), Kustomizations not built.
    unseen_releases: usize,
    unseen_helmfile: usize,
    unbuilt: usize,
}

fn placement<'c, 'a>(cx: &'c CheckContext<'a>) -> &'c Placement<'a> {
    cx.placement.get_or_init(|| {
        let mut out = Placement::default();
        for entry in &cx.build.entries {
            analyse_entry(entry, cx.config, &mut out);
        }
        out
    })
}

/// Every object of the build whose kind will not exist at its dry-run.
pub(crate) fn problems<'c, 'a>(cx: &'c CheckContext<'a>) -> &'c [Problem<'a>] {
    &placement(cx).problems
}

/// The problems whose verdict `pick` selects, each with what `pick` takes out of the verdict:
/// ORD001–ORD004 each report one kind of verdict.
pub(crate) fn problems_where<'a, T>(
    cx: &CheckContext<'a>,
    pick: impl Fn(Verdict<'a>) -> Option<T>,
) -> Vec<(Problem<'a>, T)> {
    problems(cx)
        .iter()
        .filter_map(|p| pick(p.verdict).map(|t| (*p, t)))
        .collect()
}

fn analyse_entry<'a>(
    entry: &'a EntryBuild,
    config: &'a crate::config::CheckConfig,
    placement: &mut Placement<'a>,
) {
    let runtime = &config.runtime_crds;
    let order = EntryOrder::new(entry);
    let seen = EntryProviders::new(entry, config.distribution);
    placement.unseen_releases += seen.releases.iter().filter(|r| r.kinds.is_none()).count();
    placement.unseen_helmfile += seen.bootstrap_unseen.len();
    placement.unbuilt += seen.unbuilt.iter().filter(|&&u| u).count();
    let out = &mut placement.problems;
    let anything_unseen = seen.anything_unseen();
    let objects: Vec<(usize, &Object)> = entry
        .kustomizations
        .iter()
        .enumerate()
        .flat_map(|(i, k)| k.objects.iter().map(move |o| (i, o)))
        .collect();
    let provider = |kind, i: usize, object| Provider {
        kind,
        ks: &entry.kustomizations[i],
        object,
    };
    for &(i, object) in &objects {
        let (group, kind) = (object.group(), object.kind());
        if kind.is_empty() || is_builtin(group, kind) || seen.before_flux.contains(&(group, kind)) {
            continue;
        }
        let maybe_served = match seen.served(group, kind) {
            Served::Yes => continue,
            Served::No => None,
            Served::Maybe(d) => Some(d),
        };
        let mut providers: Vec<(usize, Provider<'a>)> = Vec::new();
        for &(j, o) in seen.crds.get(&(group, kind)).into_iter().flatten() {
            providers.push((j, provider(ProviderKind::Crd, j, o)));
        }
        for r in &seen.releases {
            if r.provides(group, kind) {
                providers.push((r.ks, provider(ProviderKind::HelmRelease, r.ks, r.object)));
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
                verdict: if anything_unseen || maybe_served.is_some() {
                    Verdict::Unseen(maybe_served)
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
        if in_place || witnessed(&seen, &order, i, &providers) {
            continue;
        }
        // Something not seen may be in place before this Kustomization and provide the kind
        // (unless `runtimeCRDs` says which controller creates it).
        let configured = providers
            .iter()
            .any(|(_, p)| p.kind == ProviderKind::Controller);
        let unseen_before = !configured
            && (maybe_served.is_some()
                || !seen.bootstrap_unseen.is_empty()
                || seen
                    .releases
                    .iter()
                    .any(|r| r.kinds.is_none() && (r.ks == i || order.ready_before(i, r.ks)))
                || (0..entry.kustomizations.len())
                    .any(|j| seen.unbuilt[j] && j != i && order.applied_before(i, j)));
        if unseen_before {
            out.push(Problem {
                ks,
                object,
                verdict: Verdict::Unseen(maybe_served),
            });
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

/// Whether a Kustomization that Kustomization `i` waits for applies an object of a kind the
/// same HelmRelease or controller provides: that one could not be Ready before the
/// provider's CRDs existed, and a chart's (or controller's) CRDs are installed together, so
/// they are in place for `i` too.
fn witnessed(
    seen: &EntryProviders<'_>,
    order: &EntryOrder,
    i: usize,
    providers: &[(usize, Provider<'_>)],
) -> bool {
    let n = seen.ks_kinds.len();
    providers.iter().any(|(_, p)| {
        // A CRD object is in place as soon as its Kustomization was applied, which the order
        // already decides; a controller of `runtimeCRDs` creates only what it is told.
        let Some(release) = (p.kind == ProviderKind::HelmRelease)
            .then(|| {
                seen.releases
                    .iter()
                    .find(|r| std::ptr::eq(r.object, p.object))
            })
            .flatten()
        else {
            return false;
        };
        (0..n).any(|d| {
            d != i
                && order.ready_before(i, d)
                && seen.ks_kinds[d]
                    .iter()
                    .any(|(g, k)| !is_builtin(g, k) && release.provides(g, k))
        })
    })
}

/// What the ordering rules could not check: the kinds (`group/Kind`) whose provider may be
/// in a part of the cluster that was not seen (not reported), and why.
pub(crate) fn unchecked(cx: &CheckContext<'_>) -> (Vec<String>, Vec<String>) {
    let mut kinds: Vec<String> = Vec::new();
    let mut served: Vec<String> = Vec::new();
    for p in problems(cx) {
        if let Verdict::Unseen(d) = p.verdict {
            let kind = format!("{}/{}", p.object.group(), p.object.kind());
            if let Some(d) = d {
                served.push(format!(
                    "`{kind}` is served by {} itself: set `distribution: {}` in .plumb.yaml if the clusters run it",
                    d.name(),
                    d.name()
                ));
            }
            kinds.push(kind);
        }
    }
    kinds.sort();
    kinds.dedup();
    served.sort();
    served.dedup();
    let mut because = Vec::new();
    if kinds.len() > served.len() {
        let p = placement(cx);
        let (releases, helmfile, unbuilt) = (p.unseen_releases, p.unseen_helmfile, p.unbuilt);
        let mut parts = Vec::new();
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        if releases > 0 {
            parts.push(plural(
                releases,
                "HelmRelease not rendered",
                "HelmReleases not rendered",
            ));
        }
        if helmfile > 0 {
            parts.push(plural(
                helmfile,
                "bootstrap helmfile release not rendered",
                "bootstrap helmfile releases not rendered",
            ));
        }
        if unbuilt > 0 {
            parts.push(plural(
                unbuilt,
                "Kustomization not built",
                "Kustomizations not built",
            ));
        }
        because.push(format!(
            "their CRDs may come from what was not seen: {}",
            parts.join(", ")
        ));
    }
    because.extend(served);
    (kinds, because)
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
