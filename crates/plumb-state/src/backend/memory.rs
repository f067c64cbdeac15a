//! An in-memory backend with exact conditional semantics, for tests and for the probe's own
//! unit tests.

use super::{check_key, Backend, BackendError, ETag, Object, WriteCondition};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Objects in a map behind one mutex; every ETag is fresh, so no two writes share one.
#[derive(Default)]
pub struct MemoryBackend {
    inner: Mutex<Objects>,
}

#[derive(Default)]
struct Objects {
    next_etag: u64,
    objects: BTreeMap<String, Object>,
}

impl MemoryBackend {
    pub fn new() -> Self {
        Self::default()
    }

    fn objects(&self) -> std::sync::MutexGuard<'_, Objects> {
        // A panic while holding the lock cannot leave a half-made object: each operation
        // changes the map in one call.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Backend for MemoryBackend {
    fn describe(&self) -> String {
        "memory://".to_string()
    }

    fn get(&self, key: &str) -> Result<Option<Object>, BackendError> {
        check_key(key)?;
        Ok(self.objects().objects.get(key).cloned())
    }

    fn put(
        &self,
        key: &str,
        data: &[u8],
        condition: &WriteCondition,
    ) -> Result<ETag, BackendError> {
        check_key(key)?;
        let mut objects = self.objects();
        match (condition, objects.objects.get(key)) {
            (WriteCondition::Create, Some(_)) => {
                return Err(BackendError::AlreadyExists {
                    key: key.to_string(),
                })
            }
            (WriteCondition::Match(_), None) => {
                return Err(BackendError::PreconditionFailed {
                    key: key.to_string(),
                })
            }
            (WriteCondition::Match(want), Some(current)) if &current.etag != want => {
                return Err(BackendError::PreconditionFailed {
                    key: key.to_string(),
                })
            }
            _ => {}
        }
        objects.next_etag += 1;
        let etag = ETag(format!("\"m{}\"", objects.next_etag));
        objects.objects.insert(
            key.to_string(),
            Object {
                data: data.to_vec(),
                etag: etag.clone(),
            },
        );
        Ok(etag)
    }

    fn delete_if_match(&self, key: &str, etag: &ETag) -> Result<(), BackendError> {
        check_key(key)?;
        let mut objects = self.objects();
        match objects.objects.get(key) {
            None => Err(BackendError::NotFound {
                key: key.to_string(),
            }),
            Some(current) if &current.etag != etag => Err(BackendError::PreconditionFailed {
                key: key.to_string(),
            }),
            Some(_) => {
                objects.objects.remove(key);
                Ok(())
            }
        }
    }

    fn delete(&self, key: &str) -> Result<(), BackendError> {
        check_key(key)?;
        self.objects().objects.remove(key);
        Ok(())
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>, BackendError> {
        Ok(self
            .objects()
            .objects
            .keys()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect())
    }
}
