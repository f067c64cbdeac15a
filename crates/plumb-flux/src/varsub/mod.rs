//! Flux's postBuild variable substitution on text, as kustomize-controller applies it.
//!
//! kustomize-controller renders each built object to YAML and runs fluxcd/pkg's `envsubst` (a
//! fork of drone/envsubst) over the text; this module gives the same output, or fails where the
//! controller fails, for the same text and variables:
//!
//! - `${VAR}` is replaced; `$VAR` is left as it is; `$${VAR}` is a literal `${VAR}`.
//! - `${VAR=word}`, `${VAR:=word}`, `${VAR:-word}`, `${VAR:?word}` and `${VAR:+word}` all mean
//!   "the value, or `word` when the value is empty"; `word` may contain `${...}`.
//! - `${VAR-word}`, `${VAR+word}` and `${VAR?word}` are rejected ("missing closing brace").
//! - String operators: `${#VAR}` (length in bytes), `${VAR^}`, `${VAR^^}`, `${VAR,}`,
//!   `${VAR,,}`, `${VAR:offset}`, `${VAR:offset:length}`, `${VAR#glob}`, `${VAR##glob}`,
//!   `${VAR%glob}`, `${VAR%%glob}`, `${VAR/text/repl}`, `${VAR//text/repl}`,
//!   `${VAR/#text/repl}`, `${VAR/%text/repl}`.
//! - Any other use of `${` fails the whole text, in both modes.
//! - [`Mode::Strict`]: a variable that is not defined fails, unless a default operator reads it.
//!   [`Mode::Lenient`]: it reads as empty.
//!
//! Which variables exist (`substituteFrom`, `substitute`), the `substitute: disabled` opt-out,
//! and the YAML round trip belong to the caller.
//!
//! ```
//! use std::collections::BTreeMap;
//! use plumb_flux::varsub::{self, Mode};
//!
//! let vars = BTreeMap::from([("env".to_string(), "prod".to_string())]);
//! let text = "name: app-${env}\nreplicas: ${replicas:=2}\nscript: echo $$HOME $${X}";
//! assert_eq!(
//!     varsub::substitute(text, &vars, Mode::Strict).unwrap(),
//!     "name: app-prod\nreplicas: 2\nscript: echo $HOME ${X}"
//! );
//! let err = varsub::substitute("${region}", &vars, Mode::Strict).unwrap_err();
//! assert_eq!(err.to_string(), "variable not set (strict mode): \"region\" at byte 0");
//! ```

mod glob;
mod ops;
mod syntax;

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;

pub use syntax::SyntaxProblem;
use syntax::{Expr, Node};

/// What an undefined variable means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// An undefined variable is an error unless a default operator (`=`, `:=`, `:-`, `:?`,
    /// `:+`) reads it. kustomize-controller's default since v1.9 (Flux 2.9).
    #[default]
    Strict,
    /// An undefined variable reads as the empty string (older controllers, `--no-strict`).
    Lenient,
}

/// The variables a substitution reads.
pub trait VarLookup {
    /// The value of `name`, or `None` when it is not defined.
    fn lookup(&self, name: &str) -> Option<&str>;
}

impl<S: BuildHasher> VarLookup for HashMap<String, String, S> {
    fn lookup(&self, name: &str) -> Option<&str> {
        self.get(name).map(String::as_str)
    }
}

impl VarLookup for BTreeMap<String, String> {
    fn lookup(&self, name: &str) -> Option<&str> {
        self.get(name).map(String::as_str)
    }
}

