//! The node tree: mappings in insertion order, sequences, and scalars that keep their raw text,
//! quote style and tag. Spans are carried along but never take part in equality.

use crate::source::Span;
use std::sync::Arc;

/// How a scalar was written in its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarStyle {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
}

impl ScalarStyle {
    /// Whether the scalar was written in one of the quoted or block styles, which YAML always
    /// reads as a string.
    pub fn is_quoted(self) -> bool {
        !matches!(self, ScalarStyle::Plain)
    }
}

/// A scalar: its text after escape processing, how it was written, and its tag (core tags in the
/// short `!!str` form).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Scalar {
    /// Kept inline up to 24 bytes (most keys and values of a manifest), on the heap past that:
    /// a build parses, copies and drops hundreds of thousands of these, and a heap allocation
    /// for each was measured at 3-5% of a build's CPU.
    pub value: compact_str::CompactString,
    pub style: ScalarStyle,
    /// Behind a pointer: few parsed scalars carry a tag, and a pointer instead of an inline
    /// string keeps every node of every parsed file 16 bytes smaller (80 bytes to 64). Shared,
    /// not boxed: every string node made by [`Node::string`] carries `!!str`, and a box for each
    /// was 4% more allocations in a build.
    pub tag: Option<Arc<compact_str::CompactString>>,
}

impl Scalar {
    /// The scalar's tag, when it has one.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref().map(|t| t.as_str())
    }
}

/// `tag` as a scalar holds it: the `!!str` of this thread, shared by every string node made
/// on it, else a tag of its own.
pub fn shared_tag(tag: &str) -> Arc<compact_str::CompactString> {
    thread_local! {
        static STR: Arc<compact_str::CompactString> =
            Arc::new(compact_str::CompactString::const_new("!!str"));
    }
    match tag {
        "!!str" => STR.with(Arc::clone),
        _ => Arc::new(tag.into()),
    }
}

/// The shape of a node.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    Scalar(Scalar),
    Sequence(Vec<Node>),
    Mapping(Vec<(Node, Node)>),
}

/// A YAML node and the text it came from.
#[derive(Debug, Clone)]
pub struct Node {
    pub kind: NodeKind,
    pub span: Option<Span>,
}

impl PartialEq for Node {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
    }
}

impl Node {
    pub fn new(kind: NodeKind) -> Node {
        Node { kind, span: None }
    }

    /// A string scalar: tagged `!!str`, so it stays a string whatever its text looks like.
    pub fn string(value: impl Into<compact_str::CompactString>) -> Node {
        Node::new(NodeKind::Scalar(Scalar {
            value: value.into(),
            style: ScalarStyle::Plain,
            tag: Some(shared_tag("!!str")),
        }))
    }

    /// A plain scalar whose meaning is decided by the resolver (`42`, `true`, `null`, `text`).
    pub fn plain(value: impl Into<compact_str::CompactString>) -> Node {
        Node::new(NodeKind::Scalar(Scalar {
            value: value.into(),
            style: ScalarStyle::Plain,
            tag: None,
        }))
    }

    pub fn null() -> Node {
        Node::plain("null")
    }

    pub fn mapping() -> Node {
        Node::new(NodeKind::Mapping(Vec::new()))
    }

    pub fn sequence(items: Vec<Node>) -> Node {
        Node::new(NodeKind::Sequence(items))
    }

    pub fn with_span(mut self, span: Option<Span>) -> Node {
        self.span = span;
        self
    }

    pub fn as_scalar(&self) -> Option<&Scalar> {
        match &self.kind {
            NodeKind::Scalar(s) => Some(s),
            _ => None,
        }
    }

    /// The text of a scalar node, whatever it resolves to.
    pub fn scalar_value(&self) -> Option<&str> {
        self.as_scalar().map(|s| s.value.as_str())
    }

    /// A sequence of scalars as their texts, null as an empty list; `None` for anything else
    /// (a mapping, a scalar, a sequence holding a non-scalar).
    pub fn string_list(&self) -> Option<Vec<String>> {
        if self.is_null() {
            return Some(Vec::new());
        }
        self.as_sequence()?
            .iter()
            .map(|n| n.scalar_value().map(str::to_string))
            .collect()
    }

