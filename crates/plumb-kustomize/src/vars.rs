//! Legacy `vars:`: a name bound to a field of one object (`objref` + `fieldref.fieldpath`),
//! written into `$(NAME)` occurrences in the fields the varReference field specs select.
//!
//! As kustomize does, a var is bound to its object at the level that declares it (after that
//! level's transformers ran, among that level's resources), and resolved once, at the end of the
//! build, from that object's final state: renames by levels above do not lose it, and two
//! sibling levels may each bind a var to their own object of the same name.

use crate::build::ResourceList;
use crate::error::KustomizeError;
use crate::fieldspec::{Create, FieldSpec};
use crate::kustomization::{invalid, Kustomization};
use crate::resource::{Gvk, ResId, Resource};
use plumb_yaml::{Node, NodeKind, Resolved, Scalar, ScalarStyle};
use std::collections::BTreeMap;
use std::fmt;

/// The field a var reads when it names none.
const DEFAULT_FIELD_PATH: &str = "metadata.name";

/// One `vars:` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Var {
    pub name: String,
    /// The object's group, version and kind as written (`group`/`version`/`kind`).
    pub gvk: Gvk,
    /// `objref.apiVersion`, which, when set, gives the group and version instead.
    pub api_version: String,
    pub obj_name: String,
    pub obj_namespace: String,
    /// `fieldref.fieldpath` as written (empty for the default, `metadata.name`).
    pub field_path: String,
    /// The identity its object had when the var was bound to it (none if no object matched).
    pub bound_to: Option<ResId>,
}

impl Var {
    fn parse(node: &Node, k: &Kustomization) -> Result<Var, KustomizeError> {
        let text = |path: &[&str]| node.str_at(path).unwrap_or("").to_string();
        let name = text(&["name"]);
        if name.is_empty() {
            return Err(invalid(&k.path, node, "var has no name".into()));
        }
        Ok(Var {
            name,
            gvk: Gvk {
                group: text(&["objref", "group"]).into(),
                version: text(&["objref", "version"]).into(),
                kind: text(&["objref", "kind"]).into(),
            },
            api_version: text(&["objref", "apiVersion"]),
            obj_name: text(&["objref", "name"]),
            obj_namespace: text(&["objref", "namespace"]),
            field_path: text(&["fieldref", "fieldpath"]),
            bound_to: None,
        })
    }

    /// The group, version and kind the var's object must have.
    fn target_gvk(&self) -> Gvk {
        if self.api_version.is_empty() {
            self.gvk.clone()
        } else {
            Gvk::from_api_version(&self.api_version, &self.gvk.kind)
        }
    }

    fn field_path(&self) -> &str {
        if self.field_path.is_empty() {
            DEFAULT_FIELD_PATH
        } else {
            &self.field_path
        }
    }

    /// Whether `id` is the var's object: same group, version, kind and name, and the same
    /// namespace when the var names one.
    fn refers_to(&self, id: &ResId) -> bool {
        let effective = |ns: &str| if ns.is_empty() { "default" } else { ns }.to_string();
        id.name == self.obj_name
            && id.gvk == self.target_gvk()
            && (self.obj_namespace.is_empty()
                || effective(&self.obj_namespace) == effective(&id.namespace))
    }

    /// The var as kustomize prints it once defaulted (`apiVersion` applied, field path set).
    fn resolved(&self) -> Var {
        Var {
            gvk: self.target_gvk(),
            field_path: self.field_path().to_string(),
            ..self.clone()
        }
    }
}

impl fmt::Display for Var {
    /// Go's `%v` of kustomize's `Var`: the name, the object's kind.version.group, the field.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{{} {} {{{}}}}}", self.name, self.gvk, self.field_path)
    }
}

