//! A generated ConfigMap: UTF-8 values under `data`, anything else base64-encoded under
//! `binaryData`, keys in sorted order.

use super::args::GeneratorArgs;
use super::kv::Pair;
use super::object::{base_node, set_options, sorted_unique, wrapped_base64};
use plumb_yaml::Node;

/// The ConfigMap `args` asks for, holding `pairs`.
pub fn make(args: &GeneratorArgs, pairs: Vec<Pair>) -> Result<Node, String> {
    let mut node = base_node(args)?;
    let mut data = Node::mapping();
    let mut binary = Node::mapping();
    for (key, value) in sorted_unique(&args.name, pairs)? {
        match String::from_utf8(value) {
            Ok(text) => data.set(&key, Node::string(text)),
            Err(e) => binary.set(&key, Node::string(wrapped_base64(e.as_bytes()))),
        }
    }
    if binary.keys().next().is_some() {
        node.set("binaryData", binary);
    }
    if data.keys().next().is_some() {
        node.set("data", data);
    }
    set_options(&mut node, &args.options);
    Ok(node)
}
