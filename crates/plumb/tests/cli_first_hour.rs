//! What a new user meets in the first hour (issue #17): `-q`/`-v`/`-vv`, the README's main
//! command and its SOPS Secrets, placeholder patterns as documented. Each test runs the binary
//! as a user would and checks the exit code and the words printed.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn homelab() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/homelab")
}

/// plumb with no age key, no user configuration and no helm from the environment.
fn plumb(cache: &Path) -> Command {
    let mut cmd = Command::cargo_bin("plumb").expect("the plumb binary");
    cmd.env_remove("SOPS_AGE_KEY_FILE")
        .env_remove("SOPS_AGE_KEY")
        .env_remove("NO_COLOR")
        .env("PLUMB_CONFIG", cache.join("no-user-config.yaml"))
        .env("PLUMB_CACHE_DIR", cache);
    cmd
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().expect("plumb runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// Whitespace runs as one space, so that wrapped text compares with unwrapped text.
fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn placeholder_star_matches_what_docs_and_explain_say() {
    // docs/config.md and `plumb explain SUB002` say the same thing about `*` ...
    let said = "`*` matches any run of letters, digits, `-` and `_`";
    let cache = tempfile::tempdir().expect("temp dir");
    let (code, explain, _) = run(plumb(cache.path()).args(["explain", "SUB002"]));
    assert_eq!(code, 0);
    assert!(words(&explain).contains(said), "{explain}");
    let docs = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/config.md"),
    )
    .expect("docs/config.md");
    assert!(words(&docs.replace("\n#", "\n")).contains(said));
    assert!(!docs.contains("matches any run of characters"));

    // ... and the rule does it: a word of those characters, never past a `.` or a space, and
    // never inside another word.
    let repo = tempfile::tempdir().expect("temp dir");
    write(
        repo.path(),
        ".plumb.yaml",
        "clusters: [clusters/dev]\nplaceholders: [\"TODO-*\"]\n",
    );
    write(
        repo.path(),
        "clusters/dev/kustomization.yaml",
        "resources: [app.yaml]\n",
    );
    write(
        repo.path(),
        "clusters/dev/app.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\ndata:\n  host: TODO-db.lan\n  words: TODO-a b\n  glued: xTODO-1\n  bare: TODO-\n",
    );
    let (code, stdout, _) = run(plumb(cache.path())
        .args(["check", "--color", "never"])
        .arg(repo.path()));
    assert_eq!(code, 1, "{stdout}");
    let found: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("error[SUB002]: placeholder `"))
        .filter_map(|l| l.split('`').next())
        .collect();
    assert_eq!(found, ["TODO-db", "TODO-a", "TODO-"], "{stdout}");
}

/// `plumb build ARGS examples/homelab --entry clusters/dev`, offline, with a helm that does
/// not exist (so the warning that HelmReleases are not rendered is always there to hide).
fn homelab_dev(cache: &Path, args: &[&str]) -> (i32, String, String) {
    run(plumb(cache)
        .arg("build")
        .args(args)
        .arg(homelab())
        .args(["--entry", "clusters/dev", "--offline", "-o", "names"])
        .env("PLUMB_HELM", cache.join("no-helm-here")))
}

#[test]
fn quiet_prints_only_errors() {
    let cache = tempfile::tempdir().expect("temp dir");
    let (code, stdout, stderr) = homelab_dev(cache.path(), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("warning: HelmReleases are not rendered")
            && stderr.contains("plumb: 6 Kustomizations in 1 cluster"),
        "{stderr}"
    );
    let (code, quiet_stdout, stderr) = homelab_dev(cache.path(), &["-q"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert_eq!(quiet_stdout, stdout, "-q changes stderr only");

    let (code, _, stderr) = run(plumb(cache.path()).args(["build", "-q", "/no/such/repository"]));
    assert_eq!(code, 2);
    assert!(stderr.starts_with("error: "), "{stderr}");
}

#[test]
fn verbose_says_what_each_kustomization_built_and_very_verbose_times_each_stage() {
    let cache = tempfile::tempdir().expect("temp dir");
    let (code, _, stderr) = homelab_dev(cache.path(), &["-v"]);
    assert_eq!(code, 0, "{stderr}");
    let built: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("  clusters/dev: built "))
        .collect();
    assert_eq!(built.len(), 6, "{stderr}");
    let platform = built
        .iter()
        .find(|l| l.contains(" flux-system/platform "))
        .expect("the platform Kustomization");
    assert!(
        platform.starts_with("  clusters/dev: built flux-system/platform (platform) from GitRepository/flux-system/flux-system: 18 objects in ")
            && platform.ends_with(" s"),
        "{platform}"
    );
    assert!(!stderr.contains("timing:"), "{stderr}");
    // Without helm, the warning says why once; each release's line does not repeat it.
    let releases: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("  clusters/dev: not rendered HelmRelease "))
        .collect();
    assert!(!releases.is_empty(), "{stderr}");
    assert!(
        releases
            .iter()
            .all(|l| l.ends_with(": no usable helm (the warning above says why)")),
        "{stderr}"
    );
    let why = stderr
        .lines()
        .find_map(|l| l.strip_prefix("warning: HelmReleases are not rendered: "))
        .expect("the warning");
    assert_eq!(stderr.matches(why).count(), 1, "{stderr}");

    let (code, _, stderr) = homelab_dev(cache.path(), &["-vv"]);
    assert_eq!(code, 0, "{stderr}");
    let timing: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("timing: "))
        .collect();
    let stages: Vec<&str> = timing
        .iter()
        .map(|l| l.split([' ', ':']).next().unwrap_or(""))
        .collect();
    assert_eq!(
        stages,
        ["discovery", "sources", "clusters/dev", "output", "total"],
        "{stderr}"
    );
    assert!(
        timing[2].starts_with("clusters/dev: kustomize builds ")
            && timing[2].contains(" s, helm rendering "),
        "{stderr}"
    );
    // The summary line stays last.
    assert!(stderr
        .trim_end()
        .lines()
        .last()
        .unwrap_or("")
        .starts_with("plumb: "));
}

