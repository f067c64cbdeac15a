//! `verify` against a server on 127.0.0.1 that serves the hosts' real JSON shapes.
//!
//! The shapes, from each API's documentation:
//! - GitHub, get a repository (`default_branch`):
//!   https://docs.github.com/en/rest/repos/repos#get-a-repository
//! - GitHub, get branch protection (`required_status_checks.contexts`, `.checks[].context`,
//!   `allow_force_pushes.enabled`; 404 "Branch not protected"):
//!   https://docs.github.com/en/rest/branches/branch-protection#get-branch-protection
//! - GitHub, get rules for a branch (rulesets: `[{type, ruleset_id, ruleset_source,
//!   parameters}]`, `required_status_checks` rules'
//!   `parameters.required_status_checks[].context`, `non_fast_forward`):
//!   https://docs.github.com/en/rest/repos/rules#get-rules-for-a-branch
//! - GitHub, list self-hosted runners for a repository (`runners[].{name,status,labels[].name}`):
//!   https://docs.github.com/en/rest/actions/self-hosted-runners#list-self-hosted-runners-for-a-repository
//! - GitHub, list workflow runs for a repository (`workflow_runs[].{id,name,head_sha}`, `head_sha`
//!   filter): https://docs.github.com/en/rest/actions/workflow-runs#list-workflow-runs-for-a-repository
//! - GitHub, list jobs for a workflow run (`jobs[].{name,status,conclusion}`):
//!   https://docs.github.com/en/rest/actions/workflow-jobs#list-jobs-for-a-workflow-run
//! - Gitea API v1 (Forgejo serves the same), swagger at https://gitea.com/api/swagger, models in
//!   go-gitea/gitea modules/structs: `Repository.default_branch`; `BranchProtection`
//!   (repo_branch.go: `rule_name`, `branch_name`, `priority`, `enable_force_push`,
//!   `enable_force_push_allowlist`, `enable_status_check`, `status_check_contexts`) from
//!   GET /repos/{owner}/{repo}/branch_protections; `ActionRunnersResponse` (repo_actions.go:
//!   `runners[].{name,status,labels[].name}`, status "online"/"offline") from
//!   GET /repos/{owner}/{repo}/actions/runners (Gitea 1.25); `ActionWorkflowRunsResponse` and
//!   `ActionWorkflowJobsResponse` (`workflow_runs`, `jobs[].{name,status,conclusion}`) from
//!   GET /repos/{owner}/{repo}/actions/runs?head_sha= and /actions/runs/{run}/jobs (Gitea 1.25);
//!   `ActionTaskResponse` (`workflow_runs[].{name,head_sha,status,run_number}`) from
//!   GET /repos/{owner}/{repo}/actions/tasks (Gitea 1.22-1.24).
//! - Gitea's status context for an Actions job is `"{workflow name} / {job name} ({event})"`
//!   (services/actions/commit_status.go), and `status_check_contexts` are glob patterns.

mod support;

use plumb_githost::{parse_workflow, verify, Check, Flavor, Host, HostError, Outcome, Workflow};
use serde_json::{json, Value};
use std::path::Path;
use support::FakeHost;

const SHA: &str = "9fceb02d0ae598e95dc970b74767f19372d61af8";
const OTHER_SHA: &str = "1111111111111111111111111111111111111111";
const GITHUB_TOKEN: &str = "ghp_s3cretTokenValue0001";
const GITEA_TOKEN: &str = "gitea-s3cret-token-0002";

const CI: &str = "name: CI\non:\n  push:\n    branches: [main]\n  pull_request: {}\njobs:\n  build:\n    runs-on: [self-hosted, linux]\n    steps: [{run: make}]\n  test:\n    name: Unit tests\n    runs-on: [self-hosted, linux]\n    steps: [{run: make test}]\n";

fn ci_workflows(flavor: Flavor) -> Vec<Workflow> {
    let dir = match flavor {
        Flavor::GitHub => ".github/workflows",
        Flavor::Gitea => ".gitea/workflows",
    };
    vec![parse_workflow(&Path::new(dir).join("ci.yaml"), CI).unwrap()]
}

/// A fake host with every route of a repository whose settings match its workflows.
struct Scenario {
    flavor: Flavor,
    server: FakeHost,
    host: Host,
    /// `/api/v3/repos/acme/platform` or `/api/v1/repos/acme/platform`
    repo: String,
}

impl Scenario {
    fn new(flavor: Flavor) -> Scenario {
        let (auth, token) = match flavor {
            Flavor::GitHub => (format!("Bearer {GITHUB_TOKEN}"), GITHUB_TOKEN),
            Flavor::Gitea => (format!("token {GITEA_TOKEN}"), GITEA_TOKEN),
        };
        let server = FakeHost::start(Some(&auth));
        let (override_, prefix) = match flavor {
            Flavor::GitHub => (format!("github+{}", server.base()), "/api/v3"),
            Flavor::Gitea => (format!("gitea+{}", server.base()), "/api/v1"),
        };
        let env = move |name: &str| {
            let wanted = match flavor {
                Flavor::GitHub => "GITHUB_TOKEN",
                Flavor::Gitea => "GITEA_TOKEN",
            };
            (name == wanted).then(|| token.to_string())
        };
        let host = Host::from_url_with_env(
            "ssh://git@git.example.com:2222/acme/platform.git",
            Some(&override_),
            env,
        )
        .unwrap();
        assert_eq!(host.flavor, flavor);
        let s = Scenario {
            flavor,
            server,
            host,
            repo: format!("{prefix}/repos/acme/platform"),
        };
        s.all_in_order();
        s
    }

