//! Rebuilding a stack's HEAD from its versions after HEAD was deleted, damaged or rolled back,
//! or after the version it names was lost or damaged.
//!
//! A plan is made first and can be shown without changing anything; applying it moves HEAD to
//! the newest version that decrypts and is bound to its place, and moves damaged versions above
//! that one aside to `<stack>/damaged/`, so that no version, valid or not, is ever deleted.

use crate::backend::{BackendError, ETag, WriteCondition};
use crate::crypto::{open, Keys};
use crate::error::StateError;
use crate::lock::LockInfo;
use crate::store::{sha256_hex, StackName, StateStore};
use std::fmt::Write as _;

/// What HEAD held when the plan was made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeadFound {
    Missing,
    Corrupt { reason: String },
    Names { serial: u64 },
}

/// What one serial of the stack holds, judged with the keys given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VersionFound {
    Valid {
        who: String,
        created: String,
    },
    /// Modified, truncated, bound to another place, or not the bytes HEAD recorded.
    Damaged {
        reason: String,
    },
    /// None of the given keys decrypts it: it may be intact, and only the key can tell.
    Unreadable,
    /// A gap in the sequence.
    Missing,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionCheck {
    pub serial: u64,
    pub found: VersionFound,
    sha256: Option<String>,
}

/// What `repair` found and what it will do (or did).
#[derive(Clone, Debug)]
pub struct RepairPlan {
    pub stack: String,
    pub head: HeadFound,
    pub versions: Vec<VersionCheck>,
    /// Damaged versions above the new HEAD, each with the key it is moved to.
    pub set_aside: Vec<(u64, String)>,
    /// The serial HEAD will name; `None` when HEAD already names the newest valid version.
    pub new_head: Option<u64>,
    /// The stack's lock when the plan was made: `repair` takes the lock, so it must be free.
    pub lock: Option<LockInfo>,
    /// True once [`StateStore::repair`] has carried the plan out.
    pub applied: bool,
    head_etag: Option<ETag>,
}

impl RepairPlan {
    /// True when there is nothing to change.
    pub fn is_empty(&self) -> bool {
        self.set_aside.is_empty() && self.new_head.is_none()
    }

    fn check(&self, serial: u64) -> Option<&VersionCheck> {
        self.versions.iter().find(|v| v.serial == serial)
    }

    /// The plan as lines for a person: what was found, then what will change.
    pub fn describe(&self) -> String {
        let mut s = format!("stack {}:\n", self.stack);
        let head = match &self.head {
            HeadFound::Missing => "missing".to_string(),
            HeadFound::Corrupt { reason } => format!("corrupt ({reason})"),
            HeadFound::Names { serial } => format!("names version {serial}"),
        };
        let _ = writeln!(s, "  HEAD: {head}");
        let valid = self
            .versions
            .iter()
            .filter(|v| matches!(v.found, VersionFound::Valid { .. }))
            .count();
        let _ = writeln!(
            s,
            "  versions: {} in sequence, {valid} valid",
            self.versions.len()
        );
        for v in &self.versions {
            let problem = match &v.found {
                VersionFound::Valid { .. } => continue,
                VersionFound::Damaged { reason } => format!("damaged: {reason}"),
                VersionFound::Unreadable => "no given key decrypts it".to_string(),
                VersionFound::Missing => "missing".to_string(),
            };
            let _ = writeln!(s, "  version {}: {problem}", v.serial);
        }
        if let Some(lock) = &self.lock {
            let _ = writeln!(
                s,
                "  lock: held by {} for {:?} since {} (lock id {}): repair needs the lock; if \
                 its holder is gone, `plumb state force-unlock` first",
                lock.who, lock.operation, lock.created, lock.id
            );
        }
        if self.is_empty() {
            s.push_str("nothing to repair: HEAD names the newest valid version\n");
            return s;
        }
        s.push_str(if self.applied {
            "repaired:\n"
        } else {
            "repair will:\n"
        });
        for (serial, to) in &self.set_aside {
            let verb = if self.applied { "moved" } else { "move" };
            let _ = writeln!(
                s,
                "  {verb} damaged version {serial} aside to {to} (kept, not deleted)"
            );
        }
        if let Some(serial) = self.new_head {
            let what = match self.check(serial).map(|v| &v.found) {
                Some(VersionFound::Valid { who, created }) => {
                    format!("version {serial} (written {created} by {who})")
                }
                _ => "serial 0 (an empty stack)".to_string(),
            };
            let verb = match (self.head == HeadFound::Missing, self.applied) {
                (true, false) => "create",
                (true, true) => "created",
                (false, false) => "rewrite",
                (false, true) => "rewrote",
            };
            let _ = writeln!(s, "  {verb} HEAD naming {what}");
        }
        s
    }
}

