//! References: every name a Flux object points at resolves to something the cluster will have.

pub mod dangling_reference;
