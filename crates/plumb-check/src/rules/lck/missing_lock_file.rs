//! LCK001: OpenTofu/Terraform roots without a dependency lock file.

use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};
use crate::rules::repo_files;
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

/// ## What it does
/// Finds OpenTofu/Terraform root modules without a committed `.terraform.lock.hcl`. A root is a
/// directory whose `.tf` files have a `terraform { ... }` block or `provider "..." { ... }`
/// blocks, and which no other configuration in the repository uses as a local module
/// (`source = "../modules/x"`, or a Terragrunt unit's `source = "../..//modules/x"`): child
/// modules have no lock file of their own, and Terragrunt keeps a unit's beside its
/// `terragrunt.hcl`, wherever it generates the unit.
///
/// ## Why is this bad?
/// Without the lock file every `tofu init` resolves the provider constraints afresh: the
/// laptop, CI and next month's run each may get another provider version, and nothing checks
/// the providers' checksums, so a tampered provider binary is installed without complaint. The
/// lock file is what makes a plan reviewed today the plan applied tomorrow.
///
/// ## Example
/// ```text
/// infra/state-bucket/
///   main.tf        # terraform { required_providers { minio = ... } }
/// ```
///
/// Use instead:
/// ```text
/// infra/state-bucket/
///   main.tf
///   .terraform.lock.hcl   # `tofu init`, then commit it
/// ```
///
/// `tofu providers lock -platform=linux_amd64 -platform=darwin_arm64` records the checksums
/// of every platform that runs it.
pub struct MissingLockFile;

const LOCK_FILE: &str = ".terraform.lock.hcl";

impl Rule for MissingLockFile {
    fn code(&self) -> &'static str {
        "LCK001"
    }

    fn summary(&self) -> &'static str {
        "an OpenTofu/Terraform root without `.terraform.lock.hcl`"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        let mut by_dir: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
        let mut hcl = Vec::new();
        for file in repo_files::files(cx.root) {
            let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if file.extension().is_some_and(|e| e == "tf" || e == "tofu") {
                if let Some(dir) = file.parent() {
                    by_dir.entry(dir.to_path_buf()).or_default().push(file);
                }
            } else if name.ends_with(".hcl") && name != LOCK_FILE && !name.ends_with(".tftest.hcl")
            {
                hcl.push(file);
            }
        }
        let mut modules = BTreeSet::new();
        // Terragrunt's units name the module they run (`source = "../..//modules/x"`), often
        // with a path written for where a stack generates the unit: the part after `//` is the
        // module's path inside the tree copied, which names it wherever the unit is.
        let mut module_suffixes = BTreeSet::new();
        for file in &hcl {
            let (Some(dir), Ok(text)) = (file.parent(), std::fs::read_to_string(file)) else {
                continue;
            };
            for source in local_module_sources(&text) {
                if let Some((_, inside)) = source.split_once("//") {
                    module_suffixes.insert(normalize(Path::new(inside.trim_start_matches('/'))));
                }
                modules.insert(normalize(&dir.join(source)));
            }
        }
        let mut roots = Vec::new();
        for (dir, files) in &by_dir {
            let mut marker = None;
            for file in files {
                let Ok(text) = std::fs::read_to_string(file) else {
                    continue;
                };
                for source in local_module_sources(&text) {
                    modules.insert(normalize(&dir.join(source)));
                }
                if marker.is_none() {
                    marker = root_marker(&text)
                        .map(|(line, column, width)| (file.clone(), line, column, width));
                }
            }
            if let Some(marker) = marker {
                roots.push((dir.clone(), marker));
            }
        }
        for (dir, (file, line, column, width)) in roots {
            let dir_normal = normalize(&dir);
            let sourced_by_terragrunt = module_suffixes
                .iter()
                .any(|suffix| !suffix.as_os_str().is_empty() && dir_normal.ends_with(suffix));
            if modules.contains(&dir_normal)
                || sourced_by_terragrunt
                || dir.join(LOCK_FILE).is_file()
            {
                continue;
            }
            let rel_dir = repo_files::relative(cx.root, &dir);
            let shown = if rel_dir.as_os_str().is_empty() {
                ".".to_string()
            } else {
                rel_dir.display().to_string()
            };
            out.push(
                Finding::new(
                    "LCK001",
                    format!("OpenTofu/Terraform root `{shown}` has no `{LOCK_FILE}`: each `init` may install other provider versions, with no checksum checked"),
                    format!("run `tofu init` (or `terraform init`) in `{shown}` and commit `{LOCK_FILE}`"),
                )
                .at(Some(Location::line(
                    repo_files::relative(cx.root, &file),
                    line,
                    column,
                    width,
                ))),
            );
        }
    }
}

/// The first `terraform {` or `provider "name" {` block opening: its line, column and width.
fn root_marker(text: &str) -> Option<(usize, usize, usize)> {
    static BLOCK: OnceLock<Regex> = OnceLock::new();
    let block = BLOCK.get_or_init(|| {
        Regex::new(r#"^(\s*)(terraform\s*\{|provider\s+"[^"]*"\s*\{)"#).expect("a valid regex")
    });
    text.lines().enumerate().find_map(|(i, line)| {
        let m = block.captures(line)?;
        let indent = m.get(1).map_or(0, |g| g.as_str().chars().count());
        let keyword = m.get(2)?.as_str();
        let width = keyword.trim_end_matches('{').trim_end().chars().count();
        Some((i + 1, indent + 1, width))
    })
}

/// The local paths `module` blocks load (`source = "./modules/x"`, `"../x"`).
fn local_module_sources(text: &str) -> Vec<String> {
    static SOURCE: OnceLock<Regex> = OnceLock::new();
    let source = SOURCE.get_or_init(|| {
        Regex::new(r#"(?m)^\s*source\s*=\s*"(\.{1,2}/[^"]*)""#).expect("a valid regex")
    });
    source
        .captures_iter(text)
        .filter_map(|c| c.get(1).map(|m| m.as_str().to_string()))
        .collect()
}

/// A path with `.` and `..` resolved without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_and_modules() {
        assert_eq!(root_marker("# x\nterraform {\n}\n"), Some((2, 1, 9)));
        assert_eq!(root_marker("provider \"aws\" {\n"), Some((1, 1, 14)));
        assert_eq!(root_marker("resource \"x\" \"y\" {}\n"), None);
        assert_eq!(
            local_module_sources("module \"b\" {\n  source = \"../modules/bucket\"\n}\nmodule \"r\" {\n  source = \"hashicorp/x/aws\"\n}\n"),
            vec!["../modules/bucket".to_string()]
        );
        assert_eq!(
            normalize(Path::new("/a/b/../c/./d")),
            PathBuf::from("/a/c/d")
        );
    }
}
