//! Strategic merge patches on nodes, with the semantics of kustomize's kyaml walker (merge2,
//! patch elements first), which differ from Kubernetes' own strategic merge in ways that show in
//! the output, so they are reproduced here:
//!
//! - maps merge key by key; a `null` in the patch removes the field, and so does an empty value
//!   (`key:`) left in the resource, while `key: null` or `key: ~` in the resource stays;
//! - lists whose schema has a `merge` strategy merge element by element on their merge keys
//!   (several keys when the schema lists `x-kubernetes-list-map-keys`), the patch's elements
//!   first; lists of scalars with `merge` merge as sets; every other list, and every list of a
//!   kind the schema does not know, is replaced;
//! - `$patch: delete|replace|merge` are honoured on maps (`replace` on a list element is not:
//!   the element keeps its original content, as in kustomize); `$setElementOrder/…`,
//!   `$retainKeys` and `$deleteFromPrimitiveList/…` are not directives to kyaml and stay in the
//!   output as ordinary fields.

use crate::error::KustomizeError;
use crate::patch::error_at;
use crate::schema::{FieldInfo, ListMerge, Schema, TypeRef};
use plumb_yaml::{Node, NodeKind};
use std::collections::{BTreeMap, HashSet};

/// Merges `patch` into `dest`. `None` means the patch deleted the whole resource (or left it
/// empty).
pub fn merge(dest: Node, patch: Node, schema: &Schema) -> Result<Option<Node>, KustomizeError> {
    let walker = Walker { schema };
    let walked = walker.walk(Some(dest), Some(patch), None)?;
    Ok(walked
        .node
        .filter(|n| !is_empty_collection(n) && !n.is_null()))
}

/// Where in the schema a walk is: a kind's definition, or a field (list, map or object).
#[derive(Clone, Copy)]
enum Shape<'s> {
    Type(TypeRef<'s>),
    Field(FieldInfo<'s>),
}

impl<'s> Shape<'s> {
    fn field(self, key: &str) -> Option<Shape<'s>> {
        match self {
            Shape::Type(t) => t.field(key).map(Shape::Field),
            Shape::Field(f) => {
                if let Some(t) = f.object_type() {
                    t.field(key).map(Shape::Field)
                } else if f.is_map() {
                    f.values().map(Shape::Field)
                } else {
                    None
                }
            }
        }
    }

    fn items(self) -> Option<Shape<'s>> {
        match self {
            Shape::Field(f) => f.items().map(Shape::Field),
            Shape::Type(_) => None,
        }
    }

    fn list_merge(self) -> Option<ListMerge<'s>> {
        match self {
            Shape::Field(f) => f.list_merge(),
            Shape::Type(_) => None,
        }
    }
}

/// The directive a patch map carries in `$patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Directive {
    Merge,
    Replace,
    Delete,
}

/// The outcome of walking one node.
struct Walked {
    /// The merged node; `None` clears the field or element.
    node: Option<Node>,
    /// Whether `node` is the destination merged in place (rather than the patch's node), which
    /// decides what a merged list keeps for an element.
    into_dest: bool,
    /// A `null` the resource had and the patch did not touch: kept rather than cleared.
    keep_null: bool,
}

impl Walked {
    fn cleared() -> Walked {
        Walked {
            node: None,
            into_dest: false,
            keep_null: false,
        }
    }
}

struct Walker<'s> {
    schema: &'s Schema,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Map,
    Seq,
    Scalar,
}

fn kind_of(node: &Node) -> Kind {
    match node.kind {
        NodeKind::Mapping(_) => Kind::Map,
        NodeKind::Sequence(_) => Kind::Seq,
        NodeKind::Scalar(_) => Kind::Scalar,
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Map => "MappingNode",
        Kind::Seq => "SequenceNode",
        Kind::Scalar => "ScalarNode",
    }
}

fn missing_or_null(node: Option<&Node>) -> bool {
    node.is_none_or(Node::is_null)
}

fn is_empty_collection(node: &Node) -> bool {
    match &node.kind {
        NodeKind::Mapping(m) => m.is_empty(),
        NodeKind::Sequence(s) => s.is_empty(),
        NodeKind::Scalar(_) => false,
    }
}

fn is_empty_map(node: &Node) -> bool {
    node.as_mapping().is_some_and(Vec::is_empty)
}

/// A node's text as go-yaml keeps it in `Value`: the scalar's text, empty for collections.
fn text(node: &Node) -> &str {
    node.scalar_value().unwrap_or("")
}

