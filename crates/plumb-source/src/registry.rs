//! A small client of the OCI distribution API, enough to pull a Flux artifact: ping and
//! authenticate, list tags, resolve a tag to a manifest digest, get a manifest and a blob, each
//! checked against its digest.
//!
//! It behaves as go-containerregistry's `remote` package, which source-controller uses: a
//! registry on loopback, `localhost` or a private (RFC 1918) address is tried over HTTPS and
//! then plain HTTP, `insecure: true` allows plain HTTP anywhere; a `Bearer` challenge is
//! answered with a token from the realm (anonymously or with Basic credentials), a `Basic` one
//! with the credentials themselves.

use std::io::{Read, Write};
use std::net::IpAddr;
use std::time::Duration;

use reqwest::blocking::{Client as Http, Response};
use reqwest::header::{HeaderMap, ACCEPT, AUTHORIZATION, LINK, WWW_AUTHENTICATE};
use reqwest::{StatusCode, Url};
use sha2::{Digest, Sha256};

use crate::docker_config::RegistryLogin;

/// The manifest media types asked for: OCI and Docker, manifests and indexes.
const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, \
     application/vnd.docker.distribution.manifest.v2+json, \
     application/vnd.oci.image.index.v1+json, \
     application/vnd.docker.distribution.manifest.list.v2+json";

/// go-containerregistry refuses manifests larger than this.
const MAX_MANIFEST: u64 = 4 * 1024 * 1024;

/// Why a registry operation failed; the caller adds the URL and the ref.
#[derive(Debug)]
pub(crate) enum RegistryError {
    Unreachable(String),
    NotFound(String),
    Unauthorized(String),
    DigestMismatch {
        expected: String,
        actual: String,
    },
    /// Writing a downloaded blob to the cache failed.
    Io(std::io::Error),
    Protocol(String),
}

/// `oci://host[:port]/name` split into the registry and the repository name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Repository {
    /// `host[:port]` as written (Docker Hub's aliases made `index.docker.io`).
    pub(crate) registry: String,
    pub(crate) name: String,
}

impl Repository {
    /// Parses an OCIRepository `spec.url` as source-controller does (`oci://` prefix required,
    /// no tag or digest in it).
    pub(crate) fn parse(url: &str) -> Result<Repository, String> {
        let rest = url
            .strip_prefix("oci://")
            .ok_or("URL must be in format 'oci://<domain>/<org>/<repo>'")?;
        let (first, tail) = rest.split_once('/').unwrap_or((rest, ""));
        // As go-containerregistry: a first component that is no host name is a Docker Hub path.
        let is_host = first.contains(['.', ':']) || first == "localhost";
        let (registry, name) = if is_host {
            (first.to_ascii_lowercase(), tail.to_owned())
        } else {
            ("index.docker.io".to_owned(), rest.to_owned())
        };
        let registry = match registry.as_str() {
            "docker.io" | "registry-1.docker.io" => "index.docker.io".to_owned(),
            _ => registry,
        };
        if name.is_empty() {
            return Err("URL must name a repository: 'oci://<domain>/<org>/<repo>'".into());
        }
        if let Some((_, tag)) = name.split_once(':') {
            return Err(format!("URL must not contain a tag; remove ':{tag}'"));
        }
        if name.contains('@') {
            return Err("URL must not contain a digest; use spec.ref.digest".into());
        }
        let valid = name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-./".contains(&b));
        if !valid || name.starts_with('/') || name.ends_with('/') || name.contains("//") {
            return Err(format!(
                "repository {name:?} can only contain the characters `abcdefghijklmnopqrstuvwxyz0123456789_-./`"
            ));
        }
        let name = if registry == "index.docker.io" && !name.contains('/') {
            format!("library/{name}")
        } else {
            name
        };
        Ok(Repository { registry, name })
    }

    /// The host the API is served from (Docker Hub's differs from its name).
    fn api_host(&self) -> &str {
        if self.registry == "index.docker.io" {
            "registry-1.docker.io"
        } else {
            &self.registry
        }
    }

