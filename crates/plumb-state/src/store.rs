//! Stacks: immutable versions, a HEAD pointer moved by compare-and-swap, and a lock.
//!
//! Layout under the store root, per stack: `<stack>/versions/<serial>` (written create-if-absent,
//! never changed), `<stack>/HEAD` (`{serial, sha256}` of the current version, replaced only with
//! `If-Match` on the ETag read) and `<stack>/lock`. Only version payloads are secret, and they
//! are encrypted before they leave the process; HEAD and the lock hold metadata.

use crate::backend::{Backend, BackendError, ETag, WriteCondition};
use crate::crypto::{open, seal, Keys, VersionHeader};
use crate::error::StateError;
use crate::lock::LockInfo;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// How many times a read retries when a concurrent put moves HEAD under it.
const READ_ATTEMPTS: usize = 8;

/// How long a temporary file in a stack's own directory must sit untouched before a new lock
/// holder removes it: lock attempts and `init` write there without holding the lock.
const TEMPORARY_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// A validated stack name: it becomes a key segment, so it is kept to a safe alphabet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackName(String);

impl StackName {
    pub fn new(name: &str) -> Result<Self, StateError> {
        let ok = (1..=128).contains(&name.len())
            && name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if ok {
            Ok(Self(name.to_string()))
        } else {
            Err(StateError::InvalidStack(name.to_string()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub(crate) fn head_key(&self) -> String {
        format!("{}/HEAD", self.0)
    }

    fn lock_key(&self) -> String {
        format!("{}/lock", self.0)
    }

    fn versions_prefix(&self) -> String {
        format!("{}/versions/", self.0)
    }

    fn versions_dir(&self) -> String {
        format!("{}/versions", self.0)
    }

    pub(crate) fn damaged_key(&self, serial: u64, sha256: &str) -> String {
        format!(
            "{}/damaged/{serial:020}-{}",
            self.0,
            &sha256[..16.min(sha256.len())]
        )
    }

    pub(crate) fn version_key(&self, serial: u64) -> String {
        format!("{}/versions/{serial:020}", self.0)
    }
}

impl std::fmt::Display for StackName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Head {
    schema: String,
    pub(crate) serial: u64,
    pub(crate) sha256: Option<String>,
}

const HEAD_SCHEMA: &str = "plumb.state.head/v1";

/// The points of a put between which it can be interrupted; an observer sees each as it passes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PutStep {
    LockTaken,
    VersionWritten,
    HeadMoved,
    LockReleased,
}

impl PutStep {
    pub const ALL: [PutStep; 4] = [
        PutStep::LockTaken,
        PutStep::VersionWritten,
        PutStep::HeadMoved,
        PutStep::LockReleased,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PutStep::LockTaken => "lock-taken",
            PutStep::VersionWritten => "version-written",
            PutStep::HeadMoved => "head-moved",
            PutStep::LockReleased => "lock-released",
        }
    }
}

/// A lock this process holds.
#[derive(Clone, Debug)]
pub struct HeldLock {
    pub info: LockInfo,
    etag: ETag,
}

/// One decrypted version.
#[derive(Clone, Debug)]
pub struct Version {
    pub header: VersionHeader,
    pub data: Vec<u8>,
}

/// One line of `history`. A version that cannot be read has only its serial, its status, the
/// digest of its stored bytes (unless it is missing) and the problem.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryEntry {
    pub serial: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub who: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// `head`, `committed`, `uncommitted` (written by a put that has not moved HEAD yet), or,
    /// for a version that cannot be read, `missing`, `damaged` or `unreadable` (no given key
    /// decrypts it).
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl HistoryEntry {
    /// True for a version that is missing, damaged, or that no given key decrypts.
    pub fn is_unreadable(&self) -> bool {
        self.problem.is_some()
    }
}

/// How a put is made: by whom, under which lock, and whether it may change the keys.
#[derive(Clone, Copy, Debug)]
pub struct PutOptions<'a> {
    pub who: &'a str,
    /// A lock taken earlier with [`StateStore::lock`], by its id; `None` takes one for the put.
    pub lock_id: Option<&'a str>,
    /// Allow a put whose keys cannot decrypt the current version (otherwise refused, because
    /// it would lock the current key holders out of every version from then on).
    pub rekey: bool,
}

/// Why a put stopped, and the serial it leaves above HEAD when it could not undo its write.
struct PutFailure {
    error: StateError,
    left_above_head: Option<u64>,
}

impl From<StateError> for PutFailure {
    fn from(error: StateError) -> Self {
        PutFailure {
            error,
            left_above_head: None,
        }
    }
}

impl From<BackendError> for PutFailure {
    fn from(error: BackendError) -> Self {
        StateError::from(error).into()
    }
}

/// What a lock object holds: a plumb lock, or bytes that are not one (then `info` is made up,
/// with an id derived from those bytes so that `force-unlock` can still name it).
pub(crate) struct LockRead {
    pub(crate) info: LockInfo,
    etag: ETag,
    corrupt: Option<String>,
}

/// A stack's history as JSON (`schema: plumb.state.history/v1`), with a final newline.
pub fn history_json(stack: &StackName, entries: &[HistoryEntry]) -> String {
    let doc = serde_json::json!({
        "schema": "plumb.state.history/v1",
        "stack": stack.as_str(),
        "versions": entries,
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}

/// What `force-unlock` did.
#[derive(Clone, Debug)]
pub struct ForceUnlockReport {
    pub broken: LockInfo,
    /// The serial of an interrupted put's version that was completed by moving HEAD to it.
    pub completed_serial: Option<u64>,
}

/// A state store over one backend.
pub struct StateStore {
    backend: Box<dyn Backend>,
}

pub(crate) fn sha256_hex(data: &[u8]) -> String {
    crate::backend::hex_bytes(&Sha256::digest(data))
}

fn head_version_missing(stack: &StackName, serial: u64) -> StateError {
    StateError::Corrupt {
        what: format!("stack {stack}"),
        reason: format!(
            "HEAD names version {serial} ({}) which is missing; `plumb state repair --stack \
             {stack}` moves HEAD to the newest valid version",
            stack.version_key(serial)
        ),
    }
}

fn parse_serial(stack: &StackName, key: &str) -> Option<u64> {
    key.strip_prefix(&stack.versions_prefix())?.parse().ok()
}

impl StateStore {
    pub fn new(backend: Box<dyn Backend>) -> Self {
        Self { backend }
    }

    pub fn backend(&self) -> &dyn Backend {
        self.backend.as_ref()
    }

    pub(crate) fn read_head(&self, stack: &StackName) -> Result<Option<(Head, ETag)>, StateError> {
        let Some(object) = self.backend.get(&stack.head_key())? else {
            return Ok(None);
        };
        Ok(Some((Self::parse_head(stack, &object.data)?, object.etag)))
    }

    pub(crate) fn parse_head(stack: &StackName, data: &[u8]) -> Result<Head, StateError> {
        let corrupt = |reason: String| StateError::Corrupt {
            what: format!("stack {stack}: HEAD ({})", stack.head_key()),
            reason: format!(
                "{reason}; `plumb state repair --stack {stack}` rebuilds it from the newest \
                 valid version"
            ),
        };
        let head: Head = serde_json::from_slice(data).map_err(|e| corrupt(e.to_string()))?;
        if head.schema != HEAD_SCHEMA {
            return Err(corrupt(format!("unknown schema {:?}", head.schema)));
        }
        Ok(head)
    }

    pub(crate) fn head_bytes(serial: u64, sha256: Option<String>) -> Vec<u8> {
        let head = Head {
            schema: HEAD_SCHEMA.to_string(),
            serial,
            sha256,
        };
        serde_json::to_vec(&head).unwrap_or_default()
    }

    pub(crate) fn read_lock(&self, stack: &StackName) -> Result<Option<LockRead>, StateError> {
        let Some(object) = self.backend.get(&stack.lock_key())? else {
            return Ok(None);
        };
        Ok(Some(
            match serde_json::from_slice::<LockInfo>(&object.data) {
                Ok(info) => LockRead {
                    info,
                    etag: object.etag,
                    corrupt: None,
                },
                Err(e) => {
                    let unknown = || "?".to_string();
                    LockRead {
                        info: LockInfo {
                            id: format!("corrupt-{}", &sha256_hex(&object.data)[..16]),
                            stack: stack.to_string(),
                            who: "unknown (not a plumb lock)".to_string(),
                            operation: unknown(),
                            created: unknown(),
                            expires: unknown(),
                        },
                        etag: object.etag,
                        corrupt: Some(format!("{}: {e}", stack.lock_key())),
                    }
                }
            },
        ))
    }

    pub(crate) fn serials(&self, stack: &StackName) -> Result<Vec<u64>, StateError> {
        let mut serials: Vec<u64> = self
            .backend
            .list(&stack.versions_prefix())?
            .iter()
            .filter_map(|k| parse_serial(stack, k))
            .collect();
        serials.sort_unstable();
        Ok(serials)
    }

    /// Creates an empty stack (HEAD at serial 0); refuses if it exists, or if versions exist
    /// without a HEAD (an `init` there would hide them: that is for `repair`).
    pub fn init(&self, stack: &StackName) -> Result<(), StateError> {
        if let Some(&newest) = self.serials(stack)?.last() {
            return Err(match self.backend.get(&stack.head_key())? {
                Some(_) => StateError::StackExists(stack.to_string()),
                None => StateError::HeadMissing {
                    stack: stack.to_string(),
                    newest,
                },
            });
        }
        match self.backend.put(
            &stack.head_key(),
            &Self::head_bytes(0, None),
            &WriteCondition::Create,
        ) {
            Ok(_) => Ok(()),
            Err(BackendError::AlreadyExists { .. }) => {
                Err(StateError::StackExists(stack.to_string()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Takes the stack's lock, or fails with `Locked` naming its holder. The new holder removes
    /// the temporary files that killed writers left in the stack's directories.
    pub fn lock(
        &self,
        stack: &StackName,
        who: &str,
        operation: &str,
        ttl: std::time::Duration,
    ) -> Result<HeldLock, StateError> {
        let ttl = chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::hours(1));
        self.take_lock(stack, LockInfo::new(stack.as_str(), who, operation, ttl))
    }

    /// [`StateStore::lock`] under an id the caller chose: OpenTofu and Terraform name their
    /// locks themselves, then write and unlock by that name. The id is 1-128 printable ASCII
    /// characters; a lock already held under the same id is refused like any other (the caller
    /// decides whether that one is its own).
    pub fn lock_as(
        &self,
        stack: &StackName,
        id: &str,
        who: &str,
        operation: &str,
        ttl: std::time::Duration,
    ) -> Result<HeldLock, StateError> {
        let printable = (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic());
        if !printable {
            return Err(StateError::InvalidLockId(id.to_string()));
        }
        let ttl = chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::hours(1));
        let mut info = LockInfo::new(stack.as_str(), who, operation, ttl);
        info.id = id.to_string();
        self.take_lock(stack, info)
    }

    fn take_lock(&self, stack: &StackName, info: LockInfo) -> Result<HeldLock, StateError> {
        let bytes = serde_json::to_vec(&info).unwrap_or_default();
        match self
            .backend
            .put(&stack.lock_key(), &bytes, &WriteCondition::Create)
        {
            Ok(etag) => {
                // Housekeeping: a failure here leaves only litter, never a wrong stack.
                let _ = self
                    .backend
                    .remove_stale_temporaries(&stack.versions_dir(), std::time::Duration::ZERO);
                let _ = self
                    .backend
                    .remove_stale_temporaries(stack.as_str(), TEMPORARY_GRACE);
                Ok(HeldLock { info, etag })
            }
            Err(BackendError::AlreadyExists { .. }) => match self.read_lock(stack) {
                Ok(Some(LockRead {
                    info,
                    corrupt: Some(reason),
                    ..
                })) => Err(StateError::CorruptLock {
                    stack: stack.to_string(),
                    id: info.id,
                    reason,
                }),
                Ok(Some(held)) => Err(StateError::Locked(Box::new(held.info))),
                // It was released between our attempt and this read: still a refusal.
                _ => Err(StateError::Locked(Box::new(LockInfo {
                    id: "?".to_string(),
                    stack: stack.to_string(),
                    who: "another process".to_string(),
                    operation: "?".to_string(),
                    created: "?".to_string(),
                    expires: "?".to_string(),
                }))),
            },
            Err(e) => {
                // The write may have landed before it failed: remove our lock if it is there.
                let ours = self.backend.get(&stack.lock_key());
                let removed = match ours {
                    Ok(Some(object)) if object.data == bytes => {
                        self.backend
                            .delete_if_match(&stack.lock_key(), &object.etag)
                            .is_ok()
                            // The delete may have landed before it failed.
                            || matches!(
                                self.backend.get(&stack.lock_key()),
                                Ok(now) if now.as_ref().is_none_or(|o| o.etag != object.etag)
                            )
                    }
                    Ok(_) => true,
                    Err(_) => false,
                };
                if removed {
                    Err(StateError::Conflict {
                        stack: stack.to_string(),
                        message: format!("taking the lock failed, nothing was changed ({e})"),
                    })
                } else {
                    Err(StateError::Conflict {
                        stack: stack.to_string(),
                        message: format!(
                            "taking the lock failed ({e}), and the lock it may have written could \
                             not be removed: if the stack is now locked by you (lock id {}), \
                             break it with `plumb state force-unlock --stack {stack} --lock-id {}`",
                            info.id, info.id
                        ),
                    })
                }
            }
        }
    }

    /// Reads the current lock, if any (a lock object that is not a plumb lock is reported with
    /// who "unknown" and the id that `force-unlock` takes for it).
    pub fn current_lock(&self, stack: &StackName) -> Result<Option<LockInfo>, StateError> {
        Ok(self.read_lock(stack)?.map(|held| held.info))
    }

    pub(crate) fn release_lock(
        &self,
        stack: &StackName,
        lock: &HeldLock,
    ) -> Result<(), StateError> {
        let broken = || StateError::Conflict {
            stack: stack.to_string(),
            message: format!(
                "our lock {} was broken by someone else before we released it",
                lock.info.id
            ),
        };
        match self.backend.delete_if_match(&stack.lock_key(), &lock.etag) {
            Ok(()) => Ok(()),
            // Gone: the stack is unlocked, which is what releasing wants. A client that
            // retries a delete whose reply was lost sees exactly this for its own delete, so
            // it is no sign of a broken lock (versions are safe either way: HEAD moves only
            // with If-Match).
            Err(BackendError::NotFound { .. }) => Ok(()),
            Err(BackendError::PreconditionFailed { .. }) => Err(broken()),
            Err(e) => match self.backend.get(&stack.lock_key()) {
                // The delete landed before the error (or someone else's lock is there now).
                Ok(None) => Ok(()),
                Ok(Some(object)) if object.etag != lock.etag => Err(broken()),
                _ => Err(e.into()),
            },
        }
    }

    fn lock_with_id(&self, stack: &StackName, id: &str) -> Result<LockRead, StateError> {
        let held = self
            .read_lock(stack)?
            .ok_or_else(|| self.not_locked(stack))?;
        if held.info.id != id {
            return Err(StateError::LockMismatch {
                stack: stack.to_string(),
                given: id.to_string(),
                found: held.info.id,
            });
        }
        Ok(held)
    }

    /// `NotLocked`, or, when versions sit above HEAD with no lock to explain them, the
    /// rollback refusal that points at `repair`.
    fn not_locked(&self, stack: &StackName) -> StateError {
        let head = match self.read_head(stack) {
            Ok(Some((head, _))) => head.serial,
            Ok(None) => 0,
            Err(e) => return e,
        };
        match self.serials(stack) {
            Ok(serials) => match serials.into_iter().find(|&s| s > head) {
                Some(above) => StateError::RolledBack {
                    stack: stack.to_string(),
                    head,
                    above,
                },
                None => StateError::NotLocked(stack.to_string()),
            },
            Err(e) => e,
        }
    }

    /// Releases a lock taken with [`StateStore::lock`], given its id.
    pub fn unlock(&self, stack: &StackName, id: &str) -> Result<(), StateError> {
        let held = self.lock_with_id(stack, id)?;
        self.release_lock(
            stack,
            &HeldLock {
                info: held.info,
                etag: held.etag,
            },
        )
    }

    /// Breaks someone else's lock, given its id. If its holder was a put interrupted after it
    /// wrote its version but before it moved HEAD, HEAD is moved to that version first, so that
    /// a stack without a lock never has a version above HEAD.
    pub fn force_unlock(
        &self,
        stack: &StackName,
        id: &str,
        keys: &Keys,
    ) -> Result<ForceUnlockReport, StateError> {
        let LockRead { info, etag, .. } = self.lock_with_id(stack, id)?;
        let mut completed_serial = None;
        for attempt in 0.. {
            let head = self.read_head(stack)?;
            let (head_serial, head_sha, head_etag) = match &head {
                Some((h, e)) => (h.serial, h.sha256.clone(), Some(e.clone())),
                None => (0, None, None),
            };
            let above: Vec<u64> = self
                .serials(stack)?
                .into_iter()
                .filter(|&s| s > head_serial)
                .collect();
            let Some(&orphan) = above.first() else {
                break;
            };
            if above.len() > 1 || orphan != head_serial + 1 {
                return Err(StateError::Conflict {
                    stack: stack.to_string(),
                    message: format!(
                        "versions {above:?} exist above HEAD {head_serial}: more than one \
                         interrupted put cannot be told from a rollback; lock kept"
                    ),
                });
            }
            let object = self
                .backend
                .get(&stack.version_key(orphan))?
                .ok_or_else(|| StateError::NoSuchVersion {
                    stack: stack.to_string(),
                    serial: orphan,
                })?;
            let what = format!("stack {stack} version {orphan}");
            let (header, _) = open(keys, &what, &object.data, stack.as_str(), orphan)?;
            if header.previous_sha256 != head_sha {
                return Err(StateError::Conflict {
                    stack: stack.to_string(),
                    message: format!(
                        "version {orphan} does not follow HEAD {head_serial}; lock kept"
                    ),
                });
            }
            let bytes = Self::head_bytes(orphan, Some(sha256_hex(&object.data)));
            let condition = match head_etag {
                Some(e) => WriteCondition::Match(e),
                None => WriteCondition::Create,
            };
            match self.backend.put(&stack.head_key(), &bytes, &condition) {
                Ok(_) => {
                    completed_serial = Some(orphan);
                    break;
                }
                // The holder was not dead after all and moved HEAD itself: look again.
                Err(
                    BackendError::PreconditionFailed { .. } | BackendError::AlreadyExists { .. },
                ) if attempt < READ_ATTEMPTS => {}
                Err(e) => return Err(e.into()),
            }
        }
        match self.backend.delete_if_match(&stack.lock_key(), &etag) {
            Ok(()) | Err(BackendError::NotFound { .. }) => {}
            Err(BackendError::PreconditionFailed { .. }) => {
                return Err(StateError::Conflict {
                    stack: stack.to_string(),
                    message: "the lock changed while it was being broken".to_string(),
                })
            }
            Err(e) => return Err(e.into()),
        }
        Ok(ForceUnlockReport {
            broken: info,
            completed_serial,
        })
    }

    /// Writes `data` as the stack's next version and returns its serial.
    ///
    /// Takes the stack's lock for the duration (or checks `held`, a lock taken earlier with
    /// [`StateStore::lock`], by its id). `on_step` is called after each step; a put interrupted
    /// between any two leaves the stack readable at the previous version or the new one.
    pub fn put(
        &self,
        stack: &StackName,
        keys: &Keys,
        data: &[u8],
        who: &str,
        held: Option<&str>,
        on_step: &mut dyn FnMut(PutStep),
    ) -> Result<u64, StateError> {
        let options = PutOptions {
            who,
            lock_id: held,
            rekey: false,
        };
        self.put_with(stack, keys, data, &options, on_step)
    }

    /// [`StateStore::put`] with every option. A put that fails undoes what it wrote and
    /// releases its lock; if it cannot undo its version it keeps the lock and says so, and
    /// `force-unlock` then completes it.
    pub fn put_with(
        &self,
        stack: &StackName,
        keys: &Keys,
        data: &[u8],
        options: &PutOptions<'_>,
        on_step: &mut dyn FnMut(PutStep),
    ) -> Result<u64, StateError> {
        if keys.is_empty() {
            return Err(StateError::NoKey);
        }
        let (lock_id, owned) = match options.lock_id {
            Some(id) => (self.lock_with_id(stack, id)?.info.id, None),
            None => {
                let lock = self.lock(
                    stack,
                    options.who,
                    "put",
                    std::time::Duration::from_secs(900),
                )?;
                (lock.info.id.clone(), Some(lock))
            }
        };
        on_step(PutStep::LockTaken);
        let result = match self.put_locked(stack, keys, data, options, on_step) {
            Ok(serial) => Ok(serial),
            Err(PutFailure {
                error,
                left_above_head: Some(serial),
            }) => {
                return Err(StateError::PutIncomplete {
                    stack: stack.to_string(),
                    serial,
                    lock_id,
                    cause: Box::new(error),
                })
            }
            Err(PutFailure { error, .. }) => Err(error),
        };
        if let Some(lock) = &owned {
            if let Err(release) = self.release_lock(stack, lock) {
                let outcome = match result {
                    Ok(serial) => format!("version {serial} was committed"),
                    Err(e) => format!("the put failed ({e})"),
                };
                return Err(StateError::Conflict {
                    stack: stack.to_string(),
                    message: format!(
                        "{outcome}, but releasing the lock failed ({release}): break it with \
                         `plumb state force-unlock --stack {stack} --lock-id {lock_id}`"
                    ),
                });
            }
            on_step(PutStep::LockReleased);
        }
        result
    }

    fn put_locked(
        &self,
        stack: &StackName,
        keys: &Keys,
        data: &[u8],
        options: &PutOptions<'_>,
        on_step: &mut dyn FnMut(PutStep),
    ) -> Result<u64, PutFailure> {
        let head = self.read_head(stack)?;
        let serials = self.serials(stack)?;
        let (head_serial, previous_sha256, head_etag) = match head {
            Some((h, etag)) => (h.serial, h.sha256, Some(etag)),
            None => match serials.last() {
                Some(&newest) => {
                    return Err(StateError::HeadMissing {
                        stack: stack.to_string(),
                        newest,
                    }
                    .into())
                }
                None => (0, None, None),
            },
        };
        if let Some(&above) = serials.iter().find(|&&s| s > head_serial) {
            return Err(StateError::RolledBack {
                stack: stack.to_string(),
                head: head_serial,
                above,
            }
            .into());
        }
        if head_serial > 0 && !options.rekey {
            match self.read_checked(stack, keys, head_serial, previous_sha256.as_deref()) {
                Ok(_) => {}
                Err(StateError::NoSuchVersion { .. }) => {
                    return Err(head_version_missing(stack, head_serial).into())
                }
                Err(StateError::WrongKey { .. }) => {
                    return Err(StateError::WouldLockOut {
                        stack: stack.to_string(),
                        serial: head_serial,
                    }
                    .into())
                }
                Err(e) => return Err(e.into()),
            }
        }
        let serial = head_serial + 1;
        let header = VersionHeader {
            stack: stack.to_string(),
            serial,
            previous_sha256,
            who: options.who.to_string(),
            created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            size: data.len() as u64,
        };
        let sealed = seal(keys, &header, data)?;
        match self
            .backend
            .put(&stack.version_key(serial), &sealed, &WriteCondition::Create)
        {
            Ok(_) => {}
            Err(BackendError::AlreadyExists { .. }) => {
                return Err(StateError::Conflict {
                    stack: stack.to_string(),
                    message: format!(
                        "version {serial} appeared while we held the lock: someone broke it"
                    ),
                }
                .into())
            }
            Err(e) => return Err(self.undo_version(stack, serial, &sealed, "writing it", e)),
        }
        on_step(PutStep::VersionWritten);
        let sha256 = sha256_hex(&sealed);
        let head_bytes = Self::head_bytes(serial, Some(sha256.clone()));
        let condition = match &head_etag {
            Some(etag) => WriteCondition::Match(etag.clone()),
            None => WriteCondition::Create,
        };
        match self.backend.put(&stack.head_key(), &head_bytes, &condition) {
            Ok(_) => {}
            Err(BackendError::PreconditionFailed { .. } | BackendError::AlreadyExists { .. }) => {
                return Err(StateError::Conflict {
                    stack: stack.to_string(),
                    message: "HEAD moved while we held the lock: someone broke it".to_string(),
                }
                .into())
            }
            // The write may or may not have landed: HEAD says which.
            Err(e) => match self.backend.get(&stack.head_key()) {
                Ok(Some(object)) if object.data == head_bytes => {}
                Ok(now) if now.as_ref().map(|o| &o.etag) == head_etag.as_ref() => {
                    return Err(self.undo_version(stack, serial, &sealed, "moving HEAD", e))
                }
                _ => {
                    return Err(PutFailure {
                        error: e.into(),
                        left_above_head: Some(serial),
                    })
                }
            },
        }
        on_step(PutStep::HeadMoved);
        Ok(serial)
    }

    /// Removes the version a failed put wrote (if it landed), so that the stack is as before.
    fn undo_version(
        &self,
        stack: &StackName,
        serial: u64,
        sealed: &[u8],
        during: &'static str,
        cause: BackendError,
    ) -> PutFailure {
        let key = stack.version_key(serial);
        let undone = match self.backend.get(&key) {
            Ok(None) => true,
            Ok(Some(object)) if object.data == sealed => {
                matches!(
                    self.backend.delete_if_match(&key, &object.etag),
                    Ok(()) | Err(BackendError::NotFound { .. })
                )
            }
            // Not ours: someone broke the lock and wrote it; theirs to keep.
            Ok(Some(_)) => true,
            Err(_) => false,
        };
        if undone {
            StateError::PutFailed {
                stack: stack.to_string(),
                serial,
                during,
                cause: Box::new(cause.into()),
            }
            .into()
        } else {
            PutFailure {
                error: cause.into(),
                left_above_head: Some(serial),
            }
        }
    }

    /// Reads version `serial`, decrypted and checked against its binding and, when given, the
    /// digest HEAD recorded for it.
    pub(crate) fn read_checked(
        &self,
        stack: &StackName,
        keys: &Keys,
        serial: u64,
        recorded_sha256: Option<&str>,
    ) -> Result<Version, StateError> {
        let object = self
            .backend
            .get(&stack.version_key(serial))?
            .ok_or_else(|| StateError::NoSuchVersion {
                stack: stack.to_string(),
                serial,
            })?;
        if let Some(recorded) = recorded_sha256 {
            if recorded != sha256_hex(&object.data) {
                return Err(StateError::DigestMismatch {
                    stack: stack.to_string(),
                    serial,
                });
            }
        }
        let what = format!(
            "stack {stack} version {serial} ({})",
            stack.version_key(serial)
        );
        let (header, data) = open(keys, &what, &object.data, stack.as_str(), serial)?;
        Ok(Version { header, data })
    }

    /// Reads the version HEAD names, or `serial`; either way decrypted and checked.
    pub fn get(
        &self,
        stack: &StackName,
        keys: &Keys,
        serial: Option<u64>,
    ) -> Result<Version, StateError> {
        if let Some(serial) = serial {
            return self.read_checked(stack, keys, serial, None);
        }
        let mut last_error = None;
        for _ in 0..READ_ATTEMPTS {
            let Some((head, head_etag)) = self.read_head(stack)? else {
                return Err(match self.serials(stack)?.last() {
                    Some(&newest) => StateError::HeadMissing {
                        stack: stack.to_string(),
                        newest,
                    },
                    None => StateError::NoStack(stack.to_string()),
                });
            };
            let above = self.serials(stack)?.into_iter().find(|&s| s > head.serial);
            if head.serial == 0 && above.is_none() {
                return Err(StateError::Empty(stack.to_string()));
            }
            let version = if head.serial == 0 {
                None
            } else {
                match self.read_checked(stack, keys, head.serial, head.sha256.as_deref()) {
                    Ok(version) => Some(version),
                    Err(StateError::NoSuchVersion { .. }) => {
                        return Err(head_version_missing(stack, head.serial))
                    }
                    Err(e) => return Err(e),
                }
            };
            let Some(above) = above else {
                return version.ok_or_else(|| StateError::Empty(stack.to_string()));
            };
            // A version above HEAD is legitimate only while a put holds the lock.
            if above == head.serial + 1 && self.backend.get(&stack.lock_key())?.is_some() {
                if let Some(version) = version {
                    return Ok(version);
                }
                return Err(StateError::Empty(stack.to_string()));
            }
            match self.read_head(stack)? {
                Some((_, etag)) if etag != head_etag => {
                    last_error = Some(StateError::Conflict {
                        stack: stack.to_string(),
                        message: "HEAD kept moving while it was read".to_string(),
                    });
                    continue;
                }
                _ => {
                    return Err(StateError::RolledBack {
                        stack: stack.to_string(),
                        head: head.serial,
                        above,
                    })
                }
            }
        }
        Err(last_error.unwrap_or_else(|| StateError::NoStack(stack.to_string())))
    }

    /// Every version, oldest first, each decrypted and checked. A version that is missing from
    /// the sequence, damaged, or that no given key decrypts is listed as such, and the rest
    /// still read.
    pub fn history(&self, stack: &StackName, keys: &Keys) -> Result<Vec<HistoryEntry>, StateError> {
        let Some((head, _)) = self.read_head(stack)? else {
            return Err(match self.serials(stack)?.last() {
                Some(&newest) => StateError::HeadMissing {
                    stack: stack.to_string(),
                    newest,
                },
                None => StateError::NoStack(stack.to_string()),
            });
        };
        let serials = self.serials(stack)?;
        let last = serials.last().copied().unwrap_or(0).max(head.serial);
        let present: std::collections::BTreeSet<u64> = serials.into_iter().collect();
        let mut entries = Vec::new();
        for serial in 1..=last {
            let key = stack.version_key(serial);
            let object = if present.contains(&serial) {
                self.backend.get(&key)?
            } else {
                None
            };
            let unreadable = |status, sha256, problem: String| HistoryEntry {
                serial,
                size: None,
                who: None,
                created: None,
                sha256,
                status,
                problem: Some(problem),
            };
            let Some(object) = object else {
                let problem = format!("{key} is missing from the sequence");
                entries.push(unreadable("missing", None, problem));
                continue;
            };
            let sha256 = sha256_hex(&object.data);
            let recorded = (serial == head.serial)
                .then_some(head.sha256.as_deref())
                .flatten();
            if recorded.is_some_and(|r| r != sha256) {
                let problem = StateError::DigestMismatch {
                    stack: stack.to_string(),
                    serial,
                }
                .to_string();
                entries.push(unreadable("damaged", Some(sha256), problem));
                continue;
            }
            let what = format!("stack {stack} version {serial} ({key})");
            match open(keys, &what, &object.data, stack.as_str(), serial) {
                Ok((header, _)) => entries.push(HistoryEntry {
                    serial,
                    size: Some(header.size),
                    who: Some(header.who),
                    created: Some(header.created),
                    sha256: Some(sha256),
                    status: match serial.cmp(&head.serial) {
                        std::cmp::Ordering::Less => "committed",
                        std::cmp::Ordering::Equal => "head",
                        std::cmp::Ordering::Greater => "uncommitted",
                    },
                    problem: None,
                }),
                Err(e @ StateError::WrongKey { .. }) => {
                    entries.push(unreadable("unreadable", Some(sha256), e.to_string()))
                }
                Err(
                    e @ (StateError::Tampered { .. }
                    | StateError::Corrupt { .. }
                    | StateError::Misbound { .. }),
                ) => entries.push(unreadable("damaged", Some(sha256), e.to_string())),
                Err(e) => return Err(e),
            }
        }
        Ok(entries)
    }
}
