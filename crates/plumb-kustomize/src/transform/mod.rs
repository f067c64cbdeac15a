//! Transformers: each a small, named step over the resource list, in its own file.

pub mod annotations;
pub mod build_annotations;
pub mod builtin;
pub mod images;
pub mod labels;
pub mod name_prefix_suffix;
pub mod name_reference;
pub mod namespace;
pub mod patches;
pub mod replacements;
pub mod replicas;
pub mod sort;
pub mod values;