    /// Whether go-containerregistry would fall back to plain HTTP for this registry without
    /// `insecure`: `localhost`, loopback and private addresses.
    fn local(&self) -> bool {
        let host = self
            .registry
            .rsplit_once(':')
            .map_or(self.registry.as_str(), |(h, p)| {
                if p.bytes().all(|b| b.is_ascii_digit()) {
                    h
                } else {
                    self.registry.as_str()
                }
            });
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host == "localhost" {
            return true;
        }
        match host.parse::<IpAddr>() {
            Ok(IpAddr::V4(ip)) => ip.is_loopback() || ip.is_private(),
            Ok(IpAddr::V6(ip)) => ip.is_loopback(),
            Err(_) => false,
        }
    }
}

/// A connection to one repository, authenticated for pulling.
pub(crate) struct Client {
    http: Http,
    repo: Repository,
    /// `scheme://host[:port]`, the one that answered the ping.
    base: Url,
    authorization: Option<String>,
}

impl Client {
    /// Pings the registry (`GET /v2/`) and answers its challenge.
    pub(crate) fn connect(
        repo: &Repository,
        insecure: bool,
        credentials: Option<&RegistryLogin>,
    ) -> Result<Client, RegistryError> {
        let http = crate::tls::configure(Http::builder())
            .connect_timeout(Duration::from_secs(15))
            // source-controller's default spec.timeout.
            .timeout(Duration::from_secs(60))
            .user_agent(concat!("plumb/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| RegistryError::Unreachable(error_chain(&e)))?;
        let schemes: &[&str] = if insecure || repo.local() {
            &["https", "http"]
        } else {
            &["https"]
        };
        let mut failures = Vec::new();
        for scheme in schemes {
            let base = Url::parse(&format!("{scheme}://{}/", repo.api_host()))
                .map_err(|e| RegistryError::Unreachable(format!("invalid registry: {e}")))?;
            let ping = base
                .join("v2/")
                .map_err(|e| RegistryError::Unreachable(e.to_string()))?;
            match http.get(ping.clone()).send() {
                Ok(response) => {
                    let mut client = Client {
                        http,
                        repo: repo.clone(),
                        base,
                        authorization: None,
                    };
                    client.answer_ping(response, credentials)?;
                    return Ok(client);
                }
                Err(e) => failures.push(format!("{ping}: {}", error_chain(&e))),
            }
        }
        Err(RegistryError::Unreachable(failures.join("; ")))
    }

    fn answer_ping(
        &mut self,
        response: Response,
        credentials: Option<&RegistryLogin>,
    ) -> Result<(), RegistryError> {
        match response.status() {
            StatusCode::OK => Ok(()),
            StatusCode::UNAUTHORIZED => {
                let challenge = response
                    .headers()
                    .get(WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                let (scheme, params) = parse_challenge(&challenge);
                match scheme.to_ascii_lowercase().as_str() {
                    "bearer" => {
                        let token = self.token(&params, credentials)?;
                        self.authorization = Some(format!("Bearer {token}"));
                        Ok(())
                    }
                    "basic" => {
                        let credentials = credentials.ok_or_else(|| {
                            RegistryError::Unauthorized(
                                "the registry asks for Basic credentials".into(),
                            )
                        })?;
                        self.authorization = Some(credentials.basic());
                        Ok(())
                    }
                    _ => Err(RegistryError::Protocol(format!(
                        "unsupported authentication challenge {challenge:?}"
                    ))),
                }
            }
            status => Err(RegistryError::Protocol(format!(
                "GET /v2/ answered {status}, not a registry"
            ))),
        }
    }

    /// A pull token from the challenge's realm.
    fn token(
        &self,
        params: &[(String, String)],
        credentials: Option<&RegistryLogin>,
    ) -> Result<String, RegistryError> {
        let param = |name: &str| {
            params
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        };
        let realm = param("realm")
            .ok_or_else(|| RegistryError::Protocol("Bearer challenge without a realm".into()))?;
        let mut url = Url::parse(realm)
            .map_err(|e| RegistryError::Protocol(format!("token realm {realm:?}: {e}")))?;
        {
            let mut query = url.query_pairs_mut();
            if let Some(service) = param("service") {
                query.append_pair("service", service);
            }
            query.append_pair("scope", &format!("repository:{}:pull", self.repo.name));
        }
        let mut request = self.http.get(url.clone());
        if let Some(credentials) = credentials {
            request = request.header(AUTHORIZATION, credentials.basic());
        }
        let response = request.send().map_err(|e| {
            RegistryError::Unreachable(format!(
                "token service {}: {}",
                strip_query(&url),
                error_chain(&e)
            ))
        })?;
        let status = response.status();
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            let why = error_message(response);
            return Err(RegistryError::Unauthorized(format!(
                "the token service {} refused {}: {status}{why}",
                strip_query(&url),
                if credentials.is_some() {
                    "the credentials"
                } else {
                    "anonymous access"
                }
            )));
        }
        if !status.is_success() {
            return Err(RegistryError::Protocol(format!(
                "token service {} answered {status}",
                strip_query(&url)
            )));
        }
        let body: serde_json::Value = response
            .json_value()
            .map_err(|e| RegistryError::Protocol(format!("token response: {e}")))?;
        body.get("token")
            .or_else(|| body.get("access_token"))
            .and_then(|t| t.as_str())
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| RegistryError::Protocol("token response without a token".into()))
    }

    fn url(&self, tail: &str) -> Result<Url, RegistryError> {
        self.base
            .join(&format!("v2/{}/{tail}", self.repo.name))
            .map_err(|e| RegistryError::Protocol(e.to_string()))
    }

    fn send(
        &self,
        request: reqwest::blocking::RequestBuilder,
        what: &str,
    ) -> Result<Response, RegistryError> {
        let request = match &self.authorization {
            Some(value) => request.header(AUTHORIZATION, value),
            None => request,
        };
        let response = request
            .send()
            .map_err(|e| RegistryError::Unreachable(error_chain(&e)))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let why = error_message(response);
        Err(match status {
            StatusCode::NOT_FOUND => RegistryError::NotFound(format!("{what}: {status}{why}")),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                RegistryError::Unauthorized(format!("{what}: {status}{why}"))
            }
            _ => RegistryError::Protocol(format!("{what}: {status}{why}")),
        })
    }

