//! The `sops:` metadata block of an encrypted document, as sops's `stores.Metadata` reads it:
//! the MAC and its timestamp, the rules that decide which values are encrypted, and the
//! recipients the data key is wrapped for.

use super::SopsError;
use plumb_yaml::Node;

/// The master-key kinds sops can wrap a data key for, as they are named in the metadata.
pub const KEY_KINDS: [&str; 6] = ["age", "pgp", "kms", "gcp_kms", "azure_kv", "hc_vault"];

/// One age recipient of the data key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgeStanza {
    /// The public key (`age1...`).
    pub recipient: String,
    /// The armored age file that holds the data key.
    pub enc: String,
}

/// Which values of a document are encrypted. sops allows at most one rule; with none it uses the
/// `_unencrypted` suffix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CryptRule {
    UnencryptedSuffix(String),
    EncryptedSuffix(String),
    UnencryptedRegex(String),
    EncryptedRegex(String),
    UnencryptedCommentRegex(String),
    EncryptedCommentRegex(String),
}

/// The parsed `sops:` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    /// `lastmodified` as written (RFC 3339).
    pub lastmodified: String,
    /// The encrypted MAC (`ENC[...]`).
    pub mac: String,
    pub rule: CryptRule,
    pub mac_only_encrypted: bool,
    pub version: Option<String>,
    /// The age recipients of the (single) key group.
    pub age: Vec<AgeStanza>,
    /// Every master-key kind that has at least one recipient, in [`KEY_KINDS`] order.
    pub key_kinds: Vec<&'static str>,
    /// The number of key groups (more than one means the data key is split with Shamir).
    pub key_groups: usize,
}

fn text_at<'a>(block: &'a Node, key: &str) -> Option<&'a str> {
    block
        .get(key)
        .filter(|n| !n.is_null())
        .and_then(Node::scalar_value)
        .filter(|s| !s.is_empty())
}

impl Metadata {
    /// Reads the `sops:` block of a document.
    pub fn from_document(doc: &Node) -> Result<Metadata, SopsError> {
        let block = doc
            .get("sops")
            .filter(|b| b.is_mapping())
            .ok_or(SopsError::NotEncrypted)?;
        let missing = |field: &str| SopsError::Metadata(format!("`sops.{field}` is missing"));
        let lastmodified = text_at(block, "lastmodified")
            .ok_or_else(|| missing("lastmodified"))?
            .to_string();
        let mac = text_at(block, "mac")
            .ok_or_else(|| missing("mac"))?
            .to_string();

        let rules: Vec<CryptRule> = [
            (
                "unencrypted_suffix",
                CryptRule::UnencryptedSuffix as fn(String) -> CryptRule,
            ),
            ("encrypted_suffix", CryptRule::EncryptedSuffix),
            ("unencrypted_regex", CryptRule::UnencryptedRegex),
            ("encrypted_regex", CryptRule::EncryptedRegex),
            (
                "unencrypted_comment_regex",
                CryptRule::UnencryptedCommentRegex,
            ),
            ("encrypted_comment_regex", CryptRule::EncryptedCommentRegex),
        ]
        .into_iter()
        .filter_map(|(key, make)| text_at(block, key).map(|v| make(v.to_string())))
        .collect();
        if rules.len() > 1 {
            return Err(SopsError::Metadata(
                "more than one of encrypted_suffix, unencrypted_suffix, encrypted_regex, \
                 unencrypted_regex, encrypted_comment_regex, unencrypted_comment_regex"
                    .into(),
            ));
        }
        let rule = rules
            .into_iter()
            .next()
            .unwrap_or_else(|| CryptRule::UnencryptedSuffix("_unencrypted".into()));

        let mac_only_encrypted = match text_at(block, "mac_only_encrypted") {
            None => false,
            Some("true") => true,
            Some("false") => false,
            Some(other) => {
                return Err(SopsError::Metadata(format!(
                    "`sops.mac_only_encrypted` is {other:?}, not a boolean"
                )))
            }
        };

        // Without `key_groups`, the top-level recipient lists form the one group.
        let groups: Vec<&Node> = match block.get("key_groups").and_then(Node::as_sequence) {
            Some(groups) if !groups.is_empty() => groups.iter().collect(),
            _ => vec![block],
        };
        let mut key_kinds = Vec::new();
        for kind in KEY_KINDS {
            let present = groups.iter().any(|g| {
                g.get(kind)
                    .and_then(Node::as_sequence)
                    .is_some_and(|s| !s.is_empty())
            });
            if present {
                key_kinds.push(kind);
            }
        }
        let mut age = Vec::new();
        if groups.len() == 1 {
            for (i, entry) in groups[0]
                .get("age")
                .and_then(Node::as_sequence)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let recipient = text_at(entry, "recipient")
                    .ok_or_else(|| missing(&format!("age[{i}].recipient")))?;
                let enc = text_at(entry, "enc").ok_or_else(|| missing(&format!("age[{i}].enc")))?;
                age.push(AgeStanza {
                    recipient: recipient.to_string(),
                    enc: enc.to_string(),
                });
            }
        }

