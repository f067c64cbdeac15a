//! Test support: moto on a loopback port, and a dishonest proxy in front of it.

#![allow(dead_code)]

pub mod faulty;
pub mod moto;
pub mod proxy;

use plumb_state::backend::{S3Backend, S3Location};

/// Sets moto's throwaway credentials (identical in every test, so concurrent tests agree).
pub fn aws_env() {
    for (key, value) in moto::AWS_ENV {
        // Every test sets the same values, so the race between test threads is harmless.
        std::env::set_var(key, value);
    }
}

pub fn s3_backend(endpoint: &str, bucket: &str, prefix: &str) -> S3Backend {
    aws_env();
    S3Backend::new(S3Location {
        bucket: bucket.to_string(),
        prefix: prefix.to_string(),
        endpoint: Some(endpoint.to_string()),
        region: Some("us-east-1".to_string()),
    })
    .expect("S3 backend")
}
