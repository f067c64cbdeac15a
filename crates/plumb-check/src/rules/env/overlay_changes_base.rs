use super::{overlay_dirs, resolve, vars_objects, Overlay};
use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};
use crate::rules::sub::scope;
use plumb_yaml::Node;
use std::path::Path;

/// ## What it does
/// Finds environment overlays that change anything but the cluster's variables. An overlay is a
/// directory of `overlays.paths` in `.plumb.yaml` (default: each entry path, such as
/// `clusters/dev`, when there are two or more) whose `kustomization.yaml` builds on a base
/// directory outside it. It may:
///
/// - list bases under `resources`;
/// - patch, or generate with `configMapGenerator`/`secretGenerator`, the objects of
///   `overlays.mayPatch` (`Kind/name`; default: the ConfigMaps and Secrets that Flux
///   Kustomizations name in `postBuild.substituteFrom`).
///
/// Everything else is reported where it is written: a resource that adds an object (each
/// object of the file), a patch of another object (the patch), a patch whose target is a
/// selector rather than a name, and any other kustomize field (`namePrefix`, `images`,
/// `replicas`, `components`, ...).
///
/// ## Why is this bad?
/// When an environment's overlay adds a Deployment or patches a HelmRelease, the environments
/// stop running the same platform: what is tested in dev is not what runs in prod, and every
/// change to the base has to be checked against each overlay's edits. With base + variables,
/// the only difference between clusters is a short list of values that `plumb check` can read
/// and validate (ENV002, ENV003).
///
/// ## Example
/// ```yaml
/// # clusters/dev/kustomization.yaml
/// resources:
///   - ../base
///   - debug-tools.yaml        # a Deployment only dev has
/// patches:
///   - path: cluster-vars.yaml
///   - path: platform-interval.yaml   # patches the `platform` Kustomization
/// ```
///
/// Use instead:
/// ```yaml
/// resources:
///   - ../base
/// patches:
///   - path: cluster-vars.yaml
/// ```
/// and move the difference into the base behind a variable of `cluster-vars` (for example
/// `replicas: ${DEBUG_REPLICAS:=0}`), or list the object under `overlays.mayPatch`.
pub struct OverlayChangesBase;

/// Keys of an overlay's `kustomization.yaml` that change nothing by themselves.
const NEUTRAL_KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "resources",
    "generatorOptions",
];

/// What an overlay edits.
struct Edit {
    /// `Kind/name`, when known.
    target: Option<(String, String)>,
    /// What the edit touches when it is not one object: a directory of resources.
    subject: Option<String>,
    /// What it does, for the message (`adds`, `patches`).
    verb: &'static str,
    location: Option<Location>,
}

