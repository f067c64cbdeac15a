//! A reader for the block YAML nearly every Kubernetes manifest is written in: block mappings
//! and sequences, one-line plain and quoted scalars, literal and folded blocks, one-line flow
//! collections of scalars, aliases and such collections, anchors and aliases of values, aliases
//! of keys, comments and `---` between documents.
//! It gives the parser's builder exactly the events, with exactly the byte spans, that
//! granit-parser gives for the same text, several times faster, and gives up on anything else
//! (tags, multi-line plain and quoted scalars, multi-line flow collections, tabs,
//! carriage returns, anything malformed): the caller then parses the text with granit-parser,
//! which also reports every error. Giving up is always safe; accepting text granit-parser would
//! read differently is never, with one exception where go-yaml (and so kustomize) is more
//! lenient than both the YAML spec and granit-parser: a block scalar's `|` or `>` on the line
//! after its key, in the key's column (see `value`).
//!
//! `tests/block_reader.rs` compares the two readers event by event and span by span on every
//! YAML file of the conformance corpus and of the repository's examples and fixtures.

use crate::error::YamlError;
use crate::parse::Builder;
use granit_parser::{Event, ScalarStyle as GStyle, StructureStyle};
use std::borrow::Cow;

/// The text is not in the subset: let granit-parser read it.
pub(crate) struct GiveUp;

type Read<T> = Result<T, GiveUp>;

/// The longest implicit key YAML allows.
const MAX_KEY: usize = 1024;

/// Feeds `builder` the events of `text` (spans shifted by `offset`), or gives up. A builder
/// error (a merge key's value that is no mapping) gives up too: granit-parser reads such text
/// to the same events and reports the same error.
pub(crate) fn read(text: &str, offset: usize, builder: &mut Builder) -> Read<()> {
    if !plain_bytes(text.as_bytes()) {
        return Err(GiveUp);
    }
    let mut reader = Reader {
        b: text.as_bytes(),
        text,
        offset,
        builder,
        anchors: Vec::new(),
        anchor: 0,
        anchor_ids: 0,
    };
    reader.stream()
}

/// Whether `b` holds only characters this reader handles the way granit-parser does: no
/// control character but the line feed and the tab, no DEL, no C1 control or NEL, no byte
/// order mark, no U+2028/U+2029, no U+FFFE/U+FFFF.
fn plain_bytes(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if (0x20..0x7f).contains(&c) {
            i += 1;
            continue;
        }
        match c {
            b'\n' | b'\t' => {}
            0xc2 if b.get(i + 1).is_some_and(|&n| (0x80..=0x9f).contains(&n)) => return false,
            0xe2 if b.get(i + 1) == Some(&0x80) && matches!(b.get(i + 2), Some(0xa8 | 0xa9)) => {
                return false
            }
            0xef if b.get(i + 1) == Some(&0xbb) && b.get(i + 2) == Some(&0xbf) => return false,
            0xef if b.get(i + 1) == Some(&0xbf) && matches!(b.get(i + 2), Some(0xbe | 0xbf)) => {
                return false
            }
            0x80.. => {}
            _ => return false,
        }
        i += 1;
    }
    true
}

struct Reader<'t, 'b> {
    text: &'t str,
    b: &'t [u8],
    offset: usize,
    builder: &'b mut Builder,
    /// The anchors of the current document by name, the latest definition last.
    anchors: Vec<(&'t str, usize)>,
    /// The anchor written before the node about to start (0: none).
    anchor: usize,
    /// Anchor ids handed out so far.
    anchor_ids: usize,
}

/// Where a node's block ended: the start of the line after it, from which the next content
/// line is looked for.
type Next = usize;

impl<'t> Reader<'t, '_> {
    fn emit(&mut self, event: Event<'t>, from: usize, to: usize) -> Read<()> {
        self.builder
            .event(event, self.offset + from, self.offset + to)
            .map_err(|_: YamlError| GiveUp)
    }

    fn scalar(&mut self, text: Cow<'t, str>, style: GStyle, from: usize, to: usize) -> Read<()> {
        let anchor = std::mem::take(&mut self.anchor);
        self.emit(Event::Scalar(text, style, anchor, None), from, to)
    }

