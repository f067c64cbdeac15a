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
#[derive(Debug, Clone)]
pub struct HelmfileRelease {
    pub name: String,
    pub namespace: Option<String>,
    /// `chart:` as written (`oci://ghcr.io/org/charts/cilium`, `repo/name`, `./charts/x`).
    pub chart: Option<String>,
    pub version: Option<String>,
    /// The helmfile file, relative to the repository root, and the release's line.
    pub file: PathBuf,
    pub line: usize,
    /// What rendering it takes, or why it is not rendered.
    pub plan: Result<HelmfilePlan, Unplanned>,
    /// The release's mapping in the helmfile, for diagnostics.
    pub origin: Option<plumb_yaml::Node>,
    /// The helmfile passes helm `--include-crds` (`helmDefaults.args`), a flag of `helm
    /// template` only: the file is rendered for its CRDs (`helmfile template | kubectl apply`),
    /// never installed as releases.
    pub crds_only: bool,
}

/// Everything `helm template` needs for a plain helmfile release.
#[derive(Debug, Clone, PartialEq)]
pub struct HelmfilePlan {
    pub chart: HelmfileChart,
    /// The `values:` entries (YAML files relative to the helmfile, inline maps) merged in
    /// order, as helm merges the `--values` files helmfile hands it.
    pub values: serde_json::Value,
    /// `set:` entries as `--set` lines (`name=value`), in order.
    pub set: Vec<String>,
}

/// Where a helmfile release's chart comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HelmfileChart {
    /// `repo/name` of a `repositories:` entry: its name, its URL (`oci://…` for `oci: true`)
    /// and the chart's name.
    Repository {
        repository: String,
        url: String,
        oci: bool,
        chart: String,
    },
    /// `oci://host/path/name`: the repository part and the chart's name.
    Oci { url: String, chart: String },
    /// A chart directory (absolute).
    Local(PathBuf),
}

/// Why a helmfile release is not rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unplanned {
    /// What helmfile would compute and plumb does not (templating, secrets, chartify):
    /// never guessed, reported not rendered.
    NotEvaluated(String),
    /// helmfile itself would fail (a values file that is missing or not YAML, a chart that
    /// is neither a repository's nor a directory).
    Invalid(String),
}

/// The message of a release whose values or chart helmfile templating computes.
pub const TEMPLATING: &str = "helmfile templating is not evaluated";

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
/// layouts when `dirs` is empty, read through `fs`, a file system confined to `root` (the
/// build's, which may have read and parsed the files already).
pub fn load(fs: &FileSystem, root: &Path, dirs: &[String], entry: &str) -> Bootstrap {
    let mut out = Bootstrap::default();
    let listed: Vec<String> = if dirs.is_empty() {
        DEFAULT_DIRS.iter().map(|d| d.to_string()).collect()
    } else {
        dirs.iter().map(|d| source::clean_relative(d)).collect()
    };
    let entry_parts: Vec<&str> = entry.split('/').collect();
    let walk = Walk {
        root,
        fs,
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
            } else if file_type.is_file()
                && (Self::is_manifest_name(&name) || Self::is_helmfile_template(&name))
            {
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

    /// A helmfile that helmfile renders as a template before reading it
    /// (`helmfile.yaml.gotmpl`): its releases are listed, never rendered.
    fn is_helmfile_template(name: &str) -> bool {
        name.ends_with(".yaml.gotmpl") || name.ends_with(".yml.gotmpl")
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
                    origin: Some(std::sync::Arc::new(r.node)),
                });
            }
        }
    }

    /// A manifest's objects, or a helmfile file's releases. Files that are not YAML (helmfile
    /// templates) are not bootstrap objects and are passed over.
    fn file(&self, path: &Path, out: &mut Bootstrap) {
        let root = self.root;
        let Ok(docs) = self.fs.read_documents(path) else {
            return;
        };
        let rel = relative(root, path);
        let mut used = false;
        for doc in docs.iter() {
            if let Some(releases) = doc.get("releases").and_then(|r| r.as_sequence()) {
                used = true;
                let dir = path.parent().unwrap_or(root);
                let crds_only = docs.iter().any(|d| {
                    d.get_path(&["helmDefaults", "args"])
                        .and_then(|a| a.as_sequence())
                        .is_some_and(|args| {
                            args.iter().any(|a| {
                                a.scalar_value().is_some_and(|v| {
                                    v.split_whitespace().any(|w| w == "--include-crds")
                                })
                            })
                        })
                });
                let file = Helmfile {
                    walk: self,
                    docs: &docs,
                    dir,
                    templated: path.to_string_lossy().ends_with(".gotmpl"),
                };
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
                        plan: file.plan(r),
                        origin: Some(r.clone()),
                        crds_only,
                    });
                }
                continue;
            }
            if path.to_string_lossy().ends_with(".gotmpl") {
                continue;
            }
            let Ok(value) = plumb_yaml::to_json(doc) else {
                continue;
            };
            let object = Object {
                value,
                origin: Some(std::sync::Arc::new(doc.clone())),
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

/// One document of a helmfile file, read for its releases.
struct Helmfile<'a> {
    walk: &'a Walk<'a>,
    /// Its documents: helmfile merges the parts of a file, so a repository or `bases:` of one
    /// part holds for the releases of the others.
    docs: &'a [plumb_yaml::Node],
    /// The helmfile's directory (absolute): where its relative paths start.
    dir: &'a Path,
    /// The file is a `.gotmpl`: helmfile renders it before reading it.
    templated: bool,
}

