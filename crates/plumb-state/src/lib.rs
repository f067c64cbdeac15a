//! plumb-state: platform state kept outside the cluster, locked, versioned and encrypted, on a
//! directory or any S3-compatible store, with a probe that proves a store is safe to use.
//!
//! Each stack is a series of immutable versions written create-if-absent, a `HEAD` pointer moved
//! only by compare-and-swap on its ETag, and a lock object. Versions are encrypted with age
//! before they leave the process, and bind their stack and serial inside the ciphertext.
//!
//! ```
//! use plumb_state::{backend::MemoryBackend, Keys, StackName, StateStore};
//!
//! let store = StateStore::new(Box::new(MemoryBackend::new()));
//! let (keys, _identity_text) = Keys::generate();
//! let stack = StackName::new("network")?;
//! store.init(&stack)?;
//! let serial = store.put(&stack, &keys, b"vpc-id: 42", "me@laptop", None, &mut |_| {})?;
//! assert_eq!(serial, 1);
//! assert_eq!(store.get(&stack, &keys, None)?.data, b"vpc-id: 42");
//! # Ok::<(), plumb_state::StateError>(())
//! ```

pub mod backend;
mod crypto;
mod error;
mod location;
mod lock;
pub mod probe;
mod repair;
pub mod serve;
mod store;

pub use crypto::{Keys, VersionHeader};
pub use error::StateError;
pub use location::StoreLocation;
pub use lock::{default_who, LockInfo};
pub use repair::{HeadFound, RepairPlan, VersionCheck, VersionFound};
pub use store::{
    history_json, ForceUnlockReport, HeldLock, HistoryEntry, PutOptions, PutStep, StackName,
    StateStore, Version,
};
