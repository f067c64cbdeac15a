//! One module per subcommand.

pub mod kustomize;
pub mod state;
