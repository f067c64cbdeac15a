//! The kustomization file: a typed view over its node, with kustomize's validation of field
//! names and types.

use crate::error::KustomizeError;
use crate::transform::values;
use plumb_yaml::{Node, NodeKind};
use std::path::{Path, PathBuf};

/// Every top-level field kustomize's `Kustomization` type has.
pub const KNOWN_FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "openapi",
    "namePrefix",
    "nameSuffix",
    "namespace",
    "commonLabels",
    "labels",
    "commonAnnotations",
    "patchesStrategicMerge",
    "patchesJson6902",
    "patches",
    "images",
    "imageTags",
    "replacements",
    "replicas",
    "vars",
    "sortOptions",
    "resources",
    "components",
    "crds",
    "bases",
    "configMapGenerator",
    "secretGenerator",
    "helmGlobals",
    "helmCharts",
    "helmChartInflationGenerator",
    "generatorOptions",
    "configurations",
    "generators",
    "transformers",
    "validators",
    "buildMetadata",
];

/// The `apiVersion` of a `kind: Kustomization`.
pub const KUSTOMIZATION_VERSION: &str = "kustomize.config.k8s.io/v1beta1";
/// The `apiVersion` of a `kind: Component`.
pub const COMPONENT_VERSION: &str = "kustomize.config.k8s.io/v1alpha1";

/// A parsed kustomization file.
#[derive(Debug, Clone)]
pub struct Kustomization {
    pub path: PathBuf,
    pub node: Node,
}

impl Kustomization {
    /// Reads and validates the kustomization file at `path`.
    pub fn load(fs: &crate::fs::FileSystem, path: &Path) -> Result<Kustomization, KustomizeError> {
        // Documents nobody else holds are moved, not copied.
        let k = match std::sync::Arc::try_unwrap(fs.read_documents(path)?) {
            Ok(docs) => Kustomization::from_documents(path, docs)?,
            Err(docs) => Kustomization::from_documents(path, docs.iter().cloned())?,
        };
        if k.is_empty() {
            return Err(KustomizeError::Other("kustomization.yaml is empty".into()));
        }
        Ok(k)
    }

    /// Whether kustomize refuses the file as empty: it sets nothing but `apiVersion` and
    /// `kind`, every other field it has being null (`resources:` whose entries are all
    /// commented out) or an empty `helmChartInflationGenerator`, which kustomize folds into
    /// `helmCharts` before it looks. An empty list or mapping elsewhere (`resources: []`,
    /// `metadata: {}`) is something, as in kustomize. Checked against kustomize-ref case by
    /// case (the test below).
    pub fn is_empty(&self) -> bool {
        self.node.as_mapping().is_none_or(|entries| {
            entries
                .iter()
                .all(|(key, value)| match key.scalar_value().unwrap_or("") {
                    "apiVersion" | "kind" => true,
                    "helmChartInflationGenerator" => {
                        value.is_null() || value.as_sequence().is_some_and(Vec::is_empty)
                    }
                    _ => value.is_null(),
                })
        })
    }

    pub fn parse(path: &Path, text: &str) -> Result<Kustomization, KustomizeError> {
        Kustomization::from_documents(path, plumb_yaml::parse_documents(path, text)?)
    }

    /// The kustomization of a file's documents: the first that is not empty.
    fn from_documents(
        path: &Path,
        docs: impl IntoIterator<Item = Node>,
    ) -> Result<Kustomization, KustomizeError> {
        let node = docs
            .into_iter()
            .find(|d| !d.is_null())
            .unwrap_or_else(Node::mapping);
        Kustomization::from_node(path, node)
    }

    /// A kustomization from a node built in memory; `path` names the file it stands for (its
    /// directory is where relative paths start).
    pub fn from_node(path: &Path, mut node: Node) -> Result<Kustomization, KustomizeError> {
        canonical_keys(&mut node);
        if !node.is_mapping() {
            return Err(invalid(
                path,
                &node,
                "kustomization must be a mapping".into(),
            ));
        }
        let k = Kustomization {
            path: path.to_path_buf(),
            node,
        };
        k.validate()?;
        Ok(k)
    }

