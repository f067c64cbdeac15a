//! A HelmRelease's values composed as helm-controller composes them (fluxcd/pkg `chartutil`
//! `ChartValuesFromReferences` and `MergeMaps`), and a chart's `valuesFiles` merged as
//! source-controller merges them when it packages the chart.
//!
//! `valuesFrom` entries are read in order. Without `targetPath` an entry's data is YAML merged
//! into the result; with one, the result so far is first merged with `spec.values` and the data
//! is then set at the path with Helm's `--set` syntax ([`crate::strvals`]). `spec.values` is
//! merged once more at the end. A merge shares every nested map that only one side has, so a
//! `targetPath` write lands in `spec.values`' own map, and survives the final merge, exactly
//! where no other entry's map was merged with it. That is why this module keeps values as a
//! tree of shared maps and lists (as Go's maps and slices are) and converts to and from
//! [`serde_json::Value`] only at its edges.
//!
//! ```
//! use plumb_helm::values::{compose, ValuesKind, ValuesReference};
//! use std::collections::BTreeMap;
//!
//! let replicas = ValuesReference::from_spec(&serde_json::json!(
//!     {"kind": "Secret", "name": "web", "valuesKey": "replicas", "targetPath": "web.replicas"}
//! )).unwrap();
//! let source = |_: ValuesKind, _: &str| Some(BTreeMap::from([("replicas".to_string(), "3".to_string())]));
//! let values = serde_json::json!({"web": {"replicas": 5}});
//! let composed = compose(&[replicas], &source, Some(&values)).unwrap();
//! assert_eq!(composed, serde_json::json!({"web": {"replicas": 3}}));
//! ```

use crate::strvals::{go_quote, parse_into_tree};
use plumb_yaml::resolve::{resolve, Resolved, Schema};
use plumb_yaml::{Node, NodeKind};
use serde_json::{Map, Number, Value};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::rc::Rc;

/// The kind a `valuesFrom` entry reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ValuesKind {
    /// A ConfigMap: its `data`.
    ConfigMap,
    /// A Secret: its `data`, decoded.
    Secret,
}

impl ValuesKind {
    /// The resource's plural, as the API server's not-found error names it.
    fn plural(self) -> &'static str {
        match self {
            ValuesKind::ConfigMap => "configmaps",
            ValuesKind::Secret => "secrets",
        }
    }
}

impl fmt::Display for ValuesKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ValuesKind::ConfigMap => "ConfigMap",
            ValuesKind::Secret => "Secret",
        })
    }
}

/// One `valuesFrom` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValuesReference {
    /// What kind of object the entry reads.
    pub kind: ValuesKind,
    /// The object's name, in the HelmRelease's namespace.
    pub name: String,
    /// The data key; `None` means `values.yaml`.
    pub values_key: Option<String>,
    /// Where the data is set as a single value (`--set` syntax); `None` merges it as YAML.
    pub target_path: Option<String>,
    /// A missing object, or a missing key in it, is skipped.
    pub optional: bool,
    /// With a `targetPath`, the data is set verbatim, as `helm --set-literal` does.
    pub literal: bool,
}

/// The default `valuesKey`.
pub const DEFAULT_VALUES_KEY: &str = "values.yaml";