/// Release keys that make helmfile transform the chart or its output (its chartify step, a
/// helm post-renderer): what they produce is not plain helm output.
const TRANSFORMING_KEYS: [&str; 8] = [
    "strategicMergePatches",
    "jsonPatches",
    "transformers",
    "dependencies",
    "forceNamespace",
    "adopt",
    "postRenderer",
    "postRendererArgs",
];

impl Helmfile<'_> {
    /// The chart, values and `--set` lines of `release`, or why it is not rendered.
    fn plan(&self, release: &plumb_yaml::Node) -> Result<HelmfilePlan, Unplanned> {
        let templating = |what: &str| Unplanned::NotEvaluated(format!("{TEMPLATING} ({what})"));
        if self.templated {
            return Err(templating("the helmfile is a .gotmpl template"));
        }
        if self.docs.iter().any(|d| d.get("bases").is_some()) {
            return Err(templating("bases:"));
        }
        // A `templates:` entry merged with `<<` is plain YAML (the parser merges it, as
        // go-yaml does); `inherit:` is helmfile's own.
        for key in ["inherit", "valuesTemplate", "setTemplate"] {
            if release.get(key).is_some() {
                return Err(templating(&format!("{key}:")));
            }
        }
        // Unquoted, `{{ env "V" }}` reads as YAML of another shape (a flow mapping whose key
        // is a mapping), which is no mistake of the release: helmfile renders it first. So the
        // text is asked before the value.
        if release
            .span
            .as_ref()
            .is_some_and(|span| span.text().contains("{{"))
        {
            return Err(templating("`{{` in the release"));
        }
        let value = plumb_yaml::to_json(release).map_err(|e| {
            Unplanned::Invalid(format!("the release is not YAML helmfile reads: {e}"))
        })?;
        if value.to_string().contains("{{") {
            return Err(templating("`{{` in the release"));
        }
        if value["installed"] == serde_json::Value::Bool(false) {
            return Err(Unplanned::NotEvaluated(
                "installed: false: helmfile does not install it".into(),
            ));
        }
        if value["secrets"].as_array().is_some_and(|s| !s.is_empty()) {
            return Err(Unplanned::NotEvaluated(
                "secrets: helm-secrets decryption is not run".into(),
            ));
        }
        for key in TRANSFORMING_KEYS {
            let v = &value[key];
            let empty = v.is_null()
                || v == &serde_json::Value::Bool(false)
                || v.as_array().is_some_and(Vec::is_empty);
            if !empty {
                return Err(Unplanned::NotEvaluated(format!(
                    "{key}: helmfile transforms the chart or its output, which plumb does not do"
                )));
            }
        }
        Ok(HelmfilePlan {
            chart: self.chart(&value)?,
            values: self.values(release, &value)?,
            set: set_lines(&value["set"])?,
        })
    }

    fn chart(&self, release: &serde_json::Value) -> Result<HelmfileChart, Unplanned> {
        let Some(chart) = release["chart"].as_str().filter(|c| !c.is_empty()) else {
            return Err(Unplanned::Invalid("the release has no chart:".into()));
        };
        if let Some(rest) = chart.strip_prefix("oci://") {
            return match rest.trim_end_matches('/').rsplit_once('/') {
                Some((repo, name)) if !repo.is_empty() && !name.is_empty() => {
                    Ok(HelmfileChart::Oci {
                        url: format!("oci://{repo}"),
                        chart: name.to_string(),
                    })
                }
                _ => Err(Unplanned::Invalid(format!(
                    "chart {chart}: an OCI chart is oci://host/path/name"
                ))),
            };
        }
        if let Some((repo, name)) = chart.split_once('/') {
            if let Some(r) = self.repository(repo) {
                let (url, oci) = r?;
                return Ok(HelmfileChart::Repository {
                    repository: repo.to_string(),
                    url,
                    oci,
                    chart: name.to_string(),
                });
            }
        }
        // Anything else is a chart directory, relative to the helmfile.
        match within(self.walk.root, self.dir, chart) {
            Some(dir) if self.walk.fs.is_file(&dir.join("Chart.yaml")) => {
                Ok(HelmfileChart::Local(dir))
            }
            _ => Err(Unplanned::Invalid(format!(
                "chart {chart}: no repository of that name in repositories:, and no chart directory at that path in the repository"
            ))),
        }
    }

    /// The URL of the repository `name` of `repositories:` (`oci://…` when `oci: true`).
    fn repository(&self, name: &str) -> Option<Result<(String, bool), Unplanned>> {
        let entry = self
            .docs
            .iter()
            .filter_map(|d| d.get("repositories").and_then(|r| r.as_sequence()))
            .flatten()
            .find(|r| r.str_at(&["name"]) == Some(name))?;
        let Some(url) = entry.str_at(&["url"]).filter(|u| !u.is_empty()) else {
            return Some(Err(Unplanned::Invalid(format!(
                "repository {name} has no url:"
            ))));
        };
        if url.contains("{{") {
            return Some(Err(Unplanned::NotEvaluated(format!(
                "{TEMPLATING} (the url of repository {name})"
            ))));
        }
        let oci = entry.str_at(&["oci"]).is_some_and(|o| o == "true");
        let url = if oci && !url.starts_with("oci://") {
            format!("oci://{}", url.trim_end_matches('/'))
        } else {
            url.to_string()
        };
        Some(Ok((url, oci)))
    }

    /// `values:` merged in order: files relative to the helmfile, inline maps.
    fn values(
        &self,
        release: &plumb_yaml::Node,
        value: &serde_json::Value,
    ) -> Result<serde_json::Value, Unplanned> {
        let missing_ok = matches!(
            value["missingFileHandler"].as_str(),
            Some("Warn" | "Info" | "Debug")
        );
        let mut files: Vec<(String, String)> = Vec::new();
        for (i, entry) in release
            .get("values")
            .and_then(|v| v.as_sequence())
            .into_iter()
            .flatten()
            .enumerate()
        {
            if entry.is_mapping() {
                let inline = plumb_yaml::to_json(entry)
                    .map_err(|e| Unplanned::Invalid(format!("values[{i}]: {e}")))?;
                files.push((format!("values[{i}]"), inline.to_string()));
                continue;
            }
            let Some(path) = entry.scalar_value() else {
                return Err(Unplanned::Invalid(format!(
                    "values[{i}] is neither a file nor a map"
                )));
            };
            if path.ends_with(".gotmpl") {
                return Err(Unplanned::NotEvaluated(format!(
                    "{TEMPLATING} (values file {path})"
                )));
            }
            let Some(file) = within(self.walk.root, self.dir, path) else {
                return Err(Unplanned::Invalid(format!(
                    "values file {path} leads outside the repository"
                )));
            };
            match self.walk.fs.read_text(&file) {
                Ok(text) => {
                    let rel = relative(self.walk.root, &file);
                    // A name that is not the chart's own values.yaml: read as helm reads -f.
                    let name = if rel == Path::new("values.yaml") {
                        file.display().to_string()
                    } else {
                        rel.display().to_string()
                    };
                    files.push((name, text));
                }
                Err(_) if missing_ok => continue,
                Err(_) => {
                    return Err(Unplanned::Invalid(format!(
                        "values file {path} does not exist (relative to the helmfile)"
                    )))
                }
            }
        }
        plumb_helm::values::merge_values_files(&files)
            .map_err(|e| Unplanned::Invalid(format!("values: {e}")))
    }
}

