//! The checks: what the host says about the default branch's protection, the runners and the CI
//! runs, set against what the repository's workflows assume.

use crate::client::Client;
use crate::error::HostError;
use crate::glob;
use crate::host::{Flavor, Host};
use crate::workflow::{Job, Workflow};
use serde_json::Value;
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The host agrees with the repository.
    Pass,
    /// The host and the repository disagree; the evidence says where.
    Fail,
    /// The host could not answer this one; the evidence says why.
    Unknown,
}

impl Outcome {
    /// `pass`, `fail` or `unknown`, as text and JSON output name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Unknown => "unknown",
        }
    }
}

/// One question asked of the host, its answer and what was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// Stable id: `branch-protected`, `required-checks`, `no-force-push`, `runner-online`,
    /// `ci-ran`, `coverage-gap`.
    pub id: &'static str,
    pub title: String,
    pub outcome: Outcome,
    /// What was seen: the API path asked, the field, its value.
    pub evidence: Vec<String>,
    /// The host's own list behind the check, for claims to be proven against: the required
    /// status contexts (`required-checks`), the label sets of the runners that take jobs
    /// (`runner-online`, labels joined by `,`; only when the runners were listed).
    pub seen: Vec<String>,
}

impl Check {
    fn new(id: &'static str, title: String, outcome: Outcome, evidence: Vec<String>) -> Check {
        Check {
            id,
            title,
            outcome,
            evidence,
            seen: Vec::new(),
        }
    }

    fn with_seen(mut self, seen: Vec<String>) -> Check {
        self.seen = seen;
        self
    }
}

/// How many of the most recent runs the coverage-gap check looks at.
const RECENT_RUNS: usize = 10;

/// Every check for `commit` (full hex). Errors only when the host cannot be asked at all
/// (unreachable, forbidden, the repository not found); a check the host cannot answer is
/// [`Outcome::Unknown`] with why.
pub fn verify(host: &Host, workflows: &[Workflow], commit: &str) -> Result<Vec<Check>, HostError> {
    let client = Client::new(host)?;
    let asker = Asker { host, client };
    let repo_url = asker.client.repo_url("");
    let repo = asker
        .client
        .get(&repo_url, asker.permission(Call::Repo))?
        .ok_or_else(|| HostError::Protocol {
            url: repo_url.clone(),
            message: "repository not found (or the token cannot see it)".into(),
        })?;
    let branch = repo
        .get("default_branch")
        .and_then(Value::as_str)
        .filter(|b| !b.is_empty())
        .ok_or_else(|| HostError::Protocol {
            url: repo_url.clone(),
            message: "the repository has no `default_branch`".into(),
        })?
        .to_string();

    let protection = asker.protection(&branch)?;
    let mut checks = vec![
        branch_protected(&protection),
        required_checks(host.flavor, &protection, workflows),
        no_force_push(&protection),
        asker.runner_online(workflows)?,
    ];
    if workflows.is_empty() {
        // Nothing in the repository says CI should run; the host's runs would prove nothing.
        let why = vec!["the repository declares no workflow".to_string()];
        checks.push(Check::new(
            "ci-ran",
            format!("the CI run for {} ran every job", short(commit)),
            Outcome::Unknown,
            why.clone(),
        ));
        checks.push(Check::new(
            "coverage-gap",
            format!("no job was skipped in each of the last {RECENT_RUNS} runs"),
            Outcome::Unknown,
            why,
        ));
    } else {
        checks.extend(asker.ci(commit)?);
    }
    Ok(checks)
}

/// The API calls, for the permission each needs.
#[derive(Clone, Copy)]
enum Call {
    Repo,
    Protection,
    Runners,
    Runs,
}

struct Asker<'a> {
    host: &'a Host,
    client: Client<'a>,
}

/// The default branch's protection as both hosts describe it.
struct Protection {
    branch: String,
    /// Where it was read, `GET /repos/o/r/...`.
    source: String,
    rule: Option<Rule>,
    /// Why the protection could not be read, when it could not: its checks are then Unknown.
    unreadable: Option<String>,
}

impl Protection {
    fn unreadable(branch: &str, source: String, why: String) -> Protection {
        Protection {
            branch: branch.to_string(),
            source,
            rule: None,
            unreadable: Some(why),
        }
    }

    /// The Unknown check `id` when the protection could not be read.
    fn unknown(&self, id: &'static str, title: &str) -> Option<Check> {
        self.unreadable
            .as_ref()
            .map(|why| Check::new(id, title.to_string(), Outcome::Unknown, vec![why.clone()]))
    }
}

struct Rule {
    /// How the host names the rule (Gitea's rule name, which may be a glob).
    name: String,
    /// The required status contexts; `None` when status checks are not required at all.
    required: Option<Vec<String>>,
    required_evidence: String,
    force_push_allowed: bool,
    force_push_evidence: String,
}

