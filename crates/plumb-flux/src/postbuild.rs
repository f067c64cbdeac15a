//! postBuild variable substitution over built objects, as kustomize-controller runs it
//! (fluxcd/pkg `kustomize_varsub.go`): variables from `substituteFrom` in list order (later
//! wins), inline `substitute` over all of them, newlines stripped from values; each object is
//! rendered to YAML, substituted as text, and read back as YAML 1.1 into JSON.

use crate::diagnostic::{Code, Diagnostic};
use crate::model::{FluxKustomization, Object, PostBuild, SUBSTITUTE_KEY};
use crate::runtime::RuntimeSecret;
use crate::sops::AgeKeys;
use crate::varsub::{self, Mode, SubstError};
use crate::yaml_json;
use base64::Engine;
use serde_json::Value;
use std::collections::BTreeMap;

/// The variables of one Kustomization.
pub type Vars = BTreeMap<String, String>;

/// Finds the ConfigMap or Secret `kind` `namespace`/`name` among the objects the cluster would
/// hold.
pub trait ObjectLookup {
    fn find(&self, kind: &str, namespace: &str, name: &str) -> Option<&Object>;

    /// The Secret `namespace`/`name` that a controller creates at runtime from an object of
    /// the build, when no build output holds it.
    fn runtime_secret(&self, _namespace: &str, _name: &str) -> Option<&RuntimeSecret> {
        None
    }

    /// Whether the ConfigMap or Secret exists for a Kustomization to substitute from: applied
    /// by the build, or (a Secret) created at runtime from an object of it.
    fn holds(&self, kind: &str, namespace: &str, name: &str) -> bool {
        self.find(kind, namespace, name).is_some()
            || (kind == "Secret" && self.runtime_secret(namespace, name).is_some())
    }
}

/// The variables of one Kustomization and what was met reading them.
#[derive(Debug, Clone, Default)]
pub struct Collected {
    pub vars: Vars,
    /// Warnings and errors, pointing at the `substituteFrom` entry.
    pub problems: Vec<Diagnostic>,
    /// Secrets created at runtime whose keys cannot all be known here (an ExternalSecret's
    /// `dataFrom`): a variable nothing defines may come from them.
    pub open: Vec<RuntimeSecret>,
}

impl Collected {
    /// Whether a required source is missing, which fails the whole substitution in Flux: that
    /// one error, not one more per variable it would have defined (mthorley/k8s-gitops's
    /// Secret cluster-vars, created outside the repository).
    pub fn source_missing(&self) -> bool {
        self.problems
            .iter()
            .any(|d| d.code == Code::SubstituteSourceMissing)
    }
}

/// The error of `ks`'s spec.path that still holds `${...}` after its parent's build, `chain`
/// ending with `ks`. Where each variable has a default (`${MODE:=false}`), a postBuild would
/// have given it a value, so the parent has none (sulibot/home-ops:
/// `app-${CNPG_RECOVERY_MODE:=false}` under a parent without postBuild); otherwise either may
/// be the cause.
pub(crate) fn unsubstituted_path(
    chain: &[String],
    ks: &FluxKustomization,
    raw_path: &str,
) -> Diagnostic {
    let refs = crate::varsub::references(raw_path).unwrap_or_default();
    let defaulted = !refs.is_empty() && refs.iter().all(|r| r.has_default);
    // Before the Kustomization in its chain: its parent, or the entry.
    let parent = match chain.len() {
        n if n >= 2 && !chain[n - 2].starts_with("entry ") => {
            format!("Kustomization {}", chain[n - 2])
        }
        _ => "the parent Kustomization".to_string(),
    };
    let (why, help) = match defaulted {
        true => (
            format!("{parent} has no postBuild, and a default applies only where substitution runs"),
            format!("give {parent} a postBuild (its defaults then apply), or write the path without a variable"),
        ),
        false => (
            format!("{parent} has no postBuild, or the variable is not defined"),
            "define the variable in the parent's postBuild.substitute or substituteFrom, or give it a default: `${VAR:=value}`".to_string(),
        ),
    };
    Diagnostic::error(
        Code::PathUnsubstituted,
        format!("spec.path `{raw_path}` holds a variable nothing substituted: {why}"),
    )
    .at(ks.object.node_at(&["spec", "path"]))
    .with_help(help)
}

