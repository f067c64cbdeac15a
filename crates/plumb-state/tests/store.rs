//! The state store's guarantees on the in-memory and directory backends: versions, locking,
//! binding, tamper and rollback refusal, and interrupted puts.

use plumb_state::backend::{Backend, LocalBackend, MemoryBackend, WriteCondition};
use plumb_state::{Keys, PutStep, StackName, StateError, StateStore};
use std::panic::{catch_unwind, AssertUnwindSafe};

fn stack() -> StackName {
    StackName::new("network").expect("valid name")
}

fn stores() -> Vec<(StateStore, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().expect("temp dir");
    vec![
        (StateStore::new(Box::new(MemoryBackend::new())), None),
        (
            StateStore::new(Box::new(LocalBackend::new(dir.path().join("store")))),
            Some(dir),
        ),
    ]
}

fn put(store: &StateStore, keys: &Keys, data: &[u8]) -> Result<u64, StateError> {
    store.put(&stack(), keys, data, "tester@host", None, &mut |_| {})
}

/// Replaces an object's bytes behind the store's back, as someone with write access could.
fn overwrite(backend: &dyn Backend, key: &str, data: &[u8]) {
    backend.delete(key).expect("delete");
    backend
        .put(key, data, &WriteCondition::Create)
        .expect("write");
}

fn version_key(serial: u64) -> String {
    format!("network/versions/{serial:020}")
}

#[test]
fn puts_make_contiguous_versions_that_read_back() {
    for (store, _dir) in stores() {
        let (keys, _) = Keys::generate();
        store.init(&stack()).expect("init");
        assert!(matches!(
            store.init(&stack()),
            Err(StateError::StackExists(_))
        ));
        assert!(matches!(
            store.get(&stack(), &keys, None),
            Err(StateError::Empty(_))
        ));
        for n in 1..=3u64 {
            assert_eq!(
                put(&store, &keys, format!("state {n}").as_bytes()).ok(),
                Some(n)
            );
        }
        assert_eq!(
            store.get(&stack(), &keys, None).expect("get").data,
            b"state 3"
        );
        let first = store.get(&stack(), &keys, Some(1)).expect("get 1");
        assert_eq!(first.data, b"state 1");
        assert_eq!(first.header.who, "tester@host");
        let history = store.history(&stack(), &keys).expect("history");
        let serials: Vec<u64> = history.iter().map(|h| h.serial).collect();
        assert_eq!(serials, vec![1, 2, 3]);
        assert_eq!(history[2].status, "head");
        assert_eq!(history[0].size, Some(7));
        assert!(store.current_lock(&stack()).expect("lock").is_none());
    }
}

#[test]
fn stored_versions_never_hold_plaintext() {
    let backend = MemoryBackend::new();
    let store = StateStore::new(Box::new(backend));
    let (keys, _) = Keys::generate();
    put(&store, &keys, b"super-secret-kubeconfig").expect("put");
    for key in store.backend().list("").expect("list") {
        let object = store.backend().get(&key).expect("get").expect("object");
        let needle = b"super-secret-kubeconfig";
        assert!(
            !object.data.windows(needle.len()).any(|w| w == needle),
            "{key}"
        );
    }
}

#[test]
fn a_wrong_key_is_refused() {
    let store = StateStore::new(Box::new(MemoryBackend::new()));
    let (keys, _) = Keys::generate();
    put(&store, &keys, b"secret").expect("put");
    let (other, _) = Keys::generate();
    let err = store.get(&stack(), &other, None).expect_err("wrong key");
    assert!(matches!(err, StateError::WrongKey { .. }), "{err}");
    assert!(err.to_string().contains("wrong key"), "{err}");
}

#[test]
fn a_flipped_byte_is_refused() {
    let store = StateStore::new(Box::new(MemoryBackend::new()));
    let (keys, _) = Keys::generate();
    put(&store, &keys, b"secret").expect("put");
    let mut bytes = store
        .backend()
        .get(&version_key(1))
        .expect("get")
        .expect("object")
        .data;
    let at = bytes.len() - 5;
    bytes[at] ^= 0x40;
    overwrite(store.backend(), &version_key(1), &bytes);
    let err = store.get(&stack(), &keys, Some(1)).expect_err("tampered");
    assert!(matches!(err, StateError::Tampered { .. }), "{err}");
    let err = store.get(&stack(), &keys, None).expect_err("tampered");
    assert!(matches!(err, StateError::DigestMismatch { .. }), "{err}");
}