/// Why a text could not be substituted. Offsets are byte offsets into the input text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubstError {
    /// The text has a `${` that Flux cannot parse; Flux fails the whole object.
    #[error("{problem} at byte {offset} in `{snippet}` (expression at byte {expression})")]
    Syntax {
        /// Flux's reason.
        problem: SyntaxProblem,
        /// Where the parser stopped.
        offset: usize,
        /// Where the enclosing `${` starts.
        expression: usize,
        /// The start of the expression's text, for the message.
        snippet: String,
    },
    /// Strict mode: a variable is read that is not defined.
    #[error("variable not set (strict mode): \"{name}\" at byte {offset}")]
    VarNotSet {
        /// The variable's name.
        name: String,
        /// Where its `${` starts.
        offset: usize,
    },
    /// A byte-based operator (`${x:1}`, `${x#?}`) cut a multi-byte character, so the result is
    /// not UTF-8. Flux would pass the bytes on and fail to read them back as YAML.
    #[error("`${{{name}...}}` at byte {offset} gives bytes that are not UTF-8: a byte-based operator split a multi-byte character")]
    SplitCharacter {
        /// The variable of the expression that gave the bytes.
        name: String,
        /// Where the expression's `${` starts.
        offset: usize,
    },
}

/// A `${...}` reference in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarRef {
    /// The variable's name.
    pub name: String,
    /// Byte offset of the `$` of `${`.
    pub start: usize,
    /// Byte offset just past the closing `}`.
    pub end: usize,
    /// The operator as written (`""` for a plain `${VAR}`, `":="`, `"#"`, `"//"`, ...).
    pub operator: String,
    /// Whether a default operator gives a value when the variable is undefined or empty, so
    /// that strict mode accepts it undefined.
    pub has_default: bool,
}

/// A parsed text, to list its references and substitute it without parsing twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    nodes: Vec<Node>,
}

/// Parses `input`; fails as Flux does on a malformed `${`.
pub fn parse(input: &str) -> Result<Template, SubstError> {
    syntax::parse(input)
        .map(|nodes| Template { nodes })
        .map_err(|e| SubstError::Syntax {
            problem: e.problem,
            offset: e.offset,
            expression: e.expr_start,
            snippet: snippet(input, e.expr_start),
        })
}

/// Substitutes `vars` into `input` as Flux's postBuild does in `mode`.
pub fn substitute(
    input: &str,
    vars: &(impl VarLookup + ?Sized),
    mode: Mode,
) -> Result<String, SubstError> {
    parse(input)?.substitute(vars, mode)
}

/// The `${...}` references in `input`, nested ones included (after the one they are in), in
/// text order. `$VAR` and escaped `$${VAR}` are not references.
pub fn references(input: &str) -> Result<Vec<VarRef>, SubstError> {
    Ok(parse(input)?.references())
}

/// Whether Flux accepts `name` as a variable name: `^[_[:alpha:]][_[:alpha:][:digit:]]*$`,
/// ASCII only. kustomize-controller rejects the whole substitution if any variable it was given
/// has another name.
pub fn is_valid_var_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b == b'_' || b.is_ascii_alphabetic())
        && bytes.all(|b| b == b'_' || b.is_ascii_alphanumeric())
}

impl Template {
    /// The references, as [`references`] lists them.
    pub fn references(&self) -> Vec<VarRef> {
        let mut out = Vec::new();
        collect_references(&self.nodes, &mut out);
        out
    }

    /// Substitutes `vars`, as [`substitute`] does.
    pub fn substitute(
        &self,
        vars: &(impl VarLookup + ?Sized),
        mode: Mode,
    ) -> Result<String, SubstError> {
        let evaluator = Evaluator { vars, mode };
        let mut out = Vec::new();
        let mut pieces = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            pieces.push(out.len());
            evaluator.node(node, &mut out)?;
        }
        String::from_utf8(out).map_err(|e| {
            // Text nodes are UTF-8, so the first bad byte comes from the last expression that
            // starts at or before it.
            let bad = e.utf8_error().valid_up_to();
            let culprit = pieces
                .iter()
                .zip(&self.nodes)
                .take_while(|(&start, _)| start <= bad)
                .filter_map(|(_, node)| match node {
                    Node::Expr(expr) => Some(expr),
                    Node::Text(_) => None,
                })
                .last();
            SubstError::SplitCharacter {
                name: culprit.map(|e| e.name.clone()).unwrap_or_default(),
                offset: culprit.map_or(0, |e| e.start),
            }
        })
    }
}

fn collect_references(nodes: &[Node], out: &mut Vec<VarRef>) {
    for node in nodes {
        if let Node::Expr(expr) = node {
            out.push(VarRef {
                name: expr.name.clone(),
                start: expr.start,
                end: expr.end,
                operator: expr.operator.clone(),
                has_default: is_default_operator(&expr.operator),
            });
            collect_references(&expr.args, out);
        }
    }
}

