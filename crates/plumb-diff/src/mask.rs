//! Secret values never reach a diff.
//!
//! A Secret's `data` and `stringData` values become `hmac:` and eight hex digits: equal values
//! show the same text, so a reviewer sees which keys changed and nothing else. The HMAC key is
//! the SHA-256 of every secret value of both revisions, so the same two revisions always print
//! the same text, and nobody who does not already know every one of those values can compute
//! it to test a guess. A SOPS-encrypted object (one with a top-level `sops` block, not
//! decrypted) shows its keys only: every `ENC[...]` value becomes `<encrypted>` (each
//! encryption differs, so the ciphertext says nothing about whether the value changed), and of
//! its `sops` block only `lastmodified`, which says it was encrypted again.

use crate::snapshot::Snapshot;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Masks the secrets of the objects of two snapshots.
#[derive(Debug, Clone)]
pub struct Masker {
    key: [u8; 32],
}

impl Masker {
    /// A masker whose key is made from every secret value of `base` and `head`.
    pub fn new(base: &Snapshot, head: &Snapshot) -> Masker {
        let mut values: Vec<&str> = Vec::new();
        for snapshot in [base, head] {
            let objects = snapshot
                .clusters
                .iter()
                .flat_map(|c| &c.producers)
                .flat_map(|p| &p.objects);
            for o in objects.filter(|o| is_secret(o)) {
                for field in ["data", "stringData"] {
                    if let Some(Value::Object(map)) = o.get(field) {
                        values.extend(map.values().filter_map(Value::as_str));
                    }
                }
            }
        }
        values.sort_unstable();
        let mut hasher = Sha256::new();
        hasher.update(b"plumb diff secret mask\0");
        for v in values {
            hasher.update((v.len() as u64).to_be_bytes());
            hasher.update(v.as_bytes());
        }
        Masker {
            key: hasher.finalize().into(),
        }
    }

    /// `value` with its secrets masked; anything else is returned as it is.
    pub fn mask(&self, value: &Value) -> Value {
        if value.get("sops").is_some_and(Value::is_object) {
            return sops_view(value);
        }
        if !is_secret(value) {
            return value.clone();
        }
        let mut out = value.clone();
        for field in ["data", "stringData"] {
            if let Some(Value::Object(map)) = out.get_mut(field) {
                for v in map.values_mut() {
                    let text = match &*v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    *v = Value::String(self.token(&text));
                }
            }
        }
        out
    }

    /// `hmac:` and the first eight hex digits of HMAC-SHA256(key, text).
    fn token(&self, text: &str) -> String {
        let mac = hmac_sha256(&self.key, text.as_bytes());
        let hex: String = mac[..4].iter().map(|b| format!("{b:02x}")).collect();
        format!("hmac:{hex}")
    }
}

/// A core `v1` Secret.
pub fn is_secret(value: &Value) -> bool {
    value.get("kind").and_then(Value::as_str) == Some("Secret")
        && value.get("apiVersion").and_then(Value::as_str) == Some("v1")
}

/// The object with every `ENC[...]` string replaced and the `sops` block reduced to
/// `lastmodified`.
fn sops_view(value: &Value) -> Value {
    fn walk(v: &Value) -> Value {
        match v {
            Value::String(s) if s.starts_with("ENC[") => Value::String("<encrypted>".into()),
            Value::Object(map) => {
                Value::Object(map.iter().map(|(k, v)| (k.clone(), walk(v))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(walk).collect()),
            other => other.clone(),
        }
    }
    let Value::Object(map) = value else {
        return value.clone();
    };
    let mut out = Map::new();
    for (k, v) in map {
        if k == "sops" {
            let mut sops = Map::new();
            if let Some(modified) = v.get("lastmodified") {
                sops.insert("lastmodified".into(), modified.clone());
            }
            out.insert(k.clone(), Value::Object(sops));
        } else {
            out.insert(k.clone(), walk(v));
        }
    }
    Value::Object(out)
}

/// HMAC (RFC 2104) with SHA-256.
fn hmac_sha256(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    let mut inner_pad = [0x36u8; 64];
    let mut outer_pad = [0x5cu8; 64];
    for (i, b) in key.iter().enumerate() {
        inner_pad[i] ^= b;
        outer_pad[i] ^= b;
    }
    let inner = Sha256::new()
        .chain_update(inner_pad)
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(outer_pad)
        .chain_update(inner)
        .finalize()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// RFC 4231 test case 2 has a 4-byte key; padded with zeros to 32 bytes it is the same
    /// HMAC key (HMAC zero-pads keys to the block size).
    #[test]
    fn hmac_matches_rfc_4231() {
        let mut key = [0u8; 32];
        key[..4].copy_from_slice(b"Jefe");
        let mac = hmac_sha256(&key, b"what do ya want for nothing?");
        let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn secret_values_become_tokens_equal_for_equal_values() {
        let masker = Masker { key: [7; 32] };
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "data": {"a": "cGFzcw==", "b": "cGFzcw==", "c": "b3RoZXI="}, "stringData": {"d": "plain"}});
        let masked = masker.mask(&secret);
        let text = masked.to_string();
        assert!(
            !text.contains("cGFzcw==") && !text.contains("plain"),
            "{text}"
        );
        assert_eq!(masked["data"]["a"], masked["data"]["b"]);
        assert_ne!(masked["data"]["a"], masked["data"]["c"]);
        assert!(masked["stringData"]["d"]
            .as_str()
            .unwrap()
            .starts_with("hmac:"));
    }

    #[test]
    fn sops_objects_show_key_names_only() {
        let masker = Masker { key: [0; 32] };
        let sops = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "stringData": {"token": "ENC[AES256_GCM,data:abc,iv:def,tag:x,type:str]"},
            "sops": {"mac": "ENC[AES256_GCM,data:zzz]", "lastmodified": "2026-01-01T00:00:00Z", "age": [{"recipient": "age1x"}]}});
        let masked = masker.mask(&sops);
        assert_eq!(masked["stringData"]["token"], "<encrypted>");
        assert_eq!(
            masked["sops"],
            json!({"lastmodified": "2026-01-01T00:00:00Z"})
        );
    }

    #[test]
    fn other_objects_are_untouched() {
        let masker = Masker { key: [0; 32] };
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}});
        assert_eq!(masker.mask(&cm), cm);
    }
}
