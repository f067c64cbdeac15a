//! `spec.pathPattern` (source-watcher 2.2): the artifacts as templates, rendered once per
//! directory of a source matching `@alias/apps/{app}/envs/{env}`, as the controller's
//! `buildArtifactRequests` renders them. Names take the captures lower-cased, copy paths take
//! them as written.

use super::{Copy, OutputArtifact};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The artifacts `templates` render to for each directory matching `path_pattern`, in walk
/// order (directories read sorted), or the error that stalls the generator.
pub fn expand(
    path_pattern: &str,
    templates: &[OutputArtifact],
    sources: &BTreeMap<String, PathBuf>,
) -> Result<Vec<OutputArtifact>, String> {
    let fail = |why: String| format!("pathPattern {path_pattern:?}: {why}");
    let (alias, pattern) = path_pattern
        .strip_prefix('@')
        .and_then(|p| p.split_once('/'))
        .ok_or_else(|| format!("invalid pathPattern format: {path_pattern}"))?;
    let root = sources
        .get(alias)
        .ok_or_else(|| fail(format!("source alias {alias} not found in local sources")))?;
    let captures = capture_names(pattern).map_err(fail)?;
    let mut regex = String::from("^");
    let mut rest = pattern;
    while let Some(open) = rest.find('{') {
        let close = open + rest[open..].find('}').unwrap_or(rest.len() - open);
        regex.push_str(&regex::escape(&rest[..open]));
        regex.push_str(&format!("(?P<{}>[^/]+)", &rest[open + 1..close]));
        rest = &rest[(close + 1).min(rest.len())..];
    }
    regex.push_str(&regex::escape(rest));
    regex.push('$');
    let matcher = regex::Regex::new(&regex)
        .map_err(|e| fail(format!("failed to compile path pattern: {e}")))?;
    let mut dirs = Vec::new();
    walk_dirs(root, "", &mut dirs);
    let mut out = Vec::new();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for rel in dirs {
        let Some(m) = matcher.captures(&rel) else {
            continue;
        };
        let raw: BTreeMap<String, String> = captures
            .iter()
            .map(|c| (c.clone(), m[c.as_str()].to_string()))
            .collect();
        let lower: BTreeMap<String, String> = raw
            .iter()
            .map(|(k, v)| (k.clone(), v.to_lowercase()))
            .collect();
        for (k, v) in &lower {
            if !is_label_value(v) {
                return Err(fail(format!(
                    "captured value {v:?} for variable {k:?} is not a valid Kubernetes label value"
                )));
            }
        }
        for template in templates {
            let render = |t: &str, data: &BTreeMap<String, String>| {
                render(t, data).map_err(|e| {
                    fail(format!(
                        "failed to render artifact {} for match {rel}: {e}",
                        template.name
                    ))
                })
            };
            let name = render(&template.name, &lower)?;
            if !super::is_dns_subdomain(&name) {
                return Err(fail(format!(
                    "rendered artifact name {name:?} is not a valid Kubernetes object name"
                )));
            }
            if let Some(previous) = seen.insert(name.clone(), rel.clone()) {
                return Err(fail(format!(
                    "directories {previous:?} and {rel:?} both resolve to artifact name {name:?}"
                )));
            }
            let copy = template
                .copy
                .iter()
                .map(|op| {
                    Ok(Copy {
                        from: render(&op.from, &raw)?,
                        to: render(&op.to, &raw)?,
                        ..op.clone()
                    })
                })
                .collect::<Result<_, String>>()?;
            out.push(OutputArtifact {
                name,
                copy,
                ..template.clone()
            });
        }
    }
    Ok(out)
}

/// The capture names of a pattern, checked as `validatePathPatternCaptures` checks them.
fn capture_names(pattern: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut rest = pattern;
    let mut offset = 0;
    while let Some(i) = rest.find(['{', '}']) {
        if rest.as_bytes()[i] == b'}' {
            return Err(format!(
                "invalid capture ending at offset {}: missing opening brace",
                offset + i
            ));
        }
        let Some(len) = rest[i + 1..].find('}') else {
            return Err(format!(
                "invalid capture starting at offset {}: missing closing brace",
                offset + i
            ));
        };
        let name = &rest[i + 1..i + 1 + len];
        if name.is_empty() {
            return Err("empty capture variable".into());
        }
        if !is_capture_name(name) {
            return Err(format!(
                "capture variable {name:?} must be a valid capture name matching [A-Za-z_][A-Za-z0-9_]*"
            ));
        }
        if names.iter().any(|n| n == name) {
            return Err(format!("duplicate capture variable {name:?}"));
        }
        names.push(name.to_string());
        offset += i + len + 2;
        rest = &rest[i + len + 2..];
    }
    Ok(names)
}

