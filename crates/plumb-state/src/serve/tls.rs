//! The server's TLS configuration: a PEM certificate chain and its private key, served with
//! rustls over ring (the provider the rest of plumb uses), HTTP/1.1 only.

use super::{ServeError, TlsFiles};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::Arc;

pub(super) fn server_config(files: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, ServeError> {
    let cert_error = |reason: String| ServeError::Tls {
        path: files.cert.display().to_string(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| cert_error(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| cert_error(e.to_string()))?;
    if certs.is_empty() {
        return Err(cert_error(
            "no PEM CERTIFICATE block in the file".to_string(),
        ));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| ServeError::Tls {
        path: files.key.display().to_string(),
        reason: format!("{e} (expected a PEM private key)"),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| cert_error(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| ServeError::Tls {
            path: format!("{} and {}", files.cert.display(), files.key.display()),
            reason: e.to_string(),
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
