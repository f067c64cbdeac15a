//! Build diagnostics: what went wrong, where in which file, and through which chain of Flux
//! Kustomizations the object was reached. A build never stops at the first problem; every
//! Kustomization reports its own.

use plumb_yaml::Node;
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

/// What kind of problem a diagnostic is: a stable, machine-readable name (`-o json`'s `code`)
/// that tools and `plumb check` match on instead of the message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Code {
    /// A `sourceRef` names a source nothing in the repository defines (a typo, most often).
    SourceNotFound,
    /// The source is another repository or artifact, which this build does not fetch: what
    /// uses it is not built (not an error of the repository).
    SourceUnavailable,
    /// The source exists but cannot become ready (its ArtifactGenerator fails, its ref does
    /// not exist, its archive is corrupt).
    SourceNotReady,
    /// A remote kustomize resource or base that could not be fetched here (unreachable, not
    /// in the cache offline): what lists it is unavailable.
    RemoteUnavailable,
    /// A remote kustomize resource or base that names nothing (no such ref, a 404): what
    /// lists it fails, as kustomize-controller would.
    RemoteNotFound,
    /// `spec.path` is not a directory of the source.
    PathNotFound,
    /// A path that leads outside the source's tree (`..`, an absolute path, a symlink).
    OutsideSource,
    /// `spec.path` still holds a `${VAR}` after the parent's substitution.
    PathUnsubstituted,
    /// A `substituteFrom` ConfigMap or Secret that nothing creates.
    SubstituteSourceMissing,
    /// A `substituteFrom` ConfigMap or Secret that exists only at runtime or from bootstrap:
    /// its values are placeholders.
    SubstituteSourceAssumed,
    /// Strict substitution met a `${VAR}` that no variable source defines.
    VariableNotSet,
    /// postBuild substitution failed otherwise (an invalid name, bad syntax, YAML it broke).
    SubstitutionFailed,
    /// A SOPS Secret read for substitution for which no age key is given: its values are
    /// placeholders.
    SecretUndecrypted,
    /// A SOPS Secret that the age keys given do not decrypt (or whose MAC fails).
    SecretDecryptFailed,
    /// A Secret the API server refuses (data that is not base64).
    InvalidSecret,
    /// A field of a Flux object that the API server refuses.
    InvalidSpec,
    /// kustomize failed to build the directory.
    KustomizeError,
    /// A manifest that is not a Kubernetes object (no apiVersion, kind or name; not YAML).
    InvalidManifest,
    /// The Kustomization is suspended: what is built is not applied.
    Suspended,
    /// Two Kustomizations produce the same Kustomization.
    TwoWriters,
    /// `dependsOn` names something that no Kustomization of the cluster creates.
    DependencyMissing,
    /// A `dependsOn` cycle.
    DependencyCycle,
    /// A HelmRelease's chart cannot be had: no such chart, no version satisfies the range, a
    /// corrupt archive, a `valuesFiles` entry that is missing.
    ChartNotReady,
    /// A `valuesFrom` ConfigMap or Secret (or its key) that is missing and not optional, or
    /// whose data is not values.
    ValuesNotFound,
    /// `helm template` failed (a template error, `required`, a schema the values break) or
    /// a post-renderer did.
    RenderFailed,
    /// A release renders differently twice with the same inputs.
    RenderNondeterministic,
    /// A ResourceSet that flux-operator fails to expand (a template error, a bad input
    /// strategy, duplicate objects across steps).
    ResourceSetFailed,
    /// A ResourceSet whose inputs are not known here (a provider not in the build output, or
    /// one whose inputs come from the cluster): what it generates is not built.
    ResourceSetNotExpanded,
}