impl Asker<'_> {
    fn permission(&self, call: Call) -> &'static str {
        match (self.host.flavor, call) {
            (Flavor::GitHub, Call::Repo) => "metadata:read (classic tokens: the repo scope for a private repository)",
            (Flavor::GitHub, Call::Protection) => "administration:read (classic tokens: the repo scope, and admin access to the repository)",
            (Flavor::GitHub, Call::Runners) => "administration:read (classic tokens: the repo scope, and admin access to the repository)",
            (Flavor::GitHub, Call::Runs) => "actions:read (classic tokens: the repo scope for a private repository)",
            (Flavor::Gitea, Call::Repo) => "read:repository",
            (Flavor::Gitea, Call::Protection) => "read:repository, from a user with admin rights on the repository",
            (Flavor::Gitea, Call::Runners) => "read:repository, from a user with admin rights on the repository (read:admin for the instance's runners)",
            (Flavor::Gitea, Call::Runs) => "read:repository",
        }
    }

    /// `url` as evidence: the API path, without the base.
    fn shown(&self, url: &str) -> String {
        format!("GET {}", url.strip_prefix(&self.host.api).unwrap_or(url))
    }

    fn get(&self, url: &str, call: Call) -> Result<Option<Value>, HostError> {
        self.client.get(url, self.permission(call))
    }

    /// [`Asker::get`] for a call one check depends on: an answer that cannot be read is
    /// `Err(why)`, for that check to report as Unknown; only an unreachable host or a refused
    /// token stop `verify`.
    fn get_soft(&self, url: &str, call: Call) -> Result<Result<Option<Value>, String>, HostError> {
        match self.get(url, call) {
            Ok(v) => Ok(Ok(v)),
            Err(HostError::Protocol { message, .. }) => {
                Ok(Err(format!("{}: {message}", self.shown(url))))
            }
            Err(e) => Err(e),
        }
    }

    fn protection(&self, branch: &str) -> Result<Protection, HostError> {
        match self.host.flavor {
            Flavor::GitHub => {
                let escaped = path_escape(branch);
                let url = self
                    .client
                    .repo_url(&format!("/branches/{escaped}/protection"));
                let source = self.shown(&url);
                let classic = match self.get_soft(&url, Call::Protection)? {
                    Ok(v) => v,
                    Err(why) => return Ok(Protection::unreadable(branch, source, why)),
                };
                // Rulesets protect branches without any classic protection (which then answers
                // 404); the rules in effect for a branch are listed separately.
                let rules_url = self.client.repo_url(&format!("/rules/branches/{escaped}"));
                let rules = match self.get_soft(&rules_url, Call::Repo)? {
                    Ok(v) => v,
                    Err(why) => return Ok(Protection::unreadable(branch, source, why)),
                };
                let rules = rules
                    .as_ref()
                    .and_then(Value::as_array)
                    .map_or(&[][..], Vec::as_slice);
                Ok(Protection {
                    unreadable: None,
                    branch: branch.to_string(),
                    source: format!("{source} and {}", self.shown(&rules_url)),
                    rule: github_rule(classic.as_ref(), rules),
                })
            }
            Flavor::Gitea => {
                let url = self.client.repo_url("/branch_protections");
                let source = self.shown(&url);
                let list = match self.get_soft(&url, Call::Protection)? {
                    Ok(v) => v.unwrap_or(Value::Array(Vec::new())),
                    Err(why) => return Ok(Protection::unreadable(branch, source, why)),
                };
                let Some(rules) = list.as_array() else {
                    let why = format!("{source}: the answer is not a list");
                    return Ok(Protection::unreadable(branch, source, why));
                };
                Ok(Protection {
                    unreadable: None,
                    branch: branch.to_string(),
                    source,
                    rule: gitea_rule(branch, rules),
                })
            }
        }
    }

    fn runner_online(&self, workflows: &[Workflow]) -> Result<Check, HostError> {
        let title = "an online runner serves every job's runs-on labels".to_string();
        let mut evidence = Vec::new();
        let mut needing: Vec<(&Workflow, &Job)> = Vec::new();
        let mut dynamic = false;
        for wf in workflows {
            for job in &wf.jobs {
                if job.runs_on.is_empty() {
                    continue;
                }
                let place = job_place(wf, job);
                if job.runs_on_is_dynamic() {
                    dynamic = true;
                    evidence.push(format!(
                        "job `{}` ({place}) runs-on {:?} is decided at run time: not matched",
                        job.name, job.runs_on
                    ));
                } else if self.host.flavor == Flavor::GitHub && github_hosted(&job.runs_on) {
                    evidence.push(format!(
                        "job `{}` ({place}) runs-on {:?}: a GitHub-hosted runner, no self-hosted runner needed",
                        job.name, job.runs_on
                    ));
                } else {
                    needing.push((wf, job));
                }
            }
        }
        if needing.is_empty() {
            if evidence.is_empty() {
                evidence.push("no workflow job needs a runner".into());
            }
            let outcome = if dynamic {
                Outcome::Unknown
            } else {
                Outcome::Pass
            };
            return Ok(Check::new("runner-online", title, outcome, evidence));
        }
        let url = format!(
            "{}?{}",
            self.client.repo_url("/actions/runners"),
            self.page_size(100)
        );
        let shown = self.shown(&url);
        let answer = match self.get_soft(&url, Call::Runners)? {
            Ok(answer) => answer,
            Err(why) => {
                evidence.push(why);
                return Ok(Check::new(
                    "runner-online",
                    title,
                    Outcome::Unknown,
                    evidence,
                ));
            }
        };
        let Some(body) = answer else {
            evidence.push(match self.host.flavor {
                Flavor::Gitea => format!("{shown}: 404: this Gitea/Forgejo has no runner API (Gitea 1.25 added it), so runners cannot be checked"),
                Flavor::GitHub => format!("{shown}: 404: Actions runners cannot be listed for this repository"),
            });
            return Ok(Check::new(
                "runner-online",
                title,
                Outcome::Unknown,
                evidence,
            ));
        };
        let runners = match runners(&body) {
            Some(r) => r,
            None => {
                evidence.push(format!("{shown}: the answer has no `runners` list"));
                return Ok(Check::new(
                    "runner-online",
                    title,
                    Outcome::Unknown,
                    evidence,
                ));
            }
        };
        evidence.push(format!(
            "{shown}: {}",
            if runners.is_empty() {
                "no runners".to_string()
            } else {
                runners
                    .iter()
                    .map(|r| format!("`{}` {} {:?}", r.name, r.status, r.labels))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ));
        let case_insensitive = self.host.flavor == Flavor::GitHub;
        let mut failed = false;
        for (wf, job) in needing {
            let place = job_place(wf, job);
            let carrying: Vec<&Runner> = runners
                .iter()
                .filter(|r| r.carries(&job.runs_on, case_insensitive))
                .collect();
            match carrying.iter().find(|r| r.takes_jobs()) {
                Some(r) => evidence.push(format!(
                    "job `{}` ({place}) runs-on {:?}: runner `{}` is online with {:?}",
                    job.name, job.runs_on, r.name, r.labels
                )),
                None => {
                    failed = true;
                    let offline: Vec<String> = carrying
                        .iter()
                        .map(|r| {
                            let state = if r.disabled {
                                format!("{} and disabled", r.status)
                            } else {
                                r.status.clone()
                            };
                            format!("`{}` has the labels but is {state}", r.name)
                        })
                        .collect();
                    evidence.push(format!(
                        "job `{}` ({place}) runs-on {:?}: no online runner carries these labels{}",
                        job.name,
                        job.runs_on,
                        if offline.is_empty() {
                            String::new()
                        } else {
                            format!("; {}", offline.join("; "))
                        }
                    ));
                }
            }
        }
        let outcome = if failed {
            evidence.push("only the repository's own runners are listed here: a runner of the owner or the instance is not visible".into());
            Outcome::Fail
        } else if dynamic {
            Outcome::Unknown
        } else {
            Outcome::Pass
        };
        let online = runners
            .iter()
            .filter(|r| r.takes_jobs())
            .map(|r| r.labels.join(","))
            .collect();
        Ok(Check::new("runner-online", title, outcome, evidence).with_seen(online))
    }

    /// The page-size query parameter: GitHub's `per_page`, Gitea's `limit`.
    fn page_size(&self, n: usize) -> String {
        match self.host.flavor {
            Flavor::GitHub => format!("per_page={n}"),
            Flavor::Gitea => format!("limit={n}"),
        }
    }

    /// `ci-ran` and `coverage-gap`.
    fn ci(&self, commit: &str) -> Result<Vec<Check>, HostError> {
        let ran_title = format!("the CI run for {} ran every job", short(commit));
        let gap_title = format!("no job was skipped in each of the last {RECENT_RUNS} runs");
        let url = format!(
            "{}?head_sha={commit}&{}",
            self.client.repo_url("/actions/runs"),
            self.page_size(100)
        );
        let shown = self.shown(&url);
        let answer = match self.get_soft(&url, Call::Runs)? {
            Ok(answer) => answer,
            Err(why) => {
                return Ok(vec![
                    Check::new("ci-ran", ran_title, Outcome::Unknown, vec![why.clone()]),
                    Check::new("coverage-gap", gap_title, Outcome::Unknown, vec![why]),
                ])
            }
        };
        let Some(body) = answer else {
            if self.host.flavor == Flavor::Gitea {
                return self.ci_from_tasks(commit, ran_title, gap_title);
            }
            let why = format!("{shown}: 404: workflow runs cannot be listed for this repository");
            return Ok(vec![
                Check::new("ci-ran", ran_title, Outcome::Unknown, vec![why.clone()]),
                Check::new("coverage-gap", gap_title, Outcome::Unknown, vec![why]),
            ]);
        };
        let mut jobs_of: BTreeMap<u64, Vec<RunJob>> = BTreeMap::new();
        let ran = match runs(&body) {
            None => Check::new(
                "ci-ran",
                ran_title,
                Outcome::Unknown,
                vec![format!("{shown}: the answer has no `workflow_runs` list")],
            ),
            Some(all) => {
                // A host that ignores the filter must not make another commit's run count.
                let runs: Vec<Run> = all
                    .into_iter()
                    .filter(|r| r.head_sha.eq_ignore_ascii_case(commit))
                    .collect();
                if runs.is_empty() {
                    Check::new(
                        "ci-ran",
                        ran_title,
                        Outcome::Fail,
                        vec![format!("{shown}: no workflow run for commit {commit}")],
                    )
                } else {
                    let mut evidence = Vec::new();
                    let mut outcome = Outcome::Pass;
                    for run in &runs {
                        let (jobs, seen) = self.jobs(run.id)?;
                        match jobs {
                            None => {
                                evidence.push(format!(
                                    "{seen}: the jobs of run {} cannot be read",
                                    run.id
                                ));
                                if outcome == Outcome::Pass {
                                    outcome = Outcome::Unknown;
                                }
                            }
                            Some(jobs) => {
                                let verdict = judge_run(run, &jobs, &seen, &mut evidence);
                                if !verdict {
                                    outcome = Outcome::Fail;
                                }
                                jobs_of.insert(run.id, jobs);
                            }
                        }
                    }
                    Check::new("ci-ran", ran_title, outcome, evidence)
                }
            }
        };
        let gap = self.coverage_gap(gap_title, &mut jobs_of)?;
        Ok(vec![ran, gap])
    }

    /// The jobs of run `id` (latest attempt), and the evidence path.
    fn jobs(&self, id: u64) -> Result<(Option<Vec<RunJob>>, String), HostError> {
        let url = format!(
            "{}?{}",
            self.client.repo_url(&format!("/actions/runs/{id}/jobs")),
            self.page_size(100)
        );
        let shown = self.shown(&url);
        Ok(match self.get_soft(&url, Call::Runs)? {
            Ok(body) => (body.as_ref().and_then(run_jobs), shown),
            Err(why) => (None, why),
        })
    }

    fn coverage_gap(
        &self,
        title: String,
        known: &mut BTreeMap<u64, Vec<RunJob>>,
    ) -> Result<Check, HostError> {
        let url = format!(
            "{}?{}",
            self.client.repo_url("/actions/runs"),
            self.page_size(RECENT_RUNS)
        );
        let shown = self.shown(&url);
        let recent = match self
            .get_soft(&url, Call::Runs)?
            .ok()
            .flatten()
            .as_ref()
            .and_then(runs)
        {
            Some(r) => r,
            None => {
                return Ok(Check::new(
                    "coverage-gap",
                    title,
                    Outcome::Unknown,
                    vec![format!("{shown}: no list of workflow runs")],
                ))
            }
        };
        let recent: Vec<Run> = recent.into_iter().take(RECENT_RUNS).collect();
        if recent.is_empty() {
            return Ok(Check::new(
                "coverage-gap",
                title,
                Outcome::Unknown,
                vec![format!("{shown}: no runs to look at")],
            ));
        }
        // job name → (runs it appears in, runs it was skipped in)
        let mut tally: BTreeMap<String, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
        let mut unreadable = Vec::new();
        for run in &recent {
            let jobs = match known.entry(run.id) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => match self.jobs(run.id)? {
                    (Some(jobs), _) => e.insert(jobs),
                    (None, seen) => {
                        unreadable.push(seen);
                        continue;
                    }
                },
            };
            for job in jobs.iter() {
                let entry = tally.entry(job.name.clone()).or_default();
                entry.0.push(run.id);
                if job.conclusion.as_deref() == Some("skipped") {
                    entry.1.push(run.id);
                }
            }
        }
        let mut evidence = vec![format!(
            "{shown}: runs {}",
            recent
                .iter()
                .map(|r| r.id.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )];
        evidence.extend(
            unreadable
                .into_iter()
                .map(|s| format!("{s}: jobs cannot be read")),
        );
        let mut outcome = Outcome::Pass;
        for (name, (seen, skipped)) in &tally {
            if !seen.is_empty() && seen.len() == skipped.len() {
                outcome = Outcome::Fail;
                evidence.push(format!(
                    "job `{name}` was skipped in every one of the {} recent runs it appears in ({}): it reports success and tests nothing",
                    seen.len(),
                    seen.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
                ));
            }
        }
        if outcome == Outcome::Pass {
            evidence.push(format!(
                "every job ran in at least one of the last {} runs",
                recent.len()
            ));
        }
        Ok(Check::new("coverage-gap", title, outcome, evidence))
    }

    /// Gitea before the `/actions/runs` API (1.25) lists tasks: one per job a runner took.
    fn ci_from_tasks(
        &self,
        commit: &str,
        ran_title: String,
        gap_title: String,
    ) -> Result<Vec<Check>, HostError> {
        let url = format!(
            "{}?{}",
            self.client.repo_url("/actions/tasks"),
            self.page_size(50)
        );
        let shown = self.shown(&url);
        let caveat = "this Gitea/Forgejo has no /actions/runs API; its tasks list only the jobs a runner took, so a skipped job is not seen";
        let gap = Check::new(
            "coverage-gap",
            gap_title,
            Outcome::Unknown,
            vec![caveat.to_string()],
        );
        let tasks = match self.get_soft(&url, Call::Runs)? {
            Err(why) => {
                return Ok(vec![
                    Check::new("ci-ran", ran_title, Outcome::Unknown, vec![why]),
                    gap,
                ]);
            }
            Ok(None) => {
                let why = format!("{shown}: 404: this Gitea/Forgejo has no Actions API");
                return Ok(vec![
                    Check::new("ci-ran", ran_title, Outcome::Unknown, vec![why]),
                    gap,
                ]);
            }
            Ok(Some(body)) => body.get("workflow_runs").and_then(Value::as_array).cloned(),
        };
        let Some(tasks) = tasks else {
            let why = format!("{shown}: the answer has no `workflow_runs` list");
            return Ok(vec![
                Check::new("ci-ran", ran_title, Outcome::Unknown, vec![why]),
                gap,
            ]);
        };
        let mine: Vec<&Value> = tasks
            .iter()
            .filter(|t| str_field(t, "head_sha").eq_ignore_ascii_case(commit))
            .collect();
        let mut evidence = vec![caveat.to_string()];
        if mine.is_empty() {
            evidence.push(format!(
                "{shown}: no task for commit {commit} among the latest {}",
                tasks.len()
            ));
            return Ok(vec![
                Check::new("ci-ran", ran_title, Outcome::Fail, evidence),
                gap,
            ]);
        }
        let mut outcome = Outcome::Pass;
        for task in mine {
            let name = str_field(task, "name");
            let status = str_field(task, "status");
            let verdict = match status {
                "success" => "ran and succeeded",
                "skipped" => "was skipped (a skipped job reports success)",
                "running" | "waiting" | "blocked" => "has not concluded",
                _ => "did not succeed",
            };
            if status != "success" {
                outcome = Outcome::Fail;
            }
            evidence.push(format!(
                "{shown}: task {} `{name}` (run {}) status = {status}: {verdict}",
                task.get("id").and_then(Value::as_u64).unwrap_or(0),
                task.get("run_number").and_then(Value::as_u64).unwrap_or(0),
            ));
        }
        Ok(vec![
            Check::new("ci-ran", ran_title, outcome, evidence),
            gap,
        ])
    }
}

