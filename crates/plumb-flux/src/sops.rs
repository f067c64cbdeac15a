//! SOPS-encrypted YAML documents, read as kustomize-controller reads them: recognised by their
//! `sops:` metadata, passed through untouched when no key is given, and decrypted in memory with
//! age keys (`SOPS_AGE_KEY_FILE`, `SOPS_AGE_KEY`) when one is.
//!
//! Decryption follows getsops/sops: the data key is unwrapped from an age stanza, each value is
//! AES-256-GCM with a 32-byte nonce and its key path as additional data, and the document's MAC
//! (SHA-512 over the plaintext values in order, encrypted with `lastmodified` as additional
//! data) is verified before anything is returned. Decrypted values are never printed: errors
//! name paths, never values.
//!
//! ```
//! use plumb_flux::sops::{is_encrypted, placeholder};
//!
//! let docs = plumb_yaml::parse_documents("s.yaml", "kind: Secret\nsops:\n  mac: ENC[..]\n  lastmodified: \"2024-01-01T00:00:00Z\"\n").unwrap();
//! assert!(is_encrypted(&docs[0]));
//! assert_eq!(placeholder("password"), "SOPS-ENCRYPTED:password");
//! ```

mod cipher;
mod keys;
mod metadata;
mod tree;

pub use cipher::{is_encrypted_value, SecretValue};
pub use keys::AgeKeys;
pub use metadata::{AgeStanza, CryptRule, Metadata, KEY_KINDS};

use plumb_yaml::Node;
use thiserror::Error;
use tree::{Mode, Rule, Walk};

/// Why a SOPS document could not be read or decrypted. No variant carries a plaintext value or
/// key material.
#[derive(Debug, Error)]
pub enum SopsError {
    #[error("not a SOPS document: no `sops:` metadata")]
    NotEncrypted,
    #[error("invalid SOPS metadata: {0}")]
    Metadata(String),
    #[error("unsupported SOPS feature: {0}")]
    Unsupported(String),
    #[error("{source_name}:{line}: {reason}")]
    KeyParse {
        source_name: String,
        line: usize,
        reason: String,
    },
    #[error("cannot read age key file {path}: {reason}")]
    KeyFile { path: String, reason: String },
    #[error("none of the {keys} age key(s) given is a recipient of this file (its recipients: {recipients})")]
    NoMatchingKey { keys: usize, recipients: String },
    #[error("the data key is not wrapped for age (only for {0}); plumb decrypts age only")]
    NoAgeRecipient(String),
    #[error("cannot unwrap the data key: {0}")]
    DataKey(String),
    #[error("value at `{path}` is malformed: {reason}")]
    MalformedValue { path: String, reason: String },
    #[error("value at `{path}` fails authentication: it was altered, moved to another key, or encrypted with another data key")]
    ValueAuthentication { path: String },
    #[error("value at `{path}` does not hold a valid `{datatype}`")]
    BadPlaintext { path: String, datatype: String },
    #[error("the stored MAC fails authentication: `sops.mac` or `sops.lastmodified` was altered")]
    MacAuthentication,
    #[error("MAC mismatch: the document's values, keys or order were changed after encryption")]
    MacMismatch,
}

/// Whether a document is SOPS-encrypted: a top-level `sops` mapping with `mac` and
/// `lastmodified`, as sops requires.
pub fn is_encrypted(doc: &Node) -> bool {
    doc.get("sops").is_some_and(|s| {
        s.is_mapping() && s.get("mac").is_some() && s.get("lastmodified").is_some()
    })
}

/// The text that stands for an encrypted value no key can decrypt: visible in a build and easy to
/// search for, never mistaken for a real value or an empty string.
pub fn placeholder(key: &str) -> String {
    format!("SOPS-ENCRYPTED:{key}")
}

/// Decrypts one document and verifies its MAC. The result has plaintext values and no `sops`
/// key: keep it in memory, never write or print it.
///
/// A file of several documents shares one MAC over all of them: decrypt it with
/// [`decrypt_documents`].
pub fn decrypt_document(doc: &Node, keys: &AgeKeys) -> Result<Node, SopsError> {
    let mut docs = decrypt_documents(std::slice::from_ref(doc), keys)?;
    docs.pop().ok_or(SopsError::NotEncrypted)
}

/// Decrypts every document of one SOPS file (sops writes the same metadata into each, and one
/// MAC covers them all, in order).
pub fn decrypt_documents(docs: &[Node], keys: &AgeKeys) -> Result<Vec<Node>, SopsError> {
    let first = docs.first().ok_or(SopsError::NotEncrypted)?;
    let metadata = Metadata::from_document(first)?;
    let rule = Rule::compile(&metadata.rule)?;
    let data_key = unwrap_data_key(&metadata, keys)?;

    let mut walk = Walk::new(rule, metadata.mac_only_encrypted, Mode::Decrypt(&data_key));
    let mut out = Vec::with_capacity(docs.len());
    for doc in docs {
        let mut doc = doc.clone();
        doc.remove("sops");
        walk.document(&mut doc)?;
        out.push(doc);
    }
    let computed = walk.mac();
    let stored = cipher::decrypt_mac(&metadata.mac, &data_key, &metadata.mac_additional_data())?;
    if !constant_time_eq_hex(&computed, &stored) {
        return Err(SopsError::MacMismatch);
    }
    Ok(out)
}

/// The document with every encrypted value replaced by [`placeholder`] of its key and the `sops`
/// key removed: what a build shows when no key can decrypt the file.
pub fn placeholder_document(doc: &Node) -> Result<Node, SopsError> {
    let metadata = Metadata::from_document(doc)?;
    let rule = Rule::compile(&metadata.rule)?;
    let mut doc = doc.clone();
    doc.remove("sops");
    Walk::new(rule, metadata.mac_only_encrypted, Mode::Placeholder).document(&mut doc)?;
    Ok(doc)
}

fn unwrap_data_key(metadata: &Metadata, keys: &AgeKeys) -> Result<cipher::DataKey, SopsError> {
    if metadata.key_groups > 1 {
        return Err(SopsError::Unsupported(format!(
            "the data key is split over {} key groups (Shamir)",
            metadata.key_groups
        )));
    }
    if metadata.age.is_empty() {
        let kinds = if metadata.key_kinds.is_empty() {
            "no recipient at all".to_string()
        } else {
            metadata.key_kinds.join(", ")
        };
        return Err(SopsError::NoAgeRecipient(kinds));
    }
    for stanza in &metadata.age {
        if let Some(key) = keys.unwrap_data_key(&stanza.enc)? {
            return Ok(key);
        }
    }
    Err(SopsError::NoMatchingKey {
        keys: keys.len(),
        recipients: metadata
            .age
            .iter()
            .map(|s| s.recipient.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// Compares two hex MACs by their bytes without an early exit, as sops does with
/// `subtle.ConstantTimeCompare`.
fn constant_time_eq_hex(a: &str, b: &str) -> bool {
    let (Ok(a), Ok(b)) = (hex::decode(a), hex::decode(b)) else {
        return false;
    };
    a.len() == b.len() && a.iter().zip(&b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
