//! What a kustomization's remote `resources:` entry names, by kustomize's own rules: a git
//! repository spec (`github.com/org/repo//dir?ref=v1`, `git@host:org/repo.git`, `ssh://`,
//! `https://`, `file://`, Azure's `_git/`) or an `http(s)://` file.
//!
//! The rules are those of kustomize's `api/internal/git/repospec.go` (which says what is a
//! repository and where it splits into the URL to clone and the directory inside it) and
//! `api/internal/loader` (which fetches an `http(s)` URL as a file first).

use std::fmt;
use std::time::Duration;

/// kustomize's default limit on each git command of a remote base.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(27);

/// A git repository named by a kustomization entry, parsed as kustomize parses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoSpec {
    /// The entry as written.
    pub raw: String,
    /// Scheme, user and host, normalised: `https://github.com/`, `git@github.com:`,
    /// `ssh://git.example.com:7999/`, `file://`.
    pub host: String,
    /// The repository's path on the host: `org/repo`, `org/repo.git`, `project/_git/repo`.
    pub repo_path: String,
    /// The kustomization's directory inside the repository (`""` is its root).
    pub kust_root_path: String,
    /// `?ref=` (else `?version=`): a branch, a tag or a commit; `""` is the remote's HEAD.
    pub reference: String,
    /// `?submodules=`: whether kustomize would clone submodules (the default).
    pub submodules: bool,
    /// `?timeout=`: the limit on each git command.
    pub timeout: Duration,
}

/// Why an entry is not a git repository spec; the words are kustomize's. Most are fixed
/// words, not copied: every local entry of every kustomization is asked first whether it is a
/// repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotARepo(pub std::borrow::Cow<'static, str>);

impl fmt::Display for NotARepo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

const FILE_SCHEME: &str = "file://";
const HTTP_SCHEME: &str = "http://";
const HTTPS_SCHEME: &str = "https://";
const SSH_SCHEME: &str = "ssh://";

impl RepoSpec {
    /// Parses `entry` as kustomize's `NewRepoSpecFromURL` does: an error means the entry is
    /// not a git repository (a local path, or something kustomize refuses).
    pub fn parse(entry: &str) -> Result<RepoSpec, NotARepo> {
        if entry.starts_with('/') {
            return Err(NotARepo(format!("uri looks like abs path: {entry}").into()));
        }
        // `?` can only start the query (RFC 3986), so it is cut first.
        let (rest, query) = entry.split_once('?').unwrap_or((entry, ""));
        let (reference, timeout, submodules) = parse_query(query);
        let (host, rest) = extract_host(rest)?;
        let segments = if host.starts_with(FILE_SCHEME) {
            None
        } else {
            Some(2)
        };
        let (repo_path, kust_root_path) = split_path(rest, segments)?;
        Ok(RepoSpec {
            raw: entry.to_owned(),
            host,
            repo_path,
            kust_root_path,
            reference,
            submodules,
            timeout,
        })
    }

    /// The URL git clones: host and repository path.
    pub fn clone_url(&self) -> String {
        format!("{}{}", self.host, self.repo_path)
    }
}

