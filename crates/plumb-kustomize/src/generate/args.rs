//! What one generator is asked to make: a `configMapGenerator`/`secretGenerator` entry (with the
//! kustomization's `generatorOptions` folded in) or a builtin generator's config resource, read
//! with the same strict typing kustomize's JSON decoding applies.

use crate::error::KustomizeError;
use crate::kustomization::invalid;
use plumb_yaml::{Node, NodeKind, Resolved, Schema};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The two kinds kustomize's builtin generators make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeneratedKind {
    ConfigMap,
    Secret,
}

impl GeneratedKind {
    pub fn as_str(self) -> &'static str {
        match self {
            GeneratedKind::ConfigMap => "ConfigMap",
            GeneratedKind::Secret => "Secret",
        }
    }
}

/// How a generated resource meets one already accumulated under the same identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behavior {
    /// No `behavior` (or one kustomize does not know, which it treats the same way).
    Unspecified,
    Create,
    Merge,
    Replace,
}

impl Behavior {
    fn parse(text: &str) -> Behavior {
        match text {
            "create" => Behavior::Create,
            "merge" => Behavior::Merge,
            "replace" => Behavior::Replace,
            _ => Behavior::Unspecified,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Behavior::Unspecified => "unspecified",
            Behavior::Create => "create",
            Behavior::Merge => "merge",
            Behavior::Replace => "replace",
        }
    }
}

/// `generatorOptions`, per entry or kustomization-wide.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GeneratorOptions {
    pub labels: Option<BTreeMap<String, String>>,
    pub annotations: Option<BTreeMap<String, String>>,
    pub disable_name_suffix_hash: bool,
    pub immutable: bool,
}

impl GeneratorOptions {
    /// Folds the kustomization-wide options into an entry's: the entry's labels and annotations
    /// win key by key, while a global `true` wins over a local `false` (kustomize cannot tell an
    /// intended `false` from an absent one).
    pub fn with_global(mut self, global: &GeneratorOptions) -> GeneratorOptions {
        fill(&mut self.labels, &global.labels);
        fill(&mut self.annotations, &global.annotations);
        self.disable_name_suffix_hash |= global.disable_name_suffix_hash;
        self.immutable |= global.immutable;
        self
    }
}

fn fill(local: &mut Option<BTreeMap<String, String>>, global: &Option<BTreeMap<String, String>>) {
    let Some(global) = global else {
        return;
    };
    let local = local.get_or_insert_with(BTreeMap::new);
    for (k, v) in global {
        local.entry(k.clone()).or_insert_with(|| v.clone());
    }
}

/// One generator's arguments.
#[derive(Debug, Clone)]
pub struct GeneratorArgs {
    pub kind: GeneratedKind,
    pub name: String,
    pub namespace: String,
    pub behavior: Behavior,
    pub literals: Vec<String>,
    pub files: Vec<String>,
    pub envs: Vec<String>,
    /// A Secret's `type`; empty means `Opaque`.
    pub secret_type: String,
    pub options: GeneratorOptions,
    /// Where the generator was declared, for messages.
    pub declared_in: PathBuf,
    pub line: Option<usize>,
    /// The generator's entry in its file: the generated object points back at it, so that a
    /// later stage (Flux's substitution) can name the generator.
    pub span: Option<plumb_yaml::Span>,
}

/// Reads typed fields of one YAML mapping the way Go's strict JSON decoding of kustomize's
/// types would, naming the field as Go does (`Kustomization.configMapGenerator.0.name`).
pub struct FieldReader<'a> {
    pub file: &'a Path,
    pub field_path: String,
}

