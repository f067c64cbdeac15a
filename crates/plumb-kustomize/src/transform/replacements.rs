//! `replacements:`: copy one field of one resource (or a literal `sourceValue`) into fields of
//! other resources. Targets are chosen by anchored regexes on group, version, kind, name and
//! namespace, narrowed by label and annotation selectors and `reject:`; field paths are dotted
//! (`spec.containers.[name=app].image`, `spec.ports.0.port`, `spec.containers.*.env`).
//!
//! The same engine serves the builtin `ReplacementTransformer` configured through
//! `transformers:`: read its `replacements:` with [`expand`] and run them with [`apply`].

use crate::build::ResourceList;
use crate::context::Context;
use crate::error::KustomizeError;
use crate::kustomization::Kustomization;
use crate::loader;
use crate::resource::{ResId, Resource};
use plumb_yaml::{Node, NodeKind, Resolved, Scalar, ScalarStyle};
use regex::Regex;
use std::path::Path;

/// The field a source or a target names when it names none.
const DEFAULT_FIELD_PATH: &str = "metadata.name";

/// Runs the kustomization's `replacements:` over `list`.
pub fn run(
    k: &Kustomization,
    list: &mut ResourceList,
    ctx: &Context,
) -> Result<(), KustomizeError> {
    let Some(field) = k.field("replacements") else {
        return Ok(());
    };
    let replacements = expand(field, k.dir(), ctx)?;
    apply(&replacements, list, ctx)
}

/// The replacements of a `replacements:` list, with `path:` entries read from their files
/// (relative to `dir`, under the load restrictor).
pub fn expand(entries: &Node, dir: &Path, ctx: &Context) -> Result<Vec<Node>, KustomizeError> {
    if entries.is_null() {
        return Ok(Vec::new());
    }
    let Some(items) = entries.as_sequence() else {
        return Err(KustomizeError::Other(format!(
            "replacements must be a list{}",
            at(entries)
        )));
    };
    let mut out = Vec::new();
    for item in items {
        let Some(path) = item.str_at(&["path"]).filter(|p| !p.is_empty()) else {
            out.push(item.clone());
            continue;
        };
        if item.get("source").is_some() || item.get("targets").is_some() {
            return Err(KustomizeError::Other(format!(
                "cannot specify both path and inline replacement{}",
                at(item)
            )));
        }
        let file = loader::clean(&dir.join(path));
        loader::check_restrictor(ctx.options.load_restrictor, dir, &file)?;
        let text = ctx.options.fs.read_text(&file)?;
        let doc = plumb_yaml::parse_documents(&file, &text)?
            .into_iter()
            .next()
            .unwrap_or_else(Node::null);
        match &doc.kind {
            NodeKind::Sequence(list) => out.extend(list.iter().cloned()),
            NodeKind::Mapping(_) => out.push(doc),
            _ => {
                let kind = if doc.is_null() { "invalid" } else { "string" };
                return Err(KustomizeError::Other(format!(
                    "unsupported replacement type encountered within replacement path: {kind} in {}",
                    file.display()
                )));
            }
        }
    }
    Ok(out)
}

/// Applies replacements, in order, to the resources of `list`.
pub fn apply(
    replacements: &[Node],
    list: &mut ResourceList,
    ctx: &Context,
) -> Result<(), KustomizeError> {
    for node in replacements {
        let replacement = Replacement::parse(node)?;
        let value = replacement.value(&list.resources, ctx)?;
        for target in &replacement.targets {
            target.apply(&mut list.resources, &value)?;
        }
    }
    Ok(())
}

/// ` at file:line` for messages about a node, when its position is known.
fn at(node: &Node) -> String {
    node.span
        .as_ref()
        .map(|s| {
            let l = s.location();
            format!(" at {}:{}:{}", s.file.path().display(), l.line, l.column)
        })
        .unwrap_or_default()
}

