//! `plumb state serve` end to end: the built binary serving a directory store and an S3 store
//! (moto) as the `http` backend of a real Terraform 1.0.3, on loopback.
//!
//! Needs `PLUMB_TERRAFORM` (scripts/ensure-terraform) and, for the S3 tests, `PLUMB_MOTO_SERVER`
//! (scripts/ensure-moto); run through scripts/test, which installs both and sets them.

#[path = "../../plumb-state/tests/support/moto.rs"]
mod moto;
#[path = "../../plumb-state/tests/support/proxy.rs"]
mod proxy;
#[path = "support/state_env.rs"]
mod state_env;

use base64::Engine;
use moto::Moto;
use state_env::Env;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const USER: &str = "tofu";
const PASSWORD: &str = "correct-horse-battery-staple";

/// The Terraform executable named by `PLUMB_TERRAFORM`; fails the test when it is unset, so
/// that a backend test can never pass by not running.
fn terraform_path() -> PathBuf {
    match std::env::var_os("PLUMB_TERRAFORM").filter(|p| !p.is_empty()) {
        Some(path) => PathBuf::from(path),
        None => panic!(
            "PLUMB_TERRAFORM is not set: these tests need Terraform; run scripts/ensure-terraform \
             and set PLUMB_TERRAFORM to target/test-venv/bin/terraform (scripts/test does both)"
        ),
    }
}

impl Env {
    /// `plumb state serve` with the test's credentials in the environment, on a free port.
    fn serve(&self, extra: &[&str]) -> Server {
        let mut cmd = self.command(&["serve", "--listen", "127.0.0.1:0"]);
        cmd.args(extra)
            .env("PLUMB_STATE_USERNAME", USER)
            .env("PLUMB_STATE_PASSWORD", PASSWORD);
        Server::start(cmd).unwrap_or_else(|log| panic!("serve did not start:\n{log}"))
    }

    /// A Terraform root in `name/`: only locals and an output, so no provider is needed.
    fn terraform_root(&self, name: &str, backend: &str, greeting: &str) -> PathBuf {
        let root = self.dir.path().join(name);
        std::fs::create_dir_all(&root).expect("terraform root");
        std::fs::write(
            root.join("main.tf"),
            format!(
                "terraform {{\n  backend \"http\" {{\n{backend}  }}\n}}\n\n\
                 locals {{\n  greeting = \"{greeting}\"\n}}\n\n\
                 output \"greeting\" {{\n  value = local.greeting\n}}\n"
            ),
        )
        .expect("main.tf");
        root
    }

    /// Terraform in `root`, isolated: its own HOME and CLI config, no checkpoint call, no
    /// proxy, no backend settings from the environment.
    fn terraform(&self, root: &Path, args: &[&str]) -> Command {
        let home = self.dir.path().join("home");
        std::fs::create_dir_all(&home).expect("home");
        let config = home.join("terraformrc");
        std::fs::write(&config, "").expect("terraformrc");
        let mut cmd = Command::new(terraform_path());
        cmd.args(args)
            .current_dir(root)
            .env("HOME", &home)
            .env("TF_CLI_CONFIG_FILE", &config)
            .env("TF_DATA_DIR", root.join(".terraform"))
            .env("TF_IN_AUTOMATION", "1")
            .env("CHECKPOINT_DISABLE", "1")
            .env_remove("TF_LOG")
            .stdin(Stdio::null());
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy().into_owned();
            if key.starts_with("TF_HTTP_")
                || key.eq_ignore_ascii_case("http_proxy")
                || key.eq_ignore_ascii_case("https_proxy")
                || key == "SSL_CERT_FILE"
                || key == "SSL_CERT_DIR"
            {
                cmd.env_remove(key);
            }
        }
        cmd
    }

    fn tf(&self, root: &Path, args: &[&str]) -> Output {
        self.terraform(root, args).output().expect("run terraform")
    }
}

/// The `backend "http"` settings for a stack on `base`, with the test's credentials.
fn backend(base: &str, stack: &str, password: &str) -> String {
    format!(
        "    address        = \"{base}/{stack}\"\n    lock_address   = \"{base}/{stack}\"\n    \
         unlock_address = \"{base}/{stack}\"\n    lock_method    = \"LOCK\"\n    \
         unlock_method  = \"UNLOCK\"\n    username       = \"{USER}\"\n    \
         password       = \"{password}\"\n"
    )
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn ok(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what} failed ({:?}):\n{}\n{}",
        o.status,
        stdout(o),
        stderr(o)
    );
}

