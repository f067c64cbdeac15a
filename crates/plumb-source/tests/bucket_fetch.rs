//! Bucket fetches against a real S3 server (moto on loopback): the files and revision
//! source-controller would produce, `spec.prefix`, `.sourceignore` and `spec.ignore`, offline
//! reuse with the server stopped, a changed object giving a new revision while the old tree
//! stays, and the errors (unreachable, no such bucket, access denied, unsafe key, offline and
//! not cached, cache not writable), each naming the endpoint and the bucket.
//!
//! Needs `PLUMB_MOTO_SERVER`; run through scripts/test.

#[path = "../../plumb-state/tests/support/moto.rs"]
mod moto;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use moto::{free_port, Moto};
use object_store::aws::{AwsAuthorizer, AwsCredential};
use object_store::client::HttpRequestBody;
use plumb_source::{BucketCredentials, BucketError, BucketSource, Cache, Mode};
use sha2::{Digest, Sha256};

/// moto checks no signature unless told to; any key pair signs.
fn creds() -> BucketCredentials {
    BucketCredentials {
        access_key: "plumb-test".into(),
        secret_key: "plumb-test-secret".into(),
    }
}

/// Objects written through the S3 API (anonymous PUTs, which moto accepts); returns the ETag
/// moto gave each, unquoted.
struct Bucket<'a> {
    moto: &'a Moto,
    name: String,
}

