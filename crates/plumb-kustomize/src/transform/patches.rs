//! The patch transformers of a kustomization: `patchesStrategicMerge`, `patches` and
//! `patchesJson6902`, each run at its place in kustomize's transformer order.

use crate::build::ResourceList;
use crate::context::Context;
use crate::error::KustomizeError;
use crate::kustomization::{invalid, Kustomization};
use crate::loader;
use crate::patch::json6902::JsonPatch;
use crate::patch::selector::{effective_namespace, Selector, SelectorSpec};
use crate::patch::{error_at, strategic};
use crate::resource::{ResId, Resource};
use plumb_yaml::{Node, NodeKind, ScalarStyle, SourceFile};
use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// `patchesStrategicMerge`: file paths or inline YAML, each document a patch applied to the
/// resource with its identity.
pub fn patches_strategic_merge(
    k: &Kustomization,
    list: &mut ResourceList,
    ctx: &Context,
) -> Result<(), KustomizeError> {
    let entries = k.string_list("patchesStrategicMerge")?;
    if entries.is_empty() {
        return Ok(());
    }
    let mut patches = Vec::new();
    for entry in &entries {
        match inline_resources(entry) {
            Some(docs) => patches.extend(docs),
            None => {
                let (path, text) = read_patch(k, ctx, entry)?;
                patches.extend(resources_in(&path, &text)?);
            }
        }
    }
    if patches.is_empty() {
        return Err(KustomizeError::Other(format!(
            "patch appears to be empty; files=[{}], Patch=",
            entries.join(" ")
        )));
    }
    for patch in patches {
        let id = Resource::new(patch.clone()).id();
        let index = find_by_id(list, &id, ctx).map_err(KustomizeError::Other)?;
        let patch = normalize_patch(patch, &list.resources[index]);
        apply_smp_at(list, index, patch, SmpOptions::default(), ctx)?;
    }
    Ok(())
}

/// `patches`: each entry a strategic merge or JSON 6902 patch (told apart as kustomize does),
/// from `path` or inline `patch`, applied to its `target` or, for a strategic merge patch
/// without one, to the resource with the patch's identity.
pub fn patches(
    k: &Kustomization,
    list: &mut ResourceList,
    ctx: &Context,
) -> Result<(), KustomizeError> {
    let Some(items) = k.field("patches") else {
        return Ok(());
    };
    let Some(items) = items.as_sequence() else {
        return Err(invalid(
            &k.path,
            items,
            "field \"patches\" must be a list".into(),
        ));
    };
    for item in items {
        apply_patch_entry(k, list, ctx, item)?;
    }
    Ok(())
}

/// `patchesJson6902`: JSON 6902 patches (JSON or YAML) applied to every resource the target
/// selects.
pub fn patches_json6902(
    k: &Kustomization,
    list: &mut ResourceList,
    ctx: &Context,
) -> Result<(), KustomizeError> {
    let Some(items) = k.field("patchesJson6902") else {
        return Ok(());
    };
    let Some(items) = items.as_sequence() else {
        return Err(invalid(
            &k.path,
            items,
            "field \"patchesJson6902\" must be a list".into(),
        ));
    };
    for item in items {
        apply_json6902_entry(k, list, ctx, item, "patch")?;
    }
    Ok(())
}

/// Compiles the selector of `item`'s `target`; a pattern that does not compile is reported at
/// the target, with the field it is in.
fn target_selector(item: &Node, spec: &SelectorSpec) -> Result<Selector, KustomizeError> {
    Selector::new(spec).map_err(|e| match item.get("target") {
        Some(target) => error_at(target, format!("patch {e}")),
        None => e,
    })
}