    fn route(&self, path: &str, status: u16, body: Value) {
        self.server
            .route(&format!("{}{path}", self.repo), status, body);
    }

    fn page(&self, n: usize) -> String {
        match self.flavor {
            Flavor::GitHub => format!("per_page={n}"),
            Flavor::Gitea => format!("limit={n}"),
        }
    }

    fn all_in_order(&self) {
        self.route(
            "",
            200,
            json!({"id": 1296269, "name": "platform", "full_name": "acme/platform",
                   "private": true, "default_branch": "main"}),
        );
        match self.flavor {
            Flavor::GitHub => {
                self.protect_github(&["build", "Unit tests"], false);
                self.route("/rules/branches/main", 200, json!([]));
            }
            Flavor::Gitea => self.protect_gitea(&["CI / build (push)", "CI / Unit*"], Some(false)),
        }
        self.runners(&[("rack-1", "online", &["self-hosted", "linux", "X64"])]);
        self.commit_runs(&[(30433642, &[("build", "success"), ("Unit tests", "success")])]);
        self.recent_runs(&[30433642, 30433600]);
        self.jobs(
            30433600,
            OTHER_SHA,
            &[("build", "success"), ("Unit tests", "success")],
        );
    }

    fn protect_github(&self, contexts: &[&str], force: bool) {
        let checks: Vec<Value> = contexts
            .iter()
            .map(|c| json!({"context": c, "app_id": 15368}))
            .collect();
        self.route(
            "/branches/main/protection",
            200,
            json!({
                "url": "https://api.github.com/repos/acme/platform/branches/main/protection",
                "required_status_checks": {
                    "url": "https://api.github.com/repos/acme/platform/branches/main/protection/required_status_checks",
                    "strict": true, "contexts": contexts, "checks": checks,
                    "contexts_url": "https://api.github.com/repos/acme/platform/branches/main/protection/required_status_checks/contexts"
                },
                "enforce_admins": {"url": "https://api.github.com/repos/acme/platform/branches/main/protection/enforce_admins", "enabled": true},
                "required_linear_history": {"enabled": true},
                "allow_force_pushes": {"enabled": force},
                "allow_deletions": {"enabled": false},
                "required_conversation_resolution": {"enabled": false},
                "lock_branch": {"enabled": false},
                "allow_fork_syncing": {"enabled": false}
            }),
        );
    }

    /// `force`: `enable_force_push`, or `None` for a Gitea older than the field.
    fn protect_gitea(&self, contexts: &[&str], force: Option<bool>) {
        let mut rule = json!({
            "branch_name": "main", "rule_name": "main", "priority": 1,
            "enable_push": true, "enable_push_whitelist": true,
            "push_whitelist_usernames": ["flux-bot"], "push_whitelist_teams": [],
            "push_whitelist_deploy_keys": false,
            "enable_merge_whitelist": false, "merge_whitelist_usernames": [], "merge_whitelist_teams": [],
            "enable_status_check": true, "status_check_contexts": contexts,
            "required_approvals": 1, "enable_approvals_whitelist": false,
            "block_on_rejected_reviews": true, "block_on_outdated_branch": false,
            "dismiss_stale_approvals": true, "require_signed_commits": false,
            "protected_file_patterns": "", "unprotected_file_patterns": "",
            "created_at": "2026-01-05T10:00:00Z", "updated_at": "2026-01-05T10:00:00Z"
        });
        if let Some(force) = force {
            rule["enable_force_push"] = json!(force);
            rule["enable_force_push_allowlist"] = json!(false);
            rule["force_push_allowlist_usernames"] = json!([]);
            rule["force_push_allowlist_teams"] = json!([]);
            rule["force_push_allowlist_deploy_keys"] = json!(false);
        }
        let other = json!({"rule_name": "release/*", "branch_name": "", "priority": 2,
                           "enable_status_check": false, "status_check_contexts": [],
                           "enable_force_push": true});
        self.route("/branch_protections", 200, json!([other, rule]));
    }

    fn runners(&self, runners: &[(&str, &str, &[&str])]) {
        let list: Vec<Value> = runners
            .iter()
            .enumerate()
            .map(|(i, (name, status, labels))| {
                let labels: Vec<Value> = labels
                    .iter()
                    .enumerate()
                    .map(|(j, l)| match self.flavor {
                        Flavor::GitHub => json!({"id": j, "name": l, "type": "read-only"}),
                        Flavor::Gitea => json!({"id": j, "name": l, "type": "custom"}),
                    })
                    .collect();
                match self.flavor {
                    Flavor::GitHub => json!({"id": 20 + i, "name": name, "os": "linux",
                                             "status": status, "busy": false, "labels": labels}),
                    Flavor::Gitea => json!({"id": 20 + i, "name": name, "status": status,
                                            "busy": false, "ephemeral": false, "labels": labels}),
                }
            })
            .collect();
        self.route(
            &format!("/actions/runners?{}", self.page(100)),
            200,
            json!({"total_count": list.len(), "runners": list}),
        );
    }

