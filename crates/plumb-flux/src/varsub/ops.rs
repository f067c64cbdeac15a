//! The operators' string functions, on bytes as Flux's Go code computes them.
//!
//! Go strings are byte strings: `${#x}` counts bytes, `${x:1:2}` slices bytes, and trimming
//! tries every byte-length prefix. Working on bytes here keeps those results identical; the
//! caller decides what to do if the final text is not UTF-8.

use super::glob;

/// Applies the operator named `operator` to `value` with evaluated `args`, as Flux's function
/// table does: an operator it does not know (`,^`) and every default operator return the value,
/// or the concatenated arguments when the value is empty.
pub(crate) fn apply(operator: &str, value: &[u8], args: &[Vec<u8>]) -> Vec<u8> {
    match operator {
        "," => map_first(value, simple_lower),
        ",," => map_all(value, simple_lower),
        "^" => map_first(value, simple_upper),
        "^^" => map_all(value, simple_upper),
        "#" => match args.first() {
            None => value.len().to_string().into_bytes(),
            Some(pattern) => trim_prefix(value, pattern, Greed::Shortest),
        },
        "##" | "%" | "%%" => match (operator, args.first()) {
            (_, None) => value.to_vec(),
            ("##", Some(pattern)) => trim_prefix(value, pattern, Greed::Longest),
            ("%", Some(pattern)) => trim_suffix(value, pattern, Greed::Shortest),
            (_, Some(pattern)) => trim_suffix(value, pattern, Greed::Longest),
        },
        ":" => substring(value, args),
        "/#" => match args {
            [pattern, replacement] if value.starts_with(pattern) => {
                [replacement.as_slice(), &value[pattern.len()..]].concat()
            }
            _ => value.to_vec(),
        },
        "/%" => match args {
            [pattern, replacement] if value.ends_with(pattern) => [
                &value[..value.len() - pattern.len()],
                replacement.as_slice(),
            ]
            .concat(),
            _ => value.to_vec(),
        },
        "/" => replace(value, args, Some(1)),
        "//" => replace(value, args, None),
        _ if value.is_empty() && !args.is_empty() => args.concat(),
        _ => value.to_vec(),
    }
}

/// Decodes the character at the start of `bytes` as Go does: an invalid or truncated sequence
/// is U+FFFD one byte wide.
pub(crate) fn decode(bytes: &[u8]) -> (char, usize) {
    let len = match bytes.first() {
        None => return (char::REPLACEMENT_CHARACTER, 0),
        Some(b) if *b < 0x80 => 1,
        Some(b) if *b >= 0xF0 => 4,
        Some(b) if *b >= 0xE0 => 3,
        Some(_) => 2,
    };
    match bytes.get(..len).map(std::str::from_utf8) {
        Some(Ok(s)) => (s.chars().next().unwrap_or(char::REPLACEMENT_CHARACTER), len),
        _ => (char::REPLACEMENT_CHARACTER, 1),
    }
}

/// The characters of `bytes`, each invalid byte as U+FFFD (Go's `[]rune(s)`).
fn chars(bytes: &[u8]) -> Vec<char> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = bytes;
    while !rest.is_empty() {
        let (c, width) = decode(rest);
        out.push(c);
        rest = &rest[width..];
    }
    out
}

fn encode(chars: impl IntoIterator<Item = char>) -> Vec<u8> {
    chars.into_iter().collect::<String>().into_bytes()
}

fn map_all(value: &[u8], map: fn(char) -> char) -> Vec<u8> {
    encode(chars(value).into_iter().map(map))
}

fn map_first(value: &[u8], map: fn(char) -> char) -> Vec<u8> {
    if value.is_empty() {
        return Vec::new();
    }
    let (first, width) = decode(value);
    let mut out = encode([map(first)]);
    out.extend_from_slice(&value[width..]);
    out
}

/// Go's `unicode.ToUpper`: the simple (one character) mapping. Rust's mapping is the full one;
/// where that gives several characters the simple mapping is either none or, for Greek letters
/// with ypogegrammeni, the title-case letter listed here.
fn simple_upper(c: char) -> char {
    let titlecase = match u32::from(c) {
        code @ (0x1F80..=0x1F87 | 0x1F90..=0x1F97 | 0x1FA0..=0x1FA7) => Some(code + 8),
        0x1FB3 => Some(0x1FBC),
        0x1FC3 => Some(0x1FCC),
        0x1FF3 => Some(0x1FFC),
        _ => None,
    };
    if let Some(t) = titlecase.and_then(char::from_u32) {
        return t;
    }
    single(c.to_uppercase()).unwrap_or(c)
}