impl ValuesReference {
    /// Reads one `spec.valuesFrom` entry, with the checks the HelmRelease CRD's schema makes
    /// (the API server refuses an object that fails them, so Flux never sees it).
    pub fn from_spec(entry: &Value) -> Result<ValuesReference, ValuesError> {
        let invalid = |message: String| Err(ValuesError::InvalidReference(message));
        let Some(object) = entry.as_object() else {
            return invalid(format!("must be an object, not {}", json_kind(entry)));
        };
        let string = |field: &str| -> Result<Option<String>, ValuesError> {
            match object.get(field) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(ValuesError::InvalidReference(format!(
                    "{field}: must be a string, not {}",
                    json_kind(other)
                ))),
            }
        };
        let boolean = |field: &str| -> Result<bool, ValuesError> {
            match object.get(field) {
                None | Some(Value::Null) => Ok(false),
                Some(Value::Bool(b)) => Ok(*b),
                Some(other) => Err(ValuesError::InvalidReference(format!(
                    "{field}: must be a boolean, not {}",
                    json_kind(other)
                ))),
            }
        };
        let name = string("name")?;
        let values_key = string("valuesKey")?;
        let kind = match string("kind")?.as_deref() {
            Some("ConfigMap") => ValuesKind::ConfigMap,
            Some("Secret") => ValuesKind::Secret,
            Some(other) => {
                return Err(ValuesError::UnsupportedKind {
                    kind: other.to_string(),
                    name: name.unwrap_or_default(),
                    key: values_key.unwrap_or_else(|| DEFAULT_VALUES_KEY.into()),
                })
            }
            None => return invalid("kind: Required value (one of Secret, ConfigMap)".into()),
        };
        let Some(name) = name else {
            return invalid("name: Required value".into());
        };
        let length = name.chars().count();
        if !(1..=253).contains(&length) {
            return invalid(format!(
                "name: Invalid value: {}: must be 1 to 253 characters long",
                go_quote(&name)
            ));
        }
        if let Some(key) = &values_key {
            let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
            if key.is_empty() || key.chars().count() > 253 || !key.chars().all(allowed) {
                return invalid(format!(
                    "valuesKey: Invalid value: {}: should match '^[\\-._a-zA-Z0-9]+$' and be at most 253 characters long",
                    go_quote(key)
                ));
            }
        }
        let target_path = string("targetPath")?;
        if let Some(path) = &target_path {
            if path.chars().count() > 250 || !target_path_allowed(path) {
                return invalid(format!(
                    "targetPath: Invalid value: {}: should match '^([a-zA-Z0-9_\\-.\\\\\\/]|\\[[0-9]{{1,5}}\\])+$' and be at most 250 characters long",
                    go_quote(path)
                ));
            }
        }
        Ok(ValuesReference {
            kind,
            name,
            values_key,
            target_path,
            optional: boolean("optional")?,
            literal: boolean("literal")?,
        })
    }

    /// The data key this entry reads (`values.yaml` unless set).
    pub fn key(&self) -> &str {
        self.values_key.as_deref().unwrap_or(DEFAULT_VALUES_KEY)
    }
}

/// The CRD's `targetPath` pattern, `^([a-zA-Z0-9_\-.\\\/]|\[[0-9]{1,5}\])+$`.
fn target_path_allowed(path: &str) -> bool {
    let bytes = path.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'\\' | b'/') {
            i += 1;
        } else if b == b'[' {
            let digits = bytes[i + 1..]
                .iter()
                .take_while(|d| d.is_ascii_digit())
                .count();
            if !(1..=5).contains(&digits) || bytes.get(i + 1 + digits) != Some(&b']') {
                return false;
            }
            i += digits + 2;
        } else {
            return false;
        }
    }
    !path.is_empty()
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Where the referenced objects' data comes from. A ConfigMap gives its `data` only: chartutil
/// never reads `binaryData`. A Secret gives its `data` already base64-decoded, with
/// `stringData` merged over it as the API server would. `None` = the object does not exist.
pub trait ValuesSource {
    /// The data of the object `kind`/`name`, or `None` if it does not exist.
    fn data(&self, kind: ValuesKind, name: &str) -> Option<BTreeMap<String, String>>;
}

impl<F> ValuesSource for F
where
    F: Fn(ValuesKind, &str) -> Option<BTreeMap<String, String>>,
{
    fn data(&self, kind: ValuesKind, name: &str) -> Option<BTreeMap<String, String>> {
        self(kind, name)
    }
}

fn optional_word(optional: &bool) -> &'static str {
    if *optional {
        " optional"
    } else {
        ""
    }
}

