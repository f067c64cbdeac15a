//! What is applied before Flux, at bootstrap: kustomize directories and plain manifests
//! (`kubectl apply -k` / `-f`), and helmfile releases (`helmfile sync` of the core charts).
//! Their objects exist when Flux starts, so a `substituteFrom` of a Secret applied at bootstrap
//! finds it, and a CRD a bootstrap chart installs is there.
//!
//! The directories are `.plumb.yaml`'s `bootstrap:`, else the common layouts `bootstrap/` and
//! `kubernetes/bootstrap/`. A subdirectory named like a part of an entry path (`bootstrap/main`
//! for `kubernetes/main/flux/cluster`) belongs to that cluster only.

use crate::model::Object;
use crate::source;
use plumb_kustomize::FileSystem;
use std::path::{Path, PathBuf};

/// The directories looked in when `.plumb.yaml` lists none.
pub const DEFAULT_DIRS: [&str; 2] = ["bootstrap", "kubernetes/bootstrap"];

/// A release of a helmfile file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelmfileRelease {
    pub name: String,
    pub namespace: Option<String>,
    /// `chart:` as written (`oci://ghcr.io/org/charts/cilium`, `repo/name`).
    pub chart: Option<String>,
    pub version: Option<String>,
    /// The helmfile file, relative to the repository root, and the release's line.
    pub file: PathBuf,
    pub line: usize,
}

/// What one cluster has before Flux.
#[derive(Debug, Clone, Default)]
pub struct Bootstrap {
    /// Objects of the kustomize directories and manifests.
    pub objects: Vec<Object>,
    pub releases: Vec<HelmfileRelease>,
    /// The files read, relative to the repository root.
    pub files: Vec<PathBuf>,
}

/// The bootstrap of the cluster at `entry`: from `dirs` (relative to `root`), or the default
/// layouts when `dirs` is empty.
pub fn load(root: &Path, dirs: &[String], entry: &str) -> Bootstrap {
    let mut out = Bootstrap::default();
    let listed: Vec<String> = if dirs.is_empty() {
        DEFAULT_DIRS.iter().map(|d| d.to_string()).collect()
    } else {
        dirs.iter().map(|d| source::clean_relative(d)).collect()
    };
    let entry_parts: Vec<&str> = entry.split('/').collect();
    // Read as a build reads: nothing outside the repository.
    let Ok(fs) = FileSystem::confined(root) else {
        return out;
    };
    let walk = Walk {
        root,
        fs: &fs,
        entry_parts: &entry_parts,
    };
    for dir in listed {
        let path = source::join(root, &dir);
        if fs.is_dir(&path) {
            walk.dir(&path, &mut out);
        }
    }
    out
}

struct Walk<'a> {
    root: &'a Path,
    fs: &'a FileSystem,
    entry_parts: &'a [&'a str],
}