impl Code {
    /// The name `-o json` prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::SourceNotFound => "source-not-found",
            Code::SourceUnavailable => "source-unavailable",
            Code::SourceNotReady => "source-not-ready",
            Code::RemoteUnavailable => "remote-unavailable",
            Code::RemoteNotFound => "remote-not-found",
            Code::PathNotFound => "path-not-found",
            Code::PathUnsubstituted => "path-unsubstituted",
            Code::OutsideSource => "outside-source",
            Code::SubstituteSourceMissing => "substitute-source-missing",
            Code::SubstituteSourceAssumed => "substitute-source-assumed",
            Code::VariableNotSet => "variable-not-set",
            Code::SubstitutionFailed => "substitution-failed",
            Code::SecretUndecrypted => "secret-undecrypted",
            Code::SecretDecryptFailed => "secret-decrypt-failed",
            Code::InvalidSecret => "invalid-secret",
            Code::InvalidSpec => "invalid-spec",
            Code::KustomizeError => "kustomize-error",
            Code::InvalidManifest => "invalid-manifest",
            Code::Suspended => "suspended",
            Code::TwoWriters => "two-writers",
            Code::DependencyMissing => "dependency-missing",
            Code::DependencyCycle => "dependency-cycle",
            Code::ChartNotReady => "chart-not-ready",
            Code::ValuesNotFound => "values-not-found",
            Code::RenderFailed => "render-failed",
            Code::RenderNondeterministic => "render-nondeterministic",
            Code::ResourceSetFailed => "resource-set-failed",
            Code::ResourceSetNotExpanded => "resource-set-not-expanded",
        }
    }
}

/// One problem found while building.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    /// The file the problem is in, relative to the repository root when it is inside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// The Kustomizations from the entry down to the one being built (`ns/name`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            file: None,
            line: None,
            column: None,
            chain: Vec::new(),
            help: None,
        }
    }

    pub fn warning(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message)
        }
    }

    /// Points at `node`'s text, when it came from a file.
    pub fn at(mut self, node: Option<&Node>) -> Diagnostic {
        if let Some(span) = node.and_then(|n| n.span.as_ref()) {
            let loc = span.location();
            self.file = Some(span.file.path().to_path_buf());
            self.line = Some(small(loc.line));
            self.column = Some(small(loc.column));
        }
        self
    }

    /// Points at a file without a position, unless a position is known already.
    pub fn in_file(mut self, file: &Path) -> Diagnostic {
        if self.file.is_none() {
            self.file = Some(file.to_path_buf());
        }
        self
    }

    pub fn at_line(mut self, file: &Path, line: usize, column: usize) -> Diagnostic {
        self.file = Some(file.to_path_buf());
        self.line = Some(small(line));
        self.column = Some(small(column));
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub fn with_chain(mut self, chain: &[String]) -> Diagnostic {
        if self.chain.is_empty() {
            self.chain = chain.to_vec();
        }
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Makes the file path relative to `root` when it is inside it, and the paths under `root`
    /// that the message and help quote (a kustomize error names the file it could not read),
    /// so output does not depend on where the repository is checked out.
    pub fn relative_to(mut self, root: &Path) -> Diagnostic {
        if let Some(file) = &self.file {
            if let Ok(rel) = file.strip_prefix(root) {
                self.file = Some(rel.to_path_buf());
            }
        }
        let prefix = format!("{}/", root.display().to_string().trim_end_matches('/'));
        if prefix.len() > 1 && self.message.contains(&prefix) {
            self.message = self.message.replace(&prefix, "");
        }
        if let Some(help) = self.help.as_mut().filter(|h| h.contains(&prefix)) {
            *help = help.replace(&prefix, "");
        }
        self
    }
}

/// Lines and columns are kept small so a diagnostic stays cheap to move around.
fn small(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl fmt::Display for Diagnostic {
    /// `error: message`, then `  --> file:line:col`, the chain and the help, one per line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{level}: {}", self.message)?;
        if let Some(file) = &self.file {
            write!(f, "\n  --> {}", file.display())?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
                if let Some(column) = self.column {
                    write!(f, ":{column}")?;
                }
            }
        }
        if !self.chain.is_empty() {
            write!(f, "\n  = via: {}", self.chain.join(" → "))?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n  = help: {help}")?;
        }
        Ok(())
    }
}