/// Why values could not be composed. Messages read as chartutil's and source-controller's do
/// (chartutil also names the HelmRelease's namespace, which the caller knows).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValuesError {
    /// A `valuesFrom` entry the HelmRelease CRD's schema rejects.
    #[error("invalid valuesFrom entry: {0}")]
    InvalidReference(String),
    /// A `valuesFrom` kind other than ConfigMap or Secret.
    #[error("could not resolve {kind} chart values reference '{name}' with key '{key}': unsupported values reference kind")]
    UnsupportedKind {
        kind: String,
        name: String,
        key: String,
    },
    /// The referenced object does not exist and the entry is not optional. `detail` is the API
    /// server's not-found message, or chartutil's "resource not found" when an earlier entry
    /// already found the object missing.
    #[error("could not resolve{} {kind} chart values reference '{name}' with key '{key}': {detail}", optional_word(.optional))]
    NotFound {
        kind: ValuesKind,
        name: String,
        key: String,
        optional: bool,
        detail: String,
    },
    /// The object has no such key and the entry is not optional.
    #[error("could not resolve{} {kind} chart values reference '{name}' with key '{key}': key not found", optional_word(.optional))]
    KeyNotFound {
        kind: ValuesKind,
        name: String,
        key: String,
        optional: bool,
    },
    /// The data is not a YAML mapping (chartutil's "failed to read values data").
    #[error("could not resolve{} {kind} chart values reference '{name}' with key '{key}': {message}", optional_word(.optional))]
    InvalidValues {
        kind: ValuesKind,
        name: String,
        key: String,
        optional: bool,
        message: String,
    },
    /// Helm's `--set` parser rejected the path and value (chartutil's "failed to merge value").
    #[error("could not resolve{} {kind} chart values reference '{name}' with key '{key}': targetPath '{target_path}': {message}", optional_word(.optional))]
    TargetPath {
        kind: ValuesKind,
        name: String,
        key: String,
        optional: bool,
        target_path: String,
        message: String,
    },
    /// A chart's `valuesFiles` entry that is not a YAML mapping.
    #[error("unmarshaling values from '{file}' failed: {message}")]
    ValuesFile { file: String, message: String },
}

/// The values helm-controller passes to Helm: `references` resolved through `source` and merged
/// in order, `values` (the HelmRelease's `spec.values`) merged in at each `targetPath` entry and
/// last. A `spec.values` that is not an object counts as none, as helm-controller reads it.
pub fn compose(
    references: &[ValuesReference],
    source: &dyn ValuesSource,
    values: Option<&Value>,
) -> Result<Value, ValuesError> {
    let tree = compose_tree(references, source, values)?;
    Ok(Value::Object(GoValue::map_to_json(&tree)))
}

/// The composed values ready for `helm template`: [`compose`]'s values, to be written to a
/// values file, and the `--set` arguments that must follow that file.
#[derive(Debug, Clone, PartialEq)]
pub struct HelmValues {
    /// The values, as [`compose`] gives them.
    pub values: Value,
    /// One `--set` line per integer a `targetPath` set (`path=digits`, keys escaped). Helm reads
    /// every number of a values file as a `float64`, but helm-controller hands Helm the `int64`
    /// Helm's `--set` parser made: templates print `1000000` (not `1e+06`), keep integers
    /// above 2^53 exact and see `kindOf` `int64`. Setting them again with `--set` after the file
    /// gives Helm the same `int64`s.
    pub int64_set: Vec<String>,
}

/// [`compose`], with what it takes to hand the values to a `helm` program as helm-controller
/// hands them to Helm in-process (see [`HelmValues::int64_set`]).
pub fn compose_for_helm(
    references: &[ValuesReference],
    source: &dyn ValuesSource,
    values: Option<&Value>,
) -> Result<HelmValues, ValuesError> {
    let tree = compose_tree(references, source, values)?;
    let mut int64_set = Vec::new();
    collect_int64(
        &GoValue::Map(tree.clone()),
        &mut String::new(),
        &mut int64_set,
    );
    Ok(HelmValues {
        values: Value::Object(GoValue::map_to_json(&tree)),
        int64_set,
    })
}

