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
    /// The Git host's API, when the source URL does not say it: `github`,
    /// `github+https://ghe.example.com`, `gitea+https://git.example.com` (`forgejo+` too), or an
    /// API base URL. The token comes from `GITHUB_TOKEN`, `GITEA_TOKEN` or `FORGEJO_TOKEN`.
    #[arg(long, value_name = "URL", conflicts_with = "no_git_host")]
    pub git_host: Option<String>,
    /// Do not ask the Git host (branch protection, runners, CI runs).
    #[arg(long)]
    pub no_git_host: bool,
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
    let mut checks = plumb_live::verify(
        entry,
        &live,
        &plumb_live::Expect {
            commit: commit.clone(),
        },
    );
    let seconds = started.elapsed().as_secs_f64();
    let mut notes = Vec::new();
    match git_host_checks(&args, entry, commit.as_deref()) {
        Ok(Ok(list)) => checks.extend(list),
        Ok(Err(note)) => notes.push(note),
        Err(message) => {
            crate::report::error(&message);
            return ExitCode::from(2);
        }
    }
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
    for note in &notes {
        eprintln!("note: {note}");
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

/// The Git host checks: `Ok(Ok(checks))`, `Ok(Err(why not asked))`, or `Err` when the host
/// cannot be asked (unreachable, refused: exit 2).
fn git_host_checks(
    args: &VerifyArgs,
    entry: &EntryBuild,
    commit: Option<&str>,
) -> Result<Result<Vec<Check>, String>, String> {
    if args.no_git_host {
        return Ok(Err("the Git host was not asked (--no-git-host)".into()));
    }
    // The URL of the source that syncs this repository.
    let url = entry
        .sources
        .iter()
        .find(|(s, _)| match &entry.repository_source {
            Some(r) => &s.id == r,
            None => {
                s.id.kind == "GitRepository"
                    && s.id.namespace == "flux-system"
                    && s.id.name == "flux-system"
            }
        })
        .and_then(|(s, _)| s.url.clone());
    let Some(url) = url else {
        return Ok(Err(
            "the Git host was not asked: the repository defines no GitRepository that syncs it"
                .into(),
        ));
    };
    let Some(host) = plumb_githost::Host::from_url(&url, args.git_host.as_deref()) else {
        return Ok(Err(format!(
            "the Git host was not asked: {url} names no owner/repository"
        )));
    };
    if host.token.is_none() && args.git_host.is_none() {
        return Ok(Err(format!(
            "the {} host of {url} was not asked: set {} (read access to the repository, its branch protection, runners and Actions) or pass --git-host",
            host.flavor.name(),
            match host.flavor {
                plumb_githost::Flavor::GitHub => "GITHUB_TOKEN",
                plumb_githost::Flavor::Gitea => "GITEA_TOKEN or FORGEJO_TOKEN",
            }
        )));
    }
    let Some(commit) = commit else {
        return Ok(Err("the Git host was not asked: the repository is not a git checkout, so there is no commit to ask about (pass --revision)".into()));
    };
    let workflows = plumb_githost::workflows(&args.repo, host.flavor).map_err(|e| e.to_string())?;
    let found = plumb_githost::verify(&host, &workflows, commit).map_err(|e| e.to_string())?;
    Ok(Ok(found
        .into_iter()
        .map(|c| Check {
            check: c.id,
            subject: c.title,
            outcome: match c.outcome {
                plumb_githost::Outcome::Pass => Outcome::Pass,
                plumb_githost::Outcome::Fail => Outcome::Fail,
                plumb_githost::Outcome::Unknown => Outcome::Unknown,
            },
            evidence: c.evidence,
        })
        .collect()))
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
