//! Issue 5's acceptance for the pinning, secret, API-version and lock-file rules on
//! `examples/homelab`: the repository as committed has none of their findings, for dev and for
//! prod, and each planted mistake gives the expected finding at the text that is wrong.

mod common;

use plumb_check::{CheckConfig, Finding};
use std::path::{Path, PathBuf};

const CODES: &[&str] = &[
    "PIN001", "PIN002", "PIN003", "SEC001", "SEC002", "API001", "LCK001",
];

/// A fresh copy of `examples/homelab` in a directory of its own.
fn homelab(name: &str) -> PathBuf {
    common::fresh_copy(&common::homelab(), &format!("homelab-pin-sec-{name}"))
}

/// This area's findings for one entry of the repository at `root`.
fn findings(root: &Path, entry: &str) -> Vec<Finding> {
    common::findings(root, &[entry], &CheckConfig::default(), |code| {
        CODES.contains(&code)
    })
}

/// `CODE file:line:column` per finding.
fn places(findings: &[Finding]) -> Vec<String> {
    findings
        .iter()
        .map(|f| match &f.location {
            Some(l) => format!("{} {}", f.code, common::place(l)),
            None => format!("{} (no location): {}", f.code, f.message),
        })
        .collect()
}

/// `file:line:column` of the first occurrence of `needle` in a file of the repository.
fn place_of(root: &Path, file: &str, needle: &str) -> String {
    let text = std::fs::read_to_string(root.join(file)).unwrap();
    let offset = text
        .find(needle)
        .unwrap_or_else(|| panic!("{file} has no {needle:?}"));
    let line = text[..offset].matches('\n').count() + 1;
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let column = text[line_start..offset].chars().count() + 1;
    format!("{file}:{line}:{column}")
}

#[test]
fn the_committed_homelab_has_none_of_these_findings() {
    let root = homelab("committed");
    for entry in ["clusters/dev", "clusters/prod"] {
        let found = findings(&root, entry);
        assert!(found.is_empty(), "{entry}: {:#?}", places(&found));
    }
}

#[test]
fn an_image_by_tag_without_digest_is_pin001_at_the_image() {
    let root = homelab("pin001");
    let file = "apps/wave-1/backup/cronjob.yaml";
    let path = root.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let pinned = "docker.io/rclone/rclone@sha256:8e8fdf5d13c57e65a35c323e67459d56b743a7622d3be73f3886a1dd07565889";
    assert!(text.contains(pinned));
    std::fs::write(
        &path,
        text.replace(pinned, "docker.io/rclone/rclone:1.69.3"),
    )
    .unwrap();
    let expected = format!(
        "PIN001 {}",
        place_of(&root, file, "docker.io/rclone/rclone:1.69.3")
    );
    for entry in ["clusters/dev", "clusters/prod"] {
        let found = findings(&root, entry);
        assert_eq!(places(&found), vec![expected.clone()], "{entry}");
        assert!(found[0].message.contains("docker.io/rclone/rclone:1.69.3"));
        assert!(found[0]
            .chain
            .last()
            .is_some_and(|k| k == "flux-system/apps-wave-1"));
    }
}

#[test]
fn the_sops_file_decrypted_into_plaintext_is_sec001_at_its_first_credential() {
    let root = homelab("sec001");
    let file = "apps/wave-1/backup/s3-credentials.sops.yaml";
    std::fs::write(
        root.join(file),
        "apiVersion: v1\nkind: Secret\nmetadata:\n    name: s3-credentials\n    namespace: backup\ntype: Opaque\nstringData:\n    ACCESS_KEY_ID: homelab-backup\n    SECRET_ACCESS_KEY: 9f3c1e7a52b84d06\n",
    )
    .unwrap();
    // The key ID names the key (an identifier, as a user name is); the secret key beside it is
    // the credential.
    let expected = format!("SEC001 {}", place_of(&root, file, "SECRET_ACCESS_KEY"));
    for entry in ["clusters/dev", "clusters/prod"] {
        let found = findings(&root, entry);
        assert_eq!(places(&found), vec![expected.clone()], "{entry}");
        assert!(found[0].message.contains("stringData.SECRET_ACCESS_KEY"));
        assert!(
            !found[0].message.contains("9f3c1e7a52b84d06"),
            "a finding never prints the secret"
        );
    }
}