    /// Every tag of the repository, following `Link: <...>; rel="next"` pages.
    pub(crate) fn tags(&self) -> Result<Vec<String>, RegistryError> {
        let mut tags = Vec::new();
        let mut next = Some(self.url("tags/list")?);
        let mut pages = 0;
        while let Some(url) = next.take() {
            pages += 1;
            if pages > 10_000 {
                return Err(RegistryError::Protocol(
                    "tag list pagination does not end".into(),
                ));
            }
            let response = self.send(self.http.get(url.clone()), "listing tags")?;
            next = next_page(&url, response.headers())?;
            let body: serde_json::Value = response
                .json_value()
                .map_err(|e| RegistryError::Protocol(format!("tag list: {e}")))?;
            if let Some(page) = body.get("tags").and_then(|t| t.as_array()) {
                tags.extend(page.iter().filter_map(|t| t.as_str()).map(str::to_owned));
            }
        }
        Ok(tags)
    }

    /// The digest of the manifest `tag` names: `HEAD` first, as go-containerregistry, then a
    /// `GET` whose bytes are hashed when the registry gives no digest header.
    pub(crate) fn resolve_tag(&self, tag: &str) -> Result<String, RegistryError> {
        let url = self.url(&format!("manifests/{tag}"))?;
        let head = self.send(
            self.http.head(url.clone()).header(ACCEPT, MANIFEST_ACCEPT),
            "resolving the tag",
        );
        match head {
            Ok(response) => {
                let digest = response
                    .headers()
                    .get("Docker-Content-Digest")
                    .and_then(|v| v.to_str().ok())
                    .filter(|d| valid_digest(d));
                if let Some(digest) = digest {
                    return Ok(digest.to_owned());
                }
            }
            Err(RegistryError::NotFound(why)) => return Err(RegistryError::NotFound(why)),
            Err(_) => {}
        }
        let response = self.send(
            self.http.get(url).header(ACCEPT, MANIFEST_ACCEPT),
            "getting the manifest",
        )?;
        let bytes = read_limited(response, MAX_MANIFEST)?;
        Ok(sha256_digest(&bytes))
    }

