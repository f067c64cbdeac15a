//! The state store after faults: a full disk at every write of a put (injected through a
//! wrapper around the real directory and in-memory backends), and the damage a store can
//! suffer between runs (a missing or damaged version, a deleted HEAD, a wrong key, a garbage
//! lock, temporary files of killed writers). After each, the stack reads at the previous or the
//! new version, and the store's own operations bring it back.

#[path = "support/faulty.rs"]
mod faulty;

use faulty::{lock_id_in, put, stack, statuses, Effect, FaultSwitch, FaultyBackend};
use plumb_state::backend::{Backend, LocalBackend, MemoryBackend, WriteCondition};
use plumb_state::{HeadFound, Keys, PutOptions, StateError, StateStore, VersionFound};
use std::path::Path;

fn version_key(serial: u64) -> String {
    format!("network/versions/{serial:020}")
}

/// A store over each real backend, behind the fault switch.
fn faulty_stores() -> Vec<(StateStore, FaultSwitch, &'static str, tempfile::TempDir)> {
    let dir = tempfile::tempdir().expect("temp dir");
    let (memory, memory_switch) = FaultyBackend::new(MemoryBackend::new());
    let (local, local_switch) = FaultyBackend::new(LocalBackend::new(dir.path().join("store")));
    vec![
        (
            StateStore::new(Box::new(memory)),
            memory_switch,
            "memory",
            tempfile::tempdir().expect("temp dir"),
        ),
        (
            StateStore::new(Box::new(local)),
            local_switch,
            "directory",
            dir,
        ),
    ]
}