    /// Emits a collection's start event, carrying the anchor written before it.
    fn start(&mut self, mapping: bool, style: StructureStyle, from: usize, to: usize) -> Read<()> {
        let anchor = std::mem::take(&mut self.anchor);
        let event = if mapping {
            Event::MappingStart(style, anchor, None)
        } else {
            Event::SequenceStart(style, anchor, None)
        };
        self.emit(event, from, to)
    }

    /// An anchor `&name` at `i`, for the node after it: gives where the spaces after it end.
    fn anchor_at(&mut self, i: usize) -> Read<usize> {
        let end = self.name_end(i + 1);
        if end == i + 1 || !self.blank_at(end) || self.anchor != 0 {
            return Err(GiveUp);
        }
        self.anchor_ids += 1;
        self.anchor = self.anchor_ids;
        self.anchors.push((&self.text[i + 1..end], self.anchor_ids));
        Ok(self.skip_spaces(end))
    }

    /// Where an anchor's or alias's name starting at `i` ends. Only ASCII bytes end one (the
    /// bytes of a wider character are part of the name), and of ASCII white space only the
    /// space, tab and line feed reach this reader.
    fn name_end(&self, mut i: usize) -> usize {
        while i < self.b.len()
            && !(self.b[i].is_ascii() && crate::parse::ends_anchor_name(char::from(self.b[i])))
        {
            i += 1;
        }
        i
    }

    /// Where the name of an alias key `*name` at `i` ends: at the `: ` right after a name of
    /// ASCII letters, digits, `_` and `-` (go-yaml's names: `*app:`), otherwise where
    /// [`Reader::name_end`] ends it (`*app :`).
    fn alias_key_end(&self, i: usize) -> usize {
        let word = crate::parse::go_yaml_name_end(self.b, i + 1);
        if word > i + 1 && self.at(word) == b':' && self.blank_at(word + 1) {
            word
        } else {
            self.name_end(i + 1)
        }
    }

    fn null(&mut self, at: usize) -> Read<()> {
        self.scalar(Cow::Borrowed("~"), GStyle::Plain, at, at)
    }

    fn at(&self, i: usize) -> u8 {
        self.b.get(i).copied().unwrap_or(b'\n')
    }

    /// Whether byte `i` ends a token: a space, a line break or the end of the text.
    fn blank_at(&self, i: usize) -> bool {
        i >= self.b.len() || matches!(self.b[i], b' ' | b'\n')
    }

    /// The first line at or after the line starting at `line` that holds content (not blank,
    /// not only a comment): its start and indentation, `None` at the end of the text. A tab in
    /// a line's indentation gives up.
    fn next_content(&self, mut line: usize) -> Read<Option<(usize, usize)>> {
        loop {
            let i = self.skip_spaces(line);
            match self.b.get(i) {
                None => return Ok(None),
                Some(b'\n') => line = i + 1,
                Some(b'#') => line = (self.line_end(i) + 1).min(self.b.len()),
                Some(b'\t') => return Err(GiveUp),
                Some(_) => return Ok(Some((line, i - line))),
            }
        }
    }