/// The variables `ks` substitutes with, and the warnings and errors met reading them.
/// SOPS-encrypted Secrets are decrypted with `keys` when given; otherwise their values are
/// placeholders, with a warning. So are those of Secrets created at runtime.
pub fn collect_vars(
    ks: &FluxKustomization,
    objects: &dyn ObjectLookup,
    keys: Option<&AgeKeys>,
) -> Collected {
    let mut vars = Vars::new();
    let mut problems = Vec::new();
    let mut open = Vec::new();
    let Some(post) = &ks.post_build else {
        return Collected::default();
    };
    for (i, reference) in post.substitute_from.iter().enumerate() {
        let at = ks
            .object
            .node_at(&["spec", "postBuild", "substituteFrom"])
            .and_then(|n| n.as_sequence().and_then(|items| items.get(i)).or(Some(n)));
        if reference.kind != "ConfigMap" && reference.kind != "Secret" {
            problems.push(
                Diagnostic::error(
                    Code::InvalidSpec,
                    format!(
                        "substituteFrom kind '{}' is not supported: it must be ConfigMap or Secret",
                        reference.kind
                    ),
                )
                .at(at),
            );
            continue;
        }
        let Some(object) = objects.find(&reference.kind, &ks.namespace, &reference.name) else {
            let runtime = (reference.kind == "Secret")
                .then(|| objects.runtime_secret(&ks.namespace, &reference.name))
                .flatten();
            if let Some(secret) = runtime {
                problems.push(
                    Diagnostic::warning(
                        Code::SubstituteSourceAssumed,
                        format!(
                            "Secret {}/{} is created at runtime by {}: its values are substituted as placeholders",
                            ks.namespace, reference.name, secret.producer
                        ),
                    )
                    .at(at),
                );
                for key in &secret.keys {
                    vars.insert(key.clone(), secret.placeholder(key));
                }
                if secret.open {
                    open.push(secret.clone());
                }
                continue;
            }
            if !reference.optional {
                problems.push(
                    Diagnostic::error(Code::SubstituteSourceMissing, format!(
                        "substitute from '{}/{}' error: {} \"{}\" not found in namespace {}: no Kustomization of this cluster produces it",
                        reference.kind,
                        reference.name,
                        reference.kind.to_lowercase() + "s",
                        reference.name,
                        ks.namespace
                    ))
                    .at(at)
                    .with_help("add it to a Kustomization this one depends on, or mark the reference `optional: true`"),
                );
            }
            continue;
        };
        for (key, value) in data_of(object, keys, &mut problems) {
            vars.insert(key, value.replace('\n', ""));
        }
    }
    for (key, value) in &post.substitute {
        vars.insert(key.clone(), value.replace('\n', ""));
    }
    Collected {
        vars,
        problems,
        open,
    }
}

/// Placeholders for the variables `objects` use that nothing defines, when a Secret created at
/// runtime may define them (`collected.open`); one warning names them and the Secret.
pub fn assume_open_vars(collected: &mut Collected, objects: &[Object]) {
    let Some(secret) = collected.open.first().cloned() else {
        return;
    };
    let mut assumed = std::collections::BTreeSet::new();
    for object in objects.iter().filter(|o| !is_disabled(&o.value)) {
        let text = plumb_yaml::write_document(&object.value);
        let Ok(refs) = varsub::references(&text) else {
            continue;
        };
        for r in refs {
            if !r.has_default && !collected.vars.contains_key(&r.name) {
                assumed.insert(r.name);
            }
        }
    }
    if assumed.is_empty() {
        return;
    }
    for name in &assumed {
        collected
            .vars
            .insert(name.clone(), secret.placeholder(name));
    }
    let names: Vec<&str> = assumed.iter().map(String::as_str).collect();
    collected.problems.push(Diagnostic::warning(
        Code::SubstituteSourceAssumed,
        format!(
            "{} defined by no substituteFrom source: taken to come from Secret {}, whose keys {} decides at runtime (placeholders substituted)",
            names.join(", "),
            secret.name,
            secret.producer
        ),
    ));
}

