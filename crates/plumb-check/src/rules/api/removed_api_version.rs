//! API001: apiVersions the target Kubernetes (or Flux) no longer serves, or deprecates.

use crate::finding::{Finding, Location, Severity};
use crate::rule::{CheckContext, Rule};
use serde::Deserialize;
use std::collections::HashSet;
use std::sync::OnceLock;

/// The Kubernetes version checked against when `.plumb.yaml` sets no `kubernetesVersion`: the
/// newest release the table in `removed_apis.yaml` is complete for.
pub const DEFAULT_KUBERNETES_VERSION: &str = "1.34";

/// ## What it does
/// Finds objects whose `apiVersion` the target Kubernetes version has removed (an error: the
/// API server refuses the object, and the whole Kustomization with it) or deprecated (a
/// warning), and objects that use a deprecated version of Flux's own APIs. The target is
/// `kubernetesVersion` in `.plumb.yaml` (default: 1.34). The table of removals and
/// deprecations, with the release notes that announced each, is `removed_apis.yaml` next to
/// this rule.
///
/// ## Why is this bad?
/// Kubernetes stops serving a beta API version a few releases after its replacement ships. A
/// manifest still written against it applies fine until the cluster is upgraded, and then
/// every Kustomization holding one fails its dry-run: the upgrade breaks reconciliation of
/// things nobody touched. Flux likewise removes its deprecated beta versions in later minor
/// releases.
///
/// ## Example
/// ```yaml
/// apiVersion: policy/v1beta1
/// kind: PodDisruptionBudget
/// ```
///
/// Use instead:
/// ```yaml
/// apiVersion: policy/v1
/// kind: PodDisruptionBudget
/// ```
///
/// For Flux objects, `flux migrate` rewrites manifests to the current versions.
pub struct RemovedApiVersion;

impl Rule for RemovedApiVersion {
    fn code(&self) -> &'static str {
        "API001"
    }

    fn summary(&self) -> &'static str {
        "an apiVersion removed or deprecated in the target Kubernetes version"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        let target = cx
            .config
            .kubernetes_version
            .as_deref()
            .and_then(minor_version)
            .or_else(|| minor_version(DEFAULT_KUBERNETES_VERSION))
            .unwrap_or((1, 34));
        let shown = format!("{}.{}", target.0, target.1);
        let table = table();
        let mut seen = HashSet::new();
        for entry in &cx.build.entries {
            for k in &entry.kustomizations {
                for object in &k.objects {
                    let (api_version, kind) = (object.api_version(), object.kind());
                    let Some((severity, message, help)) =
                        judge(table, api_version, kind, target, &shown, entry.flux_version)
                    else {
                        continue;
                    };
                    // A patch may have replaced the apiVersion's text (a strategic merge
                    // patch names its target): the object's own text starts at that line.
                    let location = object
                        .node_at(&["apiVersion"])
                        .and_then(|n| Location::of(n, cx.root))
                        .or_else(|| {
                            object
                                .origin
                                .as_ref()
                                .and_then(|n| Location::of(n, cx.root))
                        });
                    // The same text built by several Kustomizations is merged with their
                    // chains (`finding::merge`); without a place, one is enough.
                    if location.is_none() && !seen.insert(message.clone()) {
                        continue;
                    }
                    out.push(
                        Finding::new("API001", message, help)
                            .severity(severity)
                            .at(location)
                            .with_chain(&k.chain),
                    );
                }
            }
        }
    }
}

/// One row of `removed_apis.yaml`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiChange {
    pub api_version: String,
    /// Empty: every kind.
    #[serde(default)]
    pub kinds: Vec<String>,
    pub deprecated: Option<String>,
    pub removed: Option<String>,
    pub flux_deprecated: Option<String>,
    pub replacement: String,
    pub source: String,
}

impl ApiChange {
    fn applies(&self, api_version: &str, kind: &str) -> bool {
        self.api_version == api_version
            && (self.kinds.is_empty() || self.kinds.iter().any(|k| k == kind))
    }
}

/// The table, both parts.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiChanges {
    pub kubernetes: Vec<ApiChange>,
    pub flux: Vec<ApiChange>,
}

/// `removed_apis.yaml`, read once. The file is part of the source, so a mistake in it is a bug
/// the tests catch, not a user's error: an unreadable table is an empty one.
pub fn table() -> &'static ApiChanges {
    static TABLE: OnceLock<ApiChanges> = OnceLock::new();
    TABLE.get_or_init(|| {
        parse_table(include_str!("removed_apis.yaml")).unwrap_or(ApiChanges {
            kubernetes: Vec::new(),
            flux: Vec::new(),
        })
    })
}

