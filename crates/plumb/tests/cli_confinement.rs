//! No build reads outside the repository: every way a kustomization can name a file outside it
//! (`../`, an absolute path, a symlinked file or directory, `/proc/self/environ`, `/dev/zero`, a
//! FIFO, a symlinked kustomization.yaml, a Flux `spec.path` through a symlink) is refused by
//! `plumb build` and `plumb check`, and `plumb kustomize build` refuses what kustomize refuses.
//! Each command runs under `strace`, and the test fails if the process opened anything outside
//! the repository: the refusal must come before the open, not after.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Written into every file outside the repository and into the environment of every run: it
/// appears in an output only if something outside was read.
const MARKER: &str = "OUTSIDE-MARKER";

/// A temporary directory holding `repo/` (the repository, one cluster `clusters/dev`) and
/// `outside/` (files a build must never read).
struct Layout {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    outside: PathBuf,
}

impl Layout {
    fn new() -> Layout {
        let tmp = tempfile::tempdir().expect("temp dir");
        let base = tmp.path().canonicalize().expect("canonical temp dir");
        let layout = Layout {
            repo: base.join("repo"),
            outside: base.join("outside"),
            _tmp: tmp,
        };
        let cm = |name: &str| {
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\ndata:\n  token: {MARKER}\n")
        };
        layout.write_outside("secret.yaml", &cm("leak"));
        layout.write_outside("kustomization.yaml", "resources: [secret.yaml]\n");
        layout.write_outside("env.txt", &format!("TOKEN={MARKER}\n"));
        layout.write_outside(
            "patch.yaml",
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  labels:\n    leak: {MARKER}\n"),
        );
        layout.write_outside("crd.json", &format!("{{\"{MARKER}\": {{}}}}\n"));
        layout.write_outside(
            "openapi.json",
            &format!("{{\"definitions\": {{\"{MARKER}\": {{}}}}}}\n"),
        );
        layout.write_outside(
            "plugin.yaml",
            &format!("apiVersion: builtin\nkind: LabelTransformer\nmetadata:\n  name: leak\nlabels:\n  leak: {MARKER}\nfieldSpecs:\n- path: metadata/labels\n  create: true\n"),
        );
        layout.write(
            "clusters/dev/app.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\n",
        );
        layout
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.repo.join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }

    fn write_outside(&self, rel: &str, text: &str) {
        fs::create_dir_all(&self.outside).expect("mkdir");
        fs::write(self.outside.join(rel), text).expect("write");
    }

    fn link(&self, rel: &str, target: &Path) {
        let path = self.repo.join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        symlink(target, path).expect("symlink");
    }

    /// `{OUT}` and `{REPO}` in a pattern, made concrete.
    fn fill(&self, pattern: &str) -> String {
        pattern
            .replace("{OUT}", &self.outside.to_string_lossy())
            .replace("{REPO}", &self.repo.to_string_lossy())
    }

    /// The same, with paths in the repository relative to it, as `plumb check` shows them.
    fn fill_relative(&self, pattern: &str) -> String {
        self.fill(&pattern.replace("{REPO}/", ""))
    }
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// Every path the process and its threads passed to open/openat/openat2.
    opened: Vec<String>,
}

/// Runs plumb under `strace -f`, recording the files it opens.
fn traced(layout: &Layout, args: &[&str]) -> Run {
    let trace = layout.repo.parent().expect("base").join("trace.txt");
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=open,openat,openat2", "-o"])
        .arg(&trace)
        .arg(assert_cmd::cargo::cargo_bin("plumb"))
        .args(args)
        .env("PLUMB_TEST_CANARY", MARKER)
        .env_remove("SOPS_AGE_KEY_FILE")
        .env_remove("SOPS_AGE_KEY")
        .output()
        .expect("strace runs: install it with `apt-get install strace` (scripts/test does)");
    let text = fs::read_to_string(&trace).expect("strace wrote its trace");
    assert!(
        text.contains("openat("),
        "strace recorded no open at all: {text}"
    );
    let opened = text
        .lines()
        .filter_map(|l| l.split_once("open").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split('"').nth(1))
        .map(str::to_string)
        .collect();
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        opened,
    }
}

impl Run {
    fn assert_nothing_outside_opened(&self, layout: &Layout, forbidden: &[&str]) {
        let out = layout.outside.to_string_lossy();
        for path in &self.opened {
            assert!(
                !path.starts_with(out.as_ref())
                    && !path.ends_with("/environ")
                    && path != "/dev/zero"
                    && !forbidden.contains(&path.as_str()),
                "opened {path}\nstderr: {}",
                self.stderr
            );
        }
        assert!(
            !self.stdout.contains(MARKER) && !self.stderr.contains(MARKER),
            "something outside was read:\n{}\n{}",
            self.stdout,
            self.stderr
        );
    }
}

