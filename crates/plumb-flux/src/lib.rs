//! The Flux model for plumb: what kustomize-controller does to a repository beyond kustomize.
//!
//! For now this is [`varsub`], Flux's postBuild variable substitution (`${VAR}`, defaults and
//! the bash-like string operators) implemented to give the same text, and the same failures,
//! as the controller.
//!
//! ```
//! use std::collections::HashMap;
//! use plumb_flux::varsub::{substitute, Mode};
//!
//! let vars = HashMap::from([("cluster".to_string(), "prod-eu".to_string())]);
//! let out = substitute("host: ${cluster}.example.com # $HOME stays", &vars, Mode::Strict).unwrap();
//! assert_eq!(out, "host: prod-eu.example.com # $HOME stays");
//! ```

pub mod sops;
pub mod varsub;
