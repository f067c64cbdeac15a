//! Registry credentials in the Docker configuration format: the `.dockerconfigjson` of an
//! OCIRepository's `spec.secretRef` when the build has it, else the file `docker login` and
//! `flux push` leave: `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`.
//!
//! Only static credentials are read (`auths.<host>.auth`, or its `username`/`password`); the
//! secret never leaves this module except in the `Authorization` header, and only a hash of
//! the user name identifies the credentials elsewhere (in the cache key).

use std::fmt;
use std::path::PathBuf;

use base64::Engine;
use sha2::{Digest, Sha256};

/// A user name and password for one registry.
#[derive(Clone)]
pub(crate) struct RegistryLogin {
    username: String,
    password: String,
    /// Where they were read from (a file, the source's secretRef), to name in errors.
    pub(crate) origin: String,
}

impl fmt::Debug for RegistryLogin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistryLogin")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl RegistryLogin {
    /// Credentials given directly (a Secret's `username` and `password`).
    pub(crate) fn new(username: &str, password: &str, origin: &str) -> RegistryLogin {
        RegistryLogin {
            username: username.to_owned(),
            password: password.to_owned(),
            origin: origin.to_owned(),
        }
    }

    /// The value of a Basic `Authorization` header.
    pub(crate) fn basic(&self) -> String {
        let pair = format!("{}:{}", self.username, self.password);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
    }

    /// Names these credentials without revealing them: sha256 of the user name.
    pub(crate) fn identity(&self) -> String {
        let digest = Sha256::digest(self.username.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("user-sha256:{hex}")
    }
}

/// The Docker configuration file plumb reads, if the environment names one.
fn config_path() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("DOCKER_CONFIG") {
        return Some(PathBuf::from(dir).join("config.json"));
    }
    var("HOME").map(|home| PathBuf::from(home).join(".docker").join("config.json"))
}

/// The credentials the Docker configuration holds for `registry` (`host[:port]`); `None` when
/// there is no file or no entry. A file that is not valid JSON is an error naming the file.
pub(crate) fn for_registry(registry: &str) -> Result<Option<RegistryLogin>, String> {
    let Some(path) = config_path() else {
        return Ok(None);
    };
    let text = match std::fs::read(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    from_json(&text, registry, &path.display().to_string())
}

/// The credentials a Docker configuration document (`config.json`, a `.dockerconfigjson`)
/// holds for `registry`; `origin` names the document in errors.
pub(crate) fn from_json(
    text: &[u8],
    registry: &str,
    origin: &str,
) -> Result<Option<RegistryLogin>, String> {
    let config: serde_json::Value =
        serde_json::from_slice(text).map_err(|e| format!("{origin} is not valid JSON: {e}"))?;
    lookup(&config, registry, origin.to_owned())
}

fn lookup(
    config: &serde_json::Value,
    registry: &str,
    origin: String,
) -> Result<Option<RegistryLogin>, String> {
    let Some(auths) = config.get("auths").and_then(|a| a.as_object()) else {
        return Ok(None);
    };
    let wanted = canonical_host(registry);
    let Some(entry) = auths
        .iter()
        .find(|(key, _)| canonical_host(key) == wanted)
        .map(|(_, entry)| entry)
    else {
        return Ok(None);
    };
    let field = |name: &str| entry.get(name).and_then(|v| v.as_str()).unwrap_or("");
    if !field("auth").is_empty() {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(field("auth").trim())
            .ok()
            .and_then(|d| String::from_utf8(d).ok())
            .ok_or_else(|| {
                format!("the auth entry for {registry} in {origin} is not base64 of user:password")
            })?;
        let Some((username, password)) = decoded.split_once(':') else {
            return Err(format!(
                "the auth entry for {registry} in {origin} is not of the form user:password"
            ));
        };
        return Ok(Some(RegistryLogin {
            username: username.to_owned(),
            password: password.to_owned(),
            origin,
        }));
    }
    if !field("username").is_empty() {
        return Ok(Some(RegistryLogin {
            username: field("username").to_owned(),
            password: field("password").to_owned(),
            origin,
        }));
    }
    Ok(None)
}

/// A registry key as Docker writes it (`https://index.docker.io/v1/`, `ghcr.io`,
/// `http://host:5000`) reduced to the host and port; Docker Hub's names are one.
fn canonical_host(key: &str) -> String {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = key.split('/').next().unwrap_or("").to_ascii_lowercase();
    match host.as_str() {
        "docker.io" | "registry-1.docker.io" => "index.docker.io".to_owned(),
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(config: serde_json::Value, registry: &str) -> Option<(String, String)> {
        lookup(&config, registry, "/c.json".to_owned())
            .unwrap()
            .map(|c| (c.username, c.password))
    }

    #[test]
    fn auth_and_username_fields_and_host_forms() {
        let auth = base64::engine::general_purpose::STANDARD.encode("me:s3:cret");
        let config = serde_json::json!({"auths": {
            "https://index.docker.io/v1/": {"auth": auth},
            "http://127.0.0.1:5000": {"username": "u", "password": "p"},
            "ghcr.io": {},
        }});
        assert_eq!(
            find(config.clone(), "index.docker.io"),
            Some(("me".into(), "s3:cret".into()))
        );
        assert_eq!(
            find(config.clone(), "127.0.0.1:5000"),
            Some(("u".into(), "p".into()))
        );
        assert_eq!(find(config.clone(), "ghcr.io"), None);
        assert_eq!(find(config, "quay.io"), None);
    }

    #[test]
    fn debug_and_errors_never_show_the_secret() {
        let config = serde_json::json!({"auths": {"r": {"auth": "!!notbase64 hunter2"}}});
        let err = lookup(&config, "r", "/c.json".to_owned()).unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
        let creds = RegistryLogin {
            username: "u".into(),
            password: "hunter2".into(),
            origin: "/c.json".to_owned(),
        };
        assert!(!format!("{creds:?}").contains("hunter2"));
        // sha256("u")
        assert_eq!(
            creds.identity(),
            "user-sha256:0bfe935e70c321c7ca3afc75ce0d0ca2f98b5422e008bb31c00c6d7f1f1c0ad6"
        );
    }
}
