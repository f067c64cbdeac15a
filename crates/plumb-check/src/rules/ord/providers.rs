//! What the cluster will have, per entry: the kinds each part of it provides, measured from
//! the build (CRD objects, rendered HelmReleases, the bootstrap stage) and the distribution,
//! and what was not seen (a release not rendered, a Kustomization not built) and so may
//! provide any kind.

use super::distributions::{self, Distribution};
use plumb_flux::build::{EntryBuild, Status};
use plumb_flux::helm_release::ReleaseBuild;
use plumb_flux::model::{Object, HELM_GROUP};
use std::collections::{HashMap, HashSet};

/// A `(group, kind)`.
pub(crate) type Kind<'a> = (&'a str, &'a str);

/// A HelmRelease of the Kustomizations, with the kinds its rendered chart installs.
pub(crate) struct Release<'a> {
    /// Index of its Kustomization in the entry.
    pub ks: usize,
    pub object: &'a Object,
    /// `None` when it was not rendered: it may install any kind.
    pub kinds: Option<HashSet<Kind<'a>>>,
    /// The CRDs (`plural.group`) its controller creates once it runs, as its RBAC says (a
    /// ClusterRole that may create CRDs and update these by name: cilium's operator).
    pub runtime_crds: HashSet<String>,
    /// Its RBAC lets it create CRDs without naming them: it may create any.
    pub creates_any_crd: bool,
}

impl Release<'_> {
    /// Whether it provides the kind: its chart installs the CRD, or its controller creates it.
    pub(crate) fn provides(&self, group: &str, kind: &str) -> bool {
        self.kinds
            .as_ref()
            .is_some_and(|k| k.contains(&(group, kind)))
            || self
                .runtime_crds
                .contains(&format!("{}.{group}", plural(kind)))
    }
}

/// The resource name Kubernetes gives a kind by default (`CiliumNetworkPolicy` →
/// `ciliumnetworkpolicies`).
fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if let Some(stem) = lower.strip_suffix('y') {
        if !stem.ends_with(['a', 'e', 'i', 'o', 'u']) {
            return format!("{stem}ies");
        }
    }
    if lower.ends_with('s')
        || lower.ends_with('x')
        || lower.ends_with("ch")
        || lower.ends_with("sh")
    {
        return format!("{lower}es");
    }
    format!("{lower}s")
}

/// What the ClusterRoles among `objects` let their controller do to CRDs: the names it may
/// update, and whether it may create CRDs it does not name.
fn crd_rbac(objects: &[Object]) -> (HashSet<String>, bool) {
    let mut names = HashSet::new();
    let mut creates = false;
    for o in objects
        .iter()
        .filter(|o| o.is("rbac.authorization.k8s.io", "ClusterRole"))
    {
        let rules = o.value.get("rules").and_then(|r| r.as_array());
        for rule in rules.into_iter().flatten() {
            let list = |key: &str| -> Vec<&str> {
                rule.get(key)
                    .and_then(|v| v.as_array())
                    .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
                    .unwrap_or_default()
            };
            let groups = list("apiGroups");
            let resources = list("resources");
            let verbs = list("verbs");
            let on_crds = groups
                .iter()
                .any(|g| *g == "apiextensions.k8s.io" || *g == "*")
                && resources
                    .iter()
                    .any(|r| *r == "customresourcedefinitions" || *r == "*");
            if !on_crds {
                continue;
            }
            let named = list("resourceNames");
            let writes = verbs
                .iter()
                .any(|v| matches!(*v, "create" | "update" | "patch" | "*"));
            if !writes {
                continue;
            }
            if named.is_empty() {
                creates |= verbs.iter().any(|v| matches!(*v, "create" | "*"));
            } else {
                names.extend(named.iter().map(|n| n.to_string()));
            }
        }
    }
    // Names to update mean nothing without the right to create.
    if !creates {
        names.clear();
    }
    let any = creates && names.is_empty();
    (names, any)
}

/// What provides each kind in one entry.
pub(crate) struct EntryProviders<'a> {
    /// CRD objects of the Kustomizations.
    pub crds: HashMap<Kind<'a>, Vec<(usize, &'a Object)>>,
    pub releases: Vec<Release<'a>>,
    /// Kinds whose CRDs are in the cluster before Flux applies anything.
    pub before_flux: HashSet<Kind<'a>>,
    /// Helmfile releases of the bootstrap neither rendered nor known by the HelmRelease that
    /// adopts them: they may install any kind.
    pub bootstrap_unseen: Vec<&'a str>,
    /// The kinds each Kustomization applies.
    pub ks_kinds: Vec<HashSet<Kind<'a>>>,
    /// Kustomizations not built (suspended, failed, source unavailable).
    pub unbuilt: Vec<bool>,
    pub distribution: Option<Distribution>,
}

/// The kind a CRD object defines; `None` for any other object.
fn crd_kind(o: &Object) -> Option<Kind<'_>> {
    o.is("apiextensions.k8s.io", "CustomResourceDefinition")
        .then(|| {
            (
                o.str_at(&["spec", "group"]).unwrap_or(""),
                o.str_at(&["spec", "names", "kind"]).unwrap_or(""),
            )
        })
}

