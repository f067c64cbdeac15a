//! Ownership: every object of the cluster has exactly one writer.

pub mod bootstrap_adoption;
pub mod two_writers;