    fn run(&self, id: u64, sha: &str) -> Value {
        match self.flavor {
            Flavor::GitHub => json!({
                "id": id, "name": "CI", "node_id": "WFR_kwLOA", "head_branch": "main",
                "head_sha": sha, "path": ".github/workflows/ci.yaml", "run_number": id % 1000,
                "event": "push", "status": "completed", "conclusion": "success",
                "workflow_id": 159038, "run_attempt": 1,
                "url": format!("https://api.github.com/repos/acme/platform/actions/runs/{id}")
            }),
            Flavor::Gitea => json!({
                "id": id, "url": format!("https://git.example.com/api/v1/repos/acme/platform/actions/runs/{id}"),
                "html_url": format!("https://git.example.com/acme/platform/actions/runs/{id}"),
                "display_title": "Bump podinfo", "path": "ci.yaml@refs/heads/main", "event": "push",
                "run_attempt": 1, "run_number": id % 1000, "head_sha": sha, "head_branch": "main",
                "status": "completed", "conclusion": "success",
                "started_at": "2026-11-30T09:00:00Z", "completed_at": "2026-11-30T09:04:00Z"
            }),
        }
    }

    fn commit_runs(&self, runs: &[(u64, &[(&str, &str)])]) {
        let list: Vec<Value> = runs.iter().map(|(id, _)| self.run(*id, SHA)).collect();
        self.route(
            &format!("/actions/runs?head_sha={SHA}&{}", self.page(100)),
            200,
            json!({"total_count": list.len(), "workflow_runs": list}),
        );
        for (id, jobs) in runs {
            self.jobs(*id, SHA, jobs);
        }
    }

    fn recent_runs(&self, ids: &[u64]) {
        let list: Vec<Value> = ids.iter().map(|id| self.run(*id, OTHER_SHA)).collect();
        self.route(
            &format!("/actions/runs?{}", self.page(10)),
            200,
            json!({"total_count": list.len(), "workflow_runs": list}),
        );
    }

    /// `jobs`: (name, conclusion); `"in_progress"` as a conclusion means not concluded yet.
    fn jobs(&self, run: u64, sha: &str, jobs: &[(&str, &str)]) {
        let list: Vec<Value> = jobs
            .iter()
            .enumerate()
            .map(|(i, (name, conclusion))| {
                let (status, conclusion) = match *conclusion {
                    "in_progress" => ("in_progress", Value::Null),
                    c => ("completed", json!(c)),
                };
                json!({
                    "id": run * 10 + i as u64, "run_id": run, "head_sha": sha, "head_branch": "main",
                    "name": name, "status": status, "conclusion": conclusion,
                    "labels": ["self-hosted", "linux"], "runner_name": "rack-1", "run_attempt": 1,
                    "steps": [], "started_at": "2026-11-30T09:00:00Z"
                })
            })
            .collect();
        self.route(
            &format!("/actions/runs/{run}/jobs?{}", self.page(100)),
            200,
            json!({"total_count": list.len(), "jobs": list}),
        );
    }

    fn verify(&self) -> Vec<Check> {
        verify(&self.host, &ci_workflows(self.flavor), SHA)
            .unwrap_or_else(|e| panic!("verify: {e}"))
    }
}

fn check<'c>(checks: &'c [Check], id: &str) -> &'c Check {
    checks
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no check {id} in {checks:#?}"))
}

fn outcomes(checks: &[Check]) -> Vec<(&'static str, Outcome)> {
    checks.iter().map(|c| (c.id, c.outcome)).collect()
}

fn evidence(c: &Check) -> String {
    c.evidence.join("\n")
}

const FLAVORS: [Flavor; 2] = [Flavor::GitHub, Flavor::Gitea];

#[test]
fn everything_in_order_passes_with_only_authorised_gets() {
    for flavor in FLAVORS {
        let s = Scenario::new(flavor);
        let checks = s.verify();
        assert_eq!(
            outcomes(&checks),
            [
                ("branch-protected", Outcome::Pass),
                ("required-checks", Outcome::Pass),
                ("no-force-push", Outcome::Pass),
                ("runner-online", Outcome::Pass),
                ("ci-ran", Outcome::Pass),
                ("coverage-gap", Outcome::Pass),
            ],
            "{flavor:?}: {checks:#?}"
        );
        let runner = evidence(check(&checks, "runner-online"));
        assert!(runner.contains("runner `rack-1` is online"), "{runner}");
        let seen = s.server.seen();
        assert!(seen.len() >= 7, "{seen:#?}");
        assert!(seen.iter().all(|r| r.method == "GET"), "{seen:#?}");
        let auth = match flavor {
            Flavor::GitHub => format!("Bearer {GITHUB_TOKEN}"),
            Flavor::Gitea => format!("token {GITEA_TOKEN}"),
        };
        assert!(seen
            .iter()
            .all(|r| r.authorization.as_deref() == Some(auth.as_str())));
    }
}