fn text(node: &Node, key: &str) -> String {
    node.str_at(&[key]).unwrap_or("").to_string()
}

/// `delimiter`, `index` and `create` of a source or target.
#[derive(Debug, Default)]
struct FieldOptions {
    delimiter: String,
    index: i64,
    create: bool,
}

impl FieldOptions {
    fn parse(node: Option<&Node>) -> Result<FieldOptions, KustomizeError> {
        let Some(node) = node.filter(|n| !n.is_null()) else {
            return Ok(FieldOptions::default());
        };
        let index = match node.get("index").and_then(Node::scalar_value) {
            None => 0,
            Some(v) => v.parse().map_err(|_| {
                KustomizeError::Other(format!(
                    "replacement options.index {v:?} is not an integer{}",
                    at(node)
                ))
            })?,
        };
        Ok(FieldOptions {
            delimiter: text(node, "delimiter"),
            index,
            create: matches!(
                node.get("create").and_then(Node::scalar_value),
                Some("true" | "True" | "TRUE")
            ),
        })
    }

    /// kustomize's rendering of options inside a selector's description.
    fn describe(&self) -> String {
        if self.delimiter.is_empty() && !self.create {
            return String::new();
        }
        format!("{}({}), create={}", self.delimiter, self.index, self.create)
    }
}

/// Group, version, kind, name and namespace, each empty for "any".
#[derive(Debug, Default)]
struct IdSelector {
    group: String,
    version: String,
    kind: String,
    name: String,
    namespace: String,
}

impl IdSelector {
    fn parse(node: &Node) -> IdSelector {
        IdSelector {
            group: text(node, "group"),
            version: text(node, "version"),
            kind: text(node, "kind"),
            name: text(node, "name"),
            namespace: text(node, "namespace"),
        }
    }

    fn is_empty(&self) -> bool {
        [
            &self.group,
            &self.version,
            &self.kind,
            &self.name,
            &self.namespace,
        ]
        .iter()
        .all(|s| s.is_empty())
    }

    /// The selector written as kustomize writes a resource id.
    fn describe(&self) -> String {
        ResId {
            gvk: crate::resource::Gvk {
                group: self.group.as_str().into(),
                version: self.version.as_str().into(),
                kind: self.kind.as_str().into(),
            },
            namespace: self.namespace.as_str().into(),
            name: self.name.as_str().into(),
        }
        .to_string()
    }

    /// Exact matching, as a source is chosen: empty fields match anything, and namespaces
    /// compare by effective namespace (no namespace is `default`; cluster-scoped objects have
    /// none).
    fn selects_exactly(&self, id: &ResId, ctx: &Context) -> bool {
        let eq = |want: &str, have: &str| want.is_empty() || want == have;
        eq(&self.group, &id.gvk.group)
            && eq(&self.version, &id.gvk.version)
            && eq(&self.kind, &id.gvk.kind)
            && eq(&self.name, &id.name)
            && (self.namespace.is_empty() || {
                ctx.is_namespaced(&id.gvk.api_version(), &id.gvk.kind)
                    && effective_namespace(&self.namespace) == effective_namespace(&id.namespace)
            })
    }
}

/// A namespace for comparisons: no namespace is `default`.
fn effective_namespace(ns: &str) -> &str {
    if ns.is_empty() {
        "default"
    } else {
        ns
    }
}

/// An [`IdSelector`] whose fields are regexes matched against the whole value.
#[derive(Debug)]
struct IdPattern {
    empty: bool,
    fields: [Option<Regex>; 5],
}

impl IdPattern {
    fn compile(sel: &IdSelector) -> Result<IdPattern, KustomizeError> {
        let re = |s: &str| -> Result<Option<Regex>, KustomizeError> {
            if s.is_empty() {
                return Ok(None);
            }
            crate::pattern::compile_anchored(s)
                .map(Some)
                .map_err(|e| KustomizeError::Other(format!("error creating target selector: {e}")))
        };
        Ok(IdPattern {
            empty: sel.is_empty(),
            fields: [
                re(&sel.group)?,
                re(&sel.version)?,
                re(&sel.kind)?,
                re(&sel.name)?,
                re(&sel.namespace)?,
            ],
        })
    }

