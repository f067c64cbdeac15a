//! The parser: tokens into a tree of text, actions and control structures, with Go's checks
//! made before execution (undefined functions and variables, `break` outside `range`,
//! non-executable pipeline stages).

use std::collections::HashMap;

use crate::error::Error;
use crate::lex::{Tok, Token};

/// How deeply control structures and parenthesized pipelines may nest.
const MAX_NESTING: usize = 100;

/// A byte span of the template text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

/// A list of nodes.
pub type List = Vec<Node>;

/// A node of the tree.
#[derive(Debug)]
pub enum Node {
    Text(String),
    Action(Pipe),
    If(Branch),
    With(Branch),
    Range(Branch),
    Template {
        span: Span,
        name: String,
        pipe: Option<Pipe>,
    },
    Break,
    Continue,
}

/// `if`, `with`, `range`: the pipeline, its body, and the `else` part.
#[derive(Debug)]
pub struct Branch {
    pub pipe: Pipe,
    pub list: List,
    pub else_list: Option<List>,
}

/// A pipeline: optional variable declarations, then commands joined by `|`.
#[derive(Debug)]
pub struct Pipe {
    pub span: Span,
    pub decl: Vec<String>,
    pub is_assign: bool,
    pub cmds: Vec<Command>,
}

/// One stage of a pipeline: an operand and its arguments.
#[derive(Debug)]
pub struct Command {
    pub span: Span,
    pub args: Vec<Arg>,
}

/// An operand.
#[derive(Debug)]
pub enum Arg {
    /// `.a.b`
    Field(Span, Vec<String>),
    /// `$x.a.b` (the name with its `$`)
    Variable(Span, String, Vec<String>),
    Dot(Span),
    Nil(Span),
    Bool(Span, bool),
    Number(Span, Number),
    Str(Span, String),
    /// A function name.
    Ident(Span, String),
    /// `(pipeline).a.b` or `fn.a.b`
    Chain(Span, Box<Arg>, Vec<String>),
    /// `(pipeline)`
    Pipe(Span, Box<Pipe>),
}

impl Arg {
    pub fn span(&self) -> Span {
        match self {
            Arg::Field(s, _)
            | Arg::Variable(s, _, _)
            | Arg::Dot(s)
            | Arg::Nil(s)
            | Arg::Bool(s, _)
            | Arg::Number(s, _)
            | Arg::Str(s, _)
            | Arg::Ident(s, _)
            | Arg::Chain(s, _, _)
            | Arg::Pipe(s, _) => *s,
        }
    }
}

/// A number constant: the value as an int when it is one, as a float when it is written as
/// one (`1.5`, `1e3`).
#[derive(Clone, Copy, Debug)]
pub struct Number {
    pub int: Option<i64>,
    pub float: Option<f64>,
    /// Written with `.`, `e` or `p`: evaluates to a float64, like Go's ideal constants.
    pub is_float: bool,
}

/// The parsed templates of one text: the main tree and every `define`/`block`.
#[derive(Debug, Default)]
pub struct Trees {
    pub main: List,
    pub defined: HashMap<String, List>,
}

/// Parses `tokens`; `is_function` says whether a name is a function.
pub fn parse(
    name: &str,
    src: &str,
    tokens: Vec<Token>,
    is_function: &dyn Fn(&str) -> bool,
) -> Result<Trees, Error> {
    let mut p = Parser {
        name,
        src,
        tokens,
        pos: 0,
        vars: vec!["$".to_string()],
        range_depth: 0,
        nesting: 0,
        trees: Trees::default(),
        is_function,
    };
    let (main, end) = p.list(true)?;
    if let Some(end) = end {
        return Err(p.err(end.pos, format!("unexpected {}", end.text)));
    }
    p.trees.main = main;
    Ok(p.trees)
}

struct Parser<'a> {
    name: &'a str,
    src: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    vars: Vec<String>,
    range_depth: usize,
    /// How deeply control structures and parentheses nest here.
    nesting: usize,
    trees: Trees,
    is_function: &'a dyn Fn(&str) -> bool,
}