/// The string data of a ConfigMap (`data`) or Secret (`data` decoded, `stringData` over it,
/// as the API server merges them). Values of an encrypted Secret are placeholders.
pub(crate) fn data_of(
    object: &Object,
    keys: Option<&AgeKeys>,
    problems: &mut Vec<Diagnostic>,
) -> Vec<(String, String)> {
    // Borrowed: one Secret is read by every Kustomization that substitutes from it.
    let map = |key: &str| {
        object
            .value
            .get(key)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
    };
    if object.kind() == "ConfigMap" {
        return map("data")
            .map(|(k, v)| (k.clone(), crate::model::scalar_text(v)))
            .collect();
    }
    let mut out = BTreeMap::new();
    let node = object
        .origin
        .clone()
        .unwrap_or_else(|| std::sync::Arc::new(plumb_yaml::from_json(&object.value)));
    if crate::sops::is_encrypted(&node) {
        let who = format!("Secret {}/{}", object.namespace_or_default(), object.name());
        let decrypted = match keys {
            Some(keys) => match crate::sops::decrypt_document(&node, keys) {
                Ok(doc) => plumb_yaml::to_json(&doc).ok(),
                Err(e) => {
                    problems.push(
                        Diagnostic::warning(
                            Code::SecretDecryptFailed,
                            format!("{who} cannot be decrypted: {e}"),
                        )
                        .at(object.node_at(&["sops"])),
                    );
                    None
                }
            },
            None => {
                problems.push(
                    Diagnostic::warning(Code::SecretUndecrypted, format!(
                        "{who} is SOPS-encrypted and no age key is given: its values are substituted as placeholders"
                    ))
                    .at(object.node_at(&["sops"]))
                    .with_help("set SOPS_AGE_KEY_FILE to an age key that decrypts it"),
                );
                None
            }
        };
        let Some(plain) = decrypted else {
            for (key, _) in map("data").chain(map("stringData")) {
                out.insert(key.clone(), crate::sops::placeholder(key));
            }
            return out.into_iter().collect();
        };
        let plain = Object {
            value: plain,
            origin: None,
        };
        return data_of(&plain, None, problems);
    }
    for (k, v) in map("data") {
        let text = crate::model::scalar_text(v);
        match base64::engine::general_purpose::STANDARD.decode(text.as_bytes()) {
            Ok(bytes) => {
                out.insert(k.clone(), String::from_utf8_lossy(&bytes).into_owned());
            }
            Err(e) => problems.push(
                Diagnostic::error(
                    Code::InvalidSecret,
                    format!(
                    "Secret {}/{} data.{k} is not valid base64 ({e}): the API server refuses it",
                    object.namespace_or_default(),
                    object.name()
                ),
                )
                .at(object.node_at(&["data", k])),
            ),
        }
    }
    for (k, v) in map("stringData") {
        out.insert(k.clone(), crate::model::scalar_text(v));
    }
    out.into_iter().collect()
}

/// Whether an object opts out with the `substitute: disabled` label or annotation.
pub fn is_disabled(value: &Value) -> bool {
    // Asked of every object of every Kustomization that substitutes: its metadata found once.
    let Some(meta) = value.get("metadata") else {
        return false;
    };
    ["labels", "annotations"].iter().any(|field| {
        meta.get(field)
            .and_then(|m| m.get(SUBSTITUTE_KEY))
            .and_then(Value::as_str)
            == Some("disabled")
    })
}

/// Why an object could not be substituted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A variable name Flux refuses (it refuses the whole substitution).
    InvalidName(String),
    /// envsubst failed; the offset is in the rendered text.
    Subst(SubstError, String),
    /// The substituted text is not YAML any more.
    Yaml(String),
}

/// Substitutes one object. `None` when it stays as it is: Flux leaves it (opted out, or no
/// variable and no `substituteStrategy: Always`), or substituting changes nothing.
pub fn substitute_object(
    value: &Value,
    vars: &Vars,
    post: &PostBuild,
    mode: Mode,
) -> Result<Option<Value>, Failure> {
    // A bad name is refused unless the object opted out (no variables, no bad name).
    if let Some(bad) = vars.keys().find(|k| !varsub::is_valid_var_name(k)) {
        if !is_disabled(value) {
            return Err(Failure::InvalidName(bad.clone()));
        }
    }
    let mut out = value.clone();
    Ok(substitute_in_place(&mut out, vars, post, mode)?.then_some(out))
}

