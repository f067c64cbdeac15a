//! Reading YAML text into [`Node`]s: a multi-document stream, aliases expanded, `<<` merge keys
//! applied, every node carrying its byte span.
//!
//! Expanding an alias copies the anchored node, so a few hundred bytes of nested aliases (an
//! "alias bomb") can ask for billions of nodes. As go-yaml v3 and serde_yaml do, the parser
//! keeps a budget: aliases may add at most [`ALIAS_NODE_FLOOR`] nodes, or
//! [`ALIAS_NODE_RATIO`] times the nodes written out in the text when that is more, and may not
//! nest collections deeper than [`MAX_DEPTH`]. Every later stage works on the expanded tree, so
//! this one bound covers them all.

use crate::error::YamlError;
use crate::node::{Node, NodeKind, Scalar, ScalarStyle};
use crate::source::{SourceFile, Span};
use granit_parser::{Event, Options, Parser, ScalarStyle as GStyle, Tag};
use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

/// The nodes alias expansion may add to a stream whatever its size: far more than any
/// hand-written anchor reuse, and few enough (tens of megabytes) to fail fast on a bomb.
pub const ALIAS_NODE_FLOOR: usize = 100_000;

/// How many times the nodes written in the text alias expansion may add, for streams large
/// enough that [`ALIAS_NODE_FLOOR`] is the smaller bound. This keeps the tree linear in the
/// size of the input.
pub const ALIAS_NODE_RATIO: usize = 10;

/// How deep aliases may nest collections. The parser already stops text nested deeper than
/// 255 flow plus 255 block collections; aliases inside anchors could otherwise stack
/// collections without limit and overflow the stack of every recursive stage after parsing.
pub const MAX_DEPTH: usize = 512;

/// Parses every document of `text` (read from `path`). Empty documents come back as null
/// scalars so that callers can tell "empty" from "absent".
pub fn parse_documents(path: impl AsRef<Path>, text: &str) -> Result<Vec<Node>, YamlError> {
    let file = SourceFile::new(path.as_ref(), text);
    parse_source(&file)
}

/// [`parse_documents`] of the part `within` of a text whose bytes before it, up to the start
/// of a line, are spaces and line breaks: that part is read as if it were the whole text
/// (the blank lines before it read as nothing), with its spans and errors' places in the
/// whole text. What follows the part is not read: it may be anything, such as the rest of
/// the file a block was written in, which keeps the text that file's length.
pub fn parse_documents_from(
    path: impl AsRef<Path>,
    text: &str,
    within: Range<usize>,
) -> Result<Vec<Node>, YamlError> {
    let file = SourceFile::new(path.as_ref(), text);
    parse_source_from(&file, within)
}

/// The documents of `text` as the block reader alone reads them: `None` when the text is
/// outside the subset it reads (and granit-parser reads it). For tests that compare the two.
#[doc(hidden)]
pub fn parse_documents_block(path: impl AsRef<Path>, text: &str) -> Option<Vec<Node>> {
    let file = SourceFile::new(path.as_ref(), text);
    let mut builder = Builder::new(&file);
    crate::block::read(text, 0, &mut builder).ok()?;
    Some(builder.docs)
}

/// The documents of `text` as granit-parser reads them, without the block reader. For tests
/// that compare the two.
#[doc(hidden)]
pub fn parse_documents_granit(path: impl AsRef<Path>, text: &str) -> Result<Vec<Node>, YamlError> {
    let file = SourceFile::new(path.as_ref(), text);
    read_with_granit(&file, 0, text)
}

/// Parses a [`SourceFile`] already shared with other stages.
pub fn parse_source(file: &Arc<SourceFile>) -> Result<Vec<Node>, YamlError> {
    parse_source_from(file, 0..file.text().len())
}

/// [`parse_source`] of the part `within` (see [`parse_documents_from`]); a part that does not
/// start a line after blank text only, or is not in the text on character boundaries, is
/// read from the text's start to its end.
fn parse_source_from(file: &Arc<SourceFile>, within: Range<usize>) -> Result<Vec<Node>, YamlError> {
    let whole = file.text();
    let start = within.start;
    let blank_before = whole
        .as_bytes()
        .get(..start)
        .is_some_and(|head| head.iter().all(|&b| b == b' ' || b == b'\n'))
        && (start == 0 || whole.as_bytes()[start - 1] == b'\n');
    let (start, text) = match whole.get(within) {
        Some(part) if blank_before => (start, part),
        _ => (0, whole),
    };
    // The block subset nearly every manifest is written in is read without granit-parser,
    // to the same events; anything else, errors included, is granit-parser's.
    let mut builder = Builder::new(file);
    if crate::block::read(text, start, &mut builder).is_ok() {
        return Ok(builder.docs);
    }
    read_with_granit(file, start, text)
}

