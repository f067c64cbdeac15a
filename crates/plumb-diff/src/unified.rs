//! Unified diffs of objects' YAML.

use serde_json::Value;
use similar::TextDiff;

/// Lines of context around each change, as `git diff` shows.
const CONTEXT: usize = 3;

/// A unified diff from `base` to `head` (either may be absent: an added or removed object),
/// headed `--- base/<title>` and `+++ head/<title>`, or `/dev/null` for the missing side.
pub fn unified(title: &str, base: Option<&Value>, head: Option<&Value>) -> String {
    let old = base.map(plumb_yaml::write_document).unwrap_or_default();
    let new = head.map(plumb_yaml::write_document).unwrap_or_default();
    let old_name = match base {
        Some(_) => format!("base/{title}"),
        None => "/dev/null".to_string(),
    };
    let new_name = match head {
        Some(_) => format!("head/{title}"),
        None => "/dev/null".to_string(),
    };
    let diff = TextDiff::from_lines(&old, &new);
    let mut out = diff
        .unified_diff()
        .context_radius(CONTEXT)
        .header(&old_name, &new_name)
        .to_string();
    if !out.ends_with('\n') && !out.is_empty() {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_change_is_one_hunk_with_context() {
        let a = json!({"kind": "ConfigMap", "data": {"a": "1", "b": "2"}});
        let b = json!({"kind": "ConfigMap", "data": {"a": "1", "b": "3"}});
        let d = unified("ConfigMap x", Some(&a), Some(&b));
        assert!(
            d.starts_with("--- base/ConfigMap x\n+++ head/ConfigMap x\n@@ "),
            "{d}"
        );
        assert!(d.contains("\n-  b: \"2\"\n+  b: \"3\"\n"), "{d}");
    }

    #[test]
    fn an_added_object_is_all_additions() {
        let b = json!({"kind": "ConfigMap"});
        let d = unified("ConfigMap x", None, Some(&b));
        assert!(
            d.starts_with("--- /dev/null\n+++ head/ConfigMap x\n@@ -0,0 +1 @@\n+kind: ConfigMap\n"),
            "{d}"
        );
    }
}