/// One JSON 6902 patch with its `target` and `path` or inline operations under `inline_key`
/// (`patch` in a kustomization, `jsonOp` in a `PatchJson6902Transformer` configuration), read
/// relative to `k`'s directory.
pub(crate) fn apply_json6902_entry(
    k: &Kustomization,
    list: &mut ResourceList,
    ctx: &Context,
    item: &Node,
    inline_key: &str,
) -> Result<(), KustomizeError> {
    let spec = match item.get("target").filter(|t| !t.is_null()) {
        Some(t) => SelectorSpec::from_node(t)?,
        None => SelectorSpec::default(),
    };
    if spec.name.is_empty() {
        return Err(error_at(item, "must specify the target name"));
    }
    let path = item.str_at(&["path"]).unwrap_or("");
    let inline = item.str_at(&[inline_key]).unwrap_or("");
    let (label, text) = match (path.is_empty(), inline.is_empty()) {
        (true, true) => return Err(error_at(item, "empty file path and empty jsonOp")),
        (false, false) => {
            return Err(error_at(
                item,
                "must specify a file path or jsonOp, not both",
            ))
        }
        (false, true) => {
            let (file, text) = read_patch(k, ctx, path)?;
            if text.is_empty() {
                return Err(KustomizeError::Other(format!(
                    "patch file '{path}' empty seems to be empty"
                )));
            }
            (file.display().to_string(), text)
        }
        (true, false) => (k.path.display().to_string(), inline.to_string()),
    };
    let mut patch = JsonPatch::parse(&label, &text)
        .map_err(|e| KustomizeError::Other(format!("decoding {text}: {e}")))?;
    if path.is_empty() {
        patch = json_in_place(item, inline_key, patch);
    }
    if patch.operations.is_empty() {
        return Err(KustomizeError::Other(format!(
            "patch appears to be empty; file={path}, JsonOp={text}"
        )));
    }
    let selector = target_selector(item, &spec)?;
    for resource in &mut list.resources {
        if selector.matches(resource, ctx) {
            resource.node = patch
                .apply_to_node(&resource.node)
                .map_err(|e| with_file(&label, e))?;
        }
    }
    Ok(())
}
/// What a `patches` entry may allow a strategic merge patch to change.
#[derive(Debug, Clone, Copy, Default)]
struct SmpOptions {
    allow_name_change: bool,
    allow_kind_change: bool,
}

/// One `patches` entry (or `PatchTransformer` configuration): `path` or inline `patch`,
/// `target`, `options`, read relative to `k`'s directory.
pub(crate) fn apply_patch_entry(
    k: &Kustomization,
    list: &mut ResourceList,
    ctx: &Context,
    item: &Node,
) -> Result<(), KustomizeError> {
    let path = item.str_at(&["path"]).unwrap_or("");
    let inline = item.str_at(&["patch"]).unwrap_or("").trim();
    let shown = || {
        plumb_yaml::to_json(item)
            .map(|v| plumb_yaml::write_document(&v))
            .unwrap_or_default()
    };
    let (label, text) = match (path.is_empty(), inline.is_empty()) {
        (true, true) => {
            return Err(error_at(
                item,
                format!("must specify one of patch and path in\n{}", shown()),
            ))
        }
        (false, false) => {
            return Err(error_at(
                item,
                format!("patch and path can't be set at the same time\n{}", shown()),
            ))
        }
        (false, true) => {
            let (file, text) = read_patch(k, ctx, path)?;
            (file.display().to_string(), text)
        }
        (true, false) => (k.path.display().to_string(), inline.to_string()),
    };
    let options = SmpOptions {
        allow_name_change: option(item, "allowNameChange"),
        allow_kind_change: option(item, "allowKindChange"),
    };
    let target = match item.get("target").filter(|t| !t.is_null()) {
        Some(t) => Some(SelectorSpec::from_node(t)?),
        None => None,
    };
    let inline = path.is_empty();
    match &*classified(&label, &text, inline.then_some(item)) {
        Classified::Strategic(patches) => {
            let Some(spec) = target else {
                for patch in patches {
                    let patch = Resource::new(patch.clone());
                    let id = patch.id();
                    let index = find_by_id(list, &id, ctx).map_err(|e| {
                        KustomizeError::Other(format!(
                            "no resource matches strategic merge patch \"{id}\": {e}"
                        ))
                    })?;
                    apply_smp_at(list, index, patch.node, options, ctx)?;
                }
                return Ok(());
            };
            let selector = target_selector(item, &spec)?;
            let selected: Vec<ResId> = list
                .resources
                .iter()
                .filter(|r| selector.matches(r, ctx))
                .map(Resource::id)
                .collect();
            for patch in patches {
                if apply_smp_side_by_side(list, &selected, patch, options, ctx)? {
                    continue;
                }
                for id in &selected {
                    let Some(index) = list.resources.iter().position(|r| r.has_id(id)) else {
                        continue;
                    };
                    let patch = normalize_patch(patch.clone(), &list.resources[index]);
                    apply_smp_at(list, index, patch, options, ctx)?;
                }
            }
            Ok(())
        }
        Classified::Json(patch) => {
            let Some(spec) = target else {
                return Err(error_at(
                    item,
                    format!("must specify a target for patch {text}"),
                ));
            };
            let selector = target_selector(item, &spec)?;
            for resource in &mut list.resources {
                if !selector.matches(resource, ctx) {
                    continue;
                }
                let old = resource.id();
                resource.node = patch
                    .apply_to_node(&resource.node)
                    .map_err(|e| with_file(&label, e))?;
                record_rename(resource, old, true);
            }
            Ok(())
        }
        Classified::Neither => Err(error_at(
            item,
            format!(
                "unable to parse SM or JSON patch from [patch: {}]",
                serde_json::Value::String(text.clone())
            ),
        )),
    }
}

