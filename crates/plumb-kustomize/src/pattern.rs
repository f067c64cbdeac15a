//! Regular expressions read from kustomizations (patch targets, replacement selectors, field
//! paths, image names), compiled within fixed bounds. The regex crate bounds the compiled
//! program, but parsing a pattern costs memory in proportion to its length first: a 10 MB
//! pattern took a gigabyte before failing, so patterns longer than [`MAX_PATTERN_LEN`] are
//! refused before they are parsed.

use regex::{Regex, RegexBuilder};
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
    let re = RegexBuilder::new(pattern)
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

fn check_length(pattern: &str) -> Result<(), PatternError> {
    if pattern.len() > MAX_PATTERN_LEN {
        return Err(PatternError(format!(
            "regular expression is {} bytes long, more than the {MAX_PATTERN_LEN} allowed",
            pattern.len()
        )));
    }
    Ok(())
}
