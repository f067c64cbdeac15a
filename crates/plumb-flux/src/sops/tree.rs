//! Walking a document as sops's `Tree.Decrypt` does: every leaf in document order, the path of
//! mapping keys above it (sequence items add nothing to the path), which leaves the crypt rule
//! says are encrypted, and the SHA-512 over the plaintext leaves that the MAC protects.

use super::cipher::{decrypt_value, go_format_float, DataKey};
use super::metadata::CryptRule;
use super::SopsError;
use plumb_yaml::resolve::{resolve, Resolved, Schema};
use plumb_yaml::{Node, NodeKind};
use regex::Regex;
use sha2::{Digest, Sha512};

/// sops's `MACOnlyEncryptedInitialization`: SHA-256 of `sops`, hashed first when only encrypted
/// values are covered, so the two kinds of MAC never coincide.
const MAC_ONLY_ENCRYPTED_INIT: [u8; 32] = [
    0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0x0b,
    0x0b, 0x97, 0x5b, 0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad, 0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69,
];

/// The crypt rule, compiled.
pub(crate) enum Rule {
    UnencryptedSuffix(String),
    EncryptedSuffix(String),
    UnencryptedRegex(Regex),
    EncryptedRegex(Regex),
}

impl Rule {
    pub(crate) fn compile(rule: &CryptRule) -> Result<Rule, SopsError> {
        let regex = |r: &str| {
            Regex::new(r).map_err(|e| SopsError::Metadata(format!("invalid regex {r:?}: {e}")))
        };
        Ok(match rule {
            CryptRule::UnencryptedSuffix(s) => Rule::UnencryptedSuffix(s.clone()),
            CryptRule::EncryptedSuffix(s) => Rule::EncryptedSuffix(s.clone()),
            CryptRule::UnencryptedRegex(r) => Rule::UnencryptedRegex(regex(r)?),
            CryptRule::EncryptedRegex(r) => Rule::EncryptedRegex(regex(r)?),
            // These decide by the comments above a value, which plumb's node tree does not keep.
            CryptRule::UnencryptedCommentRegex(_) | CryptRule::EncryptedCommentRegex(_) => {
                return Err(SopsError::Unsupported(
                    "encrypted_comment_regex / unencrypted_comment_regex".into(),
                ))
            }
        })
    }

    /// sops's `shouldBeEncrypted`: any key on the path may match (Go's `regexp.Match` is
    /// unanchored, as is `Regex::is_match`).
    pub(crate) fn encrypts(&self, path: &[String]) -> bool {
        match self {
            Rule::UnencryptedSuffix(s) => !path.iter().any(|p| p.ends_with(s.as_str())),
            Rule::EncryptedSuffix(s) => path.iter().any(|p| p.ends_with(s.as_str())),
            Rule::UnencryptedRegex(r) => !path.iter().any(|p| r.is_match(p)),
            Rule::EncryptedRegex(r) => path.iter().any(|p| r.is_match(p)),
        }
    }
}

/// What a walk does at each leaf.
pub(crate) enum Mode<'k> {
    /// Decrypt encrypted leaves in place and hash the plaintext.
    Decrypt(&'k DataKey),
    /// Replace encrypted leaves with a placeholder named after their key.
    Placeholder,
}

pub(crate) struct Walk<'k> {
    rule: Rule,
    mac_only_encrypted: bool,
    mode: Mode<'k>,
    hash: Sha512,
}

