//! `.plumb.yaml`, validated the same way before every command that reads a repository: every
//! error of the file at once, each with its line, the file named relative to the repository.

use std::path::Path;
use std::process::ExitCode;

/// Checks `<repo>/.plumb.yaml` ([`plumb_check::config::validate`], and its `render:` block);
/// `Err` is exit code 2, after each error has been reported as an `error:` line.
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
    // Read once, inside the repository, as the build reads it.
    let text = match plumb_flux::config::read(repo) {
        Ok(Some(text)) => text,
        Ok(None) => return None,
        Err(e) => return Some(format!("{context}{e}")),
    };
    let mut errors: Vec<(usize, String)> = plumb_check::config::validate(&text)
        .iter()
        .map(|e| (e.line, e.to_string()))
        .collect();
    // `plumb render` reads the `render:` block; a mistake in it is a mistake in the file,
    // reported by every command alike.
    let path = Path::new(plumb_render::config::CONFIG_FILE);
    if let Err(e) = plumb_render::RenderConfig::parse_block(path, &text) {
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