#[test]
fn nothing_is_drawn_when_stderr_is_not_a_terminal() {
    let cache = tempfile::tempdir().expect("temp dir");
    for args in [&[][..], &["-v"][..]] {
        let (_, _, stderr) = homelab_dev(cache.path(), args);
        assert!(
            !stderr.contains('\r') && !stderr.contains('\u{1b}') && !stderr.contains("building "),
            "{stderr:?}"
        );
    }
}

/// On a terminal (util-linux `script` gives the command one) the build shows what it is doing;
/// `-q` hides that too.
#[test]
fn a_terminal_sees_the_build_in_progress_unless_quiet() {
    let cache = tempfile::tempdir().expect("temp dir");
    let bin = assert_cmd::cargo::cargo_bin("plumb");
    let on_terminal = |extra: &str| {
        let command = format!(
            "{} build {extra} --no-helm --offline -o names {} >/dev/null",
            bin.display(),
            homelab().display()
        );
        let (code, stdout, _) = run(Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .env_remove("SOPS_AGE_KEY_FILE")
            .env("PLUMB_CONFIG", cache.path().join("no-user-config.yaml"))
            .env("PLUMB_CACHE_DIR", cache.path()));
        assert_eq!(code, 0, "{stdout}");
        stdout
    };
    let shown = on_terminal("");
    assert!(
        shown.contains("building ") && shown.contains("homelab") && shown.contains("plumb: "),
        "{shown:?}"
    );
    let quiet = on_terminal("-q");
    assert!(
        !quiet.contains("building ") && !quiet.contains("plumb: "),
        "{quiet:?}"
    );
}

/// The README's main command: the example's SOPS Secrets are checked with its test key, and the
/// output says so for each; without the key it says they are not decrypted.
#[test]
fn the_readme_command_says_whether_each_sops_secret_decrypts() {
    let cache = tempfile::tempdir().expect("temp dir");
    let key = homelab().join("age.agekey");
    let build = |key: Option<&Path>, verbose: bool| {
        let mut cmd = plumb(cache.path());
        cmd.args(["build", "--no-helm", "-o", "names"]);
        if verbose {
            cmd.arg("-v");
        }
        if let Some(key) = key {
            cmd.env("SOPS_AGE_KEY_FILE", key);
        }
        run(cmd.arg(homelab()))
    };
    let summary = |stderr: &str| stderr.lines().last().unwrap_or("").to_string();

    let (code, _, stderr) = build(Some(&key), false);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        summary(&stderr).ends_with("; 2 SOPS Secrets decrypt with the age key given"),
        "{stderr}"
    );
    let (_, _, stderr) = build(Some(&key), true);
    for cluster in ["dev", "prod"] {
        let line = format!("  clusters/{cluster}: SOPS Secret backup/s3-credentials (apps/wave-1/backup/s3-credentials.sops.yaml, Kustomization flux-system/apps-wave-1): decrypts with the age key given");
        assert!(stderr.contains(&line), "{line}\n{stderr}");
    }

    let (code, _, stderr) = build(None, false);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        summary(&stderr)
            .ends_with("; 2 SOPS Secrets not decrypted (no age key given: SOPS_AGE_KEY_FILE)"),
        "{stderr}"
    );

    // A key that is not the example's: the Secrets are named, and why they do not decrypt.
    let other = cache.path().join("other.agekey");
    std::fs::write(
        &other,
        "AGE-SECRET-KEY-1GFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPQ4EGAEX\n",
    )
    .expect("write key");
    let (_, _, stderr) = build(Some(&other), true);
    assert!(
        summary(&stderr).ends_with("; 2 SOPS Secrets: 0 decrypt, 2 do not (-v says why)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("  clusters/dev: SOPS Secret backup/s3-credentials (apps/wave-1/backup/s3-credentials.sops.yaml, Kustomization flux-system/apps-wave-1): not decrypted: "),
        "{stderr}"
    );
}

