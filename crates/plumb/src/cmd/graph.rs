//! `plumb graph`: the reconciliation graph (sources, Kustomizations, HelmReleases, which one
//! creates which, `dependsOn` and waves) as text, Mermaid or Graphviz DOT.

use clap::{Args, ValueEnum};
use plumb_flux::graph::{self, Format};
use plumb_flux::varsub::Mode;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct GraphArgs {
    /// The repository root.
    #[arg(default_value = ".")]
    pub repo: PathBuf,
    /// An entry path (a cluster directory such as `clusters/dev`), relative to the repository;
    /// repeatable.
    #[arg(long = "entry", value_name = "PATH")]
    pub entries: Vec<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = GraphOutput::Text)]
    pub output: GraphOutput,
    /// Substitute as kustomize-controller before v1.9 (undefined variables are empty).
    #[arg(long)]
    pub no_strict: bool,
    #[command(flatten)]
    pub fetch: super::fetch::FetchArgs,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum GraphOutput {
    Text,
    Mermaid,
    Dot,
    /// Laid out by plumb (waves left to right), no Graphviz needed.
    Svg,
    /// One self-contained page: waves, groups, search, details of a clicked node.
    Html,
}

pub fn run(args: GraphArgs, verbosity: crate::report::Verbosity) -> ExitCode {
    let mode = if args.no_strict {
        Mode::Lenient
    } else {
        Mode::Strict
    };
    let result = match super::build::build(&args.repo, args.entries, mode, &args.fetch) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let format = match args.output {
        GraphOutput::Text => Format::Text,
        GraphOutput::Mermaid => Format::Mermaid,
        GraphOutput::Dot => Format::Dot,
        GraphOutput::Svg => Format::Svg,
        GraphOutput::Html => Format::Html,
    };
    let text = if format == Format::Html {
        // The page shows each Kustomization's `plumb check` findings.
        let findings = match plumb_check::CheckConfig::load(&args.repo) {
            Ok(config) => {
                let selection = plumb_check::Selection::new(&config.rules, &[], &[]);
                let report = plumb_check::Report::run(&result, &config, &selection);
                let mut by: std::collections::HashMap<String, Vec<String>> = Default::default();
                for f in &report.findings {
                    let Some(key) = f.chain.last() else { continue };
                    let place = f
                        .location
                        .as_ref()
                        .map(|l| format!(" ({}:{})", l.file.display(), l.line))
                        .unwrap_or_default();
                    by.entry(key.clone())
                        .or_default()
                        .push(format!("{} {}{place}", f.code, f.message));
                }
                by
            }
            Err(e) => {
                crate::report::error(&format!("findings not shown: {e}"));
                Default::default()
            }
        };
        graph::html::render_with(&result, &findings)
    } else {
        graph::render(&result, format)
    };
    let mut out = std::io::stdout().lock();
    if out
        .write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        return ExitCode::from(2);
    }
    if super::build::report_diagnostics(&result, &result.summary(), verbosity) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