/// One way out of the repository.
struct Escape {
    name: &'static str,
    /// clusters/dev/kustomization.yaml (`{OUT}`: the outside directory); none when the setup
    /// writes it.
    kustomization: Option<&'static str>,
    setup: fn(&Layout),
    /// What `plumb build` prints on stderr and `plumb check` on stdout.
    flux: &'static [&'static str],
    /// What `plumb kustomize build` prints, or `None` where kustomize itself reads the file (a
    /// directory outside is a new kustomization root for kustomize).
    kustomize: Option<&'static [&'static str]>,
}

fn no_setup(_: &Layout) {}

const ESCAPES: &[Escape] = &[
    Escape {
        name: "resources: ../ to a file",
        kustomization: Some("resources:\n- app.yaml\n- ../../../outside/secret.yaml\n"),
        setup: no_setup,
        flux: &[
            "accumulating resources from '../../../outside/secret.yaml'",
            "security; file '{OUT}/secret.yaml' is not in or below '{REPO}'",
            "--> clusters/dev/kustomization.yaml:3",
        ],
        kustomize: Some(&["security; file '{OUT}/secret.yaml' is not in or below '{REPO}/clusters/dev'"]),
    },
    Escape {
        name: "resources: ../ to a directory",
        kustomization: Some("resources:\n- ../../../outside\n"),
        setup: no_setup,
        flux: &[
            "security; file '{OUT}' is not in or below '{REPO}'",
            "--> clusters/dev/kustomization.yaml:2",
        ],
        kustomize: None,
    },
    Escape {
        name: "resources: an absolute file",
        kustomization: Some("resources:\n- {OUT}/secret.yaml\n"),
        setup: no_setup,
        flux: &["security; file '{OUT}/secret.yaml' is not in or below '{REPO}'"],
        kustomize: Some(&["security; file '{OUT}/secret.yaml' is not in or below '{REPO}/clusters/dev'"]),
    },
    Escape {
        name: "resources: an absolute directory",
        kustomization: Some("resources:\n- {OUT}\n"),
        setup: no_setup,
        flux: &["security; file '{OUT}' is not in or below '{REPO}'"],
        kustomize: Some(&["new root '{OUT}' cannot be absolute"]),
    },
    Escape {
        name: "resources: a symlinked file",
        kustomization: Some("resources:\n- link.yaml\n"),
        setup: |l| l.link("clusters/dev/link.yaml", &l.outside.join("secret.yaml")),
        flux: &[
            "security; file '{REPO}/clusters/dev/link.yaml' leads to '{OUT}/secret.yaml', which is not in or below '{REPO}'",
            "--> clusters/dev/kustomization.yaml:2",
        ],
        kustomize: Some(&["security; file '{OUT}/secret.yaml' is not in or below '{REPO}/clusters/dev'"]),
    },
    Escape {
        name: "resources: a symlinked directory",
        kustomization: Some("resources:\n- linkdir\n"),
        setup: |l| l.link("clusters/dev/linkdir", &l.outside),
        flux: &["security; file '{REPO}/clusters/dev/linkdir' leads to '{OUT}', which is not in or below '{REPO}'"],
        kustomize: None,
    },
    Escape {
        name: "a symlinked kustomization.yaml",
        kustomization: None,
        setup: |l| l.link("clusters/dev/kustomization.yaml", &l.outside.join("kustomization.yaml")),
        flux: &["security; file '{REPO}/clusters/dev/kustomization.yaml' leads to '{OUT}/kustomization.yaml'"],
        kustomize: Some(&["unable to find one of 'kustomization.yaml', 'kustomization.yml' or 'Kustomization' in directory '{REPO}/clusters/dev'"]),
    },
    Escape {
        name: "configMapGenerator files: /proc/self/environ",
        kustomization: Some("configMapGenerator:\n- name: env\n  namespace: default\n  files: [/proc/self/environ]\n"),
        setup: no_setup,
        flux: &["security; file '/proc/self/environ' leads to '/proc/", "which is not in or below '{REPO}'"],
        kustomize: Some(&["security; file '/proc/", "/environ' is not in or below '{REPO}/clusters/dev'"]),
    },
    Escape {
        name: "configMapGenerator files: /dev/zero",
        kustomization: Some("configMapGenerator:\n- name: zero\n  namespace: default\n  files: [/dev/zero]\n"),
        setup: no_setup,
        flux: &["security; file '/dev/zero' is not in or below '{REPO}'"],
        kustomize: Some(&["security; file '/dev/zero' is not in or below '{REPO}/clusters/dev'"]),
    },
    Escape {
        name: "configMapGenerator files: a FIFO inside the repository",
        kustomization: Some("configMapGenerator:\n- name: fifo\n  namespace: default\n  files: [fifo]\n"),
        setup: |l| {
            let made = Command::new("mkfifo")
                .arg(l.repo.join("clusters/dev/fifo"))
                .status()
                .expect("mkfifo runs");
            assert!(made.success());
        },
        flux: &["{REPO}/clusters/dev/fifo: not a regular file"],
        kustomize: Some(&["{REPO}/clusters/dev/fifo: not a regular file"]),
    },
    Escape {
        name: "secretGenerator envs: ../",
        kustomization: Some("secretGenerator:\n- name: env\n  namespace: default\n  envs: [../../../outside/env.txt]\n"),
        setup: no_setup,
        flux: &["security; file '{OUT}/env.txt' is not in or below '{REPO}'"],
        kustomize: Some(&["security; file '{OUT}/env.txt' is not in or below '{REPO}/clusters/dev'"]),
    },
    Escape {
        name: "patches: path ../",
        kustomization: Some("resources: [app.yaml]\npatches:\n- path: ../../../outside/patch.yaml\n"),
        setup: no_setup,
        flux: &["security; file '{OUT}/patch.yaml' is not in or below '{REPO}'"],
        kustomize: Some(&["security; file '{OUT}/patch.yaml' is not in or below '{REPO}/clusters/dev'"]),
    },
    Escape {
        name: "crds: ../",
        kustomization: Some("resources: [app.yaml]\ncrds: [../../../outside/crd.json]\n"),
        setup: no_setup,
        flux: &["security; file '{OUT}/crd.json' is not in or below '{REPO}'"],
        kustomize: Some(&["security; file '{OUT}/crd.json' is not in or below '{REPO}/clusters/dev'"]),
    },
    Escape {
        name: "openapi: path ../",
        kustomization: Some("resources: [app.yaml]\nopenapi:\n  path: ../../../outside/openapi.json\n"),
        setup: no_setup,
        flux: &["security; file '{OUT}/openapi.json' is not in or below '{REPO}'"],
        kustomize: Some(&["security; file '{OUT}/openapi.json' is not in or below '{REPO}/clusters/dev'"]),
    },
    Escape {
        name: "transformers: ../",
        kustomization: Some("resources: [app.yaml]\ntransformers: [../../../outside/plugin.yaml]\n"),
        setup: no_setup,
        flux: &["loading transformers '../../../outside/plugin.yaml'", "security; file '{OUT}/plugin.yaml' is not in or below '{REPO}'"],
        kustomize: Some(&["security; file '{OUT}/plugin.yaml' is not in or below '{REPO}/clusters/dev'"]),
    },
    Escape {
        name: "generators: ../",
        kustomization: Some("resources: [app.yaml]\ngenerators: [../../../outside/plugin.yaml]\n"),
        setup: no_setup,
        flux: &["loading generators '../../../outside/plugin.yaml'", "security; file '{OUT}/plugin.yaml' is not in or below '{REPO}'"],
        kustomize: Some(&["security; file '{OUT}/plugin.yaml' is not in or below '{REPO}/clusters/dev'"]),
    },
    Escape {
        name: "components: ../",
        kustomization: Some("resources: [app.yaml]\ncomponents: [../../../outside]\n"),
        setup: no_setup,
        flux: &["security; file '{OUT}' is not in or below '{REPO}'"],
        kustomize: None,
    },
];

