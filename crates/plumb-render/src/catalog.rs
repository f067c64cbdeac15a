//! The catalog: one YAML file per app (or several documents in one file), each a mapping with
//! `name`, `namespace`, `path` or `source`, `dependsOn`, an optional `wave` pin, `encrypted` and
//! `notes`. Only the values are read; comments in the catalog never reach the output.

use crate::error::{line_of, unknown_key, RenderError};
use plumb_yaml::Node;
use std::path::{Path, PathBuf};

/// Every key a catalog entry may have.
pub const KEYS: &[&str] = &[
    "name",
    "namespace",
    "path",
    "source",
    "dependsOn",
    "wave",
    "encrypted",
    "notes",
];

/// Where an app's manifests come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppSource {
    /// A directory of this repository, relative to its root (`apps/wave-0/podinfo`).
    Path(String),
    /// A remote resource kustomize fetches itself (`https://github.com/org/repo//deploy?ref=v1`),
    /// written into the wave's `resources:` as it is.
    Remote(String),
}

/// One catalog entry, with where each part of it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct App {
    pub name: String,
    /// The namespace the app runs in (for the wave table).
    pub namespace: Option<String>,
    pub source: AppSource,
    /// Names of other catalog entries that must be up before this one.
    pub depends_on: Vec<Dependency>,
    /// `wave: N`: no earlier than wave N.
    pub wave: Option<usize>,
    /// The app holds SOPS-encrypted files: its wave's Flux Kustomization decrypts.
    pub encrypted: bool,
    pub notes: Option<String>,
    /// The catalog file, relative to the repository root.
    pub file: PathBuf,
    /// The line of the entry's `name`.
    pub line: usize,
    /// The line of `wave:`, for a pin that cannot hold.
    pub wave_line: usize,
}

/// One `dependsOn` item and its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    pub name: String,
    pub line: usize,
}

/// Reads every `*.yaml`/`*.yml` file of `<repo>/<dir>` in name order; `dir` is relative to the
/// repository root and names the files in errors.
pub fn load(repo: &Path, dir: &Path) -> Result<Vec<App>, RenderError> {
    let full = repo.join(dir);
    let entries = std::fs::read_dir(&full).map_err(|e| RenderError::io(dir, &e))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| RenderError::io(dir, &e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
        if is_file && (name.ends_with(".yaml") || name.ends_with(".yml")) {
            names.push(name);
        }
    }
    names.sort();
    let mut apps = Vec::new();
    for name in names {
        let rel = dir.join(&name);
        let text =
            std::fs::read_to_string(full.join(&name)).map_err(|e| RenderError::io(&rel, &e))?;
        apps.extend(parse(&rel, &text)?);
    }
    if apps.is_empty() {
        return Err(RenderError::at(
            dir,
            0,
            "the catalog has no apps (no *.yaml file with an entry)",
        ));
    }
    Ok(apps)
}

/// The apps of one catalog file: each non-empty document is one app.
pub fn parse(path: &Path, text: &str) -> Result<Vec<App>, RenderError> {
    let docs = plumb_yaml::parse_documents(path, text)
        .map_err(|e| RenderError::at(path, e.location.line, e.message.clone()))?;
    docs.iter()
        .filter(|d| !d.is_null())
        .map(|d| app(path, d))
        .collect()
}

fn app(path: &Path, node: &Node) -> Result<App, RenderError> {
    let fail = |n: &Node, m: String| RenderError::at_node(path, n, m);
    let entries = node.as_mapping().ok_or_else(|| {
        fail(
            node,
            "a catalog entry is a mapping with `name` and `path` or `source`".into(),
        )
    })?;
    for (key, _) in entries {
        let k = key.scalar_value().unwrap_or("");
        if !KEYS.contains(&k) {
            return Err(fail(key, unknown_key(k, "a catalog entry", KEYS)));
        }
    }
    let text = |key: &str| -> Result<Option<String>, RenderError> {
        match node.get(key) {
            None => Ok(None),
            Some(v) => match v.scalar_value() {
                Some(s) if !s.trim().is_empty() && !v.is_null() => Ok(Some(s.to_string())),
                _ => Err(fail(v, format!("`{key}` must be a non-empty string"))),
            },
        }
    };
    let name = text("name")?.ok_or_else(|| fail(node, "a catalog entry needs a `name`".into()))?;
    if !is_dns_label(&name) {
        return Err(fail(
            node.get("name").unwrap_or(node),
            format!("`{name}` is not a valid app name (lower-case letters, digits and `-`)"),
        ));
    }
    let source = match (text("path")?, text("source")?) {
        (Some(p), None) => AppSource::Path(crate::config::clean(&p)),
        (None, Some(s)) => AppSource::Remote(s),
        (Some(_), Some(_)) => {
            return Err(fail(
                node.get("source").unwrap_or(node),
                format!("app `{name}` has both `path` and `source`; give one"),
            ))
        }
        (None, None) => {
            return Err(fail(
                node,
                format!("app `{name}` needs a `path` (a directory of this repository) or a `source` (a remote kustomize resource)"),
            ))
        }
    };
    let depends_on = match node.get("dependsOn") {
        None => Vec::new(),
        Some(v) if v.is_null() => Vec::new(),
        Some(v) => {
            let items = v
                .as_sequence()
                .ok_or_else(|| fail(v, "`dependsOn` must be a list of app names".into()))?;
            let mut out = Vec::new();
            for item in items {
                let dep = item
                    .scalar_value()
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| fail(item, "a `dependsOn` item is an app name".into()))?;
                out.push(Dependency {
                    name: dep.to_string(),
                    line: line_of(item),
                });
            }
            out
        }
    };
    let wave_node = node.get("wave");
    let wave = match wave_node {
        None => None,
        Some(v) => Some(
            v.scalar_value()
                .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|s| s.parse::<usize>().ok())
                .filter(|n| *n < 1000)
                .ok_or_else(|| fail(v, "`wave` must be a wave number (0, 1, ...)".into()))?,
        ),
    };
    let encrypted = match node.get("encrypted") {
        None => false,
        Some(v) => match v.scalar_value() {
            Some("true") => true,
            Some("false") => false,
            _ => return Err(fail(v, "`encrypted` must be true or false".into())),
        },
    };
    Ok(App {
        name,
        namespace: text("namespace")?,
        source,
        depends_on,
        wave,
        encrypted,
        notes: text("notes")?.map(|n| n.split_whitespace().collect::<Vec<_>>().join(" ")),
        file: path.to_path_buf(),
        line: node.get_key("name").map_or(line_of(node), line_of),
        wave_line: wave_node.map_or(0, line_of),
    })
}

fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}
