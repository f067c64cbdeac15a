//! A generated Secret: every value base64-encoded under `data`, `type` defaulting to `Opaque`.

use super::args::GeneratorArgs;
use super::kv::Pair;
use super::object::{base_node, set_options, sorted_unique, wrapped_base64};
use plumb_yaml::Node;

/// The Secret `args` asks for, holding `pairs`.
pub fn make(args: &GeneratorArgs, pairs: Vec<Pair>) -> Result<Node, String> {
    let mut node = base_node(args)?;
    let secret_type = if args.secret_type.is_empty() {
        "Opaque"
    } else {
        &args.secret_type
    };
    node.set("type", Node::string(secret_type));
    let mut data = Node::mapping();
    for (key, value) in sorted_unique(&args.name, pairs)? {
        data.set(&key, Node::string(wrapped_base64(&value)));
    }
    if data.keys().next().is_some() {
        node.set("data", data);
    }
    set_options(&mut node, &args.options);
    Ok(node)
}
