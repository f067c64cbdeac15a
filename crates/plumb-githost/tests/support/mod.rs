//! A small HTTP/1.1 server on 127.0.0.1 that answers GETs from a table of routes with JSON, the
//! way a Git host's API would: it records every request and refuses (401) a request whose
//! `Authorization` header is not the expected one.

use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    pub authorization: Option<String>,
}

type Routes = Arc<Mutex<HashMap<String, (u16, String)>>>;

pub struct FakeHost {
    port: u16,
    routes: Routes,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FakeHost {
    /// Starts on a free port. `authorization` is the header every request must carry.
    pub fn start(authorization: Option<&str>) -> FakeHost {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().unwrap().port();
        let routes: Routes = Arc::default();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let expected = authorization.map(str::to_string);
        let thread = {
            let (routes, seen, stop) = (routes.clone(), seen.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(stream) = stream {
                        serve(stream, &routes, &seen, expected.as_deref());
                    }
                }
            })
        };
        FakeHost {
            port,
            routes,
            seen,
            stop,
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Answers GET `target` (a path, with its query when the query matters) with `status`
    /// and `body`. A target with a query is matched before its bare path.
    pub fn route(&self, target: &str, status: u16, body: Value) {
        self.routes
            .lock()
            .unwrap()
            .insert(target.to_string(), (status, body.to_string()));
    }

    /// Forgets a route: the server answers 404 there.
    pub fn unroute(&self, target: &str) {
        self.routes.lock().unwrap().remove(target);
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for FakeHost {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(stream: TcpStream, routes: &Routes, seen: &Mutex<Vec<Seen>>, expected: Option<&str>) {
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("").to_string();
    let mut authorization = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" || line == "\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("authorization") {
                authorization = Some(value.trim().to_string());
            }
        }
    }
    seen.lock().unwrap().push(Seen {
        method: method.clone(),
        target: target.clone(),
        authorization: authorization.clone(),
    });
    let (status, body) = if method != "GET" {
        (405, r#"{"message":"Method Not Allowed"}"#.to_string())
    } else if authorization.as_deref() != expected {
        (401, r#"{"message":"Bad credentials"}"#.to_string())
    } else {
        let routes = routes.lock().unwrap();
        let path = target.split('?').next().unwrap_or("");
        routes
            .get(&target)
            .or_else(|| routes.get(path))
            .cloned()
            .unwrap_or((404, r#"{"message":"Not Found"}"#.to_string()))
    };
    let reason = match status {
        200 => "OK",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Status",
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
}
