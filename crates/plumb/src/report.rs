//! How the binary reports to a person on stderr: `error:` lines, the notes of what a build
//! assumed, and the summary line a build or check ends with.

use plumb_flux::build::{RepositoryBuild, Status};
use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

pub fn error(msg: &str) {
    eprintln!("error: {msg}");
}

/// How much to print beside the output: `-q` only errors, `-v` what was built and assumed,
/// `-vv` also the time of each stage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Verbosity {
    pub quiet: bool,
    pub verbose: u8,
}

/// What the whole run shares: its verbosity (the progress display and warnings printed deep in
/// a command read it), when it started, and the stages the binary times itself.
struct Run {
    verbosity: Verbosity,
    started: Instant,
    stages: Mutex<Vec<(&'static str, f64)>>,
}

static RUN: OnceLock<Run> = OnceLock::new();

/// Records the run's verbosity and start; called once, first thing.
pub fn start(verbosity: Verbosity) {
    let _ = RUN.set(Run {
        verbosity,
        started: Instant::now(),
        stages: Mutex::new(Vec::new()),
    });
}

/// Whether `-q` was given: only errors are printed.
pub fn quiet() -> bool {
    RUN.get().is_some_and(|r| r.verbosity.quiet)
}

/// Records how long a stage the binary runs itself took (`output`, `rules`), for `-vv`.
pub fn stage(name: &'static str, seconds: f64) {
    if let Some(run) = RUN.get() {
        let mut stages = run.stages.lock().unwrap_or_else(|e| e.into_inner());
        stages.push((name, seconds));
    }
}

/// A warning on stderr, unless `-q`.
pub fn warning(msg: &str) {
    if !quiet() {
        eprintln!("warning: {msg}");
    }
}

/// Standard error for a block of lines, written when the block ends (at the drop): stderr
/// itself is unbuffered, which made a build's report a `write` for every piece of every line.
pub fn buffered_stderr() -> std::io::BufWriter<std::io::StderrLock<'static>> {
    std::io::BufWriter::with_capacity(64 << 10, std::io::stderr().lock())
}

