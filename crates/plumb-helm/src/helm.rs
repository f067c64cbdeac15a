//! The `helm` program plumb renders charts with, and one `helm template` run with every input
//! explicit (release, namespace, values, Kubernetes version, API versions, CRDs, hooks), so the
//! render depends on nothing but its arguments.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why no usable `helm` was found.
#[derive(Debug, thiserror::Error)]
pub enum HelmError {
    /// `PLUMB_HELM` is unset and no `helm` is on `PATH`.
    #[error("no helm found: PLUMB_HELM is not set and there is no `helm` on PATH (run scripts/ensure-helm, or install Helm 3.17+ or 4)")]
    NotFound,
    /// The program could not be run (missing, not executable).
    #[error("helm at {path}: cannot run `helm version`: {source}")]
    Run {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `helm version` failed or printed something that is not a version.
    #[error("helm at {path}: `helm version` did not give a version: {output}")]
    NoVersion { path: PathBuf, output: String },
    /// A version plumb does not render with.
    #[error("helm at {path} is {version}: plumb needs Helm v3.17 or later, or v4 ({why})")]
    Unsupported {
        path: PathBuf,
        version: String,
        why: String,
    },
}

/// Why a chart could not be rendered, post-rendered or read.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// `helm template` failed; `stderr` is helm's own message, trimmed.
    #[error("helm template of chart {} (release {release}, helm {helm}) failed: {stderr}", chart.display())]
    Helm {
        chart: PathBuf,
        release: String,
        helm: String,
        stderr: String,
    },
    /// A file plumb writes or reads for a render.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// helm's output is not the YAML plumb expects.
    #[error("helm output{}: {message}", source_suffix(.template))]
    Manifest {
        /// The `# Source:` template of the document, when known.
        template: Option<String>,
        message: String,
    },
    /// A post-renderer of the HelmRelease failed.
    #[error("HelmRelease {helm_release}: post-renderer {step}: {message}")]
    PostRender {
        /// `namespace/name` of the HelmRelease.
        helm_release: String,
        /// `postRenderers[N].kustomize`, `commonMetadata`, ...
        step: String,
        message: String,
    },
    /// A chart's `values.schema.json` (or a file it references) is not JSON.
    #[error("{}: {message}", path.display())]
    Schema { path: PathBuf, message: String },
}

fn source_suffix(template: &Option<String>) -> String {
    match template {
        Some(s) => format!(" (# Source: {s})"),
        None => String::new(),
    }
}

/// What helm-controller does with a chart's `crds/` directory (`spec.install.crds` /
/// `spec.upgrade.crds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CrdPolicy {
    /// CRDs are not applied: `crds/` is left out of the render.
    Skip,
    /// CRDs are created when absent (helm-controller's default for install).
    #[default]
    Create,
    /// CRDs are created or replaced.
    CreateReplace,
}

impl CrdPolicy {
    /// Reads a HelmRelease's `crds` field; `None` (absent) is helm-controller's default,
    /// `Create`. An unknown word is `Err` with helm-controller's wording.
    pub fn parse(word: Option<&str>) -> Result<CrdPolicy, String> {
        match word {
            None | Some("") | Some("Create") => Ok(CrdPolicy::Create),
            Some("Skip") => Ok(CrdPolicy::Skip),
            Some("CreateReplace") => Ok(CrdPolicy::CreateReplace),
            Some(other) => Err(format!(
                "invalid CRD upgrade policy '{other}', valid values are 'Skip', 'Create' or 'CreateReplace'"
            )),
        }
    }

    /// Whether the chart's `crds/` objects are part of what reaches the cluster.
    pub fn includes_crds(self) -> bool {
        !matches!(self, CrdPolicy::Skip)
    }
}

/// A `helm` program whose version was checked.
#[derive(Debug, Clone)]
pub struct Helm {
    path: PathBuf,
    version: String,
}

/// One `helm template` run, every input explicit.
#[derive(Debug, Clone)]
pub struct Template<'a> {
    /// An unpacked chart directory (Chart.yaml inside).
    pub chart_dir: &'a Path,
    pub release_name: &'a str,
    pub namespace: &'a str,
    /// Composed values, written to a temporary file passed with `-f`.
    pub values: &'a serde_json::Value,
    /// e.g. `1.33.0`.
    pub kube_version: &'a str,
    /// `group/version` and `group/version/Kind` the cluster serves.
    pub api_versions: &'a [String],
    /// Whether `crds/` is rendered (`--include-crds`) or left out.
    pub crds: CrdPolicy,
    /// Whether hook objects are rendered (`--no-hooks` when false).
    pub hooks: bool,
    /// Render as an upgrade (`.Release.IsUpgrade`) instead of an install.
    pub is_upgrade: bool,
    /// `--skip-schema-validation`: set from [`crate::schema::SchemaPlan`] (a `$ref` that cannot
    /// be resolved offline) or from `disableSchemaValidation`.
    pub skip_schema_validation: bool,
    /// `--set` lines after the values file: the integers a `targetPath` gives, which
    /// helm-controller hands Helm as int64 where a values file would make them float64
    /// ([`crate::values::HelmValues::int64_set`]).
    pub set: &'a [String],
}

impl Helm {
    /// `PLUMB_HELM`, else `helm` on `PATH`; version checked: v3 >= 3.17 or v4. Err says which
    /// and why.
    pub fn find() -> Result<Helm, HelmError> {
        if let Some(path) = std::env::var_os("PLUMB_HELM").filter(|p| !p.is_empty()) {
            return Helm::at(Path::new(&path));
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join("helm");
            if candidate.is_file() {
                return Helm::at(&candidate);
            }
        }
        Err(HelmError::NotFound)
    }