impl<'k> Walk<'k> {
    pub(crate) fn new(rule: Rule, mac_only_encrypted: bool, mode: Mode<'k>) -> Walk<'k> {
        let mut hash = Sha512::new();
        if mac_only_encrypted {
            hash.update(MAC_ONLY_ENCRYPTED_INIT);
        }
        Walk {
            rule,
            mac_only_encrypted,
            mode,
            hash,
        }
    }

    /// Walks one document (its top-level `sops` key already removed).
    pub(crate) fn document(&mut self, doc: &mut Node) -> Result<(), SopsError> {
        let mut path = Vec::new();
        self.value(doc, &mut path)
    }

    /// The MAC of everything walked, as sops prints it (upper-case hex of SHA-512).
    pub(crate) fn mac(self) -> String {
        hex::encode_upper(self.hash.finalize())
    }

    fn value(&mut self, node: &mut Node, path: &mut Vec<String>) -> Result<(), SopsError> {
        match &mut node.kind {
            NodeKind::Mapping(entries) => {
                for (key, value) in entries.iter_mut() {
                    let name = key.scalar_value().unwrap_or_default().to_string();
                    path.push(name);
                    let result = self.value(value, path);
                    path.pop();
                    result?;
                }
                Ok(())
            }
            NodeKind::Sequence(items) => {
                for item in items.iter_mut() {
                    self.value(item, path)?;
                }
                Ok(())
            }
            NodeKind::Scalar(_) => self.leaf(node, path),
        }
    }

    fn leaf(&mut self, node: &mut Node, path: &[String]) -> Result<(), SopsError> {
        let Some(scalar) = node.as_scalar() else {
            return Ok(());
        };
        let resolved = resolve(scalar, Schema::Kustomize).unwrap_or(Resolved::Str(
            std::borrow::Cow::Borrowed(scalar.value.as_str()),
        ));
        // sops skips nulls entirely: neither decrypted nor hashed.
        if resolved == Resolved::Null {
            return Ok(());
        }
        let encrypted = self.rule.encrypts(path);
        let joined = join_path(path);
        if !encrypted {
            if !self.mac_only_encrypted {
                let bytes = plain_mac_bytes(&resolved, &scalar.value, &joined)?;
                self.hash.update(bytes);
            }
            return Ok(());
        }
        let Resolved::Str(text) = resolved else {
            return Err(SopsError::MalformedValue {
                path: joined.trim_end_matches(':').to_string(),
                reason: "an encrypted value must be an ENC[...] string".into(),
            });
        };
        match &self.mode {
            Mode::Decrypt(key) => {
                let secret = decrypt_value(&text, key, &joined)?;
                self.hash.update(secret.mac_bytes());
                let span = node.span.take();
                *node = secret.to_node().with_span(span);
            }
            Mode::Placeholder => {
                if !text.is_empty() {
                    let name = path.last().map(String::as_str).unwrap_or_default();
                    let span = node.span.take();
                    *node = Node::string(super::placeholder(name)).with_span(span);
                }
            }
        }
        Ok(())
    }
}

/// sops's additional data for a value: every key on the path followed by `:`.
fn join_path(path: &[String]) -> String {
    let mut joined = String::new();
    for key in path {
        joined.push_str(key);
        joined.push(':');
    }
    joined
}

/// The bytes a clear value adds to the MAC: go-yaml v3 decodes it into an `interface{}` and sops's
/// `ToBytes` prints that (integers in decimal, floats shortest, `True`/`False`, timestamps stay
/// the text they were written as).
fn plain_mac_bytes(resolved: &Resolved<'_>, raw: &str, path: &str) -> Result<Vec<u8>, SopsError> {
    Ok(match resolved {
        Resolved::Str(s) => s.as_bytes().to_vec(),
        Resolved::Int(i) => i.to_string().into_bytes(),
        Resolved::Float(f) => go_format_float(*f).into_bytes(),
        Resolved::Bool(true) => b"True".to_vec(),
        Resolved::Bool(false) => b"False".to_vec(),
        Resolved::Timestamp(_) => raw.as_bytes().to_vec(),
        Resolved::Uint(_) => {
            return Err(SopsError::Unsupported(format!(
                "an integer above 2^63 at {} (sops cannot hash it either)",
                path.trim_end_matches(':')
            )))
        }
        Resolved::Null => Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(keys: &[&str]) -> Vec<String> {
        keys.iter().map(|k| k.to_string()).collect()
    }

    #[test]
    fn rules_match_any_key_on_the_path() {
        let regex = Rule::EncryptedRegex(Regex::new("^(data|stringData)$").unwrap());
        assert!(regex.encrypts(&path(&["stringData", "password"])));
        assert!(!regex.encrypts(&path(&["metadata", "name"])));
        let suffix = Rule::UnencryptedSuffix("_unencrypted".into());
        assert!(!suffix.encrypts(&path(&["a_unencrypted", "b"])));
        assert!(suffix.encrypts(&path(&["a", "b"])));
        let enc_suffix = Rule::EncryptedSuffix("_secret".into());
        assert!(enc_suffix.encrypts(&path(&["tls", "key_secret"])));
        assert!(!enc_suffix.encrypts(&path(&["tls", "cert"])));
        let unenc = Rule::UnencryptedRegex(Regex::new("^meta").unwrap());
        assert!(!unenc.encrypts(&path(&["metadata", "name"])));
    }

    #[test]
    fn paths_join_with_a_trailing_colon() {
        assert_eq!(
            join_path(&path(&["stringData", "password"])),
            "stringData:password:"
        );
        assert_eq!(join_path(&[]), "");
    }
}
