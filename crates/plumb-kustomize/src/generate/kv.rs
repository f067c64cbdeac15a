//! The key-value pairs a generator's sources give: `.env` files, then literals, then files, in
//! that order (the order decides which duplicate key kustomize reports), each parsed as
//! kustomize parses it.

use crate::context::Context;
use crate::loader;
use crate::remote::RemoteKind;
use std::path::Path;

/// One key and its value, which may be any bytes (a file's content need not be UTF-8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    pub key: String,
    pub value: Vec<u8>,
}

/// Where pairs come from, and where relative paths start.
pub struct Sources<'a> {
    pub literals: &'a [String],
    pub files: &'a [String],
    pub envs: &'a [String],
    pub root: &'a Path,
}

/// Why a generator's pairs could not be had, in kustomize's wording ("loading KV pairs: ...").
#[derive(Debug)]
pub enum LoadError {
    /// The sources are wrong: a missing file, a bad literal or `.env` line.
    Invalid(String),
    /// An `http(s)` file source that could not be fetched: `url`, why (the fetch's own message),
    /// and whether the server said it is wrong (a 404) rather than the fetch being impossible
    /// here.
    Fetch {
        url: String,
        message: String,
        broken: bool,
    },
}

impl From<String> for LoadError {
    fn from(message: String) -> LoadError {
        LoadError::Invalid(message)
    }
}

/// All pairs of `sources`, with kustomize's error wording ("loading KV pairs: ...").
pub fn load(sources: &Sources<'_>, ctx: &Context) -> Result<Vec<Pair>, LoadError> {
    // A failed fetch keeps its own message: the URL it names is the source.
    let wrap = |what: &str, list: &[String], e: LoadError| match e {
        LoadError::Invalid(message) => LoadError::Invalid(format!(
            "loading KV pairs: {what}{}: {message}",
            go_list(list)
        )),
        fetch => fetch,
    };
    let mut pairs = Vec::new();
    for env in sources.envs {
        let content = read(sources.root, env, ctx)
            .map_err(|e| wrap("env source files: ", sources.envs, e))?;
        pairs.extend(
            env_file_pairs(&content)
                .map_err(|e| wrap("env source files: ", sources.envs, e.into()))?,
        );
    }
    for literal in sources.literals {
        pairs.push(
            literal_pair(literal)
                .map_err(|e| wrap("literal sources ", sources.literals, e.into()))?,
        );
    }
    for source in sources.files {
        let result = file_source(source)
            .map_err(LoadError::from)
            .and_then(|(key, path)| {
                Ok(Pair {
                    key,
                    value: read(sources.root, &path, ctx)?,
                })
            });
        pairs.push(result.map_err(|e| wrap("file sources: ", sources.files, e))?);
    }
    Ok(pairs)
}

/// A Go `[]string` as `%v` prints it.
fn go_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

/// `key=value`, the value losing one pair of matching surrounding quotes.
pub fn literal_pair(source: &str) -> Result<Pair, String> {
    let invalid = || format!("invalid literal source {source}, expected key=value");
    let (key, value) = source.split_once('=').ok_or_else(invalid)?;
    if key.is_empty() {
        return Err(invalid());
    }
    Ok(Pair {
        key: key.to_string(),
        value: strip_matching_quotes(value).as_bytes().to_vec(),
    })
}

fn strip_matching_quotes(value: &str) -> &str {
    let bytes = value.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last))
            if bytes.len() >= 2 && first == last && (first == b'"' || first == b'\'') =>
        {
            &value[1..value.len() - 1]
        }
        _ => value,
    }
}

/// `[key=]path`: the key defaults to the path's last element.
pub fn file_source(source: &str) -> Result<(String, String), String> {
    match source.split_once('=') {
        None => Ok((base_name(source), source.to_string())),
        Some(("", path)) => Err(format!(
            "missing key name for file path {path:?} in source {source:?}"
        )),
        Some((_, path)) if path.contains('=') => Err(format!(
            "source {source:?} key name or file path contains '='"
        )),
        Some((key, "")) => Err(format!(
            "missing file path for key name {key:?} in source {source:?}"
        )),
        Some((key, path)) => Ok((key.to_string(), path.to_string())),
    }
}

/// Go's `path.Base`: the last non-empty element of a slash-separated path.
fn base_name(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return if path.is_empty() { "." } else { "/" }.to_string();
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}

