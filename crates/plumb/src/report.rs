//! How the binary reports to a person on stderr: `error:` lines, the notes of what a build
//! assumed, and the summary line a build or check ends with.

use plumb_flux::build::{RepositoryBuild, Status};
use std::io::Write;

pub fn error(msg: &str) {
    eprintln!("error: {msg}");
}

/// How much to print beside the output: `-q` only errors, `-v` what was built.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Verbosity {
    pub quiet: bool,
    pub verbose: u8,
}

/// Every inference of the build, once each, as `note:` blocks: what was assumed and how to
/// override it.
pub fn notes(build: &RepositoryBuild, verbosity: Verbosity) {
    if verbosity.quiet {
        return;
    }
    let mut stderr = std::io::stderr().lock();
    for why in build.assumptions() {
        let _ = writeln!(stderr, "note: {}", why.message());
        if let plumb_flux::source::Inference::ClusterSync {
            file: Some(file),
            line,
            ..
        } = why
        {
            let file = file.strip_prefix(&build.root).unwrap_or(file);
            match line {
                Some(l) => {
                    let _ = writeln!(stderr, "  --> {}:{l}", file.display());
                }
                None => {
                    let _ = writeln!(stderr, "  --> {}", file.display());
                }
            }
        }
        let _ = writeln!(stderr, "  = help: {}", why.help());
    }
}

/// The summary line (`plumb: ` and `line`), after, with `-v`, one line per Kustomization that
/// failed or was not built, and with `-vv` every one.
pub fn summary(build: &RepositoryBuild, verbosity: Verbosity, line: &str) {
    if verbosity.quiet {
        return;
    }
    let mut stderr = std::io::stderr().lock();
    if verbosity.verbose > 0 {
        for entry in &build.entries {
            for k in entry.kustomizations.iter().filter(|k| !k.synthetic) {
                let path = if k.path.is_empty() { "." } else { &k.path };
                let line = match &k.status {
                    Status::Built if verbosity.verbose > 1 => {
                        format!("built {} ({path}): {} objects", k.key(), k.objects.len())
                    }
                    Status::Built => continue,
                    Status::Failed => format!("failed {} ({path})", k.key()),
                    Status::NotBuilt(reason) => {
                        format!("not built {} ({path}): {reason}", k.key())
                    }
                    Status::Unavailable(reason) => {
                        format!("unavailable {} ({path}): {reason}", k.key())
                    }
                };
                let _ = writeln!(stderr, "  {}: {line}", entry.entry);
                // Which Kustomizations lead to it, as a diagnostic's `via:` says.
                if !matches!(k.status, Status::Built) && k.chain.len() > 1 {
                    let _ = writeln!(stderr, "    = via: {}", k.chain.join(" → "));
                }
            }
            for r in &entry.bootstrap_releases {
                let line = match &r.status {
                    Status::Built if verbosity.verbose > 1 => format!(
                        "rendered helmfile release {} ({}): {} objects",
                        r.key(),
                        r.kustomization,
                        r.objects.len()
                    ),
                    Status::Built => continue,
                    Status::Failed => {
                        format!("failed helmfile release {} ({})", r.key(), r.kustomization)
                    }
                    Status::NotBuilt(reason) => format!(
                        "not rendered helmfile release {} ({}): {reason}",
                        r.key(),
                        r.kustomization
                    ),
                    Status::Unavailable(reason) => format!(
                        "unavailable helmfile release {} ({}): {reason}",
                        r.key(),
                        r.kustomization
                    ),
                };
                let _ = writeln!(stderr, "  {}: {line}", entry.entry);
            }
            for r in &entry.releases {
                let line = match &r.status {
                    Status::Built if verbosity.verbose > 1 => format!(
                        "rendered HelmRelease {}: {} objects{}",
                        r.key(),
                        r.objects.len(),
                        if r.cached { " (cached)" } else { "" }
                    ),
                    Status::Built => continue,
                    Status::Failed => format!("failed HelmRelease {}", r.key()),
                    Status::NotBuilt(reason) => {
                        format!("not rendered HelmRelease {}: {reason}", r.key())
                    }
                    Status::Unavailable(reason) => {
                        format!("unavailable HelmRelease {}: {reason}", r.key())
                    }
                };
                let _ = writeln!(stderr, "  {}: {line}", entry.entry);
            }
        }
    }
    let _ = writeln!(stderr, "plumb: {line}");
}
