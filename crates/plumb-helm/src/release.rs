//! A HelmRelease as helm-controller installs it: its release name and namespace, helm's
//! rendered manifest read into objects, and the post-renderers helm-controller runs on them
//! (`spec.postRenderers`' kustomize patches and images, `commonMetadata`, origin labels), with
//! hooks and CRDs treated as helm-controller and Helm 4.2 treat them.

use crate::helm::RenderError;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// helm-controller's API group: origin labels are `<group>/name` and `<group>/namespace`.
const GROUP: &str = "helm.toolkit.fluxcd.io";

/// The longest release name Helm accepts; helm-controller shortens longer ones.
const MAX_RELEASE_NAME: usize = 53;

/// Marks each object with its position while it goes through kustomize, as Helm marks its
/// objects with their file name, so that its template path survives the post-render.
const INDEX_ANNOTATION: &str = "plumb.dev/post-render-index";

/// One object of a render.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub value: Value,
    /// The template it came from (`chart/templates/x.yaml`), from helm's `# Source:` line.
    pub source: Option<String>,
    /// A Helm hook (`helm.sh/hook` annotation).
    pub hook: bool,
    /// It comes from a chart's (or subchart's) `crds/` directory: helm-controller applies
    /// these itself, before the release, with only its origin labels.
    pub crd: bool,
}

/// helm-controller's release name for a HelmRelease object (spec.releaseName else
/// [targetNamespace-]name, shortened past 53 chars exactly as helm-controller does).
pub fn release_name(helm_release: &Value) -> String {
    let spec = &helm_release["spec"];
    let name = str_at(helm_release, &["metadata", "name"]);
    let full = match (
        spec["releaseName"].as_str(),
        spec["targetNamespace"].as_str(),
    ) {
        (Some(release), _) if !release.is_empty() => release.to_string(),
        (_, Some(target)) if !target.is_empty() => format!("{target}-{name}"),
        _ => name.to_string(),
    };
    shorten_name(&full)
}

/// helm-controller's `ShortenName`: a name past 53 bytes becomes its first 40 bytes, a dash and
/// the first 12 hex digits of the SHA-256 of the whole name.
pub fn shorten_name(name: &str) -> String {
    if name.len() <= MAX_RELEASE_NAME {
        return name.to_string();
    }
    const HASH_LEN: usize = 12;
    let sum = hex(&Sha256::digest(name.as_bytes()));
    let mut cut = MAX_RELEASE_NAME - (HASH_LEN + 1);
    // Go slices bytes; a name is ASCII in practice, but never split a character.
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}-{}", &name[..cut], &sum[..HASH_LEN])
}

/// The namespace the release is installed in: spec.targetNamespace, else the HelmRelease's own
/// namespace (`default` when the object names none, as the API server defaults it).
pub fn release_namespace(helm_release: &Value) -> String {
    match helm_release["spec"]["targetNamespace"].as_str() {
        Some(target) if !target.is_empty() => target.to_string(),
        _ => helm_release_namespace(helm_release),
    }
}

/// The namespace helm stores the release in: spec.storageNamespace, else the HelmRelease's.
pub fn storage_namespace(helm_release: &Value) -> String {
    match helm_release["spec"]["storageNamespace"].as_str() {
        Some(storage) if !storage.is_empty() => storage.to_string(),
        _ => helm_release_namespace(helm_release),
    }
}

