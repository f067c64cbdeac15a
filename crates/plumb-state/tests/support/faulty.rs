//! A backend wrapper that makes chosen writes fail as a full disk does (`ErrorKind::StorageFull`,
//! ENOSPC), around a real backend. Reads always pass through.

use plumb_state::backend::{Backend, BackendError, ETag, Object, WriteCondition};
use plumb_state::{Keys, StackName, StateError, StateStore};
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

/// The stack `full_disk_case` works on.
pub fn stack() -> StackName {
    StackName::new("network").expect("valid name")
}

pub fn put(store: &StateStore, keys: &Keys, data: &[u8]) -> Result<u64, StateError> {
    store.put(&stack(), keys, data, "tester@host", None, &mut |_| {})
}

/// The serials and statuses `history` reports.
pub fn statuses(store: &StateStore, keys: &Keys) -> Vec<(u64, &'static str)> {
    store
        .history(&stack(), keys)
        .expect("history")
        .iter()
        .map(|e| (e.serial, e.status))
        .collect()
}

/// The id a message tells the user to give `force-unlock`.
pub fn lock_id_in(message: &str) -> Option<String> {
    let rest = message.split("--lock-id ").nth(1)?;
    Some(rest.split(['`', ' ', ')']).next()?.to_string())
}

/// On an empty store: puts "before", then "after" with write `at` failing as armed, and checks
/// that the stack reads at one of the two; that a lock left behind is the one the error names,
/// and `force-unlock` clears it; that nothing is left above HEAD without a lock; and that the
/// next put takes the next serial. Returns whether a lock was left.
pub fn full_disk_case(
    store: &StateStore,
    switch: &FaultSwitch,
    keys: &Keys,
    at: usize,
    effect: Effect,
    lasting: bool,
    case: &str,
) -> bool {
    let mut kept_lock = false;
    put(store, keys, b"before").expect("put");
    switch.arm(at, effect, lasting);
    let result = put(store, keys, b"after");
    switch.disarm();

    let visible = store.get(&stack(), keys, None).expect(case).data;
    assert!(visible == b"before" || visible == b"after", "{case}");
    match &result {
        Ok(serial) => {
            assert_eq!(*serial, 2, "{case}");
            assert_eq!(visible, b"after", "{case}");
        }
        Err(e @ StateError::PutFailed { serial, .. }) => {
            assert_eq!(*serial, 2, "{case}");
            assert_eq!(visible, b"before", "{case}: {e}");
            assert!(e.to_string().contains("network/"), "{case}: {e}");
            assert!(e.to_string().contains("no storage space"), "{case}: {e}");
        }
        Err(e) => assert!(
            e.to_string().contains("stack network"),
            "{case}: the error names no stack: {e}"
        ),
    }
    let lock = store.current_lock(&stack()).expect("read lock");
    if let Some(lock) = lock {
        // Only a failure that says so may leave the lock, and it names the lock.
        let message = result.as_ref().err().map(|e| e.to_string());
        let told = message.as_deref().and_then(lock_id_in);
        assert_eq!(
            told.as_deref(),
            Some(lock.id.as_str()),
            "{case}: {message:?}"
        );
        assert!(matches!(put(store, keys, b"x"), Err(StateError::Locked(_))));
        store
            .force_unlock(&stack(), &lock.id, keys)
            .expect("force-unlock");
        kept_lock = true;
    } else {
        let error = result.as_ref().err().map(|e| e.to_string());
        assert!(
            !error.unwrap_or_default().contains("force-unlock"),
            "{case}: told to force-unlock a lock that is not there"
        );
    }
    // Nothing above HEAD is left without a lock.
    assert!(
        statuses(store, keys)
            .iter()
            .all(|(_, s)| *s == "head" || *s == "committed"),
        "{case}: {:?}",
        statuses(store, keys)
    );
    let now = store.get(&stack(), keys, None).expect(case).data;
    let next = put(store, keys, b"next").expect(case);
    let expected = if now == b"after" { 3 } else { 2 };
    assert_eq!(next, expected, "{case}");
    let serials: Vec<u64> = statuses(store, keys).iter().map(|s| s.0).collect();
    assert_eq!(serials, (1..=expected).collect::<Vec<_>>(), "{case}");
    kept_lock
}
