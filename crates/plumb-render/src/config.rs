//! The `render:` block of `.plumb.yaml`: where the catalog is, where the waves go, and what every
//! wave's Flux Kustomization carries (the tier the first wave depends on, the vars ConfigMap, the
//! source, the SOPS key).

use crate::error::{line_of, unknown_key, RenderError};
use plumb_yaml::Node;
use std::path::{Path, PathBuf};

/// Every key `render:` may have.
pub const KEYS: &[&str] = &[
    "catalog",
    "output",
    "fluxKustomizations",
    "namePrefix",
    "namespace",
    "firstWaveDependsOn",
    "substituteFrom",
    "sourceRef",
    "interval",
    "retryInterval",
    "timeout",
    "decryption",
];

const SOURCE_REF_KEYS: &[&str] = &["kind", "name", "namespace"];
const DECRYPTION_KEYS: &[&str] = &["provider", "secretName", "everyWave"];

/// What `plumb render` reads from `.plumb.yaml`; every field has a default, so `render: {}` is a
/// complete configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderConfig {
    /// The catalog directory (`catalog`): every `*.yaml`/`*.yml` file in it holds apps.
    pub catalog: PathBuf,
    /// The directory the waves are written under (`apps`): `<output>/wave-<N>/kustomization.yaml`.
    pub output: PathBuf,
    /// The file holding one Flux Kustomization per wave (`clusters/base/apps.yaml`).
    pub flux_kustomizations: PathBuf,
    /// The Flux Kustomizations are named `<namePrefix><N>` (`apps-wave-`).
    pub name_prefix: String,
    /// Their namespace (`flux-system`).
    pub namespace: String,
    /// Flux Kustomizations wave 0 depends on (the tier before the apps); none by default.
    pub first_wave_depends_on: Vec<String>,
    /// The ConfigMap every wave substitutes from (`postBuild.substituteFrom`); none by default.
    pub substitute_from: Option<String>,
    /// The source every wave is built from (`GitRepository` `flux-system`).
    pub source_ref: SourceRef,
    /// `spec.interval` (`30m`).
    pub interval: String,
    /// `spec.retryInterval` (`2m`).
    pub retry_interval: String,
    /// `spec.timeout` (`10m`).
    pub timeout: String,
    /// How waves decrypt SOPS files; `None`: no wave does.
    pub decryption: Option<Decryption>,
}

/// `sourceRef:` of every wave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRef {
    pub kind: String,
    pub name: String,
    /// Only written when set (Flux defaults it to the Kustomization's namespace).
    pub namespace: Option<String>,
}

/// `decryption:`: the SOPS settings of the waves that hold an app marked `encrypted: true`, or of
/// every wave with `everyWave: true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decryption {
    /// `provider` (`sops`).
    pub provider: String,
    /// The Secret holding the key (`secretRef.name`).
    pub secret_name: String,
    pub every_wave: bool,
}

impl Default for RenderConfig {
    fn default() -> Self {
        RenderConfig {
            catalog: PathBuf::from("catalog"),
            output: PathBuf::from("apps"),
            flux_kustomizations: PathBuf::from("clusters/base/apps.yaml"),
            name_prefix: "apps-wave-".into(),
            namespace: "flux-system".into(),
            first_wave_depends_on: Vec::new(),
            substitute_from: None,
            source_ref: SourceRef {
                kind: "GitRepository".into(),
                name: "flux-system".into(),
                namespace: None,
            },
            interval: "30m".into(),
            retry_interval: "2m".into(),
            timeout: "10m".into(),
            decryption: None,
        }
    }
}

/// The file name of plumb's configuration, at the repository root.
pub const CONFIG_FILE: &str = ".plumb.yaml";