enum Classified {
    Strategic(Vec<Node>),
    Json(JsonPatch),
    Neither,
}

/// [`classify`] of a patch's text (written inline in `item` when given), remembered for the
/// process: a patch of a component or a Flux Kustomization is applied by every build that
/// uses it, and parsing it (twice when inline: as text, then in place) is the same each time.
/// The key is everything the result depends on: the text, where its block is written for an
/// inline patch (which parse of which file, and where in it: the source file is kept with the
/// result, so that its address names no other file while the entry lives), and the label only
/// when the result was not read in place. A Flux Kustomization's `spec.patches` reach the
/// build of every Kustomization a parent patched them into, each with its own label.
fn classified(label: &str, text: &str, item: Option<&Node>) -> Arc<Classified> {
    type Key = (Option<String>, String, Option<(usize, usize, usize)>);
    type Seen = HashMap<Key, (Arc<Classified>, Option<Arc<SourceFile>>)>;
    static SEEN: OnceLock<Mutex<Seen>> = OnceLock::new();
    let file = item
        .and_then(|i| i.get("patch"))
        .and_then(|n| n.span.as_ref());
    let written = file.map(|s| (Arc::as_ptr(&s.file) as usize, s.start, s.end));
    // One key, looked up without the label first, then with it.
    let mut key: Key = (None, text.to_string(), written);
    let seen = SEEN.get_or_init(Default::default);
    {
        let seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((c, _)) = written.and_then(|_| seen.get(&key)) {
            return c.clone();
        }
        key.0 = Some(label.to_string());
        if let Some((c, _)) = seen.get(&key) {
            return c.clone();
        }
    }
    let place = item.and_then(|i| in_place(i, "patch"));
    let (c, placed) = classify(label, text, place.as_ref());
    let c = Arc::new(c);
    let kept = file.map(|s| Arc::clone(&s.file));
    if placed && written.is_some() {
        key.0 = None;
    }
    seen.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(key, (c.clone(), kept));
    c
}

/// Tells strategic merge patches (resources with a kind and a name, any number of them: a file
/// of comments only is no patch at all) from a JSON 6902 patch (a list of operations), as
/// kustomize's patch transformer does; and whether the result is independent of `label`: read
/// in place, or no patch at all.
fn classify(label: &str, text: &str, place: Option<&InPlace>) -> (Classified, bool) {
    let strategic = plumb_yaml::parse_documents(label, text)
        .ok()
        .map(|docs| docs_in_place(place, docs))
        .and_then(|(docs, placed)| {
            let mut out = Vec::new();
            for doc in docs {
                if push_patch(doc, &mut out).is_err() {
                    return None;
                }
            }
            out.iter().all(is_patch_resource).then_some((out, placed))
        });
    if let Some((patches, placed)) = strategic {
        return (Classified::Strategic(patches), placed);
    }
    match JsonPatch::parse(label, text) {
        Ok(p) => match place {
            Some(place) => {
                let (p, read_in_place) = json_from_place(place, p);
                (Classified::Json(p), read_in_place)
            }
            None => (Classified::Json(p), false),
        },
        Err(_) => (Classified::Neither, true),
    }
}

/// A patch written inline in a kustomization, laid out where the kustomization writes it:
/// the file's text with everything before the block's lines blanked, so that what is parsed
/// from it has the file's length, lines and offsets and points at the kustomization's text.
/// Only the block (`within`) is parsed: the text after it is the file's own, never read.
struct InPlace {
    path: PathBuf,
    text: String,
    within: Range<usize>,
}