#[test]
fn a_branch_without_protection_fails_three_checks() {
    for flavor in FLAVORS {
        let s = Scenario::new(flavor);
        match flavor {
            // GitHub answers 404 "Branch not protected".
            Flavor::GitHub => s.route("/branches/main/protection", 404, json!({"message": "Branch not protected"})),
            // Gitea lists the rules; none covers main.
            Flavor::Gitea => s.route(
                "/branch_protections",
                200,
                json!([{"rule_name": "release/*", "branch_name": "", "enable_status_check": true,
                        "status_check_contexts": ["CI / build (push)"], "enable_force_push": false}]),
            ),
        }
        let checks = s.verify();
        for id in ["branch-protected", "required-checks", "no-force-push"] {
            let c = check(&checks, id);
            assert_eq!(c.outcome, Outcome::Fail, "{flavor:?} {c:#?}");
            assert!(evidence(c).contains("`main`"), "{c:#?}");
        }
        let text = evidence(check(&checks, "branch-protected"));
        let path = match flavor {
            Flavor::GitHub => "GET /repos/acme/platform/branches/main/protection",
            Flavor::Gitea => "GET /repos/acme/platform/branch_protections",
        };
        assert!(text.contains(path), "{text}");
        assert_eq!(check(&checks, "ci-ran").outcome, Outcome::Pass);
    }
}

#[test]
fn required_checks_missing_one_workflow_job_fail_naming_it() {
    for flavor in FLAVORS {
        let s = Scenario::new(flavor);
        match flavor {
            Flavor::GitHub => s.protect_github(&["build", "codecov/patch"], false),
            Flavor::Gitea => s.protect_gitea(&["CI / build (push)"], Some(false)),
        }
        let checks = s.verify();
        let c = check(&checks, "required-checks");
        assert_eq!(c.outcome, Outcome::Fail, "{flavor:?} {c:#?}");
        let text = evidence(c);
        let missing = match flavor {
            Flavor::GitHub => "not required: `Unit tests` (.github/workflows/ci.yaml:10)",
            Flavor::Gitea => "not required: `CI / Unit tests (push)` (.gitea/workflows/ci.yaml:10)",
        };
        assert!(text.contains(missing), "{text}");
        let line = text
            .lines()
            .find(|l| l.starts_with("not required:"))
            .unwrap();
        assert!(!line.contains("build"), "{line}");
        if flavor == Flavor::GitHub {
            assert!(
                text.contains("required `codecov/patch` is reported by no workflow job"),
                "{text}"
            );
        }
        assert_eq!(check(&checks, "branch-protected").outcome, Outcome::Pass);
    }
}

#[test]
fn status_checks_not_enabled_fail() {
    let s = Scenario::new(Flavor::Gitea);
    s.route(
        "/branch_protections",
        200,
        json!([{"rule_name": "main", "enable_status_check": false,
                "status_check_contexts": [], "enable_force_push": false}]),
    );
    let checks = s.verify();
    let c = check(&checks, "required-checks");
    assert_eq!(c.outcome, Outcome::Fail, "{c:#?}");
    assert!(
        evidence(c).contains("enable_status_check = false"),
        "{c:#?}"
    );
}

#[test]
fn force_push_allowed_fails_with_the_field() {
    for flavor in FLAVORS {
        let s = Scenario::new(flavor);
        match flavor {
            Flavor::GitHub => s.protect_github(&["build", "Unit tests"], true),
            Flavor::Gitea => s.protect_gitea(&["CI / *"], Some(true)),
        }
        let checks = s.verify();
        let c = check(&checks, "no-force-push");
        assert_eq!(c.outcome, Outcome::Fail, "{flavor:?} {c:#?}");
        let field = match flavor {
            Flavor::GitHub => "allow_force_pushes.enabled = true",
            Flavor::Gitea => "enable_force_push = true",
        };
        assert!(evidence(c).contains(field), "{c:#?}");
        assert_eq!(check(&checks, "required-checks").outcome, Outcome::Pass);
    }
}

#[test]
fn a_gitea_without_the_force_push_field_refuses_force_pushes() {
    let s = Scenario::new(Flavor::Gitea);
    s.protect_gitea(&["CI / *"], None);
    let checks = s.verify();
    let c = check(&checks, "no-force-push");
    assert_eq!(c.outcome, Outcome::Pass, "{c:#?}");
    assert!(evidence(c).contains("no enable_force_push field"), "{c:#?}");
}

#[test]
fn no_runner_online_fails_and_names_the_offline_one() {
    for flavor in FLAVORS {
        let s = Scenario::new(flavor);
        s.runners(&[
            ("rack-1", "offline", &["self-hosted", "linux", "X64"]),
            ("mac-mini", "online", &["self-hosted", "macOS"]),
        ]);
        let checks = s.verify();
        let c = check(&checks, "runner-online");
        assert_eq!(c.outcome, Outcome::Fail, "{flavor:?} {c:#?}");
        let text = evidence(c);
        assert!(text.contains("job `build`"), "{text}");
        assert!(text.contains("job `Unit tests`"), "{text}");
        assert!(
            text.contains("no online runner carries these labels"),
            "{text}"
        );
        assert!(
            text.contains("`rack-1` has the labels but is offline"),
            "{text}"
        );
        assert!(!text.contains("`mac-mini` has the labels"), "{text}");
        assert!(
            text.contains("GET /repos/acme/platform/actions/runners"),
            "{text}"
        );
    }
}

