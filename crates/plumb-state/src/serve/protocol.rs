//! The `http` backend protocol of OpenTofu and Terraform, on top of the store.
//!
//! `GET /<stack>` answers the current version (404 for a stack that does not exist, 204 for one
//! with no version yet); `POST /<stack>?ID=<lock id>` (or `PUT`, the backend's `update_method`)
//! writes a new version only while that lock is held; `LOCK` / `UNLOCK` on `/<stack>` (or
//! `LOCK`/`PUT`/`POST` and `UNLOCK`/`DELETE` on `/<stack>/lock`) take and release the store's
//! lock under the id in the client's lock body. A held lock answers `423 Locked` with the
//! holder's lock body, which is what the backend prints. Error bodies are plain text and never
//! hold state.

use super::Log;
use crate::error::StateError;
use crate::lock::LockInfo;
use crate::store::{PutOptions, StackName, StateStore};
use crate::Keys;
use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::{Request, Response, StatusCode};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The largest state the server takes (Terraform states of big stacks reach tens of MB).
const MAX_STATE_BYTES: usize = 256 << 20;
/// The largest lock body: a few hundred bytes in practice.
const MAX_LOCK_BYTES: usize = 64 << 10;

pub(super) type Reply = Response<Full<Bytes>>;

/// What the request handlers share: the store, its keys, who may talk to it.
pub(super) struct Service {
    pub(super) store: Arc<StateStore>,
    pub(super) keys: Arc<Keys>,
    pub(super) credentials: super::Credentials,
    pub(super) lock_ttl: Duration,
    pub(super) log: Log,
}

/// A lock as the backend sends and reads it (Terraform's and OpenTofu's `statemgr.LockInfo`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct BackendLock {
    #[serde(rename = "ID", default)]
    id: String,
    #[serde(rename = "Operation", default)]
    operation: String,
    #[serde(rename = "Info", default)]
    info: String,
    #[serde(rename = "Who", default)]
    who: String,
    #[serde(rename = "Version", default)]
    version: String,
    /// The client's time; the store records its own. Sent back only when it parses as the
    /// RFC 3339 time the backend's JSON decoder expects.
    #[serde(rename = "Created", default, skip_serializing_if = "Option::is_none")]
    created: Option<String>,
    #[serde(rename = "Path", default)]
    path: String,
}

impl BackendLock {
    fn of_holder(holder: &LockInfo) -> Self {
        let created = chrono::DateTime::parse_from_rfc3339(&holder.created)
            .is_ok()
            .then(|| holder.created.clone());
        BackendLock {
            id: holder.id.clone(),
            operation: holder.operation.clone(),
            info: format!(
                "held in plumb's store by {} since {} (expires {}, advice only)",
                holder.who, holder.created, holder.expires
            ),
            who: holder.who.clone(),
            version: String::new(),
            created,
            path: holder.stack.clone(),
        }
    }
}

/// What a handler did: the reply (boxed: an outcome is often an `Err`), and the line the log
/// gets for it.
struct Outcome {
    reply: Box<Reply>,
    detail: String,
}

fn text(status: StatusCode, message: &str) -> Box<Reply> {
    let mut reply = Box::new(Response::new(Full::new(Bytes::from(format!(
        "{message}\n"
    )))));
    *reply.status_mut() = status;
    reply.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    reply
}

fn json(status: StatusCode, body: Vec<u8>) -> Box<Reply> {
    let mut reply = Box::new(Response::new(Full::new(Bytes::from(body))));
    *reply.status_mut() = status;
    reply
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    reply
}

fn refused(status: StatusCode, message: String) -> Outcome {
    Outcome {
        reply: text(status, &message),
        detail: format!("{} {message}", status.as_u16()),
    }
}

/// The reply to a lock held by someone else: 423 with the holder's lock body.
fn locked(holder: &LockInfo) -> Outcome {
    let body = serde_json::to_vec(&BackendLock::of_holder(holder)).unwrap_or_default();
    Outcome {
        reply: json(StatusCode::LOCKED, body),
        detail: format!(
            "423 locked by {} for {:?} since {} (lock {})",
            holder.who, holder.operation, holder.created, holder.id
        ),
    }
}

