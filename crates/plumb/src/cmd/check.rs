//! `plumb check`: builds the repository, runs the rules, prints the findings as text, JSON,
//! SARIF or GitHub annotations. Exit 0 when no finding is an error, 1 when one is, 2 for a
//! usage or configuration error.

use crate::Color;
use clap::{Args, ValueEnum};
use plumb_check::render::{self, text::TextOptions};
use plumb_check::{CheckConfig, Report, Selection};
use plumb_flux::varsub::Mode;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The repository root.
    #[arg(default_value = ".")]
    pub repo: PathBuf,
    /// An entry path (a cluster directory such as `clusters/dev`), relative to the repository;
    /// repeatable. Without it: `.plumb.yaml`'s `clusters:`, else every directory a Kustomization or
    /// FluxInstance in the repository syncs.
    #[arg(long = "entry", value_name = "PATH")]
    pub entries: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Only these rules: codes or prefixes, comma-separated (`SUB,PIN001`), repeatable; replaces
    /// `.plumb.yaml`'s `rules.select`.
    #[arg(long, value_name = "CODES", value_delimiter = ',')]
    pub select: Vec<String>,
    /// Not these rules: codes or prefixes, comma-separated, repeatable; added to `rules.ignore`.
    #[arg(long, value_name = "CODES", value_delimiter = ',')]
    pub ignore: Vec<String>,
    /// Exit 0 even when findings are errors (configuration errors still exit 2).
    #[arg(long)]
    pub exit_zero: bool,
    /// Instead of the findings, how many of each code, most frequent first (text or json).
    #[arg(long)]
    pub statistics: bool,
    /// Substitute as kustomize-controller before v1.9 (Flux 2.9): an undefined variable is
    /// an empty string instead of an error.
    #[arg(long)]
    pub no_strict: bool,
    #[command(flatten)]
    pub fetch: super::fetch::FetchArgs,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// rustc-style diagnostics.
    Text,
    /// The `plumb.check/v1` document (docs/check.md).
    Json,
    /// SARIF 2.1.0.
    Sarif,
    /// GitHub Actions workflow commands (annotations).
    Github,
}

pub fn run(args: CheckArgs, color: Color, verbosity: crate::report::Verbosity) -> ExitCode {
    if let Err(code) = super::config::validate(&args.repo) {
        return code;
    }
    let config = match CheckConfig::load(&args.repo) {
        Ok(c) => c,
        Err(e) => {
            crate::report::error(&e.to_string());
            return ExitCode::from(2);
        }
    };
    let codes: Vec<String> = args
        .select
        .iter()
        .chain(&args.ignore)
        .map(|c| c.trim().to_string())
        .collect();
    for code in codes.iter().filter(|c| !c.is_empty()) {
        if let Err(e) = plumb_check::selection::check_code(code) {
            crate::report::error(&format!("--select/--ignore: {e}"));
            return ExitCode::from(2);
        }
    }
    if args.statistics && !matches!(args.format, Format::Text | Format::Json) {
        crate::report::error("--statistics prints text or json: not with --format sarif or github");
        return ExitCode::from(2);
    }
    let mode = if args.no_strict {
        Mode::Lenient
    } else {
        Mode::Strict
    };
    let build = match crate::cmd::build::build(&args.repo, args.entries, mode, &args.fetch) {
        Ok(b) => b,
        Err(code) => return code,
    };
    let clean = |v: &[String]| -> Vec<String> {
        v.iter()
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .collect()
    };
    let selection = Selection::new(&config.rules, &clean(&args.select), &clean(&args.ignore));
    let rules_started = std::time::Instant::now();
    let mut report = Report::run(&build, &config, &selection);
    crate::report::stage("rules", rules_started.elapsed().as_secs_f64());
    let output_started = std::time::Instant::now();
    let text = match args.format {
        Format::Text if args.statistics => render::statistics::text(&report),
        Format::Json if args.statistics => json_text(&render::statistics::json(&report)),
        Format::Text => {
            let color = color.for_stdout();
            render::text::render(&mut report, TextOptions { color })
        }
        Format::Json => json_text(&render::json::render(&report)),
        Format::Sarif => json_text(&render::sarif::render(&report)),
        Format::Github => {
            let prefix = if args.repo.is_relative() {
                args.repo.clone()
            } else {
                PathBuf::new()
            };
            render::github::render(&report, &prefix)
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
    crate::report::stage("output", output_started.elapsed().as_secs_f64());
    crate::report::notes(&build, verbosity);
    let s = build.summary();
    let mut line = format!(
        "checked {} of {} Kustomizations in {} cluster{}",
        s.built,
        s.kustomizations,
        s.clusters,
        if s.clusters == 1 { "" } else { "s" }
    );
    if s.failed + s.not_built + s.unavailable > 0 {
        line.push_str(&format!(
            "; not checked: {} failed to build, {} not built, {} unavailable (-v lists them)",
            s.failed, s.not_built, s.unavailable
        ));
    }
    let unchecked = [
        (s.entries_failed, "that failed to build"),
        (s.entries_not_built, "not built (a resource not fetched)"),
        (
            s.entries_unavailable,
            "unavailable (a resource could not be fetched)",
        ),
    ];
    for (n, why) in unchecked.into_iter().filter(|&(n, _)| n > 0) {
        let noun = match n {
            1 => "entry directory",
            _ => "entry directories",
        };
        line.push_str(&format!("; not checked: {n} {noun} {why}"));
    }
    if s.releases > 0 {
        line.push_str(&format!(
            "; {} of {} HelmRelease{} rendered and checked",
            s.rendered,
            s.releases,
            if s.releases == 1 { "" } else { "s" }
        ));
        let not = [
            (s.releases_failed, "failed"),
            (s.releases_unavailable, "chart unavailable"),
            (s.releases_not_rendered, "not rendered"),
        ];
        let not: Vec<String> = not
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, why)| format!("{n} {why}"))
            .collect();
        if !not.is_empty() {
            line.push_str(&format!(" ({})", not.join(", ")));
        }
    }
    crate::report::summary(&build, verbosity, &line);
    if report.errors() > 0 && !args.exit_zero {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn json_text(value: &serde_json::Value) -> String {
    // Serialising a `Value` cannot fail: its keys are strings.
    serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
}
