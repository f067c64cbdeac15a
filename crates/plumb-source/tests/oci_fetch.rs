//! OCIRepository fetches against a real `docker-registry` the test starts on loopback (and a
//! token proxy in front of it for the Bearer flow and paged tag lists).
//!
//! Each test pushes Flux artifacts with plain distribution API requests and checks what lands in
//! the cache: the files, the revision string, that cached pins and offline mode need no
//! registry (proved by stopping it), and that hostile or broken layers leave nothing behind.

use std::fs;
use std::path::{Path, PathBuf};

use plumb_source::{Cache, LayerOperation, LayerSelector, Mode, OciError, OciRef, OciSource};

#[path = "support/registry.rs"]
mod registry;
use registry::{free_port, hostile_tar_gz, tar_gz, Registry, TokenProxy, FLUX_CONTENT};

struct Setup {
    tmp: tempfile::TempDir,
    cache_dir: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let cache_dir = tmp.path().join("cache");
        Setup { cache_dir, tmp }
    }

    fn cache(&self) -> Cache {
        Cache::new(&self.cache_dir)
    }
}

fn source(url: &str, reference: OciRef) -> OciSource {
    OciSource {
        url: url.to_owned(),
        reference,
        ..OciSource::default()
    }
}

fn read(dir: &Path, path: &str) -> String {
    fs::read_to_string(dir.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every artifact directory the cache holds, and whether `tmp/` is empty.
fn cache_state(cache_dir: &Path) -> (Vec<String>, bool) {
    let mut trees = Vec::new();
    if let Ok(repos) = fs::read_dir(cache_dir.join("oci")) {
        for repo in repos {
            for entry in fs::read_dir(repo.unwrap().path()).unwrap() {
                let entry = entry.unwrap();
                let name = entry.file_name().into_string().unwrap();
                if name != "refs" && entry.file_type().unwrap().is_dir() {
                    trees.push(name);
                }
            }
        }
    }
    let tmp_empty = fs::read_dir(cache_dir.join("tmp"))
        .map(|mut d| d.next().is_none())
        .unwrap_or(true);
    (trees, tmp_empty)
}

/// Every path under `dir` whose file name is `name`.
fn find_named(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return found;
    };
    for entry in entries {
        let entry = entry.unwrap();
        if entry.file_name() == name {
            found.push(entry.path());
        }
        if entry.file_type().unwrap().is_dir() {
            found.extend(find_named(&entry.path(), name));
        }
    }
    found
}

const APP: &[(&str, &str)] = &[
    ("deploy/app.yaml", "kind: ConfigMap\n"),
    ("README.md", "docs\n"),
];

#[test]
fn a_tag_is_fetched_with_its_files_revision_and_annotations() {
    let setup = Setup::new();
    let registry = Registry::start();
    let digest = registry.push_files("app", "latest", APP);
    let v1 = registry.push_files("app", "v1.0.0", &[("a.yaml", "v1\n")]);

    let latest = setup
        .cache()
        .fetch_oci(
            &source(&registry.url("app"), OciRef::default()),
            Mode::Online,
        )
        .unwrap();
    assert_eq!(latest.revision, format!("latest@{digest}"));
    assert_eq!(latest.digest, digest);
    assert!(latest.dir.starts_with(&setup.cache_dir));
    assert!(latest
        .dir
        .ends_with(digest.strip_prefix("sha256:").unwrap()));
    assert_eq!(read(&latest.dir, "deploy/app.yaml"), "kind: ConfigMap\n");
    assert_eq!(read(&latest.dir, "README.md"), "docs\n");
    assert_eq!(latest.file, None);
    assert_eq!(
        latest
            .annotations
            .get("org.opencontainers.image.source")
            .map(String::as_str),
        Some("https://example.invalid/app")
    );

    let tagged = setup
        .cache()
        .fetch_oci(
            &source(&registry.url("app"), OciRef::tag("v1.0.0")),
            Mode::Online,
        )
        .unwrap();
    assert_eq!(tagged.revision, format!("v1.0.0@{v1}"));
    assert_eq!(read(&tagged.dir, "a.yaml"), "v1\n");
    assert!(!tagged.dir.join("deploy").exists());
    let (trees, tmp_empty) = cache_state(&setup.cache_dir);
    assert_eq!(trees.len(), 2, "{trees:?}");
    assert!(tmp_empty, "work directories are removed");

    // `plumb cache ls` sees the two artifacts, with their URL, and nothing else.
    let entries = setup.cache().entries().unwrap();
    let listed: Vec<(&str, Option<&str>, &str)> = entries
        .iter()
        .map(|e| (e.kind.as_str(), e.url.as_deref(), e.revision.as_str()))
        .collect();
    let url = registry.url("app");
    let mut expected = vec![
        (
            "oci",
            Some(url.as_str()),
            digest.strip_prefix("sha256:").unwrap(),
        ),
        (
            "oci",
            Some(url.as_str()),
            v1.strip_prefix("sha256:").unwrap(),
        ),
    ];
    expected.sort();
    assert_eq!(listed, expected);
}

#[test]
fn a_cached_tag_is_used_offline_after_the_registry_stops() {
    let setup = Setup::new();
    let mut registry = Registry::start();
    let digest = registry.push_files("app", "v1", APP);
    let url = registry.url("app");
    let cache = setup.cache();

    let online = cache
        .fetch_oci(&source(&url, OciRef::tag("v1")), Mode::Online)
        .unwrap();
    registry.stop();

    let offline = cache
        .fetch_oci(&source(&url, OciRef::tag("v1")), Mode::Offline)
        .unwrap();
    assert_eq!(offline, online);
    assert_eq!(offline.revision, format!("v1@{digest}"));

    // Never resolved: offline cannot know it.
    let err = cache
        .fetch_oci(&source(&url, OciRef::tag("v2")), Mode::Offline)
        .unwrap_err();
    assert!(matches!(err, OciError::NotCached { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains(&url) && text.contains("tag \"v2\"") && text.contains("offline"),
        "{text}"
    );

    // Tags are re-resolved online: with the registry gone that is an error naming URL and ref.
    let err = cache
        .fetch_oci(&source(&url, OciRef::tag("v1")), Mode::Online)
        .unwrap_err();
    assert!(matches!(err, OciError::Unreachable { .. }), "{err}");
    assert!(
        err.to_string().contains(&url) && err.to_string().contains("tag \"v1\""),
        "{err}"
    );
}

#[test]
fn a_moved_tag_is_refetched_online_and_offline_gives_the_last_resolution() {
    let setup = Setup::new();
    let registry = Registry::start();
    let url = registry.url("app");
    let cache = setup.cache();
    let first = registry.push_files("app", "stable", &[("a.yaml", "one\n")]);
    let before = cache
        .fetch_oci(&source(&url, OciRef::tag("stable")), Mode::Online)
        .unwrap();
    assert_eq!(before.revision, format!("stable@{first}"));

    let second = registry.push_files("app", "stable", &[("a.yaml", "two\n")]);
    assert_ne!(first, second);
    let after = cache
        .fetch_oci(&source(&url, OciRef::tag("stable")), Mode::Online)
        .unwrap();
    assert_eq!(after.revision, format!("stable@{second}"));
    assert_eq!(read(&after.dir, "a.yaml"), "two\n");
    assert_ne!(after.dir, before.dir);
    assert_eq!(
        read(&before.dir, "a.yaml"),
        "one\n",
        "the old artifact stays cached"
    );

    let offline = cache
        .fetch_oci(&source(&url, OciRef::tag("stable")), Mode::Offline)
        .unwrap();
    assert_eq!(offline, after);
}

#[test]
fn a_digest_pin_is_fetched_once_and_never_again() {
    let setup = Setup::new();
    let mut registry = Registry::start();
    let digest = registry.push_files("app", "v1", APP);
    let url = registry.url("app");
    let cache = setup.cache();

    // Not fetched yet: offline has nothing.
    let err = cache
        .fetch_oci(&source(&url, OciRef::digest(&digest)), Mode::Offline)
        .unwrap_err();
    assert!(matches!(err, OciError::NotCached { .. }), "{err}");
    assert!(err.to_string().contains(&digest), "{err}");

    let pinned = cache
        .fetch_oci(&source(&url, OciRef::digest(&digest)), Mode::Online)
        .unwrap();
    assert_eq!(
        pinned.revision, digest,
        "a digest pin's revision is the digest alone"
    );
    assert_eq!(read(&pinned.dir, "deploy/app.yaml"), "kind: ConfigMap\n");

    registry.stop();
    // Online, with the registry gone: still served from the cache, never asked again.
    let again = cache
        .fetch_oci(&source(&url, OciRef::digest(&digest)), Mode::Online)
        .unwrap();
    assert_eq!(again, pinned);
    // The digest wins over tag and semver, as in source-controller.
    let mut all = OciRef::digest(&digest);
    all.tag = Some("v9".into());
    all.semver = Some(">=9".into());
    let offline = cache.fetch_oci(&source(&url, all), Mode::Offline).unwrap();
    assert_eq!(offline, pinned);

    let missing = format!("sha256:{}", "0".repeat(64));
    let err = cache
        .fetch_oci(&source(&url, OciRef::digest("sha256:abc")), Mode::Online)
        .unwrap_err();
    assert!(matches!(err, OciError::InvalidSpec { .. }), "{err}");
    let mut registry = Registry::start();
    registry.push_files("app", "v1", APP);
    let err = cache
        .fetch_oci(
            &source(&registry.url("app"), OciRef::digest(&missing)),
            Mode::Online,
        )
        .unwrap_err();
    assert!(matches!(err, OciError::NotFound { .. }), "{err}");
    assert!(err.to_string().contains(&missing), "{err}");
    registry.stop();
}

#[test]
fn semver_picks_the_highest_matching_tag_and_the_filter_narrows_the_tags() {
    let setup = Setup::new();
    let registry = Registry::start();
    let url = registry.url("app");
    let mut digests = std::collections::HashMap::new();
    for tag in [
        "v1.0.0",
        "v1.2.0",
        "v1.3.0-rc.1",
        "v2.0.0",
        "1.1.0",
        "latest",
    ] {
        digests.insert(
            tag,
            registry.push_files("app", tag, &[("version.txt", tag)]),
        );
    }
    let cache = setup.cache();

    let artifact = cache
        .fetch_oci(
            &source(&url, OciRef::semver(">=1.0.0 <2.0.0")),
            Mode::Online,
        )
        .unwrap();
    assert_eq!(artifact.revision, format!("v1.2.0@{}", digests["v1.2.0"]));
    assert_eq!(read(&artifact.dir, "version.txt"), "v1.2.0");

    // (plumb's ranges admit a pre-release only from the same major.minor.patch, as Cargo's.)
    let mut rc = OciRef::semver(">=1.3.0-0 <2.0.0");
    rc.semver_filter = Some(".*-rc.*".into());
    let artifact = cache
        .fetch_oci(&source(&url, rc.clone()), Mode::Online)
        .unwrap();
    assert_eq!(
        artifact.revision,
        format!("v1.3.0-rc.1@{}", digests["v1.3.0-rc.1"])
    );
    // The filter is part of the ref: offline it has its own resolution.
    let offline = cache.fetch_oci(&source(&url, rc), Mode::Offline).unwrap();
    assert_eq!(offline.revision, artifact.revision);

    // Semver wins over a tag.
    let mut both = OciRef::semver("1.1.0");
    both.tag = Some("v2.0.0".into());
    let exact = cache.fetch_oci(&source(&url, both), Mode::Online).unwrap();
    assert_eq!(exact.revision, format!("1.1.0@{}", digests["1.1.0"]));

    let err = cache
        .fetch_oci(&source(&url, OciRef::semver(">=3")), Mode::Online)
        .unwrap_err();
    assert!(matches!(err, OciError::NotFound { .. }), "{err}");
    assert!(
        err.to_string().contains(">=3") && err.to_string().contains(&url),
        "{err}"
    );

    let mut bad = OciRef::semver(">=1");
    bad.semver_filter = Some("(".into());
    let err = cache
        .fetch_oci(&source(&url, bad), Mode::Online)
        .unwrap_err();
    assert!(matches!(err, OciError::InvalidSpec { .. }), "{err}");
}

#[test]
fn the_bearer_token_flow_and_paged_tag_lists_are_followed() {
    let setup = Setup::new();
    let registry = Registry::start();
    for tag in ["v1.0.0", "v1.1.0", "v1.2.0", "v1.4.0", "v1.3.0"] {
        registry.push_files("app", tag, &[("version.txt", tag)]);
    }
    let proxy = TokenProxy::start(registry.port, None, 2);

    let artifact = setup
        .cache()
        .fetch_oci(
            &source(&proxy.url("app"), OciRef::semver("1.x")),
            Mode::Online,
        )
        .unwrap();
    assert!(
        artifact.revision.starts_with("v1.4.0@sha256:"),
        "{}",
        artifact.revision
    );
    assert_eq!(read(&artifact.dir, "version.txt"), "v1.4.0");
    assert_eq!(
        proxy.pages.load(std::sync::atomic::Ordering::SeqCst),
        3,
        "five tags, two a page"
    );
    assert!(proxy.tokens.load(std::sync::atomic::Ordering::SeqCst) >= 1);
}

#[test]
fn a_layer_that_does_not_match_its_digest_is_refused() {
    let setup = Setup::new();
    let registry = Registry::start();
    registry.push_files("app", "v1", APP);
    let proxy = TokenProxy::start(registry.port, None, 100);
    proxy
        .tamper
        .store(true, std::sync::atomic::Ordering::SeqCst);

    let err = setup
        .cache()
        .fetch_oci(&source(&proxy.url("app"), OciRef::tag("v1")), Mode::Online)
        .unwrap_err();
    assert!(matches!(err, OciError::DigestMismatch { .. }), "{err}");
    assert!(err.to_string().contains(&proxy.url("app")), "{err}");
    let (trees, tmp_empty) = cache_state(&setup.cache_dir);
    assert!(trees.is_empty() && tmp_empty, "{trees:?}");
}

#[test]
fn the_layer_selector_picks_by_media_type_and_extracts_or_copies() {
    let setup = Setup::new();
    let registry = Registry::start();
    let other_type = "application/vnd.example.other.v1.tar+gzip";
    let other = tar_gz(&[("b.yaml", "second layer\n")]);
    let digest = registry.push_layers(
        "app",
        "v1",
        &[
            (FLUX_CONTENT, tar_gz(&[("a.yaml", "first layer\n")])),
            (other_type, other.clone()),
        ],
    );
    let url = registry.url("app");
    let cache = setup.cache();
    let with = |media_type: Option<&str>, operation| OciSource {
        layer_selector: LayerSelector {
            media_type: media_type.map(str::to_owned),
            operation,
        },
        ..source(&url, OciRef::tag("v1"))
    };

    let first = cache
        .fetch_oci(&with(None, LayerOperation::Extract), Mode::Online)
        .unwrap();
    assert_eq!(read(&first.dir, "a.yaml"), "first layer\n");
    assert!(!first.dir.join("b.yaml").exists());

    let second = cache
        .fetch_oci(
            &with(Some(other_type), LayerOperation::Extract),
            Mode::Online,
        )
        .unwrap();
    assert_eq!(read(&second.dir, "b.yaml"), "second layer\n");
    assert_ne!(second.dir, first.dir, "another selector, another tree");
    assert_eq!(second.revision, first.revision);

    let copied = cache
        .fetch_oci(&with(Some(other_type), LayerOperation::Copy), Mode::Online)
        .unwrap();
    let file = copied.file.clone().expect("a copied layer is a file");
    assert_eq!(file, copied.dir.join(format!("{digest}.tgz")));
    assert_eq!(
        fs::read(&file).unwrap(),
        other,
        "the layer exactly as pushed"
    );
    assert_eq!(fs::read_dir(&copied.dir).unwrap().count(), 1);

    let err = cache
        .fetch_oci(
            &with(Some("application/x-nothing"), LayerOperation::Extract),
            Mode::Online,
        )
        .unwrap_err();
    assert!(matches!(err, OciError::NoMatchingLayer { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("application/x-nothing") && text.contains(&url),
        "{text}"
    );
}

#[test]
fn sourceignore_files_and_spec_ignore_apply_to_the_extracted_layer() {
    let setup = Setup::new();
    let registry = Registry::start();
    registry.push_files(
        "app",
        "v1",
        &[
            (".sourceignore", "*.md\n"),
            ("README.md", "docs\n"),
            ("deploy/app.yaml", "a\n"),
            ("deploy/logo.png", "png\n"),
            ("other/x.yaml", "x\n"),
        ],
    );
    let url = registry.url("app");
    let cache = setup.cache();

    let default = cache
        .fetch_oci(&source(&url, OciRef::tag("v1")), Mode::Online)
        .unwrap();
    assert!(!default.dir.join("README.md").exists());
    // No default exclusions for OCI artifacts, unlike git.
    assert!(default.dir.join("deploy/logo.png").is_file());
    assert!(default.dir.join("other/x.yaml").is_file());

    let only_deploy = OciSource {
        ignore: Some("/*\n!/deploy\n".into()),
        ..source(&url, OciRef::tag("v1"))
    };
    let custom = cache.fetch_oci(&only_deploy, Mode::Online).unwrap();
    assert_ne!(custom.dir, default.dir);
    assert!(custom.dir.join("deploy/app.yaml").is_file());
    assert!(!custom.dir.join("other").exists());
}

#[test]
fn a_missing_tag_is_not_found_and_leaves_nothing_behind() {
    let setup = Setup::new();
    let registry = Registry::start();
    registry.push_files("app", "v1", APP);

    for url in [registry.url("app"), registry.url("no-such-repo")] {
        let err = setup
            .cache()
            .fetch_oci(&source(&url, OciRef::tag("v9.9.9")), Mode::Online)
            .unwrap_err();
        assert!(matches!(err, OciError::NotFound { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains(&url) && text.contains("v9.9.9"), "{text}");
    }
    let (trees, tmp_empty) = cache_state(&setup.cache_dir);
    assert!(trees.is_empty() && tmp_empty, "{trees:?}");
}

#[test]
fn an_unreachable_registry_names_url_and_ref() {
    let setup = Setup::new();
    let url = format!("oci://127.0.0.1:{}/app", free_port());
    let err = setup
        .cache()
        .fetch_oci(&source(&url, OciRef::tag("v1")), Mode::Online)
        .unwrap_err();
    assert!(matches!(err, OciError::Unreachable { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(&url) && text.contains("tag \"v1\""), "{text}");

    let err = setup
        .cache()
        .fetch_oci(
            &source("https://ghcr.io/x", OciRef::default()),
            Mode::Online,
        )
        .unwrap_err();
    assert!(matches!(err, OciError::InvalidSpec { .. }), "{err}");
    assert!(err.to_string().contains("oci://"), "{err}");
}

#[test]
fn a_layer_that_is_not_gzip_is_a_corrupt_archive() {
    let setup = Setup::new();
    let registry = Registry::start();
    registry.push_layers(
        "app",
        "v1",
        &[(FLUX_CONTENT, b"this is not gzip at all".to_vec())],
    );
    let mut truncated = tar_gz(APP);
    truncated.truncate(truncated.len() / 2);
    registry.push_layers("app", "v2", &[(FLUX_CONTENT, truncated)]);

    for tag in ["v1", "v2"] {
        let err = setup
            .cache()
            .fetch_oci(
                &source(&registry.url("app"), OciRef::tag(tag)),
                Mode::Online,
            )
            .unwrap_err();
        assert!(
            matches!(err, OciError::CorruptArchive { .. }),
            "{tag}: {err}"
        );
        assert!(err.to_string().contains(&registry.url("app")), "{err}");
    }
    let (trees, tmp_empty) = cache_state(&setup.cache_dir);
    assert!(trees.is_empty() && tmp_empty, "{trees:?}");
}

#[test]
fn hostile_entries_are_refused_and_nothing_is_written_outside_the_cache() {
    let setup = Setup::new();
    let registry = Registry::start();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "dotdot",
            hostile_tar_gz("../x", tar::EntryType::Regular, None, b"escaped"),
        ),
        (
            "deep",
            hostile_tar_gz("a/../../x", tar::EntryType::Regular, None, b"escaped"),
        ),
        (
            "absolute",
            hostile_tar_gz("/tmp/x", tar::EntryType::Regular, None, b"escaped"),
        ),
        (
            "abs-symlink",
            hostile_tar_gz("x", tar::EntryType::Symlink, Some("/etc/passwd"), b""),
        ),
        (
            "up-symlink",
            hostile_tar_gz("a/x", tar::EntryType::Symlink, Some("../../x"), b""),
        ),
        (
            "hardlink",
            hostile_tar_gz("x", tar::EntryType::Link, Some("../../../etc/passwd"), b""),
        ),
        (
            "device",
            hostile_tar_gz("x", tar::EntryType::Char, None, b""),
        ),
    ];
    for (tag, layer) in &cases {
        registry.push_layers("app", tag, &[(FLUX_CONTENT, layer.clone())]);
    }
    for (tag, _) in &cases {
        let err = setup
            .cache()
            .fetch_oci(
                &source(&registry.url("app"), OciRef::tag(*tag)),
                Mode::Online,
            )
            .unwrap_err();
        assert!(matches!(err, OciError::UnsafePath { .. }), "{tag}: {err}");
        assert!(err.to_string().contains(&registry.url("app")), "{err}");
    }
    assert!(
        find_named(setup.tmp.path(), "x").is_empty(),
        "nothing named x anywhere: {:?}",
        find_named(setup.tmp.path(), "x")
    );
    assert!(!Path::new("/tmp/x").exists() || fs::read("/tmp/x").unwrap() != b"escaped");
    let (trees, tmp_empty) = cache_state(&setup.cache_dir);
    assert!(trees.is_empty(), "no artifact published: {trees:?}");
    assert!(tmp_empty, "the half-written tree is removed");
}

#[test]
fn symlinks_inside_the_tree_are_skipped_as_source_controller_does() {
    let setup = Setup::new();
    let registry = Registry::start();
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    let mut header = tar::Header::new_gnu();
    header.set_size(2);
    header.set_mode(0o644);
    builder
        .append_data(&mut header, "deploy/app.yaml", &b"a\n"[..])
        .unwrap();
    let mut link = tar::Header::new_gnu();
    link.set_entry_type(tar::EntryType::Symlink);
    link.set_size(0);
    builder
        .append_link(&mut link, "deploy/inside", "app.yaml")
        .unwrap();
    let mut hard = tar::Header::new_gnu();
    hard.set_entry_type(tar::EntryType::Link);
    hard.set_size(0);
    builder
        .append_link(&mut hard, "copy.yaml", "deploy/app.yaml")
        .unwrap();
    let layer = builder.into_inner().unwrap().finish().unwrap();
    registry.push_layers("app", "v1", &[(FLUX_CONTENT, layer)]);

    let artifact = setup
        .cache()
        .fetch_oci(
            &source(&registry.url("app"), OciRef::tag("v1")),
            Mode::Online,
        )
        .unwrap();
    assert_eq!(read(&artifact.dir, "deploy/app.yaml"), "a\n");
    assert!(fs::symlink_metadata(artifact.dir.join("deploy/inside")).is_err());
    assert_eq!(
        read(&artifact.dir, "copy.yaml"),
        "a\n",
        "a hard link inside is a copy"
    );
}

#[test]
fn concurrent_fetches_of_one_tag_all_succeed_with_one_tree() {
    let setup = Setup::new();
    let registry = Registry::start();
    let digest = registry.push_files("app", "v1", APP);
    let url = registry.url("app");

    let artifacts: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let cache = setup.cache();
                let src = source(&url, OciRef::tag("v1"));
                scope.spawn(move || cache.fetch_oci(&src, Mode::Online))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for artifact in &artifacts {
        let artifact = artifact.as_ref().unwrap();
        assert_eq!(artifact.digest, digest);
        assert_eq!(read(&artifact.dir, "deploy/app.yaml"), "kind: ConfigMap\n");
    }
    let (trees, tmp_empty) = cache_state(&setup.cache_dir);
    assert_eq!(
        trees,
        vec![digest.strip_prefix("sha256:").unwrap().to_owned()]
    );
    assert!(tmp_empty);
}

#[test]
fn a_cache_that_cannot_be_written_is_reported_with_url_and_ref() {
    use std::os::unix::fs::PermissionsExt;
    let setup = Setup::new();
    let registry = Registry::start();
    registry.push_files("app", "v1", APP);
    fs::create_dir_all(&setup.cache_dir).unwrap();
    fs::set_permissions(&setup.cache_dir, fs::Permissions::from_mode(0o555)).unwrap();
    let probe = setup.cache_dir.join("probe");
    let ignores_permissions = fs::create_dir(&probe).is_ok();

    let result = setup.cache().fetch_oci(
        &source(&registry.url("app"), OciRef::tag("v1")),
        Mode::Online,
    );
    fs::set_permissions(&setup.cache_dir, fs::Permissions::from_mode(0o755)).unwrap();
    if ignores_permissions {
        eprintln!(
            "running as root, which ignores directory permissions: a read-only cache cannot be \
             made, so only the blocked-path case is checked"
        );
        assert!(result.is_ok(), "{result:?}");
    } else {
        let err = result.unwrap_err();
        assert!(matches!(err, OciError::CacheNotWritable { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains(&registry.url("app")) && text.contains("v1"),
            "{text}"
        );
    }

    // A cache under a regular file cannot be created, root or not.
    let blocker = setup.tmp.path().join("a-file");
    fs::write(&blocker, "not a directory").unwrap();
    let err = Cache::new(blocker.join("cache"))
        .fetch_oci(
            &source(&registry.url("app"), OciRef::tag("v1")),
            Mode::Online,
        )
        .unwrap_err();
    assert!(matches!(err, OciError::CacheNotWritable { .. }), "{err}");
    assert!(err.to_string().contains(&registry.url("app")), "{err}");
}
