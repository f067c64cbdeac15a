//! What differs between two builds without being a change to the cluster's behaviour.
//!
//! - The labels charts stamp with their own version (`helm.sh/chart: app-1.2.3`,
//!   `app.kubernetes.io/version`): a chart bump changes them on every object it renders.
//! - The hash kustomize appends to a generated ConfigMap's or Secret's name when the content
//!   did not change (the hash moved because its options or labels did), and the references to
//!   that name in other objects.
//!
//! [`normalise`] removes both, so that an object whose only difference is noise compares equal.

use serde_json::Value;
use std::collections::HashMap;

/// The labels that change with every chart version.
pub const CHART_LABELS: [&str; 2] = ["helm.sh/chart", "app.kubernetes.io/version"];

/// The name without kustomize's content-hash suffix: `-` and ten characters of its alphabet
/// (hex digits with `0 1 3 a e` replaced by `g h k m t`, so no vowels), for a generated kind.
pub fn generated_stem<'a>(kind: &str, name: &'a str) -> Option<&'a str> {
    if kind != "ConfigMap" && kind != "Secret" {
        return None;
    }
    let (stem, hash) = name.rsplit_once('-')?;
    let alphabet = |c: char| {
        matches!(
            c,
            '2' | '4'..='9' | 'b' | 'c' | 'd' | 'f' | 'g' | 'h' | 'k' | 'm' | 't'
        )
    };
    (hash.len() == 10 && hash.chars().all(alphabet) && !stem.is_empty()).then_some(stem)
}

/// `value` without chart labels (in every `labels` map of the object, so pod templates and
/// claim templates too) and with every string equal to a head-side generated name in
/// `renames` replaced by its base-side name.
pub fn normalise(value: &Value, renames: &HashMap<String, String>) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("labels", Value::Object(labels)) => Value::Object(
                            labels
                                .iter()
                                .filter(|(l, _)| !CHART_LABELS.contains(&l.as_str()))
                                .map(|(l, v)| (l.clone(), normalise(v, renames)))
                                .collect(),
                        ),
                        _ => normalise(v, renames),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| normalise(v, renames)).collect()),
        Value::String(s) => match renames.get(s) {
            Some(base) => Value::String(base.clone()),
            None => value.clone(),
        },
        other => other.clone(),
    }
}

/// What the noise between `base` and `head` is, once they compare equal normalised: the chart
/// labels that differ, and whether renamed references do.
pub fn describe(base: &Value, head: &Value, renames: &HashMap<String, String>) -> String {
    let mut labels = Vec::new();
    collect_label_changes(base, head, &mut labels);
    labels.sort();
    labels.dedup();
    let mut parts = Vec::new();
    if !labels.is_empty() {
        parts.push(format!("chart labels ({})", labels.join(", ")));
    }
    if normalise(head, renames) != normalise(head, &HashMap::new()) {
        parts.push("references to a generated name whose hash changed".to_string());
    }
    if parts.is_empty() {
        parts.push("nothing but noise".to_string());
    }
    parts.join("; ")
}

/// Whether `base` and `head` differ in noise (whatever else they differ in).
pub fn differs_in_noise(base: &Value, head: &Value, renames: &HashMap<String, String>) -> bool {
    let mut labels = Vec::new();
    collect_label_changes(base, head, &mut labels);
    !labels.is_empty() || normalise(head, renames) != normalise(head, &HashMap::new())
}

fn collect_label_changes(base: &Value, head: &Value, out: &mut Vec<String>) {
    match (base, head) {
        (Value::Object(b), Value::Object(h)) => {
            for (k, bv) in b {
                let Some(hv) = h.get(k) else { continue };
                if k == "labels" {
                    for label in CHART_LABELS {
                        if bv.get(label) != hv.get(label) {
                            out.push(label.to_string());
                        }
                    }
                }
                collect_label_changes(bv, hv, out);
            }
        }
        (Value::Array(b), Value::Array(h)) => {
            for (bv, hv) in b.iter().zip(h) {
                collect_label_changes(bv, hv, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn generated_stems_need_kustomizes_alphabet() {
        assert_eq!(generated_stem("ConfigMap", "vars-7t2m9dkb5f"), Some("vars"));
        assert_eq!(generated_stem("Secret", "a-b-gh45kt6m2c"), Some("a-b"));
        // A vowel or a 0 is never in kustomize's hash.
        assert_eq!(generated_stem("ConfigMap", "vars-7t2m9dkb5a"), None);
        assert_eq!(generated_stem("ConfigMap", "vars-0000000000"), None);
        assert_eq!(generated_stem("ConfigMap", "vars-7t2m9dkb5"), None);
        assert_eq!(generated_stem("Deployment", "web-7t2m9dkb5f"), None);
    }

    #[test]
    fn chart_labels_go_everywhere_and_nothing_else_does() {
        let v = json!({"metadata": {"labels": {"helm.sh/chart": "a-1", "app": "a"}},
            "spec": {"template": {"metadata": {"labels": {"app.kubernetes.io/version": "1", "app": "a"}}},
                     "selector": {"matchLabels": {"app": "a"}}}});
        let n = normalise(&v, &HashMap::new());
        assert_eq!(n["metadata"]["labels"], json!({"app": "a"}));
        assert_eq!(
            n["spec"]["template"]["metadata"]["labels"],
            json!({"app": "a"})
        );
        assert_eq!(n["spec"]["selector"], v["spec"]["selector"]);
    }

    #[test]
    fn renamed_references_read_as_the_base_name() {
        let renames =
            HashMap::from([("vars-gh45kt6m2c".to_string(), "vars-7t2m9dkb5f".to_string())]);
        let v = json!({"spec": {"volumes": [{"configMap": {"name": "vars-gh45kt6m2c"}}]}});
        let n = normalise(&v, &renames);
        assert_eq!(
            n["spec"]["volumes"][0]["configMap"]["name"],
            "vars-7t2m9dkb5f"
        );
        assert!(describe(&n, &v, &renames).contains("generated name"));
    }
}
