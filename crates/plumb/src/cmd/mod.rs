//! One module per subcommand.

pub mod build;
pub mod graph;
pub mod kustomize;
pub mod state;