/// `set:` entries with a name and a plain value, as `--set name=value`; anything helmfile
/// would escape or read from a file is not passed on.
fn set_lines(set: &serde_json::Value) -> Result<Vec<String>, Unplanned> {
    let mut out = Vec::new();
    for entry in set.as_array().into_iter().flatten() {
        let name = entry["name"].as_str().unwrap_or("");
        let value = match &entry["value"] {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            serde_json::Value::Bool(b) => Some(b.to_string()),
            _ => None,
        };
        match value {
            Some(v)
                if !name.is_empty()
                    && !v.contains([',', '\\', '{', '}', '[', ']'])
                    && entry.get("file").is_none() =>
            {
                out.push(format!("{name}={v}"))
            }
            _ => {
                return Err(Unplanned::NotEvaluated(format!(
                    "set: {name:?}: only a name with a plain value is passed on (helmfile escapes the rest)"
                )))
            }
        }
    }
    Ok(out)
}

/// `path` (relative to `dir`) inside `root`, `..` resolved; `None` when it leaves `root` or
/// is absolute.
fn within(root: &Path, dir: &Path, path: &str) -> Option<PathBuf> {
    if path.starts_with('/') {
        return None;
    }
    let start = dir.strip_prefix(root).ok()?;
    let mut parts: Vec<String> = start
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p.to_string()),
        }
    }
    Some(root.join(parts.join("/")))
}

