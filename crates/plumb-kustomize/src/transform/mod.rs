//! Transformers: each a small, named step over the resource list, in its own file.

pub mod build_annotations;
pub mod builtin;
pub mod name_prefix_suffix;
pub mod name_reference;
pub mod replacements;
pub mod sort;