    /// The directory the kustomization's relative paths start from.
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    fn validate(&self) -> Result<(), KustomizeError> {
        if let Some(entries) = self.node.as_mapping() {
            for (key, _) in entries {
                let name = key.scalar_value().unwrap_or("");
                if !KNOWN_FIELDS.contains(&name) {
                    let hint = closest(name, KNOWN_FIELDS)
                        .map(|c| format!(" (did you mean {c:?}?)"))
                        .unwrap_or_default();
                    return Err(invalid(
                        &self.path,
                        key,
                        format!("json: unknown field {name:?}{hint}"),
                    ));
                }
            }
        }
        self.enforce_kind_and_version()
    }

    /// kustomize's check of `kind` and `apiVersion`: a Component must be
    /// `kustomize.config.k8s.io/v1alpha1`, anything else `kustomize.config.k8s.io/v1beta1`; an
    /// absent `apiVersion` is the right one.
    fn enforce_kind_and_version(&self) -> Result<(), KustomizeError> {
        let kind = match self.node.str_at(&["kind"]) {
            None | Some("") => "Kustomization",
            Some(kind) => kind,
        };
        let mut problems = Vec::new();
        if !matches!(kind, "Kustomization" | "Component") {
            problems.push("kind should be Kustomization or Component".to_string());
        }
        let required = if kind == "Component" {
            COMPONENT_VERSION
        } else {
            KUSTOMIZATION_VERSION
        };
        let api_version = self.node.str_at(&["apiVersion"]).unwrap_or("");
        let wrong_version = !api_version.is_empty() && api_version != required;
        if wrong_version {
            problems.push(format!("apiVersion for {kind} should be {required}"));
        }
        if problems.is_empty() {
            return Ok(());
        }
        let at = self
            .node
            .get(if wrong_version { "apiVersion" } else { "kind" });
        Err(KustomizeError::KindOrVersion {
            dir: self.dir().to_path_buf(),
            path: self.path.clone(),
            line: at.and_then(|n| n.span.as_ref()).map(|s| s.location().line),
            problems,
        })
    }

    /// Whether this is a `kind: Component`.
    pub fn is_component(&self) -> bool {
        self.node.str_at(&["kind"]) == Some("Component")
    }

    /// A field holding a list of strings (`resources`, `components`, ...).
    pub fn string_list(&self, field: &str) -> Result<Vec<String>, KustomizeError> {
        let Some(node) = self.node.get(field) else {
            return Ok(Vec::new());
        };
        if node.is_null() {
            return Ok(Vec::new());
        }
        let Some(items) = node.as_sequence() else {
            return Err(values::type_error(self, node, field, "[]string"));
        };
        items
            .iter()
            .map(|item| match (&item.kind, values::json_type(item)) {
                (NodeKind::Scalar(s), "string") => Ok(s.value.to_string()),
                _ => Err(values::type_error(self, item, field, "string")),
            })
            .collect()
    }

    pub fn field(&self, name: &str) -> Option<&Node> {
        self.node.get(name).filter(|n| !n.is_null())
    }
}

/// kustomize decodes a kustomization through Go's JSON decoder: a field name matches its
/// field whatever its case (`nameprefix` is `namePrefix`), and of a key written twice the last
/// one counts.
fn canonical_keys(node: &mut Node) {
    let Some(entries) = node.as_mapping_mut() else {
        return;
    };
    for (key, _) in entries.iter_mut() {
        let Some(name) = key.scalar_value() else {
            continue;
        };
        if KNOWN_FIELDS.contains(&name) {
            continue;
        }
        if let Some(known) = KNOWN_FIELDS.iter().find(|f| f.eq_ignore_ascii_case(name)) {
            *key = Node::string(*known).with_span(key.span.clone());
        }
    }
    // An entry is dropped when a later one has its name; most kustomizations write each field
    // once, and keep their mapping as it is.
    let overridden: Vec<bool> = {
        let names: Vec<Option<&str>> = entries.iter().map(|(k, _)| k.scalar_value()).collect();
        names
            .iter()
            .enumerate()
            .map(|(i, n)| n.is_some() && names[i + 1..].contains(n))
            .collect()
    };
    if overridden.contains(&true) {
        let mut overridden = overridden.into_iter();
        entries.retain(|_| !overridden.next().unwrap_or(false));
    }
}

