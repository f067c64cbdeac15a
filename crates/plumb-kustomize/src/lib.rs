//! plumb-kustomize: the kustomize engine, over plumb-yaml nodes.
//!
//! A build loads a kustomization, accumulates its resources (files and nested kustomizations),
//! runs its transformers as a pipeline of small named steps, and orders the result; the output
//! is byte-identical to `kustomize build`.
//!
//! ```no_run
//! use plumb_kustomize::{build_yaml, BuildOptions};
//! let yaml = build_yaml(std::path::Path::new("overlays/prod"), &BuildOptions::default()).unwrap();
//! print!("{yaml}");
//! ```

pub mod build;
pub mod config;
pub mod context;
pub mod crds;
pub mod error;
pub mod fieldspec;
pub mod fs;
pub mod generate;
pub mod kustomization;
pub mod loader;
mod local_hash;
pub mod openapi;
pub mod patch;
pub mod pattern;
pub mod remote;
pub mod resource;
pub mod schema;
pub mod transform;
pub mod vars;

pub use build::{
    build, build_kustomization, build_over, build_yaml, prepare, BuildOptions, Reorder,
    ResourceList,
};
pub use error::KustomizeError;
pub use fs::FileSystem;
pub use kustomization::Kustomization;
pub use loader::LoadRestrictor;
pub use remote::{prefetch, Prefetch, Remote, RemoteFailure, RemoteKind, RemoteTree};
pub use resource::{Gvk, ResId, Resource};