/// Go's `unicode.ToLower`: the simple mapping; only `İ` has a longer full mapping.
fn simple_lower(c: char) -> char {
    if c == '\u{130}' {
        return 'i';
    }
    single(c.to_lowercase()).unwrap_or(c)
}

fn single(mut it: impl Iterator<Item = char>) -> Option<char> {
    let first = it.next()?;
    it.next().is_none().then_some(first)
}

/// `${x:offset}` and `${x:offset:length}` in bytes. An argument that is not a decimal integer
/// leaves the value whole; a negative offset counts from the end; a negative length stops that
/// many bytes before the end.
fn substring(value: &[u8], args: &[Vec<u8>]) -> Vec<u8> {
    let len = value.len() as i64;
    let Some(offset) = args.first().and_then(|a| go_atoi(a)) else {
        return value.to_vec();
    };
    let pos = if offset < 0 {
        (len + offset).max(0)
    } else {
        offset
    };
    let tail = |from: i64| -> Vec<u8> {
        if from < len {
            value[from as usize..].to_vec()
        } else {
            Vec::new()
        }
    };
    let Some(length_arg) = args.get(1) else {
        return tail(pos);
    };
    let Some(length) = go_atoi(length_arg) else {
        return value.to_vec();
    };
    if length < 0 {
        let end = len + length;
        return if end < pos {
            Vec::new()
        } else {
            value[pos as usize..end as usize].to_vec()
        };
    }
    let end = pos.saturating_add(length);
    if end >= len {
        tail(pos)
    } else {
        value[pos as usize..end as usize].to_vec()
    }
}

