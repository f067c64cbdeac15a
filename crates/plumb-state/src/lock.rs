//! The per-stack lock: an object created only if absent, released only by a delete conditional
//! on the ETag its holder wrote.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What a lock object holds. `expires` is advice for people: nothing breaks a lock by itself,
/// only `force-unlock` with the lock's id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockInfo {
    pub id: String,
    pub stack: String,
    pub who: String,
    pub operation: String,
    pub created: String,
    pub expires: String,
}

impl LockInfo {
    pub(crate) fn new(stack: &str, who: &str, operation: &str, ttl: chrono::Duration) -> Self {
        let now = Utc::now();
        Self {
            id: crate::backend::hex_id(),
            stack: stack.to_string(),
            who: who.to_string(),
            operation: operation.to_string(),
            created: now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            expires: (now + ttl).to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        }
    }

    /// True when the holder's stated expiry has passed (it does not release the lock).
    pub fn is_expired(&self) -> bool {
        DateTime::parse_from_rfc3339(&self.expires)
            .map(|t| t < Utc::now())
            .unwrap_or(false)
    }
}

/// `user@host` of this process, for lock and version records.
pub fn default_who() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("USERNAME"))
        .unwrap_or_else(|_| "unknown".to_string());
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| "localhost".to_string());
    format!("{user}@{host}")
}
