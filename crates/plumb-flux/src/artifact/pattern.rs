//! The two pattern languages of source-watcher's copy operations: Go's `path.Match` and
//! `fs.Glob` for `from` (no `**`: it is one path element like `*`), and bmatcuk/doublestar v4
//! for the Extract strategy's `from` and for every `exclude`.
//!
//! Both are written from the Go algorithms so that their corner cases agree: a malformed
//! pattern is an error even where it would not match, `[]` and `[-` are malformed, and a
//! `/**` at the end of a doublestar pattern matches the directory itself too.

use std::path::Path;

/// Go's `path.ErrBadPattern` text.
pub const BAD_PATTERN: &str = "syntax error in pattern";

/// Whether source-watcher treats `from`'s pattern as a glob (`containsGlobChars`).
pub fn has_glob_chars(p: &str) -> bool {
    p.contains(['*', '?', '[', ']'])
}

/// Go's `path.Match`: `*` any run of non-`/` characters, `?` one, `[...]` a class (`^`
/// negates, `a-z` ranges), `\` escapes. The whole pattern is checked for syntax.
pub fn path_match(pattern: &str, name: &str) -> Result<bool, &'static str> {
    let mut pattern: Vec<char> = pattern.chars().collect();
    let mut name: Vec<char> = name.chars().collect();
    'pattern: while !pattern.is_empty() {
        let (star, chunk, rest) = scan_chunk(&pattern);
        let (chunk, rest) = (chunk.to_vec(), rest.to_vec());
        pattern = rest;
        if star && chunk.is_empty() {
            return Ok(!name.contains(&'/'));
        }
        let (t, ok) = match_chunk(&chunk, &name)?;
        if ok && (t.is_empty() || !pattern.is_empty()) {
            name = t;
            continue;
        }
        if star {
            let mut i = 0;
            while i < name.len() && name[i] != '/' {
                let (t, ok) = match_chunk(&chunk, &name[i + 1..])?;
                if ok {
                    if pattern.is_empty() && !t.is_empty() {
                        i += 1;
                        continue;
                    }
                    name = t;
                    continue 'pattern;
                }
                i += 1;
            }
        }
        // No match: the rest of the pattern must still be well formed.
        while !pattern.is_empty() {
            let (_, chunk, rest) = scan_chunk(&pattern);
            match_chunk(chunk, &[])?;
            pattern = rest.to_vec();
        }
        return Ok(false);
    }
    Ok(name.is_empty())
}

/// Leading stars, then the chunk up to the next unbracketed `*`.
fn scan_chunk(pattern: &[char]) -> (bool, &[char], &[char]) {
    let mut p = pattern;
    let mut star = false;
    while p.first() == Some(&'*') {
        p = &p[1..];
        star = true;
    }
    let mut in_range = false;
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '\\' if i + 1 < p.len() => i += 1,
            '[' => in_range = true,
            ']' => in_range = false,
            '*' if !in_range => break,
            _ => {}
        }
        i += 1;
    }
    (star, &p[..i], &p[i..])
}

/// Matches `chunk` (no `*`) at the start of `s`: the rest of `s` and whether it matched.
fn match_chunk(mut chunk: &[char], mut s: &[char]) -> Result<(Vec<char>, bool), &'static str> {
    let mut failed = false;
    while let Some(&c) = chunk.first() {
        if !failed && s.is_empty() {
            failed = true;
        }
        match c {
            '[' => {
                let mut r = '\0';
                if !failed {
                    r = s[0];
                    s = &s[1..];
                }
                chunk = &chunk[1..];
                let negated = chunk.first() == Some(&'^');
                if negated {
                    chunk = &chunk[1..];
                }
                let mut matched = false;
                let mut ranges = 0;
                loop {
                    if chunk.first() == Some(&']') && ranges > 0 {
                        chunk = &chunk[1..];
                        break;
                    }
                    let (lo, rest) = get_escaped(chunk)?;
                    chunk = rest;
                    let mut hi = lo;
                    if chunk[0] == '-' {
                        let (h, rest) = get_escaped(&chunk[1..])?;
                        hi = h;
                        chunk = rest;
                    }
                    if lo <= r && r <= hi {
                        matched = true;
                    }
                    ranges += 1;
                }
                if matched == negated {
                    failed = true;
                }
            }
            '?' => {
                if !failed {
                    if s[0] == '/' {
                        failed = true;
                    }
                    s = &s[1..];
                }
                chunk = &chunk[1..];
            }
            _ => {
                let literal = if c == '\\' {
                    chunk = &chunk[1..];
                    *chunk.first().ok_or(BAD_PATTERN)?
                } else {
                    c
                };
                if !failed {
                    if literal != s[0] {
                        failed = true;
                    }
                    s = &s[1..];
                }
                chunk = &chunk[1..];
            }
        }
    }
    if failed {
        Ok((Vec::new(), false))
    } else {
        Ok((s.to_vec(), true))
    }
}

