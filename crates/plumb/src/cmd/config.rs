//! `.plumb.yaml`, validated the same way before every command that reads a repository: every
//! error of the file at once, each with its line, the file named relative to the repository.

use std::path::Path;
use std::process::ExitCode;

/// Checks `<repo>/.plumb.yaml` ([`plumb_check::config::validate`]); `Err` is exit code 2, after
/// each error has been reported as an `error:` line.
pub fn validate(repo: &Path) -> Result<(), ExitCode> {
    match message(repo, "") {
        None => Ok(()),
        Some(text) => {
            crate::report::error(&text);
            Err(ExitCode::from(2))
        }
    }
}

/// Every error of `<repo>/.plumb.yaml`, each prefixed with `context`, as the text of one
/// `error:` report (the second and later on `error:` lines of their own); `None` when the file
/// is valid or absent.
pub fn message(repo: &Path, context: &str) -> Option<String> {
    let mut errors: Vec<(usize, String)> = plumb_check::config::validate(repo)
        .iter()
        .map(|e| (e.line, e.to_string()))
        .collect();
    if let Some(e) = render_error(repo) {
        let line = match &e {
            plumb_render::RenderError::At { line, .. } => *line,
            plumb_render::RenderError::Io { .. } => 0,
        };
        if line == 0 || !errors.iter().any(|(seen, _)| *seen == line) {
            errors.push((line, e.to_string()));
        }
    }
    if errors.is_empty() {
        return None;
    }
    errors.sort_by_key(|(line, _)| *line);
    let lines: Vec<String> = errors
        .iter()
        .map(|(_, e)| format!("{context}{e}"))
        .collect();
    Some(lines.join("\nerror: "))
}

/// The error of the file's `render:` block, when it has one (`plumb render` reads it; every other
/// command ignores it, but a mistake in it is a mistake in the file, reported by all alike).
fn render_error(repo: &Path) -> Option<plumb_render::RenderError> {
    let path = Path::new(plumb_render::config::CONFIG_FILE);
    let text = std::fs::read_to_string(repo.join(path)).ok()?;
    let docs = plumb_yaml::parse_documents(path, &text).ok()?;
    docs.iter()
        .find(|d| !d.is_null())
        .and_then(|root| root.get("render"))?;
    plumb_render::RenderConfig::parse(path, &text).err()
}
