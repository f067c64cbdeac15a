//! Which SOPS-encrypted objects a build holds, and for each whether it would be decrypted: the
//! build shows them as committed (still encrypted, as kustomize-controller receives them), so
//! this is how a user learns whether the age keys given decrypt them and whether the
//! Kustomization asks kustomize-controller to (`spec.decryption.provider: sops`).

use crate::build::RepositoryBuild;
use std::path::PathBuf;

/// One SOPS-encrypted object of a Kustomization's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SopsObject {
    /// The entry (cluster) it was built for.
    pub entry: String,
    /// The Kustomization that produces it, `namespace/name`.
    pub kustomization: String,
    /// `Kind namespace/name`.
    pub object: String,
    /// The file it was read from, relative to the repository root.
    pub file: Option<PathBuf>,
    pub decryption: Decryption,
}

/// Whether a SOPS object is decrypted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decryption {
    /// The age keys given decrypt it (and its MAC verifies).
    Decrypted,
    /// No age key was given (`SOPS_AGE_KEY_FILE`, `SOPS_AGE_KEY`).
    NoKey,
    /// The keys given do not decrypt it: why.
    Failed(String),
    /// Its Kustomization has no `spec.decryption.provider: sops`: kustomize-controller applies
    /// it encrypted, whatever key plumb has.
    NotRequested,
}

impl Decryption {
    /// Whether the object's values are known.
    pub fn is_decrypted(&self) -> bool {
        matches!(self, Decryption::Decrypted)
    }

    /// What to tell the user, after the object's name.
    pub fn describe(&self) -> String {
        match self {
            Decryption::Decrypted => {
                "decrypts with the age key given (the output shows it as committed)".to_string()
            }
            Decryption::NoKey => "not decrypted: no age key given (SOPS_AGE_KEY_FILE)".to_string(),
            Decryption::Failed(why) => format!("not decrypted: {why}"),
            Decryption::NotRequested => {
                "not decrypted: its Kustomization has no spec.decryption (provider: sops), so kustomize-controller applies it encrypted".to_string()
            }
        }
    }
}

/// Every SOPS-encrypted object the Kustomizations of `build` produce, in build order, with
/// whether the age keys the build was given decrypt it.
pub fn sops_objects(build: &RepositoryBuild) -> Vec<SopsObject> {
    let keys = build.age_keys.as_deref();
    let mut found = Vec::new();
    for entry in &build.entries {
        for ks in &entry.kustomizations {
            let requested = ks
                .kustomization
                .object
                .value
                .pointer("/spec/decryption/provider")
                .and_then(serde_json::Value::as_str)
                == Some("sops");
            // Only objects with a `sops` mapping are looked at closer: the check runs after every
            // build, over every object.
            let candidates = ks.objects.iter().filter(|o| {
                o.value
                    .get("sops")
                    .is_some_and(serde_json::Value::is_object)
            });
            for object in candidates {
                let converted;
                let node = match &object.origin {
                    Some(node) => node,
                    None => {
                        converted = plumb_yaml::from_json(&object.value);
                        &converted
                    }
                };
                if !crate::sops::is_encrypted(node) {
                    continue;
                }
                let decryption = match keys {
                    _ if !requested => Decryption::NotRequested,
                    None => Decryption::NoKey,
                    Some(keys) => match crate::sops::decrypt_document(node, keys) {
                        Ok(_) => Decryption::Decrypted,
                        Err(e) => Decryption::Failed(e.to_string()),
                    },
                };
                let file = node.span.as_ref().map(|span| {
                    let path = span.file.path();
                    path.strip_prefix(&build.root).unwrap_or(path).to_path_buf()
                });
                let object_name = match object.namespace() {
                    "" => format!("{} {}", object.kind(), object.name()),
                    ns => format!("{} {ns}/{}", object.kind(), object.name()),
                };
                found.push(SopsObject {
                    entry: entry.entry.clone(),
                    kustomization: ks.key(),
                    object: object_name,
                    file,
                    decryption,
                });
            }
        }
    }
    found
}
