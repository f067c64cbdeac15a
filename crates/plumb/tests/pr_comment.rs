//! scripts/pr-comment, which action.yml runs, against a loopback server that speaks the
//! issue-comment endpoints GitHub, Gitea and Forgejo share (list with pages, create, update):
//! the first run creates the comment, the next updates that one (found by its marker among
//! more than a page of other comments) instead of adding another.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Issue {
    /// (id, body) of every comment, in order.
    comments: Vec<(u64, String)>,
    /// `METHOD path` of every request.
    log: Vec<String>,
}

fn serve(listener: TcpListener, state: Arc<Mutex<Issue>>) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { return };
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let mut parts = line.split_whitespace();
        let (method, target) = (
            parts.next().unwrap_or("").to_string(),
            parts.next().unwrap_or("").to_string(),
        );
        let mut length = 0;
        let mut auth = String::new();
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).unwrap();
            if header.trim().is_empty() {
                break;
            }
            let lower = header.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            if lower.starts_with("authorization:") {
                auth = header.trim().to_string();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let mut issue = state.lock().unwrap();
        issue
            .log
            .push(format!("{method} {}", target.split('?').next().unwrap()));
        let (status, reply) = if auth != "Authorization: token secret-token" {
            ("401 Unauthorized", "{}".to_string())
        } else {
            let text = |b: &[u8]| {
                serde_json::from_slice::<serde_json::Value>(b).unwrap()["body"]
                    .as_str()
                    .unwrap()
                    .to_string()
            };
            match (method.as_str(), target.as_str()) {
                ("GET", t) if t.starts_with("/repos/o/r/issues/7/comments") => {
                    let page: usize = t
                        .split("&page=")
                        .nth(1)
                        .and_then(|p| p.parse().ok())
                        .unwrap_or(1);
                    let list: Vec<_> = issue
                        .comments
                        .iter()
                        .skip((page - 1) * 100)
                        .take(100)
                        .map(|(id, body)| serde_json::json!({"id": id, "body": body}))
                        .collect();
                    ("200 OK", serde_json::to_string(&list).unwrap())
                }
                ("POST", "/repos/o/r/issues/7/comments") => {
                    let id = 1000 + issue.comments.len() as u64;
                    issue.comments.push((id, text(&body)));
                    ("201 Created", format!("{{\"id\": {id}}}"))
                }
                ("PATCH", t) if t.starts_with("/repos/o/r/issues/comments/") => {
                    let id: u64 = t.rsplit('/').next().unwrap().parse().unwrap();
                    let new = text(&body);
                    match issue.comments.iter_mut().find(|(i, _)| *i == id) {
                        Some(c) => {
                            c.1 = new;
                            ("200 OK", format!("{{\"id\": {id}}}"))
                        }
                        None => ("404 Not Found", "{}".into()),
                    }
                }
                _ => ("404 Not Found", "{}".into()),
            }
        };
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
            reply.len()
        );
    }
}

fn comment(api: &str, body_file: &Path, token: &str) -> std::process::Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pr-comment");
    Command::new("python3")
        .arg(script)
        .arg(body_file)
        .arg("7")
        .env("GITHUB_API_URL", api)
        .env("GITHUB_REPOSITORY", "o/r")
        .env("TOKEN", token)
        .output()
        .expect("python3 runs")
}

#[test]
fn one_comment_is_created_then_updated() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let api = format!("http://{}", listener.local_addr().unwrap());
    let state = Arc::new(Mutex::new(Issue::default()));
    // More than a page of other people's comments.
    for i in 0..150 {
        state
            .lock()
            .unwrap()
            .comments
            .push((i, format!("comment {i}")));
    }
    let server = state.clone();
    std::thread::spawn(move || serve(listener, server));
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.md");

    std::fs::write(&body, "### plumb diff\n\nfirst\n").unwrap();
    let out = comment(&api, &body, "secret-token");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(&body, "### plumb diff\n\nsecond\n").unwrap();
    let out = comment(&api, &body, "secret-token");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("updated comment 1150"));

    let issue = state.lock().unwrap();
    let ours: Vec<_> = issue
        .comments
        .iter()
        .filter(|(_, b)| b.contains("<!-- plumb-diff -->"))
        .collect();
    assert_eq!(ours.len(), 1, "{:?}", issue.log);
    assert!(ours[0].1.contains("second") && !ours[0].1.contains("first"));
    assert_eq!(issue.comments.len(), 151);
    assert!(issue
        .log
        .iter()
        .any(|l| l.starts_with("PATCH /repos/o/r/issues/comments/1150")));
    drop(issue);

    // A refused token is an error naming the URL and the status.
    let out = comment(&api, &body, "wrong");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("HTTP 401") && stderr.contains("/repos/o/r/issues/7/comments"),
        "{stderr}"
    );
}
