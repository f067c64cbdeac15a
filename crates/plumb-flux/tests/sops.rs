//! The SOPS reader against files written by the real sops binary (3.11.0, see
//! `scripts/gen-sops-fixtures`): each fixture must decrypt to exactly what `sops decrypt` printed,
//! and every kind of tampering must be refused.

use plumb_flux::sops::{
    decrypt_document, decrypt_documents, is_encrypted, placeholder_document, AgeKeys, SopsError,
};
use plumb_yaml::{parse_documents, to_json, Node};
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sops")
}

fn read(name: &str) -> String {
    std::fs::read_to_string(fixtures().join(name)).unwrap()
}

fn docs(name: &str, text: &str) -> Vec<Node> {
    parse_documents(name, text).unwrap()
}

fn keys() -> AgeKeys {
    AgeKeys::from_file(&fixtures().join("keys.txt")).unwrap()
}

/// Only the first key of `keys.txt`: the recipient of `recipient-second.txt`.
fn second_key_only() -> AgeKeys {
    let text = read("keys.txt");
    let line = text
        .lines()
        .find(|l| l.starts_with("AGE-SECRET-KEY-"))
        .unwrap();
    AgeKeys::parse(line, "first line of keys.txt").unwrap()
}

const FIXTURES: [&str; 8] = [
    "secret",
    "all-types",
    "two-recipients",
    "suffixes",
    "encrypted-suffix",
    "unencrypted-regex",
    "mac-only-encrypted",
    "multi-doc",
];

/// Plaintext that appears in the fixtures and must never show up in an error.
const SECRETS: [&str; 4] = [
    "homelab-backup",
    "not-a-real-secret",
    "correct horse",
    "c2VjcmV0LXRva2Vu",
];

#[test]
fn every_fixture_decrypts_to_what_sops_printed() {
    let keys = keys();
    let mut failed = Vec::new();
    for name in FIXTURES {
        let encrypted = docs(name, &read(&format!("{name}.sops.yaml")));
        let expected = docs(name, &read(&format!("{name}.expected.yaml")));
        assert!(encrypted.iter().all(is_encrypted), "{name}");
        let got = decrypt_documents(&encrypted, &keys).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got: Vec<_> = got.iter().map(|d| to_json(d).unwrap()).collect();
        let want: Vec<_> = expected.iter().map(|d| to_json(d).unwrap()).collect();
        if got != want {
            failed.push(name);
        }
    }
    println!(
        "{} passed, {} failed",
        FIXTURES.len() - failed.len(),
        failed.len()
    );
    assert!(failed.is_empty(), "differ from sops: {failed:?}");
}

#[test]
fn typed_values_come_back_typed() {
    let doc = &docs("a", &read("all-types.sops.yaml"))[0];
    let plain = to_json(&decrypt_document(doc, &keys()).unwrap()).unwrap();
    assert_eq!(plain["count"], serde_json::json!(42));
    assert_eq!(plain["ratio"], serde_json::json!(0.25));
    assert_eq!(plain["enabled"], serde_json::json!(true));
    assert_eq!(plain["octal_looking"], serde_json::json!("0644"));
    assert_eq!(plain["nested"]["deeper"]["list"][1], serde_json::json!(2));
    assert!(plain.get("sops").is_none());
}

#[test]
fn plain_documents_are_not_encrypted() {
    for name in ["secret.yaml", "all-types.yaml"] {
        let text = read(&format!("plain/{name}"));
        assert!(!is_encrypted(&docs(name, &text)[0]), "{name}");
    }
    let doc = &docs("x", "kind: ConfigMap\nsops: {}\n")[0];
    assert!(!is_encrypted(doc));
}

#[test]
fn any_recipient_of_several_decrypts() {
    let doc = &docs("t", &read("two-recipients.sops.yaml"))[0];
    let keys = second_key_only();
    assert_eq!(keys.len(), 1);
    let plain = to_json(&decrypt_document(doc, &keys).unwrap()).unwrap();
    assert_eq!(plain["stringData"]["S3_ACCESS_KEY"], "homelab-backup");
    // The same key is not a recipient of the single-recipient file.
    let single = &docs("s", &read("secret.sops.yaml"))[0];
    assert!(matches!(
        decrypt_document(single, &keys),
        Err(SopsError::NoMatchingKey { .. })
    ));
}

fn assert_refused(text: &str, what: &str, check: impl Fn(&SopsError) -> bool) {
    let docs = docs(what, text);
    let err = match decrypt_documents(&docs, &keys()) {
        Ok(_) => panic!("{what}: decrypted a tampered file"),
        Err(e) => e,
    };
    assert!(check(&err), "{what}: unexpected error {err:?}");
    let shown = format!("{err} {err:?}");
    for secret in SECRETS {
        assert!(!shown.contains(secret), "{what}: error shows a secret");
    }
}