/// granit-parser's reading of `text`, the part of `file` from byte `start`.
///
/// An alias key written `*app: value` is the alias `app` to go-yaml (as to libyaml, a name is
/// letters, digits, `_` and `-`), but `app:` to granit-parser (YAML 1.2 allows `:` in a name),
/// which finds no such anchor. Where granit-parser stops at one, a space goes between the
/// name and its `:` in a copy of the text, and the copy is read again; every offset read from
/// the copy is taken back to the text's own.
fn read_with_granit(
    file: &Arc<SourceFile>,
    start: usize,
    text: &str,
) -> Result<Vec<Node>, YamlError> {
    let mut copy: Option<String> = None;
    // Where spaces went into the copy, in its own offsets, in increasing order.
    let mut inserted: Vec<usize> = Vec::new();
    loop {
        let read = copy.as_deref().unwrap_or(text);
        match granit_pass(file, start, read, &inserted) {
            Pass::Read(result) => return result,
            Pass::SplitAliasAt(at) => {
                copy.get_or_insert_with(|| text.to_string()).insert(at, ' ');
                for later in inserted.iter_mut().filter(|q| **q >= at) {
                    *later += 1;
                }
                let slot = inserted.partition_point(|&q| q < at);
                inserted.insert(slot, at);
            }
        }
    }
}

/// What one reading by granit-parser came to.
enum Pass {
    Read(Result<Vec<Node>, YamlError>),
    /// It stopped at an alias `*name:` whose go-yaml name ends before the `:` at this offset
    /// of the text it read.
    SplitAliasAt(usize),
}

/// granit-parser's reading of `read`: `text` of [`read_with_granit`], or its copy with a space
/// at each offset of `inserted` (offsets of the copy).
fn granit_pass(file: &Arc<SourceFile>, start: usize, read: &str, inserted: &[usize]) -> Pass {
    // An offset of the copy as one of the text: less the spaces put in before it.
    let original = |at: usize| at - inserted.partition_point(|&q| q < at);
    let mut options = Options::default();
    options.set_emit_comments(false);
    options.block_scalar_eof_without_line_feed = true;
    options.bom_inside_document_as_content = true;
    let mut builder = Builder::new(file);
    for item in Parser::new_from_str_with_options(read, options) {
        let (event, span) = match item {
            Ok(read) => read,
            Err(e) => {
                let at = e.marker().byte_offset().unwrap_or(0);
                if e.info().ends_with("unknown anchor") {
                    if let Some(split) = go_yaml_alias_name_end(read, at) {
                        return Pass::SplitAliasAt(split);
                    }
                }
                let offset = start + original(at);
                return Pass::Read(Err(YamlError::at(
                    file,
                    offset,
                    with_alias_name(&e.info(), file.text(), offset),
                )));
            }
        };
        let from = start + original(span.start.byte_offset().unwrap_or(0));
        let to = span
            .end
            .byte_offset()
            .map_or(from, |end| start + original(end));
        if let Err(e) = builder.event(event, from, to) {
            return Pass::Read(Err(e));
        }
    }
    Pass::Read(Ok(builder.docs))
}

/// For an alias at `at` in `text` written `*name:` (a name of ASCII letters, digits, `_` and
/// `-` right before a `:`): where that name ends.
fn go_yaml_alias_name_end(text: &str, at: usize) -> Option<usize> {
    let b = text.as_bytes();
    if b.get(at) != Some(&b'*') {
        return None;
    }
    let end = go_yaml_name_end(b, at + 1);
    (end > at + 1 && b.get(end) == Some(&b':')).then_some(end)
}