impl FieldReader<'_> {
    fn err(&self, node: &Node, message: String) -> KustomizeError {
        invalid(self.file, node, message)
    }

    fn go_type(node: &Node) -> &'static str {
        match &node.kind {
            NodeKind::Mapping(_) => "object",
            NodeKind::Sequence(_) => "array",
            NodeKind::Scalar(s) => match plumb_yaml::resolve::resolve(s, Schema::Yaml11) {
                Ok(Resolved::Bool(_)) => "bool",
                Ok(Resolved::Int(_) | Resolved::Uint(_) | Resolved::Float(_)) => "number",
                _ => "string",
            },
        }
    }

    /// A string, or `None` for null (which Go's decoding leaves at its zero value).
    pub fn string(&self, node: &Node, field: &str) -> Result<Option<String>, KustomizeError> {
        self.string_at(
            node,
            &format!("Go struct field {}.{field}", self.field_path),
        )
    }

    fn string_at(&self, node: &Node, what: &str) -> Result<Option<String>, KustomizeError> {
        if node.is_null() {
            return Ok(None);
        }
        if let NodeKind::Scalar(s) = &node.kind {
            match plumb_yaml::resolve::resolve(s, Schema::Yaml11) {
                Ok(Resolved::Str(text)) => return Ok(Some(text.into_owned())),
                // A timestamp goes through JSON as its RFC 3339 text.
                Ok(Resolved::Timestamp(t)) => return Ok(Some(t.to_string())),
                _ => {}
            }
        }
        Err(self.err(
            node,
            format!(
                "json: cannot unmarshal {} into {what} of type string",
                Self::go_type(node)
            ),
        ))
    }

    pub fn bool(&self, node: &Node, field: &str) -> Result<bool, KustomizeError> {
        if node.is_null() {
            return Ok(false);
        }
        if let Some(s) = node.as_scalar() {
            if let Ok(Resolved::Bool(b)) = plumb_yaml::resolve::resolve(s, Schema::Yaml11) {
                return Ok(b);
            }
        }
        Err(self.err(
            node,
            format!(
                "json: cannot unmarshal {} into Go struct field {}.{field} of type bool",
                Self::go_type(node),
                self.field_path
            ),
        ))
    }

    pub fn string_list(&self, node: &Node, field: &str) -> Result<Vec<String>, KustomizeError> {
        if node.is_null() {
            return Ok(Vec::new());
        }
        let Some(items) = node.as_sequence() else {
            return Err(self.err(
                node,
                format!(
                    "json: cannot unmarshal {} into Go struct field {}.{field} of type []string",
                    Self::go_type(node),
                    self.field_path
                ),
            ));
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let what = format!("{}.{field}.{i}", self.field_path);
            out.push(self.string_at(item, &what)?.unwrap_or_default());
        }
        Ok(out)
    }

    pub fn string_map(
        &self,
        node: &Node,
        field: &str,
    ) -> Result<Option<BTreeMap<String, String>>, KustomizeError> {
        if node.is_null() {
            return Ok(None);
        }
        let Some(entries) = node.as_mapping() else {
            return Err(self.err(
                node,
                format!(
                    "json: cannot unmarshal {} into Go struct field {}.{field} of type map[string]string",
                    Self::go_type(node),
                    self.field_path
                ),
            ));
        };
        let mut out = BTreeMap::new();
        for (k, v) in entries {
            let key = json_key(k);
            let what = format!("Go struct field {}.{field}.{key}", self.field_path);
            out.insert(key, self.string_at(v, &what)?.unwrap_or_default());
        }
        Ok(Some(out))
    }

    /// The entries of a mapping, refusing keys outside `known` as Go's strict decoding does.
    pub fn entries<'n>(
        &self,
        node: &'n Node,
        known: &[&str],
        go_type: &str,
    ) -> Result<Vec<(&'n str, &'n Node)>, KustomizeError> {
        let Some(entries) = node.as_mapping() else {
            return Err(self.err(
                node,
                format!(
                    "json: cannot unmarshal {} into Go struct field {} of type {go_type}",
                    Self::go_type(node),
                    self.field_path
                ),
            ));
        };
        let mut out = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            let key = k.scalar_value().unwrap_or_default();
            if !known.contains(&key) {
                return Err(self.err(k, format!("json: unknown field {key:?}")));
            }
            out.push((key, v));
        }
        Ok(out)
    }

    fn nested(&self, field: &str) -> FieldReader<'_> {
        FieldReader {
            file: self.file,
            field_path: format!("{}.{field}", self.field_path),
        }
    }

    pub fn options(&self, node: &Node) -> Result<GeneratorOptions, KustomizeError> {
        let mut opts = GeneratorOptions::default();
        if node.is_null() {
            return Ok(opts);
        }
        let reader = self;
        for (key, value) in reader.entries(
            node,
            &[
                "labels",
                "annotations",
                "disableNameSuffixHash",
                "immutable",
            ],
            "types.GeneratorOptions",
        )? {
            match key {
                "labels" => opts.labels = reader.string_map(value, key)?,
                "annotations" => opts.annotations = reader.string_map(value, key)?,
                "disableNameSuffixHash" => {
                    opts.disable_name_suffix_hash = reader.bool(value, key)?
                }
                _ => opts.immutable = reader.bool(value, key)?,
            }
        }
        Ok(opts)
    }
}

/// A mapping key as the YAML-to-JSON conversion kustomize reads through writes it: YAML 1.1
/// booleans, nulls and numbers become their text (`n` is the key `false`).
fn json_key(key: &Node) -> String {
    let Some(scalar) = key.as_scalar() else {
        return String::new();
    };
    match plumb_yaml::resolve::resolve(scalar, Schema::Yaml11) {
        Ok(Resolved::Bool(b)) => b.to_string(),
        Ok(Resolved::Null) => "null".into(),
        Ok(Resolved::Int(i)) => i.to_string(),
        Ok(Resolved::Uint(u)) => u.to_string(),
        _ => scalar.value.to_string(),
    }
}