/// One possibly escaped character of a class; a class may not start a range with `-` or `]`
/// nor end without `]`.
fn get_escaped(chunk: &[char]) -> Result<(char, &[char]), &'static str> {
    let mut chunk = chunk;
    match chunk.first() {
        None | Some('-') | Some(']') => return Err(BAD_PATTERN),
        Some('\\') => {
            chunk = &chunk[1..];
            if chunk.is_empty() {
                return Err(BAD_PATTERN);
            }
        }
        _ => {}
    }
    let rest = &chunk[1..];
    if rest.is_empty() {
        return Err(BAD_PATTERN);
    }
    Ok((chunk[0], rest))
}

/// Go's `fs.Glob` over the tree at `root`: the matching paths (files and directories), in
/// the order Go returns them. I/O errors are ignored as Go ignores them.
pub fn fs_glob(root: &Path, pattern: &str) -> Result<Vec<String>, &'static str> {
    path_match(pattern, "")?;
    glob_with_limit(root, pattern, 0)
}

fn has_meta(p: &str) -> bool {
    p.contains(['*', '?', '[', '\\'])
}

fn glob_with_limit(root: &Path, pattern: &str, depth: usize) -> Result<Vec<String>, &'static str> {
    // Go stops at 10000 levels of recursion; a pattern that deep is malformed.
    if depth > 10_000 {
        return Err(BAD_PATTERN);
    }
    if !has_meta(pattern) {
        return Ok(match valid_fs_path(pattern) && stat(root, pattern) {
            true => vec![pattern.to_string()],
            false => Vec::new(),
        });
    }
    let (dir, file) = match pattern.rfind('/') {
        Some(i) => (&pattern[..=i], &pattern[i + 1..]),
        None => ("", pattern),
    };
    let dir = match dir {
        "" => ".",
        d => &d[..d.len() - 1],
    };
    if !has_meta(dir) {
        return glob_dir(root, dir, file, Vec::new());
    }
    if dir == pattern {
        return Err(BAD_PATTERN);
    }
    let mut matches = Vec::new();
    for d in glob_with_limit(root, dir, depth + 1)? {
        matches = glob_dir(root, &d, file, matches)?;
    }
    Ok(matches)
}

/// The names in `dir` matching `pattern`, appended to `matches`.
fn glob_dir(
    root: &Path,
    dir: &str,
    pattern: &str,
    mut matches: Vec<String>,
) -> Result<Vec<String>, &'static str> {
    if !valid_fs_path(dir) {
        return Ok(matches);
    }
    for name in read_dir_sorted(root, dir) {
        if path_match(pattern, &name)? {
            matches.push(if dir == "." {
                name
            } else {
                format!("{dir}/{name}")
            });
        }
    }
    Ok(matches)
}

/// Go's `fs.ValidPath`: slash-separated, no empty, `.` or `..` element, except `.` alone.
fn valid_fs_path(p: &str) -> bool {
    p == "." || (!p.is_empty() && p.split('/').all(|e| !e.is_empty() && e != "." && e != ".."))
}

fn stat(root: &Path, rel: &str) -> bool {
    let path = if rel == "." {
        root.to_path_buf()
    } else {
        root.join(rel)
    };
    std::fs::metadata(path).is_ok()
}

/// The names in `dir` (relative to `root`), sorted as Go's `fs.ReadDir` sorts them; nothing
/// when it is not a directory.
fn read_dir_sorted(root: &Path, dir: &str) -> Vec<String> {
    let path = if dir == "." || dir.is_empty() {
        root.to_path_buf()
    } else {
        root.join(dir)
    };
    let Ok(read) = std::fs::read_dir(path) else {
        return Vec::new();
    };
    let mut names: Vec<String> = read
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Whether a doublestar pattern is well formed (`doublestar.ValidatePattern`): classes and
/// `{...}` closed, no trailing `\`.
pub fn doublestar_valid(pattern: &str) -> bool {
    let chars: Vec<char> = pattern.chars().collect();
    let mut braces = 0usize;
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                if i + 1 >= chars.len() {
                    return false;
                }
                i += 1;
            }
            '[' => {
                i += 1;
                if matches!(chars.get(i), Some('^') | Some('!')) {
                    i += 1;
                }
                // A class holds at least one character; `]` first is literal.
                if chars.get(i) == Some(&']') {
                    i += 1;
                }
                loop {
                    match chars.get(i) {
                        None => return false,
                        Some(']') => break,
                        Some('\\') => i += 2,
                        Some(_) => i += 1,
                    }
                }
            }
            '{' => braces += 1,
            '}' if braces > 0 => braces -= 1,
            _ => {}
        }
        i += 1;
    }
    braces == 0
}

