//! The check-related parts of `.plumb.yaml` (the file's schema is documented in
//! `docs/config.md`). The build's parts (`clusters`, `sources`) are read by plumb-flux.

use std::collections::BTreeMap;

/// What the rules are told about the platform.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckConfig {
    /// Kubernetes version the cluster runs (`1.30`), for API001.
    pub kubernetes_version: Option<String>,
    /// Kinds whose CRDs controllers create at runtime (ORD001 accepts them), and which
    /// controller object creates them (ORD004).
    pub runtime_crds: Vec<RuntimeCrd>,
    /// Placeholder patterns (`*` matches any run of characters), SUB002.
    pub placeholders: Vec<String>,
    /// Named CEL expressions over each cluster's vars (`vars.GATEWAY_VIP`), ENV002.
    pub invariants: Vec<Invariant>,
    /// What an environment overlay may change (ENV001) and which vars it must set (ENV003).
    pub overlays: OverlayPolicy,
    /// Rule selection and severity overrides.
    pub rules: RuleSelection,
}

impl Default for CheckConfig {
    fn default() -> Self {
        CheckConfig {
            kubernetes_version: None,
            runtime_crds: Vec::new(),
            placeholders: vec!["TBD-*".into(), "CHANGEME".into(), "REPLACE_ME".into()],
            invariants: Vec::new(),
            overlays: OverlayPolicy::default(),
            rules: RuleSelection::default(),
        }
    }
}

/// A controller that creates CRDs when it reconciles one of its own objects: reconciling a
/// `CDI` object creates the `DataVolume` CRD, so a DataVolume applied in the same
/// Kustomization as the CDI waits forever (ORD004).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RuntimeCrd {
    /// The controller object's kind (`CDI`) and, optionally, API group.
    pub created_by_kind: String,
    pub created_by_group: Option<String>,
    /// The kinds whose CRDs appear (`DataVolume`), with optional groups.
    pub kinds: Vec<String>,
    pub group: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invariant {
    pub name: String,
    /// A CEL expression over `vars` (a map of the cluster's substitution variables).
    pub expr: String,
    /// Which clusters (entry paths) it applies to; empty = all.
    pub clusters: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OverlayPolicy {
    /// Directories that are environment overlays (`clusters/*`); empty = the entries.
    pub paths: Vec<String>,
    /// Objects (`Kind/name`) an overlay may patch; default: the vars ConfigMap only.
    pub may_patch: Vec<String>,
    /// Vars every overlay must set rather than inherit from the base.
    pub must_set: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RuleSelection {
    /// Codes or prefixes (`SUB`, `PIN001`); empty = all.
    pub select: Vec<String>,
    pub ignore: Vec<String>,
    /// Per-code severity overrides (`PIN001: warning`).
    pub severity: BTreeMap<String, crate::finding::Severity>,
    /// Glob patterns of files whose findings are ignored, per code (`"PIN001": ["apps/legacy/*"]`).
    pub per_path_ignores: BTreeMap<String, Vec<String>>,
}