/// `plumb state get` and `history` only decrypt: `--recipient` is neither offered nor
/// accepted, and the error without a key names only what they take. `put` still takes it.
#[test]
fn state_get_and_history_take_no_recipient() {
    let cache = tempfile::tempdir().expect("temp dir");
    let store = format!("file://{}", cache.path().join("state").display());
    for sub in ["get", "history"] {
        let (code, help, _) = run(plumb(cache.path()).args(["state", sub, "--help"]));
        assert_eq!(code, 0);
        assert!(
            help.contains("--identity <FILE>") && !help.contains("--recipient"),
            "{help}"
        );
        let (code, _, stderr) = run(plumb(cache.path())
            .args(["state", sub, "--stack", "s", "--store", &store])
            .args(["--recipient", "age1xyz"]));
        assert_eq!(code, 2);
        assert!(
            stderr.contains("unexpected argument '--recipient'"),
            "{stderr}"
        );
        let (code, _, stderr) = run(plumb(cache.path())
            .args(["state", sub, "--stack", "s", "--store", &store])
            .env_remove("PLUMB_STATE_IDENTITY")
            .env_remove("PLUMB_STATE_PASSPHRASE"));
        assert_eq!(code, 2);
        assert!(
            stderr.contains("no key: give --identity FILE") && !stderr.contains("recipient"),
            "{stderr}"
        );
    }
    let (code, help, _) = run(plumb(cache.path()).args(["state", "put", "--help"]));
    assert_eq!(code, 0);
    assert!(
        help.contains("--recipient <AGE1>") && help.contains("repeatable"),
        "{help}"
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A key that decrypts the Secret is not enough when the Kustomization does not ask
/// kustomize-controller to decrypt: the cluster would get the encrypted text.
#[test]
fn a_sops_secret_whose_kustomization_has_no_decryption_is_not_decrypted() {
    let cache = tempfile::tempdir().expect("temp dir");
    let repo = tempfile::tempdir().expect("temp dir");
    copy_dir(&homelab(), repo.path());
    let apps = repo.path().join("clusters/base/apps.yaml");
    let text = std::fs::read_to_string(&apps).expect("apps.yaml");
    let stanza = "  decryption:\n    provider: sops\n    secretRef:\n      name: sops-age\n";
    assert!(text.contains(stanza));
    std::fs::write(&apps, text.replace(stanza, "")).expect("write apps.yaml");
    let (code, _, stderr) = run(plumb(cache.path())
        .args([
            "build",
            "-v",
            "--no-helm",
            "-o",
            "names",
            "--entry",
            "clusters/dev",
        ])
        .arg(repo.path())
        .env("SOPS_AGE_KEY_FILE", homelab().join("age.agekey")));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("  clusters/dev: SOPS Secret backup/s3-credentials (apps/wave-1/backup/s3-credentials.sops.yaml, Kustomization flux-system/apps-wave-1): not decrypted: its Kustomization has no spec.decryption (provider: sops), so kustomize-controller applies it encrypted"),
        "{stderr}"
    );
    assert!(
        stderr
            .trim_end()
            .ends_with("; 1 SOPS Secret: 0 decrypt, 1 does not (-v says why)"),
        "{stderr}"
    );
}

/// The README's section "Using plumb on your repository": the commands of its first example run
/// at a repository's root as shown (here the example's), and what it says of `.plumb.yaml`
/// holds: an unknown key is exit 2 naming the closest valid key.
#[test]
fn the_readme_section_on_your_repository_holds() {
    let readme = std::fs::read_to_string(homelab().join("../../README.md")).expect("README");
    let section = readme
        .split("## Using plumb on your repository")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("the README has the section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the section shows commands");
    let commands: Vec<Vec<&str>> = block
        .lines()
        .filter_map(|l| l.strip_prefix("plumb "))
        .map(|l| {
            l.split('#')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect()
        })
        .collect();
    assert_eq!(commands.len(), 2, "{block}");
    let cache = tempfile::tempdir().expect("temp dir");
    for args in &commands {
        let (code, stdout, stderr) = run(plumb(cache.path())
            .current_dir(homelab())
            .args(args)
            .arg("--no-helm"));
        assert!(
            code == 0 || code == 1,
            "plumb {args:?}: exit {code}\n{stderr}"
        );
        assert!(
            !stdout.is_empty(),
            "plumb {args:?} printed nothing\n{stderr}"
        );
    }
    // `plumb build -o names` prints kind/namespace/name per object.
    let (_, names, _) = run(plumb(cache.path())
        .current_dir(homelab())
        .args(&commands[0])
        .arg("--no-helm"));
    assert!(
        names
            .lines()
            .any(|l| l == "ConfigMap/flux-system/cluster-vars"),
        "{names}"
    );
    assert!(
        names
            .lines()
            .all(|l| l.starts_with("# Entry: ") || l.split('/').count() == 3),
        "{names}"
    );

    let repo = tempfile::tempdir().expect("temp dir");
    write(repo.path(), ".plumb.yaml", "clustrs: [clusters/dev]\n");
    write(
        repo.path(),
        "clusters/dev/kustomization.yaml",
        "resources: []\n",
    );
    let (code, _, stderr) = run(plumb(cache.path()).arg("build").arg(repo.path()));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(".plumb.yaml:1: unknown key `clustrs`; did you mean `clusters`?"),
        "{stderr}"
    );
}
