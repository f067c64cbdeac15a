//! The rendered tree against the repository: what differs (render == golden, for `--check`,
//! nothing written) and writing the render into place (each file through a temporary file and
//! a rename, so no file is ever half-written).

use crate::catalog::AppSource;
use crate::config::RenderConfig;
use crate::error::RenderError;
use crate::render::{wave_dir, Tree, GENERATED};
use crate::waves::Plan;
use std::path::Path;

/// How a file of the repository differs from the render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The file exists with other content.
    Changed,
    /// The render has the file; the repository does not.
    Missing,
    /// The repository has a file the render does not (under a wave directory past the last
    /// wave).
    Extra,
}

/// One file that differs, with its unified diff (repository → render).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// Relative to the repository root, `/`-separated.
    pub path: String,
    pub change: Change,
    pub diff: String,
}

/// Every file where `<repo>` differs from `tree`, by path.
pub fn compare(
    repo: &Path,
    config: &RenderConfig,
    plan: &Plan,
    tree: &Tree,
) -> Result<Vec<Difference>, RenderError> {
    let mut out = Vec::new();
    for (path, rendered) in tree {
        let full = repo.join(path);
        match std::fs::read_to_string(&full) {
            Ok(committed) if committed == *rendered => {}
            Ok(committed) => out.push(Difference {
                path: path.clone(),
                change: Change::Changed,
                diff: unified(
                    &committed,
                    rendered,
                    &format!("a/{path}"),
                    &format!("b/{path}"),
                ),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => out.push(Difference {
                path: path.clone(),
                change: Change::Missing,
                diff: unified("", rendered, "/dev/null", &format!("b/{path}")),
            }),
            Err(e) => return Err(RenderError::io(Path::new(path), &e)),
        }
    }
    for path in stale_files(repo, config, plan)? {
        let full = repo.join(&path);
        let committed = std::fs::read(&full).map_err(|e| RenderError::io(Path::new(&path), &e))?;
        let diff = match String::from_utf8(committed) {
            Ok(text) => unified(&text, "", &format!("a/{path}"), "/dev/null"),
            Err(_) => format!("Binary file a/{path} should not be there\n"),
        };
        out.push(Difference {
            path,
            change: Change::Extra,
            diff,
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

fn unified(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(old_name, new_name)
        .to_string()
}

/// Files under `<output>/wave-<N>/` for every N past the last wave, except those of an app the
/// catalog still points at: a wave the catalog no longer has.
fn stale_files(
    repo: &Path,
    config: &RenderConfig,
    plan: &Plan,
) -> Result<Vec<String>, RenderError> {
    let out_dir = config.output.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir(repo.join(&config.output)) else {
        return Ok(Vec::new());
    };
    let kept: Vec<String> = plan
        .apps
        .iter()
        .filter_map(|a| match &a.source {
            AppSource::Path(p) => Some(format!("{p}/")),
            AppSource::Remote(_) => None,
        })
        .collect();
    let mut stale = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| RenderError::io(&config.output, &e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(n) = name
            .strip_prefix("wave-")
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<usize>().ok())
        else {
            continue;
        };
        if n < plan.waves.len() || !entry.path().is_dir() {
            continue;
        }
        let dir = wave_dir(config, n);
        debug_assert!(dir.starts_with(&out_dir));
        walk(repo, &dir, &mut |rel| {
            if !kept.iter().any(|k| rel.starts_with(k.as_str())) {
                stale.push(rel.to_string());
            }
        })?;
    }
    Ok(stale)
}

fn walk(repo: &Path, dir: &str, found: &mut dyn FnMut(&str)) -> Result<(), RenderError> {
    let entries =
        std::fs::read_dir(repo.join(dir)).map_err(|e| RenderError::io(Path::new(dir), &e))?;
    let mut names: Vec<(String, bool)> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| RenderError::io(Path::new(dir), &e))?;
        let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
        names.push((entry.file_name().to_string_lossy().into_owned(), is_dir));
    }
    names.sort();
    for (name, is_dir) in names {
        let rel = format!("{dir}/{name}");
        if is_dir {
            walk(repo, &rel, found)?;
        } else {
            found(&rel);
        }
    }
    Ok(())
}

/// What [`write`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    /// Files created or replaced.
    pub written: Vec<String>,
    /// Stale files plumb render had generated, removed.
    pub removed: Vec<String>,
    /// Stale files plumb render did not generate, left for a person to remove.
    pub left: Vec<String>,
}

/// Writes `tree` into `<repo>`: files whose content differs, each through a temporary file in
/// its directory renamed into place; stale generated files are removed.
pub fn write(
    repo: &Path,
    config: &RenderConfig,
    plan: &Plan,
    tree: &Tree,
) -> Result<Written, RenderError> {
    let mut done = Written::default();
    for diff in compare(repo, config, plan, tree)? {
        let full = repo.join(&diff.path);
        let rel = Path::new(&diff.path);
        match diff.change {
            Change::Changed | Change::Missing => {
                let parent = full.parent().unwrap_or(repo);
                std::fs::create_dir_all(parent).map_err(|e| RenderError::io(rel, &e))?;
                let name = full
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let tmp = parent.join(format!(".{name}.plumb-render.tmp"));
                std::fs::write(&tmp, tree[&diff.path].as_bytes())
                    .and_then(|()| std::fs::rename(&tmp, &full))
                    .map_err(|e| {
                        let _ = std::fs::remove_file(&tmp);
                        RenderError::io(rel, &e)
                    })?;
                done.written.push(diff.path);
            }
            Change::Extra => {
                let generated = std::fs::read_to_string(&full)
                    .map(|t| t.starts_with(GENERATED))
                    .unwrap_or(false);
                if generated {
                    std::fs::remove_file(&full).map_err(|e| RenderError::io(rel, &e))?;
                    if let Some(parent) = full.parent() {
                        // Only succeeds when the stale wave directory is now empty.
                        let _ = std::fs::remove_dir(parent);
                    }
                    done.removed.push(diff.path);
                } else {
                    done.left.push(diff.path);
                }
            }
        }
    }
    Ok(done)
}