/// Whether a null scalar was written with no text at all (`key:`), which kyaml drops, rather
/// than as `null` or `~`, which it keeps. The parser reports an empty value as `~`, so the
/// source text decides.
fn null_written_empty(node: &Node) -> bool {
    match (&node.span, node.scalar_value()) {
        (_, Some("")) => true,
        (Some(span), Some("~")) => span.text().trim() != "~",
        _ => false,
    }
}

fn wrong_kind(node: &Node, expected: Kind) -> KustomizeError {
    let shown = node
        .span
        .as_ref()
        .map(|s| s.text().to_string())
        .unwrap_or_default();
    error_at(
        node,
        format!(
            "wrong node kind: expected {} but got {}: node contents:\n{shown}",
            kind_name(expected),
            kind_name(kind_of(node))
        ),
    )
}

/// Reads and removes the `$patch` directive of a patch node.
fn take_directive(patch: Option<&mut Node>) -> Result<Directive, KustomizeError> {
    let Some(patch) = patch else {
        return Ok(Directive::Merge);
    };
    match &patch.kind {
        NodeKind::Sequence(_) => Ok(Directive::Merge),
        NodeKind::Scalar(s) => Err(error_at(
            patch,
            format!(
                "no implemented strategic merge patch strategy for '{}' ('{}')",
                s.tag().unwrap_or("!!str"),
                s.value
            ),
        )),
        NodeKind::Mapping(_) => {
            let Some(value) = patch.get("$patch") else {
                return Ok(Directive::Merge);
            };
            let directive = match text(value) {
                "delete" => Directive::Delete,
                "replace" => Directive::Replace,
                "merge" => Directive::Merge,
                other => return Err(error_at(value, format!("unknown patch strategy '{other}'"))),
            };
            patch.remove("$patch");
            Ok(directive)
        }
    }
}