    /// The position of the line break ending the line that holds `i` (the text's length on
    /// its last line).
    fn line_end(&self, i: usize) -> usize {
        self.b[i.min(self.b.len())..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(self.b.len(), |p| i + p)
    }

    /// After a token ending at `i`: spaces, perhaps a comment, then the line's end. Gives the
    /// start of the next line.
    fn rest_of_line(&self, token_end: usize) -> Read<Next> {
        let i = self.skip_spaces(token_end);
        match self.b.get(i) {
            None => Ok(self.b.len()),
            Some(b'\n') => Ok(i + 1),
            Some(b'#') if i > token_end => Ok((self.line_end(i) + 1).min(self.b.len())),
            _ => Err(GiveUp),
        }
    }

    /// Whether a document marker (`---` or `...`) starts at `i`, the start of a line.
    fn marker_at(&self, i: usize) -> bool {
        let rest = &self.b[i..];
        (rest.starts_with(b"---") || rest.starts_with(b"...")) && self.blank_at(i + 3)
    }

    /// Whether a document start marker `---` begins at `i`, the start of a line.
    fn document_start_at(&self, i: usize) -> bool {
        self.b[i..].starts_with(b"---") && self.blank_at(i + 3)
    }

    /// Whether a block sequence entry (`-` then a space or the line's end) starts at `i`.
    fn entry_at(&self, i: usize) -> bool {
        self.at(i) == b'-' && self.blank_at(i + 1)
    }

    fn stream(&mut self) -> Read<()> {
        let mut line = 0;
        let mut documents = 0;
        while let Some((start, indent)) = self.next_content(line)? {
            let explicit = indent == 0 && self.document_start_at(start);
            if indent == 0 && self.b[start..].starts_with(b"...") && self.blank_at(start + 3) {
                return Err(GiveUp);
            }
            // A document's root may be indented: an inline patch is read in place, in the
            // column its block scalar put it.
            let (mut content, mut column) = (start + indent, indent);
            if explicit {
                let (next, next_indent) = self
                    .next_content(self.rest_of_line(start + 3)?)?
                    .ok_or(GiveUp)?;
                (content, column) = (next + next_indent, next_indent);
            }
            if (column == 0 && self.marker_at(content)) || self.at(content) == b'%' {
                return Err(GiveUp);
            }
            self.anchors.clear();
            self.emit(Event::DocumentStart(explicit, None), start, start)?;
            let (_, next) = self.node(content, column)?;
            self.emit(Event::DocumentEnd, next, next)?;
            documents += 1;
            line = next;
            // What follows a document's root is another document or nothing.
            if let Some((after, _)) = self.next_content(next)? {
                if !self.document_start_at(after) {
                    return Err(GiveUp);
                }
            }
        }
        if documents == 0 {
            return Err(GiveUp);
        }
        Ok(())
    }

    /// A block collection whose first content is at `i`, in column `column`: a sequence or a
    /// mapping (a scalar alone there gives up). Gives where it ended (its end event's place)
    /// and the line to go on from.
    fn node(&mut self, i: usize, column: usize) -> Read<(usize, Next)> {
        if self.entry_at(i) {
            self.sequence(i, column, false)
        } else if self.key_colon(i)?.is_some() {
            self.mapping(i, column)
        } else {
            Err(GiveUp)
        }
    }

    /// The end of a block collection in column `column` whose last entry left off at `line`:
    /// its end event's place and the start of the line after it, or `None` when the next
    /// content line is another entry (at `column`, where `entry` says one starts).
    fn close_or_next(
        &self,
        line: Next,
        column: usize,
        entry: impl Fn(usize) -> Read<bool>,
    ) -> Read<Result<usize, (usize, Next)>> {
        match self.next_content(line)? {
            None => Ok(Err((self.b.len(), line))),
            Some((start, indent)) => {
                let content = start + indent;
                if indent > column {
                    return Err(GiveUp);
                }
                if indent == column && !(indent == 0 && self.marker_at(content)) && entry(content)?
                {
                    return Ok(Ok(content));
                }
                Ok(Err((content, start)))
            }
        }
    }

    fn mapping(&mut self, first: usize, column: usize) -> Read<(usize, Next)> {
        self.start(true, StructureStyle::Block, first, first)?;
        let mut key = first;
        loop {
            let colon = self.key(key)?;
            let line = self.value(colon, column)?;
            // At the mapping's column only another key may follow: `key` gives up on anything
            // else, and finds its `:` once.
            match self.close_or_next(line, column, |_| Ok(true))? {
                Ok(next) => key = next,
                Err((end, next)) => {
                    self.emit(Event::MappingEnd, end, end)?;
                    return Ok((end, next));
                }
            }
        }
    }

    /// A block sequence whose first `-` is at `first`, in column `column`; `indentless` when
    /// it is the value of a mapping key in the same column.
    fn sequence(&mut self, first: usize, column: usize, indentless: bool) -> Read<(usize, Next)> {
        // granit-parser places an indentless sequence's start at its first item's first event;
        // the item is read first, with the start event put before it.
        let mut dash = first;
        let mut started = false;
        if !indentless {
            self.start(false, StructureStyle::Block, first, first)?;
            started = true;
        }
        loop {
            let line = self.item(dash, column, &mut started)?;
            let entry = |i: usize| -> Read<bool> {
                if self.entry_at(i) {
                    Ok(true)
                } else if indentless {
                    Ok(false)
                } else {
                    Err(GiveUp)
                }
            };
            match self.close_or_next(line, column, entry)? {
                Ok(next) => dash = next,
                Err((end, next)) => {
                    self.emit(Event::SequenceEnd, end, end)?;
                    return Ok((end, next));
                }
            }
        }
    }

    /// Emits an indentless sequence's start at `at` before its first item's first event.
    fn start_indentless(&mut self, started: &mut bool, at: usize) -> Read<()> {
        if !*started {
            *started = true;
            self.start(false, StructureStyle::Block, at, at)?;
        }
        Ok(())
    }

    /// The item after the `-` at `dash` of a sequence in column `column`.
    fn item(&mut self, dash: usize, column: usize, started: &mut bool) -> Read<Next> {
        let mut i = self.skip_spaces(dash + 1);
        // The item's own anchor: an indentless sequence's start, emitted just before the
        // item, carries the anchor written before the sequence, if any.
        let mut anchor = 0;
        // granit-parser places an indentless sequence's start at its first token: the anchor.
        let anchor_place = (self.at(i) == b'&').then_some(i);
        if self.at(i) == b'&' {
            let sequence_anchor = std::mem::take(&mut self.anchor);
            i = self.anchor_at(i)?;
            anchor = std::mem::replace(&mut self.anchor, sequence_anchor);
        }
        // A comment ends the line: the item is on the lines below, or empty (placed, as
        // granit-parser places it, at the line's end).
        if self.at(i) == b'#' {
            i = self.line_end(i);
        }
        match self.b.get(i) {
            None | Some(b'\n') => {
                let line = (i + 1).min(self.b.len());
                match self.next_content(line)? {
                    Some((start, indent)) if indent > column => {
                        // An indentless sequence starts at the end of this line.
                        let content = start + indent;
                        self.begin_item(started, anchor_place.unwrap_or(i), anchor)?;
                        Ok(self.node(content, indent)?.1)
                    }
                    _ if anchor != 0 => Err(GiveUp),
                    _ => {
                        self.begin_item(started, anchor_place.unwrap_or(i), anchor)?;
                        self.null(i)?;
                        Ok(line)
                    }
                }
            }
            Some(_) => {
                let inner = column + (i - dash);
                let key = self.key_colon(i)?.is_some();
                if self.entry_at(i) || (anchor != 0 && key) {
                    return Err(GiveUp);
                }
                self.begin_item(started, anchor_place.unwrap_or(i), anchor)?;
                if key {
                    return Ok(self.mapping(i, inner)?.1);
                }
                self.inline_value(i, column)
            }
        }
    }

    /// Before an item's first event at `at`: an indentless sequence's start, then the item's
    /// anchor for that event.
    fn begin_item(&mut self, started: &mut bool, at: usize, anchor: usize) -> Read<()> {
        self.start_indentless(started, at)?;
        self.anchor = anchor;
        Ok(())
    }

    /// The value after the `:` at `colon` of a key in column `column`.
    fn value(&mut self, colon: usize, column: usize) -> Read<Next> {
        let mut i = self.skip_spaces(colon + 1);
        if self.at(i) == b'&' {
            i = self.anchor_at(i)?;
        }
        if self.at(i) == b'#' {
            i = self.line_end(i);
        }
        match self.b.get(i) {
            None | Some(b'\n') => {
                let line = (i + 1).min(self.b.len());
                match self.next_content(line)? {
                    Some((start, indent)) if indent > column => {
                        Ok(self.node(start + indent, indent)?.1)
                    }
                    Some((start, indent)) if indent == column && self.entry_at(start + indent) => {
                        Ok(self.sequence(start + indent, column, true)?.1)
                    }
                    // go-yaml reads a literal or folded block whose indicator is on the line
                    // after its key, in the key's column, as the key's value (its text indented
                    // further): the YAML spec wants the indicator indented, granit-parser
                    // refuses it, kustomize builds it (mthorley/k8s-gitops's mosquitto.conf).
                    Some((start, indent))
                        if indent == column
                            && self.anchor == 0
                            && matches!(self.at(start + indent), b'|' | b'>') =>
                    {
                        self.block_scalar(start + indent, column)
                    }
                    _ if self.anchor != 0 => Err(GiveUp),
                    _ => {
                        self.null(colon)?;
                        Ok(line)
                    }
                }
            }
            Some(_) => self.inline_value(i, column),
        }
    }

    /// A scalar (or empty flow collection) starting at `i` on the line of its key or `-`, in a
    /// collection in column `column`. Nothing may continue it on a more indented line.
    fn inline_value(&mut self, i: usize, column: usize) -> Read<Next> {
        let next = match self.b[i] {
            b'|' | b'>' => return self.block_scalar(i, column),
            b'"' | b'\'' => {
                let end = match self.quoted_end(i) {
                    Some(end) => self.quoted_to(i, end)?,
                    None => self.quoted_lines(i, column)?,
                };
                self.rest_of_line(end)?
            }
            b'[' | b'{' => {
                let end = self.flow(i)?;
                self.rest_of_line(end)?
            }
            b'*' if self.anchor == 0 => {
                let end = self.alias(i)?;
                self.rest_of_line(end)?
            }
            c if starts_plain(c, self.at(i + 1)) => {
                let end = self.plain_value(i)?;
                self.scalar(Cow::Borrowed(&self.text[i..end]), GStyle::Plain, i, end)?;
                self.rest_of_line(end)?
            }
            _ => return Err(GiveUp),
        };
        match self.next_content(next)? {
            Some((_, indent)) if indent > column => Err(GiveUp),
            _ => Ok(next),
        }
    }

    /// A flow sequence or mapping on one line from its bracket at `i`, of scalars (plain or
    /// quoted; no empty value but that of a key written alone, no trailing comma) and flow
    /// collections of the same kind, keys scalars only: gives where it ends.
    fn flow(&mut self, i: usize) -> Read<usize> {
        let mapping = self.b[i] == b'{';
        let close = if mapping { b'}' } else { b']' };
        self.start(mapping, StructureStyle::Flow, i, i + 1)?;
        let mut j = self.skip_spaces(i + 1);
        if self.at(j) != close {
            loop {
                j = if mapping {
                    self.flow_scalar(j, true)?
                } else {
                    self.flow_value(j)?
                };
                let after = self.skip_spaces(j);
                if mapping && matches!(self.at(after), b',' | b'}') {
                    // A key without a value (`{ name: x, poster }`): granit-parser gives an
                    // empty one where the `,` or `}` after the key is.
                    self.scalar(Cow::Borrowed("~"), GStyle::Plain, after, after)?;
                } else if mapping {
                    if self.at(j) != b':' || self.at(j + 1) != b' ' {
                        return Err(GiveUp);
                    }
                    j = self.skip_spaces(j + 1);
                    j = self.flow_value(j)?;
                }
                j = self.skip_spaces(j);
                match self.at(j) {
                    b',' => {
                        j = self.skip_spaces(j + 1);
                        if self.at(j) == close {
                            return Err(GiveUp);
                        }
                    }
                    c if c == close => break,
                    _ => return Err(GiveUp),
                }
            }
        }
        let end = if mapping {
            Event::MappingEnd
        } else {
            Event::SequenceEnd
        };
        self.emit(end, j, j + 1)?;
        Ok(j + 1)
    }

    /// A value in a flow collection at `i`: a flow collection of its own (`{ drop: ["ALL"] }`)
    /// or a scalar. Gives where it ends.
    fn flow_value(&mut self, i: usize) -> Read<usize> {
        match self.at(i) {
            b'[' | b'{' => self.flow(i),
            b'*' => self.alias(i),
            _ => self.flow_scalar(i, false),
        }
    }

    /// An alias `*name` at `i` to an anchor read before it (no anchor pending for it): gives
    /// where its name ends.
    fn alias(&mut self, i: usize) -> Read<usize> {
        self.alias_to(i, self.name_end(i + 1))
    }

    /// [`Reader::alias`] whose name ends at `end`.
    fn alias_to(&mut self, i: usize, end: usize) -> Read<usize> {
        if end == i + 1 || self.anchor != 0 {
            return Err(GiveUp);
        }
        let name = &self.text[i + 1..end];
        let id = self
            .anchors
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|&(_, id)| id)
            .ok_or(GiveUp)?;
        self.emit(Event::Alias(id), i, end)?;
        Ok(end)
    }

