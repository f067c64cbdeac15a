//! A chart's `values.schema.json` made usable offline. Helm validates values against the
//! chart's and each subchart's schema and fetches a `$ref` to an `http(s)` URL at render time,
//! so offline such a chart fails where helm-controller, online, succeeds. A `$ref` whose URL is
//! the `$id` of a JSON file the chart ships is pointed at that file (in a copy of the chart:
//! the cache is never modified); any other URL `$ref` means the render skips schema validation,
//! with a note naming it.
//!
//! Helm compiles each schema as `file:///values.schema.json`, so a relative `$ref` (`defs.json`)
//! names `/defs.json` for helm and helm-controller alike: such refs are left as they are, and
//! fail (or not) exactly as they would in the controller.

use crate::helm::RenderError;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use url::Url;

/// The base URI Helm gives every `values.schema.json`.
const SCHEMA_BASE: &str = "file:///values.schema.json";

/// JSON files larger than this are not read as possible `$ref` targets.
const MAX_SCHEMA_FILE: u64 = 8 << 20;

/// How to render a chart so that its schema validation works offline.
#[derive(Debug)]
pub struct SchemaPlan {
    /// The chart directory to render: the original, or a copy whose schemas were rewritten.
    pub chart_dir: PathBuf,
    /// Render with `--skip-schema-validation`: a `$ref` cannot be resolved offline.
    pub skip_validation: bool,
    /// What was done and why (each `$ref` that could not be resolved, each one pointed at a
    /// file the chart ships).
    pub notes: Vec<String>,
    /// Holds the copy alive as long as the plan.
    _copy: Option<tempfile::TempDir>,
}

/// Makes `chart_dir`'s values.schema.json (and subcharts') usable offline: `$ref` URLs resolved
/// to files the chart ships; returns whether validation must be skipped (a $ref it cannot
/// resolve offline) and a note saying which $ref.
pub fn prepare_offline(chart_dir: &Path) -> Result<SchemaPlan, RenderError> {
    let mut files = Vec::new();
    collect_json_files(chart_dir, chart_dir, &mut files)?;
    let mut archives = Vec::new();
    collect_archives(chart_dir, &mut archives)?;

    // Every shipped JSON document that names itself by an http(s) `$id`.
    let mut documents: BTreeMap<PathBuf, Value> = BTreeMap::new();
    let mut by_id: BTreeMap<String, PathBuf> = BTreeMap::new();
    for rel in &files {
        let path = chart_dir.join(rel);
        let is_schema = rel.file_name().is_some_and(|n| n == "values.schema.json");
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(source) if is_schema => return Err(RenderError::Io { path, source }),
            Err(_) => continue,
        };
        let value: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            // Helm reports a broken schema itself, with its own words.
            Err(_) => continue,
        };
        if let Some(id) = root_id(&value) {
            by_id.entry(id).or_insert_with(|| rel.clone());
        }
        documents.insert(rel.clone(), value);
    }

    // The schemas helm reads: the chart's and every unpacked subchart's.
    let schemas: Vec<PathBuf> = documents
        .keys()
        .filter(|rel| is_chart_schema(chart_dir, rel))
        .cloned()
        .collect();

    let mut plan = Rewrites::default();
    let mut queue: Vec<(PathBuf, Url)> = schemas
        .iter()
        .map(|rel| (rel.clone(), Url::parse(SCHEMA_BASE).expect("constant URL")))
        .collect();
    let mut seen = BTreeSet::new();
    while let Some((rel, base)) = queue.pop() {
        if !seen.insert(rel.clone()) {
            continue;
        }
        let Some(doc) = documents.get(&rel) else {
            continue;
        };
        let base = match root_id(doc).and_then(|id| base.join(&id).ok()) {
            Some(own) => own,
            None => base,
        };
        let (local, refs) = split_refs(doc, &base);
        for (pointer, target) in refs {
            if !matches!(target.scheme(), "http" | "https") {
                continue;
            }
            let mut document = target.clone();
            document.set_fragment(None);
            // The document itself, or a resource it embeds under its own `$id`: the compiler
            // finds these without a fetch.
            if local.contains(&document) {
                continue;
            }
            let mut without_fragment = target.clone();
            without_fragment.set_fragment(None);
            match by_id
                .get(without_fragment.as_str())
                .or_else(|| by_id.get(target.as_str().trim_end_matches('#')))
            {
                Some(shipped) => {
                    plan.rewrites.entry(rel.clone()).or_default().push((
                        pointer,
                        shipped.clone(),
                        target.fragment().map(str::to_string),
                    ));
                    plan.resolved.insert((target.to_string(), shipped.clone()));
                    queue.push((shipped.clone(), without_fragment));
                }
                None => {
                    plan.unresolved
                        .insert((target.to_string(), rel.display().to_string()));
                }
            }
        }
    }
    for archive in &archives {
        for (target, file) in archive_url_refs(&chart_dir.join(archive))? {
            plan.unresolved
                .insert((target, format!("{} in {}", file, archive.display())));
        }
    }

    if !plan.unresolved.is_empty() {
        let notes = plan
            .unresolved
            .iter()
            .map(|(target, file)| {
                format!(
                    "schema validation skipped: {file} has $ref {target}, which helm would fetch at render time and the chart does not ship"
                )
            })
            .collect();
        return Ok(SchemaPlan {
            chart_dir: chart_dir.to_path_buf(),
            skip_validation: true,
            notes,
            _copy: None,
        });
    }
    if plan.rewrites.is_empty() {
        return Ok(SchemaPlan {
            chart_dir: chart_dir.to_path_buf(),
            skip_validation: false,
            notes: Vec::new(),
            _copy: None,
        });
    }

    let copy = tempfile::Builder::new()
        .prefix("plumb-chart-")
        .tempdir()
        .map_err(|source| RenderError::Io {
            path: std::env::temp_dir(),
            source,
        })?;
    let name = chart_dir
        .file_name()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("chart"));
    let copied = copy.path().join(name);
    copy_dir(chart_dir, &copied)?;
    for (rel, edits) in &plan.rewrites {
        let mut doc = documents[rel].clone();
        for (pointer, shipped, fragment) in edits {
            let target =
                Url::from_file_path(copied.join(shipped)).map_err(|()| RenderError::Schema {
                    path: copied.join(shipped),
                    message: "cannot be named by a file:// URL".to_string(),
                })?;
            let mut target = target.to_string();
            if let Some(fragment) = fragment {
                target.push('#');
                target.push_str(fragment);
            }
            if let Some(slot) = pointer_mut(&mut doc, pointer) {
                *slot = Value::String(target);
            }
        }
        let path = copied.join(rel);
        let text = serde_json::to_string_pretty(&doc).map_err(|e| RenderError::Schema {
            path: path.clone(),
            message: e.to_string(),
        })?;
        std::fs::write(&path, text).map_err(|source| RenderError::Io { path, source })?;
    }
    let notes = plan
        .resolved
        .iter()
        .map(|(target, shipped)| {
            format!(
                "schema $ref {target} resolved offline to {}, which the chart ships with that $id",
                shipped.display()
            )
        })
        .collect();
    Ok(SchemaPlan {
        chart_dir: copied,
        skip_validation: false,
        notes,
        _copy: Some(copy),
    })
}