fn assert_contains(
    fill: impl Fn(&str) -> String,
    escape: &str,
    what: &str,
    text: &str,
    patterns: &[&str],
) {
    for p in patterns {
        let p = fill(p);
        assert!(text.contains(&p), "{escape}: {what} lacks {p:?}:\n{text}");
    }
}

#[test]
fn every_escape_is_refused_without_opening_anything_outside() {
    for escape in ESCAPES {
        let layout = Layout::new();
        if let Some(k) = escape.kustomization {
            layout.write("clusters/dev/kustomization.yaml", &layout.fill(k));
        }
        (escape.setup)(&layout);
        let repo = layout.repo.to_str().expect("utf-8 path");
        let forbidden = [layout.repo.join("clusters/dev/fifo")];
        let forbidden: Vec<&str> = forbidden.iter().filter_map(|p| p.to_str()).collect();

        let build = traced(&layout, &["build", repo, "--entry", "clusters/dev"]);
        build.assert_nothing_outside_opened(&layout, &forbidden);
        assert_eq!(
            build.code,
            Some(1),
            "{}: plumb build\n{}",
            escape.name,
            build.stderr
        );
        // plumb build, as plumb check, quotes paths in the repository relative to it.
        assert_contains(
            |p| layout.fill_relative(p),
            escape.name,
            "plumb build",
            &build.stderr,
            escape.flux,
        );

        let check = traced(
            &layout,
            &["check", repo, "--entry", "clusters/dev", "--color", "never"],
        );
        check.assert_nothing_outside_opened(&layout, &forbidden);
        assert_eq!(
            check.code,
            Some(1),
            "{}: plumb check\n{}",
            escape.name,
            check.stdout
        );
        assert!(
            check.stdout.contains("error[BLD001]"),
            "{}: {}",
            escape.name,
            check.stdout
        );
        assert_contains(
            |p| layout.fill_relative(p),
            escape.name,
            "plumb check",
            &check.stdout,
            escape.flux,
        );

        if let Some(expected) = escape.kustomize {
            let dir = layout.repo.join("clusters/dev");
            let kustomize = traced(
                &layout,
                &["kustomize", "build", dir.to_str().expect("utf-8")],
            );
            kustomize.assert_nothing_outside_opened(&layout, &forbidden);
            assert_eq!(
                kustomize.code,
                Some(2),
                "{}: plumb kustomize build\n{}",
                escape.name,
                kustomize.stderr
            );
            assert_contains(
                |p| layout.fill(p),
                escape.name,
                "plumb kustomize build",
                &kustomize.stderr,
                expected,
            );
        }
    }
}

