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

    fn head_key(&self) -> String {
        format!("{}/HEAD", self.0)
    }

    fn lock_key(&self) -> String {
        format!("{}/lock", self.0)
    }

    fn versions_prefix(&self) -> String {
        format!("{}/versions/", self.0)
    }

    fn version_key(&self, serial: u64) -> String {
        format!("{}/versions/{serial:020}", self.0)
    }
}

impl std::fmt::Display for StackName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Head {
    schema: String,
    serial: u64,
    sha256: Option<String>,
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

/// One line of `history`.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryEntry {
    pub serial: u64,
    pub size: u64,
    pub who: String,
    pub created: String,
    pub sha256: String,
    /// `head`, `committed`, or `uncommitted` (written by a put that has not moved HEAD yet).
    pub status: &'static str,
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

fn sha256_hex(data: &[u8]) -> String {
    crate::backend::hex_bytes(&Sha256::digest(data))
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

    fn read_head(&self, stack: &StackName) -> Result<Option<(Head, ETag)>, StateError> {
        let Some(object) = self.backend.get(&stack.head_key())? else {
            return Ok(None);
        };
        let head: Head = serde_json::from_slice(&object.data).map_err(|e| StateError::Corrupt {
            what: format!("stack {stack}: HEAD"),
            reason: e.to_string(),
        })?;
        if head.schema != HEAD_SCHEMA {
            return Err(StateError::Corrupt {
                what: format!("stack {stack}: HEAD"),
                reason: format!("unknown schema {:?}", head.schema),
            });
        }
        Ok(Some((head, object.etag)))
    }

    fn head_bytes(serial: u64, sha256: Option<String>) -> Vec<u8> {
        let head = Head {
            schema: HEAD_SCHEMA.to_string(),
            serial,
            sha256,
        };
        serde_json::to_vec(&head).unwrap_or_default()
    }

    fn read_lock(&self, stack: &StackName) -> Result<Option<(LockInfo, ETag)>, StateError> {
        let Some(object) = self.backend.get(&stack.lock_key())? else {
            return Ok(None);
        };
        let info = serde_json::from_slice(&object.data).map_err(|e| StateError::Corrupt {
            what: format!("stack {stack}: lock"),
            reason: e.to_string(),
        })?;
        Ok(Some((info, object.etag)))
    }

    fn serials(&self, stack: &StackName) -> Result<Vec<u64>, StateError> {
        let mut serials: Vec<u64> = self
            .backend
            .list(&stack.versions_prefix())?
            .iter()
            .filter_map(|k| parse_serial(stack, k))
            .collect();
        serials.sort_unstable();
        Ok(serials)
    }

    /// Creates an empty stack (HEAD at serial 0); refuses if it exists.
    pub fn init(&self, stack: &StackName) -> Result<(), StateError> {
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

    /// Takes the stack's lock, or fails with `Locked` naming its holder.
    pub fn lock(
        &self,
        stack: &StackName,
        who: &str,
        operation: &str,
        ttl: std::time::Duration,
    ) -> Result<HeldLock, StateError> {
        let ttl = chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::hours(1));
        let info = LockInfo::new(stack.as_str(), who, operation, ttl);
        let bytes = serde_json::to_vec(&info).unwrap_or_default();
        match self
            .backend
            .put(&stack.lock_key(), &bytes, &WriteCondition::Create)
        {
            Ok(etag) => Ok(HeldLock { info, etag }),
            Err(BackendError::AlreadyExists { .. }) => {
                let holder = match self.read_lock(stack) {
                    Ok(Some((holder, _))) => holder,
                    // It was released between our attempt and this read: still a refusal.
                    _ => LockInfo {
                        id: "?".to_string(),
                        stack: stack.to_string(),
                        who: "another process".to_string(),
                        operation: "?".to_string(),
                        created: "?".to_string(),
                        expires: "?".to_string(),
                    },
                };
                Err(StateError::Locked(Box::new(holder)))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Reads the current lock, if any.
    pub fn current_lock(&self, stack: &StackName) -> Result<Option<LockInfo>, StateError> {
        Ok(self.read_lock(stack)?.map(|(info, _)| info))
    }

    fn release(&self, stack: &StackName, lock: &HeldLock) -> Result<(), StateError> {
        self.backend
            .delete_if_match(&stack.lock_key(), &lock.etag)
            .map_err(|e| match e {
                BackendError::NotFound { .. } | BackendError::PreconditionFailed { .. } => {
                    StateError::Conflict {
                        stack: stack.to_string(),
                        message: format!(
                            "our lock {} was broken by someone else before we released it",
                            lock.info.id
                        ),
                    }
                }
                other => other.into(),
            })
    }

    fn lock_with_id(&self, stack: &StackName, id: &str) -> Result<(LockInfo, ETag), StateError> {
        let (info, etag) = self
            .read_lock(stack)?
            .ok_or_else(|| StateError::NotLocked(stack.to_string()))?;
        if info.id != id {
            return Err(StateError::LockMismatch {
                stack: stack.to_string(),
                given: id.to_string(),
                found: info.id,
            });
        }
        Ok((info, etag))
    }

    /// Releases a lock taken with [`StateStore::lock`], given its id.
    pub fn unlock(&self, stack: &StackName, id: &str) -> Result<(), StateError> {
        let (info, etag) = self.lock_with_id(stack, id)?;
        self.release(stack, &HeldLock { info, etag })
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
        let (info, etag) = self.lock_with_id(stack, id)?;
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
        if keys.is_empty() {
            return Err(StateError::NoKey);
        }
        let lock = match held {
            Some(id) => {
                self.lock_with_id(stack, id)?;
                None
            }
            None => Some(self.lock(stack, who, "put", std::time::Duration::from_secs(900))?),
        };
        on_step(PutStep::LockTaken);
        let result = self.put_locked(stack, keys, data, who, on_step);
        if let Some(lock) = &lock {
            if let Err(release) = self.release(stack, lock) {
                return match result {
                    Ok(serial) => Err(StateError::Conflict {
                        stack: stack.to_string(),
                        message: format!(
                            "version {serial} was committed, but releasing the lock failed: {release}"
                        ),
                    }),
                    Err(e) => Err(e),
                };
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
        who: &str,
        on_step: &mut dyn FnMut(PutStep),
    ) -> Result<u64, StateError> {
        let head = self.read_head(stack)?;
        let (head_serial, previous_sha256, condition) = match head {
            Some((h, etag)) => (h.serial, h.sha256, WriteCondition::Match(etag)),
            None => (0, None, WriteCondition::Create),
        };
        if let Some(&above) = self.serials(stack)?.iter().find(|&&s| s > head_serial) {
            return Err(StateError::RolledBack {
                stack: stack.to_string(),
                head: head_serial,
                above,
            });
        }
        let serial = head_serial + 1;
        let header = VersionHeader {
            stack: stack.to_string(),
            serial,
            previous_sha256,
            who: who.to_string(),
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
                })
            }
            Err(e) => return Err(e.into()),
        }
        on_step(PutStep::VersionWritten);
        let head_bytes = Self::head_bytes(serial, Some(sha256_hex(&sealed)));
        match self.backend.put(&stack.head_key(), &head_bytes, &condition) {
            Ok(_) => {}
            Err(BackendError::PreconditionFailed { .. } | BackendError::AlreadyExists { .. }) => {
                return Err(StateError::Conflict {
                    stack: stack.to_string(),
                    message: "HEAD moved while we held the lock: someone broke it".to_string(),
                })
            }
            Err(e) => return Err(e.into()),
        }
        on_step(PutStep::HeadMoved);
        Ok(serial)
    }

    /// Reads the version HEAD names, or `serial`; either way decrypted and checked.
    pub fn get(
        &self,
        stack: &StackName,
        keys: &Keys,
        serial: Option<u64>,
    ) -> Result<Version, StateError> {
        if let Some(serial) = serial {
            let object = self
                .backend
                .get(&stack.version_key(serial))?
                .ok_or_else(|| StateError::NoSuchVersion {
                    stack: stack.to_string(),
                    serial,
                })?;
            let what = format!("stack {stack} version {serial}");
            let (header, data) = open(keys, &what, &object.data, stack.as_str(), serial)?;
            return Ok(Version { header, data });
        }
        let mut last_error = None;
        for _ in 0..READ_ATTEMPTS {
            let (head, head_etag) = self
                .read_head(stack)?
                .ok_or_else(|| StateError::NoStack(stack.to_string()))?;
            if head.serial == 0 {
                return Err(StateError::Empty(stack.to_string()));
            }
            let object = self
                .backend
                .get(&stack.version_key(head.serial))?
                .ok_or_else(|| StateError::Corrupt {
                    what: format!("stack {stack}"),
                    reason: format!("HEAD names version {} which is missing", head.serial),
                })?;
            if head.sha256.as_deref() != Some(sha256_hex(&object.data).as_str()) {
                return Err(StateError::DigestMismatch {
                    stack: stack.to_string(),
                    serial: head.serial,
                });
            }
            let what = format!("stack {stack} version {}", head.serial);
            let (header, data) = open(keys, &what, &object.data, stack.as_str(), head.serial)?;
            let above = self.serials(stack)?.into_iter().find(|&s| s > head.serial);
            let Some(above) = above else {
                return Ok(Version { header, data });
            };
            // A version above HEAD is legitimate only while a put holds the lock.
            if above == head.serial + 1 && self.read_lock(stack)?.is_some() {
                return Ok(Version { header, data });
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

    /// Every version, oldest first, each decrypted and checked.
    pub fn history(&self, stack: &StackName, keys: &Keys) -> Result<Vec<HistoryEntry>, StateError> {
        let (head, _) = self
            .read_head(stack)?
            .ok_or_else(|| StateError::NoStack(stack.to_string()))?;
        let mut entries = Vec::new();
        for serial in self.serials(stack)? {
            let Some(object) = self.backend.get(&stack.version_key(serial))? else {
                continue;
            };
            let what = format!("stack {stack} version {serial}");
            let (header, _) = open(keys, &what, &object.data, stack.as_str(), serial)?;
            entries.push(HistoryEntry {
                serial,
                size: header.size,
                who: header.who,
                created: header.created,
                sha256: sha256_hex(&object.data),
                status: match serial.cmp(&head.serial) {
                    std::cmp::Ordering::Less => "committed",
                    std::cmp::Ordering::Equal => "head",
                    std::cmp::Ordering::Greater => "uncommitted",
                },
            });
        }
        Ok(entries)
    }
}
