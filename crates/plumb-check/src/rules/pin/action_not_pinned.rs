//! PIN003: CI workflow steps that use an action by a tag or branch.

use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};
use crate::rules::repo_files;
use plumb_yaml::Node;
use std::path::Path;

/// ## What it does
/// Reads the repository's CI workflows (`.github/workflows/*.yml`, `.gitea/workflows/`,
/// `.forgejo/workflows/`) and finds every `uses:`, of a step or of a job calling a reusable
/// workflow, that names its action by a tag or a branch instead of a full commit SHA. Local
/// actions (`./...`) and Docker images pinned by digest (`docker://...@sha256:...`) are fine.
///
/// ## Why is this bad?
/// A tag such as `v4` is moved by the action's owner, or by whoever steals their token: the
/// next run executes the new code with the workflow's secrets and write access to the
/// repository (the `tj-actions/changed-files` compromise of March 2025 rewrote every tag to a
/// commit that dumped secrets into the logs). The workflow that deploys the platform is the
/// platform's most privileged code. A commit SHA cannot be moved.
///
/// ## Example
/// ```yaml
/// steps:
///   - uses: actions/checkout@v4
/// ```
///
/// Use instead:
/// ```yaml
/// steps:
///   - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2
/// ```
///
/// Renovate and Dependabot keep SHA pins up to date and keep the comment in step.
pub struct ActionNotPinned;

/// Directories whose YAML files are CI workflows.
const WORKFLOW_DIRS: [&str; 3] = [
    ".github/workflows",
    ".gitea/workflows",
    ".forgejo/workflows",
];

impl Rule for ActionNotPinned {
    fn code(&self) -> &'static str {
        "PIN003"
    }

    fn summary(&self) -> &'static str {
        "a CI workflow step (`uses:`) pinned by tag instead of commit SHA"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        for dir in WORKFLOW_DIRS {
            for file in crate::rules::repo_files::yaml_files_in(&cx.root.join(dir)) {
                check_workflow(cx.root, &file, out);
            }
        }
    }
}

fn check_workflow(root: &Path, file: &Path, out: &mut Vec<Finding>) {
    let Some(docs) = repo_files::documents(file) else {
        return;
    };
    for doc in &docs {
        let Some(jobs) = doc.get("jobs").and_then(Node::as_mapping) else {
            continue;
        };
        for (_, job) in jobs {
            let steps = job.get("steps").and_then(Node::as_sequence);
            let uses = job
                .get("uses")
                .into_iter()
                .chain(steps.into_iter().flatten().filter_map(|s| s.get("uses")));
            for node in uses {
                let Some(reference) = node.scalar_value() else {
                    continue;
                };
                if let Some(problem) = unpinned(reference) {
                    out.push(
                        Finding::new("PIN003", problem, help(reference))
                            .at(Location::of(node, root)),
                    );
                }
            }
        }
    }
}

/// Why `uses: reference` is not pinned, or `None` when it is.
fn unpinned(reference: &str) -> Option<String> {
    let reference = reference.trim();
    if reference.starts_with("./") || reference.starts_with("../") || reference.contains("${{") {
        return None;
    }
    if let Some(image) = reference.strip_prefix("docker://") {
        return (!super::images::is_pinned(image)).then(|| {
            format!("`{reference}` runs a Docker image by its tag: the registry can move it")
        });
    }
    match reference.rsplit_once('@') {
        Some((_, version)) if is_commit_sha(version) => None,
        Some((action, version)) => Some(format!(
            "`{action}` is pinned to `{version}`, a tag or branch its owner (or a thief of their token) can move"
        )),
        None => Some(format!(
            "`{reference}` has no version: it runs whatever the default branch holds"
        )),
    }
}

/// A full commit id: 40 hex digits (SHA-1) or 64 (SHA-256 repositories, which Forgejo hosts).
fn is_commit_sha(text: &str) -> bool {
    (text.len() == 40 || text.len() == 64) && text.chars().all(|c| c.is_ascii_hexdigit())
}

fn help(reference: &str) -> String {
    match reference.strip_prefix("docker://") {
        Some(image) => format!("pin the digest: `docker://{image}@sha256:<digest>`"),
        None => {
            let (action, version) = reference.rsplit_once('@').unwrap_or((reference, "main"));
            let repo: Vec<&str> = action.split('/').take(2).collect();
            format!(
                "pin the commit: `{action}@<40-hex sha> # {version}` (`git ls-remote https://github.com/{} {version}` prints it)",
                repo.join("/")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_and_unpinned() {
        assert!(unpinned("actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683").is_none());
        assert!(unpinned("./.github/actions/setup").is_none());
        assert!(unpinned("docker://alpine@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef").is_none());
        assert!(unpinned("actions/checkout@v4").is_some());
        assert!(unpinned("actions/checkout@main").is_some());
        assert!(unpinned("org/repo/.github/workflows/ci.yml@v1").is_some());
        assert!(unpinned("docker://alpine:3.20").is_some());
        assert!(unpinned("https://github.com/actions/checkout@v4").is_some());
    }
}
