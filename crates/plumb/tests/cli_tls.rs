//! Remote kustomize entries over HTTPS: a git base and a YAML file served behind a TLS front
//! with a self-signed certificate. Trusted through `SSL_CERT_FILE` they are fetched (the git
//! transport and the file client both verify with the system's roots, which that variable
//! extends); not trusted, the fetch fails naming the URL and the certificate.

#[path = "../../plumb-source/tests/support/git_http.rs"]
mod git_http;
#[path = "../../plumb-source/tests/support/git_server.rs"]
mod git_server;
#[path = "../../plumb-source/tests/support/http_server.rs"]
mod http_server;
#[path = "support/tls_front.rs"]
mod tls_front;

use assert_cmd::Command;
use git_http::HttpGit;
use git_server::Repo;
use http_server::HttpServer;
use std::fs;
use std::path::Path;
use std::sync::atomic::Ordering;
use tls_front::TlsFront;

const SERVICE: &str =
    "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n";

fn platform(served: &Path) {
    let repo = Repo::init(served, "platform", "main");
    repo.write(
        "deploy/base/kustomization.yaml",
        "resources:\n- configmap.yaml\nnamePrefix: base-\n",
    );
    repo.write(
        "deploy/base/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  version: v1\n",
    );
    repo.commit("v1");
    repo.git(&["tag", "v1"]);
}

fn kustomize_build(overlay: &Path, cache: &Path, trust: Option<&Path>) -> (bool, String, String) {
    let mut cmd = Command::cargo_bin("plumb").unwrap();
    cmd.args(["kustomize", "build", "--cache-dir"])
        .arg(cache)
        .arg(overlay)
        .env_remove("SSL_CERT_FILE")
        .env_remove("PLUMB_CACHE_DIR");
    if let Some(trust) = trust {
        cmd.env("SSL_CERT_FILE", trust);
    }
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn https_git_bases_and_files_are_verified_against_the_trusted_roots() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    platform(&served);
    let git = HttpGit::start(&served, None);
    let files = HttpServer::start(&[("/service.yaml", SERVICE)]);
    let (git_dir, file_dir) = (tmp.path().join("git-front"), tmp.path().join("file-front"));
    fs::create_dir_all(&git_dir).unwrap();
    fs::create_dir_all(&file_dir).unwrap();
    let git_front = TlsFront::start(git.port, &git_dir);
    let file_front = TlsFront::start(files.port, &file_dir);
    let trust = tmp.path().join("trust.pem");
    fs::write(
        &trust,
        fs::read_to_string(&git_front.certificate).unwrap()
            + &fs::read_to_string(&file_front.certificate).unwrap(),
    )
    .unwrap();

    let base_url = format!(
        "{}//deploy/base?ref=v1",
        git_front.https(&git.url("platform"), git.port)
    );
    let file_url = file_front.https(&files.url("/service.yaml"), files.port);
    assert!(base_url.starts_with("https://") && file_url.starts_with("https://"));
    let overlay = tmp.path().join("overlay");
    fs::create_dir_all(&overlay).unwrap();
    fs::write(
        overlay.join("kustomization.yaml"),
        format!("resources:\n- {base_url}\n- {file_url}\nnamespace: prod\n"),
    )
    .unwrap();

    // Not trusted: both fetches fail on the certificate, each naming its URL.
    let (ok, _, err) = kustomize_build(&overlay, &tmp.path().join("cache-untrusted"), None);
    assert!(!ok, "an unknown certificate must not be accepted: {err}");
    // The file client and then the git transport each refused the certificate.
    assert_eq!(
        err.matches("invalid peer certificate: UnknownIssuer")
            .count(),
        2,
        "{err}"
    );
    let git_url = format!("https://127.0.0.1:{}/platform", git_front.port);
    assert!(
        err.contains(&format!("cannot reach git repository {git_url}")),
        "{err}"
    );

    // Trusted: both are fetched through the fronts, the handshakes completed there.
    let (ok, out, err) = kustomize_build(&overlay, &tmp.path().join("cache"), Some(&trust));
    assert!(ok, "{err}");
    assert!(out.contains("name: base-settings\n"), "{out}");
    assert!(
        out.contains("kind: Service\n") && out.contains("name: web\n"),
        "{out}"
    );
    assert!(git_front.handshakes.load(Ordering::SeqCst) >= 1);
    assert!(file_front.handshakes.load(Ordering::SeqCst) >= 1);
}
