//! The scanner: splits a template into text and the tokens of its actions, with Go's rules for
//! delimiters, `{{-`/`-}}` trim markers and `/* */` comments.

use crate::error::Error;

/// One token; `pos` is its byte offset in the template.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub kind: Tok,
    pub pos: usize,
    pub end: usize,
}

/// What a token is.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// Text outside actions (already trimmed by the neighbouring trim markers).
    Text(String),
    LeftDelim,
    RightDelim,
    Space,
    /// A function name or keyword.
    Ident(String),
    /// `.name`.
    Field(String),
    /// A lone `.`.
    Dot,
    /// `$` or `$name`, with the `$`.
    Variable(String),
    /// A string literal, unquoted.
    Str(String),
    /// A character constant's code point.
    Char(char),
    /// A number's source text.
    Number(String),
    Bool(bool),
    Nil,
    Pipe,
    LeftParen,
    RightParen,
    Declare,
    Assign,
    Comma,
    Eof,
}

/// The template's tokens.
pub fn lex(name: &str, src: &str, left: &str, right: &str) -> Result<Vec<Token>, Error> {
    Lexer {
        name,
        src,
        left,
        right,
        pos: 0,
        out: Vec::new(),
        paren_depth: 0,
    }
    .run()
}

struct Lexer<'a> {
    name: &'a str,
    src: &'a str,
    left: &'a str,
    right: &'a str,
    pos: usize,
    out: Vec<Token>,
    paren_depth: usize,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_alnum(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

impl Lexer<'_> {
    fn err(&self, pos: usize, msg: impl Into<String>) -> Error {
        Error::parse(self.name, self.src, pos, msg.into())
    }

    fn rest(&self) -> &str {
        &self.src[self.pos..]
    }

    fn push(&mut self, kind: Tok, pos: usize) {
        self.out.push(Token {
            kind,
            pos,
            end: self.pos,
        });
    }

    fn run(mut self) -> Result<Vec<Token>, Error> {
        let mut trim_next_text = false;
        loop {
            let start = self.pos;
            let found = self.rest().find(self.left);
            let text_end = found.map(|i| self.pos + i).unwrap_or(self.src.len());
            let mut text = &self.src[start..text_end];
            if trim_next_text {
                text = text.trim_start_matches([' ', '\t', '\r', '\n']);
            }
            let Some(_) = found else {
                if !text.is_empty() {
                    self.pos = text_end;
                    self.push(Tok::Text(text.to_string()), start);
                }
                self.pos = self.src.len();
                self.push(Tok::Eof, self.src.len());
                return Ok(self.out);
            };
            let after = &self.src[text_end + self.left.len()..];
            let left_trim =
                after.len() >= 2 && after.as_bytes()[0] == b'-' && is_space(after.as_bytes()[1]);
            if left_trim {
                text = text.trim_end_matches([' ', '\t', '\r', '\n']);
            }
            if !text.is_empty() {
                self.pos = text_end;
                self.push(Tok::Text(text.to_string()), start);
            }
            let delim_pos = text_end;
            self.pos = text_end + self.left.len() + if left_trim { 2 } else { 0 };
            if self.rest().starts_with("/*") {
                trim_next_text = self.comment(delim_pos)?;
                continue;
            }
            self.pos = text_end;
            self.pos += self.left.len();
            self.push(Tok::LeftDelim, delim_pos);
            if left_trim {
                self.pos += 2;
            }
            trim_next_text = self.inside_action(delim_pos)?;
        }
    }

    /// Skips a comment; returns whether its closing delimiter trims the following text.
    fn comment(&mut self, delim_pos: usize) -> Result<bool, Error> {
        let Some(end) = self.rest().find("*/") else {
            return Err(self.err(delim_pos, "unclosed comment"));
        };
        self.pos += end + 2;
        let rest = self.rest();
        let trim_marker = format!(" -{}", self.right);
        if rest.starts_with(&trim_marker) {
            self.pos += trim_marker.len();
            Ok(true)
        } else if rest.starts_with(self.right) {
            self.pos += self.right.len();
            Ok(false)
        } else {
            Err(self.err(delim_pos, "comment ends before closing delimiter"))
        }
    }

    /// The tokens of one action, up to and including its right delimiter; returns whether the
    /// delimiter carried a trim marker.
    fn inside_action(&mut self, delim_pos: usize) -> Result<bool, Error> {
        self.paren_depth = 0;
        loop {
            let rest = self.rest();
            if rest.is_empty() {
                return Err(self.err(delim_pos, "unclosed action"));
            }
            // A right delimiter, with or without its trim marker.
            let b = rest.as_bytes();
            if is_space(b[0]) && rest.len() > 2 && b[1] == b'-' && rest[2..].starts_with(self.right)
            {
                if self.paren_depth > 0 {
                    return Err(self.err(self.pos, "unclosed left paren"));
                }
                let p = self.pos;
                self.pos += 2 + self.right.len();
                self.push(Tok::RightDelim, p);
                return Ok(true);
            }
            if rest.starts_with(self.right) {
                if self.paren_depth > 0 {
                    return Err(self.err(self.pos, "unclosed left paren"));
                }
                let p = self.pos;
                self.pos += self.right.len();
                self.push(Tok::RightDelim, p);
                return Ok(false);
            }
            let p = self.pos;
            let c = rest.chars().next().unwrap_or('\0');
            match c {
                ' ' | '\t' | '\r' | '\n' => {
                    // A space run; stop before a trim marker so it is seen as one.
                    while let Some(&b) = self.rest().as_bytes().first() {
                        if !is_space(b) {
                            break;
                        }
                        let r = self.rest();
                        if r.len() > 2 && r.as_bytes()[1] == b'-' && r[2..].starts_with(self.right)
                        {
                            break;
                        }
                        self.pos += 1;
                    }
                    if self.pos == p {
                        self.pos += 1;
                    }
                    self.push(Tok::Space, p);
                }
                '=' => {
                    self.pos += 1;
                    self.push(Tok::Assign, p);
                }
                ':' => {
                    if !rest.starts_with(":=") {
                        return Err(self.err(p, "expected :="));
                    }
                    self.pos += 2;
                    self.push(Tok::Declare, p);
                }
                '|' => {
                    self.pos += 1;
                    self.push(Tok::Pipe, p);
                }
                ',' => {
                    self.pos += 1;
                    self.push(Tok::Comma, p);
                }
                '"' => {
                    let s = self.quoted(p)?;
                    self.push(Tok::Str(s), p);
                }
                '`' => {
                    let Some(end) = rest[1..].find('`') else {
                        return Err(self.err(p, "unterminated raw quoted string"));
                    };
                    let s = rest[1..1 + end].replace('\r', "");
                    self.pos += end + 2;
                    self.push(Tok::Str(s), p);
                }
                '\'' => {
                    let ch = self.char_constant(p)?;
                    self.push(Tok::Char(ch), p);
                }
                '$' => {
                    self.pos += 1;
                    self.word();
                    let name = self.src[p..self.pos].to_string();
                    self.push(Tok::Variable(name), p);
                }
                '.' => {
                    let next = rest[1..].chars().next();
                    if next.is_some_and(|c| c.is_ascii_digit()) {
                        self.number(p)?;
                    } else if next.is_some_and(is_alnum) {
                        self.pos += 1;
                        self.word();
                        let name = self.src[p + 1..self.pos].to_string();
                        self.push(Tok::Field(name), p);
                    } else {
                        self.pos += 1;
                        self.push(Tok::Dot, p);
                    }
                }
                '(' => {
                    self.pos += 1;
                    self.paren_depth += 1;
                    self.push(Tok::LeftParen, p);
                }
                ')' => {
                    if self.paren_depth == 0 {
                        return Err(self.err(p, "unexpected right paren"));
                    }
                    self.paren_depth -= 1;
                    self.pos += 1;
                    self.push(Tok::RightParen, p);
                }
                '+' | '-' | '0'..='9' => self.number(p)?,
                c if is_alnum(c) => {
                    self.word();
                    let word = &self.src[p..self.pos];
                    let kind = match word {
                        "true" => Tok::Bool(true),
                        "false" => Tok::Bool(false),
                        "nil" => Tok::Nil,
                        w => Tok::Ident(w.to_string()),
                    };
                    self.push(kind, p);
                }
                c => {
                    return Err(self.err(p, format!("unexpected {:?} in command", c)));
                }
            }
        }
    }

    fn word(&mut self) {
        while let Some(c) = self.rest().chars().next() {
            if !is_alnum(c) {
                break;
            }
            self.pos += c.len_utf8();
        }
    }

    fn number(&mut self, p: usize) -> Result<(), Error> {
        let rest = self.rest();
        let bytes = rest.as_bytes();
        let mut i = 0;
        if matches!(bytes.first(), Some(b'+' | b'-')) {
            i += 1;
        }
        let mut digits = "0123456789_";
        if rest[i..].len() >= 2 && bytes[i] == b'0' {
            match bytes[i + 1] {
                b'x' | b'X' => {
                    digits = "0123456789abcdefABCDEF_";
                    i += 2;
                }
                b'o' | b'O' => {
                    digits = "01234567_";
                    i += 2;
                }
                b'b' | b'B' => {
                    digits = "01_";
                    i += 2;
                }
                _ => {}
            }
        }
        let take = |i: &mut usize, set: &str| {
            while *i < bytes.len() && set.as_bytes().contains(&bytes[*i]) {
                *i += 1;
            }
        };
        take(&mut i, digits);
        if i < bytes.len() && bytes[i] == b'.' {
            i += 1;
            take(&mut i, digits);
        }
        let exp = if digits.len() == 11 { b"eE" } else { b"pP" };
        if i < bytes.len() && exp.contains(&bytes[i]) {
            i += 1;
            if i < bytes.len() && matches!(bytes[i], b'+' | b'-') {
                i += 1;
            }
            take(&mut i, "0123456789_");
        }
        if i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.') {
            let end = rest[i..]
                .find(|c: char| !is_alnum(c) && c != '.')
                .map(|e| i + e)
                .unwrap_or(rest.len());
            return Err(self.err(p, format!("bad number syntax: {:?}", &rest[..end])));
        }
        let text = rest[..i].to_string();
        if text == "+" || text == "-" {
            return Err(self.err(p, format!("bad number syntax: {text:?}")));
        }
        self.pos += i;
        self.push(Tok::Number(text), p);
        Ok(())
    }

    /// A double-quoted string, unescaped as Go's `strconv.Unquote` does.
    fn quoted(&mut self, p: usize) -> Result<String, Error> {
        let mut out = String::new();
        let mut chars = self.rest()[1..].char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos += i + 2;
                    return Ok(out);
                }
                '\n' => break,
                '\\' => {
                    let Some((_, e)) = chars.next() else { break };
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        'a' => out.push('\u{7}'),
                        'b' => out.push('\u{8}'),
                        'f' => out.push('\u{c}'),
                        'v' => out.push('\u{b}'),
                        '\\' => out.push('\\'),
                        '"' => out.push('"'),
                        '\'' => return Err(self.err(p, "invalid syntax")),
                        'x' | 'u' | 'U' => {
                            let n = match e {
                                'x' => 2,
                                'u' => 4,
                                _ => 8,
                            };
                            let mut code = 0u32;
                            for _ in 0..n {
                                let d = chars.next().and_then(|(_, d)| d.to_digit(16));
                                let Some(d) = d else {
                                    return Err(self.err(p, "invalid syntax"));
                                };
                                code = code * 16 + d;
                            }
                            match char::from_u32(code) {
                                Some(ch) => out.push(ch),
                                None => return Err(self.err(p, "invalid syntax")),
                            }
                        }
                        '0'..='7' => {
                            let mut code = e.to_digit(8).unwrap_or(0);
                            for _ in 0..2 {
                                let d = chars.next().and_then(|(_, d)| d.to_digit(8));
                                let Some(d) = d else {
                                    return Err(self.err(p, "invalid syntax"));
                                };
                                code = code * 8 + d;
                            }
                            out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                        }
                        _ => return Err(self.err(p, "invalid syntax")),
                    }
                }
                c => out.push(c),
            }
        }
        Err(self.err(p, "unterminated quoted string"))
    }

    fn char_constant(&mut self, p: usize) -> Result<char, Error> {
        let rest = &self.rest()[1..];
        let Some(end) = rest.find('\'') else {
            return Err(self.err(p, "unterminated character constant"));
        };
        let body = if rest.starts_with("\\'") {
            "\\'"
        } else {
            &rest[..end]
        };
        let ch = match body {
            "\\'" => '\'',
            "\\n" => '\n',
            "\\t" => '\t',
            "\\\\" => '\\',
            "\\r" => '\r',
            "\\0" => '\0',
            b => {
                let mut cs = b.chars();
                match (cs.next(), cs.next()) {
                    (Some(c), None) => c,
                    _ => return Err(self.err(p, format!("malformed character constant: '{b}'"))),
                }
            }
        };
        self.pos += 1 + body.len() + 1;
        Ok(ch)
    }
}