/// [`substitute_object`] on the object itself, with variables whose names are known to be
/// valid (checked once for all the objects of a Kustomization, not for each): whether it
/// changed. Most objects that change do so string by string, and are changed where they are,
/// not copied.
pub(crate) fn substitute_in_place(
    value: &mut Value,
    vars: &Vars,
    post: &PostBuild,
    mode: Mode,
) -> Result<bool, Failure> {
    if is_disabled(value) || (vars.is_empty() && !post.always) {
        return Ok(false);
    }
    // Text without a `$` substitutes to itself, and most strings with one substitute in
    // place: only the rest is written out and read back.
    let mut changes = Vec::new();
    match strings_in_place(value, vars, mode, &mut changes) {
        Some(()) if changes.iter().all(Option::is_none) => Ok(false),
        Some(()) => {
            put_in_place(value, &mut changes.into_iter());
            put_in_written_order(value);
            Ok(true)
        }
        None => match through_text(value, vars, mode)? {
            Some(out) => {
                *value = out;
                Ok(true)
            }
            None => Ok(false),
        },
    }
}

/// Substitution as kustomize-controller does it: the object written out as YAML, its text
/// substituted, and read back.
/// `None` when the text substitutes to itself.
fn through_text(value: &Value, vars: &Vars, mode: Mode) -> Result<Option<Value>, Failure> {
    let text = plumb_yaml::write_document(value);
    let out = varsub::substitute(&text, vars, mode).map_err(|e| Failure::Subst(e, text.clone()))?;
    if out == text {
        return Ok(None);
    }
    yaml_json::yaml_to_json(&out)
        .map(Some)
        .map_err(|e| Failure::Yaml(e.to_string()))
}

/// What substituting an object string by string gives, where that is the same as substituting
/// its text.
enum InPlace {
    /// No string changes: the text would not either.
    Unchanged,
    /// The object as reading the substituted text back would give it.
    Changed(Value),
    /// A string the shortcut cannot vouch for: substitute the whole text, as Flux does.
    ThroughText,
}

/// Substitutes each string of `value` that holds a `$` on its own, when that is exactly what
/// substituting the object's text and reading it back does: a string with no `${` or `$$`
/// (its text substitutes to itself), a value written plain on one line whose result reads back
/// as one plain scalar there (its type is that scalar's: an unquoted `${REPLICAS}` that became
/// `3` is a number), and a literal block whose lines substitute one by one into a literal
/// block with the same header. Anything else (a `$` in a key, a quoted or folded string, a
/// value with YAML syntax, an error to report) goes through the text.
#[cfg(test)]
fn in_place(value: &Value, vars: &Vars, mode: Mode) -> InPlace {
    let mut changes = Vec::new();
    if strings_in_place(value, vars, mode, &mut changes).is_none() {
        return InPlace::ThroughText;
    }
    if changes.iter().all(Option::is_none) {
        return InPlace::Unchanged;
    }
    let mut out = value.clone();
    put_in_place(&mut out, &mut changes.into_iter());
    InPlace::Changed(out)
}

/// [`in_place`]'s reading: what each string of `value` holding a `$` becomes (`None`: itself),
/// in the order of a walk of `value`; `None` when one of them must go through the text.
fn strings_in_place(
    value: &Value,
    vars: &Vars,
    mode: Mode,
    changes: &mut Vec<Option<Value>>,
) -> Option<()> {
    match value {
        Value::String(s) if has_dollar(s) => match in_place_string(s, vars, mode) {
            InPlace::Unchanged => changes.push(None),
            InPlace::Changed(new) => changes.push(Some(new)),
            InPlace::ThroughText => return None,
        },
        Value::Array(items) => {
            for item in items {
                strings_in_place(item, vars, mode, changes)?;
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                if has_dollar(key) {
                    return None;
                }
                strings_in_place(item, vars, mode, changes)?;
            }
        }
        _ => {}
    }
    Some(())
}