/// Adds the vars of `k` to `vars`, each bound to its object among `list` (the level's
/// resources once its transformers ran), refusing a name already taken at this level or below
/// and a var that matches more than one object.
pub fn collect(
    k: &Kustomization,
    list: &ResourceList,
    vars: &mut Vec<Var>,
) -> Result<(), KustomizeError> {
    let Some(field) = k.field("vars") else {
        return Ok(());
    };
    let Some(items) = field.as_sequence() else {
        return Err(invalid(
            &k.path,
            field,
            "field \"vars\" must be a list".into(),
        ));
    };
    let mut own = items
        .iter()
        .map(|n| Var::parse(n, k))
        .collect::<Result<Vec<_>, _>>()?;
    let shown: Vec<String> = own.iter().map(Var::to_string).collect();
    let context = |message: String| {
        KustomizeError::Other(format!("merging vars [{}]: {message}", shown.join(" ")))
    };
    for var in own.iter_mut() {
        let matched: Vec<&Resource> = list
            .resources
            .iter()
            .filter(|r| ids_of(r).iter().any(|id| var.refers_to(id)))
            .collect();
        match matched.as_slice() {
            [] => {}
            [r] => var.bound_to = Some(r.id()),
            many => {
                return Err(context(format!(
                    "found {} resId matches for var {var} (unable to disambiguate)",
                    many.len()
                )))
            }
        }
    }
    for var in own {
        if vars.iter().any(|v| v.name == var.name) {
            return Err(context(format!("var '{}' already encountered", var.name)));
        }
        vars.push(var);
    }
    Ok(())
}

/// A var's value, typed as kustomize reads it from the object.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Value {
    /// The text of the value inside a longer string (Go's `%v`).
    fn text(&self) -> String {
        match self {
            Value::Str(s) => s.clone(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => go_float(*f),
            Value::Bool(b) => b.to_string(),
        }
    }

    /// The node a field holding exactly `$(VAR)` becomes.
    fn node(&self) -> Node {
        let (text, tag) = match self {
            Value::Str(s) => (s.clone(), "!!str"),
            Value::Int(i) => (i.to_string(), "!!int"),
            Value::Float(f) => (go_float(*f), "!!float"),
            Value::Bool(b) => (b.to_string(), "!!bool"),
        };
        Node::new(NodeKind::Scalar(Scalar {
            value: text.into(),
            style: ScalarStyle::Plain,
            tag: Some(plumb_yaml::shared_tag(tag)),
        }))
    }
}

/// A float as Go's `%v` / `strconv.FormatFloat(f, 'g'...)` writes it, near enough for the
/// values a field holds.
fn go_float(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{f:.0}")
    } else {
        format!("{f}")
    }
}

/// Replaces `$(VAR)` in the fields `specs` select with the vars' values read from the objects
/// in `list` as they are now. References to unknown vars stay as written.
pub fn resolve(
    list: &mut ResourceList,
    vars: &[Var],
    specs: &[FieldSpec],
) -> Result<(), KustomizeError> {
    let mut sorted: Vec<&Var> = vars.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut values = BTreeMap::new();
    for var in sorted {
        let shown = var.resolved();
        let bound = var
            .bound_to
            .as_ref()
            .and_then(|bound| list.resources.iter().find(|r| ids_of(r).contains(bound)));
        let Some(r) = bound else {
            return Err(KustomizeError::Other(format!(
                "var '{shown}' cannot be mapped to a field in the set of known resources"
            )));
        };
        let not_found = || {
            KustomizeError::Other(format!(
                "field specified in var '{shown}' not found in corresponding resource"
            ))
        };
        let node = field_value(&r.node, var.field_path()).ok_or_else(not_found)?;
        // kustomize keeps only scalar values; a var bound to a map or list is never replaced.
        if let Some(value) = scalar_value(node) {
            values.insert(var.name.clone(), value);
        }
    }
    if values.is_empty() {
        return Ok(());
    }
    for r in list.resources.iter_mut() {
        let gvk = r.gvk();
        for spec in specs.iter().filter(|s| s.selects(&gvk)) {
            spec.apply(&mut r.node, Create::Nothing, &mut |field| {
                substitute(field, &values)
            })?;
        }
    }
    Ok(())
}

/// The identities a resource answers to: its current one and every one it had before.
fn ids_of(r: &Resource) -> Vec<ResId> {
    let mut ids = r.previous_ids.clone();
    ids.push(r.id());
    ids
}

/// Reads a var's field: a dotted path where `name[2]` indexes a list (as does a bare `2`).
fn field_value<'a>(node: &'a Node, path: &str) -> Option<&'a Node> {
    let mut cur = node;
    for part in split_var_path(path) {
        if cur.is_null() {
            return None;
        }
        cur = match part.parse::<usize>() {
            Ok(i) if cur.is_sequence() => cur.as_sequence()?.get(i)?,
            _ => cur.get(&part)?,
        };
    }
    Some(cur)
}

