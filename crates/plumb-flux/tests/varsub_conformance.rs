//! Runs the varsub corpus (fluxcd/pkg envsubst and drone/envsubst test cases) against
//! `plumb_flux::varsub`, prints `N passed, M failed` per kind with the failing ids, and exits
//! non-zero if any case fails or the corpus cannot be read.
//!
//! The corpus path is `$PLUMB_VARSUB_CASES`, by default `shared/conformance/varsub/cases.jsonl`
//! beside the repository.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

use plumb_flux::varsub::{self, Mode};
use serde_json::Value;

#[derive(Default)]
struct Tally {
    passed: usize,
    failed: Vec<String>,
}

impl Tally {
    fn record(&mut self, id: &str, outcome: Result<(), String>) {
        match outcome {
            Ok(()) => self.passed += 1,
            Err(why) => self.failed.push(format!("{id}: {why}")),
        }
    }

    fn report(&self, kind: &str) {
        for failure in &self.failed {
            println!("FAIL {kind} {failure}");
        }
        println!(
            "{kind}: {} passed, {} failed",
            self.passed,
            self.failed.len()
        );
    }
}

fn main() -> ExitCode {
    let path = std::env::var_os("PLUMB_VARSUB_CASES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../../shared/conformance/varsub/cases.jsonl")
        });
    let corpus = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!(
                "cannot read the varsub corpus {}: {e} (set PLUMB_VARSUB_CASES)",
                path.display()
            );
            return ExitCode::FAILURE;
        }
    };

    let mut eval = Tally::default();
    let mut func_unit = Tally::default();
    let mut parse = Tally::default();
    let mut unknown_kinds = Vec::new();
    for (number, line) in corpus.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let case: Value = match serde_json::from_str(line) {
            Ok(case) => case,
            Err(e) => {
                eval.record(
                    &format!("line {}", number + 1),
                    Err(format!("bad JSON: {e}")),
                );
                continue;
            }
        };
        let id = case["id"].as_str().unwrap_or("<no id>").to_string();
        match case["kind"].as_str() {
            Some("eval") => eval.record(&id, run_eval(&case)),
            Some("func_unit") => func_unit.record(&id, run_func_unit(&case)),
            Some("parse") => parse.record(&id, run_parse(&case)),
            other => unknown_kinds.push(format!("{id} ({other:?})")),
        }
    }

    println!(
        "parse cases: Flux's syntax tree is internal, so it is not compared; each input must \
         parse, and its references (name, operator) must be the tree's FuncNodes in order"
    );
    parse.report("parse");
    func_unit.report("func_unit");
    if !unknown_kinds.is_empty() {
        println!("not run, unknown kind: {}", unknown_kinds.join(", "));
    }
    eval.report("eval");

    let total = eval.passed + eval.failed.len();
    if total == 0 {
        println!("no eval case found in {}", path.display());
        return ExitCode::FAILURE;
    }
    if eval.failed.is_empty() && func_unit.failed.is_empty() && parse.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn string_map(value: &Value) -> Result<HashMap<String, String>, String> {
    let object = value.as_object().ok_or("`vars` is not an object")?;
    object
        .iter()
        .map(|(k, v)| match v.as_str() {
            Some(s) => Ok((k.clone(), s.to_string())),
            None => Err(format!("var {k} is not a string")),
        })
        .collect()
}