    /// The manifest with `digest`, checked against it.
    pub(crate) fn manifest(&self, digest: &str) -> Result<Vec<u8>, RegistryError> {
        let response = self.send(
            self.http
                .get(self.url(&format!("manifests/{digest}"))?)
                .header(ACCEPT, MANIFEST_ACCEPT),
            "getting the manifest",
        )?;
        let bytes = read_limited(response, MAX_MANIFEST)?;
        let actual = sha256_digest(&bytes);
        if actual != digest {
            return Err(RegistryError::DigestMismatch {
                expected: digest.to_owned(),
                actual,
            });
        }
        Ok(bytes)
    }

    /// Writes the blob `digest` to `out`, checking its digest and, when known, its size.
    pub(crate) fn blob(
        &self,
        digest: &str,
        size: Option<u64>,
        out: &mut impl Write,
    ) -> Result<(), RegistryError> {
        let mut response = self.send(
            self.http.get(self.url(&format!("blobs/{digest}"))?),
            "getting the layer",
        )?;
        let mut hasher = Sha256::new();
        let mut total = 0u64;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = response
                .read(&mut buf)
                .map_err(|e| RegistryError::Unreachable(format!("reading the layer: {e}")))?;
            if n == 0 {
                break;
            }
            total += n as u64;
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n]).map_err(RegistryError::Io)?;
        }
        let actual = hex_digest(hasher);
        if actual != digest {
            return Err(RegistryError::DigestMismatch {
                expected: digest.to_owned(),
                actual,
            });
        }
        if let Some(size) = size.filter(|s| *s != total) {
            return Err(RegistryError::Protocol(format!(
                "layer {digest} is {total} bytes, its descriptor says {size}"
            )));
        }
        Ok(())
    }
}

/// `sha256:<64 lowercase hex>`.
pub(crate) fn valid_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

pub(crate) fn sha256_digest(bytes: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(bytes);
    hex_digest(hasher)
}

fn hex_digest(hasher: Sha256) -> String {
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

fn read_limited(response: Response, limit: u64) -> Result<Vec<u8>, RegistryError> {
    let mut bytes = Vec::new();
    response
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| RegistryError::Unreachable(format!("reading the manifest: {e}")))?;
    if bytes.len() as u64 > limit {
        return Err(RegistryError::Protocol(format!(
            "manifest larger than {limit} bytes"
        )));
    }
    Ok(bytes)
}

/// The next page of a tag list: a `Link` header with `rel="next"`, relative to the page.
fn next_page(current: &Url, headers: &HeaderMap) -> Result<Option<Url>, RegistryError> {
    for value in headers.get_all(LINK) {
        let Ok(value) = value.to_str() else { continue };
        for link in value.split(',') {
            let mut parts = link.split(';');
            let target = parts.next().unwrap_or("").trim();
            let is_next = parts.any(|p| {
                let p = p.trim().to_ascii_lowercase();
                p == "rel=\"next\"" || p == "rel=next"
            });
            let Some(target) = target.strip_prefix('<').and_then(|t| t.strip_suffix('>')) else {
                continue;
            };
            if is_next {
                let next = current
                    .join(target)
                    .map_err(|e| RegistryError::Protocol(format!("Link {target:?}: {e}")))?;
                // The token is only for this registry.
                if next.origin() != current.origin() {
                    return Err(RegistryError::Protocol(format!(
                        "tag list continues on another host: {next}"
                    )));
                }
                return Ok(Some(next));
            }
        }
    }
    Ok(None)
}