/// Whether `s` holds a `$`: asked of every string and key of every object substituted, most
/// of them a few bytes long, for which a byte search is cheaper than `str::contains(char)`.
fn has_dollar(s: &str) -> bool {
    s.as_bytes().contains(&b'$')
}

/// [`in_place`]'s writing: puts `changes`, from [`strings_in_place`] over the same value, in
/// place.
fn put_in_place(value: &mut Value, changes: &mut impl Iterator<Item = Option<Value>>) {
    match value {
        Value::String(s) if has_dollar(s) => {
            if let Some(Some(new)) = changes.next() {
                *value = new;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| put_in_place(i, changes)),
        Value::Object(map) => map.values_mut().for_each(|i| put_in_place(i, changes)),
        _ => {}
    }
}

/// One string's share of [`in_place`].
fn in_place_string(s: &str, vars: &Vars, mode: Mode) -> InPlace {
    // Only `${` and `$$` mean anything to substitution. Writing a string in any style inserts
    // only quotes, escapes, line breaks and spaces and removes nothing, so a string without
    // either has none in its text either: it substitutes to itself.
    if !s.contains("${") && !s.contains("$$") {
        return InPlace::Unchanged;
    }
    if plumb_yaml::emit::writes_plain_unbroken(s) {
        return in_place_plain(s, vars, mode);
    }
    match plumb_yaml::emit::literal_header(s) {
        Some(header) => in_place_literal(s, &header, vars, mode),
        None => InPlace::ThroughText,
    }
}

/// A string written plain on one line: its text is the string itself.
fn in_place_plain(s: &str, vars: &Vars, mode: Mode) -> InPlace {
    let Ok(out) = varsub::substitute(s, vars, mode) else {
        return InPlace::ThroughText;
    };
    if out == s {
        return InPlace::Unchanged;
    }
    if !plumb_yaml::emit::reads_as_plain(&out) {
        return InPlace::ThroughText;
    }
    match yaml_json::plain_scalar_json(&out) {
        Ok(read) => InPlace::Changed(read),
        Err(_) => InPlace::ThroughText,
    }
}

/// A string written as a literal block (`|`): its text is a header line, then each of its
/// lines indented. When every line substitutes on its own (no expression spans a line break)
/// and the result is a literal block with the same header, the substituted text is exactly
/// how the result is written, and reads back as it.
fn in_place_literal(s: &str, header: &str, vars: &Vars, mode: Mode) -> InPlace {
    // Other line breaks than `\n` are read back as `\n`: leave them to the text.
    let other_break = |t: &str| t.contains(['\r', '\u{85}', '\u{2028}', '\u{2029}']);
    if other_break(s) {
        return InPlace::ThroughText;
    }
    let mut out = String::with_capacity(s.len());
    for (i, line) in s.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if !line.contains('$') {
            out.push_str(line);
            continue;
        }
        match varsub::substitute(line, vars, mode) {
            Ok(substituted) => out.push_str(&substituted),
            Err(_) => return InPlace::ThroughText,
        }
    }
    if out == s {
        return InPlace::Unchanged;
    }
    if other_break(&out) || plumb_yaml::emit::literal_header(&out).as_deref() != Some(header) {
        return InPlace::ThroughText;
    }
    InPlace::Changed(Value::String(out))
}

/// `value` with every mapping's keys in the order the text lists them, as reading the text
/// back would give it.
#[cfg(test)]
fn in_written_order(mut value: Value) -> Value {
    put_in_written_order(&mut value);
    value
}

fn put_in_written_order(value: &mut Value) {
    match value {
        Value::Object(map) => {
            // A mapping already in order stays as it is: a stable sort moves nothing in a list
            // whose neighbours are in order (insertion sort up to 20 keys, one run past that).
            if !in_order(map) {
                if map.keys().all(|k| plumb_yaml::emit::key_orders_as_bytes(k)) {
                    // Sorted where it is: the map keeps its entries and their hashes.
                    map.sort_keys();
                } else {
                    sort_written_by_rebuilding(map);
                }
            }
            map.values_mut().for_each(put_in_written_order);
        }
        Value::Array(items) => items.iter_mut().for_each(put_in_written_order),
        _ => {}
    }
}

