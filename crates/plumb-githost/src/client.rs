//! Read-only GETs against the host's API: the token goes in the `Authorization` header only,
//! statuses become [`HostError`]s that name the URL and the permission a call needs.

use crate::error::HostError;
use crate::host::{Flavor, Host};
use serde_json::Value;
use std::time::Duration;

/// A blocking HTTP client bound to one host.
pub(crate) struct Client<'a> {
    host: &'a Host,
    http: reqwest::blocking::Client,
}

fn install_tls_provider() {
    // Another crate of the process may have installed one already; either is ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl<'a> Client<'a> {
    pub(crate) fn new(host: &'a Host) -> Result<Client<'a>, HostError> {
        install_tls_provider();
        let http = reqwest::blocking::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .user_agent(concat!("plumb/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| HostError::Protocol {
                url: host.api.clone(),
                message: format!("cannot build an HTTP client: {e}"),
            })?;
        Ok(Client { host, http })
    }

    /// The URL of `path` under the repository (`""` for the repository itself).
    pub(crate) fn repo_url(&self, path: &str) -> String {
        format!("{}{path}", self.host.repo_url())
    }

    /// GETs `url` and parses the body as JSON. `Ok(None)` for 404 (the caller knows what absence
    /// means there); 401/403 are [`HostError::Forbidden`] naming `permission`.
    pub(crate) fn get(&self, url: &str, permission: &str) -> Result<Option<Value>, HostError> {
        let mut request = self.http.get(url);
        request = match self.host.flavor {
            Flavor::GitHub => request
                .header("Accept", "application/vnd.github+json")
                .header("X-GitHub-Api-Version", "2022-11-28"),
            Flavor::Gitea => request.header("Accept", "application/json"),
        };
        if let Some(token) = &self.host.token {
            let scheme = match self.host.flavor {
                Flavor::GitHub => "Bearer",
                Flavor::Gitea => "token",
            };
            request = request.header("Authorization", format!("{scheme} {token}"));
        }
        let response = request.send().map_err(|e| HostError::Unreachable {
            url: url.to_string(),
            message: transport_message(&e, self.host.token.as_deref()),
        })?;
        let status = response.status().as_u16();
        match status {
            404 => return Ok(None),
            401 | 403 => {
                let mut permission = permission.to_string();
                if self.host.token.is_none() {
                    permission.push_str(match self.host.flavor {
                        Flavor::GitHub => " (no token was given: set GITHUB_TOKEN)",
                        Flavor::Gitea => " (no token was given: set GITEA_TOKEN or FORGEJO_TOKEN)",
                    });
                }
                return Err(HostError::Forbidden {
                    url: url.to_string(),
                    status,
                    permission,
                });
            }
            _ => {}
        }
        let body = response.text().map_err(|e| HostError::Unreachable {
            url: url.to_string(),
            message: transport_message(&e, self.host.token.as_deref()),
        })?;
        if !(200..300).contains(&status) {
            return Err(HostError::Protocol {
                url: url.to_string(),
                message: format!("HTTP {status}: {}", self.excerpt(&body)),
            });
        }
        serde_json::from_str(&body)
            .map(Some)
            .map_err(|e| HostError::Protocol {
                url: url.to_string(),
                message: format!("the answer is not JSON ({e}): {}", self.excerpt(&body)),
            })
    }
}

impl Client<'_> {
    /// The start of a body for an error message, with the token scrubbed should the server
    /// echo it.
    fn excerpt(&self, body: &str) -> String {
        scrub(&excerpt(body), self.host.token.as_deref())
    }
}

fn scrub(text: &str, token: Option<&str>) -> String {
    match token {
        Some(t) if !t.is_empty() => text.replace(t, "<redacted>"),
        _ => text.to_string(),
    }
}

/// reqwest's error chain, one cause after another, with the token scrubbed in case a proxy or
/// a future version ever echoes a header.
fn transport_message(error: &reqwest::Error, token: Option<&str>) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    scrub(&text, token)
}

fn excerpt(body: &str) -> String {
    let body = body.trim();
    match body.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &body[..i]),
        None => body.to_string(),
    }
}