const ARG_FIELDS: &[&str] = &[
    "name",
    "namespace",
    "behavior",
    "literals",
    "files",
    "envs",
    "env",
    "options",
];

/// Reads the `generatorOptions` of a kustomization.
pub fn global_options(
    file: &Path,
    node: Option<&Node>,
) -> Result<GeneratorOptions, KustomizeError> {
    match node {
        Some(node) => FieldReader {
            file,
            field_path: "Kustomization.generatorOptions".into(),
        }
        .options(node),
        None => Ok(GeneratorOptions::default()),
    }
}

/// Reads the entries of a kustomization's `configMapGenerator` or `secretGenerator` field.
pub fn kustomization_entries(
    file: &Path,
    field: &str,
    node: &Node,
    kind: GeneratedKind,
    global: &GeneratorOptions,
) -> Result<Vec<GeneratorArgs>, KustomizeError> {
    if node.is_null() {
        return Ok(Vec::new());
    }
    let Some(items) = node.as_sequence() else {
        return Err(invalid(
            file,
            node,
            format!(
                "json: cannot unmarshal {} into Go struct field Kustomization.{field} of type []types.{}Args",
                FieldReader::go_type(node),
                kind.as_str()
            ),
        ));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let reader = FieldReader {
            file,
            field_path: format!("Kustomization.{field}.{i}"),
        };
        let mut args = read_args(&reader, item, kind, false)?;
        args.options = args.options.with_global(global);
        out.push(args);
    }
    Ok(out)
}

/// Reads a builtin generator's config resource (`apiVersion: builtin`, `kind: ConfigMapGenerator`
/// or `SecretGenerator`): the generator's fields at the top level, `metadata.name` and
/// `metadata.namespace` standing in for absent `name` and `namespace`. Unknown fields are
/// ignored, as the plugin's lenient decoding does, and the deprecated `env` is not read.
pub fn plugin_config(
    file: &Path,
    config: &Node,
    kind: GeneratedKind,
) -> Result<GeneratorArgs, KustomizeError> {
    let reader = FieldReader {
        file,
        field_path: format!("{}GeneratorPlugin", kind.as_str()),
    };
    let mut args = read_args(&reader, config, kind, true)?;
    let meta = reader.nested("metadata");
    if args.name.is_empty() {
        if let Some(n) = config.get_path(&["metadata", "name"]) {
            args.name = meta.string(n, "name")?.unwrap_or_default();
        }
    }
    if args.namespace.is_empty() {
        if let Some(n) = config.get_path(&["metadata", "namespace"]) {
            args.namespace = meta.string(n, "namespace")?.unwrap_or_default();
        }
    }
    Ok(args)
}

fn read_args(
    reader: &FieldReader<'_>,
    node: &Node,
    kind: GeneratedKind,
    lenient: bool,
) -> Result<GeneratorArgs, KustomizeError> {
    let mut args = GeneratorArgs {
        kind,
        name: String::new(),
        namespace: String::new(),
        behavior: Behavior::Unspecified,
        literals: Vec::new(),
        files: Vec::new(),
        envs: Vec::new(),
        secret_type: String::new(),
        options: GeneratorOptions::default(),
        declared_in: reader.file.to_path_buf(),
        line: node.span.as_ref().map(|s| s.location().line),
        span: node.span.clone(),
    };
    let mut known: Vec<&str> = ARG_FIELDS.to_vec();
    if kind == GeneratedKind::Secret {
        known.push("type");
    }
    let entries: Vec<(&str, &Node)> = if lenient {
        node.as_mapping()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| k.scalar_value().map(|k| (k, v)))
            .filter(|(k, _)| known.contains(k) && *k != "env")
            .collect()
    } else {
        reader.entries(node, &known, &format!("types.{}Args", kind.as_str()))?
    };
    let mut env = None;
    for (key, value) in entries {
        match key {
            "name" => args.name = reader.string(value, key)?.unwrap_or_default(),
            "namespace" => args.namespace = reader.string(value, key)?.unwrap_or_default(),
            "behavior" => {
                args.behavior = Behavior::parse(&reader.string(value, key)?.unwrap_or_default())
            }
            "literals" => args.literals = reader.string_list(value, key)?,
            "files" => args.files = reader.string_list(value, key)?,
            "envs" => args.envs = reader.string_list(value, key)?,
            "env" => env = reader.string(value, key)?.filter(|e| !e.is_empty()),
            "type" => args.secret_type = reader.string(value, key)?.unwrap_or_default(),
            _ => args.options = reader.nested("options").options(value)?,
        }
    }
    // kustomize moves the deprecated single `env` to the end of `envs` when it reads the file.
    args.envs.extend(env);
    Ok(args)
}