#[test]
fn a_wrong_key_is_refused() {
    let doc = &docs("s", &read("secret.sops.yaml"))[0];
    let wrong = AgeKeys::from_file(&fixtures().join("wrong-key.txt")).unwrap();
    let err = decrypt_document(doc, &wrong).unwrap_err();
    assert!(
        matches!(err, SopsError::NoMatchingKey { keys: 1, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains(read("recipient.txt").trim()));
}

/// Replaces the first character of the base64 after `marker` with another valid one.
fn flip_after(text: &str, marker: &str) -> String {
    let at = text.find(marker).unwrap_or_else(|| panic!("{marker}")) + marker.len();
    let old = &text[at..at + 1];
    let new = if old == "A" { "B" } else { "A" };
    format!("{}{}{}", &text[..at], new, &text[at + 1..])
}

#[test]
fn a_tampered_value_is_refused() {
    let text = read("secret.sops.yaml");
    let tampered = flip_after(&text, "S3_ACCESS_KEY: ENC[AES256_GCM,data:");
    assert_refused(
        &tampered,
        "value",
        |e| matches!(e, SopsError::ValueAuthentication { path } if path == "stringData:S3_ACCESS_KEY"),
    );
}

#[test]
fn a_value_moved_to_another_key_is_refused() {
    let text = read("secret.sops.yaml");
    let value = |key: &str| {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(key))
            .unwrap();
        line.split_once(": ").unwrap().1.to_string()
    };
    let (a, b) = (value("S3_ACCESS_KEY:"), value("S3_SECRET_KEY:"));
    let swapped = text.replace(&a, "@A@").replace(&b, &a).replace("@A@", &b);
    assert_refused(&swapped, "swap", |e| {
        matches!(e, SopsError::ValueAuthentication { .. })
    });
}

#[test]
fn a_changed_clear_value_fails_the_mac() {
    let text = read("secret.sops.yaml");
    let renamed = text.replace("name: cluster-secrets", "name: cluster-secretz");
    assert_refused(&renamed, "clear value", |e| {
        matches!(e, SopsError::MacMismatch)
    });
}

#[test]
fn a_removed_or_reordered_value_fails_the_mac() {
    let text = read("secret.sops.yaml");
    let removed: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("GRAFANA_ADMIN_PASSWORD:"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_refused(&removed, "removed", |e| matches!(e, SopsError::MacMismatch));

    let lines: Vec<&str> = text.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.trim_start().starts_with("S3_ACCESS_KEY:"))
        .unwrap();
    let mut reordered = lines.clone();
    reordered.swap(i, i + 1);
    assert_refused(&(reordered.join("\n") + "\n"), "reordered", |e| {
        matches!(e, SopsError::MacMismatch)
    });
}

#[test]
fn a_tampered_mac_is_refused() {
    let text = read("secret.sops.yaml");
    let tampered = flip_after(&text, "mac: ENC[AES256_GCM,data:");
    assert_refused(&tampered, "mac", |e| {
        matches!(e, SopsError::MacAuthentication)
    });

    let other = read("two-recipients.sops.yaml");
    let mac_line = |t: &str| {
        t.lines()
            .find(|l| l.trim_start().starts_with("mac: "))
            .unwrap()
            .to_string()
    };
    let foreign = text.replace(&mac_line(&text), &mac_line(&other));
    assert_refused(&foreign, "foreign mac", |e| {
        matches!(e, SopsError::MacAuthentication)
    });

    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("lastmodified: "))
        .unwrap();
    let redated = text.replace(line, "    lastmodified: \"2001-01-01T00:00:00Z\"");
    assert_refused(&redated, "lastmodified", |e| {
        matches!(e, SopsError::MacAuthentication)
    });
}

#[test]
fn a_multi_document_file_needs_all_its_documents() {
    let all = docs("m", &read("multi-doc.sops.yaml"));
    assert_eq!(all.len(), 2);
    assert!(matches!(
        decrypt_document(&all[0], &keys()),
        Err(SopsError::MacMismatch)
    ));
    assert_eq!(decrypt_documents(&all, &keys()).unwrap().len(), 2);
}

#[test]
fn placeholders_replace_only_encrypted_values() {
    let doc = &docs("s", &read("secret.sops.yaml"))[0];
    let shown = to_json(&placeholder_document(doc).unwrap()).unwrap();
    assert_eq!(
        shown["stringData"]["S3_SECRET_KEY"],
        "SOPS-ENCRYPTED:S3_SECRET_KEY"
    );
    assert_eq!(shown["data"]["token"], "SOPS-ENCRYPTED:token");
    assert_eq!(shown["metadata"]["name"], "cluster-secrets");
    assert!(shown.get("sops").is_none());
}

#[test]
fn metadata_without_age_names_what_it_has() {
    let text = "a: ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]\nsops:\n  pgp:\n    - fp: ABCDEF\n      enc: x\n  lastmodified: \"2024-01-01T00:00:00Z\"\n  mac: ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]\n";
    let doc = &docs("p", text)[0];
    let err = decrypt_document(doc, &keys()).unwrap_err();
    assert!(
        matches!(&err, SopsError::NoAgeRecipient(k) if k == "pgp"),
        "{err:?}"
    );
}

#[test]
fn the_homelab_example_secret_decrypts_with_its_test_key() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/homelab");
    let path = root.join("apps/wave-1/backup/s3-credentials.sops.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let doc = &docs("s3-credentials.sops.yaml", &text)[0];
    assert!(is_encrypted(doc));
    let keys = AgeKeys::from_file(&root.join("age.agekey")).unwrap();
    let plain = to_json(&decrypt_document(doc, &keys).unwrap()).unwrap();
    assert_eq!(plain["stringData"]["ACCESS_KEY_ID"], "homelab-backup");
    assert_eq!(plain["metadata"]["namespace"], "backup");
}