    /// Emits a scalar in a flow collection at `i`: quoted, or plain up to the flow indicator
    /// (or, for a key, the `: `) after it. Gives where it ends.
    fn flow_scalar(&mut self, i: usize, key: bool) -> Read<usize> {
        let c = self.at(i);
        if c == b'"' || c == b'\'' {
            return self.quoted(i);
        }
        let next = self.at(i + 1);
        if !starts_plain(c, next) || (c == b'-' && matches!(next, b',' | b']' | b'}' | b'[' | b'{'))
        {
            return Err(GiveUp);
        }
        let mut j = i;
        let mut end = i;
        loop {
            match self.at(j) {
                b',' | b']' | b'}' | b'[' | b'{' => break,
                b':' if key && self.at(j + 1) == b' ' => break,
                b'\n' | b'\t' | b':' => return Err(GiveUp),
                b'#' if self.b[j - 1] == b' ' => return Err(GiveUp),
                b' ' => {}
                _ => end = j + 1,
            }
            j += 1;
        }
        // A key is followed by its `: ` at once; one followed by spaces is left to granit-parser
        // unless the mapping goes on without a value for it (`{a , b}`).
        if key && end != j && self.at(j) == b':' {
            return Err(GiveUp);
        }
        self.scalar(Cow::Borrowed(&self.text[i..end]), GStyle::Plain, i, end)?;
        Ok(end)
    }

