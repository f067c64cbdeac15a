//! Patching resources as kustomize does: strategic merge patches ([`strategic`]), JSON 6902
//! patches ([`json6902`]), and the `target` selectors that pick the resources a patch applies
//! to ([`selector`]).
//!
//! The semantics follow kustomize's kyaml walker (merge2) and evanphx/json-patch v4 down to
//! their quirks, because the output must match `kustomize build` byte for byte.

pub mod json6902;
pub mod selector;
pub mod strategic;

use crate::error::KustomizeError;
use plumb_yaml::Node;

/// `file:line:col: ` for a node that remembers where it came from, else nothing.
pub(crate) fn location(node: &Node) -> String {
    match &node.span {
        Some(span) => {
            let loc = span.location();
            format!(
                "{}:{}:{}: ",
                span.file.path().display(),
                loc.line,
                loc.column
            )
        }
        None => String::new(),
    }
}

/// An error about `node`, prefixed with where the node was written.
pub(crate) fn error_at(node: &Node, message: impl AsRef<str>) -> KustomizeError {
    KustomizeError::Other(format!("{}{}", location(node), message.as_ref()))
}
