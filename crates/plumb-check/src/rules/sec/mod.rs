//! Secrets: what must never be in Git in plaintext, and SOPS files that must stay decryptable.

pub mod broken_sops_file;
pub mod plaintext_secret;

/// A Secret's `data` value as text: its base64 decoded, the line breaks kustomize's
/// secretGenerator puts every 76 characters (and any other white space) left out. `None`
/// when it is not base64 of UTF-8 text.
pub(crate) fn decoded_data(value: &str) -> Option<String> {
    use base64::Engine;
    let compact: String = value.split_whitespace().collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(compact.as_bytes())
        .ok()?;
    String::from_utf8(bytes).ok()
}
