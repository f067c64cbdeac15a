//! The Flux model for plumb: what kustomize-controller does to a repository beyond kustomize.
//!
//! [`build::build_repository`] finds every Flux Kustomization reachable from each entry path
//! and builds it as the controller would ([`generate`]: the generated or amended
//! kustomization; [`postbuild`]: substitution; [`source`]: sources as local directories;
//! [`model`]: typed views of Flux objects). [`varsub`] is Flux's envsubst, implemented to give
//! the same text, and the same failures, as the controller.
//!
//! ```
//! use std::collections::HashMap;
//! use plumb_flux::varsub::{substitute, Mode};
//!
//! let vars = HashMap::from([("cluster".to_string(), "prod-eu".to_string())]);
//! let out = substitute("host: ${cluster}.example.com # $HOME stays", &vars, Mode::Strict).unwrap();
//! assert_eq!(out, "host: prod-eu.example.com # $HOME stays");
//! ```

pub mod artifact;
pub mod bootstrap;
pub mod build;
pub mod config;
pub mod dependencies;
pub mod diagnostic;
mod dir_build;
mod entry_sync;
pub mod fetch;
mod flux_version;
pub mod fluxinstance;
mod found;
pub mod generate;
pub mod graph;
pub mod helm_release;
mod joined;
mod kubectl_applied;
pub mod model;
pub mod output;
mod parallel;
pub mod postbuild;
mod produced;
pub mod resourceset;
pub mod runtime;
mod shared_builds;
pub mod sops;
pub mod sops_status;
pub mod source;
mod source_ignore;
pub mod sync;
pub mod timing;
mod trees;
pub mod unseen;
pub mod varsub;
pub mod yaml_json;
