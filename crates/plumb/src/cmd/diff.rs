//! `plumb diff`: what a change will do to the clusters. Both revisions are built in one
//! process, at the same time, sharing the source and render caches: the base read from the
//! repository's object database (no checkout), the head from the work tree or a revision.

use crate::report::Verbosity;
use crate::Color;
use clap::{Args, ValueEnum};
use plumb_diff::{Revision, Snapshot};
use plumb_flux::build::{RepositoryBuild, SetupError};
use plumb_flux::varsub::Mode;
use plumb_source::revision::{Checkout, Revision as GitRevision};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The repository root (or the directory of it that holds the clusters).
    #[arg(default_value = ".")]
    pub repo: PathBuf,
    /// The revision to compare against. Default: the merge base of HEAD with its upstream,
    /// else with origin/HEAD, main or master.
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// The revision to compare. Default: the work tree, uncommitted changes included.
    #[arg(long, value_name = "REV")]
    pub head: Option<String>,
    /// A directory holding the base side, for a repository that is not a git repository (or
    /// to compare two trees).
    #[arg(long, value_name = "DIR", conflicts_with = "base")]
    pub base_path: Option<PathBuf>,
    /// An entry path (a cluster directory), relative to the repository; repeatable. Default: what each
    /// side's `.plumb.yaml` lists, else every directory each side syncs a cluster from.
    #[arg(long = "entry", value_name = "PATH")]
    pub entries: Vec<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// The most bytes `-o markdown` prints (GitHub refuses comments over 65,536 characters):
    /// the largest diffs are cut first.
    #[arg(long, value_name = "N", default_value_t = plumb_diff::markdown::DEFAULT_MAX_BYTES as u64,
          value_parser = clap::value_parser!(u64).range(plumb_diff::markdown::MIN_MAX_BYTES as u64..))]
    pub max_bytes: u64,
    /// Exit with 1 when anything differs.
    #[arg(long)]
    pub exit_code: bool,
    /// Diff objects as built: chart labels and generated-name hashes included, and list the
    /// objects that differ only in them.
    #[arg(long)]
    pub show_noise: bool,
    /// Substitute as kustomize-controller before v1.9 (Flux 2.9).
    #[arg(long)]
    pub no_strict: bool,
    #[command(flatten)]
    pub fetch: super::fetch::FetchArgs,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Text,
    Markdown,
    Json,
}

/// One side: a tree to build and what it is.
struct Side {
    /// The tree to build: the work tree or `--base-path`, or once exported, the revision's.
    dir: PathBuf,
    revision: Revision,
    /// The commit still to export (in the side's own thread, beside the other side's work).
    commit: Option<GitRevision>,
    /// The exported revision's directory, removed when the side is dropped.
    _export: Option<tempfile::TempDir>,
}

impl Side {
    fn of_commit(rev: GitRevision) -> Side {
        Side {
            dir: PathBuf::new(),
            revision: revision_of(&rev),
            commit: Some(rev),
            _export: None,
        }
    }

    /// Writes the commit's tree out, when the side is a commit. Each thread opens the
    /// repository itself: a gix handle is not shared between threads.
    fn export(&mut self, repo: &Path, verbosity: Verbosity) -> Result<(), String> {
        let Some(rev) = self.commit.take() else {
            return Ok(());
        };
        let checkout = Checkout::open(repo).map_err(|e| e.to_string())?;
        let dir = tempfile::Builder::new()
            .prefix("plumb-diff-")
            .tempdir_in(export_root())
            .map_err(|e| format!("cannot make a temporary directory for {rev}: {e}"))?;
        let exported = checkout
            .export(&rev, dir.path())
            .map_err(|e| e.to_string())?;
        if verbosity.verbose > 0 {
            for (path, target) in &exported.skipped_symlinks {
                eprintln!("note: {rev}: symlink {path} -> {target} leaves the tree: not read");
            }
        }
        self.dir = dir.path().to_path_buf();
        self._export = Some(dir);
        Ok(())
    }
}

fn revision_of(r: &GitRevision) -> Revision {
    Revision {
        label: r.label.clone(),
        commit: Some(r.id.clone()),
        short: Some(r.short.clone()),
        summary: Some(r.summary.clone()),
    }
}

/// Where exported revisions go: `TMPDIR` when the user set one, else a memory file system
/// (`XDG_RUNTIME_DIR`, `/dev/shm`) when there is one, else the system's temporary directory.
/// Writing a tree of a thousand small files costs a second on some disks and nothing in
/// memory; the directory is private to the user either way (`0700`).
fn export_root() -> PathBuf {
    if std::env::var_os("TMPDIR").is_some() {
        return std::env::temp_dir();
    }
    let memory = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .into_iter()
        .chain([PathBuf::from("/dev/shm")]);
    for dir in memory {
        let writable = std::fs::metadata(&dir)
            .map(|m| m.is_dir() && !m.permissions().readonly())
            .unwrap_or(false);
        if writable && tempfile::Builder::new().tempdir_in(&dir).is_ok() {
            return dir;
        }
    }
    std::env::temp_dir()
}

