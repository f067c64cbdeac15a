//! `plumb build`: every Flux Kustomization reachable from each entry path, built as
//! kustomize-controller builds it, printed as YAML (grouped per Kustomization), JSON
//! (`plumb.build/v1`) or object names.

use crate::report::Verbosity;
use clap::{Args, ValueEnum};
use plumb_flux::build::{build_repository, KustomizationBuild, Options, RepositoryBuild};
use plumb_flux::diagnostic::{Code, Diagnostic};
use plumb_flux::output::Summary;
use plumb_flux::varsub::Mode;
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct BuildArgs {
    /// The repository root.
    #[arg(default_value = ".")]
    pub repo: PathBuf,
    /// An entry path (a cluster directory such as `clusters/dev`), relative to the repository;
    /// repeatable. Without it: `.plumb.yaml`'s `clusters:`, else every directory a Kustomization or
    /// FluxInstance in the repository syncs.
    #[arg(long = "entry", value_name = "PATH")]
    pub entries: Vec<String>,
    /// Print only this Kustomization; repeatable (the whole graph is still built, for
    /// substituteFrom).
    #[arg(long = "ks", value_name = "NS/NAME", value_parser = kustomization_key)]
    pub ks: Vec<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Yaml)]
    pub output: Output,
    /// Substitute as kustomize-controller before v1.9 (Flux 2.9): an undefined variable is
    /// an empty string instead of an error.
    #[arg(long)]
    pub no_strict: bool,
    #[command(flatten)]
    pub fetch: super::fetch::FetchArgs,
}

/// A `--ks` value: `namespace/name`, both parts non-empty.
fn kustomization_key(value: &str) -> Result<String, String> {
    match value.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok(value.to_string())
        }
        _ => Err(format!(
            "`{value}` is not NAMESPACE/NAME (a Flux Kustomization such as flux-system/apps)"
        )),
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Yaml,
    Json,
    Names,
}

/// Builds the repository for `plumb build`, `plumb check` and `plumb graph`, which exit after
/// it; `Err` is the exit code of a usage or configuration error, already reported.
pub fn build(
    repo: &std::path::Path,
    entries: Vec<String>,
    mode: Mode,
    fetch: &super::fetch::FetchArgs,
) -> Result<RepositoryBuild, ExitCode> {
    super::config::validate(repo)?;
    let renderer = super::helm::renderer(fetch);
    let result =
        build_tree(repo, entries, mode, fetch, None, renderer.clone(), true).map_err(|e| {
            crate::report::error(&e.to_string());
            ExitCode::from(2)
        });
    super::helm::warn_unusable(renderer.as_ref());
    result
}

/// Why a tree could not be built at all.
#[derive(Debug)]
pub enum TreeError {
    /// The age keys, the user configuration or the cache are unusable.
    Usage(String),
    /// The repository cannot be built ([`plumb_flux::build::SetupError`]).
    Setup(plumb_flux::build::SetupError),
}

impl std::fmt::Display for TreeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TreeError::Usage(message) => f.write_str(message),
            TreeError::Setup(e) => write!(f, "{e}"),
        }
    }
}

/// Builds the tree at `repo`, standing for `checkout` when it is an exported revision, with
/// `renderer` (shared by the builds of one command).
pub fn build_tree(
    repo: &std::path::Path,
    entries: Vec<String>,
    mode: Mode,
    fetch: &super::fetch::FetchArgs,
    checkout: Option<plumb_flux::sync::Checkout>,
    renderer: Option<plumb_flux::helm_release::LazyRenderer>,
    exits_after: bool,
) -> Result<RepositoryBuild, TreeError> {
    let age_keys = match plumb_flux::sops::AgeKeys::from_env() {
        Ok(keys) => keys.map(std::sync::Arc::new),
        Err(e) => return Err(TreeError::Usage(e.to_string())),
    };
    let fetcher = fetch.fetcher(repo).map_err(TreeError::Usage)?;
    let _shown = super::progress::Working::new(format!("building {}", repo.display()));
    let remote = fetcher.as_ref().map(super::fetch::SourceFetcher::remote);
    let options = Options {
        entries,
        mode,
        age_keys,
        fetcher: fetcher
            .map(|f| std::sync::Arc::new(f) as std::sync::Arc<dyn plumb_flux::fetch::Fetcher>),
        remote,
        renderer,
        checkout,
        exits_after,
    };
    build_repository(repo, &options).map_err(TreeError::Setup)
}

/// Prints the notes, every diagnostic (only errors with `-q`) and the summary line on stderr;
/// returns whether any diagnostic is an error.
pub fn report_diagnostics(
    result: &RepositoryBuild,
    summary: &Summary,
    verbosity: Verbosity,
) -> bool {
    crate::report::notes(result, verbosity);
    {
        let mut stderr = crate::report::buffered_stderr();
        let shown: Vec<&Diagnostic> = result
            .diagnostics()
            .filter(|d| d.is_error() || !verbosity.quiet)
            .collect();
        let repeated = match verbosity.verbose {
            0 => repeated_warnings(&shown),
            _ => HashMap::new(),
        };
        let mut printed = HashSet::new();
        for d in shown {
            match place(d).and_then(|at| Some((at, repeated.get(&at)?))) {
                Some((at, &more)) if printed.insert(at) => {
                    let _ = writeln!(
                        stderr,
                        "{d}\n  = and {more} more {} at this place, for other Kustomizations (`-v` prints each)",
                        if more == 1 { "warning" } else { "warnings" }
                    );
                }
                Some(_) => {}
                None => {
                    let _ = writeln!(stderr, "{d}");
                }
            }
        }
    }
    crate::report::summary(result, verbosity, &summary.to_string());
    result.has_errors()
}

