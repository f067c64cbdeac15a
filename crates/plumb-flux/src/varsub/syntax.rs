//! The grammar of substitution text as Flux's envsubst scanner reads it, with byte spans.
//!
//! Flux parses the whole text before evaluating anything, and any `${` that does not start a
//! well-formed expression fails the whole text. Each rule below says which scanner behaviour it
//! reproduces, because the scanner's quirks decide what fails and with which message.

use std::fmt;

/// A piece of parsed text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Node {
    /// Literal bytes, escapes already removed (`$$` is `$`; in replace arguments `\/` and `\\`).
    Text(String),
    /// A `${...}` expression.
    Expr(Expr),
}

/// One `${...}` expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expr {
    /// The variable name.
    pub name: String,
    /// The operator exactly as written: `""`, `"#"` (length or trim), `":="`, `"//"`, ...
    pub operator: String,
    /// The operator's arguments; default operators may have several, which are concatenated.
    pub args: Vec<Node>,
    /// Byte offset of the `$` of `${`.
    pub start: usize,
    /// Byte offset just past the closing `}`.
    pub end: usize,
}

/// What Flux's parser reports when it rejects a text. The messages are Flux's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyntaxProblem {
    /// An operator is malformed or something follows it before `}`.
    BadSubstitution,
    /// `${name` is followed by a character that is neither an operator nor `}`.
    MissingClosingBrace,
    /// `${` is not followed by a variable name.
    VariableName,
    /// An operator's argument is missing or cannot be read.
    FunctionArgument,
}

impl fmt::Display for SyntaxProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SyntaxProblem::BadSubstitution => "bad substitution",
            SyntaxProblem::MissingClosingBrace => "missing closing brace",
            SyntaxProblem::VariableName => "unable to parse variable name",
            SyntaxProblem::FunctionArgument => "unable to parse substitution within function",
        })
    }
}

/// A rejected text: the problem, where the parser stopped, and the expression it was in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub problem: SyntaxProblem,
    pub offset: usize,
    pub expr_start: usize,
}

type Parsed<T> = Result<T, SyntaxError>;

/// Parses a whole text into nodes.
pub(crate) fn parse(src: &str) -> Parsed<Vec<Node>> {
    let mut parser = Parser { src, pos: 0 };
    let mut nodes = Vec::new();
    while parser.peek().is_some() {
        if parser.at_open() {
            nodes.push(Node::Expr(parser.expression()?));
        } else {
            nodes.push(Node::Text(parser.text(Escapes::Dollar, |_| true)));
        }
    }
    Ok(nodes)
}

/// Which escapes a text run honours.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Escapes {
    /// None: inside default, substring and trim arguments `$$` stays `$$`.
    None,
    /// `$$` → `$`: plain text outside expressions.
    Dollar,
    /// `$$` → `$`, `\/` → `/`, `\\` → `\`: replace patterns and replacements.
    All,
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
}