fn helm_release_namespace(helm_release: &Value) -> String {
    match str_at(helm_release, &["metadata", "namespace"]) {
        "" => "default".to_string(),
        ns => ns.to_string(),
    }
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads helm's manifest output into objects (each with the `# Source:` template path), drops
/// empty documents as helm does, keeps order.
pub fn parse_manifest(text: &str) -> Result<Vec<Rendered>, RenderError> {
    let mut objects = Vec::new();
    // A `crds/` file is printed verbatim under one `# Source:` line; its later documents have
    // none of their own and belong to the same file.
    let mut source: Option<String> = None;
    for chunk in split_documents(text) {
        if let Some(found) = chunk.lines().find_map(|l| l.strip_prefix("# Source: ")) {
            source = Some(found.trim().to_string());
        }
        let docs = plumb_yaml::parse_documents(source.as_deref().unwrap_or("helm-output"), chunk)
            .map_err(|e| RenderError::Manifest {
            template: source.clone(),
            message: e.to_string(),
        })?;
        for doc in docs {
            let value = plumb_yaml::to_json(&doc).map_err(|e| RenderError::Manifest {
                template: source.clone(),
                message: e.to_string(),
            })?;
            match value {
                Value::Null => continue,
                Value::Object(_) => {}
                _ => {
                    return Err(RenderError::Manifest {
                        template: source.clone(),
                        message: "a document is not a mapping (an object)".to_string(),
                    })
                }
            }
            objects.push(Rendered {
                hook: is_hook(&value),
                crd: source.as_deref().is_some_and(is_crds_path),
                value,
                source: source.clone(),
            });
        }
    }
    Ok(objects)
}

/// helm separates documents by a `---` line; the templates' own separators were split by helm
/// before it printed them.
fn split_documents(text: &str) -> Vec<&str> {
    let mut chunks = Vec::new();
    let mut start = 0;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "---" {
            chunks.push(&text[start..offset]);
            start = offset + line.len();
        }
        offset += line.len();
    }
    chunks.push(&text[start..]);
    chunks.retain(|c| !c.trim().is_empty());
    chunks
}

fn is_hook(value: &Value) -> bool {
    value["metadata"]["annotations"]["helm.sh/hook"]
        .as_str()
        .is_some_and(|h| !h.trim().is_empty())
}

/// `chart/crds/x.yaml`, `chart/charts/sub/crds/x.yaml`: a file of a `crds/` directory of the
/// chart or of a subchart (helm prints `crds/` files under the chart's full path).
fn is_crds_path(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    let mut i = 1;
    while parts.get(i) == Some(&"charts") && parts.len() > i + 2 {
        i += 2;
    }
    parts.get(i) == Some(&"crds") && parts.len() > i + 1
}

/// helm-controller's post-renderers, in its order: spec.postRenderers (kustomize: patches,
/// images; through crate plumb-kustomize, in-process), commonMetadata, origin labels.
///
/// Which objects go through them is helm-controller's and Helm 4.2's rule:
/// `spec.postRenderStrategy` `combined` (the default) post-renders hooks with the other
/// objects in one stream, `separate` post-renders hooks in a stream of their own, `nohooks`
/// leaves hooks as the chart renders them. Objects of `crds/` are never post-rendered: they get
/// only the origin labels (helm-controller applies them itself), and those that are not
/// CustomResourceDefinitions are dropped, as helm-controller ignores them.
pub fn post_render(
    helm_release: &Value,
    objects: Vec<Rendered>,
) -> Result<Vec<Rendered>, RenderError> {
    let spec = &helm_release["spec"];
    let strategy = spec["postRenderStrategy"].as_str().unwrap_or("combined");
    let separate_hooks = match strategy {
        "" | "combined" => None,
        "separate" => Some(true),
        "nohooks" => Some(false),
        other => {
            return Err(post_render_error(
                helm_release,
                "postRenderStrategy",
                format!("unknown post-render strategy: '{other}'"),
            ))
        }
    };
    let renderers = Renderers::of(helm_release)?;

    let mut crds = Vec::new();
    let mut hooks = Vec::new();
    let mut manifests = Vec::new();
    for (index, object) in objects.into_iter().enumerate() {
        if object.crd {
            if object.value["kind"] == "CustomResourceDefinition"
                && api_group(&object.value) == "apiextensions.k8s.io"
            {
                crds.push((index, object));
            }
        } else if object.hook && separate_hooks.is_some() {
            hooks.push((index, object));
        } else {
            manifests.push((index, object));
        }
    }
    for (_, crd) in crds.iter_mut() {
        set_all(&mut crd.value, "labels", &renderers.origin);
    }
    let mut out = crds;
    out.extend(renderers.run(helm_release, manifests)?);
    match separate_hooks {
        Some(true) => out.extend(renderers.run(helm_release, hooks)?),
        _ => out.extend(hooks),
    }
    // Keep the order helm printed; objects a patch made anew (no index) go last.
    out.sort_by_key(|(index, _)| *index);
    Ok(out.into_iter().map(|(_, object)| object).collect())
}

fn api_group(value: &Value) -> &str {
    let api_version = value["apiVersion"].as_str().unwrap_or("");
    match api_version.split_once('/') {
        Some((group, _)) => group,
        None => "",
    }
}