#[test]
fn a_version_copied_over_another_is_refused() {
    let store = StateStore::new(Box::new(MemoryBackend::new()));
    let (keys, _) = Keys::generate();
    put(&store, &keys, b"one").expect("put");
    put(&store, &keys, b"two").expect("put");
    let old = store
        .backend()
        .get(&version_key(1))
        .expect("get")
        .expect("object")
        .data;
    overwrite(store.backend(), &version_key(2), &old);
    let err = store.get(&stack(), &keys, Some(2)).expect_err("copied");
    assert!(
        matches!(
            err,
            StateError::Misbound {
                found_serial: 1,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("copied or replayed"), "{err}");
    let err = store.get(&stack(), &keys, None).expect_err("copied");
    assert!(matches!(err, StateError::DigestMismatch { .. }), "{err}");
}

#[test]
fn a_version_from_another_stack_is_refused() {
    let store = StateStore::new(Box::new(MemoryBackend::new()));
    let (keys, _) = Keys::generate();
    let other = StackName::new("dns").expect("name");
    store
        .put(&other, &keys, b"dns state", "t", None, &mut |_| {})
        .expect("put");
    let foreign = store
        .backend()
        .get("dns/versions/00000000000000000001")
        .expect("get")
        .expect("object")
        .data;
    store
        .backend()
        .put(&version_key(1), &foreign, &WriteCondition::Create)
        .expect("plant");
    let err = store.get(&stack(), &keys, Some(1)).expect_err("foreign");
    assert!(matches!(err, StateError::Misbound { .. }), "{err}");
}

#[test]
fn an_old_head_replayed_is_refused() {
    for (store, _dir) in stores() {
        let (keys, _) = Keys::generate();
        put(&store, &keys, b"one").expect("put");
        let old_head = store
            .backend()
            .get("network/HEAD")
            .expect("get")
            .expect("head")
            .data;
        put(&store, &keys, b"two").expect("put");
        put(&store, &keys, b"three").expect("put");
        overwrite(store.backend(), "network/HEAD", &old_head);
        let err = store.get(&stack(), &keys, None).expect_err("rolled back");
        assert!(
            matches!(
                err,
                StateError::RolledBack {
                    head: 1,
                    above: 2,
                    ..
                }
            ),
            "{err}"
        );
        let err = put(&store, &keys, b"four").expect_err("rolled back");
        assert!(matches!(err, StateError::RolledBack { .. }), "{err}");
        assert!(store.current_lock(&stack()).expect("lock").is_none());
    }
}

#[test]
fn a_put_without_the_lock_is_refused_and_the_holder_named() {
    let store = StateStore::new(Box::new(MemoryBackend::new()));
    let (keys, _) = Keys::generate();
    let held = store
        .lock(
            &stack(),
            "ops@bastion",
            "migration",
            std::time::Duration::from_secs(60),
        )
        .expect("lock");
    let err = put(&store, &keys, b"x").expect_err("locked");
    assert!(err.to_string().starts_with("locked:"), "{err}");
    assert!(err.to_string().contains("ops@bastion"), "{err}");
    // The holder may put under its lock, by id.
    let serial = store
        .put(
            &stack(),
            &keys,
            b"x",
            "ops@bastion",
            Some(&held.info.id),
            &mut |_| {},
        )
        .expect("put under held lock");
    assert_eq!(serial, 1);
    assert!(matches!(
        store.unlock(&stack(), "not-the-id"),
        Err(StateError::LockMismatch { .. })
    ));
    store.unlock(&stack(), &held.info.id).expect("unlock");
    assert!(matches!(
        store.unlock(&stack(), &held.info.id),
        Err(StateError::NotLocked(_))
    ));
}

/// A put killed after each step leaves the stack readable at the previous or the new version,
/// and its lock breakable with `force-unlock`, after which puts carry on without a gap.
#[test]
fn a_put_interrupted_at_any_step_is_recoverable() {
    for kill_at in PutStep::ALL {
        for (store, _dir) in stores() {
            let (keys, _) = Keys::generate();
            put(&store, &keys, b"before").expect("put");
            let interrupted = catch_unwind(AssertUnwindSafe(|| {
                store.put(&stack(), &keys, b"after", "victim", None, &mut |step| {
                    if step == kill_at {
                        panic!("killed at {}", step.name());
                    }
                })
            }));
            assert!(interrupted.is_err(), "{kill_at:?}");
            let visible = store.get(&stack(), &keys, None).expect("readable").data;
            assert!(visible == b"before" || visible == b"after", "{kill_at:?}");
            let expect_after = matches!(kill_at, PutStep::HeadMoved | PutStep::LockReleased);
            assert_eq!(visible == b"after", expect_after, "{kill_at:?}");
            let lock = store.current_lock(&stack()).expect("read lock");
            if kill_at == PutStep::LockReleased {
                assert!(lock.is_none());
            } else {
                let lock = lock.expect("the killed put still holds the lock");
                assert!(matches!(
                    put(&store, &keys, b"x"),
                    Err(StateError::Locked(_))
                ));
                let report = store
                    .force_unlock(&stack(), &lock.id, &keys)
                    .expect("force-unlock");
                let completed = kill_at == PutStep::VersionWritten;
                assert_eq!(
                    report.completed_serial,
                    completed.then_some(2),
                    "{kill_at:?}"
                );
            }
            let now = store.get(&stack(), &keys, None).expect("readable").data;
            let next = put(&store, &keys, b"next").expect("put after recovery");
            let expected_next = if now == b"after" { 3 } else { 2 };
            assert_eq!(next, expected_next, "{kill_at:?}");
            let serials: Vec<u64> = store
                .history(&stack(), &keys)
                .expect("history")
                .iter()
                .map(|h| h.serial)
                .collect();
            assert_eq!(
                serials,
                (1..=expected_next).collect::<Vec<_>>(),
                "{kill_at:?}"
            );
        }
    }
}

#[test]
fn concurrent_puts_either_win_their_own_serial_or_are_locked() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (keys, _) = Keys::generate();
    let barrier = std::sync::Barrier::new(16);
    let results: Vec<(usize, Result<u64, StateError>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|i| {
                let (barrier, keys, root) = (&barrier, &keys, dir.path());
                scope.spawn(move || {
                    let store = StateStore::new(Box::new(LocalBackend::new(root)));
                    barrier.wait();
                    let data = format!("writer {i}");
                    (
                        i,
                        store.put(&stack(), keys, data.as_bytes(), "t", None, &mut |_| {}),
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    let store = StateStore::new(Box::new(LocalBackend::new(dir.path())));
    let mut won: Vec<(u64, usize)> = Vec::new();
    for (writer, result) in results {
        match result {
            Ok(serial) => won.push((serial, writer)),
            Err(StateError::Locked(_)) => {}
            Err(e) => panic!("writer {writer}: {e}"),
        }
    }
    won.sort();
    assert!(!won.is_empty());
    for (n, (serial, writer)) in won.iter().enumerate() {
        assert_eq!(*serial, n as u64 + 1, "serials are contiguous");
        let version = store.get(&stack(), &keys, Some(*serial)).expect("get");
        assert_eq!(version.data, format!("writer {writer}").as_bytes());
    }
}

#[test]
fn passphrase_round_trip_and_wrong_passphrase() {
    let store = StateStore::new(Box::new(MemoryBackend::new()));
    let mut keys = Keys::new();
    keys.set_passphrase("correct horse".to_string());
    put(&store, &keys, b"kube").expect("put");
    assert_eq!(store.get(&stack(), &keys, None).expect("get").data, b"kube");
    let mut wrong = Keys::new();
    wrong.set_passphrase("battery staple".to_string());
    let err = store
        .get(&stack(), &wrong, None)
        .expect_err("wrong passphrase");
    assert!(
        matches!(
            err,
            StateError::WrongKey { .. } | StateError::Tampered { .. }
        ),
        "{err}"
    );
}

#[test]
fn a_lock_under_a_chosen_id_is_the_only_one_that_writes_and_unlocks() {
    for (store, _dir) in stores() {
        let (keys, _) = Keys::generate();
        let ttl = std::time::Duration::from_secs(60);
        for bad in ["", "with space", "tab\there", &"x".repeat(129)] {
            assert!(
                matches!(
                    store.lock_as(&stack(), bad, "me", "apply", ttl),
                    Err(StateError::InvalidLockId(_))
                ),
                "{bad:?}"
            );
        }
        let id = "6a1f2c3e-0b4d-4e5f-8a9b-0c1d2e3f4a5b";
        let held = store
            .lock_as(&stack(), id, "ops@laptop", "OperationTypeApply", ttl)
            .expect("lock");
        assert_eq!(held.info.id, id);
        assert_eq!(held.info.who, "ops@laptop");
        match store.lock_as(&stack(), "other", "ci@runner", "apply", ttl) {
            Err(StateError::Locked(holder)) => assert_eq!(holder.id, id),
            other => panic!("a second lock was not refused: {other:?}"),
        }
        assert!(matches!(
            store.put(&stack(), &keys, b"x", "ci", Some("other"), &mut |_| {}),
            Err(StateError::LockMismatch { .. })
        ));
        assert_eq!(
            store
                .put(&stack(), &keys, b"state", "ops", Some(id), &mut |_| {})
                .ok(),
            Some(1)
        );
        assert!(store.unlock(&stack(), "other").is_err());
        store.unlock(&stack(), id).expect("unlock");
        assert!(store.current_lock(&stack()).expect("read lock").is_none());
    }
}
