//! The `crds:` field: OpenAPI definitions of custom types (the Go-generated JSON or YAML
//! format, `{"<pkg>.<Kind>": {"Schema": {...}}}`) whose properties carry kustomize's
//! `x-kubernetes-*` extensions, turned into transformer configuration: which fields of the
//! custom kinds name other objects (`x-kubernetes-object-ref-kind`), hold labels or
//! annotations, or are the object's identity (prefixed like a name).

use crate::error::KustomizeError;
use crate::fieldspec::FieldSpec;
use crate::kustomization::Kustomization;
use crate::resource::Gvk;
use crate::transform::name_reference::BackReference;
use serde_json::{Map, Value};

/// What a list of CRD files adds to the transformer configuration.
#[derive(Debug, Default, Clone)]
pub struct CrdConfig {
    pub name_references: Vec<BackReference>,
    pub labels: Vec<FieldSpec>,
    pub annotations: Vec<FieldSpec>,
    pub prefixes: Vec<FieldSpec>,
}

impl CrdConfig {
    /// Whether the files added nothing.
    pub fn is_empty(&self) -> bool {
        self.name_references.is_empty()
            && self.labels.is_empty()
            && self.annotations.is_empty()
            && self.prefixes.is_empty()
    }
}

/// Reads the kustomization's `crds:` files.
pub fn load(k: &Kustomization, ctx: &crate::context::Context) -> Result<CrdConfig, KustomizeError> {
    let mut out = CrdConfig::default();
    for entry in k.string_list("crds")? {
        let path = crate::loader::clean(&k.dir().join(&entry));
        crate::loader::check_restrictor(ctx.options.load_restrictor, k.dir(), &path)?;
        let text = ctx.options.fs.read_text(&path)?;
        let defs: Map<String, Value> = if text.trim_start().starts_with('{') {
            serde_json::from_str(&text).map_err(|e| {
                KustomizeError::Other(format!(
                    "unable to parse open API definition from '{entry}': {e}"
                ))
            })?
        } else {
            let docs = plumb_yaml::parse_documents(&path, &text)?;
            match docs.first().map(plumb_yaml::to_json).transpose()? {
                Some(Value::Object(m)) => m,
                _ => Map::new(),
            }
        };
        // Definitions in name order, so that the result does not depend on map order.
        let mut names: Vec<&String> = defs.keys().collect();
        names.sort();
        for name in names {
            let props = properties(&defs[name.as_str()]);
            if !["kind", "apiVersion", "metadata"]
                .iter()
                .all(|p| props.is_some_and(|m| m.contains_key(*p)))
            {
                continue;
            }
            let gvk = Gvk {
                kind: name.rsplit('.').next().unwrap_or(name).into(),
                ..Gvk::default()
            };
            walk(&defs, name, &gvk, &mut Vec::new(), &mut out, 0);
        }
    }
    Ok(out)
}

fn properties(def: &Value) -> Option<&Map<String, Value>> {
    def.get("Schema")?.get("properties")?.as_object()
}

fn spec(gvk: &Gvk, path: &[String]) -> FieldSpec {
    FieldSpec {
        group: gvk.group.as_str().into(),
        version: gvk.version.as_str().into(),
        kind: gvk.kind.as_str().into(),
        path: path.to_vec(),
        create: false,
    }
}

fn walk(
    defs: &Map<String, Value>,
    type_name: &str,
    gvk: &Gvk,
    path: &mut Vec<String>,
    out: &mut CrdConfig,
    depth: usize,
) {
    // Definitions can refer to each other in a cycle; real schemas are far shallower.
    if depth > 32 {
        return;
    }
    let Some(props) = defs.get(type_name).and_then(properties) else {
        return;
    };
    let mut names: Vec<&String> = props.keys().collect();
    names.sort();
    for prop in names {
        let p = &props[prop.as_str()];
        path.push(prop.clone());
        if p.get("x-kubernetes-annotation").is_some() {
            out.annotations.push(spec(gvk, path));
        }
        if p.get("x-kubernetes-label-selector").is_some() {
            out.labels.push(spec(gvk, path));
        }
        if p.get("x-kubernetes-identity").is_some() {
            out.prefixes.push(spec(gvk, path));
        }
        if let (Some(version), Some(kind)) = (
            p.get("x-kubernetes-object-ref-api-version")
                .and_then(Value::as_str),
            p.get("x-kubernetes-object-ref-kind")
                .and_then(Value::as_str),
        ) {
            let key = p
                .get("x-kubernetes-object-ref-name-key")
                .and_then(Value::as_str)
                .unwrap_or("name");
            let mut ref_path = path.clone();
            ref_path.push(key.to_string());
            out.name_references.push(BackReference {
                target: Gvk {
                    group: Default::default(),
                    version: version.into(),
                    kind: kind.into(),
                },
                referrers: vec![spec(gvk, &ref_path)],
            });
        }
        if let Some(r) = p.get("$ref").and_then(Value::as_str) {
            walk(defs, r, gvk, path, out, depth + 1);
        }
        path.pop();
    }
}