/// The inline patch under `key` in place, when it is a literal block (`patch: |`) whose
/// node remembers its file; a quoted or plain string's lines are not the patch's lines.
fn in_place(item: &Node, key: &str) -> Option<InPlace> {
    let node = item.get(key)?;
    match &node.kind {
        NodeKind::Scalar(s) if s.style == ScalarStyle::Literal => {}
        _ => return None,
    }
    let span = node.span.as_ref()?;
    let file = span.file.text();
    // The block's lines, after its header (`|`, `|-`, `|2`) when the span holds it; the
    // indentation before them is blanked to spaces, which it is.
    let written = file.get(span.start..span.end)?;
    let body = match written.starts_with('|') {
        true => span.start + written.find('\n')? + 1,
        false => span.start,
    };
    // Byte by byte: the block starts on a character boundary, so every byte of a character
    // before it becomes a space and the text stays UTF-8.
    let mut text = file.as_bytes().to_vec();
    for b in text.get_mut(..body)? {
        if *b != b'\n' {
            *b = b' ';
        }
    }
    let from = file[..body].rfind('\n').map_or(0, |i| i + 1);
    Some(InPlace {
        path: span.file.path().to_path_buf(),
        text: String::from_utf8(text).ok()?,
        within: from..span.end,
    })
}

/// The documents parsed in place when they read exactly as the patch's own text does (the
/// same nodes, styles and tags), else the documents as they are; and which of the two.
fn docs_in_place(place: Option<&InPlace>, docs: Vec<Node>) -> (Vec<Node>, bool) {
    match place
        .and_then(|p| plumb_yaml::parse_documents_from(&p.path, &p.text, p.within.clone()).ok())
        .filter(|placed| *placed == docs)
    {
        Some(placed) => (placed, true),
        None => (docs, false),
    }
}

/// A JSON 6902 patch parsed in place when its operations are the same; and which of the two.
fn json_from_place(place: &InPlace, patch: JsonPatch) -> (JsonPatch, bool) {
    match JsonPatch::parse_from(
        &place.path.display().to_string(),
        &place.text,
        place.within.clone(),
    ) {
        Ok(placed) if placed.operations == patch.operations => (placed, true),
        _ => (patch, false),
    }
}

/// [`json_from_place`] for the inline operations under `key` of a `patchesJson6902` entry.
fn json_in_place(item: &Node, key: &str, patch: JsonPatch) -> JsonPatch {
    match in_place(item, key) {
        Some(place) => json_from_place(&place, patch).0,
        None => patch,
    }
}

fn is_empty_map(node: &Node) -> bool {
    node.as_mapping().is_some_and(Vec::is_empty)
}

fn is_patch_resource(node: &Node) -> bool {
    node.is_mapping()
        && node.str_at(&["kind"]).is_some_and(|k| !k.is_empty())
        && node
            .str_at(&["metadata", "name"])
            .is_some_and(|n| !n.is_empty())
}

fn option(item: &Node, name: &str) -> bool {
    item.get_path(&["options", name])
        .and_then(|n| n.as_scalar())
        .is_some_and(|s| {
            matches!(
                plumb_yaml::resolve::resolve(s, plumb_yaml::Schema::Kustomize),
                Ok(plumb_yaml::Resolved::Bool(true))
            )
        })
}

fn with_file(label: &str, e: KustomizeError) -> KustomizeError {
    match e {
        KustomizeError::Other(m) => KustomizeError::Other(m),
        other => KustomizeError::Other(format!("{label}: {other}")),
    }
}

/// An entry of `patchesStrategicMerge` read as inline YAML, if it is that rather than a path.
fn inline_resources(entry: &str) -> Option<Vec<Node>> {
    let docs = plumb_yaml::parse_documents("<inline patch>", entry).ok()?;
    let docs: Vec<Node> = docs.into_iter().filter(|d| !d.is_null()).collect();
    if docs.is_empty() || !docs.iter().all(Node::is_mapping) {
        return None;
    }
    Some(docs.into_iter().filter(|d| !is_empty_map(d)).collect())
}