/// A running `plumb state serve`, its log collected line by line; stopped with SIGTERM.
struct Server {
    child: Option<Child>,
    log: Arc<Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
    port: u16,
    scheme: String,
}

impl Server {
    /// Starts the command and waits for its "listening on" line; `Err(log)` when it exits first.
    fn start(mut cmd: Command) -> Result<Server, String> {
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn plumb state serve");
        let log = Arc::new(Mutex::new(Vec::new()));
        let lines = child.stderr.take().expect("stderr");
        let sink = log.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(lines).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        let mut server = Server {
            child: Some(child),
            log,
            reader: Some(reader),
            port: 0,
            scheme: String::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(180);
        while Instant::now() < deadline {
            let listening = server
                .lines()
                .iter()
                .find_map(|l| l.split("listening on ").nth(1).map(str::to_string));
            if let Some(rest) = listening {
                let url = rest.split_whitespace().next().unwrap_or_default();
                let (scheme, address) = url.split_once("://").expect("a URL in the log");
                server.scheme = scheme.to_string();
                server.port = address
                    .rsplit(':')
                    .next()
                    .and_then(|p| p.parse().ok())
                    .expect("a port in the log");
                return Ok(server);
            }
            if let Some(status) = server
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                server.child = None;
                if let Some(reader) = server.reader.take() {
                    let _ = reader.join();
                }
                return Err(format!(
                    "exited with {status}:\n{}",
                    server.lines().join("\n")
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "serve did not listen within 180 s:\n{}",
            server.lines().join("\n")
        );
    }

    fn lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    fn base(&self) -> String {
        format!("{}://127.0.0.1:{}", self.scheme, self.port)
    }

    /// Sends SIGTERM and waits: the server must stop on its own, cleanly, saying so.
    fn stop(&mut self) -> Vec<String> {
        self.stop_with("TERM")
    }

    /// Sends SIG`signal` (TERM or INT, as Ctrl-C does) and waits for a clean stop.
    fn stop_with(&mut self, signal: &str) -> Vec<String> {
        let Some(mut child) = self.child.take() else {
            return self.lines();
        };
        let status = Command::new("sh")
            .args(["-c", &format!("kill -{signal} {}", child.id())])
            .status()
            .expect("sh kill");
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(60);
        let exit = loop {
            if let Some(exit) = child.try_wait().expect("wait") {
                break exit;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("serve did not stop within 60 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        let lines = self.lines();
        assert!(
            exit.success(),
            "serve exited with {exit} on SIGTERM:\n{}",
            lines.join("\n")
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains(&format!("SIG{signal}: stopping"))),
            "{}",
            lines.join("\n")
        );
        assert!(
            lines.last().is_some_and(|l| l.ends_with(" stopped")),
            "{}",
            lines.join("\n")
        );
        lines
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One HTTP/1.1 request on a fresh connection: status, headers (lower-case names), body.
struct Reply {
    status: u16,
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

impl Reply {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

fn request(port: u16, method: &str, path: &str, auth: Option<(&str, &str)>, body: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to serve");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {}\r\n\
         Content-Type: application/json\r\nConnection: close\r\n",
        body.len()
    );
    if let Some((user, password)) = auth {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        head.push_str(&format!("Authorization: Basic {token}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("send");
    stream.write_all(body).expect("send body");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read reply");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("end of headers");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Reply {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    }
}

fn authed(port: u16, method: &str, path: &str, body: &[u8]) -> Reply {
    request(port, method, path, Some((USER, PASSWORD)), body)
}

fn lock_body(id: &str, who: &str) -> Vec<u8> {
    format!(
        "{{\"ID\":\"{id}\",\"Operation\":\"OperationTypeApply\",\"Info\":\"\",\"Who\":\"{who}\",\
         \"Version\":\"1.0.3\",\"Created\":\"2026-12-02T06:00:00Z\",\"Path\":\"\"}}"
    )
    .into_bytes()
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn greeting_of(state: &str) -> String {
    json(state)["outputs"]["greeting"]["value"]
        .as_str()
        .unwrap_or_else(|| panic!("no greeting output in {state}"))
        .to_string()
}

/// No stored byte sequence contains the plaintext (directory stores only: files to scan).
fn assert_no_plaintext(root: &Path, secret: &str) {
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("read");
                let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
                assert!(!found, "plaintext in {}", path.display());
            }
        }
    }
}

fn s3_store(moto: &Moto, bucket: &str) -> String {
    moto.create_bucket(bucket);
    format!(
        "s3://{bucket}/platform?endpoint={}&region=us-east-1",
        moto.endpoint()
    )
}

/// init, apply, apply with a changed output, state pull; then every version in the store's
/// history decrypts to what Terraform wrote, and the log names operations, not contents.
fn terraform_round_trip(env: &Env) {
    let mut server = env.serve(&[]);
    let settings = backend(&server.base(), "network", PASSWORD);
    let root = env.terraform_root("network", &settings, "hello from v1");
    ok(
        &env.tf(&root, &["init", "-input=false", "-no-color"]),
        "terraform init",
    );
    ok(
        &env.tf(
            &root,
            &["apply", "-auto-approve", "-input=false", "-no-color"],
        ),
        "terraform apply",
    );
    env.terraform_root("network", &settings, "hello from v2");
    ok(
        &env.tf(
            &root,
            &["apply", "-auto-approve", "-input=false", "-no-color"],
        ),
        "terraform apply (changed)",
    );
    let pulled = env.tf(&root, &["state", "pull"]);
    ok(&pulled, "terraform state pull");
    assert_eq!(greeting_of(&stdout(&pulled)), "hello from v2");

    let history = env.run(&["history", "--stack", "network", "-o", "json"]);
    ok(&history, "plumb state history");
    let history = json(&stdout(&history));
    let versions = history["versions"].as_array().expect("versions");
    let statuses: Vec<(u64, &str)> = versions
        .iter()
        .map(|v| (v["serial"].as_u64().unwrap(), v["status"].as_str().unwrap()))
        .collect();
    assert_eq!(statuses, vec![(1, "committed"), (2, "head")], "{history}");
    let mut greetings = Vec::new();
    let mut states = Vec::new();
    for serial in ["1", "2"] {
        let got = env.run(&["get", "--stack", "network", "--serial", serial]);
        ok(&got, "plumb state get --serial");
        let state = json(&stdout(&got));
        greetings.push(greeting_of(&stdout(&got)));
        assert_eq!(state["terraform_version"], "1.0.3");
        states.push(state);
    }
    assert_eq!(greetings, ["hello from v1", "hello from v2"]);
    assert_eq!(
        states[0]["lineage"], states[1]["lineage"],
        "one Terraform state, two versions"
    );
    assert!(states[0]["serial"].as_u64() < states[1]["serial"].as_u64());
    // The newest version is, document for document, what Terraform reads back.
    assert_eq!(json(&stdout(&pulled)), states[1]);

    let log = server.stop();
    let text = log.join("\n");
    for expected in [
        "GET network: 404",
        "LOCK network: 200 locked for",
        "POST network: 200 wrote version 1",
        "POST network: 200 wrote version 2",
        "UNLOCK network: 200 released lock",
        "GET network: 200 version 2",
    ] {
        assert!(
            text.contains(expected),
            "{expected:?} not in the log:\n{text}"
        );
    }
    assert!(
        !text.contains(PASSWORD),
        "the log holds the password:\n{text}"
    );
    assert!(!text.contains("hello from"), "the log holds state:\n{text}");
}

#[test]
fn terraform_uses_a_directory_store_through_serve() {
    let env = Env::new(None);
    terraform_round_trip(&env);
    assert_no_plaintext(&env.dir.path().join("store"), "hello from");
}

#[test]
fn terraform_uses_an_s3_store_through_serve() {
    let moto = Moto::start();
    let env = Env::new(Some(s3_store(&moto, "tofu")));
    terraform_round_trip(&env);
}

/// A lock taken with `plumb state lock` makes apply fail with the lock error naming it, and
/// writes nothing; once it is released, apply goes through.
#[test]
fn a_held_lock_stops_terraform_and_names_its_holder() {
    let env = Env::new(None);
    let mut server = env.serve(&[]);
    let root = env.terraform_root("dns", &backend(&server.base(), "dns", PASSWORD), "one");
    ok(
        &env.tf(&root, &["init", "-input=false", "-no-color"]),
        "terraform init",
    );
    let lock = env.run(&["lock", "--stack", "dns", "--operation", "rotating keys"]);
    ok(&lock, "plumb state lock");
    let id = stdout(&lock).trim().to_string();

    let blocked = env.tf(
        &root,
        &["apply", "-auto-approve", "-input=false", "-no-color"],
    );
    assert!(!blocked.status.success(), "apply went through a held lock");
    // Terraform wraps its error text: compare with the line breaks folded.
    let message = stderr(&blocked)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        message.contains("Error acquiring the state lock"),
        "{message}"
    );
    assert!(
        message.contains(&format!("HTTP remote state already locked: ID={id}")),
        "{message}"
    );
    let history = env.run(&["history", "--stack", "dns"]);
    assert!(!history.status.success(), "a blocked apply wrote a version");

    // The holder's lock body, as the backend reads it.
    let refused = authed(
        server.port,
        "LOCK",
        "/dns",
        &lock_body("other-client", "ci@runner"),
    );
    assert_eq!(refused.status, 423, "{}", refused.text());
    let holder = json(&refused.text());
    assert_eq!(holder["ID"], id.as_str());
    assert_eq!(holder["Operation"], "rotating keys");
    assert!(
        holder["Who"].as_str().is_some_and(|w| w.contains('@')),
        "{holder}"
    );

    // Terraform 1.0.3's http client reports a held lock as a plain error, which its
    // -lock-timeout does not retry (OpenTofu's does): released, the next apply goes through.
    ok(
        &env.run(&["unlock", "--stack", "dns", "--lock-id", &id]),
        "plumb state unlock",
    );
    ok(
        &env.tf(
            &root,
            &["apply", "-auto-approve", "-input=false", "-no-color"],
        ),
        "terraform apply after the unlock",
    );
    let got = env.run(&["get", "--stack", "dns"]);
    ok(&got, "plumb state get");
    assert_eq!(greeting_of(&stdout(&got)), "one");
    let log = server.stop_with("INT").join("\n");
    assert!(log.contains("LOCK dns: 423 locked by"), "{log}");
}

/// While one Terraform holds the lock (`terraform console` keeps it until its input ends), an
/// apply fails with the lock error naming the holder's lock id, and writes nothing.
#[test]
fn a_terraform_holding_the_lock_stops_another() {
    let env = Env::new(None);
    let mut server = env.serve(&[]);
    let root = env.terraform_root("vpn", &backend(&server.base(), "vpn", PASSWORD), "one");
    ok(
        &env.tf(&root, &["init", "-input=false", "-no-color"]),
        "terraform init",
    );
    let mut holder = env
        .terraform(&root, &["console", "-no-color"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn terraform console");
    let deadline = Instant::now() + Duration::from_secs(60);
    let id = loop {
        let taken = server.lines().iter().find_map(|l| {
            l.contains("LOCK vpn: 200 locked for")
                .then(|| l.rsplit("lock ").next().map(str::to_string))
                .flatten()
        });
        if let Some(id) = taken {
            break id;
        }
        assert!(
            Instant::now() < deadline,
            "console took no lock:\n{}",
            server.lines().join("\n")
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let blocked = env.tf(
        &root,
        &["apply", "-auto-approve", "-input=false", "-no-color"],
    );
    assert!(!blocked.status.success(), "apply went through a held lock");
    let message = stderr(&blocked)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        message.contains(&format!("HTTP remote state already locked: ID={id}")),
        "{message}"
    );
    drop(holder.stdin.take());
    let console = holder.wait_with_output().expect("wait terraform console");
    ok(&console, "terraform console");
    assert!(
        !env.run(&["history", "--stack", "vpn"]).status.success(),
        "something was written"
    );
    let log = server.stop().join("\n");
    assert!(
        log.contains(&format!("UNLOCK vpn: 200 released lock {id}")),
        "{log}"
    );
}

#[test]
fn writes_without_the_lock_are_refused_and_write_nothing() {
    let env = Env::new(None);
    let mut server = env.serve(&[]);
    let state = br#"{"version":4,"serial":1,"lineage":"x","outputs":{},"resources":[]}"#;

    let no_id = authed(server.port, "POST", "/apps", state);
    assert_eq!(no_id.status, 409, "{}", no_id.text());
    assert!(
        no_id.text().contains("must hold its lock"),
        "{}",
        no_id.text()
    );
    let unlocked = authed(server.port, "POST", "/apps?ID=made-up", state);
    assert_eq!(unlocked.status, 409, "{}", unlocked.text());
    assert_eq!(authed(server.port, "GET", "/apps", b"").status, 404);

    let taken = authed(
        server.port,
        "LOCK",
        "/apps",
        &lock_body("holder-1", "ops@laptop"),
    );
    assert_eq!(taken.status, 200, "{}", taken.text());
    let wrong_id = authed(server.port, "POST", "/apps?ID=holder-2", state);
    assert_eq!(wrong_id.status, 423, "{}", wrong_id.text());
    assert_eq!(json(&wrong_id.text())["ID"], "holder-1");
    let mut damaged = authed(server.port, "POST", "/apps?ID=holder-1", b"not json");
    assert_eq!(damaged.status, 400, "{}", damaged.text());
    damaged = authed(
        server.port,
        "UNLOCK",
        "/apps",
        &lock_body("holder-2", "x@y"),
    );
    assert_eq!(
        damaged.status,
        423,
        "another client's unlock: {}",
        damaged.text()
    );
    assert_eq!(
        authed(server.port, "GET", "/apps", b"").status,
        404,
        "nothing was written"
    );
    assert!(!env.run(&["history", "--stack", "apps"]).status.success());
    // force-unlock sends no lock body: refused, with the way to break a lock.
    let bare = authed(server.port, "UNLOCK", "/apps", b"");
    assert_eq!(bare.status, 409, "{}", bare.text());
    assert!(
        bare.text().contains("plumb state force-unlock"),
        "{}",
        bare.text()
    );

    let written = authed(server.port, "POST", "/apps?ID=holder-1", state);
    assert_eq!(written.status, 200, "{}", written.text());
    let read = authed(server.port, "GET", "/apps", b"");
    assert_eq!(read.status, 200);
    assert_eq!(read.body, state);
    let md5 = read.headers.get("content-md5").expect("Content-MD5");
    assert_eq!(
        md5, "f1au0Qxe1Tw907RzgYaLXQ==",
        "the MD5 of the state, base64"
    );
    let released = authed(
        server.port,
        "UNLOCK",
        "/apps/lock",
        &lock_body("holder-1", "x"),
    );
    assert_eq!(released.status, 200, "{}", released.text());
    assert_eq!(authed(server.port, "DELETE", "/apps", b"").status, 405);
    server.stop();
}

#[test]
fn wrong_credentials_are_refused() {
    let env = Env::new(None);
    let mut server = env.serve(&[]);
    for auth in [
        None,
        Some((USER, "wrong-password")),
        Some(("root", PASSWORD)),
    ] {
        let reply = request(server.port, "GET", "/network", auth, b"");
        assert_eq!(reply.status, 401, "{auth:?}");
        assert!(reply
            .headers
            .get("www-authenticate")
            .is_some_and(|v| v.starts_with("Basic")));
        let lock = request(server.port, "LOCK", "/network", auth, &lock_body("x", "y"));
        assert_eq!(lock.status, 401, "{auth:?}");
    }
    let root = env.terraform_root(
        "network",
        &backend(&server.base(), "network", "wrong-password"),
        "x",
    );
    let init = env.tf(&root, &["init", "-input=false", "-no-color"]);
    let apply = env.tf(
        &root,
        &["apply", "-auto-approve", "-input=false", "-no-color"],
    );
    assert!(!apply.status.success(), "{}", stdout(&apply));
    let said = format!("{}{}", stderr(&init), stderr(&apply));
    assert!(
        said.contains("HTTP remote state endpoint requires auth"),
        "{said}"
    );
    assert!(!env.run(&["history", "--stack", "network"]).status.success());
    let log = server.stop().join("\n");
    assert!(log.contains("401 refused (wrong credentials)"), "{log}");
    assert!(log.contains("401 refused (no credentials)"), "{log}");
    assert!(!log.contains("wrong-password"), "{log}");
}

#[test]
fn serve_refuses_a_store_that_fails_the_probe_unless_told_loudly() {
    let moto = Moto::start();
    moto.create_bucket("dishonest");
    // reqwest (the proxy's client) is built without a default TLS provider.
    let _ = rustls_ring_default();
    let proxy = proxy::Proxy::start(moto.port, proxy::Mode::DropConditions);
    let store = format!(
        "s3://dishonest/platform?endpoint={}&region=us-east-1",
        proxy.endpoint()
    );
    let env = Env::new(Some(store));
    let mut cmd = env.command(&["serve", "--listen", "127.0.0.1:0"]);
    cmd.env("PLUMB_STATE_USERNAME", USER)
        .env("PLUMB_STATE_PASSWORD", PASSWORD);
    let log = match Server::start(cmd) {
        Ok(mut server) => panic!("served a dishonest store:\n{}", server.stop().join("\n")),
        Err(log) => log,
    };
    assert!(log.contains("exited with exit status: 2"), "{log}");
    assert!(
        log.contains("refusing to serve s3://dishonest/platform"),
        "{log}"
    );
    assert!(log.contains("create-if-absent"), "{log}");
    assert!(!log.contains("listening on"), "{log}");

    let mut server = env.serve(&["--allow-unsafe-store"]);
    let lines = server.lines().join("\n");
    assert!(
        lines.contains("WARNING: s3://dishonest/platform"),
        "{lines}"
    );
    assert!(lines.contains("FAILED the probe"), "{lines}");
    assert!(lines.contains("--allow-unsafe-store"), "{lines}");
    assert_eq!(authed(server.port, "GET", "/x", b"").status, 404);
    server.stop();
}

fn rustls_ring_default() -> bool {
    // Any plumb-state S3 backend installs ring as the default provider; make one.
    for (key, value) in moto::AWS_ENV {
        std::env::set_var(key, value);
    }
    plumb_state::backend::S3Backend::new(plumb_state::backend::S3Location {
        bucket: "unused".to_string(),
        prefix: String::new(),
        endpoint: Some("http://127.0.0.1:9".to_string()),
        region: Some("us-east-1".to_string()),
    })
    .is_ok()
}

/// 16 clients each add one to a counter in the state, `rounds` times over, through the
/// server: lock (retrying while it is held), read, write under the lock, unlock. No update is
/// lost and the versions are contiguous, each holding the count it was written with.
fn sixteen_clients(env: &Env, rounds: usize) {
    const CLIENTS: usize = 16;
    let mut server = env.serve(&[]);
    let port = server.port;
    let refusals = Arc::new(Mutex::new(0usize));
    let threads: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let refusals = refusals.clone();
            std::thread::spawn(move || {
                for round in 0..rounds {
                    let id = format!("client-{client}-round-{round}");
                    let who = format!("client{client}@test");
                    let deadline = Instant::now() + Duration::from_secs(600);
                    loop {
                        let reply = authed(port, "LOCK", "/counter", &lock_body(&id, &who));
                        if reply.status == 200 {
                            break;
                        }
                        assert_eq!(reply.status, 423, "{}", reply.text());
                        *refusals.lock().unwrap() += 1;
                        assert!(
                            Instant::now() < deadline,
                            "client {client} never got the lock"
                        );
                        std::thread::sleep(Duration::from_millis(20 + 5 * client as u64));
                    }
                    let read = authed(port, "GET", "/counter", b"");
                    let count = match read.status {
                        404 => 0,
                        200 => json(&read.text())["count"].as_u64().expect("count"),
                        other => panic!("GET {other}: {}", read.text()),
                    };
                    let next = format!("{{\"count\":{},\"by\":\"{id}\"}}", count + 1);
                    let write = authed(port, "POST", &format!("/counter?ID={id}"), next.as_bytes());
                    assert_eq!(write.status, 200, "{}", write.text());
                    let unlock = authed(port, "UNLOCK", "/counter", &lock_body(&id, &who));
                    assert_eq!(unlock.status, 200, "{}", unlock.text());
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("a client failed");
    }
    let total = (CLIENTS * rounds) as u64;
    let read = authed(port, "GET", "/counter", b"");
    assert_eq!(
        json(&read.text())["count"].as_u64(),
        Some(total),
        "lost updates"
    );
    let history = env.run(&["history", "--stack", "counter", "-o", "json"]);
    ok(&history, "plumb state history");
    let history = json(&stdout(&history));
    let serials: Vec<u64> = history["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .map(|v| v["serial"].as_u64().unwrap())
        .collect();
    assert_eq!(
        serials,
        (1..=total).collect::<Vec<_>>(),
        "serials contiguous"
    );
    for serial in [1, total / 2, total] {
        let got = env.run(&["get", "--stack", "counter", "--serial", &serial.to_string()]);
        ok(&got, "plumb state get --serial");
        assert_eq!(json(&stdout(&got))["count"].as_u64(), Some(serial));
    }
    println!(
        "{total} writes by {CLIENTS} clients, {} LOCK refusals while held",
        refusals.lock().unwrap()
    );
    server.stop();
}

#[test]
fn sixteen_concurrent_clients_lose_no_update_on_a_directory_store() {
    sixteen_clients(&Env::new(None), 3);
}

#[test]
fn sixteen_concurrent_clients_lose_no_update_on_s3() {
    let moto = Moto::start();
    // Two rounds: moto serialises every request, so 32 writes already take a while.
    sixteen_clients(&Env::new(Some(s3_store(&moto, "counter"))), 2);
}

#[test]
fn tls_with_a_self_signed_certificate_and_no_plain_text_beyond_loopback() {
    let env = Env::new(None);
    let refused = env
        .command(&["serve", "--listen", "0.0.0.0:0"])
        .env("PLUMB_STATE_USERNAME", USER)
        .env("PLUMB_STATE_PASSWORD", PASSWORD)
        .output()
        .expect("run plumb");
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("not a loopback address"),
        "{}",
        stderr(&refused)
    );

    let certified =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .expect("self-signed certificate");
    let cert = env.dir.path().join("cert.pem");
    let key = env.dir.path().join("key.pem");
    std::fs::write(&cert, certified.cert.pem()).expect("cert");
    std::fs::write(&key, certified.signing_key.serialize_pem()).expect("key");
    let mut server = env.serve(&[
        "--tls-cert",
        &cert.display().to_string(),
        "--tls-key",
        &key.display().to_string(),
    ]);
    assert_eq!(server.scheme, "https");
    let root = env.terraform_root("tls", &backend(&server.base(), "tls", PASSWORD), "secure");

    // Terraform verifies the certificate: unknown without the test's CA, trusted with it.
    let untrusted = env.tf(&root, &["init", "-input=false", "-no-color"]);
    let applied = env.tf(
        &root,
        &["apply", "-auto-approve", "-input=false", "-no-color"],
    );
    assert!(!applied.status.success());
    let said = format!("{}{}", stderr(&untrusted), stderr(&applied));
    assert!(said.contains("certificate"), "{said}");

    let trusted = |args: &[&str]| {
        env.terraform(&root, args)
            .env("SSL_CERT_FILE", &cert)
            .output()
            .expect("run terraform")
    };
    ok(
        &trusted(&["init", "-input=false", "-no-color", "-reconfigure"]),
        "terraform init (TLS)",
    );
    ok(
        &trusted(&["apply", "-auto-approve", "-input=false", "-no-color"]),
        "terraform apply (TLS)",
    );
    let got = env.run(&["get", "--stack", "tls"]);
    ok(&got, "plumb state get");
    assert_eq!(greeting_of(&stdout(&got)), "secure");
    // Plain HTTP to the TLS port gets no answer from the backend.
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = stream.write_all(b"GET /tls HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    assert!(!String::from_utf8_lossy(&answer).contains("200 OK"));
    let log = server.stop().join("\n");
    assert!(log.contains("POST tls: 200 wrote version 1"), "{log}");
}

#[test]
fn credentials_come_from_a_file_or_the_environment_and_are_required() {
    let env = Env::new(None);
    let none = env.run(&["serve", "--listen", "127.0.0.1:0"]);
    assert_eq!(none.status.code(), Some(2), "{}", stderr(&none));
    assert!(
        stderr(&none).contains("no credentials"),
        "{}",
        stderr(&none)
    );
    let half = env
        .command(&["serve", "--listen", "127.0.0.1:0"])
        .env("PLUMB_STATE_USERNAME", USER)
        .output()
        .expect("run plumb");
    assert_eq!(half.status.code(), Some(2), "{}", stderr(&half));
    assert!(stderr(&half).contains("set both"), "{}", stderr(&half));

    let file = env.dir.path().join("credentials");
    std::fs::write(&file, "# runners\nci:first-secret\nlaptop:second:secret\n").expect("write");
    let mut cmd = env.command(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--credentials",
        &file.display().to_string(),
    ]);
    cmd.env("PLUMB_STATE_USERNAME", USER)
        .env("PLUMB_STATE_PASSWORD", PASSWORD);
    let mut server = Server::start(cmd).unwrap_or_else(|log| panic!("serve:\n{log}"));
    let get = |auth| request(server.port, "GET", "/any", auth, b"").status;
    assert_eq!(get(Some(("ci", "first-secret"))), 404);
    assert_eq!(get(Some(("laptop", "second:secret"))), 404);
    assert_eq!(
        get(Some((USER, PASSWORD))),
        401,
        "the file replaces the environment"
    );
    assert_eq!(get(Some(("ci", "second:secret"))), 401);
    server.stop();

    // Recipients alone cannot decrypt what the server must read back.
    // The recipient of age's own documentation.
    let recipient = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p";
    let encrypt_only = env
        .command(&["serve", "--listen", "127.0.0.1:0", "--recipient", recipient])
        .env_remove("PLUMB_STATE_IDENTITY")
        .env("PLUMB_STATE_USERNAME", USER)
        .env("PLUMB_STATE_PASSWORD", PASSWORD)
        .output()
        .expect("run plumb");
    assert_eq!(
        encrypt_only.status.code(),
        Some(2),
        "{}",
        stderr(&encrypt_only)
    );
    assert!(
        stderr(&encrypt_only).contains("must decrypt the state it serves"),
        "{}",
        stderr(&encrypt_only)
    );
}

/// Locks and versions live in the store: a lock taken through one server is held through the
/// next, and the write under it lands as the next version.
#[test]
fn a_lock_outlives_a_restart_of_the_server() {
    let env = Env::new(None);
    let mut first = env.serve(&[]);
    let taken = authed(
        first.port,
        "LOCK",
        "/db",
        &lock_body("before-restart", "ops@a"),
    );
    assert_eq!(taken.status, 200, "{}", taken.text());
    first.stop();
    let mut second = env.serve(&[]);
    let other = authed(
        second.port,
        "LOCK",
        "/db",
        &lock_body("after-restart", "ops@b"),
    );
    assert_eq!(other.status, 423, "{}", other.text());
    assert_eq!(json(&other.text())["ID"], "before-restart");
    let state = br#"{"version":4,"serial":3,"lineage":"y","outputs":{},"resources":[]}"#;
    let written = authed(second.port, "POST", "/db?ID=before-restart", state);
    assert_eq!(written.status, 200, "{}", written.text());
    let released = authed(
        second.port,
        "UNLOCK",
        "/db",
        &lock_body("before-restart", "ops@a"),
    );
    assert_eq!(released.status, 200, "{}", released.text());
    let read = authed(second.port, "GET", "/db", b"");
    assert_eq!(read.body, state);
    // A lock address with fixed methods: PUT takes the lock, DELETE releases it.
    let put = authed(
        second.port,
        "PUT",
        "/db/lock",
        &lock_body("by-put", "ops@c"),
    );
    assert_eq!(put.status, 200, "{}", put.text());
    let held = authed(second.port, "LOCK", "/db", &lock_body("other", "ops@d"));
    assert_eq!(json(&held.text())["ID"], "by-put");
    let delete = authed(
        second.port,
        "DELETE",
        "/db/lock",
        &lock_body("by-put", "ops@c"),
    );
    assert_eq!(delete.status, 200, "{}", delete.text());
    assert!(
        env.run(&["lock", "--stack", "db"]).status.success(),
        "DELETE released it"
    );
    second.stop();
}
