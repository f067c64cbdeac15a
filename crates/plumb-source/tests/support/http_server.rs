//! A real HTTP/1.1 server for tests on a free loopback port: it serves fixed files, and,
//! when given a directory of repositories, git's smart HTTP protocol through `git
//! http-backend` (run as a CGI program for each request); anything else is a 404. It counts
//! the requests and stops (no longer listening) on `stop` or drop. Shared by plumb-source's
//! tests and the CLI's (`#[path]`).

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

pub struct HttpServer {
    pub port: u16,
    requests: Arc<AtomicUsize>,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl HttpServer {
    /// Serves `files` (path → body, paths starting with `/`).
    pub fn start(files: &[(&str, &str)]) -> HttpServer {
        HttpServer::serve(files, None)
    }

    /// Serves `files`, and the git repositories under `git_base` by smart HTTP
    /// (`http://127.0.0.1:PORT/<name>`).
    pub fn with_git(files: &[(&str, &str)], git_base: &Path) -> HttpServer {
        HttpServer::serve(files, Some(git_base.to_path_buf()))
    }

    fn serve(files: &[(&str, &str)], git_base: Option<PathBuf>) -> HttpServer {
        let files: Arc<HashMap<String, String>> = Arc::new(
            files
                .iter()
                .map(|(p, b)| (p.to_string(), b.to_string()))
                .collect(),
        );
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(AtomicUsize::new(0));
        let stopping = Arc::new(AtomicBool::new(false));
        let thread = {
            let (requests, stopping) = (requests.clone(), stopping.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stopping.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    requests.fetch_add(1, Ordering::SeqCst);
                    let (files, git_base) = (files.clone(), git_base.clone());
                    // One thread per connection: a client may hold one open while it opens another.
                    std::thread::spawn(move || answer(stream, &files, git_base.as_deref()));
                }
            })
        };
        HttpServer {
            port,
            requests,
            stopping,
            thread: Some(thread),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// How many connections were answered so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// Stops listening: afterwards a connection to the port is refused.
    pub fn stop(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.stopping.store(true, Ordering::SeqCst);
            // Wake the accept loop, which then sees the flag and drops the listener.
            let _ = TcpStream::connect(("127.0.0.1", self.port));
            let _ = thread.join();
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn answer(
    stream: TcpStream,
    files: &HashMap<String, String>,
    git: Option<&Path>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" || header == "\n" {
            break;
        }
        if let Some((name, value)) = header.trim_end().split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let mut words = request_line.split_whitespace();
    let method = words.next().unwrap_or("GET").to_owned();
    let target = words.next().unwrap_or("/").to_owned();
    let mut stream = stream;
    if let Some(body) = files.get(&target) {
        return respond(&mut stream, "200 OK", &[], body.as_bytes());
    }
    let Some(base) = git else {
        return respond(&mut stream, "404 Not Found", &[], b"404 page not found\n");
    };
    let body = if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        read_chunked(&mut reader)?
    } else {
        let len: usize = header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        reader.read_exact(&mut body)?;
        body
    };
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let exec_path = Command::new("git").arg("--exec-path").output()?;
    let exec_path = String::from_utf8_lossy(&exec_path.stdout).trim().to_owned();
    let mut cgi = Command::new(Path::new(&exec_path).join("git-http-backend"));
    cgi.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", base)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_PROJECT_ROOT", base)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", &method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("CONTENT_LENGTH", body.len().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(t) = header("content-type") {
        cgi.env("CONTENT_TYPE", t);
    }
    if let Some(p) = header("git-protocol") {
        cgi.env("GIT_PROTOCOL", p);
    }
    if let Some(e) = header("content-encoding") {
        cgi.env("HTTP_CONTENT_ENCODING", e);
    }
    let mut child = cgi.spawn()?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let writer = std::thread::spawn(move || stdin.write_all(&body));
    let output = child.wait_with_output()?;
    let _ = writer.join();
    // CGI output: headers (`Status:` among them), a blank line, the body.
    let out = output.stdout;
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, i + 4))
        .or_else(|| {
            out.windows(2)
                .position(|w| w == b"\n\n")
                .map(|i| (i, i + 2))
        })
        .unwrap_or((out.len(), out.len()));
    let head = String::from_utf8_lossy(&out[..split.0]).into_owned();
    let mut status = "200 OK".to_owned();
    let mut pass = Vec::new();
    for line in head.lines() {
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("status") {
                status = value.trim().to_owned();
            } else {
                pass.push((name.trim().to_owned(), value.trim().to_owned()));
            }
        }
    }
    respond(&mut stream, &status, &pass, &out[split.1..])
}

fn read_chunked(reader: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size)?;
        let size =
            usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
        if size == 0 {
            let mut trailer = String::new();
            while reader.read_line(&mut trailer)? > 0 && trailer.trim() != "" {
                trailer.clear();
            }
            return Ok(body);
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        let mut crlf = String::new();
        reader.read_line(&mut crlf)?;
    }
}

fn respond(
    stream: &mut TcpStream,
    status: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\n");
    if !headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
    {
        head.push_str("Content-Type: text/plain\r\n");
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}