    /// Where the spaces from `i` end.
    fn skip_spaces(&self, mut i: usize) -> usize {
        while i < self.b.len() && self.b[i] == b' ' {
            i += 1;
        }
        i
    }

    /// A one-line plain scalar value from `i`: its end, before trailing spaces and a comment.
    fn plain_value(&self, i: usize) -> Read<usize> {
        let mut j = i;
        let mut end = i;
        while j < self.b.len() {
            match self.b[j] {
                b'\n' => break,
                b'\t' => return Err(GiveUp),
                b':' if self.blank_at(j + 1) => return Err(GiveUp),
                b'#' if self.b[j - 1] == b' ' => break,
                b' ' => {}
                _ => end = j + 1,
            }
            j += 1;
        }
        Ok(end)
    }

    /// Where the `:` of a one-line implicit key starting at `i` is, `None` when the line
    /// holds no key there.
    fn key_colon(&self, i: usize) -> Read<Option<usize>> {
        let c = self.b[i];
        if c == b'*' {
            // An alias for a key (`*app :`): its name ends at the space before the `:`. Or at
            // the `:` itself (`*app:`): go-yaml, as libyaml, reads a name of letters, digits,
            // `_` and `-` only, where YAML 1.2 (and granit-parser) read `app:` as the name.
            let end = self.alias_key_end(i);
            let colon = self.skip_spaces(end);
            let key = end > i + 1 && self.at(colon) == b':' && self.blank_at(colon + 1);
            return Ok(key.then_some(colon));
        }
        let end = match c {
            b'"' | b'\'' => match self.quoted_end(i) {
                Some(end) => end,
                None => return Ok(None),
            },
            _ if starts_plain(c, self.at(i + 1)) => {
                let mut j = i;
                loop {
                    match self.b.get(j) {
                        None | Some(b'\n') => return Ok(None),
                        Some(b':') if self.blank_at(j + 1) => break j,
                        Some(b'#') if self.b[j - 1] == b' ' => return Ok(None),
                        Some(b'\t') => return Err(GiveUp),
                        Some(_) => j += 1,
                    }
                }
            }
            _ => return Ok(None),
        };
        if self.at(end) != b':' || !self.blank_at(end + 1) || self.at(end - 1) == b' ' {
            return Ok(None);
        }
        if end - i > MAX_KEY {
            return Err(GiveUp);
        }
        Ok(Some(end))
    }

