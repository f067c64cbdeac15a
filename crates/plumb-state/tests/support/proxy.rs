//! A dishonest S3 front: a proxy on 127.0.0.1 that forwards to moto but breaks conditional
//! writes the way some "S3-compatible" servers do, so the probe can be shown to catch it.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderName, IF_MATCH, IF_NONE_MATCH};
use hyper::{Request, Response, StatusCode};
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Strips `If-Match` and `If-None-Match` before forwarding: every write is unconditional.
    DropConditions,
    /// Evaluates the condition itself with a HEAD request, then forwards the write without it
    /// after a short sleep: right one request at a time, wrong under concurrency.
    CheckThenWrite,
}

pub struct Proxy {
    pub port: u16,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Proxy {
    pub fn start(upstream_port: u16, mode: Mode) -> Proxy {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind proxy");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("address").port();
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("proxy runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                let shared = Arc::new(Shared {
                    upstream: SocketAddr::from((Ipv4Addr::LOCALHOST, upstream_port)),
                    client: reqwest::Client::new(),
                    mode,
                });
                loop {
                    tokio::select! {
                        _ = &mut rx => break,
                        accepted = listener.accept() => {
                            let Ok((stream, _)) = accepted else { continue };
                            let shared = shared.clone();
                            tokio::spawn(async move {
                                let service = hyper::service::service_fn(move |req| {
                                    let shared = shared.clone();
                                    async move { Ok::<_, Infallible>(shared.handle(req).await) }
                                });
                                let io = hyper_util::rt::TokioIo::new(stream);
                                let _ = hyper::server::conn::http1::Builder::new()
                                    .serve_connection(io, service)
                                    .await;
                            });
                        }
                    }
                }
            });
        });
        Proxy {
            port,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Shared {
    upstream: SocketAddr,
    client: reqwest::Client,
    mode: Mode,
}

fn reply(status: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    response
}

impl Shared {
    async fn handle(&self, req: Request<Incoming>) -> Response<Full<Bytes>> {
        let (parts, body) = req.into_parts();
        let Ok(body) = body.collect().await.map(|b| b.to_bytes()) else {
            return reply(StatusCode::BAD_REQUEST);
        };
        let path = parts
            .uri
            .path_and_query()
            .map(|p| p.as_str().to_string())
            .unwrap_or_else(|| "/".to_string());
        let url = format!("http://{}{path}", self.upstream);
        let mut headers = parts.headers.clone();
        headers.remove(hyper::header::HOST);
        let conditional = headers.contains_key(IF_MATCH) || headers.contains_key(IF_NONE_MATCH);
        if conditional {
            if self.mode == Mode::CheckThenWrite {
                if let Some(refusal) = self.check_condition(&parts.uri, &headers).await {
                    return reply(refusal);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            headers.remove(IF_MATCH);
            headers.remove(IF_NONE_MATCH);
        }
        let upstream = self
            .client
            .request(parts.method, url)
            .headers(headers)
            .body(body)
            .send()
            .await;
        let Ok(upstream) = upstream else {
            return reply(StatusCode::BAD_GATEWAY);
        };
        let status = upstream.status();
        let headers = upstream.headers().clone();
        let body = upstream.bytes().await.unwrap_or_default();
        let mut response = Response::new(Full::new(body));
        *response.status_mut() = status;
        for (name, value) in headers.iter() {
            let skip: [HeaderName; 2] =
                [hyper::header::TRANSFER_ENCODING, hyper::header::CONNECTION];
            if !skip.contains(name) {
                response.headers_mut().append(name.clone(), value.clone());
            }
        }
        response
    }

    /// The check a dishonest server makes before its unconditional write.
    async fn check_condition(
        &self,
        uri: &hyper::Uri,
        headers: &hyper::HeaderMap,
    ) -> Option<StatusCode> {
        let url = format!("http://{}{}", self.upstream, uri.path());
        // moto answers anonymous reads of private objects with 403, and does not verify
        // signatures: any credential in the header makes the read authenticated.
        let current = self
            .client
            .head(url)
            .header(
                hyper::header::AUTHORIZATION,
                "AWS4-HMAC-SHA256 Credential=plumb-test/20260101/us-east-1/s3/aws4_request, \
                 SignedHeaders=host, Signature=0",
            )
            .send()
            .await
            .ok()?;
        let exists = current.status().is_success();
        let etag = current
            .headers()
            .get(hyper::header::ETAG)
            .map(|v| v.as_bytes().to_vec());
        if headers.get(IF_NONE_MATCH).is_some() && exists {
            return Some(StatusCode::PRECONDITION_FAILED);
        }
        if let Some(want) = headers.get(IF_MATCH) {
            if !exists {
                return Some(StatusCode::NOT_FOUND);
            }
            if etag.as_deref() != Some(want.as_bytes()) {
                return Some(StatusCode::PRECONDITION_FAILED);
            }
        }
        None
    }
}
