//! The `openapi:` field: a custom OpenAPI v2 schema (JSON or YAML, `definitions:` with
//! `x-kubernetes-group-version-kind`) that replaces the builtin Kubernetes schema for the whole
//! build, as kustomize does, so strategic merge knows the merge keys of custom kinds. The first
//! kustomization to set one (the outermost) wins. One chosen by a base or component after a
//! resource of a kind the builtin schema does not know was read extends the builtin schema
//! instead (see [`Context::builtin_schema_wanted`]).

use crate::context::Context;
use crate::error::KustomizeError;
use crate::kustomization::Kustomization;
use crate::schema::{Definition, FieldShape, Resource, Schema, ShapeKind};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The Kubernetes version whose schema is built in.
pub const BUILTIN_VERSION: &str = "v1.21.2";

/// Applies the kustomization's `openapi:` field to the build's schema.
pub fn apply(k: &Kustomization, ctx: &mut Context) -> Result<(), KustomizeError> {
    let Some(field) = k.field("openapi") else {
        return Ok(());
    };
    let path = field.str_at(&["path"]).filter(|p| !p.is_empty());
    let version = field.str_at(&["version"]).filter(|v| !v.is_empty());
    match (path, version) {
        (Some(_), Some(_)) => Err(KustomizeError::Other(
            "builtin version and custom schema provided, cannot use both".into(),
        )),
        (None, Some(v)) if v != BUILTIN_VERSION => Err(KustomizeError::Unsupported(format!(
            "openapi version {v:?} is not built in: plumb has the Kubernetes {BUILTIN_VERSION} schema ({})",
            k.path.display()
        ))),
        (None, None) => Ok(()),
        (None, Some(_)) => {
            ctx.schema_chosen = true;
            Ok(())
        }
        (Some(p), None) => {
            if ctx.schema_chosen {
                return Ok(());
            }
            ctx.schema_chosen = true;
            let file = crate::loader::clean(&k.dir().join(p));
            crate::loader::check_restrictor(ctx.options.load_restrictor, k.dir(), &file)?;
            let text = ctx.options.fs.read_text(&file)?;
            let doc: Value = if text.trim_start().starts_with('{') {
                serde_json::from_str(&text).map_err(|e| KustomizeError::Io {
                    path: file.clone(),
                    message: format!("not a valid OpenAPI schema: {e}"),
                })?
            } else {
                let docs = plumb_yaml::parse_documents(&file, &text)?;
                match docs.first() {
                    Some(d) => plumb_yaml::to_json(d)?,
                    None => Value::Null,
                }
            };
            let mut schema = from_openapi(&doc);
            if ctx.builtin_schema_wanted {
                schema.extend_from(Schema::builtin());
            }
            ctx.schema = Cow::Owned(schema);
            Ok(())
        }
    }
}

/// Converts OpenAPI v2 `definitions` into a schema.
pub fn from_openapi(doc: &Value) -> Schema {
    let mut schema = Schema::default();
    let empty = Map::new();
    let defs = doc
        .get("definitions")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (name, def) in defs {
        add_definition(&mut schema, name, def);
        for gvk in def
            .get("x-kubernetes-group-version-kind")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let text = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or("");
            let api_version = if text("group").is_empty() {
                text("version").to_string()
            } else {
                format!("{}/{}", text("group"), text("version"))
            };
            schema.add_resource(
                &api_version,
                text("kind"),
                Resource {
                    definition: Some(name.clone()),
                    namespaced: None,
                },
            );
        }
    }
    schema
}

fn add_definition(schema: &mut Schema, name: &str, def: &Value) {
    let mut out = Definition::default();
    if let Some(props) = def.get("properties").and_then(Value::as_object) {
        for (field, p) in props {
            let shape = shape(schema, &format!("{name}.{field}"), p);
            if shape.kind != ShapeKind::Scalar || shape.strategy.is_some() {
                out.fields.insert(field.clone(), shape);
            }
        }
    }
    if let Some(ap) = def.get("additionalProperties").filter(|v| v.is_object()) {
        out.values = Some(shape(schema, &format!("{name}.*"), ap));
    }
    schema.add_definition(name, out);
}

fn shape(schema: &mut Schema, inline_name: &str, p: &Value) -> FieldShape {
    let text = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
    let kind = if let Some(r) = text("$ref") {
        ShapeKind::Object(r.trim_start_matches("#/definitions/").to_string())
    } else if text("type").as_deref() == Some("array") || p.get("items").is_some() {
        let items = p.get("items").cloned().unwrap_or(Value::Null);
        ShapeKind::List(Box::new(shape(schema, &format!("{inline_name}[]"), &items)))
    } else if p.get("properties").is_some() {
        add_definition(schema, inline_name, p);
        ShapeKind::Object(inline_name.to_string())
    } else if let Some(ap) = p.get("additionalProperties").filter(|v| v.is_object()) {
        ShapeKind::Map(Box::new(shape(schema, &format!("{inline_name}.*"), ap)))
    } else {
        ShapeKind::Scalar
    };
    let mut out = FieldShape::new(kind);
    out.strategy = text("x-kubernetes-patch-strategy");
    out.merge_key = text("x-kubernetes-patch-merge-key");
    out.map_keys = p
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|v| {
            v.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    out
}
