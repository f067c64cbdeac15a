//! API versions: what the target cluster and Flux still serve.

pub mod removed_api_version;