/// Reads the table's text.
pub fn parse_table(text: &str) -> Result<ApiChanges, String> {
    let docs = plumb_yaml::parse_documents("removed_apis.yaml", text).map_err(|e| e.to_string())?;
    let doc = docs.first().ok_or("empty table")?;
    let value = plumb_yaml::to_json(doc).map_err(|e| e.message.clone())?;
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// `1.30`, `v1.30.2` → `(1, 30)`.
pub fn minor_version(text: &str) -> Option<(u32, u32)> {
    let text = text.trim().trim_start_matches('v');
    let mut parts = text.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// What API001 says of `kind` at `api_version` on a Kubernetes `target` (`shown` as written)
/// run by Flux `flux` (the minor version its FluxInstance pins, if it pins one).
fn judge(
    table: &ApiChanges,
    api_version: &str,
    kind: &str,
    target: (u32, u32),
    shown: &str,
    flux: Option<(u32, u32)>,
) -> Option<(Severity, String, String)> {
    let help = |c: &ApiChange| format!("use `{}` instead", c.replacement);
    for change in table
        .kubernetes
        .iter()
        .filter(|c| c.applies(api_version, kind))
    {
        let removed = change.removed.as_deref();
        if let Some(removed) = removed.filter(|r| minor_version(r).is_some_and(|r| r <= target)) {
            return Some((
                Severity::Error,
                format!("`{api_version}` {kind} was removed in Kubernetes {removed}: a {shown} cluster refuses it"),
                help(change),
            ));
        }
        if let Some(deprecated) = change
            .deprecated
            .as_deref()
            .filter(|d| minor_version(d).is_some_and(|d| d <= target))
        {
            let until = removed.map_or(String::new(), |r| format!(", and removed in {r}"));
            return Some((
                Severity::Warning,
                format!(
                    "`{api_version}` {kind} is deprecated since Kubernetes {deprecated}{until}"
                ),
                help(change),
            ));
        }
    }
    let change = table.flux.iter().find(|c| c.applies(api_version, kind))?;
    let since = change.flux_deprecated.as_deref().unwrap_or("?");
    // The replacement came with the release that deprecated this version (OCIRepository v1
    // with Flux 2.6): a cluster pinned before it serves no replacement to move to.
    if flux.is_some_and(|running| minor_version(since).is_some_and(|since| running < since)) {
        return None;
    }
    Some((
        Severity::Warning,
        format!("`{api_version}` {kind} is deprecated since Flux {since}: a later Flux release stops serving it"),
        format!("use `{}` instead (`flux migrate` rewrites the manifests)", change.replacement),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_parses_and_every_row_is_dated() {
        let table =
            parse_table(include_str!("removed_apis.yaml")).expect("removed_apis.yaml parses");
        assert!(table.kubernetes.len() > 20);
        for row in &table.kubernetes {
            assert!(row.removed.is_some() || row.deprecated.is_some(), "{row:?}");
            for v in row.removed.iter().chain(&row.deprecated) {
                assert!(minor_version(v).is_some(), "{row:?}");
            }
        }
        for row in &table.flux {
            assert!(
                row.flux_deprecated
                    .as_deref()
                    .and_then(minor_version)
                    .is_some(),
                "{row:?}"
            );
        }
    }

    #[test]
    fn removed_deprecated_and_fine() {
        let t = table();
        let at = |v, k, target| judge(t, v, k, target, "x", None).map(|j| j.0);
        assert_eq!(
            at("policy/v1beta1", "PodDisruptionBudget", (1, 25)),
            Some(Severity::Error)
        );
        assert_eq!(
            at("policy/v1beta1", "PodDisruptionBudget", (1, 22)),
            Some(Severity::Warning)
        );
        assert_eq!(at("policy/v1beta1", "PodDisruptionBudget", (1, 20)), None);
        assert_eq!(at("policy/v1", "PodDisruptionBudget", (1, 34)), None);
        assert_eq!(
            at("apps/v1beta2", "Deployment", (1, 34)),
            Some(Severity::Error)
        );
        assert_eq!(
            at("helm.toolkit.fluxcd.io/v2beta1", "HelmRelease", (1, 34)),
            Some(Severity::Warning)
        );
        assert_eq!(
            at("source.toolkit.fluxcd.io/v1", "OCIRepository", (1, 34)),
            None
        );
        assert_eq!(minor_version("v1.30.2"), Some((1, 30)));
    }

    #[test]
    fn a_flux_version_is_deprecated_only_where_its_replacement_is_served() {
        let t = table();
        let on = |flux| {
            judge(
                t,
                "source.toolkit.fluxcd.io/v1beta2",
                "OCIRepository",
                (1, 34),
                "x",
                flux,
            )
        };
        // Heavybullets8/heavy-ops pins Flux 2.5.1: OCIRepository v1 came with 2.6.
        assert_eq!(on(Some((2, 5))), None);
        assert!(on(Some((2, 6))).is_some());
        assert!(on(None).is_some());
        // HelmRelease v2beta1 was deprecated by 2.2, long before 2.5.
        let hr = judge(
            t,
            "helm.toolkit.fluxcd.io/v2beta1",
            "HelmRelease",
            (1, 34),
            "x",
            Some((2, 5)),
        );
        assert!(hr.is_some());
    }
}
