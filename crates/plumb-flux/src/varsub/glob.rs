//! The shell patterns of `${x#pattern}` and `${x%pattern}`, matched as Flux's envsubst does.
//!
//! The syntax is Go's `path.Match` (`*`, `?`, `[a-z]`, `[^a-z]`, `\c`) with one change made by
//! envsubst: `*` also matches `/`. A malformed pattern is only noticed when matching reaches the
//! malformed part, and Flux then leaves the value unchanged; matching segment by segment, with
//! each starred segment taking its leftmost fit, reproduces exactly when that happens.

use super::ops::decode;

/// The pattern is malformed (an unclosed `[`, a trailing `\`, an empty range end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadPattern;

/// Whether `pattern` matches all of `name`.
pub(crate) fn matches(pattern: &[u8], name: &[u8]) -> Result<bool, BadPattern> {
    let mut pattern = pattern;
    let mut name = name;
    while !pattern.is_empty() {
        let (starred, segment, rest) = split_segment(pattern);
        pattern = rest;
        let last = pattern.is_empty();
        if starred && segment.is_empty() {
            return Ok(true);
        }
        // The last segment must use up the name; an earlier one may leave some for the next.
        let fits = |tail: &[u8]| !last || tail.is_empty();
        if let Some(tail) = match_segment(segment, name)? {
            if fits(tail) {
                name = tail;
                continue;
            }
        }
        if !starred {
            return Ok(false);
        }
        let mut found = None;
        for skip in 1..=name.len() {
            if let Some(tail) = match_segment(segment, &name[skip..])? {
                if fits(tail) {
                    found = Some(tail);
                    break;
                }
            }
        }
        match found {
            Some(tail) => name = tail,
            None => return Ok(false),
        }
    }
    Ok(name.is_empty())
}

/// Splits off the leading stars and the star-free segment after them. A `*` inside brackets
/// or after `\` belongs to the segment.
fn split_segment(pattern: &[u8]) -> (bool, &[u8], &[u8]) {
    let stars = pattern.iter().take_while(|&&b| b == b'*').count();
    let body = &pattern[stars..];
    let mut in_class = false;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'\\' if i + 1 < body.len() => i += 1,
            b'[' => in_class = true,
            b']' => in_class = false,
            b'*' if !in_class => break,
            _ => {}
        }
        i += 1;
    }
    (stars > 0, &body[..i], &body[i..])
}

/// Matches a star-free segment against the start of `name`; gives the unmatched tail. Stops
/// without an error as soon as the name runs out.
fn match_segment<'n>(segment: &[u8], name: &'n [u8]) -> Result<Option<&'n [u8]>, BadPattern> {
    let mut segment = segment;
    let mut name = name;
    while let Some(&item) = segment.first() {
        if name.is_empty() {
            return Ok(None);
        }
        match item {
            b'[' => {
                let (c, width) = decode(name);
                name = &name[width..];
                let (inside, rest) = class_contains(&segment[1..], c)?;
                if !inside {
                    return Ok(None);
                }
                segment = rest;
            }
            b'?' => {
                let (_, width) = decode(name);
                name = &name[width..];
                segment = &segment[1..];
            }
            _ => {
                let literal = if item == b'\\' {
                    *segment.get(1).ok_or(BadPattern)?
                } else {
                    item
                };
                if literal != name[0] {
                    return Ok(None);
                }
                segment = &segment[if item == b'\\' { 2 } else { 1 }..];
                name = &name[1..];
            }
        }
    }
    Ok(Some(name))
}

/// Reads a bracket class (after its `[`) and tells whether `c` is in it; gives the pattern
/// after the closing `]`.
fn class_contains(class: &[u8], c: char) -> Result<(bool, &[u8]), BadPattern> {
    let (negated, mut rest) = match class.split_first() {
        Some((b'^', after)) => (true, after),
        _ => (false, class),
    };
    let mut hit = false;
    let mut ranges = 0;
    loop {
        if ranges > 0 {
            if let Some((b']', after)) = rest.split_first() {
                return Ok((hit != negated, after));
            }
        }
        let (low, after_low) = class_char(rest)?;
        let (high, after_range) = match after_low.split_first() {
            Some((b'-', after_dash)) => class_char(after_dash)?,
            _ => (low, after_low),
        };
        if low <= c && c <= high {
            hit = true;
        }
        ranges += 1;
        rest = after_range;
    }
}

/// One character of a class, possibly `\`-escaped. The class must go on after it (at least
/// its `]`), so running out of pattern here is malformed.
fn class_char(pattern: &[u8]) -> Result<(char, &[u8]), BadPattern> {
    let pattern = match pattern.first() {
        None | Some(b'-' | b']') => return Err(BadPattern),
        Some(b'\\') => &pattern[1..],
        Some(_) => pattern,
    };
    if pattern.is_empty() {
        return Err(BadPattern);
    }
    let (c, width) = decode(pattern);
    if c == char::REPLACEMENT_CHARACTER && width == 1 {
        return Err(BadPattern);
    }
    let rest = &pattern[width..];
    if rest.is_empty() {
        return Err(BadPattern);
    }
    Ok((c, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, name: &str) -> Result<bool, BadPattern> {
        matches(pattern.as_bytes(), name.as_bytes())
    }

    #[test]
    fn star_matches_slashes_too() {
        assert_eq!(m("*/", "path/to/"), Ok(true));
        assert_eq!(m("*.", "bash.string."), Ok(true));
        assert_eq!(m("*", ""), Ok(true));
        assert_eq!(m("a*b*c", "a--b--c"), Ok(true));
        assert_eq!(m("a*b*c", "a--b--c-"), Ok(false));
        assert_eq!(m("*c", "abcbc"), Ok(true));
    }

    #[test]
    fn single_characters_and_classes() {
        assert_eq!(m("?", "é"), Ok(true));
        assert_eq!(m("[a-c]x", "bx"), Ok(true));
        assert_eq!(m("[^a-c]x", "bx"), Ok(false));
        assert_eq!(m("[]a]", "]"), Err(BadPattern));
        assert_eq!(m(r"[\]]", "]"), Ok(true));
        assert_eq!(m(r"\*", "*"), Ok(true));
        assert_eq!(m(r"\*", "a"), Ok(false));
        assert_eq!(m("[é-ê]", "ê"), Ok(true));
    }

    #[test]
    fn malformed_parts_fail_only_when_reached() {
        assert_eq!(m("a[", "ab"), Err(BadPattern));
        assert_eq!(m("a[", "a"), Ok(false));
        assert_eq!(m("x[", "ab"), Ok(false));
        assert_eq!(m("a\\", "ab"), Err(BadPattern));
        assert_eq!(m("[a-]", "a"), Err(BadPattern));
    }
}
