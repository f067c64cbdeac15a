//! `plumb kustomize build`: a drop-in for `kustomize build`, with kustomize's flags.

use clap::{Subcommand, ValueEnum};
use plumb_kustomize::{BuildOptions, LoadRestrictor, Reorder};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum KustomizeCommand {
    /// Build a kustomization directory and print its resources, byte-identical to kustomize.
    Build {
        /// The directory holding kustomization.yaml.
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Output order: `legacy` sorts by kind as kustomize does by default, `none` keeps the
        /// order of the resources lists. A kustomization's `sortOptions` take precedence, as
        /// in kustomize.
        #[arg(long, value_enum)]
        reorder: Option<ReorderArg>,
        /// Whether files outside a kustomization's directory may be read.
        #[arg(long, value_enum, default_value_t = RestrictorArg::LoadRestrictionsRootOnly)]
        load_restrictor: RestrictorArg,
        /// Remote bases and files (`github.com/org/repo//dir?ref=v1`, `https://…/file.yaml`)
        /// are fetched into plumb's cache, or only read from it with `--offline`.
        #[command(flatten)]
        fetch: super::fetch::FetchArgs,
    },
}

#[derive(Copy, Clone, Debug, ValueEnum)]
pub enum ReorderArg {
    Legacy,
    None,
}

#[derive(Copy, Clone, Debug, ValueEnum)]
#[allow(clippy::enum_variant_names)]
pub enum RestrictorArg {
    #[value(name = "LoadRestrictionsRootOnly")]
    LoadRestrictionsRootOnly,
    #[value(name = "LoadRestrictionsNone")]
    LoadRestrictionsNone,
}

pub fn run(cmd: KustomizeCommand) -> ExitCode {
    match cmd {
        KustomizeCommand::Build {
            dir,
            reorder,
            load_restrictor,
            fetch,
        } => {
            let remote = match fetch.fetcher(&dir) {
                Ok(fetcher) => fetcher.map(|f| f.remote()),
                Err(message) => {
                    crate::report::error(&message);
                    return ExitCode::from(2);
                }
            };
            let options = BuildOptions {
                reorder: match reorder {
                    None => Reorder::Unspecified,
                    Some(ReorderArg::Legacy) => Reorder::Legacy,
                    Some(ReorderArg::None) => Reorder::None,
                },
                load_restrictor: match load_restrictor {
                    RestrictorArg::LoadRestrictionsRootOnly => LoadRestrictor::RootOnly,
                    RestrictorArg::LoadRestrictionsNone => LoadRestrictor::None,
                },
                remote,
                ..BuildOptions::default()
            };
            match plumb_kustomize::build_yaml(&dir, &options) {
                Ok(yaml) => {
                    let mut out = std::io::stdout().lock();
                    if out
                        .write_all(yaml.as_bytes())
                        .and_then(|()| out.flush())
                        .is_err()
                    {
                        return ExitCode::from(2);
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    crate::report::error(&with_entry_position(&e));
                    ExitCode::from(2)
                }
            }
        }
    }
}

/// The error, followed by where the innermost `resources:` entry that led to it is written.
fn with_entry_position(err: &plumb_kustomize::KustomizeError) -> String {
    let mut at = None;
    let mut cur = err;
    while let plumb_kustomize::KustomizeError::Accumulating {
        source, at: here, ..
    } = cur
    {
        at = here.as_ref().or(at);
        cur = source;
    }
    match at {
        Some((file, line)) => format!("{err}\n  --> {}:{line}", file.display()),
        None => err.to_string(),
    }
}