fn is_capture_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `renderTemplateString`: `{name}` replaced by its capture.
fn render(template: &str, data: &BTreeMap<String, String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        if rest.as_bytes()[i] == b'}' {
            return Err(format!(
                "invalid template {template:?}: capture is missing opening brace"
            ));
        }
        out.push_str(&rest[..i]);
        let Some(len) = rest[i + 1..].find('}') else {
            return Err(format!(
                "invalid template {template:?}: capture is missing closing brace"
            ));
        };
        let name = &rest[i + 1..i + 1 + len];
        let value = data.get(name).ok_or_else(|| {
            format!("invalid template {template:?}: capture variable {name:?} is not defined by pathPattern")
        })?;
        out.push_str(value);
        rest = &rest[i + len + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Kubernetes' `IsLabelValue`: at most 63 characters, alphanumerics with `-`, `_`, `.` inside.
fn is_label_value(v: &str) -> bool {
    v.len() <= 63
        && (v.is_empty()
            || (v.starts_with(|c: char| c.is_ascii_alphanumeric())
                && v.ends_with(|c: char| c.is_ascii_alphanumeric())
                && v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))))
}

/// Every directory under `root`, relative, in the order of a walk reading directories sorted.
fn walk_dirs(root: &Path, dir: &str, out: &mut Vec<String>) {
    let path = if dir.is_empty() {
        root.to_path_buf()
    } else {
        root.join(dir)
    };
    let Ok(read) = std::fs::read_dir(path) else {
        return;
    };
    let mut names: Vec<String> = read
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        let rel = if dir.is_empty() {
            name
        } else {
            format!("{dir}/{name}")
        };
        out.push(rel.clone());
        walk_dirs(root, &rel, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifact::Strategy;

    fn template(name: &str, from: &str) -> OutputArtifact {
        OutputArtifact {
            name: name.into(),
            revision: None,
            copy: vec![Copy::new(from, "@artifact/", &[], Strategy::Overwrite)],
            place: None,
        }
    }

    #[test]
    fn one_artifact_per_matching_directory_names_lower_cased_paths_as_written() {
        let t = tempfile::tempdir().unwrap();
        for d in ["apps/Auth/envs/dev", "apps/web/envs/prod", "apps/web/docs"] {
            std::fs::create_dir_all(t.path().join(d)).unwrap();
        }
        let sources = BTreeMap::from([("mono".to_string(), t.path().to_path_buf())]);
        let out = expand(
            "@mono/apps/{app}/envs/{env}",
            &[template("{app}-{env}", "@mono/apps/{app}/envs/{env}/**")],
            &sources,
        )
        .unwrap();
        let got: Vec<(&str, &str)> = out
            .iter()
            .map(|a| (a.name.as_str(), a.copy[0].from.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("auth-dev", "@mono/apps/Auth/envs/dev/**"),
                ("web-prod", "@mono/apps/web/envs/prod/**")
            ]
        );
    }

    #[test]
    fn malformed_patterns_and_collisions_stall_the_generator() {
        let t = tempfile::tempdir().unwrap();
        for d in ["apps/Auth", "apps/auth", "apps/.hidden"] {
            std::fs::create_dir_all(t.path().join(d)).unwrap();
        }
        let sources = BTreeMap::from([("mono".to_string(), t.path().to_path_buf())]);
        let e = expand("@mono/apps/{app", &[], &sources).unwrap_err();
        assert!(e.contains("missing closing brace"), "{e}");
        let e = expand("@mono/apps/{a}/{a}", &[], &sources).unwrap_err();
        assert!(e.contains("duplicate capture variable \"a\""), "{e}");
        let e = expand("mono/apps/{app}", &[], &sources).unwrap_err();
        assert!(e.contains("invalid pathPattern format"), "{e}");
        let e = expand("@other/apps/{app}", &[], &sources).unwrap_err();
        assert!(e.contains("source alias other not found"), "{e}");
        let e = expand(
            "@mono/apps/{app}",
            &[template("{app}", "@mono/apps/{app}/**")],
            &sources,
        )
        .unwrap_err();
        assert!(
            e.contains("\".hidden\" for variable \"app\" is not a valid"),
            "{e}"
        );
        std::fs::remove_dir(t.path().join("apps/.hidden")).unwrap();
        let e = expand(
            "@mono/apps/{app}",
            &[template("{app}", "@mono/apps/{app}/**")],
            &sources,
        )
        .unwrap_err();
        assert!(
            e.contains("directories \"apps/Auth\" and \"apps/auth\" both resolve to artifact name \"auth\""),
            "{e}"
        );
        let e = expand(
            "@mono/apps/{app}",
            &[template("{nope}", "@mono/**")],
            &sources,
        )
        .unwrap_err();
        assert!(
            e.contains("capture variable \"nope\" is not defined by pathPattern"),
            "{e}"
        );
    }
}