    /// Emits the key at `i`; gives the place of its `:`.
    fn key(&mut self, i: usize) -> Read<usize> {
        let colon = self.key_colon(i)?.ok_or(GiveUp)?;
        if matches!(self.b[i], b'"' | b'\'') {
            self.quoted(i)?;
        } else if self.b[i] == b'*' {
            self.alias_to(i, self.alias_key_end(i))?;
        } else {
            self.scalar(Cow::Borrowed(&self.text[i..colon]), GStyle::Plain, i, colon)?;
        }
        Ok(colon)
    }

    /// The end of a quoted scalar starting at `i` that closes on its line.
    fn quoted_end(&self, i: usize) -> Option<usize> {
        let quote = self.b[i];
        let mut j = i + 1;
        while j < self.b.len() {
            match self.b[j] {
                b'\n' => return None,
                b'\\' if quote == b'"' && self.at(j + 1) != b'\n' => j += 2,
                b'\\' if quote == b'"' => return None,
                b'\'' if quote == b'\'' && self.at(j + 1) == b'\'' => j += 2,
                c if c == quote => return Some(j + 1),
                _ => j += 1,
            }
        }
        None
    }

    /// Emits the one-line quoted scalar at `i`; gives its end.
    fn quoted(&mut self, i: usize) -> Read<usize> {
        let end = self.quoted_end(i).ok_or(GiveUp)?;
        self.quoted_to(i, end)
    }

