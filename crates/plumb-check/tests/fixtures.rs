//! Every rule's fixture repositories, checked as `plumb check` checks a repository: each
//! `tests/fixtures/<CODE>/bad` must produce at least one finding of CODE, each
//! `tests/fixtures/<CODE>/good` none, and the text output of both (paths relative to the
//! fixture, no colours) is an insta snapshot under `tests/snapshots/`.
//!
//! Prints `N passed, M failed` and names each failing fixture.

use plumb_check::render::text::{self, TextOptions};
use plumb_check::{CheckConfig, Report, Selection};
use plumb_flux::build::{build_repository, Options};
use std::path::{Path, PathBuf};

/// A fixture: its rule's code, `bad` or `good`, and its directory.
struct Fixture {
    code: String,
    kind: &'static str,
    dir: PathBuf,
}

fn fixtures() -> Vec<Fixture> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out = Vec::new();
    let Ok(read) = std::fs::read_dir(&root) else {
        return out;
    };
    let mut codes: Vec<String> = read
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    codes.sort();
    for code in codes {
        for kind in ["bad", "good"] {
            let dir = root.join(&code).join(kind);
            if dir.is_dir() {
                out.push(Fixture {
                    code: code.clone(),
                    kind,
                    dir,
                });
            }
        }
    }
    out
}

/// `plumb check` on a fixture: the report's text, and how many findings of the fixture's code.
fn check(fixture: &Fixture) -> Result<(String, usize), String> {
    let config = CheckConfig::load(&fixture.dir).map_err(|e| e.to_string())?;
    // A fixture that needs SOPS keys carries a test identity as `age.agekey`.
    let key_file = fixture.dir.join("age.agekey");
    let age_keys = key_file.is_file().then(|| {
        plumb_flux::sops::AgeKeys::from_file(&key_file)
            .map(std::sync::Arc::new)
            .expect("the fixture's age.agekey is an age identity")
    });
    // HelmReleases are rendered by a real helm (`PLUMB_HELM`, as scripts/test sets it, or
    // helm on PATH): what their charts install is measured, as `plumb check` measures it.
    let renderer = plumb_flux::helm_release::LazyRenderer::new(|| {
        let helm = plumb_helm::Helm::find().map_err(|e| e.to_string())?;
        Ok(plumb_flux::helm_release::Renderer {
            helm: std::sync::Arc::new(helm),
            cache: None,
        })
    });
    let options = Options {
        age_keys,
        renderer: Some(renderer),
        ..Options::default()
    };
    let build = build_repository(&fixture.dir, &options).map_err(|e| e.to_string())?;
    let selection = Selection::new(&config.rules, &[], &[]);
    let mut report = Report::run(&build, &config, &selection);
    let count = report
        .findings
        .iter()
        .filter(|f| f.code == fixture.code)
        .count();
    Ok((
        text::render(&mut report, TextOptions { color: false }),
        count,
    ))
}

#[test]
fn every_rule_fixture() {
    let fixtures = fixtures();
    assert!(!fixtures.is_empty(), "no fixture under tests/fixtures");
    let mut failed = Vec::new();
    let mut snapshots = Vec::new();
    for fixture in &fixtures {
        let name = format!("{}/{}", fixture.code, fixture.kind);
        match check(fixture) {
            Err(e) => failed.push(format!("{name}: cannot be checked: {e}")),
            Ok((text, count)) => {
                if fixture.kind == "bad" && count == 0 {
                    failed.push(format!("{name}: no {} finding", fixture.code));
                }
                if fixture.kind == "good" && count > 0 {
                    failed.push(format!("{name}: {count} {} finding(s)", fixture.code));
                }
                snapshots.push((fixture, text));
            }
        }
    }
    for (fixture, text) in snapshots {
        let name = format!("{}_{}", fixture.code, fixture.kind);
        let mut settings = insta::Settings::clone_current();
        settings.set_prepend_module_to_snapshot(false);
        settings.set_description(format!(
            "plumb check tests/fixtures/{}/{}",
            fixture.code, fixture.kind
        ));
        settings.set_omit_expression(true);
        let matched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            settings.bind(|| insta::assert_snapshot!(name, text));
        }));
        if matched.is_err() {
            failed.push(format!(
                "{}/{}: the text output differs from its snapshot (cargo insta review)",
                fixture.code, fixture.kind
            ));
        }
    }
    let failures: std::collections::BTreeSet<String> = failed
        .iter()
        .map(|f| f.split(':').next().unwrap_or("").to_string())
        .collect();
    println!(
        "fixtures: {} passed, {} failed",
        fixtures.len() - failures.len(),
        failures.len()
    );
    assert!(failed.is_empty(), "\n{}", failed.join("\n"));
}
