//! The CI workflows a repository checkout declares: which jobs run, under which name they report
//! their status, and which runner labels they ask for.

use crate::error::WorkflowError;
use crate::glob;
use crate::host::Flavor;
use plumb_yaml::{Node, SourceFile};
use std::path::{Path, PathBuf};

/// One workflow file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workflow {
    /// The file, relative to the checkout (`.github/workflows/ci.yaml`).
    pub path: PathBuf,
    /// The workflow's `name:`, or its file name (`ci.yaml`) as Gitea names a run without one.
    pub name: String,
    /// The events under `on:` and their branch filters.
    pub triggers: Vec<Trigger>,
    pub jobs: Vec<Job>,
}

/// One job of a workflow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The key under `jobs:`.
    pub id: String,
    /// The job's `name:` or its id: the name its status check is reported under.
    pub name: String,
    /// The `runs-on` labels (a string, a list, or a `{group, labels}` mapping's labels); empty
    /// for a job that calls a reusable workflow.
    pub runs_on: Vec<String>,
    /// Whether the job has a `strategy.matrix`: GitHub then reports one check per combination,
    /// `name (a, b)`.
    pub matrix: bool,
    /// The reusable workflow a job calls (`uses:`); its checks are named after the called jobs.
    pub uses: Option<String>,
    /// The 1-based line of the job's key.
    pub line: usize,
}

/// An event under `on:` and the branches it fires for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trigger {
    /// `push`, `pull_request`, `schedule`, ...
    pub event: String,
    /// The `branches:` patterns in order (`!` negates); `None` when the event names none.
    pub branches: Option<Vec<String>>,
    /// The `branches-ignore:` patterns.
    pub branches_ignore: Vec<String>,
    /// Only `tags`/`tags-ignore` were given: the event then never fires for a branch.
    pub tags_only: bool,
}

impl Trigger {
    /// Whether the event fires for `branch` (for pull requests: the base branch), as both hosts
    /// read the filters: the last matching `branches` pattern decides, `!` excludes.
    pub fn fires_for(&self, branch: &str) -> bool {
        if self.tags_only {
            return false;
        }
        if self
            .branches_ignore
            .iter()
            .any(|p| glob::matches(p, branch, Some('/')))
        {
            return false;
        }
        let Some(patterns) = &self.branches else {
            return true;
        };
        let mut included = false;
        for p in patterns {
            match p.strip_prefix('!') {
                Some(neg) if glob::matches(neg, branch, Some('/')) => included = false,
                None if glob::matches(p, branch, Some('/')) => included = true,
                _ => {}
            }
        }
        included
    }
}

impl Job {
    /// Whether `runs-on` is decided at run time (`${{ ... }}`), so no runner can be matched now.
    pub fn runs_on_is_dynamic(&self) -> bool {
        self.runs_on.iter().any(|l| l.contains("${{"))
    }
}

impl Workflow {
    /// The event names under `on:`.
    pub fn events(&self) -> impl Iterator<Item = &str> {
        self.triggers.iter().map(|t| t.event.as_str())
    }

    /// The events of commits to `branch` (a push, or a pull request into it) that run this
    /// workflow: the runs whose checks branch protection can require.
    pub fn commit_events_for(&self, branch: &str) -> Vec<&'static str> {
        let fires = |want: fn(&str) -> bool| {
            self.triggers
                .iter()
                .any(|t| want(&t.event) && t.fires_for(branch))
        };
        let mut out = Vec::new();
        if fires(is_push) {
            out.push("push");
        }
        if fires(is_pull_request) {
            out.push("pull_request");
        }
        out
    }
}

fn is_push(event: &str) -> bool {
    event == "push"
}

fn is_pull_request(event: &str) -> bool {
    event.starts_with("pull_request")
}

