//! Ownership: every object of the cluster has exactly one writer.

pub mod two_writers;
