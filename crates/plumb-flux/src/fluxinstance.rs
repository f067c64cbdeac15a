//! The objects flux-operator generates for a FluxInstance's `spec.sync`: the source
//! (GitRepository, OCIRepository or Bucket) and the root Kustomization, named after the
//! instance's namespace (or `sync.name`), with `spec.kustomize.patches` and
//! `spec.commonMetadata` applied as the operator applies them.
//!
//! The operator writes the sync objects into a kustomization beside the Flux components, with
//! the instance's patches as that kustomization's `patches:` and its labels and annotations
//! as transformers, and runs kustomize. plumb does the same with the sync objects alone (the
//! components are not built), so a patch that adds `decryption` or `postBuild` to the
//! generated Kustomization reaches the build.

use crate::diagnostic::{Code, Diagnostic};
use crate::model::{FluxKustomization, Object};
use crate::sync::ClusterSync;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

/// The sync objects the operator generates for `sync`, source first, patched. An error says
/// why kustomize refused the instance's patches.
pub fn sync_objects(sync: &ClusterSync) -> Result<Vec<Value>, String> {
    let spec = &sync.instance;
    let namespace = sync.source.namespace.as_str();
    let s = spec.get("sync").cloned().unwrap_or(Value::Null);
    let text = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("");
    let kind = sync.source.kind.as_str();
    let name = sync.source.name.as_str();
    let source_api = match kind {
        "GitRepository" => "source.toolkit.fluxcd.io/v1",
        _ => source_api_version(sync.flux_version.as_deref()),
    };
    let mut source_spec = serde_json::Map::new();
    source_spec.insert(
        "interval".into(),
        json!(go_duration(
            s.get("interval").and_then(Value::as_str).unwrap_or("1m")
        )),
    );
    match kind {
        "GitRepository" => {
            source_spec.insert("ref".into(), json!({"name": text("ref")}));
        }
        "OCIRepository" => {
            source_spec.insert("ref".into(), json!({"tag": text("ref")}));
        }
        _ => {
            source_spec.insert("bucketName".into(), json!(text("ref")));
        }
    }
    if !text("pullSecret").is_empty() {
        source_spec.insert("secretRef".into(), json!({"name": text("pullSecret")}));
    }
    if !text("provider").is_empty() {
        source_spec.insert("provider".into(), json!(text("provider")));
    }
    let url_key = if kind == "Bucket" { "endpoint" } else { "url" };
    source_spec.insert(url_key.into(), json!(text("url")));
    let source = json!({
        "apiVersion": source_api,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": source_spec,
    });
    let kustomization = json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "interval": "10m0s",
            "path": text("path"),
            "prune": true,
            "sourceRef": {"kind": kind, "name": name},
        },
    });
    let patches = spec
        .pointer("/kustomize/patches")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut objects = vec![source, kustomization];
    if !patches.is_empty() {
        objects = patch(objects, &patches, namespace)?;
    }
    // The operator's own labels and annotations (the Flux version label is left out: which
    // version `2.x` resolves to is the operator's registry lookup), then commonMetadata.
    let labels = [
        ("app.kubernetes.io/managed-by", "flux-operator"),
        ("app.kubernetes.io/instance", namespace),
        ("app.kubernetes.io/part-of", "flux"),
    ];
    let annotations = [
        ("kustomize.toolkit.fluxcd.io/ssa", "Ignore"),
        ("kustomize.toolkit.fluxcd.io/prune", "Disabled"),
    ];
    for object in &mut objects {
        let meta = &mut object["metadata"];
        for (k, v) in labels {
            meta["labels"][k] = json!(v);
        }
        for (k, v) in annotations {
            meta["annotations"][k] = json!(v);
        }
        for field in ["labels", "annotations"] {
            if let Some(map) = spec
                .pointer(&format!("/commonMetadata/{field}"))
                .and_then(Value::as_object)
            {
                for (k, v) in map {
                    meta[field][k] = v.clone();
                }
            }
        }
    }
    Ok(objects)
}

/// The root Kustomization of `sync`, as the operator generates it. A sync that is not a
/// FluxInstance's (the one `flux bootstrap` made) is the bare Kustomization.
pub fn sync_kustomization(sync: &ClusterSync) -> FluxKustomization {
    let origin = sync.origin.clone().map(Arc::new);
    let bare = json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": sync.source.name, "namespace": sync.source.namespace},
        "spec": {
            "path": sync.path,
            "sourceRef": {"kind": sync.source.kind, "name": sync.source.name},
        },
    });
    if sync.instance.get("sync").is_none() {
        return FluxKustomization::from_object(Object {
            value: bare,
            origin,
        });
    }
    match sync_objects(sync) {
        Ok(objects) => {
            let value = objects
                .into_iter()
                .find(|o| o["kind"] == "Kustomization")
                .unwrap_or(bare);
            let mut ks = FluxKustomization::from_object(Object { value, origin });
            // The path as Flux reads it (relative to the source root), as discovery cleaned it.
            ks.path = Some(crate::source::clean_relative(
                ks.path.as_deref().unwrap_or(""),
            ));
            ks
        }
        Err(why) => {
            let mut ks = FluxKustomization::from_object(Object {
                value: bare,
                origin: origin.clone(),
            });
            ks.problems.push(
                Diagnostic::error(
                    Code::InvalidSpec,
                    format!(
                        "{}: spec.kustomize.patches cannot be applied to the sync objects: {why}",
                        sync.via
                    ),
                )
                .at(origin.as_deref()),
            );
            ks
        }
    }
}