fn branch_protected(p: &Protection) -> Check {
    let title = format!("the default branch `{}` is protected", p.branch);
    if let Some(unknown) = p.unknown("branch-protected", &title) {
        return unknown;
    }
    match &p.rule {
        Some(rule) => Check::new(
            "branch-protected",
            title,
            Outcome::Pass,
            vec![format!(
                "{}: rule `{}` covers `{}`",
                p.source, rule.name, p.branch
            )],
        ),
        None => Check::new(
            "branch-protected",
            title,
            Outcome::Fail,
            vec![format!("{}: no protection covers `{}`", p.source, p.branch)],
        ),
    }
}

fn no_force_push(p: &Protection) -> Check {
    let title = format!("force pushes to `{}` are refused", p.branch);
    if let Some(unknown) = p.unknown("no-force-push", &title) {
        return unknown;
    }
    match &p.rule {
        None => Check::new(
            "no-force-push",
            title,
            Outcome::Fail,
            vec![format!(
                "{}: `{}` is not protected: anyone with write access can force-push",
                p.source, p.branch
            )],
        ),
        Some(rule) => Check::new(
            "no-force-push",
            title,
            if rule.force_push_allowed {
                Outcome::Fail
            } else {
                Outcome::Pass
            },
            vec![format!("{}: {}", p.source, rule.force_push_evidence)],
        ),
    }
}

