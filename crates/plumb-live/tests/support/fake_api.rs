//! An in-process Kubernetes API server for the tests: HTTP/1.1 on 127.0.0.1, serving what
//! `plumb verify` reads with the real API's JSON shapes:
//!
//! - discovery: `/api` (`APIVersions`), `/apis` (`APIGroupList`), `/api/v1` and
//!   `/apis/GROUP/VERSION` (`APIResourceList`), as the Kubernetes API reference describes them
//!   (<https://kubernetes.io/docs/reference/using-api/api-concepts/#discovery-api>);
//! - lists across namespaces, `/apis/GROUP/VERSION/PLURAL` (`KindList` with
//!   `metadata.resourceVersion`, <https://kubernetes.io/docs/reference/using-api/api-concepts/#collections>);
//! - errors as `Status` objects (`{"kind":"Status","code":403,"reason":"Forbidden",...}`,
//!   <https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/status/>).
//!
//! Every request is recorded. A real `kubectl` lists from it (tests/verify.rs), which is the
//! proof that it speaks the protocol.

#![allow(dead_code)]

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// A kind the fake serves.
#[derive(Debug, Clone)]
pub struct Served {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    pub items: Vec<Value>,
}

#[derive(Default)]
pub struct State {
    pub kinds: Vec<Served>,
    /// Paths answered with 403.
    pub forbidden: Vec<String>,
    /// `GET /path` of every request, query strings cut.
    pub requests: Vec<String>,
}

pub struct FakeApi {
    pub url: String,
    pub state: Arc<Mutex<State>>,
}

/// `kind` in lower case, plural as the API names it.
pub fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if lower.ends_with('y') {
        format!("{}ies", &lower[..lower.len() - 1])
    } else if lower.ends_with('s') || lower.ends_with("ch") {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    }
}

impl FakeApi {
    pub fn start(state: State) -> FakeApi {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(state));
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let shared = shared.clone();
                std::thread::spawn(move || serve(stream, &shared));
            }
        });
        FakeApi { url, state }
    }

    /// A kubeconfig file for this server, in `dir`.
    pub fn kubeconfig(&self, dir: &std::path::Path) -> std::path::PathBuf {
        let path = dir.join("kubeconfig");
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: reader\ncurrent-context: fake\nusers:\n- name: reader\n  user:\n    token: reader-token\n",
                self.url
            ),
        )
        .unwrap();
        path
    }

    pub fn requests(&self) -> Vec<String> {
        self.state.lock().unwrap().requests.clone()
    }
}

fn serve(stream: std::net::TcpStream, state: &Mutex<State>) {
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let target = parts.next().unwrap_or("").to_string();
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header.trim().is_empty() {
                break;
            }
            if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        let _ = reader.read_exact(&mut body);
        let path = target.split('?').next().unwrap_or("").to_string();
        let (code, reply) = {
            let mut state = state.lock().unwrap();
            state.requests.push(format!("{method} {path}"));
            respond(&state, &method, &path)
        };
        let text = reply.to_string();
        let reason = match code {
            200 => "OK",
            403 => "Forbidden",
            404 => "Not Found",
            _ => "Method Not Allowed",
        };
        // One write per response: headers and body in separate small writes would wait on
        // Nagle's algorithm and the client's delayed ACK (40 ms a request).
        let response = format!(
            "HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{text}",
            text.len()
        );
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code})
}

fn respond(state: &State, method: &str, path: &str) -> (u16, Value) {
    if method != "GET" {
        return (
            405,
            status(405, "MethodNotAllowed", "the fake API is read-only"),
        );
    }
    if state.forbidden.iter().any(|p| p == path) {
        return (
            403,
            status(
                403,
                "Forbidden",
                &format!("User \"reader\" cannot list resource at the cluster scope: {path}"),
            ),
        );
    }
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for k in &state.kinds {
        if !k.group.is_empty() {
            let versions = groups.entry(k.group.clone()).or_default();
            if !versions.contains(&k.version) {
                versions.push(k.version.clone());
            }
        }
    }
    if path == "/api" {
        return (
            200,
            json!({"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]}),
        );
    }
    if path == "/apis" {
        let list: Vec<Value> = groups
            .iter()
            .map(|(g, versions)| {
                let vs: Vec<Value> = versions
                    .iter()
                    .map(|v| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
                    .collect();
                json!({"name": g, "versions": vs, "preferredVersion": vs[0]})
            })
            .collect();
        return (
            200,
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": list}),
        );
    }
    if path == "/version" {
        return (
            200,
            json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0", "platform": "linux/amd64"}),
        );
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => {
            return (
                404,
                status(
                    404,
                    "NotFound",
                    "the server could not find the requested resource",
                ),
            )
        }
    };
    let of_gv: Vec<&Served> = state
        .kinds
        .iter()
        .filter(|k| k.group == group && k.version == version)
        .collect();
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    match rest {
        [] if !of_gv.is_empty() || (group.is_empty() && version == "v1") => {
            let resources: Vec<Value> = of_gv
                .iter()
                .map(|k| json!({"name": k.plural, "singularName": k.kind.to_ascii_lowercase(), "namespaced": k.namespaced,
                                "kind": k.kind, "verbs": ["get", "list", "watch"]}))
                .collect();
            (
                200,
                json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}),
            )
        }
        [plural] => match of_gv.iter().find(|k| k.plural == *plural) {
            Some(k) => (
                200,
                json!({"apiVersion": group_version, "kind": format!("{}List", k.kind),
                       "metadata": {"resourceVersion": "4242"}, "items": k.items}),
            ),
            None => (
                404,
                status(
                    404,
                    "NotFound",
                    "the server could not find the requested resource",
                ),
            ),
        },
        _ => (
            404,
            status(
                404,
                "NotFound",
                "the server could not find the requested resource",
            ),
        ),
    }
}
