//! Runs plumb-template's conformance table through the gotmpl crate and counts what passes.
use std::collections::BTreeMap;
use std::sync::Arc;

use gotmpl::{Template, Value};

fn conv(j: &serde_json::Value) -> Value {
    match j {
        serde_json::Value::Null => Value::Nil,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or(0.0)),
        },
        serde_json::Value::String(s) => Value::from(s.as_str()),
        serde_json::Value::Array(a) => Value::from(a.iter().map(conv).collect::<Vec<_>>()),
        serde_json::Value::Object(o) => {
            let m: BTreeMap<String, Value> = o.iter().map(|(k, v)| (k.clone(), conv(v))).collect();
            Value::from(m)
        }
    }
}

fn main() {
    let dir = std::env::args().nth(1).expect("cases dir");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let (mut total, mut pass, mut undefined_fn) = (0, 0, 0);
    let mut failed_syntax = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let text = text.strip_suffix('\n').unwrap_or(&text);
        for chunk in text.split("\n### ").map(|c| c.trim_start_matches("### ")) {
            let mut lines = chunk.split('\n');
            let name = lines.next().unwrap_or("").to_string();
            let (mut data, mut opts) = (None, String::new());
            let mut block: Option<String> = None;
            let mut blocks: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for l in lines {
                if let Some(k) = l.strip_prefix("--- ") {
                    block = Some(k.trim().to_string());
                    blocks.insert(k.trim().to_string(), Vec::new());
                } else if let Some(b) = &block {
                    blocks.get_mut(b).unwrap().push(l.to_string());
                } else if let Some(v) = l.strip_prefix("data:") {
                    data = Some(v.trim().to_string());
                } else if let Some(v) = l.strip_prefix("opts:") {
                    opts = v.trim().to_string();
                }
            }
            let template = blocks.get("template").map(|l| l.join("\n")).unwrap_or_default();
            total += 1;
            let d = data.map(|j| conv(&serde_json::from_str(&j).unwrap())).unwrap_or(Value::Nil);
            let mut t = Template::new(&name);
            let mut via_inputs = false;
            for o in opts.split_whitespace() {
                match o {
                    "missingkey=error" => t = t.missing_key(gotmpl::MissingKey::Error),
                    "missingkey=zero" => t = t.missing_key(gotmpl::MissingKey::ZeroValue),
                    "inputs" => via_inputs = true,
                    o if o.starts_with("delims=") => {
                        let (l, r) = o[7..].split_once(',').unwrap();
                        t = t.delims(l, r);
                    }
                    _ => {}
                }
            }
            let d = if via_inputs {
                let inputs = Arc::new(d);
                t = t.func("inputs", move |_| Ok((*inputs).clone()));
                Value::Nil
            } else {
                d
            };
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                t.parse(&template).and_then(|t| t.execute_to_string(&d)).map_err(|e| e.to_string())
            }))
            .unwrap_or_else(|_| Err("panic".into()));
            let ok = match (&r, blocks.get("output"), blocks.get("error")) {
                (Ok(got), Some(want), _) => *got == want.join("\n"),
                (Err(e), None, Some(want)) => e.contains(&want.join("\n")),
                _ => false,
            };
            if ok {
                pass += 1;
            } else if matches!(&r, Err(e) if e.contains("undefined function")) {
                undefined_fn += 1;
            } else {
                failed_syntax.push(format!("{}: {name}: {:?}", f.file_name().unwrap().to_string_lossy(), r));
            }
        }
    }
    println!("{total} cases: {pass} passed, {undefined_fn} failed on a sprig/flux-operator function gotmpl lacks, {} failed otherwise", failed_syntax.len());
    for f in failed_syntax {
        println!("  {f}");
    }
}
