//! What the CLI tests of fetched sources share: writing a repository's files and running
//! `plumb build -v -o names --cache-dir CACHE [EXTRA] REPO`, with no user configuration of the
//! machine running the tests (a `PLUMB_CONFIG` that does not exist, unless `env` gives one).

#![allow(dead_code)]

use assert_cmd::Command;
use std::ffi::OsStr;
use std::fs;
use std::path::Path;

/// Writes `text` at `root/rel`, creating its directories.
pub fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

/// Copies the tree `from` into `to` (created), files and directories.
pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Exit code, stdout and stderr of `plumb build` on `repo`.
pub fn plumb_build(
    repo: &Path,
    cache: &Path,
    extra: &[&str],
    env: &[(&str, &OsStr)],
) -> (Option<i32>, String, String) {
    let mut command = Command::cargo_bin("plumb").unwrap();
    command
        .args(["build", "-v", "-o", "names", "--cache-dir"])
        .arg(cache)
        .args(extra)
        .arg(repo)
        .env("PLUMB_CONFIG", cache.join("no-user-config.yaml"));
    for (name, value) in env {
        command.env(name, value);
    }
    let out = command.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