/// The kinds of the CRD objects among `objects`.
fn crd_kinds<'a>(objects: impl IntoIterator<Item = &'a Object>) -> HashSet<Kind<'a>> {
    objects.into_iter().filter_map(crd_kind).collect()
}

fn rendered(r: &ReleaseBuild) -> bool {
    r.status == Status::Built
}

impl<'a> EntryProviders<'a> {
    pub(crate) fn new(entry: &'a EntryBuild, distribution: Option<Distribution>) -> Self {
        let mut crds: HashMap<Kind<'a>, Vec<(usize, &'a Object)>> = HashMap::new();
        let mut releases = Vec::new();
        let mut ks_kinds = Vec::new();
        for (i, k) in entry.kustomizations.iter().enumerate() {
            let mut kinds = HashSet::new();
            for o in &k.objects {
                kinds.insert((o.group(), o.kind()));
                if let Some(kind) = crd_kind(o) {
                    crds.entry(kind).or_default().push((i, o));
                }
                if o.is(HELM_GROUP, "HelmRelease") {
                    let build = entry.releases.iter().find(|r| {
                        rendered(r) && r.name == o.name() && r.namespace == o.namespace_or_default()
                    });
                    let (runtime_crds, creates_any_crd) =
                        build.map(|r| crd_rbac(&r.objects)).unwrap_or_default();
                    releases.push(Release {
                        ks: i,
                        object: o,
                        kinds: build.map(|r| crd_kinds(&r.objects)),
                        runtime_crds,
                        creates_any_crd,
                    });
                }
            }
            ks_kinds.push(kinds);
        }
        let mut before_flux = crd_kinds(entry.bootstrap.objects.iter().chain(
            plumb_flux::helm_release::bootstrap::rendered_objects(&entry.bootstrap_releases),
        ));
        // A helmfile release that was not rendered (templating, its chart unavailable) is
        // the Helm release of the same name and namespace a Flux HelmRelease adopts (or, by
        // another name, of the same chart): its chart installs what that one's render does.
        let mut bootstrap_unseen = Vec::new();
        for b in entry.bootstrap_releases.iter().filter(|b| !rendered(b)) {
            match adopting_release(entry, b) {
                Some(r) => before_flux.extend(crd_kinds(&r.objects)),
                None => bootstrap_unseen.push(b.name.as_str()),
            }
        }
        let unbuilt = entry
            .kustomizations
            .iter()
            .map(|k| !k.synthetic && k.status != Status::Built)
            .collect();
        EntryProviders {
            crds,
            releases,
            before_flux,
            bootstrap_unseen,
            ks_kinds,
            unbuilt,
            distribution,
        }
    }

    /// Whether the distribution serves the kind, or, when no distribution is configured,
    /// whether some distribution would (so it may be served).
    pub(crate) fn served(&self, group: &str, kind: &str) -> Served {
        match self.distribution {
            Some(d) if d.serves(group, kind) => Served::Yes,
            Some(_) => Served::No,
            None => match distributions::serving(group, kind) {
                Some(d) => Served::Maybe(d),
                None => Served::No,
            },
        }
    }

    /// Whether anything in the entry was not seen (what it provides is unknown).
    pub(crate) fn anything_unseen(&self) -> bool {
        !self.bootstrap_unseen.is_empty()
            || self
                .releases
                .iter()
                .any(|r| r.kinds.is_none() || r.creates_any_crd)
            || self.unbuilt.iter().any(|&u| u)
    }
}

/// Whether a distribution serves a kind.
pub(crate) enum Served {
    Yes,
    No,
    /// No distribution is configured, and this one serves it.
    Maybe(Distribution),
}

/// The rendered Flux HelmRelease that adopts the bootstrap release `b`: the same release name
/// and namespace, else the only rendered one of the same chart.
fn adopting_release<'a>(entry: &'a EntryBuild, b: &ReleaseBuild) -> Option<&'a ReleaseBuild> {
    let flux = || entry.releases.iter().filter(|r| rendered(r));
    if let Some(r) = flux()
        .find(|r| r.release_name == b.release_name && r.release_namespace == b.release_namespace)
    {
        return Some(r);
    }
    let chart = helmfile_chart_name(entry, b)?;
    let mut same = flux().filter(|r| r.chart.as_ref().is_some_and(|c| c.name == chart));
    match (same.next(), same.next()) {
        (Some(r), None) => Some(r),
        _ => None,
    }
}

/// The chart name a helmfile release names (`oci://ghcr.io/org/charts/cilium` → `cilium`),
/// when written without templating.
fn helmfile_chart_name<'a>(entry: &'a EntryBuild, b: &ReleaseBuild) -> Option<&'a str> {
    let h = entry
        .bootstrap
        .releases
        .iter()
        .find(|h| h.name == b.name && std::path::Path::new(&b.kustomization) == h.file)?;
    let chart = h.chart.as_deref()?;
    if chart.contains("{{") {
        return None;
    }
    chart.trim_end_matches('/').rsplit('/').next()
}
