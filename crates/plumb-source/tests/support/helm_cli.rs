//! The real Helm the test command installs (`scripts/ensure-helm`, `PLUMB_HELM`): fixture
//! charts written to disk, `helm package`d and `helm push`ed to a test registry over plain
//! HTTP, with Helm's own configuration and caches kept in a temporary directory.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The helm binary: `PLUMB_HELM`, else the one `scripts/ensure-helm` installs.
pub fn helm_binary() -> PathBuf {
    let path = std::env::var_os("PLUMB_HELM")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-venv/bin/helm")
        });
    assert!(
        path.is_file(),
        "{} is missing: run scripts/ensure-helm",
        path.display()
    );
    path
}

/// Helm with its homes in one temporary directory.
pub struct Helm {
    home: tempfile::TempDir,
}

impl Helm {
    pub fn new() -> Helm {
        Helm {
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn run(&self, args: &[&str]) -> String {
        let home = self.home.path();
        let output = Command::new(helm_binary())
            .args(args)
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_DATA_HOME", home.join("data"))
            .env("HOME", home)
            .output()
            .expect("helm runs");
        assert!(
            output.status.success(),
            "helm {args:?}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// `helm package DIR` into a fresh directory; the `.tgz`'s path.
    pub fn package(&self, chart: &Path) -> PathBuf {
        let out = self.home.path().join(format!(
            "packages-{}",
            fs::read_dir(self.home.path()).unwrap().count()
        ));
        fs::create_dir_all(&out).unwrap();
        self.run(&[
            "package",
            chart.to_str().unwrap(),
            "-d",
            out.to_str().unwrap(),
        ]);
        let tgz = fs::read_dir(&out).unwrap().next().unwrap().unwrap().path();
        assert_eq!(tgz.extension().unwrap(), "tgz");
        tgz
    }

    /// `helm push TGZ oci://... --plain-http`, with credentials when given.
    pub fn push(&self, tgz: &Path, repo_url: &str, login: Option<(&str, &str)>) {
        let mut args = vec!["push", tgz.to_str().unwrap(), repo_url, "--plain-http"];
        if let Some((user, password)) = login {
            args.extend(["--username", user, "--password", password]);
        }
        self.run(&args);
    }

    /// `helm template rel DIR`: the rendered manifests.
    pub fn template(&self, chart: &Path) -> String {
        self.run(&["template", "rel", chart.to_str().unwrap()])
    }

    /// `helm repo index DIR`: an `index.yaml` whose URLs are the `.tgz` names, relative.
    pub fn repo_index(&self, dir: &Path) -> String {
        self.run(&["repo", "index", dir.to_str().unwrap()]);
        fs::read_to_string(dir.join("index.yaml")).unwrap()
    }

    /// Writes a chart `name` at `version` under `parent` and packages it.
    pub fn chart(&self, parent: &Path, name: &str, version: &str) -> PathBuf {
        let dir = write_chart(parent, name, version, "");
        self.package(&dir)
    }
}

/// A chart directory `parent/name` (Chart.yaml with `extra` appended, values, one template).
pub fn write_chart(parent: &Path, name: &str, version: &str, extra: &str) -> PathBuf {
    let dir = parent.join(name);
    fs::create_dir_all(dir.join("templates")).unwrap();
    fs::write(
        dir.join("Chart.yaml"),
        format!("apiVersion: v2\nname: {name}\nversion: {version}\n{extra}"),
    )
    .unwrap();
    fs::write(dir.join("values.yaml"), format!("chart: {name}\n")).unwrap();
    fs::write(
        dir.join("templates/configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Chart.Name }}-{{ .Release.Name }}\n",
    )
    .unwrap();
    dir
}
