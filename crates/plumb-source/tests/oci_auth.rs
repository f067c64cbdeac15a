//! Registry credentials through `DOCKER_CONFIG`, against a real `docker-registry` with htpasswd
//! authentication (Basic challenge) and a token proxy (Bearer challenge, token service taking
//! Basic credentials).
//!
//! One test in its own binary: it sets `DOCKER_CONFIG`, which is process-wide, so no other test
//! may run beside it.

use std::fs;
use std::path::Path;

use plumb_source::{Cache, Mode, OciError, OciRef, OciSource};

#[path = "support/registry.rs"]
mod registry;
use registry::{docker_config, Registry, TokenProxy};

const USER: &str = "plumb";
const PASSWORD: &str = "s3cret-Pa55";
const WRONG: &str = "not-the-password-42";

fn source(url: &str) -> OciSource {
    OciSource {
        url: url.to_owned(),
        reference: OciRef::tag("v1"),
        ..OciSource::default()
    }
}

fn use_config(dir: &Path) {
    std::env::set_var("DOCKER_CONFIG", dir);
}

#[test]
fn credentials_from_docker_config_for_basic_and_bearer_registries() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::new(tmp.path().join("cache"));
    let hash = bcrypt::hash(PASSWORD, 4).unwrap();
    let registry =
        Registry::start_with_htpasswd(&format!("{USER}:{hash}"), &format!("{USER}:{PASSWORD}"));
    let digest = registry.push_files("app", "v1", &[("a.yaml", "secret app\n")]);
    let url = registry.url("app");

    // No credentials: refused, and the error says that none were found.
    let empty = tmp.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    use_config(&empty);
    let err = cache.fetch_oci(&source(&url), Mode::Online).unwrap_err();
    assert!(matches!(err, OciError::Unauthorized { .. }), "{err}");
    assert!(err.to_string().contains(&url), "{err}");
    assert!(err.to_string().contains("no credentials"), "{err}");

    // The right ones, as `docker login` writes them.
    let good = docker_config(&tmp.path().join("good"), &registry.host(), USER, PASSWORD);
    use_config(&good);
    let artifact = cache.fetch_oci(&source(&url), Mode::Online).unwrap();
    assert_eq!(artifact.revision, format!("v1@{digest}"));
    assert_eq!(
        fs::read_to_string(artifact.dir.join("a.yaml")).unwrap(),
        "secret app\n"
    );

    // A wrong password: a clear refusal that never shows the secret, and no access to what the
    // other identity cached.
    let wrong = docker_config(
        &tmp.path().join("wrong"),
        &registry.host(),
        "intruder",
        WRONG,
    );
    use_config(&wrong);
    let err = cache.fetch_oci(&source(&url), Mode::Online).unwrap_err();
    assert!(matches!(err, OciError::Unauthorized { .. }), "{err}");
    let text = format!("{err} {err:?}");
    assert!(text.contains(&url), "{text}");
    assert!(!text.contains(WRONG) && !text.contains(PASSWORD), "{text}");
    let err = cache.fetch_oci(&source(&url), Mode::Offline).unwrap_err();
    assert!(
        matches!(err, OciError::NotCached { .. }),
        "another identity's cache entries are not shared: {err}"
    );
    use_config(&good);
    let offline = cache.fetch_oci(&source(&url), Mode::Offline).unwrap();
    assert_eq!(offline, artifact);

    // Bearer: the token service takes the Basic credentials, the registry the token.
    let open = Registry::start();
    let bearer_digest = open.push_files("app", "v1", &[("b.yaml", "behind a token\n")]);
    let proxy = TokenProxy::start(open.port, Some(&format!("{USER}:{PASSWORD}")), 100);
    let proxy_url = proxy.url("app");
    let host = format!("127.0.0.1:{}", proxy.port);
    let bearer = docker_config(&tmp.path().join("bearer"), &host, USER, PASSWORD);
    use_config(&bearer);
    let artifact = cache.fetch_oci(&source(&proxy_url), Mode::Online).unwrap();
    assert_eq!(artifact.revision, format!("v1@{bearer_digest}"));
    assert!(proxy.tokens.load(std::sync::atomic::Ordering::SeqCst) >= 1);

    let bearer_wrong = docker_config(&tmp.path().join("bearer-wrong"), &host, USER, WRONG);
    use_config(&bearer_wrong);
    let err = cache
        .fetch_oci(&source(&proxy_url), Mode::Online)
        .unwrap_err();
    assert!(matches!(err, OciError::Unauthorized { .. }), "{err}");
    let text = format!("{err} {err:?}");
    assert!(
        text.contains(&proxy_url) && text.contains("token service"),
        "{text}"
    );
    assert!(!text.contains(WRONG), "{text}");
}