impl RenderConfig {
    /// Reads the `render:` block of `<repo>/.plumb.yaml`. No file, or no `render:` key, is an
    /// error: a repository says it is rendered.
    pub fn load(repo: &Path) -> Result<RenderConfig, RenderError> {
        let path = repo.join(CONFIG_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                RenderError::at(
                    Path::new(CONFIG_FILE),
                    0,
                    "the repository has no .plumb.yaml: add one with a `render:` block (`render: {}` takes every default, see docs/render.md)",
                )
            } else {
                RenderError::io(Path::new(CONFIG_FILE), &e)
            }
        })?;
        RenderConfig::parse(Path::new(CONFIG_FILE), &text)
    }

    /// Parses the `render:` block of the `.plumb.yaml` text `text`; `path` names it in errors.
    /// The other top-level keys are not this crate's and are ignored.
    pub fn parse(path: &Path, text: &str) -> Result<RenderConfig, RenderError> {
        RenderConfig::parse_block(path, text)?.ok_or_else(|| {
            RenderError::at(
                path,
                0,
                "no `render:` block; add one (`render: {}` takes every default, see docs/render.md)",
            )
        })
    }

    /// [`RenderConfig::parse`] of a file that need not render: `None` when it has no `render:`
    /// block (what every command but `plumb render` validates).
    pub fn parse_block(path: &Path, text: &str) -> Result<Option<RenderConfig>, RenderError> {
        let docs = plumb_yaml::parse_documents(path, text)
            .map_err(|e| RenderError::at(path, e.location.line, e.message.clone()))?;
        let Some(block) = docs
            .iter()
            .find(|d| !d.is_null())
            .and_then(|root| root.get("render"))
        else {
            return Ok(None);
        };
        let mut config = RenderConfig::default();
        if block.is_null() {
            return Ok(Some(config));
        }
        let fail = |node: &Node, message: String| RenderError::at_node(path, node, message);
        let entries = block
            .as_mapping()
            .ok_or_else(|| fail(block, "`render` must be a mapping of settings".into()))?;
        for (key, value) in entries {
            let name = key.scalar_value().unwrap_or("");
            let text = || {
                value
                    .scalar_value()
                    .filter(|v| !v.trim().is_empty() && !value.is_null())
                    .map(str::to_string)
                    .ok_or_else(|| {
                        fail(value, format!("`render.{name}` must be a non-empty string"))
                    })
            };
            match name {
                "catalog" => config.catalog = PathBuf::from(clean(&text()?)),
                "output" => config.output = PathBuf::from(clean(&text()?)),
                "fluxKustomizations" => config.flux_kustomizations = PathBuf::from(clean(&text()?)),
                "namePrefix" => config.name_prefix = text()?,
                "namespace" => config.namespace = text()?,
                "substituteFrom" => config.substitute_from = Some(text()?),
                "interval" => config.interval = text()?,
                "retryInterval" => config.retry_interval = text()?,
                "timeout" => config.timeout = text()?,
                "firstWaveDependsOn" => {
                    config.first_wave_depends_on = if value.scalar_value().is_some() {
                        vec![text()?]
                    } else {
                        value.string_list().ok_or_else(|| {
                            fail(
                                value,
                                "`render.firstWaveDependsOn` must be a name or a list of names"
                                    .into(),
                            )
                        })?
                    }
                }
                "sourceRef" => config.source_ref = source_ref(path, value)?,
                "decryption" => config.decryption = Some(decryption(path, value)?),
                other => return Err(fail(key, unknown_key(other, "`render`", KEYS))),
            }
        }
        Ok(Some(config))
    }
}

/// `./apps/` → `apps`: the form paths are compared and written in.
pub(crate) fn clean(path: &str) -> String {
    path.split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect::<Vec<_>>()
        .join("/")
}

fn mapping_fields<'a>(
    path: &Path,
    node: &'a Node,
    what: &str,
    keys: &[&str],
) -> Result<&'a Vec<(Node, Node)>, RenderError> {
    let entries = node
        .as_mapping()
        .ok_or_else(|| RenderError::at_node(path, node, format!("{what} must be a mapping")))?;
    for (key, _) in entries {
        let k = key.scalar_value().unwrap_or("");
        if !keys.contains(&k) {
            return Err(RenderError::at_node(path, key, unknown_key(k, what, keys)));
        }
    }
    Ok(entries)
}

fn required(path: &Path, node: &Node, what: &str, key: &str) -> Result<String, RenderError> {
    node.str_at(&[key])
        .filter(|v| !v.trim().is_empty())
        .map(str::to_string)
        .ok_or_else(|| {
            RenderError::at_node(path, node, format!("{what} needs a non-empty `{key}`"))
        })
}

fn source_ref(path: &Path, node: &Node) -> Result<SourceRef, RenderError> {
    mapping_fields(path, node, "`render.sourceRef`", SOURCE_REF_KEYS)?;
    Ok(SourceRef {
        kind: required(path, node, "`render.sourceRef`", "kind")?,
        name: required(path, node, "`render.sourceRef`", "name")?,
        namespace: node.str_at(&["namespace"]).map(str::to_string),
    })
}

fn decryption(path: &Path, node: &Node) -> Result<Decryption, RenderError> {
    mapping_fields(path, node, "`render.decryption`", DECRYPTION_KEYS)?;
    let every_wave = match node.get("everyWave").map(|v| (v, v.scalar_value())) {
        None => false,
        Some((_, Some("true"))) => true,
        Some((_, Some("false"))) => false,
        Some((v, _)) => {
            return Err(RenderError::at(
                path,
                line_of(v),
                "`render.decryption.everyWave` must be true or false",
            ))
        }
    };
    Ok(Decryption {
        provider: node.str_at(&["provider"]).unwrap_or("sops").to_string(),
        secret_name: required(path, node, "`render.decryption`", "secretName")?,
        every_wave,
    })
}
