//! A real HTTP/1.1 server for tests on a free loopback port: it serves fixed files and answers
//! 404 for anything else, counts the requests, and stops (no longer listening) on `stop` or
//! drop. Shared by plumb-source's tests and the CLI's (`#[path]`). Git's smart HTTP is
//! `git_http.rs`.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A request's path and its `Authorization` header, if it had one.
pub type Authorization = (String, Option<String>);

pub struct HttpServer {
    pub port: u16,
    requests: Arc<AtomicUsize>,
    /// Each request's path and `Authorization` header, in the order they were answered.
    authorizations: Arc<Mutex<Vec<Authorization>>>,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl HttpServer {
    /// Serves `files` (path → body, paths starting with `/`).
    pub fn start(files: &[(&str, &str)]) -> HttpServer {
        let files: Vec<(&str, &[u8])> = files.iter().map(|(p, b)| (*p, b.as_bytes())).collect();
        HttpServer::start_bytes(&files)
    }

    /// Serves `files` (path → body bytes, paths starting with `/`): binary files such as archives.
    pub fn start_bytes(files: &[(&str, &[u8])]) -> HttpServer {
        let files: Arc<HashMap<String, Vec<u8>>> = Arc::new(
            files
                .iter()
                .map(|(p, b)| (p.to_string(), b.to_vec()))
                .collect(),
        );
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(AtomicUsize::new(0));
        let authorizations = Arc::new(Mutex::new(Vec::new()));
        let stopping = Arc::new(AtomicBool::new(false));
        let thread = {
            let (requests, stopping) = (requests.clone(), stopping.clone());
            let authorizations = authorizations.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stopping.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    requests.fetch_add(1, Ordering::SeqCst);
                    let files = files.clone();
                    let authorizations = authorizations.clone();
                    // One thread per connection: a client may hold one open while it opens another.
                    std::thread::spawn(move || answer(stream, &files, &authorizations));
                }
            })
        };
        HttpServer {
            port,
            requests,
            authorizations,
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

    /// Each request's path and `Authorization` header so far.
    pub fn authorizations(&self) -> Vec<Authorization> {
        self.authorizations.lock().unwrap().clone()
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
    files: &HashMap<String, Vec<u8>>,
    authorizations: &Mutex<Vec<Authorization>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut authorization = None;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" || header == "\n" {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("authorization") {
                authorization = Some(value.trim().to_owned());
            }
        }
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("/");
    authorizations
        .lock()
        .unwrap()
        .push((path.to_owned(), authorization));
    let (status, body) = match files.get(path) {
        Some(body) => ("200 OK", body.as_slice()),
        None => ("404 Not Found", b"404 page not found\n".as_slice()),
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(body)?;
    stream.flush()
}