    fn matches(&self, id: &ResId) -> bool {
        let values = [
            &id.gvk.group,
            &id.gvk.version,
            &id.gvk.kind,
            &id.name,
            &id.namespace,
        ];
        self.fields
            .iter()
            .zip(values)
            .all(|(re, v)| re.as_ref().is_none_or(|re| re.is_match(v)))
    }
}

/// A `select:` or `reject:` entry.
#[derive(Debug)]
struct Selector {
    id: IdPattern,
    labels: String,
    annotations: String,
}

impl Selector {
    fn parse(node: &Node) -> Result<Selector, KustomizeError> {
        Ok(Selector {
            id: IdPattern::compile(&IdSelector::parse(node))?,
            labels: text(node, "labelSelector"),
            annotations: text(node, "annotationSelector"),
        })
    }

    fn has_metadata_selector(&self) -> bool {
        !self.labels.is_empty() || !self.annotations.is_empty()
    }

    fn matches_metadata(&self, r: &Resource) -> Result<bool, KustomizeError> {
        Ok(
            matches_map_selector(&self.labels, r.node.get_path(&["metadata", "labels"]))?
                && matches_map_selector(
                    &self.annotations,
                    r.node.get_path(&["metadata", "annotations"]),
                )?,
        )
    }
}

struct Source {
    id: IdSelector,
    field_path: String,
    options: FieldOptions,
}

impl Source {
    fn describe(&self) -> String {
        let mut parts = vec![self.id.describe()];
        if !self.field_path.is_empty() {
            parts.push(self.field_path.clone());
        }
        let opts = self.options.describe();
        if !opts.is_empty() {
            parts.push(opts);
        }
        parts.join(":")
    }
}

struct Target {
    select: Selector,
    reject: Vec<Selector>,
    field_paths: Vec<String>,
    options: FieldOptions,
}

struct Replacement {
    source: Option<Source>,
    source_value: Option<String>,
    targets: Vec<Target>,
}

impl Replacement {
    fn parse(node: &Node) -> Result<Replacement, KustomizeError> {
        let source = node.get("source").filter(|n| !n.is_null());
        let source_value = node.get("sourceValue").filter(|n| !n.is_null());
        let targets = node.get("targets").filter(|n| !n.is_null());
        let (Some(targets), true) = (targets, source.is_some() || source_value.is_some()) else {
            return Err(KustomizeError::Other(
                "replacements must specify a source and at least one target".into(),
            ));
        };
        let targets = targets
            .as_sequence()
            .ok_or_else(|| {
                KustomizeError::Other(format!("replacement targets must be a list{}", at(targets)))
            })?
            .iter()
            .map(Target::parse)
            .collect::<Result<_, _>>()?;
        Ok(Replacement {
            source: source
                .map(|s| -> Result<Source, KustomizeError> {
                    Ok(Source {
                        id: IdSelector::parse(s),
                        field_path: text(s, "fieldPath"),
                        options: FieldOptions::parse(s.get("options"))?,
                    })
                })
                .transpose()?,
            source_value: source_value.map(|v| v.scalar_value().unwrap_or("").to_string()),
            targets,
        })
    }