impl<'s> Walker<'s> {
    /// The kind's schema when the walk has none: kyaml looks one up for any map that says its
    /// `apiVersion` and `kind`, the resource first, then the patch.
    fn shape_from_meta(&self, sources: [Option<&Node>; 2]) -> Option<Shape<'s>> {
        sources.into_iter().flatten().find_map(|n| {
            if n.is_null() {
                return None;
            }
            let api_version = n.str_at(&["apiVersion"]).filter(|s| !s.is_empty())?;
            let kind = n.str_at(&["kind"]).filter(|s| !s.is_empty())?;
            self.schema.type_for(api_version, kind).map(Shape::Type)
        })
    }

    /// Whether walking `dest` with no patch gives it back as it is: true of a subtree with no
    /// null (which the walk may drop) and no list the schema merges (which it rebuilds). Most
    /// of a patched object is not in the patch; such a part is kept whole instead of being
    /// taken apart key by key and put together again.
    fn unchanged_alone(&self, dest: &Node, shape: Option<Shape<'s>>) -> bool {
        if dest.is_null() {
            return false;
        }
        let shape = shape.or_else(|| self.shape_from_meta([Some(dest), None]));
        match &dest.kind {
            NodeKind::Scalar(_) => true,
            NodeKind::Sequence(_) => !shape.is_some_and(|s| merges(s.list_merge())),
            // A key that is not a scalar is not walked: its value stays as it is.
            NodeKind::Mapping(entries) => entries.iter().all(|(k, v)| match k.scalar_value() {
                Some(key) => self.unchanged_alone(v, shape.and_then(|s| s.field(key))),
                None => true,
            }),
        }
    }

    fn walk(
        &self,
        dest: Option<Node>,
        patch: Option<Node>,
        shape: Option<Shape<'s>>,
    ) -> Result<Walked, KustomizeError> {
        if patch.is_none()
            && dest
                .as_ref()
                .is_some_and(|d| self.unchanged_alone(d, shape))
        {
            return Ok(Walked {
                node: dest,
                into_dest: true,
                keep_null: false,
            });
        }
        let shape = shape.or_else(|| self.shape_from_meta([dest.as_ref(), patch.as_ref()]));
        let kind = [dest.as_ref(), patch.as_ref()]
            .into_iter()
            .flatten()
            .find(|n| !n.is_null())
            .map(kind_of);
        let Some(kind) = kind else {
            return self.walk_map(dest, patch, shape);
        };
        for node in [dest.as_ref(), patch.as_ref()].into_iter().flatten() {
            if !node.is_null() && kind_of(node) != kind {
                return Err(wrong_kind(node, kind));
            }
        }
        match kind {
            Kind::Map => self.walk_map(dest, patch, shape),
            Kind::Seq if shape.is_some_and(|s| merges(s.list_merge())) => {
                self.walk_merged_list(dest, patch, shape)
            }
            Kind::Seq | Kind::Scalar => {
                let into_dest = patch.is_none();
                Ok(Walked {
                    node: patch.or(dest),
                    into_dest,
                    keep_null: false,
                })
            }
        }
    }

    fn walk_map(
        &self,
        dest: Option<Node>,
        mut patch: Option<Node>,
        shape: Option<Shape<'s>>,
    ) -> Result<Walked, KustomizeError> {
        let (mut base, other, into_dest) = if missing_or_null(dest.as_ref()) {
            // kyaml ignores a bad directive here; it fails later, when the added map is
            // merged with itself.
            if take_directive(patch.as_mut()).ok() == Some(Directive::Delete) {
                return Ok(Walked::cleared());
            }
            if patch.is_none() {
                if let Some(d) = dest {
                    if !null_written_empty(&d) {
                        return Ok(Walked {
                            node: Some(d),
                            into_dest: true,
                            keep_null: true,
                        });
                    }
                }
                return Ok(Walked::cleared());
            }
            let Some(p) = patch else {
                return Ok(Walked::cleared());
            };
            (p.clone(), Some(p), false)
        } else {
            if patch.as_ref().is_some_and(Node::is_null) {
                return Ok(Walked::cleared());
            }
            match take_directive(patch.as_mut())? {
                Directive::Delete => return Ok(Walked::cleared()),
                Directive::Replace => match patch {
                    Some(p) => (p.clone(), Some(p), false),
                    None => return Ok(Walked::cleared()),
                },
                Directive::Merge => match dest {
                    Some(d) => (d, patch, true),
                    None => return Ok(Walked::cleared()),
                },
            }
        };
        if !base.is_mapping() {
            return Ok(Walked {
                node: Some(base),
                into_dest,
                keep_null: false,
            });
        }
        let other = other.filter(Node::is_mapping).and_then(|o| match o.kind {
            NodeKind::Mapping(entries) => Some(entries),
            _ => None,
        });
        let merged = self.merge_entries(base.kind, other.unwrap_or_default(), shape)?;
        base.kind = NodeKind::Mapping(merged);
        Ok(Walked {
            node: Some(base),
            into_dest,
            keep_null: false,
        })
    }

    /// Walks every key of `base` and `other` in sorted order, with the value each has under it
    /// (the first, if a key repeats). A walked value replaces the base's in place, a key only
    /// the patch has is appended, and a cleared one is removed. Keys are looked up in an index
    /// rather than by scanning, so a map of n keys merges in O(n log n), not O(n²).
    fn merge_entries(
        &self,
        base: NodeKind,
        other: Vec<(Node, Node)>,
        shape: Option<Shape<'s>>,
    ) -> Result<Vec<(Node, Node)>, KustomizeError> {
        let NodeKind::Mapping(base) = base else {
            return Ok(Vec::new());
        };
        // `None` marks an entry the walk removed.
        // Each key's first position in the base and in the patch (keys kept inline: most are
        // short, and every mapping a patch reaches is indexed).
        let mut index: BTreeMap<compact_str::CompactString, (Option<usize>, Option<usize>)> =
            BTreeMap::new();
        for (i, (k, _)) in base.iter().enumerate() {
            if let Some(key) = k.scalar_value() {
                let entry = index.entry(key.into()).or_default();
                entry.0.get_or_insert(i);
            }
        }
        let mut slots: Vec<Option<(Node, Node)>> = base.into_iter().map(Some).collect();
        let mut others: Vec<Option<Node>> = Vec::with_capacity(other.len());
        for (i, (k, v)) in other.into_iter().enumerate() {
            if let Some(key) = k.scalar_value() {
                let entry = index.entry(key.into()).or_default();
                entry.1.get_or_insert(i);
            }
            others.push(Some(v));
        }
        let mut appended = Vec::new();
        for (key, (in_base, in_other)) in index {
            let child = shape.and_then(|s| s.field(&key));
            // Every walked key's base value is replaced or removed below, so it is taken, not
            // copied.
            let d = in_base
                .and_then(|i| slots[i].as_mut())
                .map(|(_, v)| std::mem::replace(v, Node::null()));
            let p = in_other.and_then(|i| others[i].take());
            let walked = self.walk(d, p, child)?;
            match walked.node {
                Some(n) if walked.keep_null || !n.is_null() => match in_base {
                    Some(i) => {
                        if let Some(slot) = slots[i].as_mut() {
                            slot.1 = n;
                        }
                    }
                    None => appended.push((Node::string(key), n)),
                },
                _ => {
                    if let Some(i) = in_base {
                        slots[i] = None;
                    }
                }
            }
        }
        Ok(slots.into_iter().flatten().chain(appended).collect())
    }

    /// A list whose schema has a `merge` strategy.
    fn walk_merged_list(
        &self,
        dest: Option<Node>,
        patch: Option<Node>,
        shape: Option<Shape<'s>>,
    ) -> Result<Walked, KustomizeError> {
        let (base, patch) = if missing_or_null(dest.as_ref()) {
            match patch {
                Some(p) => (p.clone(), Some(p)),
                None => return Ok(Walked::cleared()),
            }
        } else {
            if patch.as_ref().is_some_and(Node::is_null) {
                return Ok(Walked::cleared());
            }
            match dest {
                Some(d) => (d, patch),
                None => return Ok(Walked::cleared()),
            }
        };
        let span = base.span.clone();
        let dest_items = match base.kind {
            NodeKind::Sequence(items) => items,
            _ => Vec::new(),
        };
        let patch_items: Option<Vec<Node>> = patch.and_then(|p| match p.kind {
            NodeKind::Sequence(items) => Some(items),
            _ => None,
        });
        let keys: Vec<String> = match shape.and_then(|s| s.list_merge()) {
            Some(ListMerge::ByKeys(keys)) => keys.into_iter().map(str::to_string).collect(),
            _ => Vec::new(),
        };
        let item_shape = shape.and_then(Shape::items);
        let values = element_values(&keys, patch_items.as_deref(), &dest_items);
        let merged = if !values.is_empty() || !keys.is_empty() {
            self.merge_elements(values, keys, dest_items, patch_items, item_shape)?
        } else {
            let values = primitive_values(patch_items.as_deref(), &dest_items);
            self.merge_elements(
                values,
                vec![String::new()],
                dest_items,
                patch_items,
                item_shape,
            )?
        };
        Ok(Walked {
            node: Some(Node::sequence(merged).with_span(span)),
            into_dest: true,
            keep_null: false,
        })
    }

    /// kyaml's `setAssociativeSequenceElements` with patch elements put first.
    fn merge_elements(
        &self,
        mut values_list: Vec<Vec<String>>,
        keys: Vec<String>,
        mut dest: Vec<Node>,
        patch: Option<Vec<Node>>,
        item_shape: Option<Shape<'s>>,
    ) -> Result<Vec<Node>, KustomizeError> {
        let mut added: Vec<Node> = Vec::new();
        if keys.len() > 1 {
            merge_values(&mut values_list);
        }
        // The same for every element, so found once rather than once per element.
        let valid_in_list = keys_with_values(&values_list, &keys);
        let mut valid_keys: Vec<String> = Vec::new();
        for values in &values_list {
            if values.is_empty() {
                continue;
            }
            let (vk, vv) = validate_keys(&valid_in_list, values, &keys);
            valid_keys.clone_from(&vk);
            let (lk, lv) =
                validate_keys(&keys_with_values(std::slice::from_ref(&vv), &vk), &vv, &vk);
            let dest_index = element_list(&dest, &lk, &lv);
            let patch_elem = patch
                .as_deref()
                .and_then(|p| element_list(p, &lk, &lv).map(|i| p[i].clone()));
            let walked = self.walk(dest_index.map(|i| dest[i].clone()), patch_elem, item_shape)?;
            if walked.into_dest {
                if let (Some(i), Some(n)) = (dest_index, walked.node.as_ref()) {
                    dest[i] = n.clone();
                }
            }
            let mut val = match walked.node {
                Some(n) if !n.is_null() && !is_empty_map(&n) => n,
                _ => {
                    element_setter(&mut dest, None, &vk, &vv)?;
                    continue;
                }
            };
            for (key, value) in vk.iter().zip(&vv) {
                if key.is_empty() || value.is_empty() {
                    continue;
                }
                if !val.is_mapping() {
                    return Err(wrong_kind(&val, Kind::Map));
                }
                if val.get(key).is_none() {
                    val.set(key, Node::plain(value.as_str()));
                }
            }
            element_setter(&mut added, Some(val), &vk, &vv)?;
        }
        if values_list.is_empty() {
            return Ok(dest);
        }
        append_list_node(added, &dest, &valid_keys)
    }
}

