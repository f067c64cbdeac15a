//! The conformance table: every case in `tests/cases/*.txt` is a template, its data, and the
//! output or the error Go's text/template (with slim-sprig and flux-operator's functions)
//! gives for it, with the citation of that expectation.
//!
//! Case format, one after another with no blank line between them:
//!
//! ```text
//! ### name
//! cite: where the expected result comes from
//! data: {"json": "on one line"}          (optional; default nil data)
//! opts: missingkey=error delims=<<,>> inputs builtins   (optional)
//! --- template
//! the template, any number of lines
//! --- output                              (or `--- error`: a substring of the error text)
//! the expected output
//! ```
//!
//! A block's text is its lines joined with newlines (no final newline: end with an empty line
//! to expect one). `inputs` executes with nil data and gives the data through the `inputs`
//! function, as flux-operator does; `builtins` parses with Go's builtins only.
//! `at: LINE:COL` asserts the error's position.

use std::fs;
use std::path::Path;

use plumb_template::{Functions, MissingKey, Options, Template, Value};

#[derive(Default, Debug)]
struct Case {
    file: String,
    name: String,
    cite: String,
    data: Option<String>,
    opts: String,
    template: String,
    output: Option<String>,
    error: Option<String>,
    at: Option<String>,
}

fn parse_cases(file: &str, text: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut cur: Option<Case> = None;
    let mut block: Option<(String, Vec<String>)> = None;
    fn close_block(cur: &mut Case, block: &mut Option<(String, Vec<String>)>) {
        if let Some((kind, lines)) = block.take() {
            let text = lines.join("\n");
            match kind.as_str() {
                "template" => cur.template = text,
                "output" => cur.output = Some(text),
                "error" => cur.error = Some(text),
                other => panic!("{}: unknown block {other}", cur.name),
            }
        }
    }
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("### ") {
            if let Some(mut c) = cur.take() {
                close_block(&mut c, &mut block);
                cases.push(c);
            }
            cur = Some(Case {
                file: file.to_string(),
                name: name.trim().to_string(),
                ..Case::default()
            });
            continue;
        }
        let Some(c) = cur.as_mut() else {
            continue;
        };
        if let Some(kind) = line.strip_prefix("--- ") {
            close_block(c, &mut block);
            block = Some((kind.trim().to_string(), Vec::new()));
            continue;
        }
        if let Some((_, lines)) = block.as_mut() {
            lines.push(line.to_string());
            continue;
        }
        if let Some(v) = line.strip_prefix("cite:") {
            c.cite = v.trim().to_string();
        } else if let Some(v) = line.strip_prefix("data:") {
            c.data = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("opts:") {
            c.opts = v.trim().to_string();
        } else if let Some(v) = line.strip_prefix("at:") {
            c.at = Some(v.trim().to_string());
        } else if !line.trim().is_empty() {
            panic!("{file}: {}: unexpected line {line:?}", c.name);
        }
    }
    if let Some(mut c) = cur.take() {
        close_block(&mut c, &mut block);
        cases.push(c);
    }
    cases
}

/// Runs one case; `Err` says how it failed.
fn run(case: &Case) -> Result<(), String> {
    if case.cite.is_empty() {
        return Err("no citation".into());
    }
    let data = match &case.data {
        Some(json) => Value::from(
            serde_json::from_str::<serde_json::Value>(json)
                .map_err(|e| format!("bad data: {e}"))?,
        ),
        None => Value::Null,
    };
    // flux-operator's function map (with `inputs` an empty map), Go's default delimiters and
    // missingkey; options change them.
    let mut opts = Options::resource_set()
        .with_delims("{{", "}}")
        .with_missing_key(MissingKey::Default);
    let mut via_inputs = false;
    for opt in case.opts.split_whitespace() {
        match opt {
            "missingkey=error" => opts.missing_key = MissingKey::Error,
            "missingkey=zero" => opts.missing_key = MissingKey::Zero,
            "missingkey=default" => opts.missing_key = MissingKey::Default,
            "builtins" => opts.functions = std::sync::Arc::new(Functions::builtins()),
            "inputs" => via_inputs = true,
            o if o.starts_with("delims=") => {
                let (l, r) = o["delims=".len()..].split_once(',').ok_or("bad delims")?;
                opts = opts.with_delims(l, r);
            }
            o => return Err(format!("unknown option {o}")),
        }
    }
    let data = if via_inputs {
        opts = opts.with_inputs(data);
        Value::Null
    } else {
        data
    };
    let result = Template::parse(&case.name, &case.template, &opts).and_then(|t| t.execute(&data));
    match (&case.output, &case.error, result) {
        (Some(want), None, Ok(got)) => {
            if &got == want {
                Ok(())
            } else {
                Err(format!("output {got:?}, want {want:?}"))
            }
        }
        (Some(_), None, Err(e)) => Err(format!("error {e}")),
        (None, Some(want), Err(e)) => {
            let text = e.to_string();
            if !text.contains(want.as_str()) {
                return Err(format!("error {text:?} does not contain {want:?}"));
            }
            if let Some(at) = &case.at {
                let got = format!("{}:{}", e.line, e.column);
                if &got != at {
                    return Err(format!("error at {got}, want {at}: {text}"));
                }
            }
            Ok(())
        }
        (None, Some(want), Ok(got)) => {
            Err(format!("output {got:?}, want an error containing {want:?}"))
        }
        _ => Err("a case needs exactly one of output and error".into()),
    }
}

#[test]
fn conformance_table() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut files: Vec<_> = fs::read_dir(&dir)
        .expect("tests/cases")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for f in &files {
        let text = fs::read_to_string(f).expect("case file");
        let name = f
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        cases.extend(parse_cases(&name, &text));
    }
    let mut names = std::collections::HashSet::new();
    let mut failed = Vec::new();
    for c in &cases {
        if !names.insert(c.name.clone()) {
            failed.push(format!("{}: {}: duplicate case name", c.file, c.name));
            continue;
        }
        if let Err(why) = run(c) {
            failed.push(format!("{}: {}: {why}", c.file, c.name));
        }
    }
    let passed = cases.len() - failed.len();
    println!("{passed} passed, {} failed", failed.len());
    for f in &failed {
        println!("FAILED {f}");
    }
    assert!(cases.len() >= 150, "only {} cases", cases.len());
    assert!(
        failed.is_empty(),
        "{} of {} cases failed",
        failed.len(),
        cases.len()
    );
}