/// Go's `strconv.Atoi` on a 64-bit platform: optional sign, decimal digits, no spaces.
fn go_atoi(bytes: &[u8]) -> Option<i64> {
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

#[derive(Clone, Copy)]
enum Greed {
    Shortest,
    Longest,
}

/// `${x#pattern}` / `${x##pattern}`: removes the shortest or longest prefix the glob matches.
/// The empty prefix is never tried, and a malformed pattern leaves the value unchanged (when
/// the matcher reaches the malformed part).
fn trim_prefix(value: &[u8], pattern: &[u8], greed: Greed) -> Vec<u8> {
    let mut cut = None;
    for end in (1..=value.len()).rev() {
        match glob::matches(pattern, &value[..end]) {
            Err(glob::BadPattern) => return value.to_vec(),
            Ok(true) => {
                cut = Some(end);
                if let Greed::Longest = greed {
                    break;
                }
            }
            Ok(false) => {}
        }
    }
    match cut {
        Some(end) => value[end..].to_vec(),
        None => value.to_vec(),
    }
}

/// `${x%pattern}` / `${x%%pattern}`. Flux reverses the value and the pattern text character by
/// character and trims a prefix; so a pattern is matched backwards (`[a-z]` becomes `]z-a[`),
/// which is kept because it decides the result Flux ships.
fn trim_suffix(value: &[u8], pattern: &[u8], greed: Greed) -> Vec<u8> {
    let reversed = reverse(value);
    let trimmed = trim_prefix(&reversed, &reverse(pattern), greed);
    reverse(&trimmed)
}

fn reverse(bytes: &[u8]) -> Vec<u8> {
    encode(chars(bytes).into_iter().rev())
}

/// `${x/pattern/replacement}` (once) and `${x//pattern/replacement}` (all): literal, not glob,
/// replacement as Go's `strings.Replace`; an empty pattern matches before every character and
/// at the end. Without a replacement argument the matches are removed.
fn replace(value: &[u8], args: &[Vec<u8>], limit: Option<usize>) -> Vec<u8> {
    let Some(pattern) = args.first() else {
        return value.to_vec();
    };
    let replacement = args.get(1).map(Vec::as_slice).unwrap_or_default();
    let mut remaining = limit.unwrap_or(usize::MAX);
    let mut out = Vec::with_capacity(value.len());
    let mut rest = value;
    if pattern.is_empty() {
        while remaining > 0 {
            out.extend_from_slice(replacement);
            remaining -= 1;
            if rest.is_empty() {
                break;
            }
            let (_, width) = decode(rest);
            out.extend_from_slice(&rest[..width]);
            rest = &rest[width..];
        }
    } else {
        while remaining > 0 {
            let Some(at) = find(rest, pattern) else {
                break;
            };
            out.extend_from_slice(&rest[..at]);
            out.extend_from_slice(replacement);
            rest = &rest[at + pattern.len()..];
            remaining -= 1;
        }
    }
    out.extend_from_slice(rest);
    out
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(op: &str, value: &str, args: &[&str]) -> String {
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        String::from_utf8(apply(op, value.as_bytes(), &args)).expect("utf-8")
    }

    #[test]
    fn length_counts_bytes() {
        assert_eq!(run("#", "héllo", &[]), "6");
        assert_eq!(run("#", "", &[]), "0");
    }

    #[test]
    fn casing_uses_simple_mappings() {
        assert_eq!(run("^^", "straße", &[]), "STRAßE");
        assert_eq!(run(",,", "İSTANBUL", &[]), "istanbul");
        assert_eq!(run("^", "ᾳb", &[]), "ᾼb");
        assert_eq!(run(",", "ÉCOLE", &[]), "éCOLE");
        assert_eq!(run(",^", "MiXed", &[]), "MiXed");
        assert_eq!(run("^", "", &[]), "");
    }

    #[test]
    fn substring_edges() {
        let s = "123456789123456789";
        assert_eq!(run(":", s, &["-3", "2"]), "78");
        assert_eq!(run(":", s, &["1", "-1"]), "2345678912345678");
        assert_eq!(run(":", s, &["10", "-10"]), "");
        assert_eq!(run(":", s, &["x"]), s);
        assert_eq!(run(":", s, &["1", "x"]), s);
        assert_eq!(run(":", s, &[" 1"]), s);
        assert_eq!(run(":", s, &["+16"]), "89");
        assert_eq!(run(":", s, &["1", "9223372036854775807"]), &s[1..]);
    }

    #[test]
    fn substring_can_split_a_character() {
        assert_eq!(apply(":", "é".as_bytes(), &[b"1".to_vec()]), vec![0xA9]);
    }

    #[test]
    fn trimming() {
        assert_eq!(run("#", "a.b.c", &["*."]), "b.c");
        assert_eq!(run("##", "a.b.c", &["*."]), "c");
        assert_eq!(run("%", "a.b.c", &[".*"]), "a.b");
        assert_eq!(run("%%", "a.b.c", &[".*"]), "a");
        assert_eq!(run("#", "abc", &["x"]), "abc");
        assert_eq!(run("#", "abc", &["*"]), "bc");
        assert_eq!(run("##", "abc", &["*"]), "");
        assert_eq!(run("#", "a[b", &["a["]), "a[b");
        assert_eq!(run("%", "v1.2", &["[0-9]"]), "v1.2");
        assert_eq!(run("%", "v1.2", &["]9-0["]), "v1.");
    }

    #[test]
    fn replacing() {
        assert_eq!(run("/", "aXbXc", &["X", "-"]), "a-bXc");
        assert_eq!(run("//", "aXbXc", &["X", "-"]), "a-b-c");
        assert_eq!(run("//", "aXbXc", &["X"]), "abc");
        assert_eq!(run("//", "a*c", &["*", "-"]), "a-c");
        assert_eq!(run("//", "héj", &["", "-"]), "-h-é-j-");
        assert_eq!(run("/", "abc", &["", "-"]), "-abc");
        assert_eq!(run("/#", "abcabc", &["abc", "X"]), "Xabc");
        assert_eq!(run("/#", "abcabc", &["abc"]), "abcabc");
        assert_eq!(run("/%", "abcabc", &["abc", "X"]), "abcX");
        assert_eq!(run("/%", "value", &["", "-suffix"]), "value-suffix");
        assert_eq!(run("/#", "value", &["", "prefix-"]), "prefix-value");
    }

    #[test]
    fn defaults() {
        assert_eq!(run(":-", "", &["a", "b"]), "ab");
        assert_eq!(run(":+", "set", &["other"]), "set");
        assert_eq!(run(":?", "", &["fallback"]), "fallback");
        assert_eq!(run("", "", &[]), "");
    }

    #[test]
    fn decoding_follows_go() {
        assert_eq!(decode(b"\xC3"), (char::REPLACEMENT_CHARACTER, 1));
        assert_eq!(decode("é!".as_bytes()), ('é', 2));
        assert_eq!(chars(b"a\xE2\x82"), vec!['a', '\u{FFFD}', '\u{FFFD}']);
    }
}
