//! `plumb state serve`: the state store as the `http` backend of OpenTofu and Terraform.
//!
//! One HTTP/1.1 server (hyper; TLS by rustls) maps the backend's requests onto a
//! [`StateStore`], so every state a stack writes becomes a new immutable, encrypted version, and
//! its lock is the store's lock. Before it listens, the server probes its store and refuses one
//! that does not honour conditional writes: a backend that cannot lock must not pretend to.
//!
//! ```no_run
//! use plumb_state::serve::{Credentials, ServeConfig, Server};
//! use plumb_state::{probe::ProbeOptions, Keys, StateStore, StoreLocation};
//! use std::sync::Arc;
//!
//! let store = StateStore::new(StoreLocation::parse("/var/lib/plumb/state")?.open()?);
//! let (keys, _identity) = Keys::generate();
//! let config = ServeConfig {
//!     listen: "127.0.0.1:8750".parse().unwrap(),
//!     tls: None,
//!     credentials: Credentials::new("tofu", "a long random password").unwrap(),
//!     keys,
//!     allow_unsafe_store: false,
//!     lock_ttl: std::time::Duration::from_secs(3600),
//!     probe: ProbeOptions::default(),
//! };
//! let server = Server::start(store, config, Arc::new(|line: &str| eprintln!("{line}")))
//!     .expect("the store passes the probe");
//! server.run_until_signal().expect("served");
//! # Ok::<(), plumb_state::StateError>(())
//! ```

mod auth;
mod protocol;
mod tls;

pub use auth::Credentials;

use crate::probe::{probe, reach, ProbeOptions};
use crate::store::StateStore;
use crate::Keys;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How long a client may take to send a request's headers, and a TLS handshake to finish.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a stop waits for the requests in flight (a write finishes; nothing new starts).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(60);

/// The server's log: one line per operation, never a state body or a credential.
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// A PEM certificate chain and the PEM private key that goes with it.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The certificate chain, leaf first (PEM `CERTIFICATE` blocks).
    pub cert: PathBuf,
    /// Its private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// How to serve.
pub struct ServeConfig {
    /// The address to listen on; beyond loopback only with `tls`. Port 0 picks a free port
    /// (the log says which).
    pub listen: SocketAddr,
    /// Serve HTTPS with this certificate; `None` serves plain HTTP (loopback only).
    pub tls: Option<TlsFiles>,
    /// The username/password pairs accepted; every request without one is refused.
    pub credentials: Credentials,
    /// The store's keys: they must decrypt (an identity or a passphrase), since the server
    /// reads the state it serves.
    pub keys: Keys,
    /// Serve a store that failed the probe, with a warning in the log.
    pub allow_unsafe_store: bool,
    /// The expiry written into locks the backend takes (advice for people, as for every lock).
    pub lock_ttl: Duration,
    /// How hard the startup probe races the store.
    pub probe: ProbeOptions,
}

/// Why the server did not start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "--listen {0}: not a loopback address, and state and credentials must not cross a \
         network in plain text: give --tls-cert and --tls-key, or listen on 127.0.0.1"
    )]
    PlaintextBeyondLoopback(SocketAddr),
    #[error(
        "the server must decrypt the state it serves: give --identity FILE (or set \
         PLUMB_STATE_IDENTITY or PLUMB_STATE_PASSPHRASE); recipients alone only encrypt"
    )]
    NoDecryptingKey,
    #[error("TLS: {path}: {reason}")]
    Tls { path: String, reason: String },
    #[error("cannot listen on {addr}: {reason}")]
    Bind { addr: SocketAddr, reason: String },
    #[error("could not test the store: {0}")]
    Unreachable(String),
    #[error(
        "refusing to serve {store}: it failed the probe ({failed}), so its locks and versions \
         cannot be trusted: a backend that cannot lock must not pretend to. See `plumb state \
         probe --store URL` for the report; --allow-unsafe-store serves it anyway"
    )]
    UnsafeStore { store: String, failed: String },
    #[error("async runtime: {0}")]
    Runtime(String),
}

/// A server that passed its checks and holds its listening socket.
pub struct Server {
    listener: std::net::TcpListener,
    address: SocketAddr,
    tls: Option<Arc<rustls::ServerConfig>>,
    service: Arc<protocol::Service>,
    runtime: tokio::runtime::Runtime,
}

fn timestamped(log: &Log) -> Log {
    let log = log.clone();
    Arc::new(move |line: &str| {
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        log(&format!("{now} {line}"));
    })
}

