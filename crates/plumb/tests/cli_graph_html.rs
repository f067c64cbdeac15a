//! `plumb graph -o html` in a real browser: Debian's headless Chromium (scripts/ensure-chromium)
//! loads the page for the homelab example and for a generated repository of 250 Kustomizations
//! (scripts/bench-gen-repo), the page's `#test=TERM` script searches and clicks the first node
//! shown, and what the details panel then says is read back from the DOM. Screenshots of both
//! are written to target/graph-html/ to look at.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn chromium() -> PathBuf {
    let path = std::env::var_os("PLUMB_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        path.is_file(),
        "{} not found: run scripts/ensure-chromium (scripts/test does)",
        path.display()
    );
    path
}

fn page(repo: &Path, out: &Path) {
    let result = Command::cargo_bin("plumb")
        .unwrap()
        .args([
            "graph",
            "-o",
            "html",
            "--no-helm",
            "--offline",
            "--cache-dir",
        ])
        .arg(out.parent().unwrap().join("cache"))
        .arg(repo)
        .env("PLUMB_CONFIG", out.with_extension("no-config"))
        .output()
        .unwrap();
    assert!(
        result.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    std::fs::write(out, &result.stdout).unwrap();
}

/// The `<body>` attributes after the page ran with `#test=TERM`: (nodes, render ms, test).
fn run(html: &Path, term: &str, screenshot: &Path) -> (usize, f64, Value) {
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}#test={term}", html.display());
    let common = |cmd: &mut std::process::Command| {
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--window-size=1600,1000", "--virtual-time-budget=5000"]);
    };
    let mut dump = std::process::Command::new(chromium());
    common(&mut dump);
    let out = dump.arg("--dump-dom").arg(&url).output().unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let body = dom
        .split("<body")
        .nth(1)
        .and_then(|b| b.split('>').next())
        .unwrap_or_else(|| {
            panic!(
                "no <body> in what chromium printed: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
        .to_string();
    let attr = |name: &str| -> String {
        body.split(&format!("{name}=\""))
            .nth(1)
            .and_then(|v| v.split('"').next())
            .unwrap_or_else(|| panic!("no {name} on <body>: {body}"))
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
    };
    let nodes: usize = attr("data-nodes").parse().unwrap();
    let ms: f64 = attr("data-render-ms").parse().unwrap();
    let test: Value = serde_json::from_str(&attr("data-test")).unwrap();
    let mut shot = std::process::Command::new(chromium());
    common(&mut shot);
    let status = shot
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        screenshot.is_file(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    (nodes, ms, test)
}

#[test]
fn the_page_searches_and_shows_a_clicked_node_in_a_real_browser() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let shots = root.join("target/graph-html");
    std::fs::create_dir_all(&shots).unwrap();
    let dir = tempfile::tempdir().unwrap();

    let homelab = dir.path().join("homelab.html");
    page(&root.join("examples/homelab"), &homelab);
    let (nodes, ms, test) = run(&homelab, "platform-config", &shots.join("homelab.png"));
    eprintln!("homelab: {nodes} nodes laid out in {ms} ms; {test}");
    // Both clusters' sources, entries, Kustomizations and releases.
    assert!(nodes > 30, "{nodes}");
    assert_eq!(test["clicked"], "flux-system/platform-config", "{test}");
    let details = test["details"].as_str().unwrap();
    assert!(details.contains("pathplatform-config"), "{details}");
    assert!(
        details.contains("dependsOnflux-system/platform"),
        "{details}"
    );
    assert!(details.contains("objects"), "{details}");

    // The findings of `plumb check` are shown for the node they belong to.
    let (_, _, test) = run(
        &homelab,
        "entry clusters/prod",
        &shots.join("homelab-findings.png"),
    );
    eprintln!("homelab findings: {test}");
    assert_eq!(test["clicked"], "entry clusters/prod", "{test}");
    let details = test["details"].as_str().unwrap();
    assert!(
        details.contains("plumb checkSUB002 placeholder `TBD-PROD-"),
        "{details}"
    );

    let generated = dir.path().join("generated");
    let made = std::process::Command::new("python3")
        .arg(root.join("scripts/bench-gen-repo"))
        .arg(&generated)
        .args(["--kustomizations", "250"])
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let large = dir.path().join("large.html");
    page(&generated, &large);
    let (nodes, ms, test) = run(&large, "app-123", &shots.join("generated-250.png"));
    eprintln!("250 Kustomizations: {nodes} nodes laid out in {ms} ms; {test}");
    assert!(nodes >= 250, "{nodes}");
    assert_eq!(test["shown"], 1, "{test}");
    assert!(
        test["clicked"].as_str().unwrap().contains("app-123"),
        "{test}"
    );
}
