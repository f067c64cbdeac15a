//! Client-side encryption with age, and the header inside every version that binds it to its
//! stack and serial.
//!
//! The header is inside the ciphertext, so a version copied to another serial or stack, or an old
//! one replayed, decrypts fine but names the wrong place, and is refused.

use crate::error::StateError;
use age::secrecy::SecretString;
use age::{x25519, Identity, Recipient};
use serde::{Deserialize, Serialize};
use std::io::Read;

const MAGIC: &[u8] = b"plumb.state/v1\n";

/// The keys one invocation holds: identities decrypt (and encrypt to themselves), recipients
/// only encrypt, a passphrase does both.
#[derive(Default)]
pub struct Keys {
    identities: Vec<x25519::Identity>,
    recipients: Vec<x25519::Recipient>,
    passphrase: Option<SecretString>,
}

impl Keys {
    pub fn new() -> Self {
        Self::default()
    }

    /// A fresh X25519 identity, returned with its `AGE-SECRET-KEY-1...` text.
    pub fn generate() -> (Self, String) {
        use age::secrecy::ExposeSecret;
        let identity = x25519::Identity::generate();
        let text = identity.to_string().expose_secret().to_string();
        (
            Self {
                identities: vec![identity],
                ..Self::default()
            },
            text,
        )
    }

    /// Adds the identities of an age identity file's text (comments and blank lines skipped).
    pub fn add_identities(&mut self, text: &str) -> Result<usize, StateError> {
        let mut added = 0;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let identity = line
                .parse::<x25519::Identity>()
                .map_err(|e| StateError::InvalidKey(format!("identity on line {}: {e}", n + 1)))?;
            self.identities.push(identity);
            added += 1;
        }
        if added == 0 {
            return Err(StateError::InvalidKey(
                "no AGE-SECRET-KEY-1... identity found".to_string(),
            ));
        }
        Ok(added)
    }

    /// Adds a recipient (`age1...`).
    pub fn add_recipient(&mut self, text: &str) -> Result<(), StateError> {
        let recipient = text
            .trim()
            .parse::<x25519::Recipient>()
            .map_err(|e| StateError::InvalidKey(format!("recipient {text:?}: {e}")))?;
        self.recipients.push(recipient);
        Ok(())
    }

    pub fn set_passphrase(&mut self, passphrase: String) {
        self.passphrase = Some(SecretString::from(passphrase));
    }

    /// True when these keys can decrypt (an identity or a passphrase), not only encrypt.
    pub fn can_decrypt(&self) -> bool {
        !self.identities.is_empty() || self.passphrase.is_some()
    }

    pub fn is_empty(&self) -> bool {
        self.identities.is_empty() && self.recipients.is_empty() && self.passphrase.is_none()
    }

    pub(crate) fn encrypt(&self, plaintext: &[u8]) -> Result<Vec<u8>, StateError> {
        let encryptor = if let Some(passphrase) = &self.passphrase {
            if !self.recipients.is_empty() {
                return Err(StateError::InvalidKey(
                    "a passphrase cannot be combined with recipients (age allows one or the other)"
                        .to_string(),
                ));
            }
            age::Encryptor::with_user_passphrase(passphrase.clone())
        } else {
            let own: Vec<x25519::Recipient> =
                self.identities.iter().map(|i| i.to_public()).collect();
            let all: Vec<&dyn Recipient> = self
                .recipients
                .iter()
                .chain(own.iter())
                .map(|r| r as &dyn Recipient)
                .collect();
            if all.is_empty() {
                return Err(StateError::NoKey);
            }
            age::Encryptor::with_recipients(all.into_iter())
                .map_err(|e| StateError::InvalidKey(e.to_string()))?
        };
        let mut out = Vec::with_capacity(plaintext.len() + 256);
        let mut writer = encryptor
            .wrap_output(&mut out)
            .map_err(|e| StateError::InvalidKey(format!("encryption: {e}")))?;
        std::io::Write::write_all(&mut writer, plaintext)
            .and_then(|()| writer.finish().map(|_| ()))
            .map_err(|e| StateError::InvalidKey(format!("encryption: {e}")))?;
        Ok(out)
    }

    pub(crate) fn decrypt(&self, what: &str, ciphertext: &[u8]) -> Result<Vec<u8>, StateError> {
        let scrypt = self
            .passphrase
            .as_ref()
            .map(|p| age::scrypt::Identity::new(p.clone()));
        let identities: Vec<&dyn Identity> = self
            .identities
            .iter()
            .map(|i| i as &dyn Identity)
            .chain(scrypt.iter().map(|i| i as &dyn Identity))
            .collect();
        if identities.is_empty() {
            return Err(StateError::NoKey);
        }
        let tampered = |reason: String| StateError::Tampered {
            what: what.to_string(),
            reason,
        };
        let decryptor =
            age::Decryptor::new_buffered(ciphertext).map_err(|e| tampered(e.to_string()))?;
        let passphrase_file = decryptor.is_scrypt();
        let mut reader = decryptor
            .decrypt(identities.into_iter())
            .map_err(|e| match e {
                age::DecryptError::NoMatchingKeys => StateError::WrongKey {
                    what: what.to_string(),
                },
                // A wrong passphrase fails to unwrap the file key; it cannot be told apart from
                // a modified scrypt stanza, and the likelier cause is named.
                age::DecryptError::DecryptionFailed | age::DecryptError::KeyDecryptionFailed
                    if passphrase_file =>
                {
                    StateError::WrongKey {
                        what: what.to_string(),
                    }
                }
                other => tampered(other.to_string()),
            })?;
        let mut plaintext = Vec::new();
        reader
            .read_to_end(&mut plaintext)
            .map_err(|e| tampered(e.to_string()))?;
        Ok(plaintext)
    }
}