/// One `$ref` to point at a shipped file: its JSON path in the document, the shipped file
/// (relative to the chart) and the fragment the reference keeps.
type RefEdit = (Vec<String>, PathBuf, Option<String>);

/// What must change: per file, the `$ref`s to point at shipped files.
#[derive(Default)]
struct Rewrites {
    rewrites: BTreeMap<PathBuf, Vec<RefEdit>>,
    resolved: BTreeSet<(String, PathBuf)>,
    unresolved: BTreeSet<(String, String)>,
}

fn root_id(doc: &Value) -> Option<String> {
    let id = doc.get("$id").or_else(|| doc.get("id"))?.as_str()?;
    let url = Url::parse(id).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    Some(url.as_str().trim_end_matches('#').to_string())
}

/// The resources a document defines itself (its base and every embedded `$id`) and its
/// `$ref`s.
fn split_refs(doc: &Value, base: &Url) -> (BTreeSet<Url>, Vec<(Vec<String>, Url)>) {
    let mut found = Vec::new();
    find_refs(doc, base, &mut Vec::new(), &mut found);
    let (ids, refs): (Vec<_>, Vec<_>) = found.into_iter().partition(|(p, _)| p.is_empty());
    (ids.into_iter().map(|(_, u)| u).collect(), refs)
}

