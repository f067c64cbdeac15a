//! Extracts each rule's documentation from its source, so the struct's `///` comment is the one
//! place it is written: `plumb explain CODE` prints it.
//!
//! For every `src/rules/**/*.rs`: the `///` block directly above a `pub struct NAME` (attribute
//! lines may stand between them), and, in `impl Rule for NAME`, the string literal that
//! `fn code` returns. The table `(code, struct name, doc)` is written to
//! `$OUT_DIR/rule_docs.rs`, sorted by code.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/rules");
    let mut files = Vec::new();
    collect(Path::new("src/rules"), &mut files);
    files.sort();
    let mut table: BTreeMap<String, (String, String)> = BTreeMap::new();
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let docs = struct_docs(&text);
        for (name, code) in rule_codes(&text) {
            let doc = docs.get(&name).cloned().unwrap_or_default();
            if doc.is_empty() {
                println!(
                    "cargo:warning={}: rule {code} ({name}) has no `///` doc comment above `pub struct {name}`: `plumb explain {code}` will have nothing to say",
                    file.display()
                );
            }
            table.insert(code, (name, doc));
        }
    }
    let mut out = String::from("/// `(code, rule struct, doc comment)`, sorted by code.\npub static RULE_DOCS: &[(&str, &str, &str)] = &[\n");
    for (code, (name, doc)) in &table {
        let _ = writeln!(out, "    ({code:?}, {name:?}, {doc:?}),");
    }
    out.push_str("];\n");
    let out_dir = std::env::var_os("OUT_DIR")
        .map(PathBuf::from)
        .unwrap_or_default();
    if let Err(e) = std::fs::write(out_dir.join("rule_docs.rs"), out) {
        panic!("cannot write the rule documentation table: {e}");
    }
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in read.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `pub struct NAME` → the `///` block directly above it.
fn struct_docs(text: &str) -> BTreeMap<String, String> {
    let mut docs = BTreeMap::new();
    let mut block: Vec<&str> = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix("///") {
            block.push(rest.strip_prefix(' ').unwrap_or(rest));
            continue;
        }
        if t.starts_with("#[") {
            continue;
        }
        if let Some(rest) = t.strip_prefix("pub struct ") {
            let name = ident(rest);
            if !name.is_empty() && !block.is_empty() {
                docs.insert(name, block.join("\n").trim().to_string());
            }
        }
        block.clear();
    }
    docs
}

/// `impl Rule for NAME` → the literal its `fn code` returns.
fn rule_codes(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("Rule for ") {
        let before = &rest[..at];
        let is_impl = before
            .rsplit('\n')
            .next()
            .is_some_and(|l| l.trim_start().starts_with("impl"));
        rest = &rest[at + "Rule for ".len()..];
        if !is_impl {
            continue;
        }
        let name = ident(rest);
        let Some(f) = rest.find("fn code") else {
            continue;
        };
        let after = &rest[f..];
        let Some(open) = after.find('"') else {
            continue;
        };
        let lit = &after[open + 1..];
        let Some(close) = lit.find('"') else {
            continue;
        };
        out.push((name, lit[..close].to_string()));
    }
    out
}

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}