/// The status contexts a job reports on a commit to `branch`, as the host names them.
fn contexts(flavor: Flavor, wf: &Workflow, job: &Job, branch: &str) -> Vec<String> {
    match flavor {
        Flavor::GitHub => vec![job.name.clone()],
        Flavor::Gitea => wf
            .commit_events_for(branch)
            .into_iter()
            .map(|event| format!("{} / {} ({event})", wf.name, job.name))
            .collect(),
    }
}

/// Whether the required context (GitHub: a name; Gitea: a glob pattern) is one the job reports.
fn requires(flavor: Flavor, required: &str, job: &Job, reported: &[String]) -> bool {
    match flavor {
        // A job calling a reusable workflow reports `caller / called`.
        Flavor::GitHub if job.uses.is_some() => required.starts_with(&format!("{} / ", job.name)),
        Flavor::GitHub => reported
            .iter()
            .any(|c| required == c || (job.matrix && required.starts_with(&format!("{c} (")))),
        Flavor::Gitea => reported.iter().any(|c| glob::matches(required, c, None)),
    }
}

fn required_checks(flavor: Flavor, p: &Protection, workflows: &[Workflow]) -> Check {
    let title = format!(
        "the checks of the repository's workflows are required on `{}`",
        p.branch
    );
    if let Some(unknown) = p.unknown("required-checks", &title) {
        return unknown;
    }
    let Some(rule) = &p.rule else {
        return Check::new(
            "required-checks",
            title,
            Outcome::Fail,
            vec![format!(
                "{}: `{}` is not protected: no check is required",
                p.source, p.branch
            )],
        );
    };
    let mut evidence = vec![format!("{}: {}", p.source, rule.required_evidence)];
    let required = rule.required.clone().unwrap_or_default();
    let mut missing = Vec::new();
    let mut dynamic = false;
    let mut provided_by_workflows = vec![false; required.len()];
    for wf in workflows {
        if wf.commit_events_for(&p.branch).is_empty() {
            evidence.push(format!(
                "{} does not run on pushes or pull requests to `{}`: its jobs cannot be required",
                wf.path.display(),
                p.branch
            ));
            continue;
        }
        for job in &wf.jobs {
            let reported = contexts(flavor, wf, job, &p.branch);
            if flavor == Flavor::Gitea && job.uses.is_some() {
                dynamic = true;
                evidence.push(format!(
                    "job `{}` ({}) calls a reusable workflow: its checks' names are not known",
                    job.name,
                    job_place(wf, job)
                ));
                continue;
            }
            if job.name.contains("${{") {
                dynamic = true;
                evidence.push(format!(
                    "job `{}` ({}) is named at run time: its check name is not known",
                    job.name,
                    job_place(wf, job)
                ));
                continue;
            }
            let mut found = false;
            for (i, r) in required.iter().enumerate() {
                if requires(flavor, r, job, &reported) {
                    found = true;
                    provided_by_workflows[i] = true;
                }
            }
            if !found {
                missing.push(format!(
                    "`{}` ({})",
                    reported
                        .first()
                        .cloned()
                        .unwrap_or_else(|| job.name.clone()),
                    job_place(wf, job)
                ));
            }
        }
    }
    for (r, provided) in required.iter().zip(&provided_by_workflows) {
        if !provided {
            evidence.push(format!(
                "required `{r}` is reported by no workflow job of this repository (another app may report it)"
            ));
        }
    }
    let outcome = if !missing.is_empty() {
        evidence.push(format!("not required: {}", missing.join(", ")));
        Outcome::Fail
    } else if dynamic {
        Outcome::Unknown
    } else {
        Outcome::Pass
    };
    Check::new("required-checks", title, outcome, evidence).with_seen(required)
}

