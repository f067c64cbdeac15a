//! age identities, loaded the way sops loads them: `SOPS_AGE_KEY` (the keys themselves) and
//! `SOPS_AGE_KEY_FILE` (a file of keys), several keys per source, `#` comments and blank lines
//! allowed. Key text never appears in an error or a debug print.

use super::cipher::DataKey;
use super::SopsError;
use age::armor::ArmoredReader;
use age::x25519;
use std::fmt;
use std::io::Read;
use std::path::Path;
use std::str::FromStr;

/// A set of age X25519 identities that can unwrap SOPS data keys.
pub struct AgeKeys {
    identities: Vec<x25519::Identity>,
}

impl fmt::Debug for AgeKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AgeKeys({} key(s), <redacted>)", self.identities.len())
    }
}

impl AgeKeys {
    /// Parses key text: one `AGE-SECRET-KEY-1...` per line, `#` comments and blank lines
    /// skipped. `source` names where the text came from, for errors.
    pub fn parse(text: &str, source: &str) -> Result<AgeKeys, SopsError> {
        let mut identities = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let identity = x25519::Identity::from_str(line).map_err(|_| SopsError::KeyParse {
                source_name: source.to_string(),
                line: index + 1,
                reason: if line.starts_with("AGE-PLUGIN-") {
                    "age plugin identities are not supported".into()
                } else if line.starts_with("-----BEGIN") || line.starts_with("ssh-") {
                    "SSH keys are not supported; use an age X25519 key".into()
                } else {
                    "not an age X25519 secret key (AGE-SECRET-KEY-1...)".into()
                },
            })?;
            identities.push(identity);
        }
        Ok(AgeKeys { identities })
    }

    /// Reads a key file (`SOPS_AGE_KEY_FILE`'s format, as written by `age-keygen`).
    pub fn from_file(path: &Path) -> Result<AgeKeys, SopsError> {
        let text = std::fs::read_to_string(path).map_err(|e| SopsError::KeyFile {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        AgeKeys::parse(&text, &path.display().to_string())
    }

    /// The keys named by the environment: `SOPS_AGE_KEY` and the file `SOPS_AGE_KEY_FILE`, both
    /// if both are set (sops combines them). `None` when neither is set: SOPS files then stay
    /// encrypted. The default `~/.config/sops/age/keys.txt` is deliberately not read, so a build
    /// decrypts only when asked to.
    pub fn from_env() -> Result<Option<AgeKeys>, SopsError> {
        AgeKeys::from_vars(
            std::env::var("SOPS_AGE_KEY").ok().as_deref(),
            std::env::var_os("SOPS_AGE_KEY_FILE")
                .as_deref()
                .map(Path::new),
        )
    }

    /// [`AgeKeys::from_env`] with the two values given.
    pub fn from_vars(
        key: Option<&str>,
        key_file: Option<&Path>,
    ) -> Result<Option<AgeKeys>, SopsError> {
        let mut identities = Vec::new();
        let mut any = false;
        if let Some(text) = key.filter(|t| !t.trim().is_empty()) {
            identities.extend(AgeKeys::parse(text, "SOPS_AGE_KEY")?.identities);
            any = true;
        }
        if let Some(path) = key_file.filter(|p| !p.as_os_str().is_empty()) {
            identities.extend(AgeKeys::from_file(path)?.identities);
            any = true;
        }
        Ok(any.then_some(AgeKeys { identities }))
    }

    pub fn len(&self) -> usize {
        self.identities.len()
    }

    pub fn is_empty(&self) -> bool {
        self.identities.is_empty()
    }

    /// The public recipients (`age1...`) of the keys, which are safe to show.
    pub fn recipients(&self) -> Vec<String> {
        self.identities
            .iter()
            .map(|i| i.to_public().to_string())
            .collect()
    }

    /// Unwraps a data key from one armored age stanza (`sops.age[].enc`). `Ok(None)` when none
    /// of the keys is a recipient of it.
    pub(crate) fn unwrap_data_key(&self, armored: &str) -> Result<Option<DataKey>, SopsError> {
        let decryptor = age::Decryptor::new_buffered(ArmoredReader::new(armored.as_bytes()))
            .map_err(|e| SopsError::DataKey(e.to_string()))?;
        let identities = self.identities.iter().map(|i| i as &dyn age::Identity);
        let mut reader = match decryptor.decrypt(identities) {
            Ok(reader) => reader,
            Err(age::DecryptError::NoMatchingKeys) => return Ok(None),
            Err(e) => return Err(SopsError::DataKey(e.to_string())),
        };
        let mut plaintext = Vec::with_capacity(32);
        reader
            .read_to_end(&mut plaintext)
            .map_err(|e| SopsError::DataKey(e.to_string()))?;
        let key = DataKey::from_slice(&plaintext);
        plaintext.iter_mut().for_each(|b| *b = 0);
        key.map(Some).ok_or_else(|| {
            SopsError::DataKey("the age stanza does not hold a 32-byte data key".into())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_keys_comments_and_blank_lines() {
        let a = x25519::Identity::generate();
        let b = x25519::Identity::generate();
        let text = format!(
            "# created: today\n# public key: {}\n{}\n\n  # another\n{}\n",
            a.to_public(),
            age::secrecy::ExposeSecret::expose_secret(&a.to_string()),
            age::secrecy::ExposeSecret::expose_secret(&b.to_string()),
        );
        let keys = AgeKeys::parse(&text, "test").unwrap();
        assert_eq!(keys.len(), 2);
        assert_eq!(
            keys.recipients(),
            vec![a.to_public().to_string(), b.to_public().to_string()]
        );
        let shown = format!("{keys:?}");
        assert!(!shown.contains("AGE-SECRET-KEY"), "{shown}");
    }

    #[test]
    fn a_bad_line_is_reported_by_number_without_its_text() {
        let err = AgeKeys::parse("# ok\nAGE-SECRET-KEY-1NOTAKEY\n", "keys.txt").unwrap_err();
        let shown = err.to_string();
        assert!(shown.contains("keys.txt:2"), "{shown}");
        assert!(!shown.contains("NOTAKEY"), "{shown}");
    }

    #[test]
    fn environment_sources_combine_and_absence_is_none() {
        assert!(AgeKeys::from_vars(None, None).unwrap().is_none());
        assert!(AgeKeys::from_vars(Some("  "), None).unwrap().is_none());
        let a = x25519::Identity::generate();
        let b = x25519::Identity::generate();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("keys.txt");
        std::fs::write(
            &file,
            age::secrecy::ExposeSecret::expose_secret(&b.to_string()),
        )
        .unwrap();
        let inline = age::secrecy::ExposeSecret::expose_secret(&a.to_string()).to_string();
        let keys = AgeKeys::from_vars(Some(&inline), Some(&file))
            .unwrap()
            .unwrap();
        assert_eq!(keys.len(), 2);
        let missing = AgeKeys::from_vars(None, Some(&dir.path().join("absent")));
        assert!(matches!(missing, Err(SopsError::KeyFile { .. })));
    }
}