/// Reads a file a generator names, relative to the kustomization's directory, under the load
/// restrictor; an `http(s)` URL is fetched, as kustomize's loader fetches it.
fn read(root: &Path, relative: &str, ctx: &Context) -> Result<Vec<u8>, LoadError> {
    if is_remote_file(relative) {
        return match &ctx.options.remote {
            Some(remote) if matches!(remote.classify(relative), RemoteKind::Http { .. }) => remote
                .file_bytes(relative)
                .map_err(|failure| LoadError::Fetch {
                    url: relative.to_string(),
                    message: failure.message,
                    broken: failure.broken,
                }),
            _ => Err(format!(
                "remote file {relative:?}: plumb builds offline; vendor it into the repository"
            )
            .into()),
        };
    }
    let path = loader::clean(&root.join(relative));
    // Only errors show it: resolving it costs a `readlink` a component.
    let shown = || loader::absolute(&path).display().to_string();
    let fs = &ctx.options.fs;
    if !fs.exists(&path) {
        let shown = shown();
        return Err(format!(
            "evalsymlink failure on '{shown}' : lstat {shown}: no such file or directory"
        )
        .into());
    }
    loader::check_restrictor(ctx.options.load_restrictor, root, &path)
        .map_err(|e| e.to_string())?;
    if fs.is_dir(&path) {
        return Err(format!("'{}' must resolve to a file", shown()).into());
    }
    Ok(fs.read(&path).map_err(|e| e.to_string())?)
}

/// Whether kustomize's loader fetches `path` over HTTP: its scheme is `http` or `https`.
fn is_remote_file(path: &str) -> bool {
    path.split_once("://").is_some_and(|(scheme, _)| {
        scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")
    })
}

/// The pairs of a `.env` file: one `KEY=value` a line, the value taken verbatim (no quote
/// removal, no `export`); blank lines and `#` comments skipped; a line without `=` gives an
/// empty value; a byte-order mark is dropped from the first line only.
pub fn env_file_pairs(content: &[u8]) -> Result<Vec<Pair>, String> {
    let mut pairs = Vec::new();
    for (number, raw) in scan_lines(content).enumerate() {
        let Ok(mut line) = std::str::from_utf8(raw) else {
            let bytes: Vec<String> = raw.iter().map(u8::to_string).collect();
            return Err(format!(
                "line [{}] has invalid utf8 bytes : {}",
                bytes.join(" "),
                String::from_utf8_lossy(raw)
            ));
        };
        if number == 0 {
            line = line.strip_prefix('\u{feff}').unwrap_or(line);
        }
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line.split_once('=').unwrap_or((line, ""));
        if key.is_empty() {
            continue;
        }
        pairs.push(Pair {
            key: key.to_string(),
            value: value.as_bytes().to_vec(),
        });
    }
    Ok(pairs)
}

/// Lines as Go's `bufio.ScanLines` yields them: split at `\n`, one trailing `\r` dropped, no
/// empty last line after a final newline.
fn scan_lines(content: &[u8]) -> impl Iterator<Item = &[u8]> {
    let body = content.strip_suffix(b"\n").unwrap_or(content);
    let lines: Vec<&[u8]> = if content.is_empty() {
        Vec::new()
    } else {
        body.split(|&b| b == b'\n').collect()
    };
    lines
        .into_iter()
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(pairs: &[Pair]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|p| {
                (
                    p.key.clone(),
                    String::from_utf8_lossy(&p.value).into_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn literals_lose_one_pair_of_matching_quotes() {
        let value = |s: &str| String::from_utf8(literal_pair(s).unwrap().value).unwrap();
        assert_eq!(value("k=\"quoted\""), "quoted");
        assert_eq!(value("k='single'"), "single");
        assert_eq!(value("k=\"mixed'"), "\"mixed'");
        assert_eq!(value("k=\""), "\"");
        assert_eq!(value("k=''''"), "''");
        assert_eq!(value("k=a=b"), "a=b");
        assert_eq!(value("k="), "");
        assert!(literal_pair("=v").is_err());
        assert!(literal_pair("noeq").is_err());
    }

    #[test]
    fn file_sources_default_to_the_base_name() {
        assert_eq!(
            file_source("dir/sub/a.txt").unwrap(),
            ("a.txt".into(), "dir/sub/a.txt".into())
        );
        assert_eq!(
            file_source("key=dir/a.txt").unwrap(),
            ("key".into(), "dir/a.txt".into())
        );
        assert_eq!(file_source("d/").unwrap().0, "d");
        assert_eq!(
            file_source("=f.txt").unwrap_err(),
            r#"missing key name for file path "f.txt" in source "=f.txt""#
        );
        assert_eq!(
            file_source("k=").unwrap_err(),
            r#"missing file path for key name "k" in source "k=""#
        );
        assert_eq!(
            file_source("k=a=b").unwrap_err(),
            r#"source "k=a=b" key name or file path contains '='"#
        );
    }

    #[test]
    fn env_files_parse_as_kustomize_does() {
        let content =
            b"\xef\xbb\xbfA=1\r\n# comment\n\n  B=2 \nexport C=\"3\"\nD\n\xef\xbb\xbfE=5\n";
        assert_eq!(
            text(&env_file_pairs(content).unwrap()),
            vec![
                ("A".into(), "1".into()),
                ("B".into(), "2 ".into()),
                ("export C".into(), "\"3\"".into()),
                ("D".into(), "".into()),
                ("\u{feff}E".into(), "5".into()),
            ]
        );
        assert_eq!(
            env_file_pairs(b"A=1\n\xff=2\n").unwrap_err(),
            "line [255 61 50] has invalid utf8 bytes : \u{fffd}=2"
        );
    }
}
