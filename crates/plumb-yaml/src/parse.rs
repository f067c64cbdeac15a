//! Reading YAML text into [`Node`]s: a multi-document stream, aliases expanded, `<<` merge keys
//! applied, every node carrying its byte span.

use crate::error::YamlError;
use crate::node::{Node, NodeKind, Scalar, ScalarStyle};
use crate::source::{SourceFile, Span};
use granit_parser::{Event, Options, Parser, ScalarStyle as GStyle, Tag};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// Parses every document of `text` (read from `path`). Empty documents come back as null
/// scalars so that callers can tell "empty" from "absent".
pub fn parse_documents(path: impl AsRef<Path>, text: &str) -> Result<Vec<Node>, YamlError> {
    let file = SourceFile::new(path.as_ref(), text);
    parse_source(&file)
}

/// Parses a [`SourceFile`] already shared with other stages.
pub fn parse_source(file: &Arc<SourceFile>) -> Result<Vec<Node>, YamlError> {
    let mut options = Options::default();
    options.set_emit_comments(false);
    options.block_scalar_eof_without_line_feed = true;
    options.bom_inside_document_as_content = true;
    let text = file.text();
    let mut builder = Builder {
        file: file.clone(),
        stack: Vec::new(),
        anchors: HashMap::new(),
        docs: Vec::new(),
    };
    for item in Parser::new_from_str_with_options(text, options) {
        let (event, span) = item.map_err(|e| {
            let offset = e.marker().byte_offset().unwrap_or(0);
            YamlError::at(file, offset, e.info())
        })?;
        let start = span.start.byte_offset().unwrap_or(0);
        let end = span.end.byte_offset().unwrap_or(start);
        builder.event(event, start, end)?;
    }
    Ok(builder.docs)
}

enum Frame {
    Sequence {
        anchor: usize,
        start: usize,
        items: Vec<Node>,
    },
    Mapping {
        anchor: usize,
        start: usize,
        entries: Vec<(Node, Node)>,
        pending_key: Option<Node>,
    },
}

struct Builder {
    file: Arc<SourceFile>,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Node>,
    docs: Vec<Node>,
}

impl Builder {
    fn span(&self, start: usize, end: usize) -> Option<Span> {
        Some(Span {
            file: self.file.clone(),
            start,
            end,
        })
    }

    fn event(&mut self, event: Event<'_>, start: usize, end: usize) -> Result<(), YamlError> {
        match event {
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
            Event::DocumentStart(..) => self.anchors.clear(),
            Event::Scalar(value, style, anchor, tag) => {
                let node = Node {
                    kind: NodeKind::Scalar(Scalar {
                        value: value.into_owned(),
                        style: convert_style(style),
                        tag: tag.map(|t| short_tag(&t)),
                    }),
                    span: self.span(start, end),
                };
                self.finish(node, anchor)?;
            }
            Event::Alias(id) => {
                let Some(node) = self.anchors.get(&id).cloned() else {
                    return Err(YamlError::at(&self.file, start, "unknown anchor".into()));
                };
                self.finish(node, 0)?;
            }
            Event::SequenceStart(_, anchor, _) => self.stack.push(Frame::Sequence {
                anchor,
                start,
                items: Vec::new(),
            }),
            Event::MappingStart(_, anchor, _) => self.stack.push(Frame::Mapping {
                anchor,
                start,
                entries: Vec::new(),
                pending_key: None,
            }),
            Event::SequenceEnd => {
                if let Some(Frame::Sequence {
                    anchor,
                    start: s,
                    items,
                }) = self.stack.pop()
                {
                    let node = Node {
                        kind: NodeKind::Sequence(items),
                        span: self.span(s, end.max(s)),
                    };
                    self.finish(node, anchor)?;
                }
            }
            Event::MappingEnd => {
                if let Some(Frame::Mapping {
                    anchor,
                    start: s,
                    entries,
                    ..
                }) = self.stack.pop()
                {
                    let entries = apply_merge_keys(entries, &self.file)?;
                    let node = Node {
                        kind: NodeKind::Mapping(entries),
                        span: self.span(s, end.max(s)),
                    };
                    self.finish(node, anchor)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, node: Node, anchor: usize) -> Result<(), YamlError> {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => self.docs.push(node),
            Some(Frame::Sequence { items, .. }) => items.push(node),
            Some(Frame::Mapping {
                entries,
                pending_key,
                ..
            }) => match pending_key.take() {
                None => *pending_key = Some(node),
                Some(key) => entries.push((key, node)),
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
                && (s.tag.as_deref() == Some("!!merge")
                    || (s.tag.is_none() && s.style == ScalarStyle::Plain))
        }
        _ => false,
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
    let explicit: Vec<Node> = entries
        .iter()
        .filter(|(k, _)| !is_merge_key(k))
        .map(|(k, _)| k.clone())
        .collect();
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
                    let taken = explicit.contains(&k) || out.iter().any(|(o, _)| *o == k);
                    if !taken {
                        out.push((k, v));
                    }
                }
            }
        }
    }
    Ok(out)
}
