//! `plumb verify`: the live cluster measured against the repository's build, read-only
//! (discovery and one list per kind through the kubeconfig), each check a pass, fail or
//! unknown with the evidence.

use crate::report::Verbosity;
use crate::Color;
use clap::{Args, ValueEnum};
use plumb_flux::build::EntryBuild;
use plumb_flux::varsub::Mode;
use plumb_live::{Check, Outcome};
use serde_json::json;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The repository root.
    #[arg(default_value = ".")]
    pub repo: PathBuf,
    /// The kubeconfig context (default: the current context).
    #[arg(long, value_name = "CTX")]
    pub context: Option<String>,
    /// The kubeconfig file (default: `KUBECONFIG`, else `~/.kube/config`).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The cluster entry path the cluster runs (default: the only one, else the one whose
    /// Kustomizations the cluster has).
    #[arg(long = "entry", value_name = "PATH")]
    pub entry: Option<String>,
    /// The commit the cluster must run (default: the checkout's HEAD).
    #[arg(long, value_name = "REV")]
    pub revision: Option<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
    #[command(flatten)]
    pub fetch: super::fetch::FetchArgs,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Text,
    Json,
}

/// The entry the cluster runs: the one asked for, the only one, else the one with the most
/// of its Kustomizations in the cluster.
fn pick<'a>(
    entries: &'a [EntryBuild],
    asked: Option<&str>,
    live: &plumb_live::Live,
) -> Result<&'a EntryBuild, String> {
    if let Some(asked) = asked {
        let clean = asked.trim_start_matches("./").trim_end_matches('/');
        return entries.iter().find(|e| e.entry == clean).ok_or_else(|| {
            format!(
                "--entry {asked}: not an entry of this build (entries: {})",
                entries
                    .iter()
                    .map(|e| e.entry.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
    }
    let live_ks = live.list("kustomize.toolkit.fluxcd.io", "Kustomization");
    let score = |e: &EntryBuild| {
        e.kustomizations
            .iter()
            .filter(|k| {
                live_ks.iter().any(|o| {
                    o.pointer("/metadata/name").and_then(|v| v.as_str())
                        == Some(k.kustomization.name.as_str())
                        && o.pointer("/metadata/namespace").and_then(|v| v.as_str())
                            == Some(k.kustomization.namespace.as_str())
                })
            })
            .count()
    };
    entries
        .iter()
        .max_by_key(|e| score(e))
        .ok_or_else(|| "the build has no cluster entry".to_string())
}

pub fn run(args: VerifyArgs, color: Color, verbosity: Verbosity) -> ExitCode {
    let build = match super::build::build(&args.repo, Vec::new(), Mode::Strict, &args.fetch) {
        Ok(b) => b,
        Err(code) => return code,
    };
    let commit = match &args.revision {
        Some(rev) => {
            match plumb_source::revision::Checkout::open(&args.repo).and_then(|c| c.resolve(rev)) {
                Ok(r) => Some(r.id),
                Err(e) => {
                    crate::report::error(&e.to_string());
                    return ExitCode::from(2);
                }
            }
        }
        None => plumb_source::revision::Checkout::open(&args.repo)
            .and_then(|c| c.resolve("HEAD"))
            .ok()
            .map(|r| r.id),
    };
    let cluster =
        match plumb_live::Cluster::connect(args.kubeconfig.as_deref(), args.context.as_deref()) {
            Ok(c) => c,
            Err(e) => {
                crate::report::error(&e.to_string());
                return ExitCode::from(2);
            }
        };
    let mut wanted: Vec<(String, String)> = build
        .entries
        .iter()
        .flat_map(plumb_live::checks::wanted)
        .collect();
    wanted.sort();
    wanted.dedup();
    let started = std::time::Instant::now();
    let live = match cluster.read(&wanted) {
        Ok(l) => l,
        Err(e) => {
            crate::report::error(&e.to_string());
            return ExitCode::from(2);
        }
    };
    let entry = match pick(&build.entries, args.entry.as_deref(), &live) {
        Ok(e) => e,
        Err(message) => {
            crate::report::error(&message);
            return ExitCode::from(2);
        }
    };
    let checks = plumb_live::verify(
        entry,
        &live,
        &plumb_live::Expect {
            commit: commit.clone(),
        },
    );
    let seconds = started.elapsed().as_secs_f64();
    let failed = checks.iter().filter(|c| c.outcome == Outcome::Fail).count();
    let text = match args.output {
        Output::Json => {
            let doc = json!({
                "schema": "plumb.verify/v1",
                "server": live.server,
                "entry": entry.entry,
                "commit": commit,
                "summary": {
                    "pass": checks.iter().filter(|c| c.outcome == Outcome::Pass).count(),
                    "fail": failed,
                    "unknown": checks.iter().filter(|c| c.outcome == Outcome::Unknown).count(),
                    "requests": live.requests.len(),
                },
                "checks": checks.iter().map(|c| json!({
                    "check": c.check,
                    "subject": c.subject,
                    "outcome": c.outcome.as_str(),
                    "evidence": c.evidence,
                })).collect::<Vec<_>>(),
                "not_served": live.not_served.iter().map(plumb_live::Kind::resource).collect::<Vec<_>>(),
            });
            serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
        }
        Output::Text => {
            let color = match color {
                Color::Always => true,
                Color::Never => false,
                Color::Auto => {
                    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
                }
            };
            text(
                &checks,
                &live.server,
                &entry.entry,
                commit.as_deref(),
                color,
                verbosity,
            )
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
        eprintln!(
            "plumb verify: {} checks, {failed} failed, against {} ({} requests, {seconds:.2} s)",
            checks.len(),
            live.server,
            live.requests.len()
        );
    }
    if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Grouped by check: failures with their evidence, passes one line each (with `-v` their
/// evidence too).
fn text(
    checks: &[Check],
    server: &str,
    entry: &str,
    commit: Option<&str>,
    color: bool,
    verbosity: Verbosity,
) -> String {
    let paint = |code: &str, s: &str| {
        if color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    };
    let mut out = format!(
        "plumb verify {entry} against {server}{}\n",
        commit
            .map(|c| format!(" at {}", &c[..c.len().min(12)]))
            .unwrap_or_default()
    );
    let mut groups: Vec<&str> = Vec::new();
    for c in checks {
        if !groups.contains(&c.check) {
            groups.push(c.check);
        }
    }
    for g in groups {
        let of: Vec<&Check> = checks.iter().filter(|c| c.check == g).collect();
        let fails = of.iter().filter(|c| c.outcome == Outcome::Fail).count();
        out.push_str(&format!(
            "\n{} ({} of {} pass)\n",
            paint("1", g),
            of.len() - fails,
            of.len()
        ));
        for c in of {
            let (mark, style) = match c.outcome {
                Outcome::Pass => ("✓", "32"),
                Outcome::Fail => ("✗", "31"),
                Outcome::Unknown => ("?", "33"),
            };
            out.push_str(&format!("  {} {}\n", paint(style, mark), c.subject));
            if c.outcome != Outcome::Pass || verbosity.verbose > 0 {
                for e in &c.evidence {
                    out.push_str(&format!("      {e}\n"));
                }
            }
        }
    }
    out
}