/// A kustomize error as a diagnostic, pointing at the file and line it names when it names one.
pub fn from_kustomize(err: &plumb_kustomize::KustomizeError) -> Diagnostic {
    use plumb_kustomize::KustomizeError as K;
    let d = Diagnostic::error(
        Code::KustomizeError,
        format!("kustomize build failed: {err}"),
    );
    let mut cur = err;
    // The innermost resources entry that led to the error, where it is written.
    let mut entry_at = None;
    loop {
        match cur {
            K::Accumulating { source, at, .. } => {
                entry_at = at.as_ref().or(entry_at);
                cur = source;
            }
            K::OutsideSource { .. } => {
                return match entry_at {
                    Some((file, line)) => d.at_line(file, *line, 1),
                    None => d,
                };
            }
            K::NotRegularFile(path) | K::TooLarge { path, .. } => {
                return match entry_at {
                    Some((file, line)) => d.at_line(file, *line, 1),
                    None => d.in_file(path),
                };
            }
            K::MalformedYaml(y) => {
                return d.at_line(&y.path, y.location.line, y.location.column);
            }
            K::InvalidKustomization { path, line, .. } | K::KindOrVersion { path, line, .. } => {
                return match line {
                    Some(l) => d.at_line(path, *l, 1),
                    None => d.in_file(path),
                };
            }
            // The message names the file that could not be read: point at where it is listed.
            K::Io { path, .. } => {
                return match entry_at {
                    Some((file, line)) => d.at_line(file, *line, 1),
                    None => d.in_file(path),
                };
            }
            K::Remote { what, url } => {
                let d = Diagnostic {
                    code: Code::SourceUnavailable,
                    message: format!("remote {what} {url} is not fetched"),
                    ..d
                };
                return match entry_at {
                    Some((file, line)) => d.at_line(file, *line, 1),
                    None => d,
                };
            }
            K::RemoteFetch { broken, .. } => {
                // An unavailable one is reported by this message alone: it says where the
                // entry is.
                let at = entry_at
                    .map(|(file, line)| format!(" (listed at {}:{line})", file.display()))
                    .unwrap_or_default();
                let d = Diagnostic {
                    code: if *broken {
                        Code::RemoteNotFound
                    } else {
                        Code::RemoteUnavailable
                    },
                    message: format!("{cur}{at}"),
                    ..d
                };
                return match entry_at {
                    Some((file, line)) => d.at_line(file, *line, 1),
                    None => d,
                };
            }
            K::MissingKustomization(p) | K::Cycle(p) | K::MultipleKustomizations(p) => {
                return d.in_file(p)
            }
            K::Generator { path, line, .. } => {
                return match line {
                    Some(l) => d.at_line(path, *l, 1),
                    None => d,
                };
            }
            _ => return d,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::from_kustomize;
    use plumb_kustomize::KustomizeError;
    use std::path::Path;

    #[test]
    fn a_generator_error_is_located_where_the_generator_is_declared() {
        // ionfury/homelab's integration cluster lists an env file that is not committed.
        let path = Path::new("kubernetes/clusters/integration/kustomization.yaml");
        let err = KustomizeError::Generator {
            path: path.to_path_buf(),
            line: Some(11),
            message: "loading KV pairs: env source files: [.cluster-vars.env]: evalsymlink failure"
                .into(),
        };
        let d = from_kustomize(&err);
        assert_eq!((d.file.as_deref(), d.line), (Some(path), Some(11)));
        assert_eq!(
            d.message,
            "kustomize build failed: kubernetes/clusters/integration/kustomization.yaml:11: loading KV pairs: env source files: [.cluster-vars.env]: evalsymlink failure"
        );
        let unlined = KustomizeError::Generator {
            path: path.to_path_buf(),
            line: None,
            message: "x".into(),
        };
        assert_eq!(
            unlined.to_string(),
            "kubernetes/clusters/integration/kustomization.yaml: x"
        );
        assert_eq!(from_kustomize(&unlined).file, None);
    }
}