pub(crate) fn invalid(path: &Path, node: &Node, message: String) -> KustomizeError {
    KustomizeError::InvalidKustomization {
        path: path.to_path_buf(),
        line: node.span.as_ref().map(|s| s.location().line),
        message,
    }
}

/// The candidate closest to `word` by edit distance, if it is close enough to be a typo.
pub fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (edit_distance(&word.to_lowercase(), &c.to_lowercase()), *c))
        .filter(|(d, c)| *d <= (c.len() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::Kustomization;
    use std::path::Path;

    /// Field names match whatever their case, and of a field written twice the last counts,
    /// in the last one's place; a kustomization with each field once keeps its order.
    #[test]
    fn fields_are_read_as_go_json_decodes_them() {
        let path = Path::new("kustomization.yaml");
        let field = |k: &Kustomization, name: &str| {
            k.field(name)
                .and_then(plumb_yaml::Node::scalar_value)
                .map(str::to_string)
        };
        let k = Kustomization::parse(path, "nameprefix: p-\nnamespace: a\nNamespace: b\n").unwrap();
        assert_eq!(field(&k, "namePrefix").as_deref(), Some("p-"));
        assert_eq!(field(&k, "namespace").as_deref(), Some("b"));
        let keys = |k: &Kustomization| -> Vec<String> {
            k.node
                .as_mapping()
                .into_iter()
                .flatten()
                .filter_map(|(key, _)| key.scalar_value().map(str::to_string))
                .collect()
        };
        assert_eq!(keys(&k), ["namePrefix", "namespace"]);
        let once = Kustomization::parse(path, "namespace: a\nnamePrefix: p-\n").unwrap();
        assert_eq!(keys(&once), ["namespace", "namePrefix"]);
    }

    /// Each text with what kustomize-ref (kustomize api v0.21.3) did with it as a directory's
    /// kustomization.yaml: refused it as empty, or built it.
    #[test]
    fn empty_as_kustomize_finds_it() {
        let refused = [
            "",
            "---\n",
            "# only a comment\n",
            "resources:\n",
            "resources:\n# - a.yaml\n# - b.yaml\n",
            "resources: ~\n",
            "bases:\n",
            "metadata:\n",
            "openapi:\n",
            "sortOptions:\n",
            "helmChartInflationGenerator: []\n",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n",
            "kind: Kustomization\nmetadata:\n",
            "kind: Component\napiVersion: kustomize.config.k8s.io/v1alpha1\n",
        ];
        let built = [
            "resources: []\n",
            "bases: []\n",
            "namespace: x\n",
            "metadata:\n  name: x\n",
            "metadata: {}\n",
            "resources:\n# - a.yaml\npatches: []\n",
            "labels: []\n",
            "commonLabels: {}\n",
            "patchesJson6902: []\n",
            "patchesStrategicMerge: []\n",
            "helmCharts: []\n",
            "helmGlobals: {}\n",
            "vars: []\n",
            "images: []\n",
            "configMapGenerator: []\n",
            "buildMetadata: []\n",
            "generatorOptions: {}\n",
            "crds: []\n",
        ];
        let path = Path::new("kustomization.yaml");
        for text in refused {
            let k = Kustomization::parse(path, text).unwrap();
            assert!(k.is_empty(), "{text:?} is empty to kustomize");
        }
        for text in built {
            let k = Kustomization::parse(path, text).unwrap();
            assert!(!k.is_empty(), "{text:?} builds in kustomize");
        }
    }
}