/// The status for an error of the store. Transient failures are 5xx, which the backend retries;
/// a refusal that retrying cannot change is 4xx, except an integrity refusal (a damaged,
/// replayed or rolled-back stack), which is the server's problem to report: 500.
fn status_of(error: &StateError) -> StatusCode {
    match error {
        StateError::Locked(_) => StatusCode::LOCKED,
        StateError::NotLocked(_) | StateError::LockMismatch { .. } => StatusCode::CONFLICT,
        StateError::InvalidStack(_) | StateError::InvalidLockId(_) => StatusCode::BAD_REQUEST,
        StateError::NoStack(_) | StateError::NoSuchVersion { .. } => StatusCode::NOT_FOUND,
        StateError::Backend(_) => StatusCode::BAD_GATEWAY,
        StateError::PutFailed { .. } => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

fn failed(error: &StateError) -> Outcome {
    refused(status_of(error), error.to_string())
}

/// Where a request goes.
enum Route {
    State(StackName),
    Lock(StackName),
}

impl Route {
    fn parse(path: &str) -> Result<Route, Outcome> {
        let usage = || {
            refused(
                StatusCode::NOT_FOUND,
                format!(
                    "no such address {path:?}: the state of a stack is at /<stack>, its lock at \
                     /<stack> (methods LOCK, UNLOCK) or /<stack>/lock"
                ),
            )
        };
        let rest = path.strip_prefix('/').ok_or_else(usage)?;
        let (name, lock) = match rest.split_once('/') {
            None => (rest, false),
            Some((name, "lock")) => (name, true),
            Some(_) => return Err(usage()),
        };
        if name.is_empty() {
            return Err(usage());
        }
        let stack = StackName::new(name).map_err(|e| failed(&e))?;
        Ok(if lock {
            Route::Lock(stack)
        } else {
            Route::State(stack)
        })
    }

    fn describe(&self) -> String {
        match self {
            Route::State(stack) => stack.to_string(),
            Route::Lock(stack) => format!("{stack}/lock"),
        }
    }
}

/// The `Content-MD5` the backend sends with a body: checked when present.
fn check_md5(headers: &hyper::HeaderMap, body: &[u8]) -> Result<(), Outcome> {
    let Some(given) = headers.get("content-md5") else {
        return Ok(());
    };
    let given = base64::engine::general_purpose::STANDARD
        .decode(given.as_bytes())
        .ok();
    let actual = md5_of(body);
    if given.as_deref() != Some(&actual[..]) {
        return Err(refused(
            StatusCode::BAD_REQUEST,
            "the body does not match its Content-MD5: it was damaged on the way; nothing was \
             written"
                .to_string(),
        ));
    }
    Ok(())
}

fn md5_of(body: &[u8]) -> [u8; 16] {
    use md5::Digest;
    md5::Md5::digest(body).into()
}

async fn read_body(body: Incoming, limit: usize) -> Result<Bytes, Outcome> {
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) => Err(if e.is::<http_body_util::LengthLimitError>() {
            refused(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the body is larger than {limit} bytes; nothing was written"),
            )
        } else {
            refused(
                StatusCode::BAD_REQUEST,
                format!("the body could not be read: {e}"),
            )
        }),
    }
}

/// The lock id of a request: `ID` in the query string.
fn query_id(uri: &hyper::Uri) -> Option<String> {
    url::form_urlencoded::parse(uri.query()?.as_bytes())
        .find(|(key, _)| key == "ID")
        .map(|(_, value)| value.into_owned())
        .filter(|id| !id.is_empty())
}

