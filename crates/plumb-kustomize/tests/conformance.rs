//! The kustomize conformance corpus (../shared/conformance/kustomize, or PLUMB_CONFORMANCE_DIR):
//! every case is built in-process and compared byte for byte with what kustomize printed, or
//! with the error it gave. Prints `N passed, M failed` and the failing names.
//!
//! `tests/conformance/expected-failures.txt` lists the cases not expected to pass yet, each with
//! a reason. The run fails when a case outside that list fails (a regression) or when a listed
//! case passes (the list must shrink). `PLUMB_CONFORMANCE_WRITE_FAILURES=1` prints the list of
//! failing cases in that file's format.

use plumb_kustomize::{build_yaml, BuildOptions, LoadRestrictor, Reorder};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn corpus_dir() -> PathBuf {
    match std::env::var_os("PLUMB_CONFORMANCE_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance/kustomize"),
    }
}

fn expected_failures() -> BTreeMap<String, String> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/expected-failures.txt");
    let text = fs::read_to_string(&path).unwrap_or_default();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once(char::is_whitespace) {
            Some((name, reason)) => (name.to_string(), reason.trim().to_string()),
            None => (l.to_string(), String::new()),
        })
        .collect()
}

enum Outcome {
    Pass,
    Fail(String),
}

fn run_case(dir: &Path) -> Outcome {
    let case: Value = match fs::read_to_string(dir.join("case.json"))
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(v) => v,
        Err(e) => return Outcome::Fail(format!("unreadable case.json: {e}")),
    };
    let input = dir.join("input");
    let build_dir = input.join(case["build_dir"].as_str().unwrap_or("."));
    let mut options = BuildOptions {
        reorder: Reorder::Legacy,
        ..BuildOptions::default()
    };
    for opt in case["options"].as_array().into_iter().flatten() {
        match opt.as_str() {
            Some("reorder=none") => options.reorder = Reorder::None,
            Some("reorder=legacy") => options.reorder = Reorder::Legacy,
            Some("reorder=unspecified") => options.reorder = Reorder::Unspecified,
            other => return Outcome::Fail(format!("unknown option {other:?}")),
        }
    }
    if case["load_restrictor"].as_str() == Some("LoadRestrictionsNone") {
        options.load_restrictor = LoadRestrictor::None;
    }
    let result = std::panic::catch_unwind(|| build_yaml(&build_dir, &options));
    let result = match result {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => return Outcome::Fail("panicked".into()),
    };
    match case["expect"].as_str() {
        Some("output") => {
            let expected = fs::read_to_string(dir.join("expected.yaml")).unwrap_or_default();
            match result {
                Ok(actual) if actual == expected => Outcome::Pass,
                Ok(actual) => Outcome::Fail(first_difference(&expected, &actual)),
                Err(e) => Outcome::Fail(format!("error: {e}")),
            }
        }
        Some("error") => {
            let Err(message) = result else {
                return Outcome::Fail("built, but kustomize fails".into());
            };
            let root = input.canonicalize().unwrap_or(input.clone());
            let message = message.replace(&root.display().to_string(), "");
            let strings = |key: &str| -> Vec<String> {
                case[key]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            };
            let ok = match case["error_match"].as_str() {
                Some("contains") | None => strings("error_contains")
                    .iter()
                    .all(|s| message.contains(s.as_str())),
                Some("equals") => case["error_equals"].as_str() == Some(message.as_str()),
                Some("kind") => strings("error_kind")
                    .iter()
                    .all(|s| message.contains(s.as_str())),
                Some("any") => true,
                Some(other) => return Outcome::Fail(format!("unknown error_match {other}")),
            };
            if ok {
                Outcome::Pass
            } else {
                Outcome::Fail(format!("wrong error: {message}"))
            }
        }
        other => Outcome::Fail(format!("unknown expect {other:?}")),
    }
}

fn first_difference(expected: &str, actual: &str) -> String {
    for (i, (e, a)) in expected.lines().zip(actual.lines()).enumerate() {
        if e != a {
            return format!("line {}: expected {e:?}, got {a:?}", i + 1);
        }
    }
    format!(
        "expected {} lines, got {}",
        expected.lines().count(),
        actual.lines().count()
    )
}

fn main() -> ExitCode {
    let root = corpus_dir();
    let Ok(entries) = fs::read_dir(&root) else {
        eprintln!(
            "CONFORMANCE CORPUS NOT FOUND at {}: set PLUMB_CONFORMANCE_DIR; no case was run",
            root.display()
        );
        return ExitCode::FAILURE;
    };
    let mut cases: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("case.json").is_file())
        .collect();
    cases.sort();
    let expected = expected_failures();
    let verbose = std::env::var_os("PLUMB_CONFORMANCE_VERBOSE").is_some();
    let (mut passed, mut failed) = (Vec::new(), Vec::new());
    for case in &cases {
        let name = case
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        match run_case(case) {
            Outcome::Pass => passed.push(name),
            Outcome::Fail(why) => {
                if verbose {
                    eprintln!("FAIL {name}: {why}");
                }
                failed.push((name, why));
            }
        }
    }
    println!(
        "kustomize conformance: {} passed, {} failed",
        passed.len(),
        failed.len()
    );
    for (name, why) in &failed {
        let short: String = why.chars().take(160).collect();
        println!("  failed: {name}: {short}");
    }
    if std::env::var_os("PLUMB_CONFORMANCE_WRITE_FAILURES").is_some() {
        for (name, _) in &failed {
            let reason = expected
                .get(name)
                .cloned()
                .unwrap_or_else(|| "not built yet".into());
            println!("{name}  {reason}");
        }
    }
    let regressions: Vec<&String> = failed
        .iter()
        .map(|(n, _)| n)
        .filter(|n| !expected.contains_key(*n))
        .collect();
    let fixed: Vec<&String> = passed
        .iter()
        .filter(|n| expected.contains_key(*n))
        .collect();
    let stale: Vec<&String> = expected
        .keys()
        .filter(|n| !cases.iter().any(|c| c.ends_with(n.as_str())))
        .collect();
    let mut ok = true;
    if !regressions.is_empty() {
        println!("REGRESSIONS (failing, not in expected-failures.txt): {regressions:?}");
        ok = false;
    }
    if !fixed.is_empty() {
        println!("NOW PASSING (remove from expected-failures.txt): {fixed:?}");
        ok = false;
    }
    if !stale.is_empty() {
        println!("UNKNOWN CASES in expected-failures.txt: {stale:?}");
        ok = false;
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
