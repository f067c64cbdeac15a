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
    let errors = plumb_check::config::validate(repo);
    if errors.is_empty() {
        return None;
    }
    let lines: Vec<String> = errors.iter().map(|e| format!("{context}{e}")).collect();
    Some(lines.join("\nerror: "))
}
