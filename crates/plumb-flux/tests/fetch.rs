//! The build's side of fetching: a source in another repository is asked of the `Fetcher` once,
//! however many Kustomizations use it; its tree is built like the repository's own; a fetch that
//! fails makes its Kustomizations unavailable, with the URL and the reason. (The real fetchers,
//! against real servers, are tested in plumb-source.)

use plumb_flux::build::{build_repository, Options, Status};
use plumb_flux::fetch::{Fetched, Fetcher, Unfetched};
use plumb_flux::model::Source;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Serves one URL from a directory; every other URL is unreachable.
#[derive(Debug)]
struct DirectoryFetcher {
    url: String,
    dir: PathBuf,
    calls: AtomicUsize,
}

impl Fetcher for DirectoryFetcher {
    fn fetch(&self, source: &Source) -> Result<Fetched, Unfetched> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match source.url.as_deref() {
            Some(u) if u == self.url => Ok(Fetched {
                dir: self.dir.clone(),
                revision: "v1.2.0@sha1:0000000000000000000000000000000000000000".into(),
            }),
            Some(u) => Err(Unfetched::Failed(format!("{u}: connection refused"))),
            None => Err(Unfetched::Unsupported("no URL".into())),
        }
    }
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn ks(name: &str, source: &str, path: &str) -> String {
    format!("---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: {name}, namespace: flux-system}}\nspec:\n  path: {path}\n  sourceRef: {{kind: GitRepository, name: {source}}}\n")
}

#[test]
fn remote_sources_are_fetched_once_and_built_or_unavailable() {
    let repo = tempfile::tempdir().unwrap();
    let remote = tempfile::tempdir().unwrap();
    write(
        remote.path(),
        "crds/crd.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-remote, namespace: default}\n",
    );
    let mut cluster = String::new();
    for (name, url) in [
        ("charts", "https://git.example.com/charts"),
        ("gone", "https://git.example.com/gone"),
    ] {
        cluster.push_str(&format!("---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {{name: {name}, namespace: flux-system}}\nspec:\n  url: {url}\n  ref: {{tag: v1.2.0}}\n"));
    }
    cluster.push_str(&ks("crds-a", "charts", "./crds"));
    cluster.push_str(&ks("crds-b", "charts", "./crds"));
    cluster.push_str(&ks("other", "gone", "./"));
    write(repo.path(), "clusters/dev/sources.yaml", &cluster);
    let fetcher = Arc::new(DirectoryFetcher {
        url: "https://git.example.com/charts".into(),
        dir: remote.path().to_path_buf(),
        calls: AtomicUsize::new(0),
    });
    let options = Options {
        entries: vec!["clusters/dev".into()],
        fetcher: Some(fetcher.clone()),
        ..Options::default()
    };
    let build = build_repository(repo.path(), &options).unwrap();
    let k = |name: &str| {
        build.entries[0]
            .kustomizations
            .iter()
            .find(|k| k.kustomization.name == name)
            .unwrap()
    };
    for name in ["crds-a", "crds-b"] {
        assert_eq!(k(name).status, Status::Built, "{:?}", k(name).diagnostics);
        assert_eq!(k(name).path, "@flux-system/charts/crds");
        assert_eq!(k(name).objects[0].name(), "from-remote");
    }
    match &k("other").status {
        Status::Unavailable(reason) => assert!(
            reason.contains("https://git.example.com/gone: connection refused"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    // charts once (two Kustomizations), gone once.
    assert_eq!(fetcher.calls.load(Ordering::SeqCst), 2);
    let summary = build.summary();
    // The entry's own Kustomization (it syncs clusters/dev, which no Kustomization of this
    // repository's source builds), crds-a and crds-b.
    assert_eq!((summary.built, summary.unavailable), (3, 1));
    assert!(summary.to_string().contains("1 unavailable"), "{summary}");
}