impl Rule for OverlayChangesBase {
    fn code(&self) -> &'static str {
        "ENV001"
    }

    fn summary(&self) -> &'static str {
        "an environment overlay that changes anything but the vars ConfigMap"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        // Overlays by default are the entries: one cluster is no set of environments that could
        // stop running the same platform (JJGadgets/Biohazard's single cluster lists its apps
        // and its own Flux install beside one another). `overlays.paths` still names them.
        if cx.config.overlays.paths.is_empty() && cx.build.clusters.len() < 2 {
            return;
        }
        let allowed: Vec<(String, String)> = if cx.config.overlays.may_patch.is_empty() {
            vars_objects(cx)
        } else {
            cx.config
                .overlays
                .may_patch
                .iter()
                .map(|m| match m.split_once('/') {
                    Some((kind, name)) => (kind.to_string(), name.to_string()),
                    None => ("ConfigMap".to_string(), m.clone()),
                })
                .collect()
        };
        // The objects it may patch, when there are any: ` (ConfigMap/cluster-vars)`.
        let allowed_text = match allowed.is_empty() {
            true => String::new(),
            false => format!(
                " ({})",
                allowed
                    .iter()
                    .map(|(k, n)| format!("{k}/{n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let root = cx.build.root.as_path();
        for dir in overlay_dirs(cx) {
            let Some(overlay) = Overlay::read(root, &dir) else {
                continue;
            };
            let key_location = |key: &str| {
                overlay
                    .doc
                    .as_mapping()
                    .and_then(|m| m.iter().find(|(k, _)| k.scalar_value() == Some(key)))
                    .and_then(|(k, _)| scope::location_of(cx, k))
            };
            let mut edits = Vec::new();
            let mut fields = Vec::new();
            for key in overlay.doc.keys() {
                match key {
                    k if NEUTRAL_KEYS.contains(&k) => {}
                    "patches" | "patchesStrategicMerge" | "patchesJson6902" => {
                        patches(cx, &overlay, key, &mut edits)
                    }
                    "configMapGenerator" | "secretGenerator" => {
                        generators(cx, &overlay, key, &mut edits)
                    }
                    other => fields.push(other.to_string()),
                }
            }
            resources(cx, &overlay, &mut edits);
            for field in fields {
                out.push(
                    Finding::new(
                        "ENV001",
                        format!(
                            "overlay {dir} sets `{field}`, which changes the base's objects: an environment overlay may only change the cluster's variables{allowed_text}"
                        ),
                        help(),
                    )
                    .at(key_location(&field)),
                );
            }
            for edit in edits {
                if let Some(target) = &edit.target {
                    if allowed.iter().any(|a| a == target) {
                        continue;
                    }
                }
                let what = match (&edit.target, edit.subject) {
                    (Some((kind, name)), _) => format!("{kind} {name}"),
                    (None, Some(subject)) => subject,
                    (None, None) => {
                        "objects it cannot name (no kind and name, or a selector)".to_string()
                    }
                };
                out.push(
                    Finding::new(
                        "ENV001",
                        format!(
                            "overlay {dir} {} {what}: an environment overlay may only change the cluster's variables{allowed_text}",
                            edit.verb
                        ),
                        help(),
                    )
                    .at(edit.location),
                );
            }
        }
    }
}

fn help() -> &'static str {
    "move the change into the base, behind a variable of the vars ConfigMap when it differs per cluster; or list the object under `overlays.mayPatch` in .plumb.yaml"
}

/// The YAML documents of a file of the overlay, or `None` when it cannot be read.
fn documents(path: &Path) -> Option<Vec<Node>> {
    let text = std::fs::read_to_string(path).ok()?;
    let docs = plumb_yaml::parse_documents(path, &text).ok()?;
    Some(docs.into_iter().filter(|d| !d.is_null()).collect())
}

/// Whether `docs` hold a Flux Kustomization whose `spec.path` is `dir` (relative to the root),
/// the path read as the build reads it.
fn syncs_dir(docs: &[Node], dir: &str) -> bool {
    use plumb_flux::source::clean_relative;
    docs.iter().any(|d| {
        d.str_at(&["kind"]) == Some("Kustomization")
            && d.str_at(&["apiVersion"])
                .is_some_and(|v| v.starts_with("kustomize.toolkit.fluxcd.io/"))
            && d.str_at(&["spec", "path"])
                .is_some_and(|p| clean_relative(p) == clean_relative(dir))
    })
}

/// `Kind/name` of a manifest or strategic-merge patch.
fn kind_and_name(doc: &Node) -> Option<(String, String)> {
    Some((
        doc.str_at(&["kind"])?.to_string(),
        doc.str_at(&["metadata", "name"])?.to_string(),
    ))
}

/// Resources that are not bases: each object they add.
fn resources(cx: &CheckContext<'_>, overlay: &Overlay, edits: &mut Vec<Edit>) {
    let Some(items) = overlay.doc.get("resources").and_then(Node::as_sequence) else {
        return;
    };
    let root = cx.build.root.as_path();
    for item in items {
        let Some(reference) = item.scalar_value() else {
            continue;
        };
        let Some(path) = resolve(&overlay.dir, reference) else {
            continue;
        };
        if overlay.bases.contains(&path) {
            continue;
        }
        let abs = root.join(&path);
        let docs = if abs.is_file() { documents(&abs) } else { None };
        // The cluster's own bootstrap (`flux bootstrap` writes `flux-system/` with
        // gotk-components.yaml and gotk-sync.yaml into every cluster path): each cluster must
        // have its own, since its Kustomization syncs this very directory.
        let bootstrap = match &docs {
            Some(docs) => syncs_dir(docs, &overlay.dir),
            None => crate::rules::repo_files::yaml_files_in(&abs)
                .iter()
                .filter_map(|f| documents(f))
                .any(|docs| syncs_dir(&docs, &overlay.dir)),
        };
        if bootstrap {
            continue;
        }
        match docs {
            Some(docs) => edits.extend(docs.iter().map(|doc| Edit {
                subject: None,
                target: kind_and_name(doc),
                verb: "adds",
                location: scope::location_of(cx, doc),
            })),
            None => edits.push(Edit {
                target: None,
                subject: Some(format!("the objects of `{reference}`")),
                verb: "adds",
                location: scope::location_of(cx, item),
            }),
        }
    }
}

/// `patches`, `patchesStrategicMerge` and `patchesJson6902`: the object each patch targets.
fn patches(cx: &CheckContext<'_>, overlay: &Overlay, key: &str, edits: &mut Vec<Edit>) {
    let Some(items) = overlay.doc.get(key).and_then(Node::as_sequence) else {
        return;
    };
    let root = cx.build.root.as_path();
    for item in items {
        let target = item
            .get("target")
            .map(|t| match (t.str_at(&["kind"]), t.str_at(&["name"])) {
                (Some(kind), Some(name)) => Some((kind.to_string(), name.to_string())),
                _ => None,
            });
        // The patch's own text: a file, or inline YAML.
        let (file, inline) = match (
            item.scalar_value(),
            item.str_at(&["path"]),
            item.get("patch"),
        ) {
            (Some(text), _, _) if text.contains('\n') || text.contains("kind:") => {
                (None, Some(item))
            }
            (Some(path), _, _) | (None, Some(path), _) => (resolve(&overlay.dir, path), None),
            (None, None, Some(patch)) => (None, Some(patch)),
            _ => (None, None),
        };
        // Its documents, read once: the file's, or the inline text's (empty ones left out).
        let docs: Option<Vec<Node>> = match (&file, inline) {
            (Some(f), _) => documents(&root.join(f)),
            (None, Some(node)) => node
                .scalar_value()
                .and_then(|text| plumb_yaml::parse_documents("patch", text).ok())
                .map(|docs| docs.into_iter().filter(|d| !d.is_null()).collect()),
            _ => None,
        };
        // The cluster's own sync pointed at the cluster's directory (microscaler's
        // `kubectl apply -k gitops/clusters/dev` patches `cluster-control` to
        // `./gitops/clusters/dev/control`): what makes the overlay this cluster, no change to
        // the platform.
        let kustomization = target
            .as_ref()
            .is_none_or(|t| t.as_ref().is_none_or(|(kind, _)| kind == "Kustomization"));
        if kustomization
            && docs
                .as_deref()
                .is_some_and(|d| points_sync_into(d, &overlay.dir))
        {
            continue;
        }
        if let Some(target) = target {
            let location = docs
                .as_ref()
                .filter(|_| file.is_some())
                .and_then(|docs| docs.first().and_then(|d| scope::location_of(cx, d)))
                .or_else(|| scope::location_of(cx, item));
            edits.push(Edit {
                subject: None,
                target,
                verb: "patches",
                location,
            });
            continue;
        }
        if let (Some(_), Some(docs)) = (&file, &docs) {
            edits.extend(docs.iter().map(|doc| Edit {
                subject: None,
                target: kind_and_name(doc),
                verb: "patches",
                location: scope::location_of(cx, doc),
            }));
            continue;
        }
        let location = scope::location_of(cx, inline.unwrap_or(item));
        let targets: Vec<_> = docs.iter().flatten().map(kind_and_name).collect();
        if targets.is_empty() {
            edits.push(Edit {
                subject: None,
                target: None,
                verb: "patches",
                location: location.clone(),
            });
        }
        for target in targets {
            edits.push(Edit {
                subject: None,
                target,
                verb: "patches",
                location: location.clone(),
            });
        }
    }
}

/// Whether a patch only points a Flux Kustomization's `spec.path` into `dir` (relative to the
/// root): a JSON 6902 `replace` or `add` of `/spec/path`, or a strategic merge patch of a
/// `kustomize.toolkit.fluxcd.io` Kustomization whose spec holds `path` alone.
fn points_sync_into(docs: &[Node], dir: &str) -> bool {
    use plumb_flux::source::clean_relative;
    let inside = |path: &str| {
        let (path, dir) = (clean_relative(path), clean_relative(dir));
        path == dir || path.starts_with(&format!("{dir}/"))
    };
    match docs {
        [doc] if doc.is_sequence() => doc.as_sequence().is_some_and(|ops| {
            !ops.is_empty()
                && ops.iter().all(|op| {
                    matches!(op.str_at(&["op"]), Some("replace" | "add"))
                        && op.str_at(&["path"]) == Some("/spec/path")
                        && op.str_at(&["value"]).is_some_and(inside)
                })
        }),
        [doc] => {
            doc.str_at(&["apiVersion"])
                .is_some_and(|v| v.starts_with("kustomize.toolkit.fluxcd.io/"))
                && doc.str_at(&["kind"]) == Some("Kustomization")
                && doc
                    .get("spec")
                    .and_then(Node::as_mapping)
                    .is_some_and(|spec| spec.len() == 1)
                && doc.str_at(&["spec", "path"]).is_some_and(inside)
        }
        _ => false,
    }
}

/// `configMapGenerator` and `secretGenerator` items: the object each one generates or merges.
fn generators(cx: &CheckContext<'_>, overlay: &Overlay, key: &str, edits: &mut Vec<Edit>) {
    let kind = if key == "configMapGenerator" {
        "ConfigMap"
    } else {
        "Secret"
    };
    for item in overlay
        .doc
        .get(key)
        .and_then(Node::as_sequence)
        .into_iter()
        .flatten()
    {
        edits.push(Edit {
            subject: None,
            target: item
                .str_at(&["name"])
                .map(|name| (kind.to_string(), name.to_string())),
            verb: "generates",
            location: scope::location_of(cx, item),
        });
    }
}
