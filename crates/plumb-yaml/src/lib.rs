//! plumb-yaml: Kubernetes YAML read and written exactly as kustomize and Flux do.
//!
//! It parses multi-document streams into [`Node`]s that keep every scalar's raw text, quote
//! style and tag and the byte span of its source text; resolves scalars as go-yaml v3
//! (kustomize's reader) or v2 (YAML 1.1, Kubernetes' and Flux's reader) would; and writes
//! values back byte for byte as `kustomize build` prints them.
//!
//! ```
//! let docs = plumb_yaml::parse_documents("cm.yaml", "kind: ConfigMap\ndata:\n  on: yes\n").unwrap();
//! let value = plumb_yaml::to_json(&docs[0]).unwrap();
//! assert_eq!(plumb_yaml::write_document(&value), "data:\n  \"on\": \"yes\"\nkind: ConfigMap\n");
//! ```

mod block;
pub mod emit;
pub mod error;
pub mod json;
pub mod node;
pub mod parse;
pub mod resolve;
pub mod source;

pub use emit::{write_document, write_stream};
pub use error::YamlError;
pub use json::{check, from_json, to_json};
pub use node::{shared_tag, Node, NodeKind, Scalar, ScalarStyle};
pub use parse::{
    parse_documents, parse_documents_block, parse_documents_from, parse_documents_granit,
    parse_source,
};
pub use resolve::{Resolved, Schema};
pub use source::{Location, SourceFile, Span};