fn relative(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root).unwrap_or(path).to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_at(root: &Path, dirs: &[String], entry: &str) -> Bootstrap {
        let fs = FileSystem::confined(root).expect("the test's tree");
        load(&fs, root, dirs, entry)
    }

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
        let b = load_at(root, &[], "kubernetes/flux/cluster");
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
        let b = load_at(root, &[], "kubernetes/main/flux/cluster");
        let names: Vec<&str> = b.objects.iter().map(Object::name).collect();
        assert_eq!(names, vec!["key-main"]);
    }

    fn plans(files: &[(&str, &str)]) -> Vec<(String, Result<HelmfilePlan, Unplanned>)> {
        let t = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            write(t.path(), rel, text);
        }
        load_at(t.path(), &[], "clusters/dev")
            .releases
            .into_iter()
            .map(|r| (r.name, r.plan))
            .collect()
    }

    #[test]
    fn a_plain_release_reads_its_chart_values_in_order_and_set() {
        let got = plans(&[
            ("bootstrap/values/a.yaml", "replicas: 1\nimage: {tag: '1.0', repo: x}\n"),
            (
                "bootstrap/helmfile.yaml",
                "repositories:\n  - name: jetstack\n    url: https://charts.jetstack.io\n  - name: mirror\n    url: ghcr.io/org/charts\n    oci: true\n---\nreleases:\n  - name: cert-manager\n    namespace: cert-manager\n    chart: jetstack/cert-manager\n    version: v1.18.2\n    values:\n      - values/a.yaml\n      - image: {tag: '2.0'}\n        replicas: 3\n    set:\n      - name: installCRDs\n        value: true\n  - name: cilium\n    chart: mirror/cilium\n  - name: spegel\n    chart: oci://ghcr.io/spegel-org/helm-charts/spegel\n",
            ),
        ]);
        let plan = |i: usize| got[i].1.as_ref().unwrap();
        // helmfile merges a file's parts: `mirror` of the first part serves the second's.
        assert_eq!(got.len(), 3);
        assert_eq!(
            plan(0).chart,
            HelmfileChart::Repository {
                repository: "jetstack".into(),
                url: "https://charts.jetstack.io".into(),
                oci: false,
                chart: "cert-manager".into(),
            }
        );
        assert_eq!(
            plan(0).values,
            serde_json::json!({"replicas": 3, "image": {"tag": "2.0", "repo": "x"}})
        );
        assert_eq!(plan(0).set, vec!["installCRDs=true"]);
        assert_eq!(
            plan(1).chart,
            HelmfileChart::Repository {
                repository: "mirror".into(),
                url: "oci://ghcr.io/org/charts".into(),
                oci: true,
                chart: "cilium".into(),
            }
        );
        assert_eq!(
            plan(2).chart,
            HelmfileChart::Oci {
                url: "oci://ghcr.io/spegel-org/helm-charts".into(),
                chart: "spegel".into(),
            }
        );
    }

    #[test]
    fn templating_is_reported_never_guessed() {
        let helmfile = "templates:\n  default: &default\n    namespace: kube-system\nreleases:\n  - name: gotmpl\n    chart: oci://r.io/c/a\n    values: [values.yaml.gotmpl]\n  - name: braces\n    chart: oci://r.io/c/a\n    version: '{{ .Values.version }}'\n  - name: unquoted\n    chart: oci://r.io/c/a\n    version: {{ env \"VERSION\" }}\n  - name: merged\n    <<: *default\n    chart: oci://r.io/c/a\n  - name: inherits\n    inherit: [{template: default}]\n    chart: oci://r.io/c/a\n  - name: secret\n    chart: oci://r.io/c/a\n    secrets: [s.yaml]\n";
        let mut got = plans(&[("bootstrap/helmfile.yaml", helmfile)]);
        // The `templates:` entry merged with `<<` is YAML, not templating.
        let merged = got.remove(3);
        assert_eq!(merged.0, "merged");
        assert!(merged.1.is_ok(), "{merged:?}");
        let why: Vec<String> = got
            .iter()
            .map(|(_, p)| match p {
                Err(Unplanned::NotEvaluated(why)) => why.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            why,
            vec![
                format!("{TEMPLATING} (values file values.yaml.gotmpl)"),
                format!("{TEMPLATING} (`{{{{` in the release)"),
                // sulibot/home-ops: unquoted, it is no YAML scalar, yet no mistake either.
                format!("{TEMPLATING} (`{{{{` in the release)"),
                format!("{TEMPLATING} (inherit:)"),
                "secrets: helm-secrets decryption is not run".to_string(),
            ]
        );
        // A templated helmfile is listed, not rendered.
        let got = plans(&[(
            "bootstrap/helmfile.yaml.gotmpl",
            "releases:\n  - name: a\n    chart: oci://r.io/c/a\n",
        )]);
        assert_eq!(
            got[0].1,
            Err(Unplanned::NotEvaluated(format!(
                "{TEMPLATING} (the helmfile is a .gotmpl template)"
            )))
        );
    }

    #[test]
    fn local_charts_and_missing_values_files() {
        let got = plans(&[
            ("charts/base/Chart.yaml", "apiVersion: v2\nname: base\nversion: 0.1.0\n"),
            (
                "bootstrap/helmfile/core.yaml",
                "releases:\n  - name: base\n    chart: ../../charts/base\n  - name: gone\n    chart: ../../charts/base\n    values: [absent.yaml]\n  - name: tolerated\n    chart: ../../charts/base\n    missingFileHandler: Warn\n    values: [absent.yaml]\n  - name: nowhere\n    chart: nothing/here\n  - name: outside\n    chart: ../../../etc\n",
            ),
        ]);
        match &got[0].1 {
            Ok(p) => assert!(
                matches!(&p.chart, HelmfileChart::Local(d) if d.ends_with("charts/base")),
                "{p:?}"
            ),
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(&got[1].1, Err(Unplanned::Invalid(why)) if why.contains("absent.yaml")),
            "{:?}",
            got[1].1
        );
        assert!(got[2].1.is_ok(), "{:?}", got[2].1);
        assert!(
            matches!(&got[3].1, Err(Unplanned::Invalid(_))),
            "{:?}",
            got[3].1
        );
        assert!(
            matches!(&got[4].1, Err(Unplanned::Invalid(_))),
            "{:?}",
            got[4].1
        );
    }
}
