//! `plumb build` with a Flux Kustomization whose source is a Bucket on a real S3 server (moto on
//! loopback): the objects are fetched and built; built again `--offline` with the server
//! stopped; unavailable, naming the endpoint and bucket, when nothing serves it.
//!
//! Needs `PLUMB_MOTO_SERVER`; run through scripts/test.

#[path = "support/cli.rs"]
mod cli;
#[path = "../../plumb-state/tests/support/moto.rs"]
mod moto;

use assert_cmd::Command;
use cli::{plumb_build, write};
use moto::{free_port, Moto};
use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;

/// One anonymous PUT of a new object (moto accepts it), over plain HTTP/1.1.
fn put_object(port: u16, bucket: &str, key: &str, body: &str) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "PUT /{bucket}/{key} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(
        response.starts_with("HTTP/1.1 200"),
        "PUT {key}: {response:.200}"
    );
}

/// A cluster whose `crds` Kustomization builds `./crds` of the Bucket at `endpoint`.
fn flux_repo(root: &Path, endpoint: &str) {
    write(
        root,
        "clusters/dev/sources.yaml",
        &format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: Bucket\nmetadata: {{name: crds, namespace: flux-system}}\nspec:\n  interval: 5m\n  provider: generic\n  bucketName: platform\n  endpoint: {endpoint}\n  insecure: true\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: crds, namespace: flux-system}}\nspec:\n  path: ./crds\n  sourceRef: {{kind: Bucket, name: crds}}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: apps, namespace: flux-system}}\nspec:\n  path: ./apps\n  sourceRef: {{kind: GitRepository, name: flux-system}}\n"
        ),
    );
    write(
        root,
        "apps/ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n",
    );
}

fn build(repo: &Path, cache: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    // moto checks no signature, but refuses anonymous reads of private objects.
    plumb_build(
        repo,
        cache,
        extra,
        &[
            ("AWS_ACCESS_KEY_ID", "plumb-test".as_ref()),
            ("AWS_SECRET_ACCESS_KEY", "plumb-test-secret".as_ref()),
        ],
    )
}

#[test]
fn a_bucket_source_is_fetched_cached_and_built_offline() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let cache = tmp.path().join("cache");
    {
        let moto = Moto::start();
        moto.create_bucket("platform");
        put_object(
            moto.port,
            "platform",
            "crds/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched-from-bucket, namespace: default}\n",
        );
        put_object(moto.port, "platform", "other/skip.yaml", "not: built\n");
        flux_repo(&repo, &format!("127.0.0.1:{}", moto.port));

        let (code, out, err) = build(&repo, &cache, &[]);
        assert_eq!(code, Some(0), "{err}");
        assert!(
            out.contains("ConfigMap/default/fetched-from-bucket"),
            "{out}"
        );
        assert!(err.contains("3 built, 0 failed, 0 not built"), "{err}");
        assert!(!err.contains("plumb-test-secret"), "{err}");
        // moto stops here
    }
    let (code, out, err) = build(&repo, &cache, &["--offline"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("ConfigMap/default/fetched-from-bucket"),
        "{out}"
    );
}

#[test]
fn a_bucket_nothing_serves_is_unavailable_with_its_endpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let endpoint = format!("127.0.0.1:{}", free_port());
    flux_repo(&repo, &endpoint);
    let (code, out, err) = build(&repo, &tmp.path().join("cache"), &[]);
    // The build is incomplete: exit 1, the rest built, the summary counts it apart.
    assert_eq!(code, Some(1), "{err}");
    assert!(out.contains("Namespace//apps"), "{out}");
    assert!(
        err.contains(&format!(
            "cannot reach endpoint http://{endpoint} for bucket 'platform'"
        )),
        "{err}"
    );
    assert!(
        err.contains("1 unavailable (source could not be fetched)"),
        "{err}"
    );
}

#[test]
fn a_secret_ref_signs_when_the_build_holds_the_secret_and_says_how_to_sign_otherwise() {
    let moto = Moto::start();
    moto.create_bucket("platform");
    put_object(
        moto.port,
        "platform",
        "crds/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: signed, namespace: default}\n",
    );
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    flux_repo(&repo, &format!("127.0.0.1:{}", moto.port));
    let sources = repo.join("clusters/dev/sources.yaml");
    let text = fs::read_to_string(&sources).unwrap().replace(
        "  insecure: true\n",
        "  insecure: true\n  secretRef: {name: minio}\n",
    );
    fs::write(&sources, text).unwrap();
    let out = Command::cargo_bin("plumb")
        .unwrap()
        .args(["build", "-v", "-o", "names", "--cache-dir"])
        .arg(tmp.path().join("cache"))
        .arg(&repo)
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("access denied to bucket 'platform'"), "{err}");
    assert!(
        err.contains("the build does not hold the spec.secretRef Secret readable"),
        "{err}"
    );

    // With the Secret in the repository, its accesskey and secretkey sign the requests.
    write(
        &repo,
        "clusters/dev/minio-secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: minio, namespace: flux-system}\ntype: Opaque\ndata:\n  accesskey: cGx1bWItdGVzdA==\n  secretkey: cGx1bWItdGVzdC1zZWNyZXQ=\n",
    );
    let out = Command::cargo_bin("plumb")
        .unwrap()
        .args(["build", "-v", "-o", "names", "--cache-dir"])
        .arg(tmp.path().join("cache"))
        .arg(&repo)
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("3 built, 0 failed, 0 not built"), "{err}");
    assert!(
        !err.contains("cGx1bWItdGVzdC1zZWNyZXQ") && !err.contains("plumb-test-secret"),
        "{err}"
    );
    assert!(stdout.contains("Secret/flux-system/minio"), "{stdout}");
}

#[test]
fn a_mirror_rewrites_a_bucket_endpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let moto = Moto::start();
    moto.create_bucket("platform");
    put_object(
        moto.port,
        "platform",
        "crds/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-the-mirror, namespace: default}\n",
    );
    flux_repo(&repo, "minio.example.invalid:9000");
    fs::write(
        repo.join(".plumb.yaml"),
        format!(
            "mirrors:\n- from: minio.example.invalid:9000\n  to: 127.0.0.1:{}\n",
            moto.port
        ),
    )
    .unwrap();
    let (code, out, err) = build(&repo, &tmp.path().join("cache"), &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("ConfigMap/default/from-the-mirror"), "{out}");
}