fn merges(list_merge: Option<ListMerge<'_>>) -> bool {
    matches!(list_merge, Some(ListMerge::ByKeys(_) | ListMerge::Set))
}

/// The merge-key values of every element, patch elements first, without repeats.
fn element_values(keys: &[String], patch: Option<&[Node]>, dest: &[Node]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut seen: HashSet<Vec<String>> = HashSet::new();
    for src in patch.into_iter().chain(std::iter::once(dest)) {
        for elem in src {
            let values: Vec<String> = keys
                .iter()
                .map(|k| {
                    elem.as_mapping()
                        .and_then(|_| elem.get(k))
                        .filter(|v| !v.is_null() && !is_empty_collection(v))
                        .map_or(String::new(), |v| text(v).to_string())
                })
                .collect();
            if values.is_empty() || seen.contains(&values) {
                continue;
            }
            seen.insert(values.clone());
            out.push(values);
        }
    }
    out
}

/// The values of a list of scalars, patch values first, without repeats.
fn primitive_values(patch: Option<&[Node]>, dest: &[Node]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for src in patch.into_iter().chain(std::iter::once(dest)) {
        for item in src {
            let value = text(item).to_string();
            if seen.insert(value.clone()) {
                out.push(vec![value]);
            }
        }
    }
    out
}