/// A doublestar match of a whole slash-separated path: `**` as a whole element matches any
/// number of elements (so `dir/**` matches `dir` too), `{a,b}` alternatives, and within an
/// element `*`, `?`, `[...]` (`^` or `!` negates) and `\` escapes. A malformed pattern matches
/// nothing.
pub fn doublestar_match(pattern: &str, path: &str) -> bool {
    if let Some((pre, alts, post)) = first_alternatives(pattern) {
        return alts
            .iter()
            .any(|alt| doublestar_match(&format!("{pre}{alt}{post}"), path));
    }
    let p: Vec<&str> = pattern.split('/').collect();
    let n: Vec<&str> = path.split('/').collect();
    elements(&p, &n)
}

/// The first top-level `{a,b}` of a pattern: what is before it, its alternatives, what is
/// after it.
fn first_alternatives(pattern: &str) -> Option<(&str, Vec<&str>, &str)> {
    let bytes = pattern.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'{' => {
                let mut depth = 0;
                let mut start = i + 1;
                let mut alts = Vec::new();
                let mut j = i;
                while j < bytes.len() {
                    match bytes[j] {
                        b'\\' => j += 1,
                        b'{' => depth += 1,
                        b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                alts.push(&pattern[start..j]);
                                return Some((&pattern[..i], alts, &pattern[j + 1..]));
                            }
                        }
                        b',' if depth == 1 => {
                            alts.push(&pattern[start..j]);
                            start = j + 1;
                        }
                        _ => {}
                    }
                    j += 1;
                }
                return None;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn elements(p: &[&str], n: &[&str]) -> bool {
    match p.split_first() {
        None => n.is_empty(),
        Some((&"**", rest)) => (0..=n.len()).any(|skip| elements(rest, &n[skip..])),
        Some((first, rest)) => match n.split_first() {
            Some((name, nr)) => element_match(first, name) && elements(rest, nr),
            None => false,
        },
    }
}

/// One element of a doublestar pattern: Go's `path.Match` rules, with `!` as a second
/// negation and `]` first in a class literal.
fn element_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    element_from(&p, &n).unwrap_or(false)
}

fn element_from(p: &[char], n: &[char]) -> Option<bool> {
    let Some((&c, rest)) = p.split_first() else {
        return Some(n.is_empty());
    };
    match c {
        '*' => {
            for skip in 0..=n.len() {
                if element_from(rest, &n[skip..])? {
                    return Some(true);
                }
            }
            Some(false)
        }
        '?' => match n.split_first() {
            Some((_, nr)) => element_from(rest, nr),
            None => Some(false),
        },
        '[' => {
            let (matched, after) = class(rest, *n.first()?)?;
            if !matched {
                return Some(false);
            }
            element_from(after, &n[1..])
        }
        '\\' => {
            let (&esc, rest) = rest.split_first()?;
            match n.split_first() {
                Some((&f, nr)) if f == esc => element_from(rest, nr),
                _ => Some(false),
            }
        }
        _ => match n.split_first() {
            Some((&f, nr)) if f == c => element_from(rest, nr),
            _ => Some(false),
        },
    }
}

/// A `[...]` class after its `[`: whether `ch` is in it, and the pattern after its `]`.
fn class(p: &[char], ch: char) -> Option<(bool, &[char])> {
    let (negated, mut p) = match p.first() {
        Some('^') | Some('!') => (true, &p[1..]),
        _ => (false, p),
    };
    let mut found = false;
    let mut first = true;
    loop {
        let (&c, rest) = p.split_first()?;
        if c == ']' && !first {
            return Some((found != negated, rest));
        }
        first = false;
        let (lo, rest) = if c == '\\' {
            let (&e, r) = rest.split_first()?;
            (e, r)
        } else {
            (c, rest)
        };
        if rest.first() == Some(&'-') && rest.get(1).is_some_and(|&c| c != ']') {
            let hi = rest[1];
            if lo <= ch && ch <= hi {
                found = true;
            }
            p = &rest[2..];
        } else {
            if lo == ch {
                found = true;
            }
            p = rest;
        }
    }
}

/// doublestar v4's `Glob`: every path under `root` matching `pattern`, files and directories,
/// in the order of a walk whose directories are read sorted (so `a/x` before `a-b`). The root
/// itself is `.`.
pub fn doublestar_glob(root: &Path, pattern: &str) -> Vec<String> {
    let mut out = Vec::new();
    if doublestar_match(pattern, ".") {
        out.push(".".to_string());
    }
    walk(root, "", pattern, &mut out);
    out
}

