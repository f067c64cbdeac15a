//! Suppression end to end, on a copy of the SUB002 `bad` fixture (two findings: `CHANGEME` in
//! apps/web/alerting.yaml line 7, `TBD-DEV-WEB-VIP` in clusters/dev/cluster-vars.yaml line 9):
//! `# plumb:ignore` on the line and above it, a comment without a reason, `rules.severity`,
//! `rules.perPathIgnores`, `rules.ignore` and the command line's selection.

mod common;

use plumb_check::{CheckConfig, Report, Selection, Severity};
use plumb_flux::build::{build_repository, Options};

/// The fixture with `edit(path, text) -> text` applied to its files, and extra `.plumb.yaml`
/// lines; returns the codes and lines of what is reported, and the suppressed count.
fn check(
    edit: &dyn Fn(&str, String) -> String,
    config_extra: &str,
    cli_ignore: &[&str],
) -> (Vec<(String, usize, Severity)>, usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    common::copy_dir(&common::fixture("SUB002", "bad"), dir.path());
    for rel in [
        "apps/web/alerting.yaml",
        "clusters/dev/cluster-vars.yaml",
        ".plumb.yaml",
    ] {
        let path = dir.path().join(rel);
        let text = std::fs::read_to_string(&path).expect("read");
        let mut text = edit(rel, text);
        if rel == ".plumb.yaml" {
            text.push_str(config_extra);
        }
        std::fs::write(&path, text).expect("write");
    }
    let config = CheckConfig::load(dir.path()).expect("config");
    let build = build_repository(dir.path(), &Options::default()).expect("build");
    let ignore: Vec<String> = cli_ignore.iter().map(|s| s.to_string()).collect();
    let report = Report::run(
        &build,
        &config,
        &Selection::new(&config.rules, &[], &ignore),
    );
    let found = report
        .findings
        .iter()
        .map(|f| {
            (
                f.code.to_string(),
                f.location.as_ref().map_or(0, |l| l.line),
                f.severity,
            )
        })
        .collect();
    (found, report.suppressed)
}

fn none(_: &str, text: String) -> String {
    text
}

#[test]
fn unsuppressed() {
    let (found, suppressed) = check(&none, "", &[]);
    assert_eq!(
        found,
        vec![
            ("SUB002".into(), 7, Severity::Error),
            ("SUB002".into(), 9, Severity::Error)
        ]
    );
    assert_eq!(suppressed, 0);
}

#[test]
fn a_comment_on_the_line_or_above_suppresses_with_a_reason() {
    let edit = |rel: &str, text: String| {
        match rel {
        "apps/web/alerting.yaml" => text.replace(
            "ALERT_EMAIL: CHANGEME",
            "ALERT_EMAIL: CHANGEME # plumb:ignore SUB002 alerting is off in dev",
        ),
        "clusters/dev/cluster-vars.yaml" => text.replace(
            "  WEB_VIP:",
            "  # plumb:ignore SUB002 dev has no load balancer yet\n  # (see the tracking issue)\n  WEB_VIP:",
        ),
        _ => text,
    }
    };
    let (found, suppressed) = check(&edit, "", &[]);
    assert_eq!(found, vec![]);
    assert_eq!(suppressed, 2);
}

#[test]
fn a_comment_without_reason_or_for_another_code_suppresses_nothing() {
    let edit = |rel: &str, text: String| match rel {
        "apps/web/alerting.yaml" => text.replace(
            "ALERT_EMAIL: CHANGEME",
            "ALERT_EMAIL: CHANGEME # plumb:ignore SUB002",
        ),
        "clusters/dev/cluster-vars.yaml" => text.replace(
            "  WEB_VIP:",
            "  # plumb:ignore SUB001 not this rule\n  WEB_VIP:",
        ),
        _ => text,
    };
    let (found, suppressed) = check(&edit, "", &[]);
    assert_eq!(
        found,
        vec![
            ("SUB002".into(), 7, Severity::Error),
            ("IGN001".into(), 7, Severity::Error),
            ("SUB002".into(), 10, Severity::Error)
        ]
    );
    assert_eq!(suppressed, 0);
}

#[test]
fn configuration_severity_per_path_and_ignore() {
    let (found, suppressed) = check(
        &none,
        "rules:\n  severity: {SUB002: warning}\n  perPathIgnores:\n    SUB: [\"apps/**\"]\n",
        &[],
    );
    assert_eq!(found, vec![("SUB002".into(), 9, Severity::Warning)]);
    assert_eq!(suppressed, 1);
    let (found, _) = check(&none, "rules:\n  ignore: [SUB002]\n", &[]);
    assert_eq!(found, vec![]);
    let (found, _) = check(&none, "", &["SUB"]);
    assert_eq!(found, vec![]);
}