    /// [`Reader::quoted`] of the scalar from `i` to `end`, where [`Reader::quoted_end`] found
    /// its closing quote.
    fn quoted_to(&mut self, i: usize, end: usize) -> Read<usize> {
        let inner = &self.text[i + 1..end - 1];
        if inner.contains('\t') {
            return Err(GiveUp);
        }
        let (value, style) = if self.b[i] == b'\'' {
            let value = if inner.contains('\'') {
                Cow::Owned(inner.replace("''", "'"))
            } else {
                Cow::Borrowed(inner)
            };
            (value, GStyle::SingleQuoted)
        } else {
            let value = if inner.contains('\\') {
                Cow::Owned(unescape(inner).ok_or(GiveUp)?)
            } else {
                Cow::Borrowed(inner)
            };
            (value, GStyle::DoubleQuoted)
        };
        self.scalar(value, style, i, end)?;
        Ok(end)
    }

    /// Emits the quoted scalar value at `i` that goes on over lines (as YAML writers fold long
    /// ones), each line after the first indented past the collection in column `column`: the
    /// lines folded as YAML folds them, a line break between two lines a space and each empty
    /// line between them a line break, the spaces that indent a line dropped. Gives up on a tab,
    /// on a line that ends in spaces or in a backslash (an escaped line break), and on a line
    /// indented no further than the collection. Gives its end.
    fn quoted_lines(&mut self, i: usize, column: usize) -> Read<usize> {
        let quote = self.b[i];
        let mut raw = String::new();
        let (mut j, mut first, mut empty_lines) = (i + 1, true, 0);
        let end = loop {
            let mut k = j;
            let close = loop {
                match self.b.get(k) {
                    None | Some(b'\t') => return Err(GiveUp),
                    Some(b'\n') => break None,
                    Some(b'\\') if quote == b'"' => {
                        if matches!(self.b.get(k + 1), None | Some(b'\n')) {
                            return Err(GiveUp);
                        }
                        k += 2;
                    }
                    Some(b'\'') if quote == b'\'' && self.at(k + 1) == b'\'' => k += 2,
                    Some(&c) if c == quote => break Some(k),
                    Some(_) => k += 1,
                }
            };
            let content = &self.text[j..close.unwrap_or(k)];
            if close.is_none() && content.ends_with(' ') {
                return Err(GiveUp);
            }
            if first {
                raw.push_str(content);
                first = false;
            } else if content.is_empty() && close.is_none() {
                empty_lines += 1;
            } else {
                match empty_lines {
                    0 => raw.push(' '),
                    n => raw.extend(std::iter::repeat_n('\n', n)),
                }
                empty_lines = 0;
                raw.push_str(content);
            }
            if let Some(close) = close {
                break close + 1;
            }
            let next = k + 1;
            let at = self.skip_spaces(next);
            match self.b.get(at) {
                None | Some(b'\t') => return Err(GiveUp),
                Some(b'\n') => {}
                Some(_) if at - next <= column => return Err(GiveUp),
                Some(_) => {}
            }
            j = at;
        };
        let (value, style) = if quote == b'\'' {
            (raw.replace("''", "'"), GStyle::SingleQuoted)
        } else {
            (unescape(&raw).ok_or(GiveUp)?, GStyle::DoubleQuoted)
        };
        self.scalar(Cow::Owned(value), style, i, end)?;
        Ok(end)
    }