#[test]
fn a_flux_spec_path_through_a_symlink_to_an_outside_directory_is_refused() {
    let layout = Layout::new();
    layout.write(
        "clusters/dev/flux-system/gotk-sync.yaml",
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  url: ssh://git@example.com/platform\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  path: ./clusters/dev\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    );
    layout.write(
        "clusters/dev/apps.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  path: ./apps\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    );
    fs::remove_file(layout.repo.join("clusters/dev/app.yaml")).expect("remove");
    layout.link("apps", &layout.outside);
    let repo = layout.repo.to_str().expect("utf-8 path");

    let build = traced(&layout, &["build", repo, "--entry", "clusters/dev"]);
    build.assert_nothing_outside_opened(&layout, &[]);
    assert_eq!(build.code, Some(1), "{}", build.stderr);
    for p in [
        "spec.path: security; file '{REPO}/apps' leads to '{OUT}', which is not in or below '{REPO}'",
        "--> clusters/dev/apps.yaml:7",
    ] {
        assert!(
            build.stderr.contains(&layout.fill_relative(p)),
            "lacks {p}:\n{}",
            build.stderr
        );
    }
    // The parent built: only the Kustomization whose path leaves the source failed.
    assert!(build.stdout.contains("name: apps"), "{}", build.stdout);

    let check = traced(
        &layout,
        &["check", repo, "--entry", "clusters/dev", "--color", "never"],
    );
    check.assert_nothing_outside_opened(&layout, &[]);
    assert_eq!(check.code, Some(1), "{}", check.stdout);
    assert!(
        check.stdout.contains(
            &layout.fill_relative("spec.path: security; file '{REPO}/apps' leads to '{OUT}'")
        ),
        "{}",
        check.stdout
    );
}

#[test]
fn the_trace_sees_a_read_outside_when_kustomize_is_allowed_one() {
    // The negative test of the trace: with kustomize's own LoadRestrictionsNone, a file outside
    // is read, and the trace and the marker both show it.
    let layout = Layout::new();
    layout.write(
        "clusters/dev/kustomization.yaml",
        "resources:\n- ../../../outside/secret.yaml\n",
    );
    let dir = layout.repo.join("clusters/dev");
    let run = traced(
        &layout,
        &[
            "kustomize",
            "build",
            "--load-restrictor",
            "LoadRestrictionsNone",
            dir.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains(MARKER), "{}", run.stdout);
    let secret = layout.outside.join("secret.yaml");
    assert!(
        run.opened.iter().any(|p| Path::new(p) == secret),
        "the trace missed the open of {}: {:?}",
        secret.display(),
        run.opened
    );
}

#[test]
fn an_entry_path_through_a_symlink_to_an_outside_directory_is_refused() {
    let layout = Layout::new();
    layout.link("clusters/prod", &layout.outside);
    let repo = layout.repo.to_str().expect("utf-8 path");
    let build = traced(&layout, &["build", repo, "--entry", "clusters/prod"]);
    build.assert_nothing_outside_opened(&layout, &[]);
    assert_eq!(build.code, Some(1), "{}", build.stderr);
    let expected = layout.fill_relative(
        "entry path: security; file '{REPO}/clusters/prod' leads to '{OUT}', which is not in or below '{REPO}'",
    );
    assert!(build.stderr.contains(&expected), "{}", build.stderr);
}
