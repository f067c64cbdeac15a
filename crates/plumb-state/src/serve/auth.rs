//! HTTP basic authentication: the `username` / `password` of the `http` backend block, checked
//! against the pairs the server was started with.

use base64::Engine;
use sha2::{Digest, Sha256};
use std::path::Path;

/// The username/password pairs the server accepts. Only digests are kept, and a check compares
/// digests in constant time, so neither a password nor how much of it matched leaks.
#[derive(Clone)]
pub struct Credentials {
    accepted: Vec<[u8; 32]>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials({} pairs)", self.accepted.len())
    }
}

fn digest(username: &str, password: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(username.as_bytes());
    hasher.update(b":");
    hasher.update(password.as_bytes());
    hasher.finalize().into()
}

impl Credentials {
    /// One pair. Neither part may be empty, and the username may not contain `:` (basic
    /// authentication could not tell where it ends).
    pub fn new(username: &str, password: &str) -> Result<Self, String> {
        let mut credentials = Credentials {
            accepted: Vec::new(),
        };
        credentials.add(username, password)?;
        Ok(credentials)
    }

    fn add(&mut self, username: &str, password: &str) -> Result<(), String> {
        if username.is_empty() || password.is_empty() {
            return Err("the username and the password must both be non-empty".to_string());
        }
        if username.contains(':') {
            return Err("a username cannot contain ':'".to_string());
        }
        self.accepted.push(digest(username, password));
        Ok(())
    }

    /// `PLUMB_STATE_USERNAME` and `PLUMB_STATE_PASSWORD`: `None` when neither is set, an error
    /// when only one is.
    pub fn from_env() -> Option<Result<Self, String>> {
        let get = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        match (get("PLUMB_STATE_USERNAME"), get("PLUMB_STATE_PASSWORD")) {
            (None, None) => None,
            (Some(user), Some(password)) => Some(
                Self::new(&user, &password)
                    .map_err(|e| format!("PLUMB_STATE_USERNAME / PLUMB_STATE_PASSWORD: {e}")),
            ),
            _ => Some(Err(
                "set both PLUMB_STATE_USERNAME and PLUMB_STATE_PASSWORD, or neither".to_string(),
            )),
        }
    }

    /// A file of `username:password` lines (the password may contain `:`); blank lines and
    /// lines starting with `#` are skipped. Errors name the file and line, never its text.
    pub fn from_file(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read credentials file {}: {e}", path.display()))?;
        let mut credentials = Credentials {
            accepted: Vec::new(),
        };
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let at = || format!("credentials file {} line {}", path.display(), n + 1);
            let (user, password) = line
                .split_once(':')
                .ok_or_else(|| format!("{}: expected username:password", at()))?;
            credentials
                .add(user, password)
                .map_err(|e| format!("{}: {e}", at()))?;
        }
        if credentials.accepted.is_empty() {
            return Err(format!(
                "credentials file {}: no username:password line",
                path.display()
            ));
        }
        Ok(credentials)
    }

    /// Whether an `Authorization` header's value is `Basic` with an accepted pair.
    pub fn accepts(&self, authorization: Option<&[u8]>) -> bool {
        let Some(given) = authorization.and_then(basic_pair) else {
            return false;
        };
        let given = digest(&given.0, &given.1);
        // Every pair is compared, each over all 32 bytes: the time does not depend on which.
        self.accepted.iter().fold(false, |found, accepted| {
            let difference = accepted
                .iter()
                .zip(given.iter())
                .fold(0u8, |d, (a, b)| d | (a ^ b));
            found | (difference == 0)
        })
    }
}

/// The username and password of a `Basic` authorization value.
fn basic_pair(value: &[u8]) -> Option<(String, String)> {
    let text = std::str::from_utf8(value).ok()?.trim();
    let (scheme, encoded) = text.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(user: &str, password: &str) -> Vec<u8> {
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        format!("Basic {encoded}").into_bytes()
    }

    #[test]
    fn only_an_accepted_pair_passes() {
        let credentials = Credentials::new("tofu", "s3cret:with-colon").unwrap();
        assert!(credentials.accepts(Some(&basic("tofu", "s3cret:with-colon"))));
        assert!(!credentials.accepts(Some(&basic("tofu", "s3cret"))));
        assert!(!credentials.accepts(Some(&basic("other", "s3cret:with-colon"))));
        assert!(!credentials.accepts(Some(b"Bearer abc")));
        assert!(!credentials.accepts(Some(b"Basic !!!")));
        assert!(!credentials.accepts(None));
    }

    #[test]
    fn a_file_of_pairs_and_its_errors_name_the_line_not_the_secret() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials");
        std::fs::write(&path, "# ci runners\nci:one\n\nlaptop:two:three\n").unwrap();
        let credentials = Credentials::from_file(&path).unwrap();
        assert!(credentials.accepts(Some(&basic("ci", "one"))));
        assert!(credentials.accepts(Some(&basic("laptop", "two:three"))));
        assert!(!credentials.accepts(Some(&basic("ci", "two:three"))));

        std::fs::write(&path, "ci:one\nhunter2\n").unwrap();
        let error = Credentials::from_file(&path).unwrap_err();
        assert!(
            error.ends_with("line 2: expected username:password"),
            "{error}"
        );
        assert!(!error.contains("hunter2"), "{error}");
    }
}