/// The keys some element of `values_list` has a value for.
fn keys_with_values<'k>(values_list: &[Vec<String>], keys: &'k [String]) -> HashSet<&'k str> {
    let mut valid: HashSet<&str> = HashSet::new();
    for vals in values_list {
        for (i, v) in vals.iter().enumerate() {
            if !v.is_empty() {
                if let Some(k) = keys.get(i) {
                    valid.insert(k);
                }
            }
        }
    }
    valid
}

/// Keeps the keys in `valid`, the ones some element has a value for (all keys when none has
/// any), and the values that go with them.
fn validate_keys(
    valid: &HashSet<&str>,
    values: &[String],
    keys: &[String],
) -> (Vec<String>, Vec<String>) {
    if valid.is_empty() {
        return (keys.to_vec(), values.to_vec());
    }
    let valid_keys = keys
        .iter()
        .filter(|k| valid.contains(k.as_str()))
        .cloned()
        .collect();
    let valid_values = values
        .iter()
        .enumerate()
        .filter(|(i, v)| !v.is_empty() || keys.get(*i).is_some_and(|k| valid.contains(k.as_str())))
        .map(|(_, v)| v.clone())
        .collect();
    (valid_keys, valid_values)
}

/// Treats key tuples that agree wherever both have a value as the same element (a port with
/// and without `protocol`).
fn merge_values(values_list: &mut [Vec<String>]) {
    for i in 0..values_list.len() {
        let first = values_list[i].clone();
        for j in 0..values_list.len() {
            if let Some(merged) = match_values(&first, &values_list[j]) {
                values_list[i].clone_from(&merged);
                values_list[j] = merged;
            }
        }
    }
}

fn match_values(a: &[String], b: &[String]) -> Option<Vec<String>> {
    if a.len() != b.len() {
        return None;
    }
    let mut common = false;
    let mut out = Vec::with_capacity(a.len());
    for (x, y) in a.iter().zip(b) {
        if x == y {
            common = true;
            out.push(x.clone());
        } else if !x.is_empty() && !y.is_empty() {
            return None;
        } else if !x.is_empty() {
            out.push(x.clone());
        } else {
            out.push(y.clone());
        }
    }
    common.then_some(out)
}

/// The first element whose `keys` fields have exactly `values` (kyaml's `ElementList`); with
/// no key, the first element whose text is the value.
fn element_list(list: &[Node], keys: &[String], values: &[String]) -> Option<usize> {
    if keys.first().is_none_or(String::is_empty) {
        let wanted = values.first().map_or("", String::as_str);
        return list.iter().position(|e| text(e) == wanted);
    }
    list.iter().position(|elem| {
        elem.is_mapping()
            && keys
                .iter()
                .zip(values)
                .all(|(k, v)| elem.get(k).is_some_and(|field| text(field) == v.as_str()))
    })
}

/// Whether `elem` has field `name` (with text `value`, unless `value` is empty); with no name,
/// whether the scalar's text is `value` (kyaml's `FieldMatcher`).
fn field_matches(elem: &Node, name: &str, value: &str) -> Result<bool, KustomizeError> {
    if elem.is_null() {
        return Ok(false);
    }
    if name.is_empty() {
        if !matches!(elem.kind, NodeKind::Scalar(_)) {
            return Err(wrong_kind(elem, Kind::Scalar));
        }
        return Ok(text(elem) == value);
    }
    if !elem.is_mapping() {
        return Err(wrong_kind(elem, Kind::Map));
    }
    Ok(elem
        .get(name)
        .is_some_and(|field| value.is_empty() || text(field) == value))
}