impl Walk<'_> {
    fn dir(&self, dir: &Path, out: &mut Bootstrap) {
        let entry_parts = self.entry_parts;
        if let Ok(Some(file)) = crate::generate::kustomization_file(self.fs, dir) {
            self.kustomize_dir(&file, out);
            return;
        }
        let Ok(read) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = read.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        // Subdirectories named after a cluster: only the one of this entry, if any is.
        let names: Vec<String> = entries
            .iter()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        let per_cluster = names.iter().any(|n| entry_parts.contains(&n.as_str()));
        // Shared directories are read for every cluster.
        const SHARED: [&str; 5] = [
            "helmfile",
            "helmfile.d",
            "kustomize",
            "templates",
            "resources",
        ];
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(file_type) = e.file_type() else {
                continue;
            };
            if name.starts_with('.') {
                continue;
            }
            if file_type.is_dir() {
                let others = per_cluster
                    && !entry_parts.contains(&name.as_str())
                    && !SHARED.contains(&name.as_str());
                if !others {
                    self.dir(&e.path(), out);
                }
            } else if file_type.is_file() && Self::is_manifest_name(&name) {
                self.file(&e.path(), out);
            }
        }
    }

    /// YAML files, and templates of YAML that a bootstrap script renders before applying
    /// (`secrets.yaml.tpl` for `op inject`, `resources.yaml.j2`): their values are what the template
    /// says, visible references such as `op://vault/item/field`.
    fn is_manifest_name(name: &str) -> bool {
        let base = name
            .strip_suffix(".tpl")
            .or_else(|| name.strip_suffix(".j2"))
            .unwrap_or(name);
        base.ends_with(".yaml") || base.ends_with(".yml")
    }

    fn kustomize_dir(&self, file: &Path, out: &mut Bootstrap) {
        let Ok(k) = plumb_kustomize::Kustomization::load(self.fs, file) else {
            return;
        };
        let options = plumb_kustomize::BuildOptions {
            fs: self.fs.clone(),
            ..Default::default()
        };
        let Ok(list) = plumb_kustomize::build_kustomization(&k, &options) else {
            return;
        };
        out.files.push(relative(self.root, &k.path));
        for r in list.resources {
            if let Ok(value) = plumb_yaml::to_json(&r.node) {
                out.objects.push(Object {
                    value,
                    origin: Some(r.node),
                });
            }
        }
    }

    /// A manifest's objects, or a helmfile file's releases. Files that are not YAML (helmfile
    /// templates) are not bootstrap objects and are passed over.
    fn file(&self, path: &Path, out: &mut Bootstrap) {
        let root = self.root;
        let Ok(text) = self.fs.read_text(path) else {
            return;
        };
        let Ok(docs) = plumb_yaml::parse_documents(path, &text) else {
            return;
        };
        let rel = relative(root, path);
        let mut used = false;
        for doc in &docs {
            if let Some(releases) = doc.get("releases").and_then(|r| r.as_sequence()) {
                used = true;
                for r in releases {
                    let Some(name) = r.str_at(&["name"]) else {
                        continue;
                    };
                    out.releases.push(HelmfileRelease {
                        name: name.to_string(),
                        namespace: r.str_at(&["namespace"]).map(str::to_string),
                        chart: r.str_at(&["chart"]).map(str::to_string),
                        version: r.str_at(&["version"]).map(str::to_string),
                        file: rel.clone(),
                        line: r.span.as_ref().map_or(0, |s| s.location().line),
                    });
                }
                continue;
            }
            let Ok(value) = plumb_yaml::to_json(doc) else {
                continue;
            };
            let object = Object {
                value,
                origin: Some(doc.clone()),
            };
            if !object.api_version().is_empty()
                && !object.kind().is_empty()
                && !object.name().is_empty()
            {
                used = true;
                out.objects.push(object);
            }
        }
        if used {
            out.files.push(rel);
        }
    }
}

fn relative(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root).unwrap_or(path).to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn manifests_kustomize_dirs_and_helmfiles_are_read() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        write(root, "bootstrap/sops-age.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: sops-age, namespace: flux-system}\nstringData: {age.agekey: x}\n");
        write(root, "bootstrap/helmfile/apps.yaml", "releases:\n  - name: cilium\n    namespace: kube-system\n    chart: oci://ghcr.io/home-operations/charts-mirror/cilium\n    version: 1.18.0\n");
        write(
            root,
            "bootstrap/helmfile/templates/values.yaml.gotmpl",
            "{{ .Release.Name }}",
        );
        write(
            root,
            "bootstrap/kustomize/kustomization.yaml",
            "resources: [cm.yaml]\nnamespace: flux-system\n",
        );
        write(
            root,
            "bootstrap/kustomize/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster-settings}\ndata: {A: b}\n",
        );
        let b = load(root, &[], "kubernetes/flux/cluster");
        let names: Vec<String> = b.objects.iter().map(Object::display_id).collect();
        assert_eq!(
            names,
            vec![
                "ConfigMap/flux-system/cluster-settings",
                "Secret/flux-system/sops-age"
            ]
        );
        assert_eq!(b.releases.len(), 1);
        assert_eq!(b.releases[0].name, "cilium");
        assert_eq!(b.releases[0].version.as_deref(), Some("1.18.0"));
        assert_eq!(b.releases[0].line, 2);
    }

    #[test]
    fn a_directory_named_after_another_cluster_is_not_this_one() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        for cluster in ["main", "network"] {
            write(
                root,
                &format!("bootstrap/{cluster}/key.yaml"),
                &format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: key-{cluster}}}\n"),
            );
        }
        let b = load(root, &[], "kubernetes/main/flux/cluster");
        let names: Vec<&str> = b.objects.iter().map(Object::name).collect();
        assert_eq!(names, vec!["key-main"]);
    }
}