impl Parser<'_> {
    /// The next character. Flux's scanner uses the NUL character as its end-of-input marker, so
    /// a NUL in the text ends it: everything after it is dropped, or an open expression fails.
    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next().filter(|&c| c != '\0')
    }

    fn peek_second(&self) -> Option<char> {
        let mut chars = self.src[self.pos..].chars();
        chars.next();
        chars.next().filter(|&c| c != '\0')
    }

    fn at_open(&self) -> bool {
        self.src[self.pos..].starts_with("${")
    }

    fn bump(&mut self) {
        if let Some(c) = self.src[self.pos..].chars().next() {
            self.pos += c.len_utf8();
        }
    }

    fn fail(&self, problem: SyntaxProblem, expr_start: usize) -> SyntaxError {
        SyntaxError {
            problem,
            offset: self.pos,
            expr_start,
        }
    }

    /// A run of literal text: stops at the end, at `${` and at the first character `accepts`
    /// refuses. An escaped character is taken without asking `accepts` (so `\/` does not end
    /// a replace pattern).
    fn text(&mut self, escapes: Escapes, accepts: impl Fn(char) -> bool) -> String {
        let mut out = String::new();
        while let Some(c) = self.peek() {
            if self.at_open() {
                break;
            }
            let escaped = match (escapes, c, self.peek_second()) {
                (Escapes::Dollar | Escapes::All, '$', Some('$')) => Some('$'),
                (Escapes::All, '\\', Some(next @ ('/' | '\\'))) => Some(next),
                _ => None,
            };
            if let Some(literal) = escaped {
                out.push(literal);
                self.bump();
                self.bump();
                continue;
            }
            if !accepts(c) {
                break;
            }
            out.push(c);
            self.bump();
        }
        out
    }

    /// A run of operator characters: at most `max` characters each allowed by `allowed`.
    fn operator(&mut self, max: usize, allowed: impl Fn(char) -> bool) -> String {
        let mut op = String::new();
        while op.len() < max {
            match self.peek() {
                Some(c) if allowed(c) => {
                    op.push(c);
                    self.bump();
                }
                _ => break,
            }
        }
        op
    }

    fn identifier(&mut self) -> Option<String> {
        let start = self.pos;
        while self.peek().is_some_and(is_identifier_char) {
            self.bump();
        }
        (self.pos > start).then(|| self.src[start..self.pos].to_string())
    }

    /// Consumes the closing `}` or fails with "bad substitution".
    fn close(&mut self, expr_start: usize) -> Parsed<usize> {
        if self.peek() == Some('}') {
            self.bump();
            Ok(self.pos)
        } else {
            Err(self.fail(SyntaxProblem::BadSubstitution, expr_start))
        }
    }

    /// One operator argument: a nested expression, or a non-empty text run.
    fn argument(
        &mut self,
        expr_start: usize,
        escapes: Escapes,
        accepts: impl Fn(char) -> bool,
    ) -> Parsed<Node> {
        if self.at_open() {
            return Ok(Node::Expr(self.expression()?));
        }
        let before = self.pos;
        let text = self.text(escapes, accepts);
        if self.pos == before {
            return Err(self.fail(SyntaxProblem::FunctionArgument, expr_start));
        }
        Ok(Node::Text(text))
    }

    /// An expression, the cursor on its `${`.
    fn expression(&mut self) -> Parsed<Expr> {
        let start = self.pos;
        self.pos += 2;
        if self.peek() == Some('#') {
            return self.length(start);
        }
        let Some(name) = self.identifier() else {
            return Err(self.fail(SyntaxProblem::VariableName, start));
        };
        let mut expr = Expr {
            name,
            operator: String::new(),
            args: Vec::new(),
            start,
            end: start,
        };
        match self.peek() {
            Some(':') => match self.peek_second() {
                Some('=' | '-' | '?' | '+') => self.defaults(&mut expr)?,
                _ => self.substring(&mut expr)?,
            },
            Some('=') => self.defaults(&mut expr)?,
            Some(',' | '^') => {
                expr.operator = self.operator(2, |c| c == ',' || c == '^');
                expr.end = self.close(start)?;
            }
            Some('/') => self.replace(&mut expr)?,
            Some(marker @ ('#' | '%')) => {
                expr.operator = self.operator(2, |c| c == marker);
                let pattern = self.argument(start, Escapes::None, |c| c != '}')?;
                expr.args.push(pattern);
                expr.end = self.close(start)?;
            }
            Some('}') => {
                self.bump();
                expr.end = self.pos;
            }
            _ => return Err(self.fail(SyntaxProblem::MissingClosingBrace, start)),
        }
        Ok(expr)
    }

    /// `${#name}`.
    fn length(&mut self, start: usize) -> Parsed<Expr> {
        self.bump();
        let Some(name) = self.identifier() else {
            return Err(self.fail(SyntaxProblem::BadSubstitution, start));
        };
        let end = self.close(start)?;
        Ok(Expr {
            name,
            operator: "#".to_string(),
            args: Vec::new(),
            start,
            end,
        })
    }

    /// `${name=word}` and `${name:=word}`, `:-`, `:?`, `:+`; the word may mix text and
    /// expressions, kept as several arguments.
    fn defaults(&mut self, expr: &mut Expr) -> Parsed<()> {
        expr.operator = if self.peek() == Some('=') {
            self.operator(1, |c| c == '=')
        } else {
            let colon = self.operator(1, |c| c == ':');
            colon + &self.operator(1, |c| matches!(c, '=' | '-' | '?' | '+'))
        };
        while self.peek() != Some('}') {
            let part = self.argument(expr.start, Escapes::None, |c| c != '}')?;
            expr.args.push(part);
        }
        self.bump();
        expr.end = self.pos;
        Ok(())
    }

    /// `${name:offset}` and `${name:offset:length}`.
    fn substring(&mut self, expr: &mut Expr) -> Parsed<()> {
        let start = expr.start;
        // Flux's scanner looks one character past the `:` and then steps back by that
        // character's width instead of the colon's. When that character is longer than one
        // byte, or absent, it lands off the colon and reports a bad substitution.
        match self.peek_second_raw() {
            Some(c) if c.len_utf8() == 1 => {}
            _ => {
                self.bump();
                return Err(self.fail(SyntaxProblem::BadSubstitution, start));
            }
        }
        expr.operator = self.operator(1, |c| c == ':');
        let offset = self.argument(start, Escapes::None, |c| c != ':' && c != '}')?;
        expr.args.push(offset);
        match self.peek() {
            Some('}') => {
                self.bump();
                expr.end = self.pos;
                return Ok(());
            }
            Some(':') => {
                while self.peek() == Some(':') {
                    self.bump();
                }
            }
            _ => return Err(self.fail(SyntaxProblem::BadSubstitution, start)),
        }
        let length = self.argument(start, Escapes::None, |c| c != '}')?;
        expr.args.push(length);
        expr.end = self.close(start)?;
        Ok(())
    }

    /// The character after the current one, NUL included (the NUL is one byte wide, so the
    /// scanner's step back lands correctly there).
    fn peek_second_raw(&self) -> Option<char> {
        let mut chars = self.src[self.pos..].chars();
        chars.next();
        chars.next()
    }

    /// `${name/pattern/replacement}`, `//`, `/#`, `/%`; the replacement may be empty.
    fn replace(&mut self, expr: &mut Expr) -> Parsed<()> {
        let start = expr.start;
        let first = self.operator(1, |c| c == '/');
        expr.operator = first + &self.operator(1, |c| matches!(c, '/' | '#' | '%'));
        if self.peek() == Some('/') {
            expr.args.push(Node::Text(String::new()));
        } else {
            let pattern = self.argument(start, Escapes::All, |c| c != '/')?;
            expr.args.push(pattern);
        }
        if self.peek() != Some('/') {
            return Err(self.fail(SyntaxProblem::BadSubstitution, start));
        }
        while self.peek() == Some('/') {
            self.bump();
        }
        if self.peek() != Some('}') {
            let replacement = self.argument(start, Escapes::All, |c| c != '}')?;
            expr.args.push(replacement);
        }
        expr.end = self.close(start)?;
        Ok(())
    }
}