#[test]
fn no_runner_at_all_fails() {
    for flavor in FLAVORS {
        let s = Scenario::new(flavor);
        s.runners(&[]);
        let checks = s.verify();
        let c = check(&checks, "runner-online");
        assert_eq!(c.outcome, Outcome::Fail, "{flavor:?} {c:#?}");
        assert!(evidence(c).contains("no runners"), "{c:#?}");
    }
}

#[test]
fn github_hosted_jobs_need_no_runner_and_the_runners_api_is_not_asked() {
    let s = Scenario::new(Flavor::GitHub);
    s.server
        .unroute(&format!("{}/actions/runners?per_page=100", s.repo));
    let wf = parse_workflow(
        Path::new(".github/workflows/ci.yaml"),
        "on: push\njobs:\n  build:\n    runs-on: ubuntu-latest\n  test:\n    name: Unit tests\n    runs-on: ubuntu-24.04\n",
    )
    .unwrap();
    let checks = verify(&s.host, &[wf], SHA).unwrap();
    let c = check(&checks, "runner-online");
    assert_eq!(c.outcome, Outcome::Pass, "{c:#?}");
    assert!(evidence(c).contains("`ubuntu-latest`") || evidence(c).contains("\"ubuntu-latest\""));
    assert!(evidence(c).contains("GitHub-hosted"), "{c:#?}");
    assert!(s
        .server
        .seen()
        .iter()
        .all(|r| !r.target.contains("/actions/runners")));
}

#[test]
fn a_gitea_without_the_runner_api_is_unknown() {
    let s = Scenario::new(Flavor::Gitea);
    s.server
        .unroute(&format!("{}/actions/runners?limit=100", s.repo));
    let checks = s.verify();
    let c = check(&checks, "runner-online");
    assert_eq!(c.outcome, Outcome::Unknown, "{c:#?}");
    assert!(evidence(c).contains("no runner API"), "{c:#?}");
}

#[test]
fn a_run_whose_only_job_was_skipped_fails() {
    for flavor in FLAVORS {
        let s = Scenario::new(flavor);
        s.commit_runs(&[(30433642, &[("build", "skipped")])]);
        let checks = s.verify();
        let c = check(&checks, "ci-ran");
        assert_eq!(c.outcome, Outcome::Fail, "{flavor:?} {c:#?}");
        let text = evidence(c);
        assert!(
            text.contains("job `build` status = completed, conclusion = skipped"),
            "{text}"
        );
        assert!(text.contains("a skipped job reports success"), "{text}");
        assert!(text.contains("/actions/runs/30433642/jobs"), "{text}");
    }
}

#[test]
fn a_job_that_did_not_conclude_or_failed_fails() {
    for flavor in FLAVORS {
        let s = Scenario::new(flavor);
        s.commit_runs(&[(
            30433642,
            &[("build", "in_progress"), ("Unit tests", "failure")],
        )]);
        let checks = s.verify();
        let c = check(&checks, "ci-ran");
        assert_eq!(c.outcome, Outcome::Fail, "{flavor:?} {c:#?}");
        let text = evidence(c);
        assert!(
            text.contains("job `build` status = in_progress, conclusion = none: has not concluded"),
            "{text}"
        );
        assert!(
            text.contains(
                "job `Unit tests` status = completed, conclusion = failure: did not succeed"
            ),
            "{text}"
        );
    }
}

#[test]
fn no_run_for_the_commit_fails() {
    for flavor in FLAVORS {
        let s = Scenario::new(flavor);
        s.commit_runs(&[]);
        let checks = s.verify();
        let c = check(&checks, "ci-ran");
        assert_eq!(c.outcome, Outcome::Fail, "{flavor:?} {c:#?}");
        let text = evidence(c);
        assert!(
            text.contains(&format!("no workflow run for commit {SHA}")),
            "{text}"
        );
        assert!(
            text.contains(&format!("/actions/runs?head_sha={SHA}")),
            "{text}"
        );
    }
}

#[test]
fn a_run_of_another_commit_does_not_count_for_this_one() {
    // A host that ignored the head_sha filter would answer with other commits' runs.
    for flavor in FLAVORS {
        let s = Scenario::new(flavor);
        s.route(
            &format!("/actions/runs?head_sha={SHA}&{}", s.page(100)),
            200,
            json!({"total_count": 1, "workflow_runs": [s.run(30433600, OTHER_SHA)]}),
        );
        let checks = s.verify();
        assert_eq!(
            check(&checks, "ci-ran").outcome,
            Outcome::Fail,
            "{flavor:?}"
        );
    }
}