impl Service {
    /// Answers one request and logs one line for it: method, address, status and what was
    /// done, never a body or a credential.
    pub(super) async fn handle(
        self: Arc<Self>,
        request: Request<Incoming>,
        peer: SocketAddr,
    ) -> Reply {
        let method = request.method().clone();
        let path = request.uri().path().to_string();
        let authorization = request.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
        if !self.credentials.accepts(authorization) {
            let why = if authorization.is_some() {
                "wrong credentials"
            } else {
                "no credentials"
            };
            self.log_line(&format!("{method} {path} from {peer}: 401 refused ({why})"));
            let mut reply = text(
                StatusCode::UNAUTHORIZED,
                "authentication required: set the backend's username and password",
            );
            reply.headers_mut().insert(
                WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"plumb state\", charset=\"UTF-8\""),
            );
            return *reply;
        }
        let (label, outcome) = match Route::parse(&path) {
            Err(outcome) => (path.clone(), outcome),
            Ok(route) => (route.describe(), self.dispatch(route, request).await),
        };
        self.log_line(&format!("{method} {label}: {}", outcome.detail));
        *outcome.reply
    }

    fn log_line(&self, line: &str) {
        (self.log)(line);
    }

    async fn dispatch(&self, route: Route, request: Request<Incoming>) -> Outcome {
        let method = request.method().as_str().to_string();
        match (route, method.as_str()) {
            (Route::State(stack), "GET") => self.get(stack).await,
            (Route::State(stack), "POST" | "PUT") => self.update(stack, request).await,
            (Route::State(stack) | Route::Lock(stack), "LOCK") => self.lock(stack, request).await,
            (Route::Lock(stack), "PUT" | "POST") => self.lock(stack, request).await,
            (Route::State(stack) | Route::Lock(stack), "UNLOCK") => {
                self.unlock(stack, request).await
            }
            (Route::Lock(stack), "DELETE") => self.unlock(stack, request).await,
            (Route::State(_), "DELETE") => {
                let mut outcome = refused(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "versions are immutable: plumb state serve never deletes a stack's state"
                        .to_string(),
                );
                allow(&mut outcome.reply, "GET, POST, PUT, LOCK, UNLOCK");
                outcome
            }
            (route, _) => {
                let allowed = match route {
                    Route::State(_) => "GET, POST, PUT, LOCK, UNLOCK",
                    Route::Lock(_) => "LOCK, PUT, POST, UNLOCK, DELETE",
                };
                let mut outcome = refused(
                    StatusCode::METHOD_NOT_ALLOWED,
                    format!("method {method} is not part of the http backend protocol here"),
                );
                allow(&mut outcome.reply, allowed);
                outcome
            }
        }
    }

    /// Runs a store operation off the async threads (the store is blocking).
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&StateStore, &Keys) -> T + Send + 'static,
    ) -> Result<T, Outcome> {
        let store = self.store.clone();
        let keys = self.keys.clone();
        tokio::task::spawn_blocking(move || work(&store, &keys))
            .await
            .map_err(|e| {
                refused(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("the store operation stopped: {e}"),
                )
            })
    }

    async fn get(&self, stack: StackName) -> Outcome {
        let name = stack.clone();
        let read = match self
            .blocking(move |store, keys| store.get(&name, keys, None))
            .await
        {
            Ok(read) => read,
            Err(outcome) => return outcome,
        };
        match read {
            Ok(version) => {
                let md5 = base64::engine::general_purpose::STANDARD.encode(md5_of(&version.data));
                let detail = format!(
                    "200 version {} ({} bytes)",
                    version.header.serial,
                    version.data.len()
                );
                let mut reply = json(StatusCode::OK, version.data);
                if let Ok(value) = HeaderValue::from_str(&md5) {
                    reply.headers_mut().insert("content-md5", value);
                }
                Outcome { reply, detail }
            }
            Err(StateError::NoStack(_)) => Outcome {
                reply: text(
                    StatusCode::NOT_FOUND,
                    &format!("stack {stack} has no state"),
                ),
                detail: "404 no such stack (no state yet)".to_string(),
            },
            Err(StateError::Empty(_)) => {
                let mut reply = Box::new(Response::new(Full::new(Bytes::new())));
                *reply.status_mut() = StatusCode::NO_CONTENT;
                Outcome {
                    reply,
                    detail: "204 the stack has no version yet".to_string(),
                }
            }
            Err(e) => failed(&e),
        }
    }

    async fn update(&self, stack: StackName, request: Request<Incoming>) -> Outcome {
        let Some(id) = query_id(request.uri()) else {
            return refused(
                StatusCode::CONFLICT,
                format!(
                    "a write to stack {stack} must hold its lock (?ID=<lock id>): configure the \
                     backend's lock_address and unlock_address; nothing was written"
                ),
            );
        };
        let (parts, body) = request.into_parts();
        let data = match read_body(body, MAX_STATE_BYTES).await {
            Ok(data) => data,
            Err(outcome) => return outcome,
        };
        if let Err(outcome) = check_md5(&parts.headers, &data) {
            return outcome;
        }
        if serde_json::from_slice::<serde::de::IgnoredAny>(&data).is_err() {
            return refused(
                StatusCode::BAD_REQUEST,
                "the body is not JSON, so not an OpenTofu or Terraform state; nothing was written"
                    .to_string(),
            );
        }
        let name = stack.clone();
        let lock_id = id.clone();
        let size = data.len();
        let written = self
            .blocking(move |store, keys| {
                let holder = store.current_lock(&name)?;
                match holder {
                    Some(holder) if holder.id == lock_id => {
                        let options = PutOptions {
                            who: &holder.who,
                            lock_id: Some(&lock_id),
                            rekey: false,
                        };
                        store
                            .put_with(&name, keys, &data, &options, &mut |_| {})
                            .map(Ok)
                    }
                    Some(holder) => Ok(Err(holder)),
                    None => Err(StateError::NotLocked(name.to_string())),
                }
            })
            .await;
        match written {
            Err(outcome) => outcome,
            Ok(Ok(Ok(serial))) => Outcome {
                reply: text(
                    StatusCode::OK,
                    &format!("stack {stack}: wrote version {serial}"),
                ),
                detail: format!("200 wrote version {serial} ({size} bytes, lock {id})"),
            },
            Ok(Ok(Err(holder))) => {
                let mut outcome = locked(&holder);
                outcome.detail = format!(
                    "{}; the write under lock {id} was refused, nothing was written",
                    outcome.detail
                );
                outcome
            }
            Ok(Err(StateError::NotLocked(_))) => refused(
                StatusCode::CONFLICT,
                format!(
                    "stack {stack} is not locked, so lock {id} is not held: take the lock before \
                     writing; nothing was written"
                ),
            ),
            Ok(Err(e)) => failed(&e),
        }
    }

    async fn lock_body(request: Request<Incoming>) -> Result<BackendLock, Outcome> {
        let query = query_id(request.uri());
        let (parts, body) = request.into_parts();
        let data = read_body(body, MAX_LOCK_BYTES).await?;
        check_md5(&parts.headers, &data)?;
        if data.iter().all(u8::is_ascii_whitespace) {
            return Ok(BackendLock {
                id: query.unwrap_or_default(),
                ..BackendLock::default()
            });
        }
        let mut lock: BackendLock = serde_json::from_slice(&data).map_err(|e| {
            refused(
                StatusCode::BAD_REQUEST,
                format!("the lock body is not the backend's lock JSON ({e})"),
            )
        })?;
        if lock.id.is_empty() {
            lock.id = query.unwrap_or_default();
        }
        Ok(lock)
    }

    async fn lock(&self, stack: StackName, request: Request<Incoming>) -> Outcome {
        let wanted = match Self::lock_body(request).await {
            Ok(lock) => lock,
            Err(outcome) => return outcome,
        };
        if wanted.id.is_empty() {
            return refused(
                StatusCode::BAD_REQUEST,
                "the lock body has no ID: the backend names its lock".to_string(),
            );
        }
        let who = if wanted.who.is_empty() {
            "unknown (http backend)".to_string()
        } else {
            wanted.who.clone()
        };
        let operation = if wanted.operation.is_empty() {
            "http-lock".to_string()
        } else {
            wanted.operation.clone()
        };
        let ttl = self.lock_ttl;
        let name = stack.clone();
        let id = wanted.id.clone();
        let taken = self
            .blocking(move |store, _| store.lock_as(&name, &id, &who, &operation, ttl))
            .await;
        match taken {
            Err(outcome) => outcome,
            Ok(Ok(held)) => Outcome {
                reply: json(
                    StatusCode::OK,
                    serde_json::to_vec(&BackendLock::of_holder(&held.info)).unwrap_or_default(),
                ),
                detail: format!(
                    "200 locked for {} ({:?}), lock {}",
                    held.info.who, held.info.operation, held.info.id
                ),
            },
            // The client's own lock: a retry of a LOCK whose answer was lost.
            Ok(Err(StateError::Locked(holder))) if holder.id == wanted.id => Outcome {
                reply: json(
                    StatusCode::OK,
                    serde_json::to_vec(&BackendLock::of_holder(&holder)).unwrap_or_default(),
                ),
                detail: format!("200 already held by this client, lock {}", holder.id),
            },
            Ok(Err(StateError::Locked(holder))) => locked(&holder),
            Ok(Err(StateError::CorruptLock { stack, id, reason })) => {
                let holder = LockInfo {
                    id: id.clone(),
                    stack: stack.clone(),
                    who: "unknown (not a plumb lock)".to_string(),
                    operation: "?".to_string(),
                    created: "?".to_string(),
                    expires: "?".to_string(),
                };
                let mut outcome = locked(&holder);
                outcome.detail = format!(
                    "{}: {reason}; break it with `plumb state force-unlock --stack {stack} \
                     --lock-id {id}`",
                    outcome.detail
                );
                outcome
            }
            Ok(Err(e)) => failed(&e),
        }
    }

    async fn unlock(&self, stack: StackName, request: Request<Incoming>) -> Outcome {
        let wanted = match Self::lock_body(request).await {
            Ok(lock) => lock,
            Err(outcome) => return outcome,
        };
        if wanted.id.is_empty() {
            // `terraform force-unlock` sends no lock body: it cannot say which lock it breaks.
            return refused(
                StatusCode::CONFLICT,
                format!(
                    "an unlock must name the lock it releases (the backend sends its lock body; \
                     force-unlock sends none): break a lock with `plumb state force-unlock \
                     --stack {stack} --lock-id ID`, which also completes an interrupted write"
                ),
            );
        }
        let name = stack.clone();
        let id = wanted.id.clone();
        let released = self
            .blocking(move |store, _| match store.unlock(&name, &id) {
                Ok(()) => Ok(Released::Now),
                // Gone already: what an unlock wants (a retry whose answer was lost sees this).
                Err(StateError::NotLocked(_)) => Ok(Released::Already),
                Err(StateError::LockMismatch { .. }) => Ok(match store.current_lock(&name)? {
                    Some(holder) => Released::HeldByOther(holder),
                    None => Released::Already,
                }),
                Err(e) => Err(e),
            })
            .await;
        match released {
            Err(outcome) => outcome,
            Ok(Ok(Released::Now)) => Outcome {
                reply: text(StatusCode::OK, &format!("stack {stack}: unlocked")),
                detail: format!("200 released lock {}", wanted.id),
            },
            Ok(Ok(Released::Already)) => Outcome {
                reply: text(StatusCode::OK, &format!("stack {stack}: not locked")),
                detail: format!("200 lock {} was not held (already released)", wanted.id),
            },
            Ok(Ok(Released::HeldByOther(holder))) => {
                let mut outcome = locked(&holder);
                outcome.detail = format!(
                    "{}; the unlock of lock {} was refused",
                    outcome.detail, wanted.id
                );
                outcome
            }
            Ok(Err(e)) => failed(&e),
        }
    }
}