    pub fn as_sequence(&self) -> Option<&Vec<Node>> {
        match &self.kind {
            NodeKind::Sequence(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_sequence_mut(&mut self) -> Option<&mut Vec<Node>> {
        match &mut self.kind {
            NodeKind::Sequence(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_mapping(&self) -> Option<&Vec<(Node, Node)>> {
        match &self.kind {
            NodeKind::Mapping(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_mapping_mut(&mut self) -> Option<&mut Vec<(Node, Node)>> {
        match &mut self.kind {
            NodeKind::Mapping(m) => Some(m),
            _ => None,
        }
    }

    pub fn is_mapping(&self) -> bool {
        matches!(self.kind, NodeKind::Mapping(_))
    }

    pub fn is_sequence(&self) -> bool {
        matches!(self.kind, NodeKind::Sequence(_))
    }

    /// Whether the node is null, `{}` or `[]`: what kustomize's kyaml calls nil or empty (a
    /// resource document it drops, a replacement source it skips).
    pub fn is_nil_or_empty(&self) -> bool {
        match &self.kind {
            NodeKind::Scalar(_) => self.is_null(),
            NodeKind::Sequence(items) => items.is_empty(),
            NodeKind::Mapping(entries) => entries.is_empty(),
        }
    }

    /// Whether the node is a null scalar (`null`, `~`, empty) under kustomize's resolver.
    pub fn is_null(&self) -> bool {
        match &self.kind {
            NodeKind::Scalar(s) => {
                matches!(
                    crate::resolve::resolve(s, crate::resolve::Schema::Kustomize),
                    Ok(crate::resolve::Resolved::Null)
                )
            }
            _ => false,
        }
    }

    /// The value under `key` in a mapping (the first, if the key repeats).
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_mapping()?
            .iter()
            .find(|(k, _)| k.scalar_value() == Some(key))
            .map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        self.as_mapping_mut()?
            .iter_mut()
            .find(|(k, _)| k.scalar_value() == Some(key))
            .map(|(_, v)| v)
    }

    /// The key node of `key` in a mapping.
    pub fn get_key(&self, key: &str) -> Option<&Node> {
        self.as_mapping()?
            .iter()
            .find(|(k, _)| k.scalar_value() == Some(key))
            .map(|(k, _)| k)
    }

    /// Follows a path of mapping keys.
    pub fn get_path(&self, path: &[&str]) -> Option<&Node> {
        path.iter().try_fold(self, |node, key| node.get(key))
    }

    pub fn get_path_mut(&mut self, path: &[&str]) -> Option<&mut Node> {
        path.iter().try_fold(self, |node, key| node.get_mut(key))
    }

    /// The string at `path`, if it is a scalar.
    pub fn str_at(&self, path: &[&str]) -> Option<&str> {
        self.get_path(path)?.scalar_value()
    }

    /// Sets `key` in a mapping, replacing the value in place or appending a new entry.
    /// Does nothing on a node that is not a mapping.
    pub fn set(&mut self, key: &str, value: Node) {
        if let Some(entries) = self.as_mapping_mut() {
            if let Some(slot) = entries
                .iter_mut()
                .find(|(k, _)| k.scalar_value() == Some(key))
            {
                slot.1 = value;
            } else {
                entries.push((Node::string(key), value));
            }
        }
    }

    /// Returns the mapping under `key`, creating it (or replacing a null) when absent.
    pub fn ensure_mapping(&mut self, key: &str) -> Option<&mut Node> {
        let present = self.get(key).is_some_and(|n| !n.is_null());
        if !present {
            self.set(key, Node::mapping());
        }
        self.get_mut(key)
    }

    /// Removes `key` from a mapping and returns its value.
    pub fn remove(&mut self, key: &str) -> Option<Node> {
        let entries = self.as_mapping_mut()?;
        let i = entries
            .iter()
            .position(|(k, _)| k.scalar_value() == Some(key))?;
        Some(entries.remove(i).1)
    }

    /// The keys of a mapping, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.as_mapping()
            .into_iter()
            .flatten()
            .filter_map(|(k, _)| k.scalar_value())
    }
}