#[test]
fn a_job_skipped_in_every_recent_run_is_a_coverage_gap() {
    for flavor in FLAVORS {
        let s = Scenario::new(flavor);
        let ids = [30433642, 30433600, 30433500];
        s.commit_runs(&[(
            30433642,
            &[
                ("build", "success"),
                ("Unit tests", "success"),
                ("e2e", "skipped"),
            ],
        )]);
        s.jobs(
            30433600,
            OTHER_SHA,
            &[("build", "success"), ("e2e", "skipped")],
        );
        s.jobs(
            30433500,
            OTHER_SHA,
            &[
                ("build", "failure"),
                ("e2e", "skipped"),
                ("Unit tests", "skipped"),
            ],
        );
        s.recent_runs(&ids);
        let checks = s.verify();
        let c = check(&checks, "coverage-gap");
        assert_eq!(c.outcome, Outcome::Fail, "{flavor:?} {c:#?}");
        let text = evidence(c);
        assert!(
            text.contains("job `e2e` was skipped in every one of the 3 recent runs it appears in (30433642, 30433600, 30433500)"),
            "{text}"
        );
        // Skipped once, run elsewhere: not a gap.
        assert!(!text.contains("job `Unit tests` was skipped"), "{text}");
        assert!(!text.contains("job `build` was skipped"), "{text}");
    }
}

#[test]
fn a_gitea_before_the_runs_api_reads_its_tasks() {
    let s = Scenario::new(Flavor::Gitea);
    s.server
        .unroute(&format!("{}/actions/runs?head_sha={SHA}&limit=100", s.repo));
    s.server
        .unroute(&format!("{}/actions/runs?limit=10", s.repo));
    let task = |id: u64, name: &str, sha: &str, status: &str| {
        json!({"id": id, "name": name, "head_branch": "main", "head_sha": sha, "run_number": 41,
               "event": "push", "display_title": "Bump podinfo", "status": status,
               "workflow_id": "ci.yaml", "url": format!("https://git.example.com/acme/platform/actions/runs/41/jobs/{id}"),
               "created_at": "2026-11-30T09:00:00Z", "updated_at": "2026-11-30T09:04:00Z",
               "run_started_at": "2026-11-30T09:00:00Z"})
    };
    s.route(
        "/actions/tasks?limit=50",
        200,
        json!({"total_count": 3, "workflow_runs": [
            task(3, "Unit tests", SHA, "failure"), task(2, "build", SHA, "success"),
            task(1, "build", OTHER_SHA, "success")]}),
    );
    let checks = s.verify();
    let ran = check(&checks, "ci-ran");
    assert_eq!(ran.outcome, Outcome::Fail, "{ran:#?}");
    let text = evidence(ran);
    assert!(
        text.contains("task 3 `Unit tests` (run 41) status = failure"),
        "{text}"
    );
    assert!(
        text.contains("task 2 `build` (run 41) status = success"),
        "{text}"
    );
    assert!(!text.contains("task 1 "), "{text}");
    let gap = check(&checks, "coverage-gap");
    assert_eq!(gap.outcome, Outcome::Unknown, "{gap:#?}");
    assert!(
        evidence(gap).contains("skipped job is not seen"),
        "{gap:#?}"
    );
}

#[test]
fn forbidden_branch_protection_names_the_permission() {
    for flavor in FLAVORS {
        let s = Scenario::new(flavor);
        let path = match flavor {
            Flavor::GitHub => "/branches/main/protection",
            Flavor::Gitea => "/branch_protections",
        };
        s.route(
            path,
            403,
            json!({"message": "Resource not accessible by personal access token"}),
        );
        let err = verify(&s.host, &ci_workflows(flavor), SHA).unwrap_err();
        let HostError::Forbidden {
            url,
            status,
            permission,
        } = &err
        else {
            panic!("{flavor:?}: {err:?}");
        };
        assert_eq!(*status, 403);
        assert_eq!(url, &format!("{}{}{path}", s.server.base(), s.repo));
        let needed = match flavor {
            Flavor::GitHub => "administration:read",
            Flavor::Gitea => "admin rights on the repository",
        };
        assert!(permission.contains(needed), "{permission}");
        assert!(err.to_string().contains(url.as_str()), "{err}");
    }
}

#[test]
fn a_wrong_token_is_forbidden_on_the_first_call() {
    let s = Scenario::new(Flavor::GitHub);
    let host = s.host.clone().with_token(Some("ghp_wrong".into()));
    let err = verify(&host, &ci_workflows(Flavor::GitHub), SHA).unwrap_err();
    assert!(
        matches!(&err, HostError::Forbidden { status: 401, url, .. } if url.ends_with("/repos/acme/platform")),
        "{err:?}"
    );
    let host = s.host.clone().with_token(None);
    let err = verify(&host, &ci_workflows(Flavor::GitHub), SHA).unwrap_err();
    assert!(
        err.to_string()
            .contains("no token was given: set GITHUB_TOKEN"),
        "{err}"
    );
}