/// Where an anchor's or alias's name starting at `from` ends as go-yaml (and libyaml) reads
/// it: after the ASCII letters, digits, `_` and `-` there.
pub(crate) fn go_yaml_name_end(b: &[u8], from: usize) -> usize {
    from + b
        .get(from..)
        .unwrap_or_default()
        .iter()
        .take_while(|&&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
        .count()
}

/// Whether `c` ends an anchor's or alias's name: white space or a flow indicator.
pub(crate) fn ends_anchor_name(c: char) -> bool {
    c.is_whitespace() || matches!(c, ',' | '[' | ']' | '{' | '}')
}

/// granit-parser's message, naming the anchor when an alias refers to none: the alias is the
/// `*name` at the error's offset (kustomize says `unknown anchor 'pvc' referenced`).
fn with_alias_name(info: &str, text: &str, offset: usize) -> String {
    if !info.ends_with("unknown anchor") {
        return info.to_string();
    }
    let name: String = text
        .get(offset..)
        .and_then(|rest| rest.strip_prefix('*'))
        .map(|rest| rest.chars().take_while(|&c| !ends_anchor_name(c)).collect())
        .unwrap_or_default();
    if name.is_empty() {
        info.to_string()
    } else {
        format!("{info} '{name}'")
    }
}

/// How big a finished node is: what copying it for an alias costs, and how deep it nests.
#[derive(Debug, Clone, Copy, Default)]
struct Extent {
    /// The node and everything under it.
    nodes: usize,
    /// Collections from the node down to its deepest leaf (0 for a scalar).
    height: usize,
}

impl Extent {
    const SCALAR: Extent = Extent {
        nodes: 1,
        height: 0,
    };

    /// Adds a child to a collection's running extent.
    fn add_child(&mut self, child: Extent) {
        self.nodes += child.nodes;
        self.height = self.height.max(child.height + 1);
    }
}

enum Frame {
    Sequence {
        anchor: usize,
        start: usize,
        /// Where its items start in the builder's `items`.
        first: usize,
        extent: Extent,
    },
    Mapping {
        anchor: usize,
        start: usize,
        /// Where its entries start in the builder's `entries`.
        first: usize,
        pending_key: Option<Node>,
        extent: Extent,
    },
}

impl Frame {
    fn extent_mut(&mut self) -> &mut Extent {
        match self {
            Frame::Sequence { extent, .. } | Frame::Mapping { extent, .. } => extent,
        }
    }
}

/// Nodes made from parser events, aliases expanded and merge keys applied.
pub(crate) struct Builder {
    file: Arc<SourceFile>,
    stack: Vec<Frame>,
    /// The items and entries of the open collections, innermost last: each collection takes
    /// its own into a vector of exactly their number when it closes, instead of growing one
    /// by doubling as they come.
    items: Vec<Node>,
    entries: Vec<(Node, Node)>,
    anchors: HashMap<usize, (Node, Extent)>,
    pub(crate) docs: Vec<Node>,
    /// Nodes written out in the text so far.
    written: usize,
    /// Nodes alias expansion has added so far.
    expanded: usize,
}

impl Builder {
    pub(crate) fn new(file: &Arc<SourceFile>) -> Builder {
        Builder {
            file: file.clone(),
            stack: Vec::new(),
            items: Vec::new(),
            entries: Vec::new(),
            anchors: HashMap::new(),
            docs: Vec::new(),
            written: 0,
            expanded: 0,
        }
    }

    fn span(&self, start: usize, end: usize) -> Option<Span> {
        Some(Span {
            file: self.file.clone(),
            start,
            end,
        })
    }

    pub(crate) fn event(
        &mut self,
        event: Event<'_>,
        start: usize,
        end: usize,
    ) -> Result<(), YamlError> {
        match event {
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
            Event::DocumentStart(..) => self.anchors.clear(),
            Event::Scalar(value, style, anchor, tag) => {
                self.written += 1;
                let node = Node {
                    kind: NodeKind::Scalar(Scalar {
                        value: value.into(),
                        style: convert_style(style),
                        tag: tag.map(|t| crate::node::shared_tag(&short_tag(&t))),
                    }),
                    span: self.span(start, end),
                };
                self.finish(node, Extent::SCALAR, anchor)?;
            }
            Event::Alias(id) => {
                let (node, extent) = self.expand(id, start)?;
                self.finish(node, extent, 0)?;
            }
            Event::SequenceStart(_, anchor, _) => {
                self.written += 1;
                self.stack.push(Frame::Sequence {
                    anchor,
                    start,
                    first: self.items.len(),
                    extent: Extent::SCALAR,
                });
            }
            Event::MappingStart(_, anchor, _) => {
                self.written += 1;
                self.stack.push(Frame::Mapping {
                    anchor,
                    start,
                    first: self.entries.len(),
                    pending_key: None,
                    extent: Extent::SCALAR,
                });
            }
            Event::SequenceEnd => {
                if let Some(Frame::Sequence {
                    anchor,
                    start: s,
                    first,
                    extent,
                }) = self.stack.pop()
                {
                    let items = self.items.drain(first..).collect();
                    let node = Node {
                        kind: NodeKind::Sequence(items),
                        span: self.span(s, end.max(s)),
                    };
                    self.finish(node, extent, anchor)?;
                }
            }
            Event::MappingEnd => {
                if let Some(Frame::Mapping {
                    anchor,
                    start: s,
                    first,
                    extent,
                    ..
                }) = self.stack.pop()
                {
                    let entries = self.entries.drain(first..).collect();
                    let entries = apply_merge_keys(entries, &self.file)?;
                    let node = Node {
                        kind: NodeKind::Mapping(entries),
                        span: self.span(s, end.max(s)),
                    };
                    self.finish(node, extent, anchor)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A copy of the node anchored as `id`, for an alias at byte `at`, if the budget allows it.
    fn expand(&mut self, id: usize, at: usize) -> Result<(Node, Extent), YamlError> {
        let Some(&(_, extent)) = self.anchors.get(&id) else {
            let message = with_alias_name("unknown anchor", self.file.text(), at);
            return Err(YamlError::at(&self.file, at, message));
        };
        self.charge(extent.nodes, at, "expanding this alias")?;
        let depth = self.stack.len() + extent.height;
        if depth > MAX_DEPTH {
            return Err(YamlError::at(
                &self.file,
                at,
                format!(
                    "document contains excessive aliasing: expanding this alias would nest \
                     collections {depth} deep, more than {MAX_DEPTH}"
                ),
            ));
        }
        Ok((self.anchors[&id].0.clone(), extent))
    }

    /// Counts `nodes` copied for aliases against the budget. Keeping an anchored node for later
    /// aliases is a copy too: anchors nested inside anchors would otherwise copy a large node
    /// once per level.
    fn charge(&mut self, nodes: usize, at: usize, doing: &str) -> Result<(), YamlError> {
        let budget = ALIAS_NODE_FLOOR.max(self.written.saturating_mul(ALIAS_NODE_RATIO));
        let expanded = self.expanded.saturating_add(nodes);
        if expanded > budget {
            return Err(YamlError::at(
                &self.file,
                at,
                format!(
                    "document contains excessive aliasing: {doing} would make aliases copy \
                     more than {budget} nodes, for {} nodes written in the text",
                    self.written
                ),
            ));
        }
        self.expanded = expanded;
        Ok(())
    }

    fn finish(&mut self, node: Node, extent: Extent, anchor: usize) -> Result<(), YamlError> {
        if anchor != 0 {
            let at = node.span.as_ref().map_or(0, |s| s.start);
            self.charge(extent.nodes, at, "keeping this anchored node")?;
            self.anchors.insert(anchor, (node.clone(), extent));
        }
        let Some(frame) = self.stack.last_mut() else {
            self.docs.push(node);
            return Ok(());
        };
        frame.extent_mut().add_child(extent);
        match frame {
            Frame::Sequence { .. } => self.items.push(node),
            Frame::Mapping { pending_key, .. } => match pending_key.take() {
                None => *pending_key = Some(node),
                Some(key) => self.entries.push((key, node)),
            },
        }
        Ok(())
    }
}

fn convert_style(style: GStyle) -> ScalarStyle {
    match style {
        GStyle::Plain => ScalarStyle::Plain,
        GStyle::SingleQuoted => ScalarStyle::SingleQuoted,
        GStyle::DoubleQuoted => ScalarStyle::DoubleQuoted,
        GStyle::Literal => ScalarStyle::Literal,
        GStyle::Folded => ScalarStyle::Folded,
    }
}

fn short_tag(tag: &Tag) -> String {
    if tag.is_yaml_core_schema() || tag.handle() == "tag:yaml.org,2002:" {
        format!("!!{}", tag.suffix())
    } else {
        format!("{}{}", tag.handle(), tag.suffix())
    }
}

fn is_merge_key(key: &Node) -> bool {
    match &key.kind {
        NodeKind::Scalar(s) => {
            s.value == "<<"
                && (s.tag() == Some("!!merge")
                    || (s.tag.is_none() && s.style == ScalarStyle::Plain))
        }
        _ => false,
    }
}

/// Keys already in a mapping being merged into. Scalar keys (nearly all of them) are hashed so
/// that merging stays linear in the size of the mappings; the rare collection key is compared
/// one by one.
#[derive(Default)]
struct KeySet {
    scalars: HashSet<Scalar>,
    collections: Vec<NodeKind>,
}

impl KeySet {
    /// Adds `key`, returning whether it was new.
    fn insert(&mut self, key: &Node) -> bool {
        match &key.kind {
            NodeKind::Scalar(s) => self.scalars.insert(s.clone()),
            kind if self.collections.contains(kind) => false,
            kind => {
                self.collections.push(kind.clone());
                true
            }
        }
    }
}

/// Applies `<<` merge keys: keys written in the mapping win over merged ones, and among merged
/// mappings the first listed wins.
fn apply_merge_keys(
    entries: Vec<(Node, Node)>,
    file: &Arc<SourceFile>,
) -> Result<Vec<(Node, Node)>, YamlError> {
    if !entries.iter().any(|(k, _)| is_merge_key(k)) {
        return Ok(entries);
    }
    let mut taken = KeySet::default();
    for (key, _) in entries.iter().filter(|(k, _)| !is_merge_key(k)) {
        taken.insert(key);
    }
    let mut out: Vec<(Node, Node)> = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        if !is_merge_key(&key) {
            out.push((key, value));
            continue;
        }
        let sources: Vec<Node> = match value.kind {
            NodeKind::Mapping(_) => vec![value],
            NodeKind::Sequence(items) if items.iter().all(Node::is_mapping) => items,
            _ => {
                let at = key.span.as_ref().map_or(0, |s| s.start);
                return Err(YamlError::at(
                    file,
                    at,
                    "map merge requires map or sequence of maps as the value".into(),
                ));
            }
        };
        for source in sources {
            if let NodeKind::Mapping(merged) = source.kind {
                for (k, v) in merged {
                    if taken.insert(&k) {
                        out.push((k, v));
                    }
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(node: &Node, out: &mut Vec<(usize, usize)>) {
        if let Some(s) = &node.span {
            out.push((s.start, s.end));
        }
        match &node.kind {
            NodeKind::Scalar(_) => {}
            NodeKind::Sequence(items) => items.iter().for_each(|i| spans(i, out)),
            NodeKind::Mapping(entries) => entries.iter().for_each(|(k, v)| {
                spans(k, out);
                spans(v, out);
            }),
        }
    }

    /// Bodies of inline patches (block mappings, sequences, several documents, a block scalar,
    /// a body ending without a line break, malformed ones) after blank lines: parsed from the
    /// start of their first line to their end, with the file's text after them unread, they
    /// read as the whole text does, node for node and span for span, and fail at the same place.
    #[test]
    fn parsing_from_a_line_after_blanks_reads_as_the_whole_text() {
        let bodies = [
            "      apiVersion: v1\n      kind: ConfigMap\n      data:\n        a: b\n",
            "  - op: add\n    path: /x\n    value: [1, {a: b}]\n",
            "    a: 1\n    ---\n    b: |\n      text\n        more\n",
            "    key: value",
            "    a: [1\n",
            "    a: b\n   c: d\n",
            "\tx: 1\n",
        ];
        let tails = ["", "\n", "   \n      \n"];
        // The rest of the file after the part, never read: nothing, text that would not
        // parse, text that would add a document.
        let rests = ["", "a: [\n", "\n---\nb: c\n"];
        let mut compared = 0;
        for body in bodies {
            for head in ["", "\n", "   \n\n", "          \n  \n"] {
                for (tail, rest) in tails.iter().flat_map(|t| rests.iter().map(move |r| (t, r))) {
                    let text = format!("{head}{body}{tail}");
                    let whole = parse_documents("k.yaml", &text);
                    let file = format!("{text}{rest}");
                    let from = parse_documents_from("k.yaml", &file, head.len()..text.len());
                    match (&whole, &from) {
                        (Ok(a), Ok(b)) => {
                            assert_eq!(a, b, "{text:?}");
                            let (mut sa, mut sb) = (Vec::new(), Vec::new());
                            a.iter().for_each(|n| spans(n, &mut sa));
                            b.iter().for_each(|n| spans(n, &mut sb));
                            assert_eq!(sa, sb, "{text:?}");
                            compared += 1;
                        }
                        (Err(a), Err(b)) => {
                            assert_eq!((a.offset, &a.message), (b.offset, &b.message), "{text:?}");
                        }
                        _ => panic!("{text:?}: {whole:?} against {from:?}"),
                    }
                }
            }
        }
        assert!(compared >= 40, "{compared}");
        // Not after blanks only, or not at a line start: the whole text is parsed.
        let text = "a: 1\nb: 2\n";
        assert_eq!(
            parse_documents_from("k.yaml", text, 5..text.len()).unwrap(),
            parse_documents("k.yaml", text).unwrap()
        );
        assert_eq!(
            parse_documents_from("k.yaml", "  \n  a: 1\n", 1..10).unwrap(),
            parse_documents("k.yaml", "  \n  a: 1\n").unwrap()
        );
    }
}