/// The `{{end}}` or `{{else ...}}` that closed a list.
struct EndMark {
    pos: usize,
    text: &'static str,
    /// An `{{else}}` (the parser stands after the `else` keyword, before a chained `if`/`with`
    /// or the right delimiter), not an `{{end}}`.
    is_else: bool,
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Text(_) => "text".into(),
        Tok::LeftDelim => "left delim".into(),
        Tok::RightDelim => "right delim".into(),
        Tok::Space => "space".into(),
        Tok::Ident(s) => format!("<{s}>"),
        Tok::Field(s) => format!("<.{s}>"),
        Tok::Dot => "<.>".into(),
        Tok::Variable(s) => format!("<{s}>"),
        Tok::Str(s) => format!("{s:?}"),
        Tok::Char(c) => format!("{c:?}"),
        Tok::Number(n) => format!("\"{n}\""),
        Tok::Bool(b) => format!("<{b}>"),
        Tok::Nil => "<nil>".into(),
        Tok::Pipe => "\"|\"".into(),
        Tok::LeftParen => "\"(\"".into(),
        Tok::RightParen => "\")\"".into(),
        Tok::Declare => "\":=\"".into(),
        Tok::Assign => "\"=\"".into(),
        Tok::Comma => "\",\"".into(),
        Tok::Eof => "EOF".into(),
    }
}