#[test]
fn an_unreachable_host_names_its_url() {
    // Bind and drop: nothing listens on the port afterwards.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for flavor in FLAVORS {
        let override_ = match flavor {
            Flavor::GitHub => format!("github+http://127.0.0.1:{port}"),
            Flavor::Gitea => format!("gitea+http://127.0.0.1:{port}"),
        };
        let host = Host::from_url_with_env(
            "git@git.example.com:acme/platform.git",
            Some(&override_),
            |_| Some("tok-unreachable-secret".to_string()),
        )
        .unwrap();
        let err = verify(&host, &ci_workflows(flavor), SHA).unwrap_err();
        let HostError::Unreachable { url, message } = &err else {
            panic!("{flavor:?}: {err:?}");
        };
        assert!(
            url.starts_with(&format!("http://127.0.0.1:{port}/api/v")),
            "{url}"
        );
        assert!(url.ends_with("/repos/acme/platform"), "{url}");
        assert!(!message.is_empty());
        assert!(!format!("{err} {err:?}").contains("tok-unreachable-secret"));
    }
}

#[test]
fn the_token_never_appears_in_errors_debug_or_evidence() {
    for flavor in FLAVORS {
        let token = match flavor {
            Flavor::GitHub => GITHUB_TOKEN,
            Flavor::Gitea => GITEA_TOKEN,
        };
        let s = Scenario::new(flavor);
        let mut texts = vec![format!("{:?}", s.host)];
        texts.push(format!("{:?}", s.verify()));
        // A failing scenario's evidence too.
        s.runners(&[("rack-1", "offline", &["self-hosted", "linux"])]);
        s.commit_runs(&[]);
        texts.push(format!("{:?}", s.verify()));
        // Errors: forbidden, a body that is not JSON, a server error.
        s.route("", 500, json!({"message": format!("internal {token}?")}));
        let err = verify(&s.host, &ci_workflows(flavor), SHA).unwrap_err();
        assert!(matches!(err, HostError::Protocol { .. }), "{err:?}");
        assert!(err.to_string().contains("HTTP 500"), "{err}");
        texts.push(format!("{err} {err:?}"));
        s.route("", 403, json!({"message": "Forbidden"}));
        let err = verify(&s.host, &ci_workflows(flavor), SHA).unwrap_err();
        texts.push(format!("{err} {err:?}"));
        let joined = texts.join("\n");
        assert!(!joined.contains(token), "{joined}");
        assert!(joined.contains("<redacted>"), "{joined}");
    }
}

#[test]
fn a_missing_repository_is_an_error_naming_it() {
    let s = Scenario::new(Flavor::Gitea);
    s.server.unroute(&s.repo);
    let err = verify(&s.host, &ci_workflows(Flavor::Gitea), SHA).unwrap_err();
    assert!(
        matches!(&err, HostError::Protocol { url, .. } if url.ends_with("/api/v1/repos/acme/platform")),
        "{err:?}"
    );
    assert!(err.to_string().contains("repository not found"), "{err}");
}

#[test]
fn only_workflows_that_run_on_the_default_branch_must_be_required() {
    for flavor in FLAVORS {
        let s = Scenario::new(flavor);
        let mut workflows = ci_workflows(flavor);
        workflows.push(
            parse_workflow(
                Path::new("wf/nightly.yaml"),
                "name: Nightly\non:\n  schedule:\n    - cron: '0 3 * * *'\njobs:\n  soak:\n    runs-on: [self-hosted, linux]\n",
            )
            .unwrap(),
        );
        workflows.push(
            parse_workflow(
                Path::new("wf/release.yaml"),
                "on:\n  push:\n    tags: ['v*']\njobs:\n  publish:\n    runs-on: [self-hosted, linux]\n",
            )
            .unwrap(),
        );
        let checks = verify(&s.host, &workflows, SHA).unwrap();
        let c = check(&checks, "required-checks");
        assert_eq!(c.outcome, Outcome::Pass, "{flavor:?} {c:#?}");
        let text = evidence(c);
        assert!(
            text.contains("wf/nightly.yaml does not run on pushes or pull requests to `main`"),
            "{text}"
        );
        assert!(text.contains("wf/release.yaml does not run"), "{text}");
    }
}

#[test]
fn a_github_matrix_job_is_required_by_its_combinations() {
    let s = Scenario::new(Flavor::GitHub);
    s.protect_github(&["build (ubuntu, 1.22)", "Unit tests"], false);
    let matrix = CI.replace(
        "  build:\n",
        "  build:\n    strategy:\n      matrix:\n        os: [ubuntu]\n        go: ['1.22']\n",
    );
    let wf = parse_workflow(Path::new(".github/workflows/ci.yaml"), &matrix).unwrap();
    let checks = verify(&s.host, &[wf], SHA).unwrap();
    let c = check(&checks, "required-checks");
    assert_eq!(c.outcome, Outcome::Pass, "{c:#?}");
    // Without the matrix, `build (ubuntu, 1.22)` is no name of `build`.
    let plain = parse_workflow(Path::new(".github/workflows/ci.yaml"), CI).unwrap();
    let checks = verify(&s.host, &[plain], SHA).unwrap();
    assert_eq!(check(&checks, "required-checks").outcome, Outcome::Fail);
}

