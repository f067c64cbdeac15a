//! A GitRepository's `spec.include`: the artifacts of other GitRepositories copied into its own
//! tree (`fromPath` of the included one to `toPath`, by default the included one's name), as
//! source-controller composes them. The composed tree is one more cache entry, keyed by the
//! trees it is made of, written whole and renamed into place.

use std::fs;
use std::path::{Component, Path, PathBuf};

use crate::cache::Cache;

/// One included artifact: its tree and where its `from` directory goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Included {
    pub tree: PathBuf,
    /// `fromPath`, relative to `tree` (empty: all of it).
    pub from: String,
    /// `toPath`, relative to the composed tree.
    pub to: String,
}

/// Why a composition failed.
#[derive(Debug, thiserror::Error)]
pub enum IncludeError {
    /// `fromPath` or `toPath` leaves its tree, or `fromPath` is not a directory of it.
    #[error("include {path:?}: {reason}")]
    BadPath { path: String, reason: String },
    #[error("cannot write the composed tree in the cache at {}: {source}", dir.display())]
    CacheNotWritable {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Cache {
    /// `base` with each of `includes` copied in, later ones over earlier ones.
    pub fn compose(&self, base: &Path, includes: &[Included]) -> Result<PathBuf, IncludeError> {
        let mut key = base.display().to_string();
        for i in includes {
            let from = relative(&i.from)?;
            let to = relative(&i.to)?;
            if !i.tree.join(&from).is_dir() {
                return Err(IncludeError::BadPath {
                    path: i.from.clone(),
                    reason: "not a directory of the included artifact".into(),
                });
            }
            key.push_str(&format!(
                "\n{}\n{}\n{}",
                i.tree.display(),
                from.display(),
                to.display()
            ));
        }
        let dest = self
            .dir()
            .join("include")
            .join(crate::cache::sha256_hex(&key));
        if dest.is_dir() {
            crate::manage::touch(&dest);
            return Ok(dest);
        }
        let not_writable = |source| IncludeError::CacheNotWritable {
            dir: self.dir().to_path_buf(),
            source,
        };
        let tmp = self.dir().join("tmp");
        fs::create_dir_all(&tmp)
            .and_then(|()| fs::create_dir_all(self.dir().join("include")))
            .map_err(not_writable)?;
        let work = tempfile::Builder::new()
            .prefix("include-")
            .tempdir_in(&tmp)
            .map_err(not_writable)?;
        let staging = work.path().join("tree");
        copy_tree(base, &staging).map_err(not_writable)?;
        for i in includes {
            let target = staging.join(relative(&i.to)?);
            copy_tree(&i.tree.join(relative(&i.from)?), &target).map_err(not_writable)?;
        }
        if let Err(e) = fs::rename(&staging, &dest) {
            // Another run composed the same first: as good as ours.
            if !dest.is_dir() {
                return Err(not_writable(e));
            }
        }
        Ok(dest)
    }
}

/// A path that stays inside its tree, `..` and absolute paths refused.
fn relative(path: &str) -> Result<PathBuf, IncludeError> {
    let mut out = PathBuf::new();
    for c in Path::new(path.trim_start_matches("./")).components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            _ => {
                return Err(IncludeError::BadPath {
                    path: path.to_string(),
                    reason: "leaves the artifact".into(),
                })
            }
        }
    }
    Ok(out)
}

/// Copies the regular files and directories under `from` into `to` (symlinks are not in
/// cached trees), replacing what is there.
pub(crate) fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            if target.is_dir() {
                fs::remove_dir_all(&target)?;
            }
            fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_are_copied_in_and_the_composition_is_cached() {
        let tmp = tempfile::tempdir().unwrap();
        let write = |p: &str, t: &str| {
            let p = tmp.path().join(p);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, t).unwrap();
        };
        write("base/app/a.yaml", "a");
        write("crds/deploy/crds/c.yaml", "c");
        let cache = Cache::new(tmp.path().join("cache"));
        let include = Included {
            tree: tmp.path().join("crds"),
            from: "./deploy/crds".into(),
            to: "app/crds".into(),
        };
        let dir = cache
            .compose(&tmp.path().join("base"), std::slice::from_ref(&include))
            .unwrap();
        assert_eq!(fs::read_to_string(dir.join("app/a.yaml")).unwrap(), "a");
        assert_eq!(
            fs::read_to_string(dir.join("app/crds/c.yaml")).unwrap(),
            "c"
        );
        let again = cache
            .compose(&tmp.path().join("base"), std::slice::from_ref(&include))
            .unwrap();
        assert_eq!(dir, again);
        let escape = Included {
            to: "../out".into(),
            ..include.clone()
        };
        assert!(matches!(
            cache.compose(&tmp.path().join("base"), &[escape]),
            Err(IncludeError::BadPath { .. })
        ));
        let missing = Included {
            from: "nope".into(),
            ..include
        };
        assert!(cache.compose(&tmp.path().join("base"), &[missing]).is_err());
    }
}
