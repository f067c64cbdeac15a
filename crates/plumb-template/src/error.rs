//! Errors of parsing and executing a template, with the line and column in the template.

use std::fmt;

/// Whether the template could not be parsed or failed while it ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad syntax, an undefined function or variable: found before execution.
    Parse,
    /// A failure while executing: a missing key, a function's error, a bad argument.
    Exec,
}

/// A template error. `line` and `column` are 1-based; the column counts characters.
///
/// Its text follows Go's (`template: NAME:LINE:COL: executing "NAME" at <ACTION>: MESSAGE`),
/// except that Go prints no column for parse errors and a 0-based byte column for execution
/// errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// Parse or execution error.
    pub kind: ErrorKind,
    /// The name the template was parsed under.
    pub name: String,
    /// The template (`define`d name) executing when the error happened.
    pub executing: Option<String>,
    /// 1-based line in the template text.
    pub line: u32,
    /// 1-based column (in characters) in that line.
    pub column: u32,
    /// Byte offset in the template text.
    pub offset: usize,
    /// The source text of the action or function call that failed (`upper 3`, `.a.b`).
    pub context: Option<String>,
    /// What went wrong, in Go's words.
    pub message: String,
}

fn line_col(src: &str, offset: usize) -> (u32, u32) {
    let offset = offset.min(src.len());
    let before = &src[..offset];
    let line = before.matches('\n').count() + 1;
    let col = match before.rfind('\n') {
        Some(nl) => before[nl + 1..].chars().count() + 1,
        None => before.chars().count() + 1,
    };
    (
        u32::try_from(line).unwrap_or(u32::MAX),
        u32::try_from(col).unwrap_or(u32::MAX),
    )
}

impl Error {
    pub(crate) fn parse(name: &str, src: &str, offset: usize, message: String) -> Error {
        let (line, column) = line_col(src, offset);
        Error {
            kind: ErrorKind::Parse,
            name: name.to_string(),
            executing: None,
            line,
            column,
            offset,
            context: None,
            message,
        }
    }

    pub(crate) fn exec(
        name: &str,
        src: &str,
        executing: &str,
        offset: usize,
        context: &str,
        message: String,
    ) -> Error {
        let (line, column) = line_col(src, offset);
        Error {
            kind: ErrorKind::Exec,
            name: name.to_string(),
            executing: Some(executing.to_string()),
            line,
            column,
            offset,
            context: Some(context.to_string()),
            message,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "template: {}:{}:{}: ", self.name, self.line, self.column)?;
        if let (Some(executing), Some(context)) = (&self.executing, &self.context) {
            write!(f, "executing {executing:?} at <{context}>: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