fn run_eval(case: &Value) -> Result<(), String> {
    let input = case["input"].as_str().ok_or("no `input`")?;
    let vars = string_map(&case["vars"])?;
    let mode = match case["mode"].as_str() {
        Some("strict") => Mode::Strict,
        Some("lenient") => Mode::Lenient,
        other => return Err(format!("unknown mode {other:?}")),
    };
    let got = varsub::substitute(input, &vars, mode);
    match (case["expected"].as_str(), case["error"].as_str(), got) {
        (Some(want), _, Ok(out)) if out == want => Ok(()),
        (Some(want), _, Ok(out)) => Err(format!("{input:?}: want {want:?}, got {out:?}")),
        (Some(want), _, Err(e)) => Err(format!("{input:?}: want {want:?}, got error `{e}`")),
        (None, Some(want), Err(e)) if e.to_string().contains(want) => Ok(()),
        (None, Some(want), Err(e)) => Err(format!("{input:?}: want error {want:?}, got `{e}`")),
        (None, Some(want), Ok(out)) => Err(format!("{input:?}: want error {want:?}, got {out:?}")),
        (None, None, _) => Err("neither `expected` nor `error`".into()),
    }
}

/// Drives a helper function through the syntax that reaches it: the value is `${v}`, the
/// arguments are variables `a1`, `a2`, ... read by nested `${...}` (so a negative offset can
/// reach `:`, as it only can in Flux).
fn run_func_unit(case: &Value) -> Result<(), String> {
    let func = case["func"].as_str().ok_or("no `func`")?;
    let args: Vec<&str> = case["args"]
        .as_array()
        .ok_or("no `args`")?
        .iter()
        .map(|a| a.as_str().ok_or("non-string argument"))
        .collect::<Result<_, _>>()?;
    let want = case["expected"].as_str().ok_or("no `expected`")?;
    let (value, rest) = args.split_first().ok_or("no value argument")?;
    let nested: Vec<String> = (1..=rest.len()).map(|i| format!("${{a{i}}}")).collect();
    let input = match (func, nested.as_slice()) {
        ("toLen", []) => "${#v}".to_string(),
        ("toLower", []) => "${v,,}".to_string(),
        ("toUpper", []) => "${v^^}".to_string(),
        ("toLowerFirst", []) => "${v,}".to_string(),
        ("toUpperFirst", []) => "${v^}".to_string(),
        ("toDefault", parts) => format!("${{v:={}}}", parts.concat()),
        ("toSubstr", parts @ ([_] | [_, _])) => format!("${{v:{}}}", parts.join(":")),
        _ => {
            return Err(format!(
                "no mapping for {func} with {} argument(s)",
                rest.len()
            ))
        }
    };
    let mut vars = HashMap::from([("v".to_string(), value.to_string())]);
    for (i, arg) in rest.iter().enumerate() {
        vars.insert(format!("a{}", i + 1), arg.to_string());
    }
    match varsub::substitute(&input, &vars, Mode::Strict) {
        Ok(out) if out == want => Ok(()),
        Ok(out) => Err(format!(
            "{func}{args:?} as {input}: want {want:?}, got {out:?}"
        )),
        Err(e) => Err(format!("{func}{args:?} as {input}: error `{e}`")),
    }
}

/// The (Param, Name) of every FuncNode of a Flux syntax tree, parents before their arguments.
fn func_nodes(node: &Value, out: &mut Vec<(String, String)>) {
    match node["type"].as_str() {
        Some("FuncNode") => {
            let field = |k: &str| node[k].as_str().unwrap_or_default().to_string();
            out.push((field("Param"), field("Name")));
            for arg in node["Args"].as_array().into_iter().flatten() {
                func_nodes(arg, out);
            }
        }
        Some("ListNode") => {
            for child in node["Nodes"].as_array().into_iter().flatten() {
                func_nodes(child, out);
            }
        }
        _ => {}
    }
}

fn run_parse(case: &Value) -> Result<(), String> {
    let input = case["input"].as_str().ok_or("no `input`")?;
    let refs = varsub::references(input).map_err(|e| format!("{input:?}: {e}"))?;
    let got: Vec<(String, String)> = refs.into_iter().map(|r| (r.name, r.operator)).collect();
    let mut want = Vec::new();
    func_nodes(&case["ast"], &mut want);
    if got == want {
        Ok(())
    } else {
        Err(format!("{input:?}: want {want:?}, got {got:?}"))
    }
}