    /// The value to copy: the literal `sourceValue`, or the source's field (refined by its
    /// delimiter and index).
    fn value(&self, resources: &[Resource], ctx: &Context) -> Result<Node, KustomizeError> {
        let source = match (&self.source, &self.source_value) {
            (Some(_), Some(_)) => {
                return Err(KustomizeError::Other(
                    "value and resource selectors are mutually exclusive".into(),
                ))
            }
            (None, Some(v)) => return Ok(Node::plain(v.as_str())),
            (Some(s), None) => s,
            (None, None) => {
                return Err(KustomizeError::Other(
                    "replacements must specify a source and at least one target".into(),
                ))
            }
        };
        let mut found: Option<&Resource> = None;
        for r in resources {
            if ids_of(r)
                .iter()
                .any(|id| source.id.selects_exactly(id, ctx))
            {
                if found.is_some() {
                    return Err(KustomizeError::Other(format!(
                        "multiple matches for selector {}",
                        source.describe()
                    )));
                }
                found = Some(r);
            }
        }
        let Some(r) = found else {
            return Err(KustomizeError::Other(format!(
                "nothing selected by {}",
                source.describe()
            )));
        };
        let field_path = if source.field_path.is_empty() {
            DEFAULT_FIELD_PATH
        } else {
            &source.field_path
        };
        let value = lookup(&r.node, &split_field_path(field_path))
            .filter(|n| !n.is_nil_or_empty())
            .ok_or_else(|| {
                KustomizeError::Other(format!(
                    "fieldPath `{field_path}` is missing for replacement source {}",
                    source.id.describe()
                ))
            })?;
        refine(&source.options, value)
    }
}