fn post_render_error(helm_release: &Value, step: &str, message: String) -> RenderError {
    RenderError::PostRender {
        helm_release: format!(
            "{}/{}",
            helm_release_namespace(helm_release),
            str_at(helm_release, &["metadata", "name"])
        ),
        step: step.to_string(),
        message,
    }
}

/// The post-renderers of one HelmRelease.
struct Renderers {
    /// `spec.postRenderers[N].kustomize` as a kustomization's `patches` and `images`.
    kustomize: Vec<(usize, Value)>,
    common_labels: Option<Map<String, Value>>,
    common_annotations: Option<Map<String, Value>>,
    origin: Map<String, Value>,
}

impl Renderers {
    fn of(helm_release: &Value) -> Result<Renderers, RenderError> {
        let spec = &helm_release["spec"];
        let mut kustomize = Vec::new();
        if let Some(list) = spec["postRenderers"].as_array() {
            for (n, renderer) in list.iter().enumerate() {
                if let Some(k) = renderer.get("kustomize").filter(|k| !k.is_null()) {
                    kustomize.push((n, k.clone()));
                }
            }
        }
        let string_map = |field: &str| -> Result<Option<Map<String, Value>>, RenderError> {
            match spec["commonMetadata"].get(field) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Object(map)) => {
                    if let Some((key, _)) = map.iter().find(|(_, v)| !v.is_string()) {
                        return Err(post_render_error(
                            helm_release,
                            "commonMetadata",
                            format!("{field}.{key} is not a string"),
                        ));
                    }
                    Ok(Some(map.clone()))
                }
                Some(_) => Err(post_render_error(
                    helm_release,
                    "commonMetadata",
                    format!("{field} is not a mapping"),
                )),
            }
        };
        let (common_labels, common_annotations) = if spec["commonMetadata"].is_object() {
            (string_map("labels")?, string_map("annotations")?)
        } else {
            (None, None)
        };
        let mut origin = Map::new();
        origin.insert(
            format!("{GROUP}/name"),
            Value::String(str_at(helm_release, &["metadata", "name"]).to_string()),
        );
        origin.insert(
            format!("{GROUP}/namespace"),
            Value::String(helm_release_namespace(helm_release)),
        );
        Ok(Renderers {
            kustomize,
            common_labels,
            common_annotations,
            origin,
        })
    }

    /// Runs every post-renderer over one stream of objects, in helm-controller's order.
    fn run(
        &self,
        helm_release: &Value,
        mut stream: Vec<(usize, Rendered)>,
    ) -> Result<Vec<(usize, Rendered)>, RenderError> {
        if stream.is_empty() {
            return Ok(stream);
        }
        for (n, kustomize) in &self.kustomize {
            stream = run_kustomize(kustomize, stream).map_err(|message| {
                post_render_error(
                    helm_release,
                    &format!("postRenderers[{n}].kustomize"),
                    message,
                )
            })?;
        }
        for (_, object) in stream.iter_mut() {
            if let Some(labels) = &self.common_labels {
                set_all(&mut object.value, "labels", labels);
            }
            if let Some(annotations) = &self.common_annotations {
                set_all(&mut object.value, "annotations", annotations);
            }
            set_all(&mut object.value, "labels", &self.origin);
            // A post-renderer may add or remove the hook annotation: Helm sorts hooks from
            // the post-rendered objects.
            object.hook = is_hook(&object.value);
        }
        Ok(stream)
    }
}

/// kustomize's label and annotation transformers on `metadata/<field>` (created when absent).
fn set_all(value: &mut Value, field: &str, entries: &Map<String, Value>) {
    let Some(object) = value.as_object_mut() else {
        return;
    };
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !metadata.is_object() {
        *metadata = Value::Object(Map::new());
    }
    let Some(metadata) = metadata.as_object_mut() else {
        return;
    };
    let target = metadata
        .entry(field)
        .or_insert_with(|| Value::Object(Map::new()));
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Some(target) = target.as_object_mut() {
        for (key, v) in entries {
            target.insert(key.clone(), v.clone());
        }
    }
}