impl StateStore {
    /// Looks at a stack's HEAD and every version and works out how `repair` would rebuild
    /// HEAD; changes nothing. Refuses when a version newer than the newest valid one cannot be
    /// decrypted with the given keys (it might be intact: only its key can tell).
    pub fn plan_repair(&self, stack: &StackName, keys: &Keys) -> Result<RepairPlan, StateError> {
        if keys.is_empty() {
            return Err(StateError::NoKey);
        }
        let raw_head = self.backend().get(&stack.head_key())?;
        let (head, recorded) = match &raw_head {
            None => (HeadFound::Missing, None),
            Some(object) => match Self::parse_head(stack, &object.data) {
                Ok(h) => (
                    HeadFound::Names { serial: h.serial },
                    Some((h.serial, h.sha256)),
                ),
                Err(StateError::Corrupt { reason, .. }) => (HeadFound::Corrupt { reason }, None),
                Err(e) => return Err(e),
            },
        };
        let serials = self.serials(stack)?;
        if serials.is_empty() && head == HeadFound::Missing {
            return Err(StateError::NoStack(stack.to_string()));
        }
        let last = serials.last().copied().unwrap_or(0);
        let mut versions = Vec::new();
        let present: std::collections::BTreeSet<u64> = serials.iter().copied().collect();
        for serial in 1..=last {
            let key = stack.version_key(serial);
            let object = if present.contains(&serial) {
                self.backend().get(&key)?
            } else {
                None
            };
            let Some(object) = object else {
                versions.push(VersionCheck {
                    serial,
                    found: VersionFound::Missing,
                    sha256: None,
                });
                continue;
            };
            let sha256 = sha256_hex(&object.data);
            let replaced = matches!(&recorded, Some((s, Some(r))) if *s == serial && *r != sha256);
            let found = if replaced {
                VersionFound::Damaged {
                    reason: "its bytes are not the ones HEAD recorded (replaced after it was \
                             written)"
                        .to_string(),
                }
            } else {
                let what = format!("stack {stack} version {serial} ({key})");
                match open(keys, &what, &object.data, stack.as_str(), serial) {
                    Ok((header, _)) => VersionFound::Valid {
                        who: header.who,
                        created: header.created,
                    },
                    Err(StateError::WrongKey { .. }) => VersionFound::Unreadable,
                    Err(
                        e @ (StateError::Tampered { .. }
                        | StateError::Corrupt { .. }
                        | StateError::Misbound { .. }),
                    ) => VersionFound::Damaged {
                        reason: e.to_string(),
                    },
                    Err(e) => return Err(e),
                }
            };
            versions.push(VersionCheck {
                serial,
                found,
                sha256: Some(sha256),
            });
        }
        let newest_valid = versions
            .iter()
            .rev()
            .find(|v| matches!(v.found, VersionFound::Valid { .. }));
        let target = match newest_valid {
            Some(v) => v.serial,
            None if last == 0 => 0,
            None => {
                return Err(StateError::Conflict {
                    stack: stack.to_string(),
                    message: format!(
                        "none of its {last} versions decrypts with the given keys and is intact: \
                         nothing to rebuild HEAD from; give the key that wrote them"
                    ),
                })
            }
        };
        let mut set_aside = Vec::new();
        for v in versions.iter().filter(|v| v.serial > target) {
            match (&v.found, &v.sha256) {
                (VersionFound::Unreadable, _) => {
                    return Err(StateError::Conflict {
                        stack: stack.to_string(),
                        message: format!(
                            "version {} ({}) does not decrypt with the given keys and is newer \
                             than the newest one that does ({target}): repair cannot tell it \
                             from a damaged one; give the key that wrote it",
                            v.serial,
                            stack.version_key(v.serial)
                        ),
                    })
                }
                (VersionFound::Damaged { .. }, Some(sha256)) => {
                    set_aside.push((v.serial, stack.damaged_key(v.serial, sha256)))
                }
                _ => {}
            }
        }
        let target_sha = versions
            .iter()
            .find(|v| v.serial == target)
            .and_then(|v| v.sha256.clone());
        let head_is_right =
            matches!(&recorded, Some((s, sha)) if *s == target && *sha == target_sha);
        Ok(RepairPlan {
            stack: stack.to_string(),
            head,
            versions,
            set_aside,
            new_head: (!head_is_right).then_some(target),
            lock: self.current_lock(stack)?,
            applied: false,
            head_etag: raw_head.map(|o| o.etag),
        })
    }

    /// Makes the plan under the stack's lock and carries it out: damaged versions above the
    /// newest valid one are moved aside, then HEAD is written to name it. Returns what was done.
    pub fn repair(
        &self,
        stack: &StackName,
        keys: &Keys,
        who: &str,
    ) -> Result<RepairPlan, StateError> {
        let lock = self.lock(stack, who, "repair", std::time::Duration::from_secs(900))?;
        let result = self.repair_locked(stack, keys);
        self.release_lock(stack, &lock)?;
        result
    }

    fn repair_locked(&self, stack: &StackName, keys: &Keys) -> Result<RepairPlan, StateError> {
        let mut plan = self.plan_repair(stack, keys)?;
        // Taken by this repair itself.
        plan.lock = None;
        for (serial, to) in &plan.set_aside {
            let key = stack.version_key(*serial);
            let Some(object) = self.backend().get(&key)? else {
                continue;
            };
            match self
                .backend()
                .put(to, &object.data, &WriteCondition::Create)
            {
                Ok(_) => {}
                Err(BackendError::AlreadyExists { .. })
                    if self.backend().get(to)?.map(|o| o.data).as_ref() == Some(&object.data) => {}
                Err(e) => return Err(e.into()),
            }
            self.backend().delete_if_match(&key, &object.etag)?;
        }
        if let Some(target) = plan.new_head {
            let sha256 = plan.check(target).and_then(|v| v.sha256.clone());
            let condition = match &plan.head_etag {
                Some(etag) => WriteCondition::Match(etag.clone()),
                None => WriteCondition::Create,
            };
            let bytes = Self::head_bytes(target, sha256);
            match self.backend().put(&stack.head_key(), &bytes, &condition) {
                Ok(_) => {}
                Err(
                    BackendError::PreconditionFailed { .. } | BackendError::AlreadyExists { .. },
                ) => {
                    return Err(StateError::Conflict {
                        stack: stack.to_string(),
                        message: "HEAD changed while repair held the lock: someone broke it; \
                                  run repair again"
                            .to_string(),
                    })
                }
                Err(e) => return Err(e.into()),
            }
        }
        plan.applied = true;
        Ok(plan)
    }
}