/// A character of a variable name as Flux's scanner reads one (Go's `unicode.IsLetter`,
/// `unicode.IsDigit` or `_`). Rust's `is_alphabetic`/`is_numeric` are slightly wider outside
/// ASCII (letter numbers, other numbers, combining marks); such names can never be defined in
/// Flux, whose variable names are ASCII, so the difference only changes which error or empty
/// result a name like `${x²}` gives.
fn is_identifier_char(c: char) -> bool {
    c == '_' || c.is_alphabetic() || c.is_numeric()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Node {
        Node::Text(s.to_string())
    }

    fn only_expr(src: &str) -> Expr {
        match parse(src).expect("parses").as_slice() {
            [Node::Expr(e)] => e.clone(),
            other => panic!("expected one expression, got {other:?}"),
        }
    }

    fn problem(src: &str) -> SyntaxProblem {
        parse(src).expect_err("must fail").problem
    }

    #[test]
    fn plain_text_and_escapes() {
        assert_eq!(parse("}text").unwrap(), vec![text("}text")]);
        assert_eq!(parse("$${string}").unwrap(), vec![text("${string}")]);
        assert_eq!(parse("$$string").unwrap(), vec![text("$string")]);
        assert_eq!(parse("$x and $").unwrap(), vec![text("$x and $")]);
        assert_eq!(parse(r"\\.\pipe").unwrap(), vec![text(r"\\.\pipe")]);
    }

    #[test]
    fn operators_and_arguments() {
        let e = only_expr("${string:position:length}");
        assert_eq!(e.operator, ":");
        assert_eq!(e.args, vec![text("position"), text("length")]);
        assert_eq!(only_expr("${string#$%:*{}").args, vec![text("$%:*{")]);
        assert_eq!(only_expr("${x,^}").operator, ",^");
        let e = only_expr("${string=prefix-${var}-suffix}");
        assert_eq!(e.args.len(), 3);
        assert_eq!(
            only_expr(r"${s/\/position\\/length}").args[0],
            text(r"/position\")
        );
        assert_eq!(only_expr("${s/#/x}").args, vec![text(""), text("x")]);
        assert_eq!(only_expr("${s/a/}").args, vec![text("a")]);
        assert_eq!(only_expr("${s:1::2}").args, vec![text("1"), text("2")]);
        assert_eq!(only_expr("${s:=$$x}").args, vec![text("$$x")]);
    }

    #[test]
    fn spans_cover_the_whole_expression() {
        let nodes = parse("a ${b:=${c}} d").unwrap();
        let Node::Expr(outer) = &nodes[1] else {
            panic!("expected an expression")
        };
        assert_eq!((outer.start, outer.end), (2, 12));
        let Node::Expr(inner) = &outer.args[0] else {
            panic!("expected a nested expression")
        };
        assert_eq!((inner.start, inner.end), (7, 11));
    }

    #[test]
    fn rejected_texts_fail_like_flux() {
        assert_eq!(problem("${}"), SyntaxProblem::VariableName);
        assert_eq!(problem("${"), SyntaxProblem::VariableName);
        assert_eq!(problem("${a[@]}"), SyntaxProblem::MissingClosingBrace);
        assert_eq!(problem("${x-d}"), SyntaxProblem::MissingClosingBrace);
        assert_eq!(problem("${x+d}"), SyntaxProblem::MissingClosingBrace);
        assert_eq!(problem("${x"), SyntaxProblem::MissingClosingBrace);
        assert_eq!(problem("${#}"), SyntaxProblem::BadSubstitution);
        assert_eq!(problem("${x#}"), SyntaxProblem::FunctionArgument);
        assert_eq!(problem("${x:}"), SyntaxProblem::FunctionArgument);
        assert_eq!(problem("${x:1:}"), SyntaxProblem::FunctionArgument);
        assert_eq!(problem("${x:"), SyntaxProblem::BadSubstitution);
        assert_eq!(problem("${x:é}"), SyntaxProblem::BadSubstitution);
        assert_eq!(problem("${x^^^}"), SyntaxProblem::BadSubstitution);
        assert_eq!(problem("${x/abc}"), SyntaxProblem::BadSubstitution);
        assert_eq!(problem("${x:=abc"), SyntaxProblem::FunctionArgument);
    }

    #[test]
    fn nul_ends_the_text() {
        assert_eq!(parse("a\0${b}").unwrap(), vec![text("a")]);
        assert_eq!(problem("${b\0}"), SyntaxProblem::MissingClosingBrace);
    }

    #[test]
    fn error_offset_points_at_the_offending_character() {
        let err = parse("ok ${a[@]}").unwrap_err();
        assert_eq!((err.offset, err.expr_start), (6, 3));
    }
}