impl Parser<'_> {
    fn err(&self, pos: usize, msg: impl Into<String>) -> Error {
        Error::parse(self.name, self.src, pos, msg.into())
    }

    fn peek(&self) -> &Token {
        &self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        if self.pos < self.tokens.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn skip_space(&mut self) {
        while self.peek().kind == Tok::Space {
            self.pos += 1;
        }
    }

    fn peek_non_space(&mut self) -> Token {
        let save = self.pos;
        self.skip_space();
        let t = self.peek().clone();
        self.pos = save;
        t
    }

    fn next_non_space(&mut self) -> Token {
        self.skip_space();
        self.next()
    }

    fn span(&self, start: usize) -> Span {
        let end = if self.pos == 0 {
            start
        } else {
            self.tokens[self.pos - 1].end
        };
        Span {
            start,
            end: end.max(start),
        }
    }

    /// Parses nodes until EOF (top level) or an `{{end}}`/`{{else}}`, which is returned.
    fn list(&mut self, top: bool) -> Result<(List, Option<EndMark>), Error> {
        let mut list = List::new();
        loop {
            let t = self.next();
            match t.kind {
                Tok::Eof => {
                    if top {
                        return Ok((list, None));
                    }
                    return Err(self.err(t.pos, "unexpected EOF"));
                }
                Tok::Text(s) => list.push(Node::Text(s)),
                Tok::LeftDelim => {
                    let kw = self.peek_non_space();
                    if let Tok::Ident(word) = &kw.kind {
                        match word.as_str() {
                            "end" => {
                                self.next_non_space();
                                self.expect_right_delim("end")?;
                                if top {
                                    return Err(self.err(t.pos, "unexpected {{end}}"));
                                }
                                return Ok((
                                    list,
                                    Some(EndMark {
                                        pos: t.pos,
                                        text: "{{end}}",
                                        is_else: false,
                                    }),
                                ));
                            }
                            "else" => {
                                self.next_non_space();
                                if top {
                                    return Err(self.err(t.pos, "unexpected {{else}}"));
                                }
                                return Ok((
                                    list,
                                    Some(EndMark {
                                        pos: t.pos,
                                        text: "{{else}}",
                                        is_else: true,
                                    }),
                                ));
                            }
                            "define" if top => {
                                self.next_non_space();
                                self.define(t.pos)?;
                                continue;
                            }
                            _ => {}
                        }
                    }
                    list.push(self.action(t.pos)?);
                }
                other => return Err(self.err(t.pos, format!("unexpected {}", describe(&other)))),
            }
        }
    }

    fn expect_right_delim(&mut self, context: &str) -> Result<(), Error> {
        let t = self.next_non_space();
        if t.kind != Tok::RightDelim {
            return Err(self.err(
                t.pos,
                format!("unexpected {} in {}", describe(&t.kind), context),
            ));
        }
        Ok(())
    }

    /// Records a `define`d or `block` template. Go's parser refuses a second non-empty
    /// definition of a name in one text; an empty one (only spaces) never replaces another.
    fn add_template(&mut self, pos: usize, name: String, list: List) -> Result<(), Error> {
        let is_empty = |l: &List| {
            l.iter()
                .all(|n| matches!(n, Node::Text(t) if t.trim().is_empty()))
        };
        match self.trees.defined.get(&name) {
            Some(existing) if !is_empty(existing) => {
                if !is_empty(&list) {
                    return Err(self.err(
                        pos,
                        format!("template: multiple definition of template {name:?}"),
                    ));
                }
            }
            _ => {
                self.trees.defined.insert(name, list);
            }
        }
        Ok(())
    }

    fn define(&mut self, pos: usize) -> Result<(), Error> {
        let t = self.next_non_space();
        let Tok::Str(name) = t.kind else {
            return Err(self.err(
                t.pos,
                "unexpected token in define clause: name must be a string",
            ));
        };
        self.expect_right_delim("define clause")?;
        let saved_vars = std::mem::replace(&mut self.vars, vec!["$".to_string()]);
        let (list, end) = self.list(false)?;
        self.vars = saved_vars;
        match end {
            Some(e) if !e.is_else => {}
            Some(e) => return Err(self.err(e.pos, "unexpected {{else}} in define")),
            None => return Err(self.err(pos, "unexpected EOF")),
        }
        self.add_template(pos, name, list)?;
        Ok(())
    }

    fn action(&mut self, pos: usize) -> Result<Node, Error> {
        let kw = self.peek_non_space();
        if let Tok::Ident(word) = &kw.kind {
            match word.as_str() {
                "if" | "with" | "range" => {
                    let word = word.clone();
                    self.next_non_space();
                    return self.control(&word);
                }
                "template" => {
                    self.next_non_space();
                    return self.template_clause(pos, "template");
                }
                "block" => {
                    self.next_non_space();
                    return self.block(pos);
                }
                "break" | "continue" => {
                    let word = word.clone();
                    self.next_non_space();
                    let end = self.next_non_space();
                    if end.kind != Tok::RightDelim {
                        return Err(self.err(
                            end.pos,
                            format!("unexpected {} in {{{{{word}}}}}", describe(&end.kind)),
                        ));
                    }
                    if self.range_depth == 0 {
                        return Err(
                            self.err(kw.pos, format!("{{{{{word}}}}} outside {{{{range}}}}"))
                        );
                    }
                    return Ok(if word == "break" {
                        Node::Break
                    } else {
                        Node::Continue
                    });
                }
                "define" => {
                    return Err(self.err(kw.pos, "unexpected <define> in command"));
                }
                _ => {}
            }
        }
        let pipe = self.pipeline("command", Tok::RightDelim)?;
        Ok(Node::Action(pipe))
    }

    fn template_clause(&mut self, pos: usize, context: &str) -> Result<Node, Error> {
        let t = self.next_non_space();
        let Tok::Str(name) = t.kind else {
            return Err(self.err(
                t.pos,
                format!("unexpected {} in {context} clause", describe(&t.kind)),
            ));
        };
        let pipe = if self.peek_non_space().kind == Tok::RightDelim {
            self.next_non_space();
            None
        } else {
            Some(self.pipeline(context, Tok::RightDelim)?)
        };
        Ok(Node::Template {
            span: Span {
                start: pos,
                end: self.span(pos).end,
            },
            name,
            pipe,
        })
    }

    fn block(&mut self, pos: usize) -> Result<Node, Error> {
        let t = self.next_non_space();
        let Tok::Str(name) = t.kind else {
            return Err(self.err(
                t.pos,
                format!("unexpected {} in block clause", describe(&t.kind)),
            ));
        };
        let pipe = self.pipeline("block clause", Tok::RightDelim)?;
        // The body is a template of its own: no variables and no enclosing range.
        let saved_vars = std::mem::replace(&mut self.vars, vec!["$".to_string()]);
        let saved_range = std::mem::replace(&mut self.range_depth, 0);
        let listed = self.list(false);
        self.vars = saved_vars;
        self.range_depth = saved_range;
        let (list, end) = listed?;
        match end {
            Some(e) if !e.is_else => {}
            Some(e) => return Err(self.err(e.pos, "unexpected {{else}} in block clause")),
            None => return Err(self.err(pos, "unexpected EOF")),
        }
        self.add_template(pos, name.clone(), list)?;
        Ok(Node::Template {
            span: Span {
                start: pos,
                end: pipe.span.end,
            },
            name,
            pipe: Some(pipe),
        })
    }

    fn control(&mut self, word: &str) -> Result<Node, Error> {
        let pos = self.peek().pos;
        self.enter(pos)?;
        let node = self.control_body(word);
        self.nesting -= 1;
        node
    }

    /// Counts one more level of nesting; the parser and executor recurse per level, so a
    /// bound keeps a hostile template from overflowing the stack.
    fn enter(&mut self, pos: usize) -> Result<(), Error> {
        if self.nesting >= MAX_NESTING {
            return Err(self.err(
                pos,
                format!("exceeded maximum nesting depth ({MAX_NESTING})"),
            ));
        }
        self.nesting += 1;
        Ok(())
    }

    fn control_body(&mut self, word: &str) -> Result<Node, Error> {
        let vars_before = self.vars.len();
        let pipe = self.pipeline(word, Tok::RightDelim)?;
        let vars_after_pipe = self.vars.len();
        if word == "range" {
            self.range_depth += 1;
        }
        let listed = self.list(false);
        if word == "range" {
            self.range_depth -= 1;
        }
        let (list, end) = listed?;
        self.vars.truncate(vars_after_pipe);
        let mut else_list = None;
        match end {
            Some(e) if e.is_else => {
                // `{{else if ...}}` / `{{else with ...}}`: an else list holding one nested
                // control that shares this one's {{end}}.
                let next = self.peek_non_space();
                let chained = match &next.kind {
                    Tok::Ident(w) if (w == "if" || w == "with") && word != "range" => {
                        if w != word {
                            return Err(self.err(
                                next.pos,
                                format!("unexpected <{w}> after {{{{else}}}} in {word}"),
                            ));
                        }
                        true
                    }
                    _ => false,
                };
                if chained {
                    self.next_non_space();
                    let nested = self.control(word)?;
                    else_list = Some(vec![nested]);
                } else {
                    self.expect_right_delim("else")?;
                    let (l, end2) = self.list(false)?;
                    match end2 {
                        Some(e2) if !e2.is_else => {}
                        Some(e2) => return Err(self.err(e2.pos, "expected end; found {{else}}")),
                        None => unreachable!("list(false) fails on EOF"),
                    }
                    else_list = Some(l);
                }
            }
            Some(_) => {}
            None => unreachable!("list(false) fails on EOF"),
        }
        self.vars.truncate(vars_before);
        let branch = Branch {
            pipe,
            list,
            else_list,
        };
        Ok(match word {
            "if" => Node::If(branch),
            "with" => Node::With(branch),
            _ => Node::Range(branch),
        })
    }

    fn pipeline(&mut self, context: &str, end: Tok) -> Result<Pipe, Error> {
        let start = self.peek_non_space().pos;
        let mut decl = Vec::new();
        let mut is_assign = false;
        // Declarations: `$x :=`, `$x =`, `$i, $v :=` (range only).
        loop {
            let save = self.pos;
            let v = self.peek_non_space();
            let Tok::Variable(name) = v.kind else { break };
            self.next_non_space();
            let after = self.peek_non_space();
            match after.kind {
                Tok::Declare | Tok::Assign => {
                    is_assign = after.kind == Tok::Assign;
                    self.next_non_space();
                    decl.push(name.clone());
                    // Go's parser records an assigned variable as declared too; assigning
                    // an undeclared one fails when it runs.
                    self.vars.push(name);
                    break;
                }
                Tok::Comma => {
                    self.next_non_space();
                    decl.push(name.clone());
                    self.vars.push(name);
                    if context == "range" && decl.len() < 2 {
                        match self.peek_non_space().kind {
                            // `{{range $k,}}` goes on to report the missing value.
                            Tok::Variable(_) | Tok::RightDelim | Tok::RightParen => continue,
                            _ => {
                                return Err(
                                    self.err(after.pos, "range can only initialize variables")
                                )
                            }
                        }
                    }
                    return Err(self.err(after.pos, format!("too many declarations in {context}")));
                }
                _ => {
                    self.pos = save;
                    break;
                }
            }
        }
        let mut cmds = Vec::new();
        loop {
            let t = self.peek_non_space();
            if t.kind == end {
                self.next_non_space();
                break;
            }
            match t.kind {
                Tok::RightDelim | Tok::RightParen | Tok::Eof => {
                    return Err(self.err(
                        t.pos,
                        format!("unexpected {} in {context}", describe(&t.kind)),
                    ));
                }
                _ => {}
            }
            cmds.push(self.command(&end)?);
        }
        let span = self.span(start);
        if cmds.is_empty() {
            return Err(self.err(start, format!("missing value for {context}")));
        }
        for (i, c) in cmds.iter().enumerate().skip(1) {
            if matches!(
                c.args[0],
                Arg::Bool(..) | Arg::Dot(_) | Arg::Nil(_) | Arg::Number(..) | Arg::Str(..)
            ) {
                return Err(self.err(
                    c.span.start,
                    format!("non executable command in pipeline stage {}", i + 1),
                ));
            }
        }
        if decl.len() > 1 && context != "range" {
            return Err(self.err(start, format!("too many declarations in {context}")));
        }
        Ok(Pipe {
            span,
            decl,
            is_assign,
            cmds,
        })
    }

    fn command(&mut self, end: &Tok) -> Result<Command, Error> {
        self.skip_space();
        let start = self.peek().pos;
        let mut args = Vec::new();
        loop {
            self.skip_space();
            let t = self.peek().clone();
            if &t.kind == end || t.kind == Tok::Pipe {
                break;
            }
            if matches!(t.kind, Tok::RightDelim | Tok::RightParen | Tok::Eof) {
                return Err(self.err(
                    t.pos,
                    format!("unexpected {} in operand", describe(&t.kind)),
                ));
            }
            args.push(self.operand()?);
            let after = self.peek().clone();
            match after.kind {
                Tok::Space => continue,
                ref k if k == end => break,
                Tok::Pipe => break,
                Tok::RightDelim | Tok::RightParen => {
                    return Err(self.err(
                        after.pos,
                        format!("unexpected {} in operand", describe(&after.kind)),
                    ));
                }
                ref k => {
                    return Err(
                        self.err(after.pos, format!("unexpected {} in operand", describe(k)))
                    )
                }
            }
        }
        let span = self.span(start);
        if self.peek().kind == Tok::Pipe {
            self.next();
        }
        if args.is_empty() {
            return Err(self.err(start, "empty command"));
        }
        Ok(Command { span, args })
    }

    fn operand(&mut self) -> Result<Arg, Error> {
        let start = self.peek().pos;
        let term = self.term()?;
        if !matches!(self.peek().kind, Tok::Field(_)) {
            return Ok(term);
        }
        let mut fields = Vec::new();
        while let Tok::Field(f) = &self.peek().kind {
            fields.push(f.clone());
            self.next();
        }
        let span = self.span(start);
        Ok(match term {
            Arg::Field(_, mut chain) => {
                chain.extend(fields);
                Arg::Field(span, chain)
            }
            Arg::Variable(_, name, mut chain) => {
                chain.extend(fields);
                Arg::Variable(span, name, chain)
            }
            Arg::Bool(..) | Arg::Str(..) | Arg::Number(..) | Arg::Nil(_) | Arg::Dot(_) => {
                return Err(self.err(
                    start,
                    format!(
                        "unexpected . after term {:?}",
                        &self.src[term.span().start..term.span().end]
                    ),
                ));
            }
            other => Arg::Chain(span, Box::new(other), fields),
        })
    }

    fn term(&mut self) -> Result<Arg, Error> {
        let t = self.next();
        let span = Span {
            start: t.pos,
            end: t.end,
        };
        Ok(match t.kind {
            Tok::Ident(name) => {
                if !(self.is_function)(&name) {
                    return Err(self.err(t.pos, format!("function {name:?} not defined")));
                }
                Arg::Ident(span, name)
            }
            Tok::Dot => Arg::Dot(span),
            Tok::Nil => Arg::Nil(span),
            Tok::Variable(name) => {
                if !self.vars.contains(&name) {
                    return Err(self.err(t.pos, format!("undefined variable {name:?}")));
                }
                Arg::Variable(span, name, Vec::new())
            }
            Tok::Field(f) => Arg::Field(span, vec![f]),
            Tok::Bool(b) => Arg::Bool(span, b),
            Tok::Char(c) => Arg::Number(
                span,
                Number {
                    int: Some(c as i64),
                    float: Some(c as u32 as f64),
                    is_float: false,
                },
            ),
            Tok::Number(text) => Arg::Number(span, self.number(t.pos, &text)?),
            Tok::Str(s) => Arg::Str(span, s),
            Tok::LeftParen => {
                self.enter(t.pos)?;
                let pipe = self.pipeline("parenthesized pipeline", Tok::RightParen);
                self.nesting -= 1;
                Arg::Pipe(self.span(t.pos), Box::new(pipe?))
            }
            other => {
                return Err(self.err(t.pos, format!("unexpected {} in operand", describe(&other))))
            }
        })
    }

    fn number(&self, pos: usize, text: &str) -> Result<Number, Error> {
        let clean = text.replace('_', "");
        let (neg, body) = match clean.strip_prefix('-') {
            Some(b) => (true, b.to_string()),
            None => (false, clean.trim_start_matches('+').to_string()),
        };
        let radix_int = |s: &str| -> Option<i64> {
            let (radix, digits) = if let Some(d) = s.strip_prefix("0x").or(s.strip_prefix("0X")) {
                (16, d)
            } else if let Some(d) = s.strip_prefix("0o").or(s.strip_prefix("0O")) {
                (8, d)
            } else if let Some(d) = s.strip_prefix("0b").or(s.strip_prefix("0B")) {
                (2, d)
            } else if s.len() > 1 && s.starts_with('0') && s.bytes().all(|b| b.is_ascii_digit()) {
                (8, &s[1..])
            } else {
                (10, s)
            };
            let v = i128::from_str_radix(digits, radix).ok()?;
            let v = if neg { -v } else { v };
            i64::try_from(v).ok()
        };
        if let Some(i) = radix_int(&body) {
            return Ok(Number {
                int: Some(i),
                float: Some(i as f64),
                is_float: false,
            });
        }
        let is_hex = body.starts_with("0x") || body.starts_with("0X");
        if !is_hex {
            if let Ok(f) = format!("{}{body}", if neg { "-" } else { "" }).parse::<f64>() {
                if !body.contains(['.', 'e', 'E']) {
                    return Err(self.err(pos, format!("integer overflow: {text:?}")));
                }
                let int = (f == (f as i64) as f64).then_some(f as i64);
                return Ok(Number {
                    int,
                    float: Some(f),
                    is_float: true,
                });
            }
        }
        Err(self.err(pos, format!("illegal number syntax: {text:?}")))
    }
}