/// `objects` with `patches` applied by kustomize, as the operator applies them (a
/// kustomization listing the objects, the instance's namespace and its patches), in memory as
/// the operator builds: written to a temporary directory and read back, they cost a
/// millisecond before the first Kustomization of a cluster could be built. Its directory is
/// one that holds nothing: the operator's patches are inline, and a `path:` finds no file.
fn patch(objects: Vec<Value>, patches: &[Value], namespace: &str) -> Result<Vec<Value>, String> {
    let dir = Path::new("/.plumb-flux-instance");
    let sync = dir.join("sync.yaml");
    let resources = plumb_kustomize::build::parse_resources(
        &sync,
        &plumb_yaml::write_stream(&objects),
        sync.clone(),
    )
    .map_err(|e| e.to_string())?;
    let kustomization = json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "namespace": namespace,
        "patches": patches,
    });
    let k = plumb_kustomize::Kustomization::parse(
        &dir.join("kustomization.yaml"),
        &plumb_yaml::write_stream(&[kustomization]),
    )
    .map_err(|e| e.to_string())?;
    let list = plumb_kustomize::build_over(
        &k,
        plumb_kustomize::ResourceList { resources },
        &plumb_kustomize::BuildOptions::default(),
    )
    .map_err(|e| e.to_string())?;
    list.resources
        .iter()
        .map(|r| plumb_yaml::to_json(&r.node).map_err(|e| e.to_string()))
        .collect()
}

/// The source API version the operator writes for OCIRepository and Bucket: `v1` from Flux
/// 2.6, `v1beta2` before (a version it cannot read, `2.x`, is the newest).
fn source_api_version(version: Option<&str>) -> &'static str {
    let Some(v) = version else {
        return "source.toolkit.fluxcd.io/v1";
    };
    let mut parts = v.trim_start_matches('v').split('.');
    let major = parts.next().and_then(|p| p.parse::<u32>().ok());
    let minor = parts.next().and_then(|p| p.parse::<u32>().ok());
    match (major, minor) {
        (Some(2), Some(m)) if m < 6 => "source.toolkit.fluxcd.io/v1beta2",
        (Some(0 | 1), _) => "source.toolkit.fluxcd.io/v1beta2",
        _ => "source.toolkit.fluxcd.io/v1",
    }
}

/// A duration as Go's `time.Duration.String()` prints it (`1m` is `1m0s`, `90s` is `1m30s`);
/// text it cannot read is kept as written.
pub fn go_duration(text: &str) -> String {
    let Some(nanos) = parse_duration(text) else {
        return text.to_string();
    };
    if nanos == 0 {
        return "0s".into();
    }
    if nanos < 1_000_000_000 {
        return match nanos {
            n if n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
            n if n % 1_000 == 0 => format!("{}µs", n / 1_000),
            n => format!("{n}ns"),
        };
    }
    let hours = nanos / 3_600_000_000_000;
    let minutes = nanos / 60_000_000_000 % 60;
    let rest = nanos % 60_000_000_000;
    let seconds = match rest % 1_000_000_000 {
        0 => format!("{}s", rest / 1_000_000_000),
        frac => {
            let f = format!("{:09}", frac);
            format!("{}.{}s", rest / 1_000_000_000, f.trim_end_matches('0'))
        }
    };
    match (hours, minutes) {
        (0, 0) => seconds,
        (0, m) => format!("{m}m{seconds}"),
        (h, m) => format!("{h}h{m}m{seconds}"),
    }
}

/// Nanoseconds of a Kubernetes duration (`1h30m`, `10s`, `1.5m`, `500ms`).
fn parse_duration(text: &str) -> Option<u128> {
    let mut total: f64 = 0.0;
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "h" => 3_600e9,
            "m" => 60e9,
            "s" => 1e9,
            "ms" => 1e6,
            "us" | "µs" => 1e3,
            "ns" => 1.0,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += number * scale;
    }
    Some(total.round() as u128)
}

#[cfg(test)]
mod tests {
    use super::go_duration;

    #[test]
    fn durations_print_as_go_prints_them() {
        for (given, printed) in [
            ("1m", "1m0s"),
            ("10m", "10m0s"),
            ("90s", "1m30s"),
            ("1h", "1h0m0s"),
            ("1h30m", "1h30m0s"),
            ("30s", "30s"),
            ("1.5s", "1.5s"),
            ("500ms", "500ms"),
            ("soon", "soon"),
        ] {
            assert_eq!(go_duration(given), printed, "{given}");
        }
    }
}
