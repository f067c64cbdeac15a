//! Fetches over ssh from OpenSSH's real `sshd` on loopback, with the key and known hosts a Flux
//! ssh Secret holds: fetched, an unknown host key refused, a wrong key refused, the key never
//! printed. Needs /usr/sbin/sshd (`scripts/ensure-sshd`, which scripts/test runs); without it
//! the test fails saying so rather than passing unseen.

use plumb_source::{Cache, GitRef, GitSource, Mode, SshKey};

#[path = "support/git_server.rs"]
mod git_server;
#[path = "support/ssh_server.rs"]
mod ssh_server;
use git_server::{free_port, Repo};

fn source(url: &str, key: SshKey) -> GitSource {
    GitSource {
        url: url.to_owned(),
        reference: GitRef {
            branch: Some("main".into()),
            ..GitRef::default()
        },
        ignore: None,
        credentials: None,
        ssh: Some(key),
        recurse_submodules: false,
    }
}

#[test]
fn an_ssh_url_is_fetched_with_the_secret_key_and_known_hosts() {
    assert!(
        ssh_server::available(),
        "sshd is not installed: run scripts/ensure-sshd"
    );
    let tmp = tempfile::tempdir().unwrap();
    let upstream = Repo::init(&tmp.path().join("served"), "ops.git", "main");
    upstream.write("deploy/app.yaml", "kind: ConfigMap\n");
    let commit = upstream.commit("app");
    let server = ssh_server::Sshd::start(&tmp.path().join("sshd"), free_port());
    let url = server.url(&upstream.dir);
    let cache = Cache::new(tmp.path().join("cache"));
    let key = SshKey {
        identity: server.identity.clone(),
        known_hosts: Some(server.known_hosts.clone()),
    };

    let artifact = cache
        .fetch_git(&source(&url, key.clone()), Mode::Online)
        .unwrap();
    assert_eq!(artifact.revision, format!("main@sha1:{commit}"));
    assert!(artifact.dir.join("deploy/app.yaml").is_file());
    assert!(!format!("{key:?}").contains("PRIVATE KEY"));

    // A known_hosts that does not list this server: refused, never trusted on first use.
    let stranger = SshKey {
        known_hosts: Some(format!(
            "[127.0.0.1]:{} ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n",
            server.port
        )),
        ..key.clone()
    };
    let fresh = Cache::new(tmp.path().join("cache2"));
    let err = fresh
        .fetch_git(&source(&url, stranger), Mode::Online)
        .unwrap_err()
        .to_string();
    assert!(err.contains(&url), "{err}");
    assert!(!err.contains("PRIVATE KEY"), "{err}");

    // A key the server does not authorize.
    let other = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(other.path().join("k"))
        .status()
        .unwrap();
    assert!(status.success());
    let wrong = SshKey {
        identity: std::fs::read_to_string(other.path().join("k")).unwrap(),
        ..key
    };
    let err = fresh
        .fetch_git(&source(&url, wrong), Mode::Online)
        .unwrap_err()
        .to_string();
    assert!(err.contains(&url), "{err}");
}