/// Splits `spec.ports[0].port` into `spec`, `ports`, `0`, `port`.
fn split_var_path(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in crate::fieldspec::split_outside_brackets(path, '.', false) {
        let part = part.trim().to_string();
        if part.is_empty() {
            continue;
        }
        match part
            .strip_suffix(']')
            .and_then(|p| p.rsplit_once('['))
            .filter(|(_, i)| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
        {
            Some((head, index)) => {
                if !head.is_empty() {
                    out.push(head.to_string());
                }
                out.push(index.to_string());
            }
            None => out.push(part),
        }
    }
    out
}

fn scalar_value(node: &Node) -> Option<Value> {
    let s = node.as_scalar()?;
    Some(
        match plumb_yaml::resolve::resolve(s, plumb_yaml::Schema::Kustomize) {
            Ok(Resolved::Int(i)) => Value::Int(i),
            Ok(Resolved::Uint(u)) => i64::try_from(u)
                .map(Value::Int)
                .unwrap_or_else(|_| Value::Str(s.value.to_string())),
            Ok(Resolved::Float(f)) => Value::Float(f),
            Ok(Resolved::Bool(b)) => Value::Bool(b),
            _ => Value::Str(s.value.to_string()),
        },
    )
}

fn is_string(node: &Node) -> bool {
    node.as_scalar().is_some_and(|s| {
        matches!(
            plumb_yaml::resolve::resolve(s, plumb_yaml::Schema::Kustomize),
            Ok(Resolved::Str(_))
        )
    })
}

/// Expands the strings of one selected field: a scalar, the values of a map, or the items of
/// a list (which must all be strings, as kustomize requires).
fn substitute(field: &mut Node, values: &BTreeMap<String, Value>) -> Result<(), KustomizeError> {
    match &mut field.kind {
        NodeKind::Scalar(_) => {
            if is_string(field) {
                expand_node(field, values);
            }
        }
        NodeKind::Mapping(entries) => {
            for (_, v) in entries.iter_mut() {
                if is_string(v) {
                    expand_node(v, values);
                }
            }
        }
        NodeKind::Sequence(items) => {
            for item in items.iter_mut() {
                if !is_string(item) {
                    return Err(KustomizeError::Other(
                        "invalid value type expect a string".into(),
                    ));
                }
                expand_node(item, values);
            }
        }
    }
    Ok(())
}

fn expand_node(node: &mut Node, values: &BTreeMap<String, Value>) {
    let Some(text) = node.scalar_value() else {
        return;
    };
    let expanded = expand(text, values);
    *node = expanded.node().with_span(node.span.clone());
}

/// Kubernetes' `$(VAR)` expansion: known vars are replaced, `$$` is a literal `$`, anything
/// else is kept. A string that is exactly one reference takes the var's type.
fn expand(input: &str, values: &BTreeMap<String, Value>) -> Value {
    let bytes = input.as_bytes();
    let mut out = String::new();
    let mut checkpoint = 0;
    let mut cursor = 0;
    while cursor < bytes.len() {
        if bytes[cursor] == b'$' && cursor + 1 < bytes.len() {
            out.push_str(&input[checkpoint..cursor]);
            let rest = &input[cursor + 1..];
            let advance = match rest.as_bytes()[0] {
                b'$' => {
                    out.push('$');
                    1
                }
                b'(' => match rest.find(')') {
                    Some(close) => {
                        let name = &rest[1..close];
                        match values.get(name) {
                            Some(v) if input.len() == name.len() + 3 => return v.clone(),
                            Some(v) => out.push_str(&v.text()),
                            None => {
                                out.push_str("$(");
                                out.push_str(name);
                                out.push(')');
                            }
                        }
                        close + 1
                    }
                    None => {
                        out.push_str("$(");
                        1
                    }
                },
                _ => {
                    let c = rest.chars().next().map_or(0, char::len_utf8);
                    out.push('$');
                    out.push_str(&rest[..c]);
                    c
                }
            };
            cursor += advance;
            checkpoint = cursor + 1;
        }
        cursor += 1;
    }
    if checkpoint <= input.len() {
        out.push_str(&input[checkpoint..]);
    }
    Value::Str(out)
}

/// kustomize's default varReference field specs: where `$(VAR)` is replaced.
pub fn default_var_reference_specs() -> Vec<FieldSpec> {
    let mut specs = Vec::new();
    for (kinds, paths) in VAR_REFERENCE {
        for kind in *kinds {
            for path in *paths {
                specs.push(FieldSpec {
                    kind: kind.to_string(),
                    ..FieldSpec::any_kind(path, false)
                });
            }
        }
    }
    specs
}

/// kustomize's `varReference` defaults (kubernetes-sigs/kustomize
/// api/konfig/builtinpluginconsts/varreference.go, Apache-2.0), in its order: (kinds, paths).
const VAR_REFERENCE: &[(&[&str], &[&str])] = &[
    (&["CronJob"], &CRONJOB_PATHS),
    (&["DaemonSet", "Deployment"], &TEMPLATE_PATHS),
    // Not in that file but in kustomize v5's behaviour (checked with kustomize-ref): a
    // Deployment's pod template annotations, and no other kind's.
    (&["Deployment"], &["spec/template/metadata/annotations"]),
    (
        &["Ingress"],
        &["spec/rules/host", "spec/tls/hosts", "spec/tls/secretName"],
    ),
    (&["Job"], &TEMPLATE_PATHS),
    (&["Pod"], &POD_PATHS),
    (&["ReplicaSet"], &TEMPLATE_PATHS),
    (&["Service"], &["spec/ports/port", "spec/ports/targetPort"]),
    (&["StatefulSet"], &STATEFULSET_PATHS),
    (&["PersistentVolume"], &["spec/nfs/server"]),
    (&[""], &["metadata/labels", "metadata/annotations"]),
];

const CRONJOB_PATHS: [&str; 9] = [
    "spec/jobTemplate/spec/template/spec/containers/args",
    "spec/jobTemplate/spec/template/spec/containers/command",
    "spec/jobTemplate/spec/template/spec/containers/env/value",
    "spec/jobTemplate/spec/template/spec/containers/volumeMounts/mountPath",
    "spec/jobTemplate/spec/template/spec/initContainers/args",
    "spec/jobTemplate/spec/template/spec/initContainers/command",
    "spec/jobTemplate/spec/template/spec/initContainers/env/value",
    "spec/jobTemplate/spec/template/spec/initContainers/volumeMounts/mountPath",
    "spec/jobTemplate/spec/template/spec/volumes/nfs/server",
];

const TEMPLATE_PATHS: [&str; 9] = [
    "spec/template/spec/containers/args",
    "spec/template/spec/containers/command",
    "spec/template/spec/containers/env/value",
    "spec/template/spec/containers/volumeMounts/mountPath",
    "spec/template/spec/initContainers/args",
    "spec/template/spec/initContainers/command",
    "spec/template/spec/initContainers/env/value",
    "spec/template/spec/initContainers/volumeMounts/mountPath",
    "spec/template/spec/volumes/nfs/server",
];

const POD_PATHS: [&str; 9] = [
    "spec/containers/args",
    "spec/containers/command",
    "spec/containers/env/value",
    "spec/containers/volumeMounts/mountPath",
    "spec/initContainers/args",
    "spec/initContainers/command",
    "spec/initContainers/env/value",
    "spec/initContainers/volumeMounts/mountPath",
    "spec/volumes/nfs/server",
];

const STATEFULSET_PATHS: [&str; 9] = [
    "spec/template/spec/containers/args",
    "spec/template/spec/containers/command",
    "spec/template/spec/containers/env/value",
    "spec/template/spec/containers/volumeMounts/mountPath",
    "spec/template/spec/initContainers/args",
    "spec/template/spec/initContainers/command",
    "spec/template/spec/initContainers/env/value",
    "spec/template/spec/initContainers/volumeMounts/mountPath",
    "spec/volumeClaimTemplates/spec/nfs/server",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn vals() -> BTreeMap<String, Value> {
        BTreeMap::from([
            ("A".to_string(), Value::Str("x".into())),
            ("N".to_string(), Value::Int(3)),
        ])
    }

    #[test]
    fn expansion_follows_kubernetes() {
        let e = |s| expand(s, &vals());
        assert_eq!(e("$(A)-$(N)"), Value::Str("x-3".into()));
        assert_eq!(e("$(N)"), Value::Int(3));
        assert_eq!(e("$$(A) $(B) $"), Value::Str("$(A) $(B) $".into()));
        assert_eq!(e("a$b $(A"), Value::Str("a$b $(A".into()));
    }

    #[test]
    fn var_paths_index_lists() {
        assert_eq!(
            split_var_path("spec.ports[0].port"),
            ["spec", "ports", "0", "port"]
        );
        assert_eq!(split_var_path("a.[b=c].d"), ["a", "[b=c]", "d"]);
    }

    #[test]
    fn defaults_cover_every_workload() {
        let specs = default_var_reference_specs();
        assert_eq!(specs.len(), 9 * 7 + 1 + 3 + 2 + 1 + 2);
        assert!(specs
            .iter()
            .any(|s| s.kind.is_empty() && s.path_string() == "metadata/annotations"));
    }
}