/// Where a warning is in the repository: its code, file, line and column.
type Place<'d> = (Code, &'d Path, u32, u32);

fn place(d: &Diagnostic) -> Option<Place<'_>> {
    match (d.is_error(), &d.file, d.line) {
        (false, Some(file), Some(line)) => Some((d.code, file, line, d.column.unwrap_or(0))),
        _ => None,
    }
}

/// Places with more than one warning, and how many more: a component that puts a
/// SOPS-encrypted Secret in each namespace is read by every Kustomization there, and each warns
/// about the same lines (191 warnings of one file on a real repository). They are printed once.
fn repeated_warnings<'d>(shown: &[&'d Diagnostic]) -> HashMap<Place<'d>, usize> {
    let mut count: HashMap<Place<'d>, usize> = HashMap::new();
    for at in shown.iter().filter_map(|d| place(d)) {
        *count.entry(at).or_default() += 1;
    }
    count.retain(|_, n| *n > 1);
    count.values_mut().for_each(|n| *n -= 1);
    count
}

/// What an unknown `--ks` is told: every name when there are few, else the closest name of
/// its namespace and how to list them.
fn unknown_ks_help(missing: &str, known: &[String]) -> String {
    const LISTED: usize = 12;
    if known.is_empty() {
        return "none: no Flux Kustomization syncs the entries, which are built as they stand"
            .into();
    }
    if known.len() <= LISTED {
        return format!("known: {}", known.join(", "));
    }
    let (namespace, name) = missing.split_once('/').unwrap_or(("", missing));
    let prefix = format!("{namespace}/");
    let names: Vec<&str> = known
        .iter()
        .filter_map(|k| k.strip_prefix(&prefix))
        .collect();
    match plumb_kustomize::kustomization::closest(name, &names) {
        Some(close) => format!(
            "did you mean {namespace}/{close}? {} Kustomizations; `plumb build -v` lists each",
            known.len()
        ),
        None => format!(
            "{} Kustomizations, {} in namespace {namespace}; `plumb build -v` lists each",
            known.len(),
            names.len()
        ),
    }
}

pub fn run(args: BuildArgs, verbosity: Verbosity) -> ExitCode {
    let mode = if args.no_strict {
        Mode::Lenient
    } else {
        Mode::Strict
    };
    let result = match build(&args.repo, args.entries, mode, &args.fetch) {
        Ok(r) => r,
        Err(code) => return code,
    };
    // The same Kustomization in several clusters is one name to select.
    let mut known: Vec<String> = Vec::new();
    for k in result.entries.iter().flat_map(|e| &e.kustomizations) {
        if !k.synthetic && !known.contains(&k.key()) {
            known.push(k.key());
        }
    }
    if let Some(missing) = args.ks.iter().find(|k| !known.contains(k)) {
        crate::report::error(&format!(
            "--ks {missing}: no such Kustomization in this build ({})",
            unknown_ks_help(missing, &known)
        ));
        return ExitCode::from(2);
    }
    let select = |k: &KustomizationBuild| args.ks.is_empty() || args.ks.contains(&k.key());
    let output_started = std::time::Instant::now();
    // The YAML stream is written section by section: joined first, its megabytes were copied
    // once more, on one thread, before the first byte went out.
    let parts = match args.output {
        Output::Yaml => result.yaml_sections(&select),
        Output::Json => {
            let doc = result.to_json(&select);
            match serde_json::to_string_pretty(&doc) {
                Ok(s) => vec![s + "\n"],
                Err(e) => {
                    crate::report::error(&format!("cannot write JSON: {e}"));
                    return ExitCode::from(2);
                }
            }
        }
        Output::Names => vec![result.to_names(&select)],
    };
    // Small sections are gathered into writes of 64 KiB, not one write each.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    if parts
        .iter()
        .try_for_each(|part| out.write_all(part.as_bytes()))
        .and_then(|()| out.flush())
        .is_err()
    {
        return ExitCode::from(2);
    }
    crate::report::stage("output", output_started.elapsed().as_secs_f64());
    // A source that could not be fetched leaves the build incomplete: not a success.
    // Counted once, for the summary line and the exit status: a walk over every object.
    let summary = result.summary();
    let errors = report_diagnostics(&result, &summary, verbosity);
    result.leave_to_exit();
    if errors
        || summary.unavailable > 0
        || summary.entries_unavailable > 0
        || summary.releases_unavailable > 0
        || summary.bootstrap_unavailable > 0
    {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::unknown_ks_help;

    #[test]
    fn an_unknown_ks_is_told_every_name_when_few_and_the_closest_when_many() {
        let few: Vec<String> = vec!["flux-system/flux-system".into(), "flux-system/apps".into()];
        assert_eq!(
            unknown_ks_help("flux-system/nope", &few),
            "known: flux-system/flux-system, flux-system/apps"
        );
        let many: Vec<String> = (0..20)
            .map(|i| format!("default/app-{i}"))
            .chain(["media/jellyfin".to_string()])
            .collect();
        assert_eq!(
            unknown_ks_help("media/jelyfin", &many),
            "did you mean media/jellyfin? 21 Kustomizations; `plumb build -v` lists each"
        );
        assert_eq!(
            unknown_ks_help("media/sonarr", &many),
            "21 Kustomizations, 1 in namespace media; `plumb build -v` lists each"
        );
    }
}
