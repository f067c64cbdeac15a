//! Regular expressions read from kustomizations (patch targets, replacement selectors, field
//! paths, image names), compiled within fixed bounds. The regex crate bounds the compiled
//! program, but parsing a pattern costs memory in proportion to its length first: a 10 MB
//! pattern took a gigabyte before failing, so patterns longer than [`MAX_PATTERN_LEN`] are
//! refused before they are parsed.

use regex::{Regex, RegexBuilder};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};

/// The longest pattern compiled: an alternation of a hundred maximal Kubernetes names (253
/// bytes each) still fits.
pub const MAX_PATTERN_LEN: usize = 32 * 1024;

/// The most memory the compiled program of a pattern may take.
pub const COMPILED_SIZE_LIMIT: usize = 4 << 20;

/// The most memory the lazy DFA of a pattern may take while matching.
pub const DFA_SIZE_LIMIT: usize = 2 << 20;

/// Why a pattern did not compile: the regex crate's message, or that the pattern is too long.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PatternError(String);

/// Compiles `pattern` within the bounds above.
pub fn compile(pattern: &str) -> Result<Regex, PatternError> {
    check_length(pattern)?;
    build(pattern)
}

/// Compiles `pattern` to match a whole value, as kustomize anchors its selectors.
pub fn compile_anchored(pattern: &str) -> Result<Regex, PatternError> {
    // Checked before wrapping, so that the message gives the length the user wrote.
    check_length(pattern)?;
    build(&format!("^(?:{pattern})$"))
}

/// How many compiled patterns a process keeps: far more than a repository's distinct patch
/// targets and image names, and a bound on what a generated one can hold.
const REMEMBERED: usize = 4096;

/// Compiles `pattern`, or finds it compiled: the same targets and image names come back in
/// every kustomization that uses a component or base, and compiling was 4% of a build.
fn build(pattern: &str) -> Result<Regex, PatternError> {
    static COMPILED: OnceLock<Mutex<HashMap<String, Regex>>> = OnceLock::new();
    let compiled = COMPILED.get_or_init(Mutex::default);
    let lock = || compiled.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(re) = lock().get(pattern) {
        return Ok(re.clone());
    }
    let re = RegexBuilder::new(&go_literal_braces(pattern))
        .size_limit(COMPILED_SIZE_LIMIT)
        .dfa_size_limit(DFA_SIZE_LIMIT)
        .build()
        .map_err(|e| PatternError(e.to_string()))?;
    let mut map = lock();
    if map.len() < REMEMBERED {
        map.insert(pattern.to_string(), re.clone());
    }
    Ok(re)
}

/// `pattern` with each `{` that Go's regexp reads as a literal brace escaped for the regex
/// crate. Go takes `{` for a repetition only in the forms `{n}`, `{n,}` and `{n,m}`, and for
/// itself anywhere else; the regex crate refuses such a brace. A patch target that names an
/// object before postBuild substitution (`name: postgres-\${APP}`) compiles in kustomize,
/// and matches that name.
fn go_literal_braces(pattern: &str) -> Cow<'_, str> {
    if !pattern.contains('{') {
        return Cow::Borrowed(pattern);
    }
    let mut out = String::with_capacity(pattern.len() + 4);
    let mut chars = pattern.char_indices().peekable();
    // Inside a character class, where a brace is a literal for both.
    let mut class = false;
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' => {
                out.push(c);
                if let Some((_, escaped)) = chars.next() {
                    out.push(escaped);
                }
                continue;
            }
            '[' if !class => {
                class = true;
                out.push(c);
                // A `]` first in the class (after a `^`) is a member, not its end.
                if let Some(&(_, '^')) = chars.peek() {
                    out.push('^');
                    chars.next();
                }
                if let Some(&(_, ']')) = chars.peek() {
                    out.push(']');
                    chars.next();
                }
                continue;
            }
            '[' if chars.peek().is_some_and(|&(_, n)| n == ':') => {
                // A POSIX class (`[:alpha:]`) inside a class: its `]` does not end the class.
                out.push(c);
                for (_, n) in chars.by_ref() {
                    out.push(n);
                    if n == ']' {
                        break;
                    }
                }
                continue;
            }
            ']' if class => class = false,
            '{' if !class && !is_go_repetition(&pattern[at..]) => {
                out.push_str("\\{");
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    Cow::Owned(out)
}

/// Whether `text`, which starts with `{`, starts with a repetition as Go reads one.
fn is_go_repetition(text: &str) -> bool {
    let Some(end) = text.find('}') else {
        return false;
    };
    let inside = &text[1..end];
    let (min, max) = match inside.split_once(',') {
        Some((min, max)) => (min, Some(max)),
        None => (inside, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(min) && max.is_none_or(|m| m.is_empty() || digits(m))
}

fn check_length(pattern: &str) -> Result<(), PatternError> {
    if pattern.len() > MAX_PATTERN_LEN {
        return Err(PatternError(format!(
            "regular expression is {} bytes long, more than the {MAX_PATTERN_LEN} allowed",
            pattern.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{compile_anchored, go_literal_braces};

    #[test]
    fn a_brace_that_begins_no_repetition_is_a_literal_as_in_go() {
        // What kustomize's Go regexp matches with each anchored pattern.
        let cases: &[(&str, &[&str], &[&str])] = &[
            (
                r"postgres-\${APP}",
                &["postgres-${APP}"],
                &["postgres-", "postgres-x"],
            ),
            ("a{APP}", &["a{APP}"], &["a"]),
            ("a{2}", &["aa"], &["a{2}", "a"]),
            ("a{1,}", &["a", "aaa"], &["a{1,}"]),
            ("a{1,2}", &["a", "aa"], &["aaa"]),
            ("a{,2}", &["a{,2}"], &["aa"]),
            ("a{1,2", &["a{1,2"], &["a"]),
            ("{", &["{"], &[""]),
            ("a{}", &["a{}"], &["a"]),
            (r"a\{2}", &["a{2}"], &["aa"]),
            ("[{]x", &["{x"], &["x"]),
            ("[]{]{2}", &["]]", "{{"], &["{"]),
            ("[[:alpha:]{]{3}", &["a{b"], &["ab"]),
        ];
        for (pattern, matching, other) in cases {
            let re = compile_anchored(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"));
            for text in *matching {
                assert!(re.is_match(text), "{pattern} should match {text}");
            }
            for text in *other {
                assert!(!re.is_match(text), "{pattern} should not match {text}");
            }
        }
        assert_eq!(go_literal_braces("a{2}b"), "a{2}b");
        assert_eq!(go_literal_braces("x{y}"), r"x\{y}");
    }
}