/// Whether kustomize's loader reads `entry` as a file over HTTP before anything else: a URL
/// that Go's `url.Parse` accepts with the scheme `http` or `https`.
pub fn is_http_url(entry: &str) -> bool {
    let Some((scheme, _)) = entry.split_once(':') else {
        return false;
    };
    (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https"))
        && valid_escapes(entry)
}

/// Go's `url.Parse` refuses a `%` not followed by two hex digits.
fn valid_escapes(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = |j: usize| bytes.get(j).is_some_and(u8::is_ascii_hexdigit);
            if !hex(i + 1) || !hex(i + 2) {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

/// The ref, timeout and submodules of the query; any malformed query gives all the defaults,
/// and so does an empty or malformed value of one of them.
fn parse_query(query: &str) -> (String, Duration, bool) {
    let defaults = (String::new(), DEFAULT_TIMEOUT, true);
    let Some(values) = QueryValues::parse(query) else {
        return defaults;
    };
    let mut reference = values.get("version").to_owned();
    if !values.get("ref").is_empty() {
        reference = values.get("ref").to_owned();
    }
    let timeout = values.get("timeout");
    let timeout = match timeout.parse::<i64>() {
        Ok(seconds) if seconds > 0 => Duration::from_secs(seconds.unsigned_abs()),
        _ => match go_duration(timeout) {
            Some(d) if !d.is_zero() => d,
            _ => DEFAULT_TIMEOUT,
        },
    };
    let submodules = go_bool(values.get("submodules")).unwrap_or(true);
    (reference, timeout, submodules)
}

/// A query's values, the first of each key, as Go's `url.ParseQuery` decodes them.
struct QueryValues(Vec<(String, String)>);

impl QueryValues {
    fn parse(query: &str) -> Option<QueryValues> {
        let mut values = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            // Go refuses semicolons as separators, and the whole query with them.
            if pair.contains(';') {
                return None;
            }
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            values.push((unescape(key)?, unescape(value)?));
        }
        Some(QueryValues(values))
    }

    fn get(&self, key: &str) -> &str {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// Go's `url.QueryUnescape`: `+` is a space, `%XX` a byte.
fn unescape(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = text.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// Go's `strconv.ParseBool`.
fn go_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `time.ParseDuration` for non-negative durations (`61s`, `1m1s`, `1.5h`, `0`); a
/// negative one is `None`, which kustomize treats like a malformed one.
fn go_duration(text: &str) -> Option<Duration> {
    let text = text.strip_prefix('+').unwrap_or(text);
    if text == "0" {
        return Some(Duration::ZERO);
    }
    if text.is_empty() || text.starts_with('-') {
        return None;
    }
    let mut rest = text;
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_len);
        if number.is_empty() || number == "." {
            return None;
        }
        let value: f64 = number.parse().ok()?;
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let nanos = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        total += value * nanos;
        rest = after;
    }
    Some(Duration::from_nanos(total as u64))
}

/// Splits scheme, user and host off `n`, normalising GitHub's, as kustomize's `extractHost`.
fn extract_host(n: &str) -> Result<(String, &str), NotARepo> {
    // go-getter's `git::` prefix is accepted and ignored, as kustomize does.
    let n = trim_prefix_ignore_case(n, "git::").unwrap_or(n);
    let (mut scheme, n) = [SSH_SCHEME, HTTPS_SCHEME, HTTP_SCHEME, FILE_SCHEME]
        .iter()
        .find_map(|s| trim_prefix_ignore_case(n, s).map(|rest| (*s, rest)))
        .unwrap_or(("", n));
    let after_scheme = n;
    let (mut username, n) = split_username(after_scheme);
    let github = n.get(..11).is_some_and(|start| {
        start.eq_ignore_ascii_case("github.com/") || start.eq_ignore_ascii_case("github.com:")
    });
    // A colon delimits the path (scp style) only without a scheme, and, except on GitHub,
    // only with a user.
    let scp = scheme.is_empty() && (!username.is_empty() || github);
    if scheme.is_empty() && !scp {
        return Err(NotARepo("failed to parse scheme".into()));
    }
    if scheme == FILE_SCHEME {
        // A local path follows: what looked like a user belongs to it.
        return Ok((scheme.to_owned(), after_scheme));
    }
    let slash = n.find('/');
    let separator = if scp {
        match (n.find(':'), slash) {
            (Some(colon), None) if colon > 0 => Some(colon),
            (Some(colon), Some(slash)) if colon > 0 && colon < slash => Some(colon),
            (_, slash) => slash,
        }
    } else {
        slash
    };
    let (mut host, rest) = match separator {
        Some(i) => (&n[..=i], &n[i + 1..]),
        None => (n, ""),
    };
    if github {
        if scheme.starts_with(SSH_SCHEME) || !username.is_empty() {
            scheme = "";
            host = "github.com:";
        } else {
            scheme = HTTPS_SCHEME;
            username = "";
            host = "github.com/";
        }
    }
    if host.is_empty() {
        return Err(NotARepo("failed to parse host segment".into()));
    }
    Ok((format!("{scheme}{username}{host}"), rest))
}

/// `user@` at the start (`[a-zA-Z][a-zA-Z0-9-]*@`), and the rest.
fn split_username(n: &str) -> (&str, &str) {
    let bytes = n.as_bytes();
    if !bytes.first().is_some_and(u8::is_ascii_alphabetic) {
        return ("", n);
    }
    let end = bytes
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || *b == b'-'))
        .unwrap_or(bytes.len());
    if bytes.get(end) == Some(&b'@') {
        (&n[..=end], &n[end + 1..])
    } else {
        ("", n)
    }
}

fn trim_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// The repository path and the kustomization directory: at `_git/<repo>`, `//` or `.git`
/// when the path has one of them, else after `segments` path segments (all of them when
/// `None`).
fn split_path(n: &str, segments: Option<usize>) -> Result<(String, String), NotARepo> {
    let split = explicit_split(n).or_else(|| match segments {
        None => Some((n.to_owned(), String::new())),
        Some(count) => {
            let parts: Vec<&str> = n.split('/').collect();
            (parts.len() >= count).then(|| (parts[..count].join("/"), parts[count..].join("/")))
        }
    });
    let Some((repo_path, kust_root_path)) = split.filter(|(repo, _)| !repo.is_empty()) else {
        return Err(NotARepo("failed to parse repo path segment".into()));
    };
    if exits_repo(&kust_root_path) {
        return Err(NotARepo(format!("url path exits repo: {n}").into()));
    }
    let kust_root_path = kust_root_path
        .strip_prefix('/')
        .unwrap_or(&kust_root_path)
        .to_owned();
    Ok((repo_path, kust_root_path))
}

fn explicit_split(n: &str) -> Option<(String, String)> {
    // `_git/` is Azure's: the next segment is the repository.
    if let Some(i) = n.find("_git/") {
        let after = &n[i + "_git/".len()..];
        let (repo, path) = after.split_once('/').unwrap_or((after, ""));
        return Some((
            format!("{}{repo}", &n[..i + "_git/".len()]),
            path.to_owned(),
        ));
    }
    // `//` separates the repository from the directory; it is not part of either.
    if let Some(i) = n.find("//") {
        return Some((n[..i].to_owned(), n[i + 2..].to_owned()));
    }
    // `.git` ends the repository's name.
    if let Some(i) = n.find(".git") {
        let end = i + ".git".len();
        return Some((n[..end].to_owned(), n[end..].to_owned()));
    }
    None
}

/// Whether the directory, cleaned as Go's `filepath.Clean` would, starts with `..`.
fn exits_repo(path: &str) -> bool {
    let mut depth: Vec<&str> = Vec::new();
    let mut leading_parent = false;
    for part in path.trim_start_matches('/').split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if depth.pop().is_none() {
                    leading_parent = true;
                    break;
                }
            }
            other => depth.push(other),
        }
    }
    leading_parent
}