/// Operators that accept an undefined variable in strict mode.
fn is_default_operator(operator: &str) -> bool {
    matches!(operator, "=" | ":=" | ":-" | ":?" | ":+")
}

/// The start of an expression's text for an error message: up to its first `}` or line end,
/// at most 40 characters.
fn snippet(input: &str, start: usize) -> String {
    let rest = &input[start..];
    let mut end = rest.find(['}', '\n']).map_or(rest.len(), |i| {
        if rest[i..].starts_with('}') {
            i + 1
        } else {
            i
        }
    });
    if let Some((cut, _)) = rest.char_indices().nth(40) {
        end = end.min(cut);
    }
    rest[..end].to_string()
}

struct Evaluator<'v, V: ?Sized> {
    vars: &'v V,
    mode: Mode,
}

impl<V: VarLookup + ?Sized> Evaluator<'_, V> {
    fn node(&self, node: &Node, out: &mut Vec<u8>) -> Result<(), SubstError> {
        match node {
            Node::Text(text) => out.extend_from_slice(text.as_bytes()),
            Node::Expr(expr) => self.expr(expr, out)?,
        }
        Ok(())
    }

    /// Flux evaluates every argument first (so a strict-mode error in an unused default still
    /// fails), then reads the variable.
    fn expr(&self, expr: &Expr, out: &mut Vec<u8>) -> Result<(), SubstError> {
        let mut args = Vec::with_capacity(expr.args.len());
        for arg in &expr.args {
            let mut value = Vec::new();
            self.node(arg, &mut value)?;
            args.push(value);
        }
        let value = match (self.vars.lookup(&expr.name), self.mode) {
            (Some(value), _) => value,
            (None, Mode::Lenient) => "",
            (None, Mode::Strict) if is_default_operator(&expr.operator) => "",
            (None, Mode::Strict) => {
                return Err(SubstError::VarNotSet {
                    name: expr.name.clone(),
                    offset: expr.start,
                })
            }
        };
        out.extend(ops::apply(&expr.operator, value.as_bytes(), &args));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn lenient(input: &str, pairs: &[(&str, &str)]) -> String {
        substitute(input, &vars(pairs), Mode::Lenient).expect("substitutes")
    }

    fn strict(input: &str, pairs: &[(&str, &str)]) -> Result<String, SubstError> {
        substitute(input, &vars(pairs), Mode::Strict)
    }

    #[test]
    fn dollar_forms() {
        assert_eq!(
            lenient("$a ${a} $${a} $$a $$$a", &[("a", "1")]),
            "$a 1 ${a} $a $$a"
        );
        assert_eq!(lenient("$${a:=${a}}", &[("a", "1")]), "${a:=1}");
        assert_eq!(lenient("price: 5$", &[]), "price: 5$");
    }

    #[test]
    fn nested_defaults() {
        let v = &[("b", ""), ("c", "C")];
        assert_eq!(lenient("${a:=${b:-${c}}}", v), "C");
        assert_eq!(lenient("${a:=x-${b:=y}-${c,,}}", v), "x-y-c");
        assert_eq!(lenient("${a=}", v), "");
        assert_eq!(lenient("${c:=unused}", v), "C");
    }

    #[test]
    fn unsupported_operators() {
        assert_eq!(lenient("${a:+alt}", &[("a", "set")]), "set");
        assert_eq!(lenient("${a:+alt}", &[]), "alt");
        assert_eq!(lenient("${a:?msg}", &[]), "msg");
        let err = strict("k: ${a+alt}", &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "missing closing brace at byte 6 in `${a+alt}` (expression at byte 3)"
        );
        assert!(substitute("${a-alt}", &vars(&[]), Mode::Lenient).is_err());
    }

    #[test]
    fn strict_mode() {
        assert_eq!(strict("${a:?x}${b:+y}", &[]).unwrap(), "xy");
        assert_eq!(strict("${e}", &[("e", "")]).unwrap(), "");
        let err = strict("x: ${b:=${missing}}", &[("b", "set")]).unwrap_err();
        assert_eq!(
            err,
            SubstError::VarNotSet {
                name: "missing".into(),
                offset: 8
            }
        );
        assert_eq!(
            err.to_string(),
            "variable not set (strict mode): \"missing\" at byte 8"
        );
        assert!(strict("${#missing}", &[]).is_err());
    }

    #[test]
    fn unicode_values_and_text() {
        let v = &[("city", "Zürich"), ("ü", "x")];
        assert_eq!(lenient("ville: «${city^^}»", v), "ville: «ZÜRICH»");
        assert_eq!(lenient("${#city}", v), "7");
        assert_eq!(lenient("${city/ü/ue}", v), "Zuerich");
        assert_eq!(lenient("${city:0:3}", v), "Zü");
        assert_eq!(lenient("${ü}", v), "x");
        let err = strict("a: ${city:0:2}", v).unwrap_err();
        assert_eq!(
            err,
            SubstError::SplitCharacter {
                name: "city".into(),
                offset: 3
            }
        );
        assert_eq!(lenient("${city:0:2}${city:2}", v), "Zürich");
    }

    #[test]
    fn syntax_errors_fail_in_both_modes() {
        for mode in [Mode::Strict, Mode::Lenient] {
            let err = substitute("run: ${a[@]}", &vars(&[("a", "1")]), mode).unwrap_err();
            assert!(matches!(
                err,
                SubstError::Syntax {
                    problem: SyntaxProblem::MissingClosingBrace,
                    offset: 8,
                    expression: 5,
                    ..
                }
            ));
        }
    }

    #[test]
    fn references_with_offsets() {
        let text = "a: ${x}\nb: $${y} $z ${w:=${v^^}}-${#u}";
        let refs = references(text).unwrap();
        let got: Vec<_> = refs
            .iter()
            .map(|r| {
                (
                    r.name.as_str(),
                    r.start,
                    r.end,
                    r.operator.as_str(),
                    r.has_default,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("x", 3, 7, "", false),
                ("w", 20, 32, ":=", true),
                ("v", 25, 31, "^^", false),
                ("u", 33, 38, "#", false),
            ]
        );
        for r in &refs {
            assert!(text[r.start..r.end].starts_with("${"));
            assert!(text[r.start..r.end].ends_with('}'));
        }
        assert!(references("${").is_err());
    }

    #[test]
    fn flux_quirks_are_kept() {
        let v = &[("x", "abcabc"), ("f", "v1.2")];
        // A prefix/suffix replace without a replacement leaves the value alone.
        assert_eq!(lenient("${x/#abc/}", v), "abcabc");
        // `%` matches the reversed pattern, so a bracket class reads backwards.
        assert_eq!(lenient("${f%[0-9]}", v), "v1.2");
        assert_eq!(lenient("${f%]9-0[}", v), "v1.");
        // An empty pattern matches before every character and at the end.
        assert_eq!(lenient("${x///-}", v), "-a-b-c-a-b-c-");
        // `:-` is a default, never a negative substring offset.
        assert_eq!(lenient("${x:-1}", v), "abcabc");
        assert_eq!(lenient("${x:${neg}}", &[("x", "abc"), ("neg", "-2")]), "bc");
        // A multi-byte character right after `:` trips Flux's scanner.
        assert!(substitute("${x:é}", &vars(v), Mode::Lenient).is_err());
        // NUL is the scanner's end of input.
        assert_eq!(lenient("a\0${x}", v), "a");
    }

    #[test]
    fn var_names() {
        for ok in ["a", "_", "A_1", "_9", "cluster_name"] {
            assert!(is_valid_var_name(ok), "{ok}");
        }
        for bad in ["", "1a", "a-b", "a.b", "é", "a b", "ä1"] {
            assert!(!is_valid_var_name(bad), "{bad}");
        }
    }

    #[test]
    fn works_through_a_trait_object() {
        let map = vars(&[("a", "1")]);
        let dynamic: &dyn VarLookup = &map;
        assert_eq!(substitute("${a}", dynamic, Mode::Strict).unwrap(), "1");
    }
}