/// kyaml's `ElementSetter`: replaces the elements matching `keys`/`values` with `element`,
/// deletes them when `element` is `None`, appends `element` when nothing matched. Like kyaml,
/// it drops null and empty-map elements, and an empty `values` matches nothing and keeps
/// nothing.
fn element_setter(
    list: &mut Vec<Node>,
    element: Option<Node>,
    keys: &[String],
    values: &[String],
) -> Result<(), KustomizeError> {
    let default_keys = [String::new()];
    let keys = if keys.is_empty() {
        &default_keys[..]
    } else {
        keys
    };
    let mapping_setter = !keys[0].is_empty() && values.first().is_some_and(|v| !v.is_empty());
    let mut kept = Vec::with_capacity(list.len() + 1);
    let mut matched = false;
    for elem in list.drain(..) {
        if elem.is_null() || is_empty_map(&elem) {
            continue;
        }
        if !elem.is_mapping() && mapping_setter {
            kept.push(elem);
            continue;
        }
        let mut found = !values.is_empty();
        for (j, key) in keys.iter().enumerate() {
            let Some(value) = values.get(j) else {
                break;
            };
            if !field_matches(&elem, key, value)? {
                found = false;
                break;
            }
        }
        if !found {
            if !values.is_empty() {
                kept.push(elem);
            }
            continue;
        }
        matched = true;
        if let Some(e) = &element {
            kept.push(e.clone());
        }
    }
    *list = kept;
    if let Some(e) = element {
        if !e.is_null() && !matched {
            list.push(e);
        }
    }
    Ok(())
}

/// kyaml's `appendListNode`: sets every element of `src` into `dst` by its keys. With several
/// keys an existing element is moved to the end; an element without a key is appended, and
/// then (as in kyaml) wipes the elements before it.
fn append_list_node(
    mut dst: Vec<Node>,
    src: &[Node],
    keys: &[String],
) -> Result<Vec<Node>, KustomizeError> {
    for elem in src {
        if keys.first().is_none_or(String::is_empty) {
            element_setter(
                &mut dst,
                Some(elem.clone()),
                &[String::new()],
                &[text(elem).to_string()],
            )?;
            continue;
        }
        let mut values = Vec::new();
        for key in keys {
            if elem.is_null() {
                dst.push(elem.clone());
                continue;
            }
            if !elem.is_mapping() {
                return Err(wrong_kind(elem, Kind::Map));
            }
            match elem.get(key) {
                Some(v) => values.push(text(v).to_string()),
                None => dst.push(elem.clone()),
            }
        }
        if keys.len() > 1 {
            element_setter(&mut dst, None, keys, &values)?;
        }
        element_setter(&mut dst, Some(elem.clone()), keys, &values)?;
    }
    Ok(dst)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(text: &str) -> Node {
        plumb_yaml::parse_documents("t.yaml", text)
            .unwrap()
            .into_iter()
            .next()
            .unwrap()
    }

    fn merged(dest: &str, patch: &str) -> String {
        let out = merge(node(dest), node(patch), Schema::builtin())
            .unwrap()
            .unwrap();
        plumb_yaml::write_document(&plumb_yaml::to_json(&out).unwrap())
    }

    #[test]
    fn scalars_and_maps() {
        assert_eq!(
            merged("a: 1\nb: {c: 2, d: 3}\n", "b: {c: 4, e: 5}\nf: 6\n"),
            "a: 1\nb:\n  c: 4\n  d: 3\n  e: 5\nf: 6\n"
        );
    }

    #[test]
    fn unknown_lists_are_replaced() {
        assert_eq!(
            merged(
                "kind: Foo\napiVersion: x/v1\nl: [{name: a, v: 1}]\n",
                "l: [{name: b}]\n"
            ),
            "apiVersion: x/v1\nkind: Foo\nl:\n- name: b\n"
        );
    }

    #[test]
    fn set_lists_keep_patch_values_first() {
        assert_eq!(
            merged(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {finalizers: [a, b]}\n",
                "metadata: {finalizers: [c, a]}\n"
            ),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  finalizers:\n  - c\n  - a\n  - b\n"
        );
    }
}