        Ok(Metadata {
            lastmodified,
            mac,
            rule,
            mac_only_encrypted,
            version: text_at(block, "version").map(str::to_string),
            age,
            key_kinds,
            key_groups: groups.len(),
        })
    }

    /// The additional data of the MAC: `lastmodified` as Go's `time.Format(time.RFC3339)`
    /// prints the parsed time (no fractional seconds, `Z` for a zero offset).
    pub fn mac_additional_data(&self) -> String {
        rfc3339_as_go_prints(&self.lastmodified)
    }
}

fn rfc3339_as_go_prints(text: &str) -> String {
    // `YYYY-MM-DDTHH:MM:SS` is 19 bytes; the rest is an optional fraction and the zone.
    let Some((head, rest)) = text.split_at_checked(19) else {
        return text.to_string();
    };
    let rest = match rest.strip_prefix('.') {
        Some(fraction) => fraction.trim_start_matches(|c: char| c.is_ascii_digit()),
        None => rest,
    };
    let zone = match rest {
        "z" | "+00:00" | "-00:00" => "Z",
        other => other,
    };
    format!("{head}{zone}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_print_as_go_prints_them() {
        assert_eq!(
            rfc3339_as_go_prints("2024-01-02T03:04:05Z"),
            "2024-01-02T03:04:05Z"
        );
        assert_eq!(
            rfc3339_as_go_prints("2024-01-02T03:04:05.123456Z"),
            "2024-01-02T03:04:05Z"
        );
        assert_eq!(
            rfc3339_as_go_prints("2024-01-02T03:04:05+00:00"),
            "2024-01-02T03:04:05Z"
        );
        assert_eq!(
            rfc3339_as_go_prints("2024-01-02T03:04:05+02:00"),
            "2024-01-02T03:04:05+02:00"
        );
    }

    #[test]
    fn rules_default_and_conflict() {
        let docs = plumb_yaml::parse_documents(
            "x.yaml",
            "a: 1\nsops:\n  lastmodified: \"2024-01-01T00:00:00Z\"\n  mac: ENC[x]\n  pgp:\n    - fp: ABC\n",
        )
        .unwrap();
        let m = Metadata::from_document(&docs[0]).unwrap();
        assert_eq!(m.rule, CryptRule::UnencryptedSuffix("_unencrypted".into()));
        assert_eq!(m.key_kinds, vec!["pgp"]);
        assert!(m.age.is_empty());

        let docs = plumb_yaml::parse_documents(
            "x.yaml",
            "sops:\n  lastmodified: x\n  mac: y\n  encrypted_regex: a\n  unencrypted_regex: b\n",
        )
        .unwrap();
        assert!(matches!(
            Metadata::from_document(&docs[0]),
            Err(SopsError::Metadata(_))
        ));
    }
}
