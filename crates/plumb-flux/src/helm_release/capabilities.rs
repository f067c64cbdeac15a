//! What a chart is rendered for: the Kubernetes version and the API versions the cluster will
//! serve beyond the built-in ones (those helm knows itself): every group/version, and
//! group/version/Kind, of the CRDs the build produces.

use crate::model::Object;
use std::collections::BTreeSet;

/// The Kubernetes version charts are rendered for when `.plumb.yaml` sets no
/// `kubernetesVersion` (the same default `plumb check` uses).
pub const DEFAULT_KUBERNETES_VERSION: &str = "1.34";

/// `1.34` → `1.34.0`: helm's `--kube-version` takes a full version.
pub fn kube_version(configured: Option<&str>) -> String {
    let text = configured.unwrap_or(DEFAULT_KUBERNETES_VERSION);
    let bare = text.trim_start_matches('v');
    match bare.split('.').count() {
        2 => format!("{bare}.0"),
        _ => bare.to_string(),
    }
}

/// The API versions the CRDs among `objects` serve: `group/version` and `group/version/Kind`
/// for each served version.
pub fn crd_api_versions<'a>(objects: impl IntoIterator<Item = &'a Object>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for object in objects {
        if object.kind() != "CustomResourceDefinition" || object.group() != "apiextensions.k8s.io" {
            continue;
        }
        let spec = &object.value["spec"];
        let (Some(group), Some(kind)) = (spec["group"].as_str(), spec["names"]["kind"].as_str())
        else {
            continue;
        };
        for version in spec["versions"].as_array().into_iter().flatten() {
            if version["served"].as_bool() == Some(false) {
                continue;
            }
            if let Some(name) = version["name"].as_str() {
                out.insert(format!("{group}/{name}"));
                out.insert(format!("{group}/{name}/{kind}"));
            }
        }
    }
    out
}

/// Whether objects of a CRD-defined kind are namespaced: from the CRDs among `objects`.
pub fn crd_scopes<'a>(
    objects: impl IntoIterator<Item = &'a Object>,
) -> std::collections::HashMap<(String, String), bool> {
    let mut out = std::collections::HashMap::new();
    for object in objects {
        if object.kind() != "CustomResourceDefinition" {
            continue;
        }
        let spec = &object.value["spec"];
        let (Some(group), Some(kind)) = (spec["group"].as_str(), spec["names"]["kind"].as_str())
        else {
            continue;
        };
        let namespaced = spec["scope"].as_str() != Some("Cluster");
        out.insert((group.to_string(), kind.to_string()), namespaced);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn served_versions_of_crds_only() {
        let crd = Object {
            value: json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "certificates.cert-manager.io"},
                "spec": {
                    "group": "cert-manager.io",
                    "names": {"kind": "Certificate"},
                    "scope": "Namespaced",
                    "versions": [{"name": "v1", "served": true}, {"name": "v1alpha2", "served": false}],
                },
            }),
            origin: None,
        };
        let other = Object {
            value: json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
            origin: None,
        };
        let got: Vec<String> = crd_api_versions([&crd, &other]).into_iter().collect();
        assert_eq!(
            got,
            ["cert-manager.io/v1", "cert-manager.io/v1/Certificate"]
        );
        assert_eq!(
            crd_scopes([&crd]).get(&("cert-manager.io".into(), "Certificate".into())),
            Some(&true)
        );
    }

    #[test]
    fn kube_versions_are_completed() {
        assert_eq!(kube_version(None), "1.34.0");
        assert_eq!(kube_version(Some("1.31")), "1.31.0");
        assert_eq!(kube_version(Some("v1.31.4")), "1.31.4");
    }
}