/// Every file under `root` whose name starts with `.tmp-`.
fn temporaries(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if entry.file_name().to_string_lossy().starts_with(".tmp-") {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

/// A put whose Nth write fails with ENOSPC, for every N, whether nothing was written, the write
/// landed before the failure, or the disk stays full: the stack reads at the previous or the
/// new version; a lock left behind is named in the error and `force-unlock` clears it; puts then
/// carry on with contiguous serials.
#[test]
fn a_put_that_runs_out_of_space_at_any_write_is_undone_or_recoverable() {
    let (keys, _) = Keys::generate();
    let (store, switch, _, _dir) = faulty_stores().remove(0);
    put(&store, &keys, b"before").expect("put");
    switch.reset_count();
    put(&store, &keys, b"after").expect("put");
    let writes = switch.writes();
    // Lock, two temporary-file sweeps, version, HEAD, release.
    assert_eq!(writes, 6, "writes of one put");

    let mut cases = 0;
    let mut kept_locks = 0;
    for at in 1..=writes {
        for (effect, lasting) in [
            (Effect::NothingWritten, false),
            (Effect::NothingWritten, true),
            (Effect::Written, false),
            (Effect::Written, true),
        ] {
            for (store, switch, backend, dir) in faulty_stores() {
                let case = format!("{backend}: write {at} fails, {effect:?}, lasting {lasting}");
                if faulty::full_disk_case(&store, &switch, &keys, at, effect, lasting, &case) {
                    kept_locks += 1;
                }
                cases += 1;
                assert_eq!(temporaries(dir.path()), Vec::<String>::new(), "{case}");
            }
        }
    }
    println!("{cases} full-disk cases, {kept_locks} left a lock that force-unlock cleared");
    assert_eq!(cases, writes * 4 * 2);
    assert!(
        kept_locks > 0,
        "the disk staying full must leave at least one lock"
    );
}

/// The case the issue reported: HEAD's write fails and the disk stays full, so the put cannot
/// remove its version; it keeps the lock, and force-unlock completes the put.
#[test]
fn a_head_write_on_a_full_disk_keeps_the_lock_and_force_unlock_completes_it() {
    for (store, switch, backend, _dir) in faulty_stores() {
        let (keys, _) = Keys::generate();
        put(&store, &keys, b"before").expect("put");
        // Lock, two sweeps, version: the fifth write is HEAD's.
        switch.arm(5, Effect::NothingWritten, true);
        let err = put(&store, &keys, b"after").expect_err("disk full");
        switch.disarm();
        assert!(
            matches!(err, StateError::PutIncomplete { serial: 2, .. }),
            "{backend}: {err}"
        );
        let message = err.to_string();
        assert!(
            message.contains(&version_key(2)) || message.contains("network/HEAD"),
            "{message}"
        );
        assert_eq!(
            store.get(&stack(), &keys, None).expect("get").data,
            b"before"
        );
        assert_eq!(
            statuses(&store, &keys),
            vec![(1, "head"), (2, "uncommitted")]
        );
        let id = lock_id_in(&message).expect("lock id in the message");
        let report = store
            .force_unlock(&stack(), &id, &keys)
            .expect("force-unlock");
        assert_eq!(report.completed_serial, Some(2), "{backend}");
        assert_eq!(
            store.get(&stack(), &keys, None).expect("get").data,
            b"after"
        );
        assert_eq!(put(&store, &keys, b"next").expect("put"), 3);
    }
}

#[test]
fn history_reports_a_missing_middle_version_and_goes_on() {
    for (store, _, backend, _dir) in faulty_stores() {
        let (keys, _) = Keys::generate();
        for data in ["one", "two", "three"] {
            put(&store, &keys, data.as_bytes()).expect("put");
        }
        store.backend().delete(&version_key(2)).expect("delete");
        // A stray object below the first serial is not a version and hides none.
        store
            .backend()
            .put(&version_key(0), b"stray", &WriteCondition::Create)
            .expect("stray");
        let history = store.history(&stack(), &keys).expect("history");
        let found: Vec<(u64, &str)> = history.iter().map(|e| (e.serial, e.status)).collect();
        assert_eq!(
            found,
            vec![(1, "committed"), (2, "missing"), (3, "head")],
            "{backend}"
        );
        let problem = history[1].problem.as_deref().unwrap_or_default();
        assert!(problem.contains(&version_key(2)), "{problem}");
        assert_eq!(
            store.get(&stack(), &keys, None).expect("get").data,
            b"three"
        );
        assert_eq!(put(&store, &keys, b"four").expect("put"), 4);
    }
}

#[test]
fn a_missing_head_version_is_named_and_repair_moves_head_below_it() {
    for (store, _, backend, _dir) in faulty_stores() {
        let (keys, _) = Keys::generate();
        for data in ["one", "two", "three"] {
            put(&store, &keys, data.as_bytes()).expect("put");
        }
        store.backend().delete(&version_key(3)).expect("delete");
        let err = store.get(&stack(), &keys, None).expect_err("missing");
        assert!(
            err.to_string().contains("which is missing"),
            "{backend}: {err}"
        );
        assert!(err.to_string().contains(&version_key(3)), "{err}");
        assert!(put(&store, &keys, b"x").is_err());
        let plan = store.repair(&stack(), &keys, "ops").expect("repair");
        assert_eq!(plan.new_head, Some(2), "{backend}");
        assert_eq!(store.get(&stack(), &keys, None).expect("get").data, b"two");
        assert_eq!(put(&store, &keys, b"three again").expect("put"), 3);
    }
}

#[test]
fn history_reports_a_damaged_old_version_and_goes_on() {
    for (store, _, backend, _dir) in faulty_stores() {
        let (keys, _) = Keys::generate();
        for data in ["one", "two", "three"] {
            put(&store, &keys, data.as_bytes()).expect("put");
        }
        flip_byte(store.backend(), &version_key(1));
        let history = store.history(&stack(), &keys).expect("history");
        let found: Vec<(u64, &str)> = history.iter().map(|e| (e.serial, e.status)).collect();
        assert_eq!(
            found,
            vec![(1, "damaged"), (2, "committed"), (3, "head")],
            "{backend}"
        );
        assert!(history[0].is_unreadable());
        let problem = history[0].problem.as_deref().unwrap_or_default();
        assert!(problem.contains("stack network version 1"), "{problem}");
        assert!(problem.contains("modified or is corrupt"), "{problem}");
        assert_eq!(history[1].who.as_deref(), Some("tester@host"));
        // A version no given key decrypts is reported as such, not as damaged.
        let (other, _) = Keys::generate();
        let history = store.history(&stack(), &other).expect("history");
        assert_eq!(history[2].status, "unreadable", "{backend}");
    }
}

fn flip_byte(backend: &dyn Backend, key: &str) {
    let mut bytes = backend.get(key).expect("get").expect("object").data;
    let at = bytes.len() - 5;
    bytes[at] ^= 0x40;
    backend.delete(key).expect("delete");
    backend
        .put(key, &bytes, &WriteCondition::Create)
        .expect("write");
}

#[test]
fn a_deleted_head_refuses_init_and_repair_rebuilds_it() {
    for (store, _, backend, _dir) in faulty_stores() {
        let (keys, _) = Keys::generate();
        for data in ["one", "two", "three"] {
            put(&store, &keys, data.as_bytes()).expect("put");
        }
        store.backend().delete("network/HEAD").expect("delete HEAD");
        let err = store.init(&stack()).expect_err("init over versions");
        assert!(
            matches!(err, StateError::HeadMissing { newest: 3, .. }),
            "{backend}: {err}"
        );
        assert!(err.to_string().contains("plumb state repair"), "{err}");
        for err in [
            store.get(&stack(), &keys, None).expect_err("get"),
            put(&store, &keys, b"x").expect_err("put"),
            store.history(&stack(), &keys).expect_err("history"),
        ] {
            assert!(
                matches!(err, StateError::HeadMissing { .. }),
                "{backend}: {err}"
            );
        }
        let plan = store.plan_repair(&stack(), &keys).expect("plan");
        assert_eq!(plan.head, HeadFound::Missing);
        assert_eq!(plan.new_head, Some(3));
        assert!(
            plan.describe().contains("create HEAD naming version 3"),
            "{}",
            plan.describe()
        );
        // Planning changed nothing.
        assert!(store.backend().get("network/HEAD").expect("get").is_none());
        let done = store.repair(&stack(), &keys, "ops").expect("repair");
        assert_eq!(done.new_head, Some(3));
        assert_eq!(
            store.get(&stack(), &keys, None).expect("get").data,
            b"three"
        );
        assert!(store.plan_repair(&stack(), &keys).expect("plan").is_empty());
        assert_eq!(put(&store, &keys, b"four").expect("put"), 4);
        assert!(store.current_lock(&stack()).expect("lock").is_none());
    }
}

/// A damaged HEAD version is moved aside, never deleted, and HEAD goes back to the newest valid
/// version; a garbage HEAD and a rolled-back HEAD are rebuilt too.
#[test]
fn repair_moves_a_damaged_head_version_aside_and_rebuilds_a_garbage_or_old_head() {
    for (store, _, backend, _dir) in faulty_stores() {
        let (keys, _) = Keys::generate();
        for data in ["one", "two", "three"] {
            put(&store, &keys, data.as_bytes()).expect("put");
        }
        let original = store
            .backend()
            .get(&version_key(3))
            .expect("get")
            .expect("v3")
            .data;
        flip_byte(store.backend(), &version_key(3));
        let damaged = store
            .backend()
            .get(&version_key(3))
            .expect("get")
            .expect("v3")
            .data;
        assert!(matches!(
            store.get(&stack(), &keys, None),
            Err(StateError::DigestMismatch { serial: 3, .. })
        ));
        let plan = store.plan_repair(&stack(), &keys).expect("plan");
        assert_eq!(plan.new_head, Some(2), "{backend}");
        assert_eq!(plan.set_aside.len(), 1);
        let (serial, aside) = plan.set_aside[0].clone();
        assert_eq!(serial, 3);
        assert!(aside.starts_with("network/damaged/"), "{aside}");
        assert!(matches!(
            plan.versions[2].found,
            VersionFound::Damaged { .. }
        ));
        store.repair(&stack(), &keys, "ops").expect("repair");
        assert_ne!(original, damaged);
        assert_eq!(
            store
                .backend()
                .get(&aside)
                .expect("get")
                .expect("set aside")
                .data,
            damaged,
            "the damaged bytes are kept"
        );
        assert_eq!(store.get(&stack(), &keys, None).expect("get").data, b"two");
        assert_eq!(put(&store, &keys, b"three again").expect("put"), 3);

        // A garbage HEAD.
        store.backend().delete("network/HEAD").expect("delete");
        store
            .backend()
            .put("network/HEAD", b"{not json", &WriteCondition::Create)
            .expect("garbage");
        let err = store.get(&stack(), &keys, None).expect_err("garbage HEAD");
        assert!(err.to_string().contains("plumb state repair"), "{err}");
        let plan = store.repair(&stack(), &keys, "ops").expect("repair");
        assert!(matches!(plan.head, HeadFound::Corrupt { .. }));
        assert_eq!(
            store.get(&stack(), &keys, None).expect("get").data,
            b"three again"
        );

        // An old HEAD replayed: repair moves it forward to the newest valid version.
        put(&store, &keys, b"four").expect("put");
        let head = store
            .backend()
            .get("network/HEAD")
            .expect("get")
            .expect("head")
            .data;
        let text = String::from_utf8(head).expect("utf-8");
        let rolled = text.replace("\"serial\":4", "\"serial\":3");
        store.backend().delete("network/HEAD").expect("delete");
        store
            .backend()
            .put("network/HEAD", rolled.as_bytes(), &WriteCondition::Create)
            .expect("replay");
        assert!(matches!(
            store.get(&stack(), &keys, None),
            Err(StateError::DigestMismatch { .. } | StateError::RolledBack { .. })
        ));
        let plan = store.repair(&stack(), &keys, "ops").expect("repair");
        assert_eq!(plan.new_head, Some(4), "{backend}");
        assert_eq!(store.get(&stack(), &keys, None).expect("get").data, b"four");
    }
}

/// Repair with a key that opens nothing, or that cannot open the newest version, refuses and
/// changes nothing: it cannot tell an intact version from a damaged one without the key.
#[test]
fn repair_with_the_wrong_key_refuses_and_changes_nothing() {
    let (store, _, _, _dir) = faulty_stores().remove(1);
    let (keys, _) = Keys::generate();
    let (newer, _) = Keys::generate();
    put(&store, &keys, b"one").expect("put");
    let options = PutOptions {
        who: "t",
        lock_id: None,
        rekey: true,
    };
    store
        .put_with(&stack(), &newer, b"two", &options, &mut |_| {})
        .expect("rekeyed put");
    store.backend().delete("network/HEAD").expect("delete");
    let before = store.backend().list("").expect("list");
    let (stranger, _) = Keys::generate();
    let err = store
        .repair(&stack(), &stranger, "ops")
        .expect_err("no key");
    assert!(err.to_string().contains("none of its 2 versions"), "{err}");
    let err = store.repair(&stack(), &keys, "ops").expect_err("newer key");
    assert!(err.to_string().contains("version 2"), "{err}");
    assert_eq!(store.backend().list("").expect("list"), before);
    store.repair(&stack(), &newer, "ops").expect("repair");
    assert_eq!(store.get(&stack(), &newer, None).expect("get").data, b"two");
}

#[test]
fn a_put_whose_key_cannot_read_the_current_version_is_refused_unless_rekey() {
    for (store, _, backend, _dir) in faulty_stores() {
        let (owner, _) = Keys::generate();
        let (stranger, _) = Keys::generate();
        put(&store, &owner, b"owned").expect("put");
        let err = put(&store, &stranger, b"hijack").expect_err("locks the owner out");
        assert!(
            matches!(err, StateError::WouldLockOut { serial: 1, .. }),
            "{backend}: {err}"
        );
        assert!(err.to_string().contains("--rekey"), "{err}");
        assert_eq!(
            store.get(&stack(), &owner, None).expect("get").data,
            b"owned"
        );
        assert!(store.current_lock(&stack()).expect("lock").is_none());
        let options = PutOptions {
            who: "t",
            lock_id: None,
            rekey: true,
        };
        let serial = store
            .put_with(&stack(), &stranger, b"rekeyed", &options, &mut |_| {})
            .expect("rekey");
        assert_eq!(serial, 2);
        assert_eq!(
            store.get(&stack(), &stranger, None).expect("get").data,
            b"rekeyed"
        );
        assert!(matches!(
            store.get(&stack(), &owner, None),
            Err(StateError::WrongKey { .. })
        ));
    }
}

#[test]
fn a_garbage_lock_is_named_and_force_unlock_clears_it() {
    for (store, _, backend, _dir) in faulty_stores() {
        let (keys, _) = Keys::generate();
        put(&store, &keys, b"one").expect("put");
        store
            .backend()
            .put("network/lock", b"\x00garbage", &WriteCondition::Create)
            .expect("garbage lock");
        let err = put(&store, &keys, b"two").expect_err("locked by garbage");
        assert!(
            matches!(err, StateError::CorruptLock { .. }),
            "{backend}: {err}"
        );
        assert!(err.to_string().contains("network/lock"), "{err}");
        let id = lock_id_in(&err.to_string()).expect("an id to give force-unlock");
        assert!(id.starts_with("corrupt-"), "{id}");
        assert!(matches!(
            store.force_unlock(&stack(), "corrupt-0000000000000000", &keys),
            Err(StateError::LockMismatch { .. })
        ));
        assert_eq!(store.get(&stack(), &keys, None).expect("get").data, b"one");
        store
            .force_unlock(&stack(), &id, &keys)
            .expect("force-unlock");
        assert_eq!(put(&store, &keys, b"two").expect("put"), 2);
    }
}

#[test]
fn the_next_lock_removes_temporary_files_of_killed_writers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("store");
    let store = StateStore::new(Box::new(LocalBackend::new(&root)));
    let (keys, _) = Keys::generate();
    put(&store, &keys, b"one").expect("put");
    let in_versions = root.join("network/versions/.tmp-4242-00112233");
    let old_beside_head = root.join("network/.tmp-4242-44556677");
    let fresh_beside_head = root.join("network/.tmp-4243-8899aabb");
    for path in [&in_versions, &old_beside_head, &fresh_beside_head] {
        std::fs::write(path, b"half a version").expect("plant");
    }
    let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&old_beside_head)
        .and_then(|f| f.set_modified(an_hour_ago))
        .expect("age");
    assert_eq!(put(&store, &keys, b"two").expect("put"), 2);
    assert!(!in_versions.exists(), "only a lock holder writes versions/");
    assert!(!old_beside_head.exists(), "an hour-old temporary file");
    // A lock attempt or init may be writing this one right now.
    assert!(
        fresh_beside_head.exists(),
        "a fresh temporary file beside HEAD"
    );
    assert_eq!(statuses(&store, &keys), vec![(1, "committed"), (2, "head")]);
}
