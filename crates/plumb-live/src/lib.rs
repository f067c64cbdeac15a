//! `plumb verify`'s cluster side: the live cluster read through the kubeconfig with the real
//! `kube` client, read-only (discovery and one list per kind), and compared with the build of
//! the repository ([`checks`]).

pub mod checks;
pub mod read;

pub use checks::{verify, Check, Expect, Outcome};
pub use read::{Cluster, Kind, Live, LiveError};