/// `map` in go-yaml's order, made anew: the keys' order found with [`plumb_yaml::emit::sort_written`]
/// and the entries put back in it.
fn sort_written_by_rebuilding(map: &mut serde_json::Map<String, Value>) {
    // Taken out of the map once, not removed key by key.
    let mut entries: Vec<Option<(String, Value)>> =
        std::mem::take(map).into_iter().map(Some).collect();
    // Room for every key at once, not grown key by key.
    *map = serde_json::Map::with_capacity(entries.len());
    let mut order: Vec<usize> = (0..entries.len()).collect();
    plumb_yaml::emit::sort_written(&mut order, |i| {
        entries[i].as_ref().map_or("", |(k, _)| k.as_str())
    });
    for i in order {
        if let Some((key, item)) = entries[i].take() {
            map.insert(key, item);
        }
    }
}

/// Whether each key of `map` is in go-yaml's order with the next.
fn in_order(map: &serde_json::Map<String, Value>) -> bool {
    let mut keys = map.keys();
    let Some(mut previous) = keys.next() else {
        return true;
    };
    for key in keys {
        if plumb_yaml::emit::natural_key_order(previous, key) == std::cmp::Ordering::Greater {
            return false;
        }
        previous = key;
    }
    true
}

/// A diagnostic for a failed substitution, pointing at the expression in the repository when
/// it can be found in the object's source text.
pub fn failure_diagnostic(object: &Object, failure: &Failure) -> Diagnostic {
    let what = format!("{}/{}", object.kind(), object.name());
    match failure {
        Failure::InvalidName(name) => Diagnostic::error(Code::SubstitutionFailed, format!(
            "post build failed for '{what}': '{name}' var name is invalid, must match '^[_[:alpha:]][_[:alpha:][:digit:]]*$'"
        ))
        .at(object.origin.as_deref()),
        Failure::Yaml(e) => Diagnostic::error(Code::SubstitutionFailed, format!(
            "post build failed for '{what}': the substituted text is not valid YAML: {e}"
        ))
        .at(object.origin.as_deref())
        .with_help("quote values that may contain YAML syntax"),
        Failure::Subst(e, rendered) => {
            let (needle, help) = match e {
                SubstError::VarNotSet { name, .. } => (
                    format!("${{{name}"),
                    Some(format!(
                        "define `{name}` in postBuild.substitute or substituteFrom, give it a default (`${{{name}:=value}}`), or build with --no-strict for controllers before Flux 2.9"
                    )),
                ),
                SubstError::Syntax { expression, .. } => (
                    rendered
                        .get(*expression..)
                        .map(|s| s.chars().take_while(|c| *c != '\n').take(12).collect())
                        .unwrap_or_default(),
                    Some("write `$${...}` for a literal `${...}` that Flux must not substitute".to_string()),
                ),
                SubstError::SplitCharacter { name, .. } => (format!("${{{name}"), None),
            };
            let reason = match e {
                SubstError::VarNotSet { name, .. } => {
                    format!("variable not set (strict mode): \"{name}\"")
                }
                other => other.to_string(),
            };
            let code = match e {
                SubstError::VarNotSet { .. } => Code::VariableNotSet,
                _ => Code::SubstitutionFailed,
            };
            let d = Diagnostic::error(code, format!(
                "post build failed for '{what}': variable substitution failed: {reason}"
            ));
            let d = match locate(object, &needle) {
                Some((file, line, column)) => d.at_line(&file, line, column),
                None => d.at(object.origin.as_deref()),
            };
            match help {
                Some(h) => d.with_help(h),
                None => d,
            }
        }
    }
}

