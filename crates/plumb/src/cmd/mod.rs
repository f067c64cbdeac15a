//! One module per subcommand.

pub mod build;
pub mod cache;
pub mod check;
pub mod config;
pub mod diff;
pub mod explain;
pub mod fetch;
pub mod graph;
pub mod helm;
pub mod kustomize;
pub mod progress;
pub mod remote;
pub mod render;
pub mod state;
pub mod verify;
