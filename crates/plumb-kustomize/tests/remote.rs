//! The build's side of remote entries, with a [`Remote`] that serves trees and files from a
//! temporary directory (the fetching itself is plumb-source's, tested against real servers
//! there and in the CLI's tests): what a remote base and file add, that a remote tree is
//! confined to itself, and that failures name the URL and the entry's file and line.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use plumb_kustomize::{
    build_yaml, BuildOptions, KustomizeError, LoadRestrictor, Remote, RemoteKind, RemoteTree,
};

/// Trees and files on disk, under the names a kustomization gives them.
#[derive(Debug)]
struct LocalRemote {
    trees: Vec<(String, PathBuf, String)>,
    files: Vec<(String, String)>,
}

impl Remote for LocalRemote {
    fn classify(&self, entry: &str) -> RemoteKind {
        if entry.starts_with("https://") {
            RemoteKind::Http {
                repository: self.trees.iter().any(|(e, ..)| e == entry),
            }
        } else if entry.starts_with("github.com/") {
            RemoteKind::Repository
        } else {
            RemoteKind::Local
        }
    }

    fn directory(&self, entry: &str) -> Result<RemoteTree, plumb_kustomize::RemoteFailure> {
        self.trees
            .iter()
            .find(|(e, ..)| e == entry)
            .map(|(_, root, sub)| RemoteTree {
                root: root.clone(),
                dir: root.join(sub),
            })
            .ok_or_else(|| format!("git repository for {entry} is not in the cache").into())
    }

    fn file(&self, url: &str) -> Result<String, plumb_kustomize::RemoteFailure> {
        self.files
            .iter()
            .find(|(u, _)| u == url)
            .map(|(_, text)| text.clone())
            .ok_or_else(|| plumb_kustomize::RemoteFailure {
                message: format!("GET {url}: status code 404"),
                broken: true,
            })
    }
}