/// The two sides the arguments name; `Err` is a message for exit 2.
fn sides(args: &DiffArgs) -> Result<(Side, Side), String> {
    if !args.repo.is_dir() {
        return Err(format!(
            "repository {} is not a directory",
            args.repo.display()
        ));
    }
    let checkout = Checkout::open(&args.repo);
    let work_tree = || Side {
        dir: args.repo.clone(),
        revision: Revision {
            label: "work tree".into(),
            ..Revision::default()
        },
        commit: None,
        _export: None,
    };
    let head = match (&args.head, &checkout) {
        (None, _) => work_tree(),
        (Some(rev), Ok(c)) => Side::of_commit(c.resolve(rev).map_err(|e| e.to_string())?),
        (Some(_), Err(e)) => return Err(format!("--head: {e}")),
    };
    let base = match (&args.base_path, &checkout) {
        (Some(dir), _) => {
            if !dir.is_dir() {
                return Err(format!("--base-path {} is not a directory", dir.display()));
            }
            Side {
                dir: dir.clone(),
                revision: Revision {
                    label: dir.display().to_string(),
                    ..Revision::default()
                },
                commit: None,
                _export: None,
            }
        }
        (None, Ok(c)) => {
            let rev = match &args.base {
                Some(rev) => c.resolve(rev),
                None => c.default_base(),
            }
            .map_err(|e| e.to_string())?;
            Side::of_commit(rev)
        }
        (None, Err(e)) => {
            return Err(format!(
                "{e}\n  = help: without git history, pass the base side as a directory: --base-path DIR"
            ))
        }
    };
    Ok((base, head))
}

/// The entries of `args` that are directories of `dir` (a cluster the other side adds or
/// removes is not an error).
fn entries_in(dir: &Path, entries: &[String]) -> Vec<String> {
    entries
        .iter()
        .filter(|e| plumb_flux::source::join(dir, &plumb_flux::source::clean_relative(e)).is_dir())
        .cloned()
        .collect()
}

pub fn run(args: DiffArgs, color: Color, verbosity: Verbosity) -> ExitCode {
    let (mut base, mut head) = match sides(&args) {
        Ok(sides) => sides,
        Err(message) => {
            crate::report::error(&message);
            return ExitCode::from(2);
        }
    };
    let mode = if args.no_strict {
        Mode::Lenient
    } else {
        Mode::Strict
    };
    // Both sides stand for the checkout holding the repository: its remotes decide which
    // GitRepositories are this repository, the same way on both.
    let checkout = plumb_flux::sync::checkout(&args.repo);
    let renderer = super::helm::renderer(&args.fetch);
    let build_side = |side: &mut Side| {
        let started = Instant::now();
        if let Err(e) = side.export(&args.repo, verbosity) {
            return (Err(e), 0.0);
        }
        let context = format!("{}: ", side.revision.describe());
        if let Some(errors) = super::config::message(&side.dir, &context) {
            return (Err(errors), 0.0);
        }
        let entries = entries_in(&side.dir, &args.entries);
        let result = if !args.entries.is_empty() && entries.is_empty() {
            Ok(None)
        } else {
            match super::build::build_tree(
                &side.dir,
                entries,
                mode,
                &args.fetch,
                Some(checkout.clone()),
                renderer.clone(),
                false,
            ) {
                Ok(build) => Ok(Some(build)),
                // A side with no cluster at all: everything the other side has is new or gone.
                Err(super::build::TreeError::Setup(SetupError::NoEntries)) => Ok(None),
                Err(e) => Err(format!("{}: {e}", side.revision.describe())),
            }
        };
        (result, started.elapsed().as_secs_f64())
    };
    let ((base_build, base_seconds), (head_build, head_seconds)) = std::thread::scope(|s| {
        let b = s.spawn(|| build_side(&mut base));
        let h = build_side(&mut head);
        (
            b.join()
                .unwrap_or((Err("the base build panicked".into()), 0.0)),
            h,
        )
    });
    super::helm::warn_unusable(renderer.as_ref());
    let (base_build, head_build) = match (base_build, head_build) {
        (Ok(b), Ok(h)) => (b, h),
        (Err(e), _) | (_, Err(e)) => {
            crate::report::error(&e);
            return ExitCode::from(2);
        }
    };
    if !args.entries.is_empty()
        && entries_in(&base.dir, &args.entries).is_empty()
        && entries_in(&head.dir, &args.entries).is_empty()
    {
        crate::report::error(&format!(
            "entry path {} is a directory on neither side",
            args.entries.join(", ")
        ));
        return ExitCode::from(2);
    }
    if base_build.is_none() && head_build.is_none() {
        crate::report::error(&SetupError::NoEntries.to_string());
        return ExitCode::from(2);
    }
    let snapshot = |b: &Option<RepositoryBuild>| b.as_ref().map(Snapshot::of).unwrap_or_default();
    let diff = plumb_diff::diff(
        &snapshot(&base_build),
        &snapshot(&head_build),
        &plumb_diff::Options {
            show_noise: args.show_noise,
        },
    );
    let text = match args.output {
        Output::Text => {
            let color = color.for_stdout();
            plumb_diff::text::render(
                &diff,
                &base.revision,
                &head.revision,
                color,
                args.show_noise,
            )
        }
        Output::Markdown => plumb_diff::markdown::render(
            &diff,
            &base.revision,
            &head.revision,
            usize::try_from(args.max_bytes).unwrap_or(usize::MAX),
        ),
        Output::Json => {
            let doc = plumb_diff::json::document(&diff, &base.revision, &head.revision);
            match serde_json::to_string_pretty(&doc) {
                Ok(s) => s + "\n",
                Err(e) => {
                    crate::report::error(&format!("cannot write JSON: {e}"));
                    return ExitCode::from(2);
                }
            }
        }
    };
    let mut out = std::io::stdout().lock();
    if out
        .write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        return ExitCode::from(2);
    }
    if !verbosity.quiet {
        let c = diff.counts();
        eprintln!(
            "plumb diff: {} added, {} changed, {} removed, {} moved; {} danger notes; {} producers not compared (not built, not rendered or failing on a side); built {} in {base_seconds:.2} s and {} in {head_seconds:.2} s",
            c.added,
            c.changed,
            c.removed,
            c.moved,
            diff.dangers.len(),
            diff.uncompared(),
            base.revision.label,
            head.revision.label,
        );
    }
    if args.exit_code && diff.has_changes() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
