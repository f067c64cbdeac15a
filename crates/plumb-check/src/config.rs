//! The check-related parts of `.plumb.yaml` (the file's schema is documented in
//! `docs/config.md`). The build's parts (`clusters`, `sources`) are read by plumb-flux.
//!
//! Both readers accept the whole file: this one skips `clusters` and `sources`, plumb-flux skips
//! the keys read here. A key that is not in the schema, or a value of the wrong type, is an
//! error naming the file, the line and, for a misspelt key, the closest valid one.

use crate::finding::Severity;
use plumb_flux::config::{ConfigError, FILE_NAME, KNOWN_KEYS};
use plumb_yaml::{Node, NodeKind};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;

/// What the rules are told about the platform.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckConfig {
    /// Kubernetes version the cluster runs (`1.30`), for API001.
    pub kubernetes_version: Option<String>,
    /// The Kubernetes distribution the clusters run (`talos`, `k3s`): the kinds it serves
    /// itself need no CRD in the repository (ORD001).
    pub distribution: Option<Distribution>,
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
            distribution: None,
            runtime_crds: Vec::new(),
            placeholders: vec!["TBD-*".into(), "CHANGEME".into(), "REPLACE_ME".into()],
            invariants: Vec::new(),
            overlays: OverlayPolicy::default(),
            rules: RuleSelection::default(),
        }
    }
}

/// A Kubernetes distribution that serves kinds of its own (the table is in
/// `rules/ord/distributions.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    K3s,
    Rke2,
    Talos,
    K0s,
}

/// A controller that creates CRDs when it reconciles one of its own objects: reconciling a
/// `CDI` object creates the `DataVolume` CRD, so a DataVolume applied in the same
/// Kustomization as the CDI waits forever (ORD004).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RuntimeCrd {
    /// The controller object's kind (`CDI`) and, optionally, API group. Empty when only the
    /// kinds are known to appear at runtime (ORD001 still accepts them).
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

/// The keys of each mapping in the schema.
const RUNTIME_CRD_KEYS: &[&str] = &["createdBy", "kinds", "group"];
const CREATED_BY_KEYS: &[&str] = &["kind", "group"];
const INVARIANT_KEYS: &[&str] = &["name", "expr", "clusters"];
const OVERLAY_KEYS: &[&str] = &["paths", "mayPatch", "mustSet"];
const RULES_KEYS: &[&str] = &["select", "ignore", "severity", "perPathIgnores"];

impl CheckConfig {
    /// Reads `<repo>/.plumb.yaml`; no file is the default configuration.
    /// Errors name the file as `.plumb.yaml`, relative to the repository.
    pub fn load(repo: &Path) -> Result<CheckConfig, ConfigError> {
        match plumb_flux::config::read(repo)? {
            Some(text) => CheckConfig::parse(Path::new(FILE_NAME), &text),
            None => Ok(CheckConfig::default()),
        }
    }

    /// Reads the text of a `.plumb.yaml`; `path` is only used in errors. The first error.
    pub fn parse(path: &Path, text: &str) -> Result<CheckConfig, ConfigError> {
        CheckConfig::parse_all(path, text).map_err(|mut errors| errors.remove(0))
    }

    /// Reads the text of a `.plumb.yaml`: every error (each wrong key, item and value), in the
    /// order of the file, or none.
    pub fn parse_all(path: &Path, text: &str) -> Result<CheckConfig, Vec<ConfigError>> {
        let docs = plumb_yaml::parse_documents(path, text).map_err(|e| {
            vec![ConfigError {
                path: path.to_path_buf(),
                line: e.location.line,
                message: e.message.clone(),
            }]
        })?;
        let mut config = CheckConfig::default();
        let Some(root) = docs.into_iter().find(|d| !d.is_null()) else {
            return Ok(config);
        };
        let r = Reader {
            path,
            more: RefCell::default(),
        };
        let mut errors = Vec::new();
        for (key, value) in r.entries(&root, "the file", KNOWN_KEYS, &mut errors) {
            if let Err(e) = config.read_setting(&r, key, value) {
                errors.push(e);
            }
        }
        errors.extend(r.more.take());
        errors.sort_by_key(|e| e.line);
        if errors.is_empty() {
            Ok(config)
        } else {
            Err(errors)
        }
    }