impl Target {
    fn parse(node: &Node) -> Result<Target, KustomizeError> {
        let select = node.get("select").filter(|n| !n.is_null()).ok_or_else(|| {
            KustomizeError::Other("target must specify resources to select".into())
        })?;
        let reject = match node.get("reject").and_then(Node::as_sequence) {
            Some(items) => items
                .iter()
                .map(Selector::parse)
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        let mut field_paths: Vec<String> = node
            .get("fieldPaths")
            .and_then(Node::as_sequence)
            .map(|v| {
                v.iter()
                    .filter_map(|n| n.scalar_value().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        if field_paths.is_empty() {
            field_paths.push(DEFAULT_FIELD_PATH.to_string());
        }
        Ok(Target {
            select: Selector::parse(select)?,
            reject,
            field_paths,
            options: FieldOptions::parse(node.get("options"))?,
        })
    }

    fn selects(&self, r: &Resource) -> Result<bool, KustomizeError> {
        if !self.select.matches_metadata(r)? {
            return Ok(false);
        }
        for reject in self.reject.iter().filter(|s| s.has_metadata_selector()) {
            if reject.matches_metadata(r)? {
                return Ok(false);
            }
        }
        let ids = ids_of(r);
        let rejected = self
            .reject
            .iter()
            .filter(|s| !s.id.empty)
            .any(|s| ids.iter().any(|id| s.id.matches(id)));
        Ok(!rejected && ids.iter().any(|id| self.select.id.matches(id)))
    }

    fn apply(&self, resources: &mut [Resource], value: &Node) -> Result<(), KustomizeError> {
        for r in resources.iter_mut() {
            if !self.selects(r)? {
                continue;
            }
            for fp in &self.field_paths {
                let create = self.options.create.then(|| shape(value));
                let path = split_field_path(fp);
                let mut found = 0usize;
                let result = walk(&mut r.node, &path, create, &mut |field| {
                    found += 1;
                    set_field(&self.options, field, value)
                });
                let wording = if create.is_some() {
                    "unable to find or create field"
                } else {
                    "unable to find field"
                };
                match result {
                    Err(WalkError::Path(e)) => {
                        return Err(KustomizeError::Other(format!(
                            "{wording} {fp:?} in replacement target: {e}"
                        )))
                    }
                    Err(WalkError::Set(e)) => return Err(e),
                    Ok(()) if found == 0 => {
                        return Err(KustomizeError::Other(format!(
                            "{wording} {fp:?} in replacement target"
                        )))
                    }
                    Ok(()) => {}
                }
            }
        }
        Ok(())
    }
}

/// The identities a resource answers to: its current one and every one it had before.
fn ids_of(r: &Resource) -> Vec<ResId> {
    let mut ids = vec![r.id()];
    for id in r.previous_ids.iter().rev() {
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    }
    ids
}

/// Splits a dotted field path as kustomize splits a replacement's: on `.`, a `\.` kept as
/// a dot; a part from `[` to `]` with dots inside kept whole when it selects a list element
/// (`[name=a.b]`), and else a mapping key with its brackets taken off (`data.[config.toml]`
/// is key `config.toml`). A path may start with its delimiter.
pub fn split_field_path(path: &str) -> Vec<String> {
    let mut pieces: Vec<String> = Vec::new();
    for piece in path.split('.') {
        match pieces.last_mut() {
            Some(last) if last.ends_with('\\') => {
                last.pop();
                last.push('.');
                last.push_str(piece);
            }
            _ => pieces.push(piece.to_string()),
        }
    }
    if pieces.len() > 1 && pieces[0].is_empty() {
        pieces.remove(0);
    }
    let mut out = Vec::with_capacity(pieces.len());
    let mut pieces = pieces.into_iter();
    while let Some(piece) = pieces.next() {
        if !piece.starts_with('[') || piece.ends_with(']') {
            out.push(piece);
            continue;
        }
        let mut joined = piece;
        for next in pieces.by_ref() {
            joined.push('.');
            joined.push_str(&next);
            if next.ends_with(']') {
                break;
            }
        }
        if joined.contains('=') {
            out.push(joined);
        } else {
            out.push(joined.trim_matches(['[', ']']).to_string());
        }
    }
    out
}

fn is_list_selector(part: &str) -> bool {
    part.starts_with('[') && part.ends_with(']')
}

/// `[name=value]` as its field and value (`[=value]` selects scalar elements).
fn split_list_selector(part: &str) -> Option<(&str, &str)> {
    part.strip_prefix('[')?.strip_suffix(']')?.split_once('=')
}

fn as_index(part: &str) -> Option<usize> {
    if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    part.parse().ok()
}

/// Reads a source field: mapping keys, list indexes (`-` is the last element) and `[k=v]`
/// elements matched exactly. A missing field is `None`.
fn lookup<'a>(node: &'a Node, path: &[String]) -> Option<&'a Node> {
    let mut cur = node;
    for part in path.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        if cur.is_null() {
            return None;
        }
        cur = if let Some(i) = as_index(part) {
            cur.as_sequence()?.get(i)?
        } else if part == "-" {
            cur.as_sequence()?.last()?
        } else if is_list_selector(part) {
            let (key, want) = split_list_selector(part)?;
            cur.as_sequence()?.iter().find(|el| {
                if key.is_empty() {
                    el.scalar_value() == Some(want)
                } else {
                    el.get(key).and_then(Node::scalar_value) == Some(want)
                }
            })?
        } else {
            cur.get(part)?
        };
    }
    Some(cur)
}

/// The source value after the source's `delimiter`/`index`.
fn refine(options: &FieldOptions, value: &Node) -> Result<Node, KustomizeError> {
    if options.delimiter.is_empty() {
        return Ok(value.clone());
    }
    let NodeKind::Scalar(s) = &value.kind else {
        return Err(KustomizeError::Other(
            "delimiter option can only be used with scalar nodes".into(),
        ));
    };
    let parts: Vec<&str> = s.value.split(options.delimiter.as_str()).collect();
    let part = usize::try_from(options.index)
        .ok()
        .and_then(|i| parts.get(i))
        .ok_or_else(|| {
            KustomizeError::Other(format!(
                "options.index {} is out of bounds for value {}",
                options.index, s.value
            ))
        })?;
    let mut out = value.clone();
    if let NodeKind::Scalar(s) = &mut out.kind {
        s.value = (*part).into();
    }
    Ok(out)
}

/// What to create at a missing leaf: a node of the value's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Scalar,
    Mapping,
    Sequence,
}