#[test]
fn a_github_ruleset_protects_without_classic_protection() {
    let s = Scenario::new(Flavor::GitHub);
    s.route(
        "/branches/main/protection",
        404,
        json!({"message": "Branch not protected"}),
    );
    let rule = |kind: &str, parameters: Value| {
        json!({"type": kind, "ruleset_source_type": "Repository", "ruleset_source": "acme/platform",
               "ruleset_id": 42, "parameters": parameters})
    };
    s.route(
        "/rules/branches/main",
        200,
        json!([
            rule("deletion", Value::Null),
            rule("non_fast_forward", Value::Null),
            rule(
                "required_status_checks",
                json!({
                "strict_required_status_checks_policy": false,
                "required_status_checks": [{"context": "build", "integration_id": 15368},
                                           {"context": "Unit tests"}]})
            )
        ]),
    );
    let checks = s.verify();
    for id in ["branch-protected", "required-checks", "no-force-push"] {
        let c = check(&checks, id);
        assert_eq!(c.outcome, Outcome::Pass, "{c:#?}");
    }
    let text = evidence(check(&checks, "no-force-push"));
    assert!(
        text.contains("ruleset 42 (acme/platform): non_fast_forward"),
        "{text}"
    );
    assert!(
        text.contains("GET /repos/acme/platform/rules/branches/main"),
        "{text}"
    );

    // A ruleset without non_fast_forward leaves force pushes open.
    s.route(
        "/rules/branches/main",
        200,
        json!([rule(
            "required_status_checks",
            json!({
            "required_status_checks": [{"context": "build"}, {"context": "Unit tests"}]})
        )]),
    );
    let checks = s.verify();
    assert_eq!(check(&checks, "branch-protected").outcome, Outcome::Pass);
    let c = check(&checks, "no-force-push");
    assert_eq!(c.outcome, Outcome::Fail, "{c:#?}");
    assert!(
        evidence(c).contains("no ruleset has a non_fast_forward rule"),
        "{c:#?}"
    );
}

#[test]
fn a_ruleset_refuses_force_pushes_that_classic_protection_allows() {
    let s = Scenario::new(Flavor::GitHub);
    s.protect_github(&["build", "Unit tests"], true);
    assert_eq!(check(&s.verify(), "no-force-push").outcome, Outcome::Fail);
    s.route(
        "/rules/branches/main",
        200,
        json!([{"type": "non_fast_forward", "ruleset_source_type": "Organization",
                "ruleset_source": "acme", "ruleset_id": 7}]),
    );
    assert_eq!(check(&s.verify(), "no-force-push").outcome, Outcome::Pass);
}

#[test]
fn a_repository_without_workflows_asks_for_no_runs() {
    for flavor in FLAVORS {
        let s = Scenario::new(flavor);
        let checks = verify(&s.host, &[], SHA).unwrap();
        for id in ["ci-ran", "coverage-gap"] {
            let c = check(&checks, id);
            assert_eq!(c.outcome, Outcome::Unknown, "{c:#?}");
            assert_eq!(c.outcome.as_str(), "unknown");
            assert!(evidence(c).contains("declares no workflow"), "{c:#?}");
        }
        assert_eq!(check(&checks, "runner-online").outcome, Outcome::Pass);
        assert!(s
            .server
            .seen()
            .iter()
            .all(|r| !r.target.contains("/actions/")));
    }
}

#[test]
fn a_disabled_gitea_runner_takes_no_job() {
    let s = Scenario::new(Flavor::Gitea);
    s.route(
        "/actions/runners?limit=100",
        200,
        json!({"total_count": 1, "runners": [{"id": 3, "name": "rack-1", "status": "online",
            "busy": false, "disabled": true, "ephemeral": false,
            "labels": [{"id": 0, "name": "self-hosted", "type": "custom"},
                       {"id": 1, "name": "linux", "type": "custom"}]}]}),
    );
    let checks = s.verify();
    let c = check(&checks, "runner-online");
    assert_eq!(c.outcome, Outcome::Fail, "{c:#?}");
    assert!(
        evidence(c).contains("`rack-1` has the labels but is online and disabled"),
        "{c:#?}"
    );
}

#[test]
fn an_answer_that_cannot_be_read_makes_its_checks_unknown() {
    for flavor in FLAVORS {
        let s = Scenario::new(flavor);
        let protection = match flavor {
            Flavor::GitHub => "/branches/main/protection",
            Flavor::Gitea => "/branch_protections",
        };
        s.route(protection, 500, json!({"message": "database is locked"}));
        s.route(
            &format!("/actions/runners?{}", s.page(100)),
            502,
            json!({"message": "bad gateway"}),
        );
        let checks = s.verify();
        for id in [
            "branch-protected",
            "required-checks",
            "no-force-push",
            "runner-online",
        ] {
            let c = check(&checks, id);
            assert_eq!(c.outcome, Outcome::Unknown, "{flavor:?} {c:#?}");
            assert!(evidence(c).contains("HTTP 50"), "{c:#?}");
        }
        let text = evidence(check(&checks, "branch-protected"));
        assert!(
            text.contains(&format!("GET /repos/acme/platform{protection}: HTTP 500")),
            "{text}"
        );
        assert!(text.contains("database is locked"), "{text}");
        // The checks that could be answered still are.
        assert_eq!(check(&checks, "ci-ran").outcome, Outcome::Pass);
    }
}
