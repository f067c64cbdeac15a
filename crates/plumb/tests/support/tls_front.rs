//! HTTPS in front of a plain HTTP test server: a loopback port that accepts TLS with a
//! self-signed certificate for `127.0.0.1` (rustls, ring) and relays each connection's bytes
//! to and from the backend port, as a TLS-terminating proxy would. The certificate is written
//! as PEM for the client to trust (`SSL_CERT_FILE`).

#![allow(dead_code)]

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

pub struct TlsFront {
    pub port: u16,
    /// The certificate the front presents, PEM.
    pub certificate: PathBuf,
    /// Connections whose TLS handshake completed.
    pub handshakes: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl TlsFront {
    /// Serves TLS on a free port, relaying to `backend` on loopback; the certificate is
    /// written into `dir`.
    pub fn start(backend: u16, dir: &Path) -> TlsFront {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()])
            .expect("self-signed certificate");
        let certificate = dir.join("front.pem");
        std::fs::write(&certificate, certified.cert.pem()).expect("write the certificate");
        let chain = vec![
            CertificateDer::from_pem_slice(certified.cert.pem().as_bytes())
                .expect("certificate PEM"),
        ];
        let key = PrivateKeyDer::from_pem_slice(certified.signing_key.serialize_pem().as_bytes())
            .expect("key PEM");
        let config = Arc::new(
            rustls::ServerConfig::builder()
                .with_no_client_auth()
                .with_single_cert(chain, key)
                .expect("server configuration"),
        );
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let handshakes = Arc::new(AtomicUsize::new(0));
        let (stop2, handshakes2) = (stop.clone(), handshakes.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (config, handshakes) = (config.clone(), handshakes2.clone());
                std::thread::spawn(move || {
                    let _ = relay(stream, backend, config, &handshakes);
                });
            }
        });
        TlsFront {
            port,
            certificate,
            handshakes,
            stop,
        }
    }

    /// `url` (an `http://127.0.0.1:BACKEND/...` URL of the backend) through this front.
    pub fn https(&self, url: &str, backend: u16) -> String {
        url.replace(
            &format!("http://127.0.0.1:{backend}"),
            &format!("https://127.0.0.1:{}", self.port),
        )
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Relays one connection until either side closes. Both sockets read with a short timeout, so
/// that one thread can poll both sides of a connection rustls cannot split.
fn relay(
    client: TcpStream,
    backend: u16,
    config: Arc<rustls::ServerConfig>,
    handshakes: &AtomicUsize,
) -> std::io::Result<()> {
    let tick = Some(Duration::from_millis(2));
    client.set_read_timeout(tick)?;
    let mut tls = rustls::StreamOwned::new(
        rustls::ServerConnection::new(config).map_err(std::io::Error::other)?,
        client,
    );
    let mut plain = TcpStream::connect(("127.0.0.1", backend))?;
    plain.set_read_timeout(tick)?;
    let (mut counted, mut client_done) = (false, false);
    let mut buf = vec![0u8; 64 * 1024];
    let idle = |e: &std::io::Error| matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut);
    loop {
        match tls.read(&mut buf) {
            _ if client_done => {}
            Ok(0) => {
                client_done = true;
                plain.shutdown(Shutdown::Write)?;
            }
            Ok(n) => plain.write_all(&buf[..n])?,
            Err(e) if idle(&e) => {}
            Err(e) => return Err(e),
        }
        if !counted && !tls.conn.is_handshaking() {
            counted = true;
            handshakes.fetch_add(1, Ordering::SeqCst);
        }
        match plain.read(&mut buf) {
            Ok(0) => {
                tls.conn.send_close_notify();
                tls.flush()?;
                return Ok(());
            }
            Ok(n) => {
                tls.write_all(&buf[..n])?;
                tls.flush()?;
            }
            Err(e) if idle(&e) => {}
            Err(e) => return Err(e),
        }
    }
}