/// Reads a patch file named relative to the kustomization, within the load restrictor.
fn read_patch(
    k: &Kustomization,
    ctx: &Context,
    entry: &str,
) -> Result<(PathBuf, String), KustomizeError> {
    let path = loader::clean(&k.dir().join(entry));
    loader::check_restrictor(ctx.options.load_restrictor, k.dir(), &path)?;
    let text = ctx.options.fs.read_text(&path)?;
    Ok((path, text))
}

/// The patch documents of a file: its non-empty mappings, `*List` kinds expanded.
fn resources_in(path: &Path, text: &str) -> Result<Vec<Node>, KustomizeError> {
    let mut out = Vec::new();
    for doc in plumb_yaml::parse_documents(path, text)? {
        push_patch(doc, &mut out)?;
    }
    Ok(out)
}

fn push_patch(doc: Node, out: &mut Vec<Node>) -> Result<(), KustomizeError> {
    match &doc.kind {
        NodeKind::Scalar(_) if doc.is_null() => Ok(()),
        NodeKind::Mapping(entries) if entries.is_empty() => Ok(()),
        NodeKind::Mapping(_) => {
            if doc.str_at(&["kind"]).is_some_and(|k| k.ends_with("List")) {
                if let Some(items) = doc.get("items").and_then(Node::as_sequence) {
                    for item in items.clone() {
                        push_patch(item, out)?;
                    }
                    return Ok(());
                }
            }
            out.push(doc);
            Ok(())
        }
        _ => Err(error_at(&doc, "a patch must be a YAML mapping")),
    }
}

/// The one resource whose current or a previous identity is `id` (kustomize's `GetById`).
fn find_by_id(list: &ResourceList, id: &ResId, ctx: &Context) -> Result<usize, String> {
    let same = |a: &ResId| {
        a.gvk == id.gvk
            && a.name == id.name
            && effective_namespace(a, ctx) == effective_namespace(id, ctx)
    };
    let found: Vec<usize> = list
        .resources
        .iter()
        .enumerate()
        .filter(|(_, r)| r.previous_ids.iter().any(same) || same(&r.id()))
        .map(|(i, _)| i)
        .collect();
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(format!(
            "no matches for Id {id}; failed to find unique target for patch {id}"
        )),
        _ => Err(format!(
            "multiple matches for Id {id}; failed to find unique target for patch {id}"
        )),
    }
}

/// The patch as kustomize's `ResMap.ApplySmPatch` prepares it for one resource: labels and
/// annotations rewritten as string maps (so an empty or null map is dropped), an empty
/// namespace dropped, and the resource's apiVersion.
fn normalize_patch(mut patch: Node, resource: &Resource) -> Node {
    for field in ["labels", "annotations"] {
        let Some(meta) = patch.get_mut("metadata").filter(|m| m.is_mapping()) else {
            break;
        };
        let entries: Vec<(String, String)> = meta
            .get(field)
            .and_then(Node::as_mapping)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| {
                Some((
                    k.scalar_value()?.to_string(),
                    v.scalar_value().unwrap_or("").to_string(),
                ))
            })
            .collect();
        let span = meta.get(field).and_then(|n| n.span.clone());
        meta.remove(field);
        if !entries.is_empty() {
            let mut sorted = entries;
            sorted.sort();
            sorted.dedup_by(|a, b| a.0 == b.0);
            let map = Node::new(NodeKind::Mapping(
                sorted
                    .into_iter()
                    .map(|(k, v)| (Node::string(k), Node::string(v)))
                    .collect(),
            ))
            .with_span(span);
            meta.set(field, map);
        }
    }
    if let Some(meta) = patch.get_mut("metadata").filter(|m| m.is_mapping()) {
        if meta.str_at(&["namespace"]).is_none_or(str::is_empty) {
            meta.remove("namespace");
        }
    }
    let api_version = resource.api_version().to_string();
    patch.set("apiVersion", Node::string(api_version));
    patch
}

/// How many resources one patch selects before [`apply_smp_side_by_side`] merges it into them
/// in parallel.
const SIDE_BY_SIDE: usize = 32;