fn walk(root: &Path, dir: &str, pattern: &str, out: &mut Vec<String>) {
    for name in read_dir_sorted(root, dir) {
        let rel = if dir.is_empty() {
            name
        } else {
            format!("{dir}/{name}")
        };
        if doublestar_match(pattern, &rel) {
            out.push(rel.clone());
        }
        // Symlinked directories are not followed, as doublestar does not follow them.
        if std::fs::symlink_metadata(root.join(&rel)).is_ok_and(|m| m.is_dir()) {
            walk(root, &rel, pattern, out);
        }
    }
}

/// The literal prefix of a pattern before its first glob element (`sourceSelectionRoot`).
pub fn selection_root(pattern: &str) -> String {
    let cleaned = go_clean(pattern);
    let prefix: Vec<&str> = cleaned
        .split('/')
        .take_while(|p| !has_glob_chars(p))
        .collect();
    if prefix.is_empty() {
        ".".to_string()
    } else {
        go_clean(&prefix.join("/"))
    }
}

/// Go's `path.Clean` for relative paths: `.` for empty, `..` kept where it cannot be
/// resolved, no trailing `/`.
pub fn go_clean(p: &str) -> String {
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if rooted => {}
                _ => parts.push(".."),
            },
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

/// Go's `path.Join` of two relative paths.
pub fn go_join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => String::new(),
        (true, false) => go_clean(b),
        (false, true) => go_clean(a),
        (false, false) => go_clean(&format!("{a}/{b}")),
    }
}

/// Whether `path` (from the source root) is excluded (`shouldExcludePath`): matched as is,
/// relative to `base` (the pattern's literal prefix), and, for patterns without `/`, by its
/// file name.
pub fn excluded(path: &str, base: &str, patterns: &[String]) -> bool {
    if matches_any(path, patterns) {
        return true;
    }
    let base = go_clean(base);
    let path = go_clean(path);
    let relative = if base == "." {
        Some(path.clone())
    } else {
        path.strip_prefix(&format!("{base}/")).map(str::to_string)
    };
    match relative {
        Some(r) if r != "." && r != path => matches_any(&r, patterns),
        _ => false,
    }
}

fn matches_any(path: &str, patterns: &[String]) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    patterns.iter().any(|pattern| {
        doublestar_match(pattern, path)
            || (!pattern.contains('/') && doublestar_match(pattern, name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_path_match_semantics() {
        for (p, n, want) in [
            ("*.yaml", "a.yaml", Ok(true)),
            ("*.yaml", "a.yml", Ok(false)),
            ("a?c", "abc", Ok(true)),
            ("[a-c]x", "bx", Ok(true)),
            ("[^a-c]x", "bx", Ok(false)),
            ("**", "anything", Ok(true)),
            ("\\*", "*", Ok(true)),
            ("*", "a/b", Ok(false)),
            ("[", "", Err(BAD_PATTERN)),
            ("[]a]", "a", Err(BAD_PATTERN)),
            ("[-a]", "a", Err(BAD_PATTERN)),
            ("x[", "abc", Err(BAD_PATTERN)),
            ("a\\", "a", Err(BAD_PATTERN)),
            ("a*b*c", "axxbyyc", Ok(true)),
            ("a*b", "axxbyyc", Ok(false)),
        ] {
            assert_eq!(path_match(p, n), want, "{p} {n}");
        }
    }

    #[test]
    fn doublestar_semantics() {
        assert!(doublestar_match("**/*.md", "a/b/c.md"));
        assert!(doublestar_match("**/*.md", "c.md"));
        assert!(doublestar_match("docs/**", "docs/a/b"));
        assert!(doublestar_match("docs/**", "docs"));
        assert!(doublestar_match("*.{yaml,yml}", "a.yml"));
        assert!(doublestar_match("[!a]*", "b.txt"));
        assert!(!doublestar_match("docs/*", "docs/a/b"));
        assert!(doublestar_valid("**/testdata/**"));
        assert!(!doublestar_valid("[*.md"));
        assert!(!doublestar_valid("{a,b"));
        assert!(!doublestar_valid("a\\"));
    }

    #[test]
    fn go_path_helpers() {
        assert_eq!(go_clean(""), ".");
        assert_eq!(go_clean("a/../.."), "..");
        assert_eq!(go_clean("a//b/"), "a/b");
        assert_eq!(go_join("dest", "."), "dest");
        assert_eq!(go_join("", "x"), "x");
        assert_eq!(selection_root("infrastructure/**"), "infrastructure");
        assert_eq!(selection_root("*.yaml"), ".");
    }
}