/// What a version says about itself, inside its ciphertext.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionHeader {
    pub stack: String,
    pub serial: u64,
    /// The SHA-256 of the previous version's stored bytes, chaining the history.
    pub previous_sha256: Option<String>,
    pub who: String,
    pub created: String,
    pub size: u64,
}

/// Encrypts `data` behind its header.
pub(crate) fn seal(
    keys: &Keys,
    header: &VersionHeader,
    data: &[u8],
) -> Result<Vec<u8>, StateError> {
    let header_json = serde_json::to_vec(header).map_err(|e| StateError::Corrupt {
        what: "version header".to_string(),
        reason: e.to_string(),
    })?;
    let mut plaintext = Vec::with_capacity(MAGIC.len() + header_json.len() + 1 + data.len());
    plaintext.extend_from_slice(MAGIC);
    plaintext.extend_from_slice(&header_json);
    plaintext.push(b'\n');
    plaintext.extend_from_slice(data);
    keys.encrypt(&plaintext)
}

/// Decrypts a version and checks that it is the one stored for `stack` at `serial`.
pub(crate) fn open(
    keys: &Keys,
    what: &str,
    ciphertext: &[u8],
    stack: &str,
    serial: u64,
) -> Result<(VersionHeader, Vec<u8>), StateError> {
    let plaintext = keys.decrypt(what, ciphertext)?;
    let corrupt = |reason: &str| StateError::Corrupt {
        what: what.to_string(),
        reason: reason.to_string(),
    };
    let rest = plaintext
        .strip_prefix(MAGIC)
        .ok_or_else(|| corrupt("not a plumb state version"))?;
    let newline = rest
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| corrupt("no header"))?;
    let header: VersionHeader =
        serde_json::from_slice(&rest[..newline]).map_err(|e| corrupt(&e.to_string()))?;
    if header.stack != stack || header.serial != serial {
        return Err(StateError::Misbound {
            what: what.to_string(),
            stack: stack.to_string(),
            serial,
            found_stack: header.stack,
            found_serial: header.serial,
        });
    }
    let data = rest[newline + 1..].to_vec();
    if data.len() as u64 != header.size {
        return Err(corrupt("size differs from its header"));
    }
    Ok((header, data))
}