    /// The helm at `path`, its version checked.
    pub fn at(path: &Path) -> Result<Helm, HelmError> {
        let output = Command::new(path)
            .args(["version", "--template", "{{.Version}}"])
            .envs(isolated_env(None))
            .output()
            .map_err(|source| HelmError::Run {
                path: path.to_path_buf(),
                source,
            })?;
        let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
        if !output.status.success() || !text.starts_with('v') {
            let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
            return Err(HelmError::NoVersion {
                path: path.to_path_buf(),
                output: if stderr.is_empty() { text } else { stderr },
            });
        }
        check_version(&text).map_err(|why| HelmError::Unsupported {
            path: path.to_path_buf(),
            version: text.clone(),
            why,
        })?;
        Ok(Helm {
            path: path.to_path_buf(),
            version: text,
        })
    }

    /// The version `helm version` printed, e.g. `v4.2.3`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The program's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The arguments of `helm template` for `t`, the values file given as `values_file`.
    /// Public so that a caller (and the tests) can show or replay exactly what ran.
    pub fn template_args(t: &Template, values_file: &Path) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            "template".into(),
            t.release_name.into(),
            t.chart_dir.into(),
            "--namespace".into(),
            t.namespace.into(),
            "--values".into(),
            values_file.into(),
            "--kube-version".into(),
            t.kube_version.into(),
        ];
        for api in t.api_versions {
            args.push("--api-versions".into());
            args.push(api.into());
        }
        if t.crds.includes_crds() {
            args.push("--include-crds".into());
        }
        if !t.hooks {
            args.push("--no-hooks".into());
        }
        if t.is_upgrade {
            args.push("--is-upgrade".into());
        }
        if t.skip_schema_validation {
            args.push("--skip-schema-validation".into());
        }
        for line in t.set {
            args.push("--set".into());
            args.push(line.into());
        }
        args
    }

    /// Runs `helm template` with everything explicit; returns the manifest text (stdout).
    pub fn template(&self, t: &Template) -> Result<String, RenderError> {
        let scratch = tempfile::Builder::new()
            .prefix("plumb-helm-")
            .tempdir()
            .map_err(|source| RenderError::Io {
                path: std::env::temp_dir(),
                source,
            })?;
        let values_file = scratch.path().join("values.json");
        write_values(&values_file, t.values)?;
        let output = Command::new(&self.path)
            .args(Helm::template_args(t, &values_file))
            .envs(isolated_env(Some(scratch.path())))
            .output()
            .map_err(|source| RenderError::Io {
                path: self.path.clone(),
                source,
            })?;
        if !output.status.success() {
            return Err(RenderError::Helm {
                chart: t.chart_dir.to_path_buf(),
                release: t.release_name.to_string(),
                helm: self.version.clone(),
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            });
        }
        String::from_utf8(output.stdout).map_err(|_| RenderError::Manifest {
            template: None,
            message: format!(
                "helm template of chart {} printed text that is not UTF-8",
                t.chart_dir.display()
            ),
        })
    }
}

fn write_values(path: &Path, values: &serde_json::Value) -> Result<(), RenderError> {
    let io = |source| RenderError::Io {
        path: path.to_path_buf(),
        source,
    };
    // JSON is YAML: helm reads the file as it reads any values file.
    let text = serde_json::to_string(values).map_err(|e| io(std::io::Error::other(e)))?;
    let mut file = std::fs::File::create(path).map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    Ok(())
}

/// helm reads repositories, registries and plugins from the user's directories: a render must
/// depend only on its arguments, so they point into the render's scratch directory (or nowhere
/// that exists, for `helm version`).
fn isolated_env(scratch: Option<&Path>) -> Vec<(&'static str, OsString)> {
    let base = scratch
        .map(Path::to_path_buf)
        .unwrap_or_else(|| std::env::temp_dir().join("plumb-helm-none"));
    ["HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"]
        .into_iter()
        .map(|name| (name, base.join(name.to_ascii_lowercase()).into_os_string()))
        .chain([("HELM_PLUGINS", base.join("plugins").into_os_string())])
        .collect()
}

/// Accepts v4 and v3.17+: `helm template` before 3.17 lacks `--skip-schema-validation`.
fn check_version(version: &str) -> Result<(), String> {
    let digits = version.trim_start_matches('v');
    let mut parts = digits.split(['.', '-', '+']).map(|p| p.parse::<u64>().ok());
    let (Some(Some(major)), Some(Some(minor))) = (parts.next(), parts.next()) else {
        return Err(format!("`{version}` is not a semantic version"));
    };
    match major {
        4 => Ok(()),
        3 if minor >= 17 => Ok(()),
        3 => Err("Helm 3 before 3.17 has no --skip-schema-validation".to_string()),
        _ => Err(format!("major version {major} is not known to plumb")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_accepted_and_refused() {
        assert!(check_version("v4.2.3").is_ok());
        assert!(check_version("v3.17.0").is_ok());
        assert!(check_version("v3.18.4+g1234").is_ok());
        assert!(check_version("v3.16.4").unwrap_err().contains("3.17"));
        assert!(check_version("v2.17.0").is_err());
        assert!(check_version("vfoo").is_err());
    }

    #[test]
    fn crd_policy_words() {
        assert_eq!(CrdPolicy::parse(None), Ok(CrdPolicy::Create));
        assert_eq!(CrdPolicy::parse(Some("Skip")), Ok(CrdPolicy::Skip));
        assert_eq!(
            CrdPolicy::parse(Some("CreateReplace")),
            Ok(CrdPolicy::CreateReplace)
        );
        assert!(CrdPolicy::parse(Some("Replace"))
            .unwrap_err()
            .contains("'Replace'"));
    }
}