    /// Reads one top-level setting into `self`.
    fn read_setting(&mut self, r: &Reader<'_>, key: &str, value: &Node) -> Result<(), ConfigError> {
        let config = self;
        match key {
            "kubernetesVersion" => {
                let v = r.string(value, key)?;
                let digits = v.strip_prefix('v').unwrap_or(&v);
                let parts: Vec<&str> = digits.split('.').collect();
                let numeric = parts
                    .iter()
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
                if !(numeric && (2..=3).contains(&parts.len())) {
                    return Err(r.error(
                        value,
                        format!(
                            "`kubernetesVersion` must be a version such as \"1.30\", not `{v}`"
                        ),
                    ));
                }
                config.kubernetes_version = Some(digits.to_string());
            }
            "distribution" => {
                let v = r.string(value, key)?;
                config.distribution = match Distribution::parse(&v) {
                    Some(d) => Some(d),
                    None => {
                        let names: Vec<&str> = Distribution::ALL.iter().map(|d| d.name()).collect();
                        return Err(r.error(
                            value,
                            format!(
                                "unknown distribution `{v}`: plumb knows {}",
                                names.join(", ")
                            ),
                        ));
                    }
                };
            }
            "runtimeCRDs" => {
                for item in r.sequence(value, key)? {
                    if let Some(crd) = r.or_more(r.runtime_crd(item)) {
                        config.runtime_crds.push(crd);
                    }
                }
            }
            "placeholders" => {
                config.placeholders = r.strings(value, key)?;
                if let Some((i, _)) = config
                    .placeholders
                    .iter()
                    .enumerate()
                    .find(|(_, p)| p.is_empty())
                {
                    let node = value.as_sequence().and_then(|s| s.get(i)).unwrap_or(value);
                    return Err(r.error(
                        node,
                        "an empty placeholder pattern matches nothing useful".into(),
                    ));
                }
            }
            "invariants" => {
                let mut nodes = Vec::new();
                for item in r.sequence(value, key)? {
                    if let Some(invariant) = r.or_more(r.invariant(item)) {
                        config.invariants.push(invariant);
                        nodes.push(item);
                    }
                }
                let mut seen = Vec::new();
                for (inv, node) in config.invariants.iter().zip(nodes) {
                    if seen.contains(&&inv.name) {
                        return Err(
                            r.error(node, format!("invariant `{}` is defined twice", inv.name))
                        );
                    }
                    seen.push(&inv.name);
                }
            }
            "overlays" => config.overlays = r.overlays(value)?,
            "rules" => config.rules = r.rules(value)?,
            // `clusters` and `sources` are plumb-flux's, validated there.
            _ => {}
        }
        Ok(())
    }
}

/// Every error of the text of a `.plumb.yaml` (the caller reads it once, as
/// [`plumb_flux::config::read`] does), by what `plumb build` reads and by what `plumb check`
/// reads, in the order of the file: what every command validates before it starts. Both
/// readers check some keys (unknown keys, `kubernetesVersion`): a line the build's reader finds
/// wrong is not reported again by check's.
pub fn validate(text: &str) -> Vec<ConfigError> {
    let path = Path::new(FILE_NAME);
    let mut errors = plumb_flux::config::Config::parse_all(path, text)
        .err()
        .unwrap_or_default();
    let build_lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
    for e in CheckConfig::parse_all(path, text).err().unwrap_or_default() {
        if !build_lines.contains(&e.line) {
            errors.push(e);
        }
    }
    errors.sort_by_key(|e| e.line);
    errors
}

/// Walks the node tree, turning every mistake into an error at its line.
struct Reader<'a> {
    path: &'a Path,
    /// Errors found beside the one a reading function returns (the second wrong key of a
    /// mapping, a later wrong item of a list), so that the file's every mistake is reported.
    more: RefCell<Vec<ConfigError>>,
}

