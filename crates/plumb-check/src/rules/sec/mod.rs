//! Secrets: what must never be in Git in plaintext, and SOPS files that must stay decryptable.

pub mod broken_sops_file;
pub mod plaintext_secret;