/// Every inference of the build, once each, as `note:` blocks: what was assumed and how to
/// override it.
pub fn notes(build: &RepositoryBuild, verbosity: Verbosity) {
    if verbosity.quiet {
        return;
    }
    let mut stderr = buffered_stderr();
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

/// A release's reason for not being rendered, short when it is that no usable helm was
/// found: the warning before the summary gave that reason in full, once.
fn unless_said(reason: &str) -> &str {
    if plumb_flux::helm_release::helm_was_unusable(reason) {
        "no usable helm (the warning above says why)"
    } else {
        reason
    }
}

/// The summary line (`plumb: ` and `line`), after, with `-v`, one line per Kustomization and
/// HelmRelease (what it built, from which source, how many objects, how long; without `-v`,
/// only those that could not be fetched), and with `-vv` the time of each stage.
pub fn summary(build: &RepositoryBuild, verbosity: Verbosity, line: &str) {
    if verbosity.quiet {
        return;
    }
    let sops = plumb_flux::sops_status::sops_objects(build);
    let mut stderr = buffered_stderr();
    // Without -v, what could not be fetched is still named: it makes the build incomplete
    // (exit 1), and the summary only counts it.
    let shown = |status: &Status| verbosity.verbose > 0 || matches!(status, Status::Unavailable(_));
    for entry in &build.entries {
        // An entry directory built as it stands, left unbuilt by what it could not fetch.
        for k in entry
            .kustomizations
            .iter()
            .filter(|k| k.synthetic && shown(&k.status))
        {
            let line = match &k.status {
                Status::NotBuilt(reason) => format!("entry directory not built: {reason}"),
                Status::Unavailable(reason) => format!("entry directory unavailable: {reason}"),
                Status::Built | Status::Failed => continue,
            };
            let _ = writeln!(stderr, "  {}: {line}", entry.entry);
        }
        for k in entry
            .kustomizations
            .iter()
            .filter(|k| !k.synthetic && shown(&k.status))
        {
            let path = if k.path.is_empty() { "." } else { &k.path };
            let from = if k.source.is_empty() {
                String::new()
            } else {
                format!(" from {}", k.source)
            };
            let took = seconds(k.seconds);
            let line = match &k.status {
                Status::Built => format!(
                    "built {} ({path}){from}: {} objects in {took}",
                    k.key(),
                    k.objects.len()
                ),
                Status::Failed => format!("failed {} ({path}){from} in {took}", k.key()),
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
        for r in entry.bootstrap_releases.iter().filter(|r| shown(&r.status)) {
            let line = match &r.status {
                Status::Built => format!(
                    "rendered helmfile release {} ({}): {} objects",
                    r.key(),
                    r.kustomization,
                    r.objects.len()
                ),
                Status::Failed => {
                    format!("failed helmfile release {} ({})", r.key(), r.kustomization)
                }
                Status::NotBuilt(reason) => format!(
                    "not rendered helmfile release {} ({}): {}",
                    r.key(),
                    r.kustomization,
                    unless_said(reason)
                ),
                Status::Unavailable(reason) => format!(
                    "unavailable helmfile release {} ({}): {reason}",
                    r.key(),
                    r.kustomization
                ),
            };
            let _ = writeln!(stderr, "  {}: {line}", entry.entry);
        }
        for r in entry.releases.iter().filter(|r| shown(&r.status)) {
            let line = match &r.status {
                Status::Built => format!(
                    "rendered HelmRelease {}: {} objects{}",
                    r.key(),
                    r.objects.len(),
                    if r.cached { " (cached)" } else { "" }
                ),
                Status::Failed => format!("failed HelmRelease {}", r.key()),
                Status::NotBuilt(reason) => {
                    format!(
                        "not rendered HelmRelease {}: {}",
                        r.key(),
                        unless_said(reason)
                    )
                }
                Status::Unavailable(reason) => {
                    format!("unavailable HelmRelease {}: {reason}", r.key())
                }
            };
            let _ = writeln!(stderr, "  {}: {line}", entry.entry);
        }
    }
    if verbosity.verbose > 0 {
        for o in &sops {
            let file = o
                .file
                .as_ref()
                .map(|f| format!("{}, ", f.display()))
                .unwrap_or_default();
            let _ = writeln!(
                stderr,
                "  {}: SOPS {} ({file}Kustomization {}): {}",
                o.entry,
                o.object,
                o.kustomization,
                o.decryption.describe()
            );
        }
    }
    if verbosity.verbose > 1 {
        for line in timings(build) {
            let _ = writeln!(stderr, "timing: {line}");
        }
    }
    match sops_summary(&sops) {
        Some(sops) => {
            let _ = writeln!(stderr, "plumb: {line}; {sops}");
        }
        None => {
            let _ = writeln!(stderr, "plumb: {line}");
        }
    }
}

/// `2 SOPS Secrets decrypt with the age key given`, `1 SOPS Secret not decrypted (no age key
/// given: ...)`, or the counts of both; `None` when the build holds none.
fn sops_summary(sops: &[plumb_flux::sops_status::SopsObject]) -> Option<String> {
    use plumb_flux::sops_status::Decryption;
    if sops.is_empty() {
        return None;
    }
    let noun = if sops.iter().all(|o| o.object.starts_with("Secret ")) {
        "SOPS Secret"
    } else {
        "SOPS-encrypted object"
    };
    let plural = if sops.len() == 1 { "" } else { "s" };
    let decrypted = sops.iter().filter(|o| o.decryption.is_decrypted()).count();
    let text = if decrypted == sops.len() {
        let verb = if sops.len() == 1 {
            "decrypts"
        } else {
            "decrypt"
        };
        format!(
            "{} {noun}{plural} {verb} with the age key given",
            sops.len()
        )
    } else if decrypted == 0 && sops.iter().all(|o| o.decryption == Decryption::NoKey) {
        format!(
            "{} {noun}{plural} not decrypted (no age key given: SOPS_AGE_KEY_FILE)",
            sops.len()
        )
    } else {
        let not = sops.len() - decrypted;
        format!(
            "{} {noun}{plural}: {decrypted} {}, {not} {} (-v says why)",
            sops.len(),
            if decrypted == 1 {
                "decrypts"
            } else {
                "decrypt"
            },
            if not == 1 { "does not" } else { "do not" }
        )
    };
    Some(text)
}

/// The time of each stage: discovery, sources fetched, kustomize builds and helm rendering per
/// cluster (clusters are built in parallel), then what the binary timed (rules, output), then
/// the whole run.
fn timings(build: &RepositoryBuild) -> Vec<String> {
    let mut lines = vec![format!("discovery {}", seconds(build.discovery_seconds))];
    let fetched = crate::cmd::progress::fetched();
    lines.push(format!(
        "sources fetched: {} (from the network or the cache) in {}, inside the stages below",
        fetched.count,
        seconds(fetched.seconds)
    ));
    for entry in &build.entries {
        lines.push(format!(
            "{}: kustomize builds {}, helm rendering {}",
            entry.entry,
            seconds(entry.stages.kustomize),
            seconds(entry.stages.helm)
        ));
    }
    if build.copied_builds > 0 {
        lines.push(format!(
            "directory builds copied from another Kustomization's build: {}",
            build.copied_builds
        ));
    }
    if let Some(run) = RUN.get() {
        let stages = run.stages.lock().unwrap_or_else(|e| e.into_inner());
        for (name, took) in stages.iter() {
            lines.push(format!("{name} {}", seconds(*took)));
        }
        lines.push(format!(
            "total {}",
            seconds(run.started.elapsed().as_secs_f64())
        ));
    }
    lines
}

/// `0.012 s`, `1.4 s`: milliseconds below ten seconds, tenths above.
fn seconds(s: f64) -> String {
    if s < 10.0 {
        format!("{s:.3} s")
    } else {
        format!("{s:.1} s")
    }
}
