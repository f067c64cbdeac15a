//! helm's output for one release, kept on disk so that an unchanged release is not rendered
//! twice: keyed by everything `helm template` reads (the chart's digest, the values, the
//! release name and namespace, the Kubernetes and API versions, the CRD and hook choices, the
//! helm version). One file per key, `<sha256>.json`, written to a temporary file and renamed
//! into place, so concurrent runs never read half a file.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// What a render was: helm's manifest, and whether a second render with the same inputs gave
/// the same text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cached {
    pub manifest: String,
    /// The other render's manifest when the two differed.
    pub differs: Option<String>,
    /// What the render could not do as the cluster does (a schema `$ref` not readable offline,
    /// so validation skipped).
    pub notes: Vec<String>,
}

/// The render cache in `dir` (`<cache>/render/`).
#[derive(Debug, Clone)]
pub struct RenderCache {
    dir: PathBuf,
}

impl RenderCache {
    pub fn new(dir: impl Into<PathBuf>) -> RenderCache {
        RenderCache { dir: dir.into() }
    }

    /// The key of a render's inputs: `parts` in order, each length-prefixed so that no two
    /// different lists give the same text.
    pub fn key(parts: &[&str]) -> String {
        let mut hash = Sha256::new();
        for p in parts {
            hash.update(p.len().to_le_bytes());
            hash.update(p.as_bytes());
        }
        hex::encode(hash.finalize())
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// The cached render for `key`; nothing when absent or unreadable (then it is rendered
    /// again).
    pub fn get(&self, key: &str) -> Option<Cached> {
        let text = std::fs::read_to_string(self.path(key)).ok()?;
        let v: Value = serde_json::from_str(&text).ok()?;
        Some(Cached {
            manifest: v["manifest"].as_str()?.to_string(),
            differs: v["differs"].as_str().map(str::to_string),
            notes: v["notes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        })
    }

    /// Stores a render; a cache that cannot be written only costs a render next time.
    pub fn put(&self, key: &str, cached: &Cached) {
        let _ = write_atomic(
            &self.dir,
            &self.path(key),
            json!({"manifest": cached.manifest, "differs": cached.differs, "notes": cached.notes})
                .to_string(),
        );
    }
}

fn write_atomic(dir: &Path, path: &Path, text: String) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_render_is_kept_and_keys_do_not_collide() {
        let dir = tempfile::tempdir().unwrap();
        let cache = RenderCache::new(dir.path().join("render"));
        let key = RenderCache::key(&["ab", "c"]);
        assert_ne!(key, RenderCache::key(&["a", "bc"]));
        assert_eq!(cache.get(&key), None);
        let c = Cached {
            manifest: "---\nkind: A\n".into(),
            differs: None,
            notes: vec!["validation skipped".into()],
        };
        cache.put(&key, &c);
        assert_eq!(cache.get(&key), Some(c));
    }
}