/// `Bearer realm="...",service="...",scope="..."` as its scheme and parameters.
fn parse_challenge(header: &str) -> (String, Vec<(String, String)>) {
    let header = header.trim();
    let (scheme, rest) = header.split_once(' ').unwrap_or((header, ""));
    let mut params = Vec::new();
    let mut rest = rest.trim();
    while !rest.is_empty() {
        let Some((key, after)) = rest.split_once('=') else {
            break;
        };
        let key = key.trim().trim_start_matches(',').trim().to_owned();
        let after = after.trim_start();
        let (value, remaining) = if let Some(quoted) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => value.push(c),
                }
            }
            (value, &quoted[end..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim().to_owned(), &after[end..])
        };
        params.push((key, value));
        rest = remaining.trim_start().trim_start_matches(',').trim_start();
    }
    (scheme.to_owned(), params)
}

/// The registry's error message from a distribution error body, as ` (CODE: message)`.
fn error_message(response: Response) -> String {
    let mut body = Vec::new();
    let _ = response.take(64 * 1024).read_to_end(&mut body);
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return String::new();
    };
    let messages: Vec<String> = json
        .get("errors")
        .and_then(|e| e.as_array())
        .map(|errors| {
            errors
                .iter()
                .map(|e| {
                    let field = |k: &str| e.get(k).and_then(|v| v.as_str()).unwrap_or("");
                    format!("{}: {}", field("code"), field("message"))
                })
                .collect()
        })
        .unwrap_or_default();
    if messages.is_empty() {
        String::new()
    } else {
        format!(" ({})", messages.join("; "))
    }
}

fn strip_query(url: &Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    url.to_string()
}

/// reqwest's error with its causes, on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

/// JSON bodies without reqwest's `json` feature.
trait JsonBody {
    fn json_value(self) -> Result<serde_json::Value, String>;
}

impl JsonBody for Response {
    fn json_value(self) -> Result<serde_json::Value, String> {
        let mut body = Vec::new();
        self.take(MAX_MANIFEST)
            .read_to_end(&mut body)
            .map_err(|e| e.to_string())?;
        serde_json::from_slice(&body).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_as_source_controller_reads_them() {
        let r = Repository::parse("oci://ghcr.io/org/app").unwrap();
        assert_eq!(
            (r.registry.as_str(), r.name.as_str()),
            ("ghcr.io", "org/app")
        );
        let r = Repository::parse("oci://127.0.0.1:5000/app").unwrap();
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert!(r.local());
        let r = Repository::parse("oci://docker.io/nginx").unwrap();
        assert_eq!(
            (r.registry.as_str(), r.name.as_str()),
            ("index.docker.io", "library/nginx")
        );
        assert_eq!(r.api_host(), "registry-1.docker.io");
        assert!(!Repository::parse("oci://ghcr.io/a").unwrap().local());
        assert!(Repository::parse("oci://192.168.1.2/a").unwrap().local());
        assert!(Repository::parse("https://ghcr.io/a").is_err());
        assert!(Repository::parse("oci://ghcr.io/a:v1")
            .unwrap_err()
            .contains(":v1"));
        assert!(Repository::parse("oci://ghcr.io/").is_err());
        assert!(Repository::parse("oci://ghcr.io/Upper").is_err());
    }

    #[test]
    fn challenges_and_links() {
        let (scheme, params) = parse_challenge(
            r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull""#,
        );
        assert_eq!(scheme, "Bearer");
        assert_eq!(
            params,
            vec![
                ("realm".to_owned(), "https://auth.example/token".to_owned()),
                ("service".to_owned(), "registry.example".to_owned()),
                ("scope".to_owned(), "repository:a/b:pull".to_owned()),
            ]
        );
        assert_eq!(
            parse_challenge(r#"Basic realm="Registry Realm""#).0,
            "Basic"
        );

        let current = Url::parse("http://r:5000/v2/a/tags/list").unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(
            LINK,
            r#"</v2/a/tags/list?last=b&n=2>; rel="next""#.parse().unwrap(),
        );
        assert_eq!(
            next_page(&current, &headers).unwrap().unwrap().as_str(),
            "http://r:5000/v2/a/tags/list?last=b&n=2"
        );
        assert_eq!(next_page(&current, &HeaderMap::new()).unwrap(), None);
    }

    #[test]
    fn digests() {
        assert!(valid_digest(&sha256_digest(b"x")));
        assert!(!valid_digest("sha256:abc"));
        assert!(!valid_digest("sha512:00"));
    }
}
