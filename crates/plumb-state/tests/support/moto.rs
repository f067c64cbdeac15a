//! Starts the moto S3 server on a free loopback port for one test, and stops it when dropped.
//!
//! Shared by plumb-state's and plumb's integration tests (included with `#[path]`); std only.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Moto {
    child: Child,
    pub port: u16,
}

/// The moto_server executable named by `PLUMB_MOTO_SERVER`; fails the test when it is unset,
/// so that an S3 test can never pass by not running.
pub fn moto_server_path() -> String {
    match std::env::var("PLUMB_MOTO_SERVER") {
        Ok(path) if !path.is_empty() => path,
        _ => panic!(
            "PLUMB_MOTO_SERVER is not set: the S3 tests need the moto server; run scripts/test \
             (it runs scripts/ensure-moto and sets PLUMB_MOTO_SERVER=target/test-venv/bin/moto_server)"
        ),
    }
}

/// Credentials moto accepts; they never leave the loopback interface.
pub const AWS_ENV: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", "plumb-test"),
    ("AWS_SECRET_ACCESS_KEY", "plumb-test-secret"),
    ("AWS_REGION", "us-east-1"),
];

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a loopback port");
    listener.local_addr().expect("local address").port()
}

/// Sends one HTTP/1.1 request to 127.0.0.1:`port` and returns the status code.
pub fn http_status(port: u16, method: &str, path: &str) -> std::io::Result<u16> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let text = String::from_utf8_lossy(&response);
    text.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad response: {text:.80}")))
}

/// moto's server with one change: requests are handled one at a time. moto checks a conditional
/// write's precondition and then writes, without a lock, so under load two concurrent
/// `If-Match` updates could both succeed; real S3 serialises them, and the probe's race test
/// (16 writers) must measure plumb, not moto's threads. Connections stay concurrent (HTTP/1.1
/// keep-alive), only the application is serialised.
const SERIALISED_MOTO: &str = r#"
import sys, threading
from werkzeug.serving import run_simple
from moto.server import DomainDispatcherApplication, create_backend_app
from moto.moto_server.werkzeug_app import MotoRequestHandler
app = DomainDispatcherApplication(create_backend_app)
lock = threading.Lock()
def serialised(environ, start_response):
    with lock:
        return list(app(environ, start_response))
run_simple("127.0.0.1", int(sys.argv[1]), serialised, threaded=True, request_handler=MotoRequestHandler)
"#;

impl Moto {
    /// Starts moto (its Python beside `moto_server`, requests serialised) and waits (at most
    /// 60 s) until it answers.
    pub fn start() -> Moto {
        let server = std::path::PathBuf::from(moto_server_path());
        let program = server.with_file_name("python");
        let program = program.display().to_string();
        for _ in 0..5 {
            let port = free_port();
            let child = Command::new(&program)
                .args(["-c", SERIALISED_MOTO, &port.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
            let mut moto = Moto { child, port };
            let deadline = Instant::now() + Duration::from_secs(60);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = moto.child.try_wait() {
                    break; // lost the port to someone else: try another
                }
                if http_status(port, "GET", "/").is_ok() {
                    return moto;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        panic!("moto did not start on a loopback port");
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn create_bucket(&self, bucket: &str) {
        let status = http_status(self.port, "PUT", &format!("/{bucket}"))
            .unwrap_or_else(|e| panic!("create bucket {bucket}: {e}"));
        assert_eq!(status, 200, "create bucket {bucket}");
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