/// GitHub's protection of a branch: the classic branch protection object
/// (`required_status_checks.{contexts, checks[].context}`, `allow_force_pushes.enabled`) and the
/// ruleset rules in effect (`required_status_checks` rules'
/// `parameters.required_status_checks[].context`, a `non_fast_forward` rule). Rules add up: a
/// check required by either is required, a force push refused by either is refused.
fn github_rule(classic: Option<&Value>, rules: &[Value]) -> Option<Rule> {
    if classic.is_none() && rules.is_empty() {
        return None;
    }
    let mut required: Option<Vec<String>> = None;
    let mut add = |names: &mut dyn Iterator<Item = String>| {
        let list = required.get_or_insert_with(Vec::new);
        for name in names {
            if !list.contains(&name) {
                list.push(name);
            }
        }
    };
    let mut required_evidence = Vec::new();
    let mut force_evidence = Vec::new();
    let mut force_allowed = true;
    let mut names = Vec::new();
    if let Some(p) = classic {
        names.push("branch protection".to_string());
        match p.get("required_status_checks").filter(|c| !c.is_null()) {
            Some(c) => {
                let contexts: Vec<String> = string_list(c, "contexts")
                    .into_iter()
                    .chain(
                        c.get("checks")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .filter_map(|k| k.get("context").and_then(Value::as_str))
                            .map(str::to_string),
                    )
                    .collect();
                add(&mut contexts.iter().cloned());
                let mut unique: Vec<String> = Vec::new();
                for c in contexts {
                    if !unique.contains(&c) {
                        unique.push(c);
                    }
                }
                required_evidence.push(format!("required_status_checks.contexts = {unique:?}"));
            }
            None => required_evidence
                .push("required_status_checks is absent: no check is required".to_string()),
        }
        let force = p
            .get("allow_force_pushes")
            .and_then(|f| f.get("enabled"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        force_allowed &= force;
        force_evidence.push(format!("allow_force_pushes.enabled = {force}"));
    }
    let mut ruleset_blocks = false;
    for rule in rules {
        let id = rule.get("ruleset_id").and_then(Value::as_u64).unwrap_or(0);
        let source = str_field(rule, "ruleset_source");
        let label = format!("ruleset {id} ({source})");
        if !names.contains(&label) {
            names.push(label.clone());
        }
        match str_field(rule, "type") {
            "required_status_checks" => {
                let contexts: Vec<String> = rule
                    .pointer("/parameters/required_status_checks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|k| k.get("context").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect();
                add(&mut contexts.iter().cloned());
                required_evidence.push(format!("{label}: required_status_checks = {contexts:?}"));
            }
            "non_fast_forward" => {
                ruleset_blocks = true;
                force_evidence.push(format!("{label}: non_fast_forward"));
            }
            _ => {}
        }
    }
    if !rules.is_empty() && !ruleset_blocks {
        force_evidence.push("no ruleset has a non_fast_forward rule".to_string());
    }
    let force_push_allowed = !ruleset_blocks && (classic.is_none() || force_allowed);
    Some(Rule {
        name: names.join(", "),
        required,
        required_evidence: required_evidence.join("; "),
        force_push_allowed,
        force_push_evidence: force_evidence.join("; "),
    })
}

/// The Gitea rule that applies to `branch`: a rule named after it first (Gitea compares plain
/// names case-insensitively), else the first rule whose name (a glob since Gitea 1.19) matches,
/// in priority order.
fn gitea_rule(branch: &str, rules: &[Value]) -> Option<Rule> {
    let name_of = |r: &Value| {
        let name = str_field(r, "rule_name");
        if name.is_empty() {
            str_field(r, "branch_name").to_string()
        } else {
            name.to_string()
        }
    };
    let mut ordered: Vec<&Value> = rules.iter().collect();
    ordered.sort_by_key(|r| r.get("priority").and_then(Value::as_i64).unwrap_or(0));
    let rule = ordered
        .iter()
        .find(|r| name_of(r).eq_ignore_ascii_case(branch))
        .or_else(|| {
            ordered
                .iter()
                .find(|r| glob::matches(&name_of(r), branch, Some('/')))
        })?;
    let enabled = rule
        .get("enable_status_check")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let contexts: Vec<String> = rule
        .get("status_check_contexts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let (required, required_evidence) = if enabled {
        (
            Some(contexts.clone()),
            format!("enable_status_check = true, status_check_contexts = {contexts:?}"),
        )
    } else {
        (
            None,
            "enable_status_check = false: no check is required".to_string(),
        )
    };
    let (force_push_allowed, force_push_evidence) = match rule
        .get("enable_force_push")
        .and_then(Value::as_bool)
    {
        Some(true) => {
            let allowlist = rule
                .get("enable_force_push_allowlist")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let who = if allowlist {
                format!(
                    ", enable_force_push_allowlist = true (users {:?}, teams {:?})",
                    string_list(rule, "force_push_allowlist_usernames"),
                    string_list(rule, "force_push_allowlist_teams")
                )
            } else {
                ", enable_force_push_allowlist = false: everyone who may push".to_string()
            };
            (true, format!("enable_force_push = true{who}"))
        }
        Some(false) => (false, "enable_force_push = false".to_string()),
        None => (
            false,
            "no enable_force_push field: this version refuses every force push to a protected branch".to_string(),
        ),
    };
    Some(Rule {
        name: name_of(rule),
        required,
        required_evidence,
        force_push_allowed,
        force_push_evidence,
    })
}

struct Runner {
    name: String,
    status: String,
    /// Gitea's `disabled`: an online runner that takes no job.
    disabled: bool,
    labels: Vec<String>,
}

impl Runner {
    fn takes_jobs(&self) -> bool {
        self.status == "online" && !self.disabled
    }

    fn carries(&self, wanted: &[String], case_insensitive: bool) -> bool {
        wanted.iter().all(|w| {
            self.labels.iter().any(|l| {
                if case_insensitive {
                    l.eq_ignore_ascii_case(w)
                } else {
                    l == w
                }
            })
        })
    }
}

/// `{runners: [{name, status, labels: [{name}]}]}`, the same shape on both hosts.
fn runners(body: &Value) -> Option<Vec<Runner>> {
    let list = body.get("runners")?.as_array()?;
    Some(
        list.iter()
            .map(|r| Runner {
                name: str_field(r, "name").to_string(),
                status: str_field(r, "status").to_string(),
                disabled: r.get("disabled").and_then(Value::as_bool).unwrap_or(false),
                labels: r
                    .get("labels")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|l| l.get("name").and_then(Value::as_str).or(l.as_str()))
                    .map(str::to_string)
                    .collect(),
            })
            .collect(),
    )
}

/// Whether `runs-on` names one of GitHub's own runner images (`ubuntu-latest`, `windows-2022`,
/// `macos-14`, ...), which need no self-hosted runner.
fn github_hosted(labels: &[String]) -> bool {
    match labels {
        [one] => {
            let l = one.to_ascii_lowercase();
            ["ubuntu-", "windows-", "macos-"]
                .iter()
                .any(|p| l.starts_with(p))
        }
        _ => false,
    }
}

struct Run {
    id: u64,
    name: String,
    head_sha: String,
}

fn runs(body: &Value) -> Option<Vec<Run>> {
    let list = body.get("workflow_runs")?.as_array()?;
    Some(
        list.iter()
            .filter_map(|r| {
                Some(Run {
                    id: r.get("id")?.as_u64()?,
                    name: str_field(r, "name").to_string(),
                    head_sha: str_field(r, "head_sha").to_string(),
                })
            })
            .collect(),
    )
}

struct RunJob {
    name: String,
    status: String,
    conclusion: Option<String>,
}

fn run_jobs(body: &Value) -> Option<Vec<RunJob>> {
    let list = body.get("jobs")?.as_array()?;
    Some(
        list.iter()
            .map(|j| RunJob {
                name: str_field(j, "name").to_string(),
                status: str_field(j, "status").to_string(),
                conclusion: j
                    .get("conclusion")
                    .and_then(Value::as_str)
                    .filter(|c| !c.is_empty())
                    .map(str::to_string),
            })
            .collect(),
    )
}

/// Whether every job of `run` concluded and none was skipped; one evidence line per job.
fn judge_run(run: &Run, jobs: &[RunJob], seen: &str, evidence: &mut Vec<String>) -> bool {
    let label = if run.name.is_empty() {
        format!("run {}", run.id)
    } else {
        format!("run {} `{}`", run.id, run.name)
    };
    if jobs.is_empty() {
        evidence.push(format!("{seen}: {label} has no jobs"));
        return false;
    }
    let mut ok = true;
    for job in jobs {
        let (good, verdict) = match (job.status.as_str(), job.conclusion.as_deref()) {
            ("completed", Some("success" | "neutral")) => (true, "ran"),
            ("completed", Some("skipped")) => (
                false,
                "was skipped (a skipped job reports success to branch protection)",
            ),
            ("completed", _) => (false, "did not succeed"),
            _ => (false, "has not concluded"),
        };
        ok &= good;
        evidence.push(format!(
            "{seen}: {label} job `{}` status = {}, conclusion = {}: {verdict}",
            job.name,
            job.status,
            job.conclusion.as_deref().unwrap_or("none")
        ));
    }
    ok
}

fn job_place(wf: &Workflow, job: &Job) -> String {
    format!("{}:{}", wf.path.display(), job.line)
}

fn str_field<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn string_list(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// A branch name as one URL path segment (`release/1.0` → `release%2F1.0`).
fn path_escape(segment: &str) -> String {
    let mut out = String::new();
    for b in segment.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_names_are_one_path_segment() {
        assert_eq!(path_escape("release/1.0"), "release%2F1.0");
        assert_eq!(path_escape("main"), "main");
    }

    #[test]
    fn github_hosted_labels() {
        assert!(github_hosted(&["ubuntu-latest".into()]));
        assert!(github_hosted(&["macos-14".into()]));
        assert!(!github_hosted(&["self-hosted".into(), "linux".into()]));
        assert!(!github_hosted(&["ubuntu-latest".into(), "gpu".into()]));
    }
}
