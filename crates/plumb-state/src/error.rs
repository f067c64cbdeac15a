//! The errors of the state store, each worded for the person who has to act on it.

use crate::backend::BackendError;
use crate::lock::LockInfo;

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("invalid store URL {url:?}: {reason}")]
    InvalidUrl { url: String, reason: String },
    #[error(
        "invalid stack name {0:?}: use 1-128 of A-Z a-z 0-9 . _ -, starting with a letter or digit"
    )]
    InvalidStack(String),
    #[error("stack {0} does not exist: create it with `plumb state init`")]
    NoStack(String),
    #[error("stack {0} already exists")]
    StackExists(String),
    #[error("stack {0} has no versions yet")]
    Empty(String),
    #[error("stack {stack} has no version {serial}")]
    NoSuchVersion { stack: String, serial: u64 },
    #[error("{}", locked_message(.0))]
    Locked(Box<LockInfo>),
    #[error("invalid lock id {0:?}: use 1-128 printable ASCII characters, no spaces")]
    InvalidLockId(String),
    #[error("stack {0} is not locked")]
    NotLocked(String),
    #[error("stack {stack} is locked with id {found}, not {given}")]
    LockMismatch {
        stack: String,
        given: String,
        found: String,
    },
    #[error("no key: give --identity FILE or --recipient AGE1..., or set PLUMB_STATE_PASSPHRASE")]
    NoKey,
    #[error("invalid key: {0}")]
    InvalidKey(String),
    #[error("{what}: none of the given keys can decrypt it (wrong key?)")]
    WrongKey { what: String },
    #[error("{what}: decryption failed, the ciphertext was modified or is corrupt ({reason})")]
    Tampered { what: String, reason: String },
    #[error(
        "{what}: it holds stack {found_stack:?} serial {found_serial}, not stack {stack:?} \
         serial {serial}: a version was copied or replayed; refused"
    )]
    Misbound {
        what: String,
        stack: String,
        serial: u64,
        found_stack: String,
        found_serial: u64,
    },
    #[error(
        "stack {stack}: version {serial} is not the object HEAD recorded (digest differs): it was \
         replaced after it was written; refused (restore it from a backup, or see what \
         `plumb state repair --stack {stack}` would do)"
    )]
    DigestMismatch { stack: String, serial: u64 },
    #[error(
        "stack {stack}: HEAD names serial {head} but version {above} exists and no put holds the \
         lock: HEAD was rolled back or an old HEAD replayed; refused. If no one rolled it back \
         (a put failed before plumb undid its writes), `plumb state repair --stack {stack}` \
         shows how it would move HEAD to the newest valid version"
    )]
    RolledBack {
        stack: String,
        head: u64,
        above: u64,
    },
    #[error(
        "stack {stack} has no HEAD but versions up to {newest} exist: \
         `plumb state repair --stack {stack}` rebuilds HEAD from the newest valid version"
    )]
    HeadMissing { stack: String, newest: u64 },
    #[error(
        "stack {stack}: the put of version {serial} failed while {during}, and was undone: the \
         stack is as it was before ({cause})"
    )]
    PutFailed {
        stack: String,
        serial: u64,
        during: &'static str,
        cause: Box<StateError>,
    },
    #[error(
        "stack {stack}: the put of version {serial} failed ({cause}) and could not be undone; \
         its lock {lock_id} is kept so that nothing else moves the stack. Once the cause is \
         fixed, `plumb state force-unlock --stack {stack} --lock-id {lock_id}` completes the put"
    )]
    PutIncomplete {
        stack: String,
        serial: u64,
        lock_id: String,
        cause: Box<StateError>,
    },
    #[error(
        "stack {stack}: the lock object is not a plumb lock ({reason}); if no plumb process is \
         writing it, break it with `plumb state force-unlock --stack {stack} --lock-id {id}`"
    )]
    CorruptLock {
        stack: String,
        id: String,
        reason: String,
    },
    #[error(
        "stack {stack}: the given keys cannot decrypt the current version {serial}, so this put \
         would lock out whoever holds its key; give a key that decrypts it, or pass --rekey to \
         encrypt from now on to the given keys only"
    )]
    WouldLockOut { stack: String, serial: u64 },
    #[error("{what} is corrupt: {reason}")]
    Corrupt { what: String, reason: String },
    #[error("stack {stack}: {message}")]
    Conflict { stack: String, message: String },
}

fn locked_message(lock: &LockInfo) -> String {
    let mut s = format!(
        "locked: stack {} is held by {} for {:?} since {} (lock id {})",
        lock.stack, lock.who, lock.operation, lock.created, lock.id
    );
    if lock.is_expired() {
        s.push_str(&format!(
            "; the lock expired at {}: if its holder is gone, break it with \
             `plumb state force-unlock --lock-id {}`",
            lock.expires, lock.id
        ));
    }
    s
}