/// One kustomize post-renderer, as helm-controller runs it: a kustomization whose only resource
/// is helm's output, with the renderer's `patches` and `images`, built with no load
/// restriction. Each object carries its index through the build in an annotation.
fn run_kustomize(
    kustomize: &Value,
    stream: Vec<(usize, Rendered)>,
) -> Result<Vec<(usize, Rendered)>, String> {
    let dir = tempfile::Builder::new()
        .prefix("plumb-post-render-")
        .tempdir()
        .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let mut by_index = std::collections::HashMap::new();
    let mut values = Vec::with_capacity(stream.len());
    for (index, object) in stream {
        let mut value = object.value.clone();
        let mut tag = Map::new();
        tag.insert(
            INDEX_ANNOTATION.to_string(),
            Value::String(index.to_string()),
        );
        set_all(&mut value, "annotations", &tag);
        values.push(value);
        by_index.insert(index, object);
    }
    let input = dir.path().join("helm-output.yaml");
    std::fs::write(&input, plumb_yaml::write_stream(&values))
        .map_err(|e| format!("{}: {e}", input.display()))?;

    let mut kustomization = Map::new();
    kustomization.insert(
        "apiVersion".into(),
        Value::String("kustomize.config.k8s.io/v1beta1".into()),
    );
    kustomization.insert("kind".into(), Value::String("Kustomization".into()));
    kustomization.insert(
        "resources".into(),
        Value::Array(vec![Value::String("helm-output.yaml".into())]),
    );
    if let Some(images) = kustomize.get("images").filter(|v| !v.is_null()) {
        kustomization.insert("images".into(), images.clone());
    }
    if let Some(patches) = kustomize.get("patches").filter(|v| !v.is_null()) {
        kustomization.insert("patches".into(), patches.clone());
    }
    let file = dir.path().join("kustomization.yaml");
    let text = plumb_yaml::write_document(&Value::Object(kustomization));
    std::fs::write(&file, &text).map_err(|e| format!("{}: {e}", file.display()))?;

    let fs = plumb_kustomize::FileSystem::confined(dir.path()).map_err(|e| e.to_string())?;
    let options = plumb_kustomize::BuildOptions {
        reorder: plumb_kustomize::Reorder::None,
        load_restrictor: plumb_kustomize::LoadRestrictor::None,
        fs,
        ..Default::default()
    };
    let list = plumb_kustomize::build(dir.path(), &options).map_err(|e| e.to_string())?;

    let mut out = Vec::with_capacity(list.resources.len());
    for resource in &list.resources {
        let mut value = plumb_yaml::to_json(&resource.node).map_err(|e| e.to_string())?;
        let index = take_index(&mut value);
        let (index, source, crd) = match index.and_then(|i| by_index.get(&i).map(|o| (i, o))) {
            Some((i, original)) => (i, original.source.clone(), original.crd),
            None => (usize::MAX, None, false),
        };
        out.push((
            index,
            Rendered {
                hook: is_hook(&value),
                value,
                source,
                crd,
            },
        ));
    }
    Ok(out)
}

/// Removes the index annotation (and `annotations` itself when it was the only one).
fn take_index(value: &mut Value) -> Option<usize> {
    let metadata = value.get_mut("metadata")?.as_object_mut()?;
    let annotations = metadata.get_mut("annotations")?.as_object_mut()?;
    let index = annotations.shift_remove(INDEX_ANNOTATION)?;
    if annotations.is_empty() {
        metadata.shift_remove("annotations");
    }
    index.as_str()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crds_paths() {
        assert!(is_crds_path("app/crds/crd.yaml"));
        assert!(is_crds_path("app/charts/sub/crds/crd.yaml"));
        assert!(is_crds_path("app/charts/sub/charts/deep/crds/x/crd.yaml"));
        assert!(!is_crds_path("app/templates/crds/crd.yaml"));
        assert!(!is_crds_path("app/charts/sub/templates/cm.yaml"));
        assert!(!is_crds_path("app/crds"));
    }

    #[test]
    fn documents_split_on_separator_lines_only() {
        let text = "---\n# Source: a/templates/x.yaml\nkind: A\n---\n# Source: a/templates/y.yaml\nkind: B\nx: \"---\"\n";
        let chunks = split_documents(text);
        assert_eq!(chunks.len(), 2);
        assert!(chunks[1].contains("x: \"---\""));
    }
}