fn shape(node: &Node) -> Shape {
    match node.kind {
        NodeKind::Scalar(_) => Shape::Scalar,
        NodeKind::Mapping(_) => Shape::Mapping,
        NodeKind::Sequence(_) => Shape::Sequence,
    }
}

fn empty(shape: Shape) -> Node {
    match shape {
        // An untagged empty scalar: the value copied into it later decides its type.
        Shape::Scalar => Node::plain(""),
        Shape::Mapping => Node::mapping(),
        Shape::Sequence => Node::sequence(Vec::new()),
    }
}

/// The shape of a node created for `next` (the following path part), `leaf` at the end.
fn shape_for(next: Option<&String>, leaf: Shape) -> Shape {
    match next {
        None => leaf,
        Some(p) if is_list_selector(p) || as_index(p).is_some() => Shape::Sequence,
        Some(_) => Shape::Mapping,
    }
}

fn kind_name(node: &Node) -> &'static str {
    match node.kind {
        NodeKind::Scalar(_) => "ScalarNode",
        NodeKind::Mapping(_) => "MappingNode",
        NodeKind::Sequence(_) => "SequenceNode",
    }
}

enum WalkError {
    /// The path does not fit the document (wrong node kind, index out of range).
    Path(String),
    /// Setting a found field failed.
    Set(KustomizeError),
}

fn wrong_kind(expected: &str, node: &Node) -> WalkError {
    WalkError::Path(format!(
        "wrong node kind: expected {expected} but got {}",
        kind_name(node)
    ))
}

/// Calls `visit` on every node `path` reaches under `node`, creating missing fields and list
/// elements when `create` says of what shape the leaf is.
fn walk(
    node: &mut Node,
    path: &[String],
    create: Option<Shape>,
    visit: &mut dyn FnMut(&mut Node) -> Result<(), KustomizeError>,
) -> Result<(), WalkError> {
    let Some((part, rest)) = path.split_first() else {
        return visit(node).map_err(WalkError::Set);
    };
    if let Some(idx) = as_index(part) {
        if node.is_null() {
            return Err(WalkError::Path(format!(
                "index {idx} specified but only 0 elements found"
            )));
        }
        let NodeKind::Sequence(items) = &mut node.kind else {
            return Err(wrong_kind("SequenceNode", node));
        };
        if let Some(leaf) = create.filter(|_| items.len() == idx) {
            items.push(empty(shape_for(rest.first(), leaf)));
        }
        let len = items.len();
        let Some(item) = items.get_mut(idx) else {
            return Err(WalkError::Path(format!(
                "index {idx} specified but only {len} elements found"
            )));
        };
        return walk(item, rest, create, visit);
    }
    if is_list_selector(part) {
        let Some((key, pattern)) = split_list_selector(part) else {
            return Err(WalkError::Path(
                "list path element must contain fieldName=fieldValue for element to match".into(),
            ));
        };
        let re = crate::pattern::compile(pattern).map_err(|e| WalkError::Path(e.to_string()))?;
        if node.is_null() {
            if create.is_none() {
                return Ok(());
            }
            *node = Node::sequence(Vec::new()).with_span(node.span.clone());
        }
        let NodeKind::Sequence(items) = &mut node.kind else {
            return Err(wrong_kind("SequenceNode", node));
        };
        let selected = |el: &Node| {
            let field = if key.is_empty() {
                Some(el)
            } else {
                el.get(key)
            };
            field
                .and_then(Node::scalar_value)
                .is_some_and(|v| re.is_match(v.trim()))
        };
        let mut matched = false;
        for el in items.iter_mut() {
            if selected(el) {
                matched = true;
                walk(el, rest, create, visit)?;
            }
        }
        if !matched && create.is_some() {
            let el = if key.is_empty() {
                Node::plain(pattern)
            } else {
                Node::new(NodeKind::Mapping(vec![(
                    Node::plain(key),
                    Node::plain(pattern),
                )]))
            };
            items.push(el);
            if let Some(el) = items.last_mut() {
                walk(el, rest, create, visit)?;
            }
        }
        return Ok(());
    }
    if part == "*" {
        if node.is_null() {
            return Ok(());
        }
        let NodeKind::Sequence(items) = &mut node.kind else {
            return Err(wrong_kind("SequenceNode", node));
        };
        for el in items.iter_mut() {
            walk(el, rest, create, visit)?;
        }
        return Ok(());
    }
    if node.is_null() {
        if create.is_none() {
            return Ok(());
        }
        *node = Node::mapping().with_span(node.span.clone());
    }
    if !node.is_mapping() {
        return Err(wrong_kind("MappingNode", node));
    }
    if node.get(part).is_none() {
        let Some(leaf) = create else {
            return Ok(());
        };
        node.set(part, empty(shape_for(rest.first(), leaf)));
    }
    match node.get_mut(part) {
        Some(child) => walk(child, rest, create, visit),
        None => Ok(()),
    }
}

