//! What ConfigMaps and Secrets share when generated: the skeleton object, the check for
//! repeated keys, and the options that become labels, annotations and `immutable`.

use super::args::{GeneratorArgs, GeneratorOptions};
use super::kv::Pair;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use plumb_yaml::Node;
use std::collections::BTreeMap;

/// `apiVersion: v1`, the kind, and the name and namespace.
pub fn base_node(args: &GeneratorArgs) -> Result<Node, String> {
    if args.name.is_empty() {
        // kustomize says "configmap" for Secrets too.
        return Err("a configmap must have a name".into());
    }
    let mut node = Node::mapping();
    node.set("apiVersion", Node::string("v1"));
    node.set("kind", Node::string(args.kind.as_str()));
    let mut meta = Node::mapping();
    meta.set("name", Node::string(args.name.as_str()));
    if !args.namespace.is_empty() {
        meta.set("namespace", Node::string(args.namespace.as_str()));
    }
    node.set("metadata", meta);
    Ok(node)
}

/// The pairs keyed and sorted, refusing a key given twice.
pub fn sorted_unique(name: &str, pairs: Vec<Pair>) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut out = BTreeMap::new();
    for pair in pairs {
        if out.contains_key(&pair.key) {
            // kustomize says "configmap" for Secrets too.
            return Err(format!(
                "configmap {name} illegally repeats the key `{}`",
                pair.key
            ));
        }
        out.insert(pair.key, pair.value);
    }
    Ok(out)
}

/// Labels and annotations from the options, and `immutable: true` when asked.
pub fn set_options(node: &mut Node, options: &GeneratorOptions) {
    for (field, map) in [
        ("labels", &options.labels),
        ("annotations", &options.annotations),
    ] {
        let Some(map) = map.as_ref().filter(|m| !m.is_empty()) else {
            continue;
        };
        if let Some(target) = node
            .ensure_mapping("metadata")
            .and_then(|meta| meta.ensure_mapping(field))
        {
            for (k, v) in map {
                target.set(k, Node::string(v.as_str()));
            }
        }
    }
    if options.immutable {
        node.set("immutable", Node::plain("true"));
    }
}

/// Base64 as kustomize writes generated values: once the encoding reaches 70 characters it is
/// cut into lines of 70, each ending in a newline (the last one too); shorter stays one line.
pub fn wrapped_base64(bytes: &[u8]) -> String {
    const LINE: usize = 70;
    let encoded = STANDARD.encode(bytes);
    if encoded.len() < LINE {
        return encoded;
    }
    let mut out = String::with_capacity(encoded.len() + encoded.len() / LINE + 1);
    for chunk in encoded.as_bytes().chunks(LINE) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::wrapped_base64;

    #[test]
    fn base64_wraps_at_seventy_characters() {
        assert_eq!(wrapped_base64(b"secret"), "c2VjcmV0");
        // 51 bytes encode to 68 characters, 52 to 72, 105 to exactly 140.
        assert!(!wrapped_base64(&[0; 51]).contains('\n'));
        let two = wrapped_base64(&[0; 52]);
        assert_eq!(two.lines().map(str::len).collect::<Vec<_>>(), vec![70, 2]);
        assert!(two.ends_with('\n'));
        let exact = wrapped_base64(&[0; 105]);
        assert_eq!(
            exact.lines().map(str::len).collect::<Vec<_>>(),
            vec![70, 70]
        );
    }
}