impl Reader<'_> {
    /// The value of `result`, or `None` with its error kept among the file's errors.
    fn or_more<T>(&self, result: Result<T, ConfigError>) -> Option<T> {
        result.map_err(|e| self.more.borrow_mut().push(e)).ok()
    }

    fn error(&self, node: &Node, message: String) -> ConfigError {
        ConfigError {
            path: self.path.to_path_buf(),
            line: node.span.as_ref().map_or(0, |s| s.location().line),
            message,
        }
    }

    fn wrong_type(&self, node: &Node, what: &str, expected: &str) -> ConfigError {
        self.error(
            node,
            format!("`{what}` must be {expected}, not {}", describe(node)),
        )
    }

    /// A mapping's entries whose keys are among `keys` (`null` is empty). Each wrong key is
    /// kept among the file's errors and the valid ones are still read; `Err` when `node` is not
    /// a mapping at all.
    fn mapping<'n>(
        &self,
        node: &'n Node,
        what: &str,
        keys: &[&str],
    ) -> Result<Vec<(&'n str, &'n Node)>, ConfigError> {
        let mut errors = Vec::new();
        let entries = self.entries(node, what, keys, &mut errors);
        if !node.is_null() && node.as_mapping().is_none() {
            if let Some(e) = errors.pop() {
                return Err(e);
            }
        }
        self.more.borrow_mut().extend(errors);
        Ok(entries)
    }

    /// [`Reader::mapping`] that goes on past a wrong key: each one is an error in `errors`,
    /// the valid keys are returned.
    fn entries<'n>(
        &self,
        node: &'n Node,
        what: &str,
        keys: &[&str],
        errors: &mut Vec<ConfigError>,
    ) -> Vec<(&'n str, &'n Node)> {
        if node.is_null() {
            return Vec::new();
        }
        let Some(entries) = node.as_mapping() else {
            let expected = format!("a mapping with the keys {}", keys.join(", "));
            errors.push(self.wrong_type(node, what, &expected));
            return Vec::new();
        };
        let mut out: Vec<(&str, &Node)> = Vec::new();
        for (key, value) in entries {
            let name = key.scalar_value().unwrap_or("");
            if !keys.contains(&name) {
                let hint = plumb_kustomize::kustomization::closest(name, keys)
                    .map(|c| format!("; did you mean `{c}`?"))
                    .unwrap_or_else(|| format!("; valid keys: {}", keys.join(", ")));
                let place = if what == "the file" {
                    String::new()
                } else {
                    format!(" in `{what}`")
                };
                errors.push(self.error(key, format!("unknown key `{name}`{place}{hint}")));
                continue;
            }
            if out.iter().any(|(k, _)| *k == name) {
                errors.push(self.error(key, format!("key `{name}` appears twice")));
                continue;
            }
            out.push((name, value));
        }
        out
    }

    fn sequence<'n>(&self, node: &'n Node, what: &str) -> Result<&'n [Node], ConfigError> {
        if node.is_null() {
            return Ok(&[]);
        }
        node.as_sequence()
            .map(Vec::as_slice)
            .ok_or_else(|| self.wrong_type(node, what, "a list"))
    }

    fn string(&self, node: &Node, what: &str) -> Result<String, ConfigError> {
        match &node.kind {
            NodeKind::Scalar(s) if !node.is_null() => Ok(s.value.to_string()),
            _ => Err(self.wrong_type(node, what, "a string")),
        }
    }

    fn strings(&self, node: &Node, what: &str) -> Result<Vec<String>, ConfigError> {
        self.sequence(node, what)?
            .iter()
            .map(|item| match &item.kind {
                NodeKind::Scalar(s) if !item.is_null() => Ok(s.value.to_string()),
                _ => Err(self.error(
                    item,
                    format!(
                        "`{what}` must be a list of strings; this item is {}",
                        describe(item)
                    ),
                )),
            })
            .collect()
    }

    fn runtime_crd(&self, item: &Node) -> Result<RuntimeCrd, ConfigError> {
        let mut crd = RuntimeCrd::default();
        for (key, value) in self.mapping(item, "runtimeCRDs[]", RUNTIME_CRD_KEYS)? {
            match key {
                "createdBy" => {
                    if let NodeKind::Scalar(_) = value.kind {
                        crd.created_by_kind = self.string(value, "runtimeCRDs[].createdBy")?;
                    } else {
                        for (k, v) in
                            self.mapping(value, "runtimeCRDs[].createdBy", CREATED_BY_KEYS)?
                        {
                            let s = self.string(v, &format!("runtimeCRDs[].createdBy.{k}"))?;
                            match k {
                                "kind" => crd.created_by_kind = s,
                                _ => crd.created_by_group = Some(s),
                            }
                        }
                        if crd.created_by_kind.is_empty() {
                            return Err(self.error(value, "`createdBy` needs a `kind`".into()));
                        }
                    }
                }
                "kinds" => crd.kinds = self.strings(value, "runtimeCRDs[].kinds")?,
                _ => crd.group = Some(self.string(value, "runtimeCRDs[].group")?),
            }
        }
        if crd.kinds.is_empty() {
            return Err(self.error(
                item,
                "a runtimeCRDs entry needs `kinds`: the kinds whose CRDs appear at runtime".into(),
            ));
        }
        Ok(crd)
    }

    fn invariant(&self, item: &Node) -> Result<Invariant, ConfigError> {
        let (mut name, mut expr, mut clusters) = (None, None, Vec::new());
        for (key, value) in self.mapping(item, "invariants[]", INVARIANT_KEYS)? {
            match key {
                "name" => name = Some(self.string(value, "invariants[].name")?),
                "expr" => expr = Some(self.string(value, "invariants[].expr")?),
                _ => clusters = self.strings(value, "invariants[].clusters")?,
            }
        }
        let name = name.ok_or_else(|| self.error(item, "an invariant needs a `name`".into()))?;
        let expr = expr.ok_or_else(|| {
            self.error(
                item,
                format!("invariant `{name}` needs an `expr` (a CEL expression over `vars`)"),
            )
        })?;
        Ok(Invariant {
            name,
            expr,
            clusters,
        })
    }

    fn overlays(&self, node: &Node) -> Result<OverlayPolicy, ConfigError> {
        let mut policy = OverlayPolicy::default();
        for (key, value) in self.mapping(node, "overlays", OVERLAY_KEYS)? {
            let Some(list) = self.or_more(self.strings(value, &format!("overlays.{key}"))) else {
                continue;
            };
            match key {
                "paths" => policy.paths = list,
                "mayPatch" => policy.may_patch = list,
                _ => policy.must_set = list,
            }
        }
        Ok(policy)
    }

    fn rules(&self, node: &Node) -> Result<RuleSelection, ConfigError> {
        let mut rules = RuleSelection::default();
        for (key, value) in self.mapping(node, "rules", RULES_KEYS)? {
            match key {
                "select" | "ignore" => {
                    let what = format!("rules.{key}");
                    let codes = self.strings(value, &what)?;
                    for (code, item) in codes.iter().zip(self.sequence(value, &what)?) {
                        self.or_more(self.code(item, code));
                    }
                    if key == "select" {
                        rules.select = codes;
                    } else {
                        rules.ignore = codes;
                    }
                }
                "severity" => {
                    let Some(entries) = value.as_mapping() else {
                        if value.is_null() {
                            continue;
                        }
                        return Err(self.wrong_type(
                            value,
                            "rules.severity",
                            "a mapping of codes to `error` or `warning`",
                        ));
                    };
                    for (k, v) in entries {
                        let code = self.string(k, "rules.severity")?;
                        self.code(k, &code)?;
                        let level = self.string(v, &format!("rules.severity.{code}"))?;
                        let severity = match level.as_str() {
                            "error" => Severity::Error,
                            "warning" => Severity::Warning,
                            other => {
                                let hint = plumb_kustomize::kustomization::closest(
                                    other,
                                    &["error", "warning"],
                                )
                                .map(|c| format!("; did you mean `{c}`?"))
                                .unwrap_or_default();
                                return Err(self.error(
                                    v,
                                    format!(
                                        "severity `{other}` is neither `error` nor `warning`{hint}"
                                    ),
                                ));
                            }
                        };
                        rules.severity.insert(code, severity);
                    }
                }
                _ => {
                    let Some(entries) = value.as_mapping() else {
                        if value.is_null() {
                            continue;
                        }
                        return Err(self.wrong_type(
                            value,
                            "rules.perPathIgnores",
                            "a mapping of codes to lists of path globs",
                        ));
                    };
                    for (k, v) in entries {
                        let code = self.string(k, "rules.perPathIgnores")?;
                        self.code(k, &code)?;
                        let globs = self.strings(v, &format!("rules.perPathIgnores.{code}"))?;
                        rules
                            .per_path_ignores
                            .entry(code)
                            .or_default()
                            .extend(globs);
                    }
                }
            }
        }
        Ok(rules)
    }

    /// A code or prefix must name at least one rule.
    fn code(&self, node: &Node, code: &str) -> Result<(), ConfigError> {
        crate::selection::check_code(code).map_err(|m| self.error(node, m))
    }
}