/// Writes `value` into a target field. A scalar keeps its type and style and takes only the
/// value's text (so `"8080"` into `port: 80` gives `port: 8080`); other nodes are replaced.
fn set_field(
    options: &FieldOptions,
    target: &mut Node,
    value: &Node,
) -> Result<(), KustomizeError> {
    let mut value = value.clone();
    if !options.delimiter.is_empty() {
        let NodeKind::Scalar(t) = &target.kind else {
            return Err(KustomizeError::Other(
                "delimiter option can only be used with scalar nodes".into(),
            ));
        };
        let mut parts: Vec<&str> = t.value.split(options.delimiter.as_str()).collect();
        let v = scalar_text(&value);
        match usize::try_from(options.index) {
            Err(_) => parts.insert(0, &v),
            Ok(i) if i >= parts.len() => parts.push(&v),
            Ok(i) => parts[i] = &v,
        }
        let joined = parts.join(&options.delimiter);
        match &mut value.kind {
            NodeKind::Scalar(s) => s.value = joined.into(),
            _ => value = Node::plain(joined),
        }
    }
    // A scalar this step created (empty, plain, from no file) has no type yet.
    let fresh = target.span.is_none()
        && matches!(&target.kind, NodeKind::Scalar(t) if t.value.is_empty() && t.style == ScalarStyle::Plain);
    match &mut target.kind {
        NodeKind::Scalar(t) => {
            if t.tag.is_none() && !fresh {
                t.tag = Some(plumb_yaml::shared_tag(resolved_tag(t)));
            }
            t.value = scalar_text(&value).into();
        }
        _ => *target = value,
    }
    Ok(())
}

/// The text of a scalar; other nodes have none.
fn scalar_text(node: &Node) -> String {
    node.scalar_value().unwrap_or("").to_string()
}

/// The tag go-yaml gives a scalar when it reads it: a scalar keeps it when its text is
/// replaced, and a text the tag cannot hold fails when the result is written.
fn resolved_tag(s: &Scalar) -> &'static str {
    match plumb_yaml::resolve::resolve(s, plumb_yaml::Schema::Kustomize) {
        Ok(Resolved::Null) => "!!null",
        Ok(Resolved::Bool(_)) => "!!bool",
        Ok(Resolved::Int(_) | Resolved::Uint(_)) => "!!int",
        Ok(Resolved::Float(_)) => "!!float",
        Ok(Resolved::Timestamp(_)) => "!!timestamp",
        Ok(Resolved::Str(_)) | Err(_) => "!!str",
    }
}