impl Server {
    /// Checks the configuration, probes the store and binds the address: everything that can
    /// refuse to start, refuses here, before a client can connect.
    pub fn start(store: StateStore, config: ServeConfig, log: Log) -> Result<Server, ServeError> {
        let log = timestamped(&log);
        if config.tls.is_none() && !config.listen.ip().is_loopback() {
            return Err(ServeError::PlaintextBeyondLoopback(config.listen));
        }
        if !config.keys.can_decrypt() {
            return Err(ServeError::NoDecryptingKey);
        }
        let tls = config.tls.as_ref().map(tls::server_config).transpose()?;
        let describe = store.backend().describe();
        reach(store.backend()).map_err(ServeError::Unreachable)?;
        log(&format!("probing {describe} before serving it"));
        let report = probe(store.backend(), &config.probe);
        if let Some(e) = &report.cleanup_error {
            log(&format!(
                "note: the probe's scratch objects under .plumb-probe/ were not all removed: {e}"
            ));
        }
        if report.passed {
            log(&format!(
                "probe of {describe}: safe, all {} properties honoured",
                report.checks.len()
            ));
        } else {
            let failed = report
                .checks
                .iter()
                .filter(|c| !c.ok)
                .map(|c| format!("{}: {}", c.name, c.detail))
                .collect::<Vec<_>>()
                .join("; ");
            if !config.allow_unsafe_store {
                return Err(ServeError::UnsafeStore {
                    store: describe,
                    failed,
                });
            }
            log(&format!(
                "WARNING: {describe} FAILED the probe ({failed}). Serving it anyway because \
                 --allow-unsafe-store was given: two clients can both hold a lock and versions \
                 can be lost or overwritten on this store. Do not use it for state that matters."
            ));
        }
        let listener =
            std::net::TcpListener::bind(config.listen).map_err(|e| ServeError::Bind {
                addr: config.listen,
                reason: e.to_string(),
            })?;
        let bind_error = |e: std::io::Error| ServeError::Bind {
            addr: config.listen,
            reason: e.to_string(),
        };
        listener.set_nonblocking(true).map_err(bind_error)?;
        let address = listener.local_addr().map_err(bind_error)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("plumb-serve")
            .enable_all()
            .build()
            .map_err(|e| ServeError::Runtime(e.to_string()))?;
        let service = Arc::new(protocol::Service {
            store: Arc::new(store),
            keys: Arc::new(config.keys),
            credentials: config.credentials,
            lock_ttl: config.lock_ttl,
            log,
        });
        Ok(Server {
            listener,
            address,
            tls,
            service,
            runtime,
        })
    }

    /// The address the server listens on (with the port chosen, when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// The base URL of the backend's `address` (`http://127.0.0.1:8750`), a stack's state
    /// being at `/<stack>`.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.address)
    }

    /// Serves until Ctrl-C (SIGINT) or SIGTERM, then lets the requests in flight finish.
    pub fn run_until_signal(self) -> Result<(), ServeError> {
        self.run(async {
            #[cfg(unix)]
            {
                use tokio::signal::unix::{signal, SignalKind};
                match signal(SignalKind::terminate()) {
                    Ok(mut terminate) => {
                        tokio::select! {
                            _ = tokio::signal::ctrl_c() => "SIGINT",
                            _ = terminate.recv() => "SIGTERM",
                        }
                    }
                    Err(_) => {
                        let _ = tokio::signal::ctrl_c().await;
                        "SIGINT"
                    }
                }
            }
            #[cfg(not(unix))]
            {
                let _ = tokio::signal::ctrl_c().await;
                "Ctrl-C"
            }
        })
    }

    /// Serves until `stop` resolves (to the reason, for the log), then lets the requests in
    /// flight finish (at most a minute) and returns.
    pub fn run(self, stop: impl Future<Output = &'static str>) -> Result<(), ServeError> {
        let Server {
            listener,
            address,
            tls,
            service,
            runtime,
        } = self;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let log = service.log.clone();
        let stopped = log.clone();
        // The last handle on the store is dropped outside the runtime: an S3 store owns a
        // runtime of its own, which cannot be dropped from async code.
        let store_owner = service.clone();
        let result = runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| {
                ServeError::Bind {
                    addr: address,
                    reason: e.to_string(),
                }
            })?;
            log(&format!(
                "listening on {scheme}://{address} (backend \"http\" address = \
                 \"{scheme}://{address}/<stack>\")"
            ));
            let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
            let graceful = hyper_util::server::graceful::GracefulShutdown::new();
            let mut stop = std::pin::pin!(stop);
            let reason = loop {
                tokio::select! {
                    reason = &mut stop => break reason,
                    accepted = listener.accept() => {
                        let (stream, peer) = match accepted {
                            Ok(accepted) => accepted,
                            Err(e) => {
                                // Out of file descriptors and the like: wait, do not spin.
                                log(&format!("accept failed: {e}"));
                                tokio::time::sleep(Duration::from_millis(100)).await;
                                continue;
                            }
                        };
                        let watcher = graceful.watcher();
                        let service = service.clone();
                        let acceptor = acceptor.clone();
                        tokio::spawn(async move {
                            match acceptor {
                                None => connection(TokioIo::new(stream), peer, service, watcher).await,
                                Some(acceptor) => {
                                    let log = service.log.clone();
                                    match tokio::time::timeout(HEADER_TIMEOUT, acceptor.accept(stream)).await {
                                        Ok(Ok(tls)) => connection(TokioIo::new(tls), peer, service, watcher).await,
                                        Ok(Err(e)) => log(&format!("TLS handshake from {peer} failed: {e}")),
                                        Err(_) => log(&format!("TLS handshake from {peer} timed out")),
                                    }
                                }
                            }
                        });
                    }
                }
            };
            drop(listener);
            let open = graceful.count();
            log(&format!(
                "{reason}: stopping; {open} connection(s) open, requests in flight finish first"
            ));
            if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
                .await
                .is_err()
            {
                log("requests still in flight after a minute: stopping without them");
            }
            Ok(())
        });
        // Store operations run on blocking threads: a write in progress completes before this
        // returns (dropping the runtime waits for them).
        drop(runtime);
        drop(store_owner);
        if result.is_ok() {
            stopped("stopped");
        }
        result
    }
}

async fn connection<I>(
    io: TokioIo<I>,
    peer: SocketAddr,
    service: Arc<protocol::Service>,
    watcher: hyper_util::server::graceful::Watcher,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let handler = hyper::service::service_fn(move |request| {
        let service = service.clone();
        async move { Ok::<_, std::convert::Infallible>(service.handle(request, peer).await) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT);
    let _ = watcher.watch(builder.serve_connection(io, handler)).await;
}