/// Every `$ref` string in `value` (and, with an empty path, the base of the document and of
/// each subschema with an `$id`), with its JSON path and its target resolved against the base
/// in effect there (a subschema's `$id` changes it).
fn find_refs(value: &Value, base: &Url, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, Url)>) {
    match value {
        Value::Object(map) => {
            let base = match map.get("$id").and_then(Value::as_str) {
                Some(id) if !path.is_empty() => base.join(id).unwrap_or_else(|_| base.clone()),
                _ => base.clone(),
            };
            if path.is_empty() || map.contains_key("$id") {
                let mut own = base.clone();
                own.set_fragment(None);
                out.push((Vec::new(), own));
            }
            for (key, child) in map {
                if key == "$ref" {
                    if let Some(reference) = child.as_str() {
                        if let Ok(target) = base.join(reference) {
                            let mut at = path.clone();
                            at.push(key.clone());
                            out.push((at, target));
                        }
                    }
                    continue;
                }
                path.push(key.clone());
                find_refs(child, &base, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                path.push(i.to_string());
                find_refs(child, base, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn pointer_mut<'a>(value: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |v, key| match v {
        Value::Object(map) => map.get_mut(key),
        Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
        _ => None,
    })
}

/// `values.schema.json` at the chart's root or at the root of an unpacked subchart
/// (`charts/<name>/`, nested to any depth).
fn is_chart_schema(chart_dir: &Path, rel: &Path) -> bool {
    if rel.file_name().is_none_or(|n| n != "values.schema.json") {
        return false;
    }
    let Some(dir) = rel.parent() else {
        return false;
    };
    let parts: Vec<_> = dir.components().collect();
    if parts.len() % 2 != 0 {
        return false;
    }
    parts.chunks(2).all(|pair| pair[0].as_os_str() == "charts")
        && chart_dir.join(dir).join("Chart.yaml").is_file()
}

fn collect_json_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), RenderError> {
    let entries = std::fs::read_dir(dir).map_err(|source| RenderError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            collect_json_files(root, &path, out)?;
        } else if kind.is_file()
            && path.extension().is_some_and(|e| e == "json")
            && entry.metadata().is_ok_and(|m| m.len() <= MAX_SCHEMA_FILE)
        {
            if let Ok(rel) = path.strip_prefix(root) {
                out.push(rel.to_path_buf());
            }
        }
    }
    Ok(())
}

/// Subcharts kept packed (`charts/*.tgz`), at any depth of unpacked subcharts.
fn collect_archives(chart_dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), RenderError> {
    fn walk(root: &Path, charts: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(charts) else {
            return;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path.join("charts"), out);
            } else if path.extension().is_some_and(|e| e == "tgz") {
                if let Ok(rel) = path.strip_prefix(root) {
                    out.push(rel.to_path_buf());
                }
            }
        }
    }
    walk(chart_dir, &chart_dir.join("charts"), out);
    Ok(())
}

/// The `http(s)` `$ref`s of the `values.schema.json` files inside a packed subchart: plumb does
/// not repack archives, so these cannot be pointed at shipped files.
fn archive_url_refs(archive: &Path) -> Result<Vec<(String, String)>, RenderError> {
    let file = std::fs::File::open(archive).map_err(|source| RenderError::Io {
        path: archive.to_path_buf(),
        source,
    })?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut found = Vec::new();
    let entries = tar.entries().map_err(|source| RenderError::Io {
        path: archive.to_path_buf(),
        source,
    })?;
    for entry in entries {
        let mut entry = entry.map_err(|source| RenderError::Io {
            path: archive.to_path_buf(),
            source,
        })?;
        let name = entry
            .path()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !name.ends_with("values.schema.json") || entry.size() > MAX_SCHEMA_FILE {
            continue;
        }
        let mut text = String::new();
        if std::io::Read::read_to_string(&mut entry, &mut text).is_err() {
            continue;
        }
        let Ok(doc) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        let base = Url::parse(SCHEMA_BASE).expect("constant URL");
        let base = root_id(&doc)
            .and_then(|id| base.join(&id).ok())
            .unwrap_or(base);
        let (local, refs) = split_refs(&doc, &base);
        for (_, target) in refs {
            let mut document = target.clone();
            document.set_fragment(None);
            if matches!(target.scheme(), "http" | "https") && !local.contains(&document) {
                found.push((target.to_string(), name.clone()));
            }
        }
    }
    Ok(found)
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), RenderError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| RenderError::Io { path, source }
    };
    std::fs::create_dir_all(to).map_err(io(to))?;
    for entry in std::fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        let path = entry.path();
        let dest = to.join(entry.file_name());
        let kind = entry.file_type().map_err(io(&path))?;
        if kind.is_dir() {
            copy_dir(&path, &dest)?;
        } else if kind.is_file() {
            std::fs::copy(&path, &dest).map_err(io(&path))?;
        } else if kind.is_symlink() {
            // A chart's symlink is followed, as helm's loader reads the file it names.
            if path.is_dir() {
                copy_dir(&path, &dest)?;
            } else if path.is_file() {
                std::fs::copy(&path, &dest).map_err(io(&path))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_resolve_against_ids() {
        let doc: Value = serde_json::json!({
            "$id": "https://example.invalid/a/root.json",
            "properties": {
                "x": {"$ref": "other.json#/definitions/x"},
                "y": {"$ref": "#/definitions/y"},
                "z": {"$id": "https://elsewhere.invalid/z/", "items": {"$ref": "z.json"}}
            }
        });
        let mut refs = Vec::new();
        let base = Url::parse(doc["$id"].as_str().unwrap()).unwrap();
        find_refs(&doc, &base, &mut Vec::new(), &mut refs);
        let targets: Vec<String> = refs.iter().map(|(_, u)| u.to_string()).collect();
        assert!(
            targets.contains(&"https://example.invalid/a/other.json#/definitions/x".to_string())
        );
        assert!(targets.contains(&"https://example.invalid/a/root.json#/definitions/y".to_string()));
        assert!(targets.contains(&"https://elsewhere.invalid/z/z.json".to_string()));
    }
}