/// Applies `patch` to each selected resource in parallel, as the loop of [`apply_smp_at`]
/// over `selected` does one after another, and says whether it did. Only where that cannot
/// differ: many resources selected, the patch may not rename them (so no merge changes which
/// resource another selected identity finds), and each identity found once. A resource the
/// patch empties is removed after all merges, as each was removed at its turn; the error
/// returned is the one the loop would have met first.
fn apply_smp_side_by_side(
    list: &mut ResourceList,
    selected: &[ResId],
    patch: &Node,
    options: SmpOptions,
    ctx: &Context,
) -> Result<bool, KustomizeError> {
    use rayon::prelude::*;
    if selected.len() < SIDE_BY_SIDE || options.allow_name_change || options.allow_kind_change {
        return Ok(false);
    }
    let mut targets = vec![false; list.resources.len()];
    let mut order = Vec::with_capacity(selected.len());
    {
        // The loop's targets: for each identity, the first resource that has it.
        let mut first = std::collections::HashMap::new();
        for (i, r) in list.resources.iter().enumerate() {
            first.entry(r.id_key()).or_insert(i);
        }
        for id in selected {
            if let Some(&i) = first.get(&id.key()) {
                if std::mem::replace(&mut targets[i], true) {
                    // Two selected identities find one resource: the loop merges it twice.
                    return Ok(false);
                }
                order.push(i);
            }
        }
    }
    let mut merged: Vec<Result<bool, KustomizeError>> = list
        .resources
        .par_iter_mut()
        .zip(targets.par_iter())
        .with_min_len(SIDE_BY_SIDE / 2)
        .map(|(resource, &target)| match target {
            true => {
                let patch = normalize_patch(patch.clone(), resource);
                merge_into(resource, patch, options, ctx)
            }
            false => Ok(true),
        })
        .collect();
    // The first error in the loop's order is returned.
    if let Some(i) = order.into_iter().find(|&i| merged[i].is_err()) {
        merged.swap_remove(i)?;
    }
    let mut kept = merged.into_iter().map(|m| !matches!(m, Ok(false)));
    list.resources.retain(|_| kept.next().unwrap_or(true));
    Ok(true)
}

/// Applies a strategic merge patch to one resource, as kustomize's `Resource.ApplySmPatch`:
/// the name, kind and namespace stay unless the options allow changing them; a resource the
/// patch empties is removed.
fn apply_smp_at(
    list: &mut ResourceList,
    index: usize,
    patch: Node,
    options: SmpOptions,
    ctx: &Context,
) -> Result<(), KustomizeError> {
    if !merge_into(&mut list.resources[index], patch, options, ctx)? {
        list.resources.remove(index);
    }
    Ok(())
}

/// [`apply_smp_at`] of one resource: `false` when the patch emptied it, for the caller to
/// remove it.
fn merge_into(
    resource: &mut Resource,
    patch: Node,
    options: SmpOptions,
    ctx: &Context,
) -> Result<bool, KustomizeError> {
    let old = resource.id();
    let (name, namespace, kind) = (
        resource.name().to_string(),
        resource.namespace().to_string(),
        resource.kind().to_string(),
    );
    // Taken, not copied: a failed merge fails the whole build, which drops the list.
    let target = std::mem::replace(&mut resource.node, Node::null());
    let Some(mut node) = strategic::merge(target, patch, &ctx.schema)? else {
        return Ok(false);
    };
    if !options.allow_kind_change && node.str_at(&["kind"]) != Some(kind.as_str()) {
        node.set("kind", Node::string(kind));
    }
    if let Some(meta) = node.ensure_mapping("metadata") {
        if !options.allow_name_change && meta.str_at(&["name"]) != Some(name.as_str()) {
            meta.set("name", Node::string(name));
        }
        if namespace.is_empty() {
            meta.remove("namespace");
        } else if meta.str_at(&["namespace"]) != Some(namespace.as_str()) {
            meta.set("namespace", Node::string(namespace));
        }
    }
    resource.node = node;
    record_rename(
        resource,
        old,
        options.allow_name_change || options.allow_kind_change,
    );
    Ok(true)
}

/// Remembers the identity a patch changed, so that name references follow the resource.
fn record_rename(resource: &mut Resource, old: ResId, remember: bool) {
    let new = resource.id();
    if !remember || new == old {
        return;
    }
    if new.gvk == old.gvk && new.namespace == old.namespace {
        if let Some(meta) = resource.node.get_mut("metadata") {
            meta.set("name", Node::string(old.name.as_str()));
        }
        resource.set_name(&new.name);
    } else {
        resource.previous_ids.push(old);
    }
}