impl<'a> Bucket<'a> {
    fn create(moto: &'a Moto, name: &str) -> Bucket<'a> {
        moto.create_bucket(name);
        Bucket {
            moto,
            name: name.into(),
        }
    }

    /// `key` as it goes into the URL path (already escaped where needed).
    fn put(&self, key: &str, body: &str) -> String {
        let url = format!("{}/{}/{key}", self.moto.endpoint(), self.name);
        // Signed: moto refuses an anonymous overwrite of a private object.
        let mut signed = http::Request::builder()
            .method("PUT")
            .uri(&url)
            .header("content-type", "application/octet-stream")
            .body(HttpRequestBody::from(body.to_owned()))
            .unwrap();
        let credential = AwsCredential {
            key_id: "plumb-test".into(),
            secret_key: "plumb-test-secret".into(),
            token: None,
        };
        AwsAuthorizer::new(&credential, "s3", "us-east-1")
            .try_authorize(&mut signed, None)
            .unwrap();
        let _ = rustls::crypto::ring::default_provider().install_default();
        let response = reqwest::blocking::Client::new()
            .put(&url)
            .headers(signed.headers().clone())
            .body(body.to_owned())
            .send()
            .unwrap_or_else(|e| panic!("PUT {url}: {e}"));
        assert!(
            response.status().is_success(),
            "PUT {url}: {}",
            response.status()
        );
        response.headers()["etag"]
            .to_str()
            .unwrap()
            .trim_matches('"')
            .to_owned()
    }

    fn source(&self) -> BucketSource {
        BucketSource {
            bucket_name: self.name.clone(),
            endpoint: format!("127.0.0.1:{}", self.moto.port),
            insecure: true,
            ..BucketSource::default()
        }
    }
}

/// The revision source-controller computes for these keys and ETags.
fn expected_revision(index: &[(&str, &str)]) -> String {
    let sorted: BTreeMap<&str, &str> = index.iter().copied().collect();
    let mut text = String::new();
    for (key, etag) in sorted {
        text.push_str(&format!("{key} {etag}\n"));
    }
    let hex: String = Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// Every file below `dir`, relative, with its content.
fn files(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn map(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn objects_are_fetched_with_the_controllers_revision_and_no_default_exclusions() {
    let moto = Moto::start();
    let bucket = Bucket::create(&moto, "manifests");
    let a = bucket.put("apps/a.yaml", "kind: A\n");
    let b = bucket.put("apps/sub/b.yaml", "kind: B\n");
    let png = bucket.put("logo.png", "not an image\n");
    bucket.put("apps/", ""); // a directory marker, never a file
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::new(tmp.path().join("cache"));

    let artifact = cache
        .fetch_bucket(&bucket.source(), Some(&creds()), Mode::Online)
        .unwrap();
    assert_eq!(
        files(&artifact.dir),
        map(&[
            ("apps/a.yaml", "kind: A\n"),
            ("apps/sub/b.yaml", "kind: B\n"),
            // A GitRepository would leave out *.png; a Bucket has no default exclusions.
            ("logo.png", "not an image\n"),
        ])
    );
    assert_eq!(
        artifact.revision,
        expected_revision(&[
            ("apps/a.yaml", &a),
            ("apps/sub/b.yaml", &b),
            ("logo.png", &png)
        ])
    );
    assert!(artifact.dir.starts_with(cache.dir().join("bucket")));
    assert!(artifact
        .dir
        .ends_with(artifact.revision.strip_prefix("sha256:").unwrap()));
    // Nothing is left in the work area.
    assert_eq!(fs::read_dir(cache.dir().join("tmp")).unwrap().count(), 0);
    // `plumb cache ls` sees it, named by endpoint and bucket.
    let entries = cache.entries().unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].kind, "bucket");
    assert_eq!(
        entries[0].url.as_deref(),
        Some(format!("http://127.0.0.1:{}/manifests/", moto.port).as_str())
    );
    assert_eq!(entries[0].dir, artifact.dir);

    // Listed again: the same revision and tree.
    let again = cache
        .fetch_bucket(&bucket.source(), Some(&creds()), Mode::Online)
        .unwrap();
    assert_eq!(again, artifact);
}

#[test]
fn a_prefix_selects_keys_and_the_artifact_keeps_them_whole() {
    let moto = Moto::start();
    let bucket = Bucket::create(&moto, "prefixed");
    let a = bucket.put("apps/a.yaml", "a\n");
    let dev = bucket.put("apps-dev/d.yaml", "d\n");
    bucket.put("infra/i.yaml", "i\n");
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::new(tmp.path());

    let source = BucketSource {
        prefix: Some("apps/".into()),
        ..bucket.source()
    };
    let artifact = cache
        .fetch_bucket(&source, Some(&creds()), Mode::Online)
        .unwrap();
    assert_eq!(files(&artifact.dir), map(&[("apps/a.yaml", "a\n")]));
    assert_eq!(artifact.revision, expected_revision(&[("apps/a.yaml", &a)]));

    // S3 prefixes are plain strings: "apps" also selects "apps-dev/".
    let source = BucketSource {
        prefix: Some("apps".into()),
        ..bucket.source()
    };
    let artifact = cache
        .fetch_bucket(&source, Some(&creds()), Mode::Online)
        .unwrap();
    assert_eq!(
        files(&artifact.dir),
        map(&[("apps/a.yaml", "a\n"), ("apps-dev/d.yaml", "d\n")])
    );
    assert_eq!(
        artifact.revision,
        expected_revision(&[("apps/a.yaml", &a), ("apps-dev/d.yaml", &dev)])
    );
}

#[test]
fn the_root_sourceignore_and_spec_ignore_filter_keys() {
    let moto = Moto::start();
    let bucket = Bucket::create(&moto, "ignored");
    bucket.put(".sourceignore", "*.md\ndrafts/\n");
    let keep = bucket.put("apps/keep.md", "kept by spec.ignore\n");
    let deploy = bucket.put("apps/deploy.yaml", "deploy\n");
    bucket.put("README.md", "readme\n");
    bucket.put("drafts/x.yaml", "draft\n");
    bucket.put("apps/secret.yaml", "secret\n");
    // Only the bucket's root .sourceignore is read; this one is an ordinary object.
    let nested = bucket.put("apps/.sourceignore", "deploy.yaml\n");
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::new(tmp.path());

    let source = BucketSource {
        ignore: Some("!apps/keep.md\nsecret.yaml\n".into()),
        ..bucket.source()
    };
    let artifact = cache
        .fetch_bucket(&source, Some(&creds()), Mode::Online)
        .unwrap();
    assert_eq!(
        files(&artifact.dir),
        map(&[
            // The controller downloads the root .sourceignore into the artifact.
            (".sourceignore", "*.md\ndrafts/\n"),
            ("apps/.sourceignore", "deploy.yaml\n"),
            ("apps/deploy.yaml", "deploy\n"),
            ("apps/keep.md", "kept by spec.ignore\n"),
        ])
    );
    // The root .sourceignore is not part of the index.
    assert_eq!(
        artifact.revision,
        expected_revision(&[
            ("apps/.sourceignore", &nested),
            ("apps/deploy.yaml", &deploy),
            ("apps/keep.md", &keep)
        ])
    );
}

#[test]
fn offline_reuses_the_last_listing_and_a_change_gives_a_new_revision() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::new(tmp.path());
    let (source, first, second) = {
        let moto = Moto::start();
        let bucket = Bucket::create(&moto, "changing");
        bucket.put("app.yaml", "version: 1\n");
        let source = bucket.source();

        let first = cache
            .fetch_bucket(&source, Some(&creds()), Mode::Online)
            .unwrap();
        bucket.put("app.yaml", "version: 2\n");
        bucket.put("extra.yaml", "new\n");
        let second = cache
            .fetch_bucket(&source, Some(&creds()), Mode::Online)
            .unwrap();
        (source, first, second)
        // moto stops here
    };
    assert_ne!(first.revision, second.revision);
    assert_ne!(first.dir, second.dir);
    // The old tree stays cached, untouched.
    assert_eq!(files(&first.dir), map(&[("app.yaml", "version: 1\n")]));
    assert_eq!(
        files(&second.dir),
        map(&[("app.yaml", "version: 2\n"), ("extra.yaml", "new\n")])
    );

    let offline = cache
        .fetch_bucket(&source, Some(&creds()), Mode::Offline)
        .unwrap();
    assert_eq!(offline, second);

    // Online with the server gone is an error, not the cache.
    let e = cache
        .fetch_bucket(&source, Some(&creds()), Mode::Online)
        .unwrap_err();
    assert!(matches!(e, BucketError::Unreachable { .. }), "{e}");

    // Another bucket at the same endpoint was never listed.
    let other = BucketSource {
        bucket_name: "never-listed".into(),
        ..source.clone()
    };
    let e = cache.fetch_bucket(&other, None, Mode::Offline).unwrap_err();
    assert!(matches!(e, BucketError::NotCached { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("'never-listed'") && text.contains(&source.endpoint_url()),
        "{text}"
    );
}

#[test]
fn nothing_listening_is_unreachable_naming_endpoint_and_bucket() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::new(tmp.path());
    let source = BucketSource {
        bucket_name: "anything".into(),
        endpoint: format!("127.0.0.1:{}", free_port()),
        insecure: true,
        ..BucketSource::default()
    };
    let e = cache
        .fetch_bucket(&source, Some(&creds()), Mode::Online)
        .unwrap_err();
    assert!(matches!(e, BucketError::Unreachable { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains(&source.endpoint_url()) && text.contains("'anything'"),
        "{text}"
    );
    assert!(!text.contains("plumb-test-secret"), "{text}");
}

#[test]
fn a_missing_bucket_is_reported_as_not_found() {
    let moto = Moto::start();
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::new(tmp.path());
    let source = BucketSource {
        bucket_name: "no-such-bucket".into(),
        endpoint: format!("127.0.0.1:{}", moto.port),
        insecure: true,
        ..BucketSource::default()
    };
    let e = cache
        .fetch_bucket(&source, Some(&creds()), Mode::Online)
        .unwrap_err();
    assert!(matches!(e, BucketError::BucketNotFound { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "bucket 'no-such-bucket' not found at http://127.0.0.1:{}",
            moto.port
        )
    );
}

#[test]
fn anonymous_access_to_private_objects_is_denied() {
    // moto lists anonymously but refuses an unsigned GET of an object without a public ACL.
    let moto = Moto::start();
    let bucket = Bucket::create(&moto, "private");
    bucket.put("app.yaml", "x\n");
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::new(tmp.path());
    let e = cache
        .fetch_bucket(&bucket.source(), None, Mode::Online)
        .unwrap_err();
    assert!(matches!(e, BucketError::AccessDenied { .. }), "{e}");
    assert!(e.to_string().contains("'private'"), "{e}");
    assert!(fs::read_dir(tmp.path().join("tmp"))
        .unwrap()
        .next()
        .is_none());
}

#[test]
fn an_unsafe_key_is_refused_and_nothing_is_written_outside_the_cache() {
    let moto = Moto::start();
    let bucket = Bucket::create(&moto, "hostile");
    bucket.put("app.yaml", "ok\n");
    bucket.put("..%2Fescape.yaml", "escaped\n");
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::new(tmp.path().join("cache"));

    let e = cache
        .fetch_bucket(&bucket.source(), Some(&creds()), Mode::Online)
        .unwrap_err();
    match &e {
        BucketError::UnsafeKey { key, bucket, .. } => {
            assert_eq!(key, "../escape.yaml");
            assert_eq!(bucket, "hostile");
        }
        other => panic!("expected UnsafeKey, got {other}"),
    }
    let all = files(tmp.path());
    assert!(all.keys().all(|p| !p.ends_with("escape.yaml")), "{all:?}");
    assert!(
        all.is_empty(),
        "nothing cached for a refused bucket: {all:?}"
    );
    let e = cache
        .fetch_bucket(&bucket.source(), Some(&creds()), Mode::Offline)
        .unwrap_err();
    assert!(matches!(e, BucketError::NotCached { .. }), "{e}");
}

#[test]
fn a_key_that_is_also_a_directory_is_a_conflict_not_a_cache_error() {
    let moto = Moto::start();
    let bucket = Bucket::create(&moto, "conflicting");
    bucket.put("apps", "a file\n");
    bucket.put("apps-x.yaml", "sorts between\n");
    bucket.put("apps/a.yaml", "below it\n");
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::new(tmp.path());
    let e = cache
        .fetch_bucket(&bucket.source(), Some(&creds()), Mode::Online)
        .unwrap_err();
    match &e {
        BucketError::KeyConflict { file, below, .. } => {
            assert_eq!((file.as_str(), below.as_str()), ("apps", "apps/a.yaml"));
        }
        other => panic!("expected KeyConflict, got {other}"),
    }
    assert!(e.to_string().contains("'conflicting'"), "{e}");
}

#[test]
fn a_cache_that_cannot_be_created_is_reported() {
    let moto = Moto::start();
    let bucket = Bucket::create(&moto, "unwritable");
    bucket.put("app.yaml", "ok\n");
    let tmp = tempfile::tempdir().unwrap();
    // A file where the cache directory should be: creating anything below it fails, root or not.
    let blocker = tmp.path().join("cache");
    fs::write(&blocker, "").unwrap();
    let e = Cache::new(&blocker)
        .fetch_bucket(&bucket.source(), Some(&creds()), Mode::Online)
        .unwrap_err();
    assert!(matches!(e, BucketError::CacheNotWritable { .. }), "{e}");
    assert!(e.to_string().contains("'unwritable'"), "{e}");
}

/// One IAM Query API call, unsigned: moto routes it by the credential scope of the
/// Authorization header and checks nothing while its no-auth allowance lasts.
fn iam(moto: &Moto, params: &str) -> String {
    let response = reqwest::blocking::Client::new()
        .post(format!("{}/", moto.endpoint()))
        .header("content-type", "application/x-www-form-urlencoded")
        .header(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=bootstrap/20260101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=0",
        )
        .body(format!("{params}&Version=2010-05-08"))
        .send()
        .unwrap();
    let status = response.status();
    let text = response.text().unwrap();
    assert!(status.is_success(), "IAM {params}: {status} {text}");
    text
}

fn xml_text(xml: &str, name: &str) -> String {
    let start = xml.find(&format!("<{name}>")).unwrap() + name.len() + 2;
    let end = xml[start..].find(&format!("</{name}>")).unwrap();
    xml[start..start + end].to_owned()
}

#[test]
fn with_authentication_on_only_the_right_keys_fetch() {
    let moto = Moto::start();
    let bucket = Bucket::create(&moto, "guarded");
    let etag = bucket.put("app.yaml", "guarded\n");
    // From here moto checks signatures against its IAM users, after three free calls that
    // create one with a key pair allowed everything.
    let reset = reqwest::blocking::Client::new()
        .post(format!("{}/moto-api/reset-auth", moto.endpoint()))
        .body("3")
        .send()
        .unwrap();
    assert!(reset.status().is_success());
    iam(&moto, "Action=CreateUser&UserName=flux");
    let key = iam(&moto, "Action=CreateAccessKey&UserName=flux");
    let policy =
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}"#;
    let encoded: String = policy
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    iam(
        &moto,
        &format!("Action=PutUserPolicy&UserName=flux&PolicyName=all&PolicyDocument={encoded}"),
    );
    let right = BucketCredentials {
        access_key: xml_text(&key, "AccessKeyId"),
        secret_key: xml_text(&key, "SecretAccessKey"),
    };
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::new(tmp.path());

    let wrong_secret = BucketCredentials {
        secret_key: "not-the-secret".into(),
        ..right.clone()
    };
    let unknown_key = BucketCredentials {
        access_key: "AKIAUNKNOWN".into(),
        secret_key: "not-the-secret".into(),
    };
    for wrong in [&wrong_secret, &unknown_key] {
        let e = cache
            .fetch_bucket(&bucket.source(), Some(wrong), Mode::Online)
            .unwrap_err();
        assert!(matches!(e, BucketError::AccessDenied { .. }), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("'guarded'") && text.contains(&bucket.source().endpoint_url()),
            "{text}"
        );
        assert!(
            !text.contains("not-the-secret") && !text.contains(&right.secret_key),
            "{text}"
        );
    }
    // (Unsigned requests make moto answer 500 in this mode: anonymous access is tested in
    // anonymous_access_to_private_objects_is_denied.)

    // The signature plumb computes is one moto accepts.
    let artifact = cache
        .fetch_bucket(&bucket.source(), Some(&right), Mode::Online)
        .unwrap();
    assert_eq!(files(&artifact.dir), map(&[("app.yaml", "guarded\n")]));
    assert_eq!(artifact.revision, expected_revision(&[("app.yaml", &etag)]));
}