/// A node's type, as an error message says it.
fn describe(node: &Node) -> String {
    match &node.kind {
        _ if node.is_null() => "null".into(),
        NodeKind::Mapping(_) => "a mapping".into(),
        NodeKind::Sequence(_) => "a list".into(),
        NodeKind::Scalar(s) => format!("`{}`", s.value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<CheckConfig, String> {
        CheckConfig::parse(Path::new(".plumb.yaml"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn reads_the_distribution() {
        assert_eq!(
            parse("distribution: talos\n").unwrap().distribution,
            Some(Distribution::Talos)
        );
        let e = parse("distribution: openshift\n").unwrap_err();
        assert!(
            e.contains(":1:")
                && e.contains(
                    "unknown distribution `openshift`: plumb knows k3s, rke2, talos, k0s"
                ),
            "{e}"
        );
    }

    #[test]
    fn reads_every_key() {
        let c = parse(
            r#"
clusters: [clusters/dev]
sources:
  - name: platform
    path: ./deploy
kubernetesVersion: "1.30"
runtimeCRDs:
  - createdBy: {kind: CDI, group: cdi.kubevirt.io}
    kinds: [DataVolume]
    group: cdi.kubevirt.io
  - kinds: [VirtualMachine]
placeholders: ["TBD-*", CHANGEME]
invariants:
  - name: gateway-in-pool
    expr: ip(vars.GATEWAY_VIP) >= ip(vars.CILIUM_LB_POOL_START)
    clusters: [clusters/prod]
overlays:
  paths: ["clusters/*"]
  mayPatch: [ConfigMap/cluster-vars]
  mustSet: [GATEWAY_VIP]
rules:
  select: [SUB, ORD001]
  ignore: [PIN003]
  severity: {PIN001: warning}
  perPathIgnores:
    PIN001: ["apps/legacy/**"]
"#,
        )
        .unwrap();
        assert_eq!(c.kubernetes_version.as_deref(), Some("1.30"));
        assert_eq!(c.runtime_crds[0].created_by_kind, "CDI");
        assert_eq!(
            c.runtime_crds[0].created_by_group.as_deref(),
            Some("cdi.kubevirt.io")
        );
        assert_eq!(c.runtime_crds[1].created_by_kind, "");
        assert_eq!(c.placeholders, vec!["TBD-*", "CHANGEME"]);
        assert_eq!(c.invariants[0].clusters, vec!["clusters/prod"]);
        assert_eq!(c.overlays.must_set, vec!["GATEWAY_VIP"]);
        assert_eq!(c.rules.select, vec!["SUB", "ORD001"]);
        assert_eq!(c.rules.severity.get("PIN001"), Some(&Severity::Warning));
        assert_eq!(c.rules.per_path_ignores["PIN001"], vec!["apps/legacy/**"]);
    }

    #[test]
    fn flux_reads_the_same_file() {
        let text = "kubernetesVersion: \"1.31\"\nrules: {ignore: [PIN]}\nclusters: [a]\n";
        assert!(parse(text).is_ok());
        assert!(plumb_flux::config::Config::parse(Path::new(".plumb.yaml"), text).is_ok());
    }

    #[test]
    fn unknown_keys_name_the_closest() {
        assert_eq!(
            parse("placeholder: [X]\n").unwrap_err(),
            ".plumb.yaml:1: unknown key `placeholder`; did you mean `placeholders`?"
        );
        assert_eq!(
            parse("overlays:\n  paths: []\n  mustset: [A]\n").unwrap_err(),
            ".plumb.yaml:3: unknown key `mustset` in `overlays`; did you mean `mustSet`?"
        );
        assert_eq!(
            parse("rules:\n  perPathIgnore: {}\n").unwrap_err(),
            ".plumb.yaml:2: unknown key `perPathIgnore` in `rules`; did you mean `perPathIgnores`?"
        );
    }

    #[test]
    fn wrong_types_say_what_was_expected() {
        assert_eq!(
            parse("placeholders: TBD\n").unwrap_err(),
            ".plumb.yaml:1: `placeholders` must be a list, not `TBD`"
        );
        assert_eq!(
            parse("overlays:\n  mustSet:\n    - {a: b}\n").unwrap_err(),
            ".plumb.yaml:3: `overlays.mustSet` must be a list of strings; this item is a mapping"
        );
        assert_eq!(
            parse("kubernetesVersion: [1]\n").unwrap_err(),
            ".plumb.yaml:1: `kubernetesVersion` must be a string, not a list"
        );
        assert_eq!(
            parse("kubernetesVersion: 1.30\n")
                .unwrap()
                .kubernetes_version
                .as_deref(),
            Some("1.30")
        );
    }

    #[test]
    fn severities_and_codes_are_checked() {
        assert_eq!(
            parse("rules:\n  severity:\n    BLD001: warnig\n").unwrap_err(),
            ".plumb.yaml:3: severity `warnig` is neither `error` nor `warning`; did you mean `warning`?"
        );
        let err = parse("rules:\n  ignore: [XYZ123]\n").unwrap_err();
        assert!(
            err.starts_with(".plumb.yaml:2: no rule has the code `XYZ123`"),
            "{err}"
        );
    }

    #[test]
    fn empty_file_is_the_default() {
        assert_eq!(parse("").unwrap(), CheckConfig::default());
        assert_eq!(parse("# nothing\n").unwrap(), CheckConfig::default());
    }
}
