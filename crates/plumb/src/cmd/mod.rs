//! One module per subcommand.

pub mod kustomize;
