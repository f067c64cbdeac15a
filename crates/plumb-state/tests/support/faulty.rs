//! A backend wrapper that makes chosen writes fail as a full disk does (`ErrorKind::StorageFull`,
//! ENOSPC), around a real backend. Reads always pass through.

use plumb_state::backend::{Backend, BackendError, ETag, Object, WriteCondition};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a failing write does before it reports the error.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Nothing: the disk was full before the write.
    NothingWritten,
    /// The write lands, and then the call fails (a lost reply, a failed fsync after `link`).
    Written,
}

#[derive(Copy, Clone, Debug)]
struct Fault {
    at: usize,
    effect: Effect,
    /// Every write from `at` on fails too (the disk stays full), not only the `at`th.
    lasting: bool,
}

#[derive(Default)]
struct Switch {
    writes: AtomicUsize,
    fault: Mutex<Option<Fault>>,
}

/// The handle a test keeps to arm and disarm the fault and count writes.
#[derive(Clone, Default)]
pub struct FaultSwitch(Arc<Switch>);

impl FaultSwitch {
    /// From now on, the `at`th write (1-based, counted from this call) fails.
    pub fn arm(&self, at: usize, effect: Effect, lasting: bool) {
        self.0.writes.store(0, Ordering::SeqCst);
        *self.0.fault.lock().expect("switch") = Some(Fault {
            at,
            effect,
            lasting,
        });
    }

    /// Space was freed: writes succeed again.
    pub fn disarm(&self) {
        *self.0.fault.lock().expect("switch") = None;
    }

    /// Starts counting writes from zero.
    pub fn reset_count(&self) {
        self.0.writes.store(0, Ordering::SeqCst);
    }

    pub fn writes(&self) -> usize {
        self.0.writes.load(Ordering::SeqCst)
    }

    fn next_write(&self) -> Option<Effect> {
        let n = self.0.writes.fetch_add(1, Ordering::SeqCst) + 1;
        let fault = (*self.0.fault.lock().expect("switch"))?;
        (n == fault.at || (fault.lasting && n > fault.at)).then_some(fault.effect)
    }
}

pub struct FaultyBackend<B> {
    inner: B,
    switch: FaultSwitch,
}

impl<B: Backend> FaultyBackend<B> {
    pub fn new(inner: B) -> (Self, FaultSwitch) {
        let switch = FaultSwitch::default();
        (
            Self {
                inner,
                switch: switch.clone(),
            },
            switch,
        )
    }

    /// Runs a write, failing it as armed.
    fn write<T>(
        &self,
        key: &str,
        op: impl FnOnce() -> Result<T, BackendError>,
    ) -> Result<T, BackendError> {
        match self.switch.next_write() {
            None => op(),
            Some(Effect::NothingWritten) => Err(disk_full(key)),
            Some(Effect::Written) => op().and(Err(disk_full(key))),
        }
    }
}

pub fn disk_full(key: &str) -> BackendError {
    BackendError::Io {
        key: key.to_string(),
        message: std::io::Error::from(std::io::ErrorKind::StorageFull).to_string(),
    }
}

impl<B: Backend> Backend for FaultyBackend<B> {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn get(&self, key: &str) -> Result<Option<Object>, BackendError> {
        self.inner.get(key)
    }

    fn put(
        &self,
        key: &str,
        data: &[u8],
        condition: &WriteCondition,
    ) -> Result<ETag, BackendError> {
        self.write(key, || self.inner.put(key, data, condition))
    }

    fn delete_if_match(&self, key: &str, etag: &ETag) -> Result<(), BackendError> {
        self.write(key, || self.inner.delete_if_match(key, etag))
    }

    fn delete(&self, key: &str) -> Result<(), BackendError> {
        self.write(key, || self.inner.delete(key))
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>, BackendError> {
        self.inner.list(prefix)
    }

    fn remove_stale_temporaries(
        &self,
        dir: &str,
        min_age: Duration,
    ) -> Result<Vec<String>, BackendError> {
        self.write(dir, || self.inner.remove_stale_temporaries(dir, min_age))
    }
}