/// The directories the host reads workflows from, in its order. Gitea reads the first of
/// `.gitea/workflows` and `.github/workflows` that exists; Forgejo also `.forgejo/workflows`.
fn workflow_dirs(flavor: Flavor) -> &'static [&'static str] {
    match flavor {
        Flavor::GitHub => &[".github/workflows"],
        Flavor::Gitea => &[
            ".gitea/workflows",
            ".forgejo/workflows",
            ".github/workflows",
        ],
    }
}

/// The workflows of the checkout at `dir`, as the host reads them: `.github/workflows/*.y*ml`
/// for GitHub; for Gitea the first of `.gitea/workflows`, `.forgejo/workflows`,
/// `.github/workflows` that exists. Files are read in name order.
pub fn workflows(dir: &Path, flavor: Flavor) -> Result<Vec<Workflow>, WorkflowError> {
    let Some(rel) = workflow_dirs(flavor).iter().find(|d| dir.join(d).is_dir()) else {
        return Ok(Vec::new());
    };
    let entries = std::fs::read_dir(dir.join(rel)).map_err(|e| WorkflowError {
        path: PathBuf::from(rel),
        line: 0,
        message: format!("cannot list the workflow directory: {e}"),
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .filter(|p| matches!(p.extension().and_then(|x| x.to_str()), Some("yml" | "yaml")))
        .collect();
    files.sort();
    files
        .iter()
        .map(|file| {
            let shown = Path::new(rel).join(file.file_name().unwrap_or_default());
            let text = std::fs::read_to_string(file).map_err(|e| WorkflowError {
                path: shown.clone(),
                line: 0,
                message: format!("cannot read: {e}"),
            })?;
            parse_workflow(&shown, &text)
        })
        .collect()
}

/// Reads one workflow file's text; `path` is what errors and [`Workflow::path`] show.
pub fn parse_workflow(path: &Path, text: &str) -> Result<Workflow, WorkflowError> {
    let file = SourceFile::new(path, text);
    let docs = plumb_yaml::parse_source(&file).map_err(|e| WorkflowError {
        path: path.to_path_buf(),
        line: e.location.line,
        message: e.message,
    })?;
    let error = |node: Option<&Node>, message: String| WorkflowError {
        path: path.to_path_buf(),
        line: node
            .and_then(|n| n.span.as_ref())
            .map_or(1, |s| s.location().line),
        message,
    };
    let Some(doc) = docs.first().filter(|d| d.is_mapping()) else {
        return Err(error(docs.first(), "a workflow must be a mapping".into()));
    };
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = doc
        .get("name")
        .and_then(Node::scalar_value)
        .filter(|n| !n.trim().is_empty())
        .map_or(file_name, |n| n.trim().to_string());
    let triggers = match doc.get("on") {
        Some(on) => triggers(on).ok_or_else(|| {
            error(
                Some(on),
                "`on` must be an event name, a list of them, or a mapping".into(),
            )
        })?,
        None => Vec::new(),
    };
    let jobs_node = doc.get("jobs");
    let Some(entries) = jobs_node.and_then(Node::as_mapping) else {
        return Err(error(
            jobs_node.or(Some(doc)),
            "a workflow needs a `jobs` mapping".into(),
        ));
    };
    let mut jobs = Vec::new();
    for (key, job) in entries {
        let Some(id) = key.scalar_value() else {
            return Err(error(Some(key), "a job id must be a string".into()));
        };
        if !job.is_mapping() {
            return Err(error(Some(job), format!("job `{id}` must be a mapping")));
        }
        let name = job
            .get("name")
            .and_then(Node::scalar_value)
            .filter(|n| !n.trim().is_empty())
            .map_or_else(|| id.to_string(), |n| n.trim().to_string());
        let runs_on = match job.get("runs-on") {
            None => Vec::new(),
            Some(node) => runs_on(node).ok_or_else(|| {
                error(
                    Some(node),
                    format!("job `{id}`: `runs-on` must be a label, a list of labels, or a mapping with `labels`"),
                )
            })?,
        };
        if runs_on.is_empty() && job.get("uses").is_none() {
            return Err(error(
                Some(key),
                format!("job `{id}` has neither `runs-on` nor `uses`"),
            ));
        }
        let matrix = job.get_path(&["strategy", "matrix"]).is_some();
        jobs.push(Job {
            id: id.to_string(),
            name,
            runs_on,
            matrix,
            uses: job
                .get("uses")
                .and_then(Node::scalar_value)
                .map(str::to_string),
            line: key.span.as_ref().map_or(1, |s| s.location().line),
        });
    }
    Ok(Workflow {
        path: path.to_path_buf(),
        name,
        triggers,
        jobs,
    })
}

fn triggers(on: &Node) -> Option<Vec<Trigger>> {
    let plain = |event: &str| Trigger {
        event: event.to_string(),
        branches: None,
        branches_ignore: Vec::new(),
        tags_only: false,
    };
    if let Some(s) = on.scalar_value() {
        return Some(vec![plain(s)]);
    }
    if let Some(items) = on.as_sequence() {
        return items.iter().map(|i| i.scalar_value().map(plain)).collect();
    }
    let entries = on.as_mapping()?;
    entries
        .iter()
        .map(|(key, config)| {
            let event = key.scalar_value()?;
            let patterns = |name: &str| -> Option<Option<Vec<String>>> {
                match config.get(name) {
                    None => Some(None),
                    Some(n) => {
                        if let Some(s) = n.scalar_value() {
                            Some(Some(vec![s.to_string()]))
                        } else {
                            n.as_sequence()?
                                .iter()
                                .map(|p| p.scalar_value().map(str::to_string))
                                .collect::<Option<Vec<_>>>()
                                .map(Some)
                        }
                    }
                }
            };
            let branches = patterns("branches")?;
            let branches_ignore = patterns("branches-ignore")?.unwrap_or_default();
            let tags = config.get("tags").is_some() || config.get("tags-ignore").is_some();
            Some(Trigger {
                event: event.to_string(),
                tags_only: tags && branches.is_none() && branches_ignore.is_empty(),
                branches,
                branches_ignore,
            })
        })
        .collect()
}

fn runs_on(node: &Node) -> Option<Vec<String>> {
    if let Some(s) = node.scalar_value() {
        return Some(vec![s.trim().to_string()]);
    }
    if let Some(items) = node.as_sequence() {
        return items
            .iter()
            .map(|i| i.scalar_value().map(|s| s.trim().to_string()))
            .collect();
    }
    if node.is_mapping() {
        // `{group: ..., labels: ...}`: a runner group on GitHub; the labels are what a runner
        // must carry.
        return match node.get("labels") {
            Some(labels) => runs_on(labels),
            None => node
                .get("group")
                .and_then(Node::scalar_value)
                .map(|g| vec![format!("group:{g}")]),
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_labels_events_and_lines() {
        let text = "name: CI\non:\n  push:\n    branches: [main]\n  pull_request: {}\njobs:\n  build:\n    runs-on: ubuntu-latest\n  test:\n    name: Unit tests\n    runs-on: [self-hosted, linux, x64]\n    strategy:\n      matrix:\n        v: [1, 2]\n  group:\n    runs-on:\n      group: big\n      labels: gpu\n  call:\n    uses: ./.github/workflows/other.yaml\n";
        let wf = parse_workflow(Path::new(".github/workflows/ci.yaml"), text).unwrap();
        assert_eq!(wf.name, "CI");
        assert_eq!(wf.events().collect::<Vec<_>>(), ["push", "pull_request"]);
        let summary: Vec<_> = wf
            .jobs
            .iter()
            .map(|j| {
                (
                    j.id.as_str(),
                    j.name.as_str(),
                    j.runs_on.clone(),
                    j.matrix,
                    j.line,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "build",
                    "build",
                    vec!["ubuntu-latest".to_string()],
                    false,
                    7
                ),
                (
                    "test",
                    "Unit tests",
                    vec!["self-hosted".into(), "linux".into(), "x64".into()],
                    true,
                    9
                ),
                ("group", "group", vec!["gpu".to_string()], false, 15),
                ("call", "call", vec![], false, 19),
            ]
        );
        assert_eq!(wf.commit_events_for("main"), ["push", "pull_request"]);
        // push is filtered to main; pull requests into any branch.
        assert_eq!(wf.commit_events_for("dev"), ["pull_request"]);
        assert_eq!(
            wf.jobs[3].uses.as_deref(),
            Some("./.github/workflows/other.yaml")
        );
    }

    #[test]
    fn a_workflow_without_name_is_named_after_its_file() {
        let wf = parse_workflow(
            Path::new("w/lint.yml"),
            "on: [push]\njobs:\n  a:\n    runs-on: x\n",
        )
        .unwrap();
        assert_eq!(wf.name, "lint.yml");
        assert_eq!(wf.events().collect::<Vec<_>>(), ["push"]);
    }

    #[test]
    fn branch_filters_as_the_hosts_read_them() {
        let text = "on:\n  push:\n    branches: ['release/**', '!release/old*', main]\n    tags: ['v*']\n  pull_request:\n    branches-ignore: [main]\n  release:\n    tags: ['v*']\njobs:\n  a:\n    runs-on: x\n";
        let wf = parse_workflow(Path::new("ci.yaml"), text).unwrap();
        assert_eq!(wf.commit_events_for("main"), ["push"]);
        assert_eq!(
            wf.commit_events_for("release/1/rc"),
            ["push", "pull_request"]
        );
        assert_eq!(wf.commit_events_for("release/old-1"), ["pull_request"]);
        assert!(wf.triggers[2].tags_only);
        let tags_only = "on:\n  push:\n    tags: ['v*']\njobs:\n  a:\n    runs-on: x\n";
        let wf = parse_workflow(Path::new("t.yaml"), tags_only).unwrap();
        assert!(wf.commit_events_for("main").is_empty());
    }

    #[test]
    fn errors_name_file_and_line() {
        let err = parse_workflow(
            Path::new("ci.yaml"),
            "on: push\njobs:\n  a:\n    steps: []\n  b:\n    runs-on: {x: 1}\n",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "ci.yaml:3: job `a` has neither `runs-on` nor `uses`"
        );
        let err = parse_workflow(
            Path::new("ci.yaml"),
            "on: push\njobs:\n  b:\n    runs-on: {x: 1}\n",
        )
        .unwrap_err();
        assert_eq!(err.line, 4, "{err}");
        let err = parse_workflow(Path::new("ci.yaml"), "on: push\njobs: [\n").unwrap_err();
        assert_eq!(err.path, Path::new("ci.yaml"));
        assert!(err.line >= 2, "{err}");
    }

    #[test]
    fn gitea_reads_the_first_workflow_directory_that_exists() {
        let dir = tempfile::tempdir().unwrap();
        let job = "on: push\njobs:\n  a:\n    runs-on: x\n";
        for d in [".github/workflows", ".forgejo/workflows"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        std::fs::write(dir.path().join(".github/workflows/gh.yaml"), job).unwrap();
        std::fs::write(dir.path().join(".forgejo/workflows/fj.yml"), job).unwrap();
        std::fs::write(dir.path().join(".forgejo/workflows/notes.txt"), "x").unwrap();
        let gitea = workflows(dir.path(), Flavor::Gitea).unwrap();
        assert_eq!(gitea.len(), 1);
        assert_eq!(gitea[0].path, Path::new(".forgejo/workflows/fj.yml"));
        let github = workflows(dir.path(), Flavor::GitHub).unwrap();
        assert_eq!(github[0].path, Path::new(".github/workflows/gh.yaml"));
    }
}
