//! A real OCI registry for tests: Debian's `docker-registry` (distribution 2.8) started with a
//! configuration of our own (127.0.0.1, a free port, storage in a temporary directory, deletes
//! enabled, optionally htpasswd authentication), and Flux artifacts pushed to it with plain
//! distribution API requests. Also a token proxy in front of it that speaks the `Bearer`
//! challenge and token flow and pages tag lists with `Link` headers, which distribution 2.8
//! does not. Shared by plumb-source's tests and the CLI's (`#[path]`).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

pub const FLUX_CONFIG: &str = "application/vnd.cncf.flux.config.v1+json";
pub const FLUX_CONTENT: &str = "application/vnd.cncf.flux.content.v1.tar+gzip";
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn sha256(bytes: &[u8]) -> String {
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// `docker-registry serve` on a free loopback port, killed on drop.
pub struct Registry {
    child: Option<Child>,
    pub port: u16,
    _dir: tempfile::TempDir,
    /// `user:password` for pushes when the registry has authentication.
    push_auth: Option<String>,
}

impl Registry {
    /// A registry that anyone may pull from and push to.
    pub fn start() -> Registry {
        Registry::launch(None)
    }

    /// A registry that asks for Basic credentials; `htpasswd` is one `user:bcrypt-hash` line,
    /// `push` the plain `user:password` the test pushes with.
    pub fn start_with_htpasswd(htpasswd: &str, push: &str) -> Registry {
        Registry::launch(Some((htpasswd.to_owned(), push.to_owned())))
    }

    fn launch(auth: Option<(String, String)>) -> Registry {
        let binary = Path::new("/usr/bin/docker-registry");
        assert!(
            binary.exists(),
            "/usr/bin/docker-registry is missing: run scripts/ensure-registry"
        );
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut config = format!(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n  secret: plumb-test\n",
            dir.path().join("data").display()
        );
        let push_auth = auth.as_ref().map(|(_, push)| push.clone());
        if let Some((htpasswd, _)) = &auth {
            let file = dir.path().join("htpasswd");
            fs::write(&file, format!("{htpasswd}\n")).unwrap();
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: plumb-test\n    path: {}\n",
                file.display()
            ));
        }
        let config_path = dir.path().join("config.yml");
        fs::write(&config_path, config).unwrap();
        let child = Command::new(binary)
            .arg("serve")
            .arg(&config_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("docker-registry starts");
        let registry = Registry {
            child: Some(child),
            port,
            _dir: dir,
            push_auth,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(response) = http(port, "GET", "/v2/", &[], b"") {
                if response.status == 200 || response.status == 401 {
                    break;
                }
            }
            assert!(Instant::now() < deadline, "docker-registry did not answer");
            std::thread::sleep(Duration::from_millis(50));
        }
        registry
    }

    /// `host:port` of the registry.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `oci://127.0.0.1:<port>/<name>`.
    pub fn url(&self, name: &str) -> String {
        format!("oci://{}/{name}", self.host())
    }

    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            assert!(Instant::now() < deadline, "docker-registry still listening");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn auth_header(&self) -> Vec<(String, String)> {
        self.push_auth
            .iter()
            .map(|pair| {
                (
                    "Authorization".to_owned(),
                    format!("Basic {}", base64(pair)),
                )
            })
            .collect()
    }

    /// Uploads a blob (monolithic upload: POST, then PUT with the digest) and returns its digest.
    pub fn push_blob(&self, name: &str, data: &[u8]) -> String {
        let digest = sha256(data);
        let auth = self.auth_header();
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let start = http(
            self.port,
            "POST",
            &format!("/v2/{name}/blobs/uploads/"),
            &headers,
            b"",
        )
        .unwrap();
        assert_eq!(start.status, 202, "starting an upload: {}", start.text());
        let location = start.header("location").expect("upload location");
        let path = location
            .strip_prefix(&format!("http://{}", self.host()))
            .unwrap_or(location);
        let sep = if path.contains('?') { '&' } else { '?' };
        let mut put_headers = headers.clone();
        put_headers.push(("Content-Type", "application/octet-stream"));
        let put = http(
            self.port,
            "PUT",
            &format!("{path}{sep}digest={digest}"),
            &put_headers,
            data,
        )
        .unwrap();
        assert_eq!(put.status, 201, "uploading a blob: {}", put.text());
        digest
    }

    /// PUTs a manifest under `reference` (a tag or its digest) and returns its digest.
    pub fn push_manifest(&self, name: &str, reference: &str, manifest: &[u8]) -> String {
        let auth = self.auth_header();
        let mut headers: Vec<(&str, &str)> =
            auth.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        headers.push(("Content-Type", OCI_MANIFEST));
        let put = http(
            self.port,
            "PUT",
            &format!("/v2/{name}/manifests/{reference}"),
            &headers,
            manifest,
        )
        .unwrap();
        assert_eq!(put.status, 201, "pushing a manifest: {}", put.text());
        sha256(manifest)
    }

    /// Pushes a Flux artifact as `flux push artifact` does: the Flux config blob, the given
    /// layers (media type, bytes), a manifest with the revision and source annotations.
    /// Returns the manifest's digest.
    pub fn push_layers(&self, name: &str, tag: &str, layers: &[(&str, Vec<u8>)]) -> String {
        let config = b"{}".to_vec();
        let config_digest = self.push_blob(name, &config);
        let layer_json: Vec<String> = layers
            .iter()
            .map(|(media_type, data)| {
                let digest = self.push_blob(name, data);
                format!(
                    r#"{{"mediaType":"{media_type}","digest":"{digest}","size":{}}}"#,
                    data.len()
                )
            })
            .collect();
        let manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"{OCI_MANIFEST}","artifactType":"{FLUX_CONFIG}","config":{{"mediaType":"{FLUX_CONFIG}","digest":"{config_digest}","size":{}}},"layers":[{}],"annotations":{{"org.opencontainers.image.created":"2024-01-01T00:00:00Z","org.opencontainers.image.revision":"main@sha1:{tag}","org.opencontainers.image.source":"https://example.invalid/{name}"}}}}"#,
            config.len(),
            layer_json.join(",")
        );
        self.push_manifest(name, tag, manifest.as_bytes())
    }

    /// Pushes `files` as a one-layer Flux artifact under `tag`; returns the manifest digest.
    pub fn push_files(&self, name: &str, tag: &str, files: &[(&str, &str)]) -> String {
        self.push_layers(name, tag, &[(FLUX_CONTENT, tar_gz(files))])
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A gzip-compressed tar of regular files, as `flux push artifact` builds it.
pub fn tar_gz(files: &[(&str, &str)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    for (path, content) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        builder
            .append_data(&mut header, path, content.as_bytes())
            .unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

/// A tar.gz with one raw entry whose name (and link target) are written into the header as
/// they are, bypassing the checks the `tar` crate's builder makes: a hostile archive.
pub fn hostile_tar_gz(
    name: &str,
    kind: tar::EntryType,
    link: Option<&str>,
    data: &[u8],
) -> Vec<u8> {
    let mut header = tar::Header::new_old();
    {
        let raw = header.as_old_mut();
        raw.name[..name.len()].copy_from_slice(name.as_bytes());
        if let Some(link) = link {
            raw.linkname[..link.len()].copy_from_slice(link.as_bytes());
        }
    }
    header.set_size(data.len() as u64);
    header.set_mode(0o644);
    header.set_entry_type(kind);
    header.set_cksum();
    let mut tar = Vec::new();
    tar.extend_from_slice(header.as_bytes());
    tar.extend_from_slice(data);
    tar.resize(tar.len().div_ceil(512) * 512, 0);
    tar.resize(tar.len() + 1024, 0);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

pub fn base64(text: &str) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// An HTTP response read to the end of the connection.
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One HTTP/1.0 request to 127.0.0.1:`port` (1.0: the server closes the connection after the
/// body and never chunks it).
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<HttpResponse> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut request = format!("{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n");
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(request.as_bytes())?;
    stream.write_all(body)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no end of headers"))?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other("no status line"))?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Ok(HttpResponse {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    })
}

/// A request the proxy received.
struct Request {
    method: String,
    target: String,
    headers: BTreeMap<String, String>,
}

fn read_request(stream: &mut TcpStream) -> Option<Request> {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).ok()? == 0 {
            return None;
        }
        // A TLS handshake (clients try HTTPS first): this front speaks plain HTTP only.
        if raw.is_empty() && byte[0] == 0x16 {
            return None;
        }
        raw.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let mut lines = text.split("\r\n");
    let mut first = lines.next()?.split_whitespace();
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Some(Request {
        method,
        target,
        headers,
    })
}

/// A registry front that asks for `Bearer` tokens, hands them out at `/token` (to anyone, or
/// only to Basic `user:password`), forwards authorised pulls to an anonymous registry, and
/// returns tag lists `page` tags at a time with `Link` headers. Stopped on drop.
pub struct TokenProxy {
    pub port: u16,
    stop: Arc<AtomicBool>,
    /// How many tokens were handed out.
    pub tokens: Arc<AtomicUsize>,
    /// How many tag list pages were served.
    pub pages: Arc<AtomicUsize>,
    /// When set, every blob is served with its last byte changed.
    pub tamper: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TokenProxy {
    pub fn start(upstream: u16, basic: Option<&str>, page: usize) -> TokenProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let tokens = Arc::new(AtomicUsize::new(0));
        let pages = Arc::new(AtomicUsize::new(0));
        let expected = basic.map(|pair| format!("Basic {}", base64(pair)));
        let tamper = Arc::new(AtomicBool::new(false));
        let (stop2, tokens2, pages2, tamper2) =
            (stop.clone(), tokens.clone(), pages.clone(), tamper.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(mut stream) = stream else { continue };
                let expected = expected.clone();
                let (tokens, pages) = (tokens2.clone(), pages2.clone());
                let tamper = tamper2.load(Ordering::SeqCst);
                std::thread::spawn(move || {
                    if let Some(request) = read_request(&mut stream) {
                        let front = Front {
                            port,
                            upstream,
                            expected: expected.as_deref(),
                            page,
                            tamper,
                        };
                        let response = front.serve(&request, &tokens, &pages);
                        let _ = stream.write_all(&response);
                    }
                });
            }
        });
        TokenProxy {
            port,
            stop,
            tokens,
            pages,
            tamper,
            thread: Some(thread),
        }
    }

    pub fn url(&self, name: &str) -> String {
        format!("oci://127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for TokenProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

const TOKEN: &str = "plumb-test-token";

fn respond(status: &str, headers: &[(&str, String)], body: &[u8], head: bool) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-length"))
    {
        out.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    if !head {
        out.extend_from_slice(body);
    }
    out
}

/// What the proxy does with one connection.
struct Front<'a> {
    port: u16,
    upstream: u16,
    expected: Option<&'a str>,
    page: usize,
    tamper: bool,
}

impl Front<'_> {
    fn serve(&self, request: &Request, tokens: &AtomicUsize, pages: &AtomicUsize) -> Vec<u8> {
        let Front {
            port,
            upstream,
            expected,
            page,
            tamper,
        } = *self;
        let auth = request.headers.get("authorization").map(String::as_str);
        if request.target.starts_with("/token") {
            if expected.is_some() && auth != expected {
                return respond(
                    "401 Unauthorized",
                    &[("Content-Type", "application/json".into())],
                    br#"{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]}"#,
                    false,
                );
            }
            tokens.fetch_add(1, Ordering::SeqCst);
            return respond(
                "200 OK",
                &[("Content-Type", "application/json".into())],
                format!(r#"{{"token":"{TOKEN}"}}"#).as_bytes(),
                false,
            );
        }
        if auth != Some(&format!("Bearer {TOKEN}")) {
            let challenge = format!(
                r#"Bearer realm="http://127.0.0.1:{port}/token",service="plumb-test",scope="repository:app:pull""#
            );
            return respond(
                "401 Unauthorized",
                &[
                    ("Content-Type", "application/json".into()),
                    ("WWW-Authenticate", challenge),
                ],
                br#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#,
                false,
            );
        }
        let head = request.method == "HEAD";
        let (path, query) = request
            .target
            .split_once('?')
            .unwrap_or((request.target.as_str(), ""));
        if path.ends_with("/tags/list") {
            let Ok(full) = http(upstream, "GET", path, &[], b"") else {
                return respond("502 Bad Gateway", &[], b"", false);
            };
            let json: serde_json::Value = serde_json::from_slice(&full.body).unwrap_or_default();
            let mut all: Vec<String> = json["tags"]
                .as_array()
                .map(|t| {
                    t.iter()
                        .filter_map(|t| t.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            all.sort();
            let last = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("last="))
                .unwrap_or("");
            let rest: Vec<&String> = all
                .iter()
                .filter(|t| last.is_empty() || t.as_str() > last)
                .collect();
            let this: Vec<&String> = rest.iter().take(page).copied().collect();
            pages.fetch_add(1, Ordering::SeqCst);
            let mut headers = vec![("Content-Type", "application/json".to_owned())];
            if rest.len() > page {
                headers.push((
                    "Link",
                    format!(
                        r#"<{path}?last={}&n={page}>; rel="next""#,
                        this.last().unwrap()
                    ),
                ));
            }
            let body = serde_json::json!({"name": json["name"], "tags": this}).to_string();
            return respond("200 OK", &headers, body.as_bytes(), false);
        }
        let accept = request.headers.get("accept").cloned().unwrap_or_default();
        let Ok(mut answer) = http(
            upstream,
            &request.method,
            &request.target,
            &[("Accept", &accept)],
            b"",
        ) else {
            return respond("502 Bad Gateway", &[], b"", false);
        };
        if tamper && path.contains("/blobs/") {
            if let Some(last) = answer.body.last_mut() {
                *last ^= 0xff;
            }
        }
        let mut headers = Vec::new();
        for name in ["Content-Type", "Docker-Content-Digest", "Content-Length"] {
            if let Some(v) = answer.header(name) {
                headers.push((name, v.to_owned()));
            }
        }
        let status = match answer.status {
            200 => "200 OK",
            404 => "404 Not Found",
            307 => "307 Temporary Redirect",
            _ => "500 Internal Server Error",
        };
        respond(status, &headers, &answer.body, head)
    }
}

/// A `DOCKER_CONFIG` directory whose config.json holds `user:password` for `host`.
pub fn docker_config(dir: &Path, host: &str, user: &str, password: &str) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let auth = base64(&format!("{user}:{password}"));
    fs::write(
        dir.join("config.json"),
        format!(r#"{{"auths":{{"{host}":{{"auth":"{auth}"}}}}}}"#),
    )
    .unwrap();
    dir.to_owned()
}