/// Whether a label or annotation map satisfies a Kubernetes selector (`a=b,c!=d,e in (f,g),
/// !h`); the empty selector matches everything.
fn matches_map_selector(selector: &str, map: Option<&Node>) -> Result<bool, KustomizeError> {
    let selector = selector.trim();
    if selector.is_empty() {
        return Ok(true);
    }
    let get = |key: &str| map.and_then(|m| m.get(key)).and_then(Node::scalar_value);
    for req in split_requirements(selector) {
        let req = req.trim();
        let bad = || KustomizeError::Other(format!("unable to parse requirement: {req:?}"));
        let ok = if let Some(key) = req.strip_prefix('!') {
            get(key.trim()).is_none()
        } else if let Some((key, v)) = req.split_once("!=") {
            get(key.trim()) != Some(v.trim())
        } else if let Some((key, v)) = req.split_once("==").or_else(|| req.split_once('=')) {
            get(key.trim()) == Some(v.trim())
        } else if let Some((key, set)) = split_set(req, " notin ") {
            get(key).is_none_or(|v| !set.contains(&v))
        } else if let Some((key, set)) = split_set(req, " in ") {
            get(key).is_some_and(|v| set.contains(&v))
        } else if req
            .chars()
            .all(|c| c.is_alphanumeric() || "-_./".contains(c))
        {
            get(req).is_some()
        } else {
            return Err(bad());
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Splits a selector at the commas outside `( )`.
fn split_requirements(selector: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in selector.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&selector[start..]);
    out
}

/// `key in (a, b)` as the key and its values.
fn split_set<'a>(req: &'a str, op: &str) -> Option<(&'a str, Vec<&'a str>)> {
    let (key, rest) = req.split_once(op)?;
    let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some((key.trim(), inner.split(',').map(str::trim).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Node {
        plumb_yaml::parse_documents("t.yaml", text)
            .unwrap()
            .remove(0)
    }

    #[test]
    fn field_paths_keep_bracketed_dots() {
        assert_eq!(
            split_field_path("spec.containers.[name=a.b].image"),
            vec!["spec", "containers", "[name=a.b]", "image"]
        );
        // Apocrathia/homelab: a ConfigMap key with a dot, in brackets or escaped.
        assert_eq!(
            split_field_path("data.[config.toml]"),
            ["data", "config.toml"]
        );
        assert_eq!(
            split_field_path(r"data.config\.toml"),
            ["data", "config.toml"]
        );
        assert_eq!(split_field_path("spec.[a.b.c].d"), ["spec", "a.b.c", "d"]);
        assert_eq!(split_field_path("data.[key]"), ["data", "[key]"]);
        assert_eq!(split_field_path(".spec.x"), ["spec", "x"]);
    }

    #[test]
    fn scalar_targets_keep_their_type() {
        let mut n = doc("a: 1\nb: x\nc: \"q\"\n");
        let v = Node::string("5");
        for key in ["a", "b", "c"] {
            let t = n.get_mut(key).unwrap();
            set_field(&FieldOptions::default(), t, &v).unwrap();
        }
        let json = plumb_yaml::to_json(&n).unwrap();
        assert_eq!(json.to_string(), r#"{"a":5,"b":"5","c":"5"}"#);
    }

    #[test]
    fn delimiter_replaces_prefixes_or_appends() {
        let opts = |index| FieldOptions {
            delimiter: ".".into(),
            index,
            create: false,
        };
        for (index, want) in [(-1, "v.a.b"), (1, "a.v"), (5, "a.b.v")] {
            let mut t = Node::string("a.b");
            set_field(&opts(index), &mut t, &Node::string("v")).unwrap();
            assert_eq!(t.scalar_value(), Some(want));
        }
    }

    #[test]
    fn label_selectors() {
        let labels = doc("app: web\ntier: front\n");
        let m = |s| matches_map_selector(s, Some(&labels)).unwrap();
        assert!(m("app=web"));
        assert!(m("app==web,tier"));
        assert!(!m("app!=web"));
        assert!(m("tier in (front, back)"));
        assert!(!m("tier notin (front)"));
        assert!(m("!missing"));
        assert!(!m("missing"));
    }
}
