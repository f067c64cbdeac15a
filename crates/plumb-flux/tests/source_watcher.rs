//! source-watcher's own builder tests (fluxcd/source-watcher `internal/builder/*_test.go`),
//! replayed against plumb's ArtifactGenerator staging: the same input files, the same copy
//! operations, the same expected tree or error. Prints `N passed, M failed` and the failing
//! names.
//!
//! The corpus is `tests/source-watcher/*.yaml`: one file per Go test function, one entry per
//! Go test case, named `<GoTestFunction>/<case name>` as `go test -run` names it. Cases marked
//! `from: builder.go` are not in source-watcher's tests: they pin behaviour read from its code.
//! An entry holds
//!
//! - `sources`: alias → files (`path: content`; a path ending in `/` is an empty directory),
//!   `tarballs` (tarball path → its entries, a name ending in `/` a directory entry) and
//!   `symlinks` (link path → target);
//! - `copy`: the operations (`from`, `to`, `exclude`, `strategy`);
//! - `expect`: the staged tree, every file and directory of it (`path: content`, directories
//!   as `path/: ""`), or `expect_error`: a text the error must contain, as the Go test checks
//!   with `ContainSubstring`. With `yaml: true` file contents are compared as YAML values
//!   (the Go test's `MatchYAML`), else byte for byte.

use plumb_flux::artifact::{stage, Copy, OutputArtifact, Strategy};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/source-watcher");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/source-watcher")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let (mut passed, mut failed) = (0, Vec::new());
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read corpus");
        let docs = plumb_yaml::parse_documents(&file, &text).expect("corpus is YAML");
        for doc in docs {
            let cases = plumb_yaml::to_json(&doc).expect("corpus as JSON");
            for case in cases.as_array().expect("a list of cases") {
                let name = case["name"].as_str().expect("name").to_string();
                match run(case) {
                    Ok(()) => passed += 1,
                    Err(why) => failed.push(format!("{name}: {why}")),
                }
            }
        }
    }
    println!(
        "source-watcher builder cases: {passed} passed, {} failed",
        failed.len()
    );
    for f in &failed {
        println!("FAILED {f}");
    }
    assert!(passed > 0, "no cases ran");
    if !failed.is_empty() {
        std::process::exit(1);
    }
}

fn run(case: &Value) -> Result<(), String> {
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut sources = BTreeMap::new();
    if let Some(map) = case["sources"].as_object() {
        for (alias, tree) in map {
            let root = work.path().join("sources").join(alias);
            std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
            write_tree(&root, tree)?;
            sources.insert(alias.clone(), root);
        }
    }
    let copy = case["copy"]
        .as_array()
        .ok_or("no copy")?
        .iter()
        .map(|op| {
            let exclude: Vec<&str> = op["exclude"]
                .as_array()
                .map(|e| e.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            Copy::new(
                op["from"].as_str().unwrap_or_default(),
                op["to"].as_str().unwrap_or_default(),
                &exclude,
                Strategy::parse(op["strategy"].as_str()),
            )
        })
        .collect();
    let artifact = OutputArtifact {
        name: case["artifact"].as_str().unwrap_or("artifact").to_string(),
        revision: None,
        copy,
        place: None,
    };
    // A workspace that cannot hold a directory stands for Go's `/nonexistent/workspace`.
    let staging = if case["workspace_is_a_file"] == Value::Bool(true) {
        let file = work.path().join("workspace");
        std::fs::write(&file, "").map_err(|e| e.to_string())?;
        file.join(&artifact.name)
    } else {
        work.path().join("workspace").join(&artifact.name)
    };
    let result = stage(&artifact, &sources, &staging);
    match (&case["expect_error"], result) {
        (Value::String(want), Err(e)) if e.message.contains(want.as_str()) => Ok(()),
        (Value::String(want), Err(e)) => Err(format!("error {:?} lacks {want:?}", e.message)),
        (Value::String(want), Ok(_)) => Err(format!(
            "built, but the Go test expects an error with {want:?}"
        )),
        (_, Err(e)) => Err(format!("failed: {}", e.message)),
        (_, Ok(staged)) => compare(
            &staged.dir,
            &case["expect"],
            case["yaml"] == Value::Bool(true),
        ),
    }
}

fn write_tree(root: &Path, tree: &Value) -> Result<(), String> {
    for (path, content) in tree["files"].as_object().into_iter().flatten() {
        let p = root.join(path);
        if path.ends_with('/') {
            std::fs::create_dir_all(&p).map_err(|e| e.to_string())?;
            continue;
        }
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        std::fs::write(&p, content.as_str().unwrap_or_default()).map_err(|e| e.to_string())?;
    }
    for (path, entries) in tree["tarballs"].as_object().into_iter().flatten() {
        let p = root.join(path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        std::fs::write(&p, tarball(entries)).map_err(|e| e.to_string())?;
    }
    for (path, target) in tree["symlinks"].as_object().into_iter().flatten() {
        let p = root.join(path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        std::os::unix::fs::symlink(target.as_str().unwrap_or_default(), &p)
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// A gzip-compressed tarball of `entries` in the order written (names raw, so that a case
/// can hold a hostile name).
fn tarball(entries: &Value) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    for (name, content) in entries.as_object().into_iter().flatten() {
        let text = content.as_str().unwrap_or_default();
        let mut header = tar::Header::new_ustar();
        let dir = name.ends_with('/');
        header.set_entry_type(if dir {
            tar::EntryType::Directory
        } else {
            tar::EntryType::Regular
        });
        header.set_mode(if dir { 0o755 } else { 0o644 });
        header.set_size(if dir { 0 } else { text.len() as u64 });
        let slot: &mut [u8] = &mut header.as_old_mut().name;
        slot[..name.len()].copy_from_slice(name.as_bytes());
        header.set_cksum();
        builder
            .append(&header, if dir { &[][..] } else { text.as_bytes() })
            .expect("tar entry");
    }
    builder.into_inner().expect("tar").finish().expect("gzip")
}

/// The staged tree against the expected one: the same paths, the same contents.
fn compare(dir: &Path, expect: &Value, yaml: bool) -> Result<(), String> {
    let want: BTreeMap<&String, &Value> = expect.as_object().ok_or("no expect")?.iter().collect();
    let got = tree(dir);
    let want_paths: Vec<&String> = want.keys().copied().collect();
    let got_paths: Vec<&String> = got.keys().collect();
    if want_paths != got_paths {
        return Err(format!("tree {got_paths:?}, want {want_paths:?}"));
    }
    for (path, content) in want {
        if path.ends_with('/') {
            continue;
        }
        let want_text = content.as_str().unwrap_or_default();
        let got_text = &got[path.as_str()];
        let same = if yaml {
            as_yaml(want_text) == as_yaml(got_text)
        } else {
            want_text == got_text
        };
        if !same {
            return Err(format!("{path}: {got_text:?}, want {want_text:?}"));
        }
    }
    Ok(())
}

fn as_yaml(text: &str) -> Option<Value> {
    let docs = plumb_yaml::parse_documents("<yaml>", text).ok()?;
    plumb_flux::yaml_json::node_to_json(docs.first()?).ok()
}

/// Every file (with its text) and directory (`path/`) under `dir`.
fn tree(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let rel = e
                .path()
                .strip_prefix(dir)
                .expect("inside")
                .display()
                .to_string();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.insert(format!("{rel}/"), String::new());
                stack.push(e.path());
            } else {
                let text = std::fs::read_to_string(e.path()).unwrap_or_else(|_| "<binary>".into());
                out.insert(rel, text);
            }
        }
    }
    out
}