fn write(dir: &Path, path: &str, text: &str) {
    let path = dir.join(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

const CONFIGMAP: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: \"1\"\n";
const SERVICE: &str = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n";

/// A fetched repository with a base under `deploy/base`, a local copy of the same base, and an
/// overlay directory to build.
struct Fixture {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    local: PathBuf,
    overlay: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("cache/tree");
    let local = tmp.path().join("work");
    for root in [&repo, &local] {
        write(
            root,
            "deploy/base/kustomization.yaml",
            "resources:\n- configmap.yaml\nnamePrefix: base-\n",
        );
        write(root, "deploy/base/configmap.yaml", CONFIGMAP);
    }
    write(&local, "service.yaml", SERVICE);
    Fixture {
        overlay: tmp.path().join("work/overlay"),
        repo,
        local,
        _tmp: tmp,
    }
}

fn options(remote: LocalRemote) -> BuildOptions {
    BuildOptions {
        remote: Some(Arc::new(remote)),
        ..BuildOptions::default()
    }
}

#[test]
fn a_remote_base_and_file_build_as_their_local_copies() {
    let f = fixture();
    write(
        &f.overlay,
        "kustomization.yaml",
        "resources:\n- github.com/org/platform//deploy/base?ref=v1\n- https://example.com/service.yaml\nnamespace: prod\n",
    );
    let remote = LocalRemote {
        trees: vec![(
            "github.com/org/platform//deploy/base?ref=v1".into(),
            f.repo.clone(),
            "deploy/base".into(),
        )],
        files: vec![("https://example.com/service.yaml".into(), SERVICE.into())],
    };
    let remote_out = build_yaml(&f.overlay, &options(remote)).unwrap();

    write(
        &f.overlay,
        "kustomization.yaml",
        "resources:\n- ../deploy/base\n- ../service.yaml\nnamespace: prod\n",
    );
    let local_out = build_yaml(
        &f.overlay,
        &BuildOptions {
            load_restrictor: LoadRestrictor::None,
            ..BuildOptions::default()
        },
    )
    .unwrap();
    assert_eq!(remote_out, local_out);
    assert!(remote_out.contains("name: base-settings"), "{remote_out}");
    assert!(remote_out.contains("kind: Service"), "{remote_out}");
}

#[test]
fn without_a_remote_entries_are_refused_as_before() {
    let f = fixture();
    write(
        &f.overlay,
        "kustomization.yaml",
        "resources:\n- github.com/org/platform//deploy/base?ref=v1\n",
    );
    let err = build_yaml(&f.overlay, &BuildOptions::default()).unwrap_err();
    let mut cur = &err;
    while let KustomizeError::Accumulating { source, .. } = cur {
        cur = source;
    }
    assert!(matches!(cur, KustomizeError::Remote { .. }), "{err:?}");
}

#[test]
fn a_remote_tree_reads_nothing_outside_itself() {
    let f = fixture();
    // The remote base reaches for a file beside the tree; a local build would be allowed to.
    write(&f.repo, "../outside.yaml", SERVICE);
    write(
        &f.repo,
        "deploy/escape/kustomization.yaml",
        "resources:\n- ../../../outside.yaml\n",
    );
    write(
        &f.overlay,
        "kustomization.yaml",
        "resources:\n- github.com/org/platform//deploy/escape\n",
    );
    let remote = LocalRemote {
        trees: vec![(
            "github.com/org/platform//deploy/escape".into(),
            f.repo.clone(),
            "deploy/escape".into(),
        )],
        files: vec![],
    };
    let options = BuildOptions {
        load_restrictor: LoadRestrictor::None,
        ..options(remote)
    };
    let err = build_yaml(&f.overlay, &options).unwrap_err().to_string();
    assert!(err.contains("security;"), "{err}");
    assert!(err.contains("outside.yaml"), "{err}");
    let _ = &f.local;
}

#[test]
fn a_failed_fetch_names_the_url_and_the_entry_line() {
    let f = fixture();
    write(
        &f.overlay,
        "kustomization.yaml",
        "resources:\n- ../service.yaml\n- https://example.com/missing.yaml\n",
    );
    let remote = LocalRemote {
        trees: vec![],
        files: vec![],
    };
    let options = BuildOptions {
        load_restrictor: LoadRestrictor::None,
        ..options(remote)
    };
    let err = build_yaml(&f.overlay, &options).unwrap_err();
    let KustomizeError::Accumulating { at, source, .. } = &err else {
        panic!("{err:?}");
    };
    let (file, line) = at.clone().expect("the entry's position");
    assert!(file.ends_with("overlay/kustomization.yaml"), "{file:?}");
    assert_eq!(line, 3);
    assert!(
        matches!(&**source, KustomizeError::RemoteFetch { url, .. } if url == "https://example.com/missing.yaml"),
        "{source:?}"
    );
    assert!(
        err.to_string()
            .contains("GET https://example.com/missing.yaml: status code 404"),
        "{err}"
    );
}

#[test]
fn an_http_repository_that_is_no_file_is_built_as_a_repository() {
    let f = fixture();
    let url = "https://example.com/org/platform//deploy/base?ref=v1";
    write(
        &f.overlay,
        "kustomization.yaml",
        &format!("resources:\n- {url}\n"),
    );
    let remote = LocalRemote {
        trees: vec![(url.into(), f.repo.clone(), "deploy/base".into())],
        files: vec![],
    };
    let out = build_yaml(&f.overlay, &options(remote)).unwrap();
    assert!(out.contains("name: base-settings"), "{out}");
}

#[test]
fn a_remote_component_is_applied() {
    let f = fixture();
    write(
        &f.repo,
        "components/label/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\ncommonLabels:\n  team: platform\n",
    );
    write(
        &f.overlay,
        "kustomization.yaml",
        "resources:\n- ../service.yaml\ncomponents:\n- github.com/org/platform//components/label\n",
    );
    let remote = LocalRemote {
        trees: vec![(
            "github.com/org/platform//components/label".into(),
            f.repo.clone(),
            "components/label".into(),
        )],
        files: vec![],
    };
    let options = BuildOptions {
        load_restrictor: LoadRestrictor::None,
        ..options(remote)
    };
    let out = build_yaml(&f.overlay, &options).unwrap();
    assert!(out.contains("team: platform"), "{out}");
}

#[test]
fn generator_files_and_env_files_may_be_urls() {
    // toboshii/home-ops: Flux's Grafana dashboards, by URL, in a configMapGenerator. kustomize's
    // loader fetches an http(s) file source; the key defaults to the URL's last element.
    let f = fixture();
    write(
        &f.overlay,
        "kustomization.yaml",
        "configMapGenerator:\n- name: dashboards\n  files:\n  - cluster.json=https://example.com/dashboards/cluster.json\n  - https://example.com/dashboards/logs.json\n  envs:\n  - https://example.com/vars.env\n  options:\n    disableNameSuffixHash: true\n",
    );
    let remote = LocalRemote {
        trees: Vec::new(),
        files: vec![
            (
                "https://example.com/dashboards/cluster.json".into(),
                "{\"title\": \"cluster\"}".into(),
            ),
            (
                "https://example.com/dashboards/logs.json".into(),
                "{\"title\": \"logs\"}".into(),
            ),
            ("https://example.com/vars.env".into(), "REGION=eu\n".into()),
        ],
    };
    let out = build_yaml(&f.overlay, &options(remote)).unwrap();
    assert!(out.contains("  REGION: eu\n"), "{out}");
    assert!(
        out.contains("  cluster.json: '{\"title\": \"cluster\"}'\n"),
        "{out}"
    );
    assert!(
        out.contains("  logs.json: '{\"title\": \"logs\"}'\n"),
        "{out}"
    );

    // A URL that cannot be had names it, as the GET failed; without a remote, it is refused.
    write(
        &f.overlay,
        "kustomization.yaml",
        "configMapGenerator:\n- name: dashboards\n  files:\n  - https://example.com/missing.json\n",
    );
    let empty = || LocalRemote {
        trees: Vec::new(),
        files: Vec::new(),
    };
    let err = build_yaml(&f.overlay, &options(empty())).unwrap_err();
    let mut cur = &err;
    while let KustomizeError::Accumulating { source, .. } = cur {
        cur = source;
    }
    // The server said the URL names nothing: the entry is wrong, not unavailable.
    assert!(
        matches!(cur, KustomizeError::RemoteFetch { url, broken: true, .. } if url == "https://example.com/missing.json"),
        "{err:?}"
    );
    let err = err.to_string();
    assert!(
        err.contains("GET https://example.com/missing.json: status code 404"),
        "{err}"
    );
    let err = build_yaml(&f.overlay, &BuildOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("remote file \"https://example.com/missing.json\""),
        "{err}"
    );
}

/// Records each read of a [`LocalRemote`]: what was read, and on which thread.
#[derive(Debug)]
struct Recording {
    inner: LocalRemote,
    reads: std::sync::Mutex<Vec<(String, String)>>,
}

impl Recording {
    fn note(&self, what: String) {
        let thread = std::thread::current().name().unwrap_or("").to_string();
        self.reads.lock().unwrap().push((what, thread));
    }
}

impl Remote for Recording {
    fn classify(&self, entry: &str) -> RemoteKind {
        self.inner.classify(entry)
    }

    fn directory(&self, entry: &str) -> Result<RemoteTree, plumb_kustomize::RemoteFailure> {
        self.note(format!("directory {entry}"));
        self.inner.directory(entry)
    }

    fn file(&self, url: &str) -> Result<String, plumb_kustomize::RemoteFailure> {
        self.note(format!("file {url}"));
        self.inner.file(url)
    }
}

/// Entries read ahead are read as a build reads them: an `http(s)` file as a file, then as a
/// repository when it is one and the file could not be had; a repository as a tree; a local
/// entry not at all. Each on a prefetch thread, all done once joined.
#[test]
fn entries_are_read_ahead_as_a_build_reads_them() {
    let f = fixture();
    let remote = Arc::new(Recording {
        inner: LocalRemote {
            trees: vec![
                (
                    "https://github.com/example/app//deploy/base".into(),
                    f.repo.clone(),
                    "deploy/base".into(),
                ),
                (
                    "github.com/example/app//deploy/base?ref=v1".into(),
                    f.repo.clone(),
                    "deploy/base".into(),
                ),
            ],
            files: vec![("https://example.com/settings.yaml".into(), CONFIGMAP.into())],
        },
        reads: Default::default(),
    });
    let entries = [
        "../base",
        "https://example.com/settings.yaml",
        "https://github.com/example/app//deploy/base",
        "github.com/example/app//deploy/base?ref=v1",
    ];
    plumb_kustomize::prefetch(
        remote.clone(),
        entries.iter().map(|e| e.to_string()).collect(),
    )
    .join();
    let reads = remote.reads.lock().unwrap().clone();
    let mut what: Vec<&str> = reads.iter().map(|(w, _)| w.as_str()).collect();
    let position = |w: &str| what.iter().position(|x| *x == w).unwrap();
    assert!(
        position("file https://github.com/example/app//deploy/base")
            < position("directory https://github.com/example/app//deploy/base")
    );
    what.sort();
    assert_eq!(
        what,
        [
            "directory github.com/example/app//deploy/base?ref=v1",
            "directory https://github.com/example/app//deploy/base",
            "file https://example.com/settings.yaml",
            "file https://github.com/example/app//deploy/base",
        ]
    );
    assert!(reads.iter().all(|(_, thread)| thread == "plumb-prefetch"));
}
