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
use std::io::Write;
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
        // As the build reads an entry path.
        let clean = plumb_flux::source::clean_relative(asked);
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
    // The repository's configuration, a wrong revision or kubeconfig are reported before the
    // build, which can take a while.
    if let Err(code) = super::config::validate(&args.repo) {
        return code;
    }
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
    let build = match super::build::build(&args.repo, Vec::new(), Mode::Strict, &args.fetch) {
        Ok(b) => b,
        Err(code) => return code,
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
    let host = match git_host_checks(&args, entry, commit.as_deref()) {
        Ok(Ok(list)) => Ok(list),
        Ok(Err(note)) => {
            notes.push(note.clone());
            Err(note)
        }
        Err(message) => {
            crate::report::error(&message);
            return ExitCode::from(2);
        }
    };
    let claims = match plumb_flux::config::Config::load(&args.repo) {
        Ok(config) => config.claims,
        Err(e) => {
            crate::report::error(&e.to_string());
            return ExitCode::from(2);
        }
    };
    checks.extend(claim_checks(&claims, &host, &live));
    if let Ok(list) = host {
        checks.extend(list.into_iter().map(|c| Check {
            check: c.id,
            subject: c.title,
            outcome: match c.outcome {
                plumb_githost::Outcome::Pass => Outcome::Pass,
                plumb_githost::Outcome::Fail => Outcome::Fail,
                plumb_githost::Outcome::Unknown => Outcome::Unknown,
            },
            evidence: c.evidence,
        }));
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
            let color = color.for_stdout();
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
) -> Result<Result<Vec<plumb_githost::Check>, String>, String> {
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
    Ok(Ok(found))
}

/// Each claim of `.plumb.yaml` proven against what the Git host (`host`: its checks, or why
/// it was not asked) and the cluster said, or failed: a claim nothing could prove fails.
fn claim_checks(
    claims: &plumb_flux::config::Claims,
    host: &Result<Vec<plumb_githost::Check>, String>,
    live: &plumb_live::Live,
) -> Vec<Check> {
    let claim = |subject: String, ok: bool, evidence: Vec<String>| Check {
        check: "claim",
        subject,
        outcome: if ok { Outcome::Pass } else { Outcome::Fail },
        evidence,
    };
    let host_check = |id: &str| -> Result<&plumb_githost::Check, String> {
        match host {
            Ok(list) => list
                .iter()
                .find(|c| c.id == id)
                .ok_or_else(|| format!("the Git host's `{id}` check did not run")),
            Err(why) => Err(format!("not proven: {why}")),
        }
    };
    let mut out = Vec::new();
    for (wanted, id, subject) in [
        (
            claims.branch_protected,
            "branch-protected",
            "branchProtected: the default branch is protected",
        ),
        (
            claims.no_force_push,
            "no-force-push",
            "noForcePush: force pushes to the default branch are refused",
        ),
    ] {
        if !wanted {
            continue;
        }
        out.push(match host_check(id) {
            Ok(c) => claim(
                subject.into(),
                c.outcome == plumb_githost::Outcome::Pass,
                c.evidence.clone(),
            ),
            Err(why) => claim(subject.into(), false, vec![why]),
        });
    }
    if !claims.required_checks.is_empty() {
        let subject = format!("requiredChecks: {}", claims.required_checks.join(", "));
        out.push(match host_check("required-checks") {
            Ok(c) => {
                let missing: Vec<&String> = claims
                    .required_checks
                    .iter()
                    .filter(|r| !c.seen.contains(r))
                    .collect();
                let mut evidence = vec![format!("the host requires: {}", c.seen.join(", "))];
                if !missing.is_empty() {
                    evidence.push(format!(
                        "not required: {}",
                        missing
                            .iter()
                            .map(|m| m.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                claim(subject, missing.is_empty(), evidence)
            }
            Err(why) => claim(subject, false, vec![why]),
        });
    }
    if !claims.runner_online.is_empty() {
        let subject = format!("runnerOnline: {}", claims.runner_online.join(", "));
        out.push(match host_check("runner-online") {
            Ok(c) if c.seen.is_empty() => claim(
                subject,
                false,
                vec!["not proven: no online runner was seen (the host lists runners only when a workflow job needs a self-hosted one)".into()],
            ),
            Ok(c) => {
                let carries = c.seen.iter().any(|set| {
                    let labels: Vec<String> = set.split(',').map(str::to_ascii_lowercase).collect();
                    claims
                        .runner_online
                        .iter()
                        .all(|l| labels.contains(&l.to_ascii_lowercase()))
                });
                claim(
                    subject,
                    carries,
                    vec![format!("online runners' labels: {}", c.seen.join("; "))],
                )
            }
            Err(why) => claim(subject, false, vec![why]),
        });
    }
    for name in &claims.ready {
        let (group, kind, key) = match name.strip_prefix("HelmRelease ") {
            Some(rest) => ("helm.toolkit.fluxcd.io", "HelmRelease", rest),
            None => (
                "kustomize.toolkit.fluxcd.io",
                "Kustomization",
                name.strip_prefix("Kustomization ").unwrap_or(name),
            ),
        };
        let (ns, n) = key.split_once('/').unwrap_or(("flux-system", key));
        let subject = format!("ready: {kind} {ns}/{n}");
        let found = live.list(group, kind).iter().find(|o| {
            o.pointer("/metadata/name").and_then(|v| v.as_str()) == Some(n)
                && o.pointer("/metadata/namespace").and_then(|v| v.as_str()) == Some(ns)
        });
        out.push(match found {
            None => claim(subject, false, vec!["not in the cluster".into()]),
            Some(o) => {
                let ready = o
                    .pointer("/status/conditions")
                    .and_then(|c| c.as_array())
                    .and_then(|c| c.iter().find(|c| c["type"] == "Ready"));
                let status = ready.and_then(|c| c["status"].as_str()).unwrap_or("absent");
                let message = ready.and_then(|c| c["message"].as_str()).unwrap_or("");
                claim(
                    subject,
                    status == "True",
                    vec![format!("Ready={status}: {message}")],
                )
            }
        });
    }
    out
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