fn locate(object: &Object, needle: &str) -> Option<(std::path::PathBuf, usize, usize)> {
    if needle.is_empty() {
        return None;
    }
    let span = object.origin.as_deref()?.span.as_ref()?;
    let idx = span.text().find(needle)?;
    let loc = span.file.location(span.start + idx);
    Some((span.file.path().to_path_buf(), loc.line, loc.column))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn post(always: bool) -> PostBuild {
        PostBuild {
            always,
            ..PostBuild::default()
        }
    }

    #[test]
    fn types_change_through_the_yaml_round_trip() {
        let obj = json!({"kind": "Deployment", "spec": {"replicas": "${replicas}", "x": "${empty}", "s": "$${literal}"}});
        let vars = Vars::from([("replicas".into(), "3".into()), ("empty".into(), "".into())]);
        let out = substitute_object(&obj, &vars, &post(false), Mode::Strict)
            .unwrap()
            .unwrap();
        assert_eq!(
            out["spec"],
            json!({"replicas": 3, "x": null, "s": "${literal}"})
        );
    }

    #[test]
    fn nothing_happens_without_vars_unless_always() {
        let obj = json!({"data": {"a": "${x:=d}", "b": "$${y}"}});
        assert_eq!(
            substitute_object(&obj, &Vars::new(), &post(false), Mode::Strict),
            Ok(None)
        );
        let out = substitute_object(&obj, &Vars::new(), &post(true), Mode::Strict)
            .unwrap()
            .unwrap();
        assert_eq!(out["data"], json!({"a": "d", "b": "${y}"}));
    }

    #[test]
    fn disabled_and_invalid_names() {
        let obj = json!({"metadata": {"annotations": {SUBSTITUTE_KEY: "disabled"}}, "data": {"a": "${x}"}});
        let vars = Vars::from([("x".into(), "1".into())]);
        assert_eq!(
            substitute_object(&obj, &vars, &post(false), Mode::Strict),
            Ok(None)
        );
        let bad = Vars::from([("a-b".into(), "1".into())]);
        assert_eq!(
            substitute_object(&json!({}), &bad, &post(false), Mode::Strict),
            Err(Failure::InvalidName("a-b".into()))
        );
    }

    #[test]
    fn strict_mode_refuses_a_missing_var() {
        let obj = json!({"data": {"a": "${missing}"}});
        let vars = Vars::from([("x".into(), "1".into())]);
        assert!(substitute_object(&obj, &vars, &post(false), Mode::Strict).is_err());
        let out = substitute_object(&obj, &vars, &post(false), Mode::Lenient)
            .unwrap()
            .unwrap();
        assert_eq!(out["data"]["a"], Value::Null);
    }

    /// The shortcut gives what the text gives, keys in the same order, or leaves it to the text.
    #[test]
    fn substituting_in_place_matches_the_text_route() {
        let vars = Vars::from([
            ("n".into(), "3".into()),
            ("yes".into(), "yes".into()),
            ("empty".into(), "".into()),
            ("host".into(), "app.example.com".into()),
            ("colon".into(), "a: b".into()),
            ("list".into(), "[a, b]".into()),
            ("hash".into(), "x #y".into()),
        ]);
        let cases = [
            (
                json!({"spec": {"replicas": "${n}", "z": 1, "a": [1, "${yes}"]}}),
                true,
            ),
            (
                json!({"data": {"host": "${host}", "e": "${empty}", "k": "v"}}),
                true,
            ),
            (
                json!({"b": {"y": "x", "a": "pre-${n}-post"}, "a": {"d": 1, "c": 2}}),
                true,
            ),
            (json!({"data": {"s": "$${literal}", "t": "${n:=4}"}}), true),
            (json!({"data": {"c": "${colon}"}}), false),
            (json!({"data": {"l": "${list}"}}), false),
            (json!({"data": {"h": "${hash}"}}), false),
            (json!({"data": {"${n}": "key"}}), false),
            (json!({"data": {"spaced": "a ${n} b"}}), false),
            // A literal block whose lines substitute one by one.
            (json!({"data": {"multi": "a: ${n}\nb: 2\n"}}), true),
            (json!({"data": {"multi": "a\n${empty}"}}), false),
            (json!({"data": {"quoted": "${n}: x"}}), false),
            (json!({"data": {"missing": "${nope}"}}), false),
        ];
        for (object, in_place_expected) in cases {
            let text = through_text(&object, &vars, Mode::Strict);
            match in_place(&object, &vars, Mode::Strict) {
                InPlace::ThroughText => assert!(!in_place_expected, "{object} went through text"),
                InPlace::Unchanged => {
                    assert!(in_place_expected, "{object}");
                    assert_eq!(text, Ok(None), "{object}");
                }
                InPlace::Changed(out) => {
                    assert!(in_place_expected, "{object}");
                    let out = in_written_order(out);
                    let text = text
                        .expect("the text route substitutes it")
                        .expect("and changes it");
                    assert_eq!(
                        serde_json::to_string(&out).unwrap(),
                        serde_json::to_string(&text).unwrap(),
                        "{object}"
                    );
                }
            }
        }
    }

    /// Keys whose go-yaml order is byte order are sorted in place; every set of keys, of those
    /// and of others, comes out as go-yaml's sort of them gives it.
    #[test]
    fn keys_sorted_in_place_come_out_in_go_yaml_order() {
        let pool = [
            "a", "B", "b", "ab", "aB", "a.b", "a-b", "a/b", "a_b", "a1", "a10", "a9", "_x", "{",
            "Z", "z", "é", "a01",
        ];
        for start in 0..pool.len() {
            for len in [2, 3, 5, 8] {
                let keys: Vec<&str> = (0..len)
                    .map(|i| pool[(start + i * 7) % pool.len()])
                    .collect();
                let mut map = serde_json::Map::new();
                for k in keys.iter().rev() {
                    map.insert(k.to_string(), json!({"y": 1, "x": 2}));
                }
                let written: Vec<&str> = map.keys().map(String::as_str).collect();
                let mut order: Vec<usize> = (0..written.len()).collect();
                plumb_yaml::emit::sort_written(&mut order, |i| written[i]);
                let expected = order
                    .iter()
                    .map(|&i| written[i])
                    .collect::<Vec<_>>()
                    .join(",");
                let out = in_written_order(Value::Object(map.clone()));
                let got: Vec<&str> = out
                    .as_object()
                    .unwrap()
                    .keys()
                    .map(String::as_str)
                    .collect();
                assert_eq!(got.join(","), expected, "{keys:?}");
                // Inside too, and every value kept with its key.
                for (k, v) in out.as_object().unwrap() {
                    assert_eq!(v, &json!({"x": 2, "y": 1}), "{k}");
                    assert_eq!(
                        v.as_object().unwrap().keys().next().map(String::as_str),
                        Some("x")
                    );
                    assert!(map.contains_key(k));
                }
            }
        }
    }

    /// Strings of up to three pieces (expressions, escapes, lone `$`, line breaks, spaces,
    /// YAML indicators), as a mapping value and as a sequence item, in both modes: substituting
    /// string by string gives what substituting the object's text and reading it back gives.
    #[test]
    fn string_by_string_agrees_with_the_text() {
        let pieces = [
            "${a}",
            "${e}",
            "${s}",
            "${h}",
            "${c}",
            "${t}",
            "${u:=d f}",
            "${missing}",
            "$x",
            "$$",
            "$${a}",
            "x",
            " ",
            "#",
            ": ",
            "\n",
            "\t",
            "\n\n",
            "'",
            "-",
        ];
        let vars = Vars::from([
            ("a".into(), "1".into()),
            ("e".into(), "".into()),
            ("s".into(), "  x".into()),
            ("h".into(), "# h".into()),
            ("c".into(), "key: v".into()),
            ("t".into(), "two words".into()),
        ]);
        let mut texts: Vec<String> = Vec::new();
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    texts.push(format!("{a}{b}{c}"));
                }
            }
        }
        let (mut fast, mut blocks) = (0, 0);
        for text in &texts {
            let obj = json!({"data": {"k": text}, "list": [text, "y"]});
            for mode in [Mode::Strict, Mode::Lenient] {
                let whole = through_text(&obj, &vars, mode);
                let by_string = substitute_object(&obj, &vars, &post(false), mode);
                assert_eq!(by_string, whole, "{text:?} ({mode:?})");
                if let InPlace::Changed(_) = in_place(&obj, &vars, mode) {
                    fast += 1;
                    blocks += usize::from(text.contains('\n'));
                }
            }
        }
        // Many change by the shortcut, literal blocks among them: the comparison is of it.
        assert!(
            fast > 3000 && blocks > 1000,
            "{fast} changed by the shortcut, {blocks} blocks"
        );
    }
}