/// `--set` lines for every `int64` under `value`, whose `--set` path so far is `path`.
fn collect_int64(value: &GoValue, path: &mut String, out: &mut Vec<String>) {
    match value {
        GoValue::Int(i) => out.push(format!("{path}={i}")),
        GoValue::Map(map) => {
            for (key, child) in &map.borrow().entries {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                for c in key.chars() {
                    if matches!(c, '\\' | '.' | '[' | ',' | '=') {
                        path.push('\\');
                    }
                    path.push(c);
                }
                collect_int64(child, path, out);
                path.truncate(len);
            }
        }
        GoValue::List(items) => {
            for (i, child) in items.borrow().iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                collect_int64(child, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

fn compose_tree(
    references: &[ValuesReference],
    source: &dyn ValuesSource,
    values: Option<&Value>,
) -> Result<MapRef, ValuesError> {
    let spec_values = match values {
        Some(Value::Object(map)) => GoValue::map_from_json(map),
        _ => MapRef::default(),
    };
    let mut result = MapRef::default();
    // Each object is read once, so every entry acts on one version of it (as chartutil does).
    let mut objects: HashMap<(ValuesKind, &str), Option<BTreeMap<String, String>>> = HashMap::new();
    for reference in references {
        let key = reference.key();
        let slot = (reference.kind, reference.name.as_str());
        let data = match objects.get(&slot) {
            Some(data) => data,
            None => {
                let data = source.data(reference.kind, &reference.name);
                if data.is_none() && !reference.optional {
                    return Err(not_found(
                        reference,
                        format!(
                            "{} \"{}\" not found",
                            reference.kind.plural(),
                            reference.name
                        ),
                    ));
                }
                objects.entry(slot).or_insert(data)
            }
        };
        let Some(data) = data else {
            if reference.optional {
                continue;
            }
            return Err(not_found(reference, "resource not found".into()));
        };
        let Some(text) = data.get(key) else {
            if reference.optional {
                continue;
            }
            return Err(ValuesError::KeyNotFound {
                kind: reference.kind,
                name: reference.name.clone(),
                key: key.to_string(),
                optional: reference.optional,
            });
        };
        if let Some(path) = &reference.target_path {
            result = merge_trees(&result, &spec_values);
            replace_path_tree(&result, path, text, reference.literal).map_err(|e| {
                ValuesError::TargetPath {
                    kind: reference.kind,
                    name: reference.name.clone(),
                    key: key.to_string(),
                    optional: reference.optional,
                    target_path: path.clone(),
                    message: e.0,
                }
            })?;
            continue;
        }
        let read =
            read_values(text, "common.Values").map_err(|message| ValuesError::InvalidValues {
                kind: reference.kind,
                name: reference.name.clone(),
                key: key.to_string(),
                optional: reference.optional,
                message,
            })?;
        result = merge_trees(&result, &read);
    }
    Ok(merge_trees(&result, &spec_values))
}

fn not_found(reference: &ValuesReference, detail: String) -> ValuesError {
    ValuesError::NotFound {
        kind: reference.kind,
        name: reference.name.clone(),
        key: reference.key().to_string(),
        optional: reference.optional,
        detail,
    }
}

/// The chart's default values as source-controller writes them when a HelmChart (or a
/// HelmRelease's `chart.spec`) lists `valuesFiles`: each file's YAML merged over the previous
/// ones in order. `files` are the files that exist, as (path in the chart, text); a path that
/// cleans to `values.yaml` is the chart's own values file, read as Helm's chart loader reads
/// it (every YAML document merged), the others as single documents.
pub fn merge_values_files(files: &[(String, String)]) -> Result<Value, ValuesError> {
    let mut merged = MapRef::default();
    for (name, text) in files {
        let read = if clean_path(name) == DEFAULT_VALUES_KEY {
            read_chart_values(text)
        } else {
            read_values(text, "map[string]interface {}")
        };
        let read = read.map_err(|message| ValuesError::ValuesFile {
            file: name.clone(),
            message,
        })?;
        merged = merge_trees(&merged, &read);
    }
    Ok(Value::Object(GoValue::map_to_json(&merged)))
}

/// Go's `filepath.Clean` of a slash-separated path.
fn clean_path(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            part => parts.push(part),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// fluxcd/pkg chartutil's `MergeMaps` (and Helm's, and source-controller's): `b` over `a`, maps
/// merged only with maps, anything else replaced.
pub fn merge_maps(a: &Map<String, Value>, b: &Map<String, Value>) -> Map<String, Value> {
    let merged = merge_trees(&GoValue::map_from_json(a), &GoValue::map_from_json(b));
    GoValue::map_to_json(&merged)
}

/// chartutil's `ReplacePathValue`: `value` set at `path` in `values` with Helm's `--set`
/// syntax; a value wrapped in single or double quotes has its quotes trimmed and is kept a
/// string (`--set-string`).
pub fn replace_path_value(
    values: &mut Map<String, Value>,
    path: &str,
    value: &str,
) -> Result<(), crate::strvals::StrvalsError> {
    let tree = GoValue::map_from_json(values);
    let result = replace_path_tree(&tree, path, value, false);
    *values = GoValue::map_to_json(&tree);
    result
}

/// chartutil's `ReplacePathLiteralValue`: `value` set verbatim at `path` (escapes in the path
/// still work), as `helm --set-literal` sets it.
pub fn replace_path_literal_value(
    values: &mut Map<String, Value>,
    path: &str,
    value: &str,
) -> Result<(), crate::strvals::StrvalsError> {
    let tree = GoValue::map_from_json(values);
    let result = replace_path_tree(&tree, path, value, true);
    *values = GoValue::map_to_json(&tree);
    result
}

fn replace_path_tree(
    tree: &MapRef,
    path: &str,
    value: &str,
    literal: bool,
) -> Result<(), crate::strvals::StrvalsError> {
    if literal {
        let mut escaped = String::with_capacity(value.len());
        for c in value.chars() {
            if matches!(c, '\\' | ',' | '[' | ']' | '{' | '}') {
                escaped.push('\\');
            }
            escaped.push(c);
        }
        return parse_into_tree(&format!("{path}={escaped}"), tree, true);
    }
    let quoted = |q: char| value.starts_with(q) && value.ends_with(q);
    if quoted('\'') || quoted('"') {
        let trimmed = value.trim_matches(['\'', '"']);
        return parse_into_tree(&format!("{path}={trimmed}"), tree, true);
    }
    parse_into_tree(&format!("{path}={value}"), tree, false)
}

/// A shared map, as a Go `map[string]interface{}` is: every holder sees writes into it.
pub(crate) type MapRef = Rc<RefCell<GoMap>>;

/// A shared list. Go slices that share an array always have the same length here (Helm's
/// parser makes a new array to grow a list), so one shared vector models them exactly.
pub(crate) type ListRef = Rc<RefCell<Vec<GoValue>>>;

/// A value as helm-controller holds it in Go.
#[derive(Clone, Debug)]
pub(crate) enum GoValue {
    Nil,
    Bool(bool),
    /// An `int64`, as Helm's `--set` parser types integers.
    Int(i64),
    /// A number read from YAML or JSON: a `float64` in Go, kept exact here.
    Number(Number),
    Str(String),
    Map(MapRef),
    List(ListRef),
}

/// A map's entries in insertion order (Go's maps have none; insertion order keeps output close
/// to the input).
#[derive(Default, Debug)]
pub(crate) struct GoMap {
    entries: Vec<(String, GoValue)>,
    index: HashMap<String, usize>,
}

impl GoMap {
    pub(crate) fn get(&self, key: &str) -> Option<&GoValue> {
        self.index.get(key).map(|&i| &self.entries[i].1)
    }

    pub(crate) fn insert(&mut self, key: String, value: GoValue) {
        match self.index.get(&key) {
            Some(&i) => self.entries[i].1 = value,
            None => {
                self.index.insert(key.clone(), self.entries.len());
                self.entries.push((key, value));
            }
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn shallow_copy(&self) -> GoMap {
        GoMap {
            entries: self.entries.clone(),
            index: self.index.clone(),
        }
    }
}

impl GoValue {
    /// The type Go's runtime names in a failed type assertion.
    pub(crate) fn go_type(&self) -> &'static str {
        match self {
            GoValue::Nil => "nil",
            GoValue::Bool(_) => "bool",
            GoValue::Int(_) => "int64",
            GoValue::Number(_) => "float64",
            GoValue::Str(_) => "string",
            GoValue::Map(_) => "map[string]interface {}",
            GoValue::List(_) => "[]interface {}",
        }
    }

    fn from_json(value: &Value) -> GoValue {
        match value {
            Value::Null => GoValue::Nil,
            Value::Bool(b) => GoValue::Bool(*b),
            Value::Number(n) => GoValue::Number(n.clone()),
            Value::String(s) => GoValue::Str(s.clone()),
            Value::Array(items) => GoValue::List(Rc::new(RefCell::new(
                items.iter().map(GoValue::from_json).collect(),
            ))),
            Value::Object(map) => GoValue::Map(GoValue::map_from_json(map)),
        }
    }

    /// A fresh tree holding `map`.
    pub(crate) fn map_from_json(map: &Map<String, Value>) -> MapRef {
        let mut tree = GoMap::default();
        for (k, v) in map {
            tree.insert(k.clone(), GoValue::from_json(v));
        }
        Rc::new(RefCell::new(tree))
    }

    fn to_json(&self) -> Value {
        match self {
            GoValue::Nil => Value::Null,
            GoValue::Bool(b) => Value::Bool(*b),
            GoValue::Int(i) => Value::Number((*i).into()),
            GoValue::Number(n) => Value::Number(n.clone()),
            GoValue::Str(s) => Value::String(s.clone()),
            GoValue::Map(map) => Value::Object(GoValue::map_to_json(map)),
            GoValue::List(items) => {
                Value::Array(items.borrow().iter().map(GoValue::to_json).collect())
            }
        }
    }

    /// A deep copy of the tree under `map` as JSON.
    pub(crate) fn map_to_json(map: &MapRef) -> Map<String, Value> {
        map.borrow()
            .entries
            .iter()
            .map(|(k, v)| (k.clone(), v.to_json()))
            .collect()
    }
}

/// `MergeMaps` on shared trees: a new top map; a key only one side has keeps that side's value
/// itself (the same map or list, not a copy); maps both sides have are merged into new maps.
fn merge_trees(a: &MapRef, b: &MapRef) -> MapRef {
    let mut out = a.borrow().shallow_copy();
    for (k, v) in &b.borrow().entries {
        if let (GoValue::Map(bv), Some(GoValue::Map(av))) = (v, out.get(k)) {
            let merged = merge_trees(av, bv);
            out.insert(k.clone(), GoValue::Map(merged));
            continue;
        }
        out.insert(k.clone(), v.clone());
    }
    Rc::new(RefCell::new(out))
}

/// Helm's `ReadValues` / source-controller's `yaml.Unmarshal` into a map (`sigs.k8s.io/yaml`:
/// the first YAML 1.1 document through JSON). Empty or `null` text is no values; anything but
/// a mapping fails as decoding JSON into `type_name` fails.
fn read_values(text: &str, type_name: &str) -> Result<MapRef, String> {
    let docs = plumb_yaml::parse_documents("values", text).map_err(|e| {
        format!(
            "error converting YAML to JSON: yaml: line {}: {}",
            e.location.line, e.message
        )
    })?;
    match docs.first() {
        None => Ok(MapRef::default()),
        Some(doc) => document_map(doc, type_name),
    }
}

/// Helm's chart loader `LoadValues`: every document of `values.yaml` merged in order.
fn read_chart_values(text: &str) -> Result<MapRef, String> {
    let docs = plumb_yaml::parse_documents("values.yaml", text).map_err(|e| {
        format!(
            "cannot unmarshal yaml document: error converting YAML to JSON: yaml: line {}: {}",
            e.location.line, e.message
        )
    })?;
    let mut merged = MapRef::default();
    for doc in &docs {
        let read = document_map(doc, "map[string]interface {}")
            .map_err(|e| format!("cannot unmarshal yaml document: {e}"))?;
        merged = merge_trees(&merged, &read);
    }
    Ok(merged)
}

fn document_map(doc: &Node, type_name: &str) -> Result<MapRef, String> {
    let value = yaml_to_go(doc).map_err(|e| format!("error converting YAML to JSON: {e}"))?;
    let found = match value {
        GoValue::Nil => return Ok(MapRef::default()),
        GoValue::Map(map) => return Ok(map),
        GoValue::Bool(_) => "bool",
        GoValue::Int(_) | GoValue::Number(_) => "number",
        GoValue::Str(_) => "string",
        GoValue::List(_) => "array",
    };
    Err(format!(
        "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {found} into Go value of type {type_name}"
    ))
}

/// A node as go-yaml v2 decodes it into `interface{}` and `sigs.k8s.io/yaml` turns it into
/// JSON: keys become strings, timestamps stay their text, non-finite floats fail.
fn yaml_to_go(node: &Node) -> Result<GoValue, String> {
    match &node.kind {
        NodeKind::Scalar(s) => Ok(
            match resolve(s, Schema::Yaml11).map_err(|e| e.to_string())? {
                Resolved::Null => GoValue::Nil,
                Resolved::Bool(b) => GoValue::Bool(b),
                Resolved::Int(i) => GoValue::Number(i.into()),
                Resolved::Uint(u) => GoValue::Number(u.into()),
                Resolved::Float(f) => match Number::from_f64(f) {
                    Some(n) => GoValue::Number(n),
                    None => {
                        let shown = if f.is_nan() {
                            "NaN"
                        } else if f > 0.0 {
                            "+Inf"
                        } else {
                            "-Inf"
                        };
                        return Err(format!("json: unsupported value: {shown}"));
                    }
                },
                Resolved::Str(text) => GoValue::Str(text.into_owned()),
                Resolved::Timestamp(_) => GoValue::Str(s.value.to_string()),
            },
        ),
        NodeKind::Sequence(items) => Ok(GoValue::List(Rc::new(RefCell::new(
            items.iter().map(yaml_to_go).collect::<Result<_, _>>()?,
        )))),
        NodeKind::Mapping(entries) => {
            let mut map = GoMap::default();
            for (k, v) in entries {
                // go-yaml v2 lets a repeated key replace the earlier one.
                map.insert(yaml_key(k)?, yaml_to_go(v)?);
            }
            Ok(GoValue::Map(Rc::new(RefCell::new(map))))
        }
    }
}

/// How `sigs.k8s.io/yaml` spells a decoded key as a JSON object key.
fn yaml_key(key: &Node) -> Result<String, String> {
    let Some(s) = key.as_scalar() else {
        return Err("unsupported map key: a key must be a scalar".into());
    };
    Ok(
        match resolve(s, Schema::Yaml11).map_err(|e| e.to_string())? {
            Resolved::Str(text) => text.into_owned(),
            Resolved::Bool(b) => b.to_string(),
            Resolved::Int(i) => i.to_string(),
            Resolved::Uint(u) => {
                return Err(format!("unsupported map key of type: uint64, key: {u:#x}"));
            }
            Resolved::Float(f) if f.is_nan() => ".nan".into(),
            Resolved::Float(f) if f.is_infinite() => if f > 0.0 { ".inf" } else { "-.inf" }.into(),
            Resolved::Float(f) => format_float32_g(f),
            Resolved::Timestamp(_) => s.value.to_string(),
            Resolved::Null => return Err("unsupported map key of type: <nil>, key: <nil>".into()),
        },
    )
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)`: the shortest digits that identify the float32,
/// in exponent form when the exponent is below -4 or at least 6 (shortest `%g` decides with a
/// precision of 6).
fn format_float32_g(f: f64) -> String {
    let single = f as f32;
    if single == 0.0 {
        return if single.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{:e}", single.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let sign = if single < 0.0 { "-" } else { "" };
    if !(-4..6).contains(&exponent) {
        let mut m = digits[..1].to_string();
        if digits.len() > 1 {
            m.push('.');
            m.push_str(&digits[1..]);
        }
        let esign = if exponent < 0 { '-' } else { '+' };
        return format!("{sign}{m}e{esign}{:02}", exponent.abs());
    }
    if exponent < 0 {
        return format!("{sign}0.{}{digits}", "0".repeat((-exponent - 1) as usize));
    }
    let point = exponent as usize + 1;
    if point >= digits.len() {
        format!("{sign}{digits}{}", "0".repeat(point - digits.len()))
    } else {
        format!("{sign}{}.{}", &digits[..point], &digits[point..])
    }
}