    /// A literal (`|`) or folded (`>`) block scalar whose header is at `i`, for a collection in
    /// column `column`.
    fn block_scalar(&mut self, i: usize, column: usize) -> Read<Next> {
        let folded = self.b[i] == b'>';
        let (chomp, header_end) = match self.at(i + 1) {
            c @ (b'-' | b'+') => (c, i + 2),
            _ => (b' ', i + 1),
        };
        if !self.blank_at(header_end) && self.at(header_end) != b'#' {
            return Err(GiveUp);
        }
        let first = self.rest_of_line(header_end)?;
        if first >= self.b.len() {
            return Err(GiveUp);
        }
        let indent = self.b[first..].iter().take_while(|&&c| c == b' ').count();
        if indent <= column || matches!(self.at(first + indent), b'\n' | b'\t') {
            return Err(GiveUp);
        }
        let mut value = String::new();
        // Empty lines after the last content line, which chomping decides about.
        let mut trailing = 0;
        // Whether a line was read (its line break is pending), and whether it was more
        // indented than the block: a folded block keeps the line breaks around those.
        let mut previous: Option<bool> = None;
        let mut line = first;
        let end = loop {
            if line >= self.b.len() {
                break self.b.len();
            }
            let spaces = self.b[line..].iter().take_while(|&&c| c == b' ').count();
            let at = line + spaces;
            match self.b.get(at) {
                None if spaces > indent => return Err(GiveUp),
                None => break at,
                Some(b'\n') if spaces <= indent => {
                    trailing += 1;
                    line = at + 1;
                }
                Some(b'\n') => return Err(GiveUp),
                Some(b'\t') if spaces <= indent && (folded || spaces < indent) => {
                    return Err(GiveUp)
                }
                Some(_) if spaces < indent => break at,
                Some(_) => {
                    let eol = self.line_end(at);
                    if eol >= self.b.len() {
                        return Err(GiveUp);
                    }
                    let more_indented = spaces > indent;
                    match previous {
                        // Two lines of text with nothing between: their break is a space.
                        Some(false) if folded && !more_indented && trailing == 0 => value.push(' '),
                        // Empty lines between two lines of text stand for themselves only.
                        Some(false) if folded && !more_indented => {}
                        Some(_) => value.push('\n'),
                        None => {}
                    }
                    for _ in 0..trailing {
                        value.push('\n');
                    }
                    trailing = 0;
                    value.push_str(&self.text[line + indent..eol]);
                    previous = Some(more_indented);
                    line = eol + 1;
                }
            }
        };
        match chomp {
            b'-' => {}
            b'+' => {
                value.push('\n');
                for _ in 0..trailing {
                    value.push('\n');
                }
            }
            _ => value.push('\n'),
        }
        let style = if folded {
            GStyle::Folded
        } else {
            GStyle::Literal
        };
        self.scalar(Cow::Owned(value), style, first + indent, end)?;
        // The next line starts where the block's last line break ended.
        let next = self.b[..end]
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |p| p + 1);
        match self.next_content(next)? {
            Some((_, next_indent)) if next_indent > column => Err(GiveUp),
            _ => Ok(next),
        }
    }
}

/// Whether a plain scalar may start with `c` followed by `next` here: no indicator, and none of
/// the characters whose meaning this reader leaves to granit-parser.
fn starts_plain(c: u8, next: u8) -> bool {
    match c {
        b'-' => !matches!(next, b' ' | b'\n' | b'\t'),
        b'?' | b':' | b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|'
        | b'>' | b'\'' | b'"' | b'%' | b'@' | b'`' | b' ' | b'\t' | b'\n' => false,
        _ => true,
    }
}

/// The value of a double-quoted scalar's text with escapes, `None` for an escape this reader
/// leaves to granit-parser.
fn unescape(inner: &str) -> Option<String> {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escaped = match chars.next()? {
            '0' => '\0',
            'a' => '\x07',
            'b' => '\x08',
            't' => '\t',
            'n' => '\n',
            'v' => '\x0b',
            'f' => '\x0c',
            'r' => '\r',
            'e' => '\x1b',
            ' ' => ' ',
            '"' => '"',
            '/' => '/',
            '\\' => '\\',
            'x' => hex(&mut chars, 2)?,
            'u' => hex(&mut chars, 4)?,
            'U' => hex(&mut chars, 8)?,
            _ => return None,
        };
        out.push(escaped);
    }
    Some(out)
}

fn hex(chars: &mut std::str::Chars<'_>, digits: usize) -> Option<char> {
    let mut code = 0u32;
    for _ in 0..digits {
        code = code * 16 + chars.next()?.to_digit(16)?;
    }
    char::from_u32(code)
}