/// What an unlock found.
enum Released {
    Now,
    Already,
    HeldByOther(LockInfo),
}

fn allow(reply: &mut Reply, methods: &'static str) {
    reply
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static(methods));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_becomes_the_lock_body_the_backend_decodes() {
        let holder = LockInfo {
            id: "3f1c".to_string(),
            stack: "network".to_string(),
            who: "ops@laptop".to_string(),
            operation: "manual".to_string(),
            created: "2026-12-02T06:00:00Z".to_string(),
            expires: "2026-12-02T07:00:00Z".to_string(),
        };
        let body = serde_json::to_value(BackendLock::of_holder(&holder)).unwrap();
        assert_eq!(body["ID"], "3f1c");
        assert_eq!(body["Who"], "ops@laptop");
        assert_eq!(body["Operation"], "manual");
        assert_eq!(body["Created"], "2026-12-02T06:00:00Z");
        assert_eq!(body["Path"], "network");
        // A made-up holder's "?" would fail Go's time decoding: it is left out.
        let unknown = LockInfo {
            created: "?".to_string(),
            ..holder
        };
        let body = serde_json::to_value(BackendLock::of_holder(&unknown)).unwrap();
        assert!(body.get("Created").is_none(), "{body}");
    }

    #[test]
    fn the_lock_id_comes_from_the_query_decoded() {
        let uri = |text: &str| text.parse::<hyper::Uri>().unwrap();
        assert_eq!(
            query_id(&uri("/network?ID=a%2Fb+c")).as_deref(),
            Some("a/b c")
        );
        assert_eq!(
            query_id(&uri("/network?force=1&ID=x")).as_deref(),
            Some("x")
        );
        assert_eq!(query_id(&uri("/network?ID=")), None);
        assert_eq!(
            query_id(&uri("/network?id=x")),
            None,
            "the backend sends ID"
        );
        assert_eq!(query_id(&uri("/network")), None);
    }

    #[test]
    fn a_body_must_match_its_content_md5_when_it_has_one() {
        let mut headers = hyper::HeaderMap::new();
        assert!(
            check_md5(&headers, b"{}").is_ok(),
            "no header, nothing to check"
        );
        // base64 of the MD5 of "{}", as the backend sends it.
        headers.insert(
            "content-md5",
            HeaderValue::from_static("mZFLkyvTelC5g8XnyQrpOw=="),
        );
        assert!(check_md5(&headers, b"{}").is_ok());
        let refused = check_md5(&headers, b"{ }").expect_err("a changed body is refused");
        assert_eq!(refused.reply.status(), StatusCode::BAD_REQUEST);
        headers.insert("content-md5", HeaderValue::from_static("not base64"));
        assert!(check_md5(&headers, b"{}").is_err());
    }

    #[test]
    fn store_errors_map_to_what_the_backend_retries_or_reports() {
        let backend = StateError::Backend(crate::backend::BackendError::io("k", "reset"));
        assert_eq!(status_of(&backend), StatusCode::BAD_GATEWAY, "retried");
        assert_eq!(
            status_of(&StateError::NotLocked("s".to_string())),
            StatusCode::CONFLICT
        );
        let rolled_back = StateError::RolledBack {
            stack: "s".to_string(),
            head: 1,
            above: 3,
        };
        assert_eq!(status_of(&rolled_back), StatusCode::INTERNAL_SERVER_ERROR);
    }

    #[test]
    fn addresses_are_a_stack_or_its_lock() {
        assert!(matches!(Route::parse("/network"), Ok(Route::State(s)) if s.as_str() == "network"));
        assert!(
            matches!(Route::parse("/network/lock"), Ok(Route::Lock(s)) if s.as_str() == "network")
        );
        for bad in ["/", "/network/other", "/a/b/lock", "/../x", "/net work"] {
            assert!(Route::parse(bad).is_err(), "{bad}");
        }
    }
}
