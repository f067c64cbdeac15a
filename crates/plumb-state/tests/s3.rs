//! The state store and the probe against a real S3 server (moto on a loopback port), and against
//! a dishonest proxy in front of it. Needs `PLUMB_MOTO_SERVER`; run through scripts/test.

mod support;

use plumb_state::backend::{Backend, WriteCondition};
use plumb_state::probe::{probe, ProbeOptions};
use plumb_state::{Keys, PutStep, StackName, StateError, StateStore};
use std::panic::{catch_unwind, AssertUnwindSafe};
use support::moto::Moto;
use support::proxy::{Mode, Proxy};

fn options() -> ProbeOptions {
    ProbeOptions {
        writers: 16,
        rounds: 3,
    }
}

fn summary(report: &plumb_state::probe::ProbeReport) -> String {
    report
        .checks
        .iter()
        .map(|c| {
            format!(
                "{} {}: {}",
                if c.ok { "ok  " } else { "FAIL" },
                c.name,
                c.detail
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_probe_passes_against_moto() {
    let moto = Moto::start();
    moto.create_bucket("probe");
    let backend = support::s3_backend(&moto.endpoint(), "probe", "some/prefix");
    let report = probe(&backend, &options());
    println!("{}", summary(&report));
    assert!(report.passed, "{}", summary(&report));
    assert_eq!(report.cleanup_error, None);
    assert_eq!(backend.list("").expect("list"), Vec::<String>::new());
}

#[test]
fn the_probe_fails_when_the_server_drops_conditional_headers() {
    let moto = Moto::start();
    moto.create_bucket("probe");
    let proxy = Proxy::start(moto.port, Mode::DropConditions);
    let backend = support::s3_backend(&proxy.endpoint(), "probe", "");
    let report = probe(&backend, &options());
    println!("{}", summary(&report));
    assert!(!report.passed);
    assert_eq!(
        report.failed(),
        vec![
            "create-if-absent",
            "update-if-match/wrong-etag",
            "update-if-match/stale-etag",
            "update-if-match/absent-key",
            "conditional-delete",
            "race/create-if-absent",
            "race/update-if-match",
        ],
        "{}",
        summary(&report)
    );
}

#[test]
fn the_probe_fails_when_the_server_checks_then_writes() {
    let moto = Moto::start();
    moto.create_bucket("probe");
    let proxy = Proxy::start(moto.port, Mode::CheckThenWrite);
    let backend = support::s3_backend(&proxy.endpoint(), "probe", "");
    let report = probe(&backend, &options());
    println!("{}", summary(&report));
    assert_eq!(
        report.failed(),
        vec!["race/create-if-absent", "race/update-if-match"],
        "{}",
        summary(&report)
    );
}

fn s3_store(moto: &Moto, bucket: &str) -> StateStore {
    moto.create_bucket(bucket);
    StateStore::new(Box::new(support::s3_backend(
        &moto.endpoint(),
        bucket,
        "platform",
    )))
}

#[test]
fn state_round_trips_and_refuses_tampering_on_s3() {
    let moto = Moto::start();
    let store = s3_store(&moto, "state");
    let stack = StackName::new("network").expect("name");
    let (keys, _) = Keys::generate();
    store.init(&stack).expect("init");
    for n in 1..=3u64 {
        let serial = store
            .put(
                &stack,
                &keys,
                format!("v{n}").as_bytes(),
                "t",
                None,
                &mut |_| {},
            )
            .expect("put");
        assert_eq!(serial, n);
    }
    assert_eq!(store.get(&stack, &keys, None).expect("get").data, b"v3");
    let history = store.history(&stack, &keys).expect("history");
    assert_eq!(history.len(), 3);

    let (other, _) = Keys::generate();
    assert!(matches!(
        store.get(&stack, &other, None),
        Err(StateError::WrongKey { .. })
    ));

    // Copy version 1 over version 3, as someone with write access to the bucket could.
    let backend = store.backend();
    let v1 = backend
        .get("network/versions/00000000000000000001")
        .expect("get")
        .expect("v1");
    backend
        .delete("network/versions/00000000000000000003")
        .expect("delete");
    backend
        .put(
            "network/versions/00000000000000000003",
            &v1.data,
            &WriteCondition::Create,
        )
        .expect("plant");
    assert!(matches!(
        store.get(&stack, &keys, Some(3)),
        Err(StateError::Misbound { .. })
    ));
    assert!(matches!(
        store.get(&stack, &keys, None),
        Err(StateError::DigestMismatch { .. })
    ));
}

#[test]
fn an_interrupted_put_on_s3_is_recoverable() {
    let moto = Moto::start();
    let store = s3_store(&moto, "faults");
    let (keys, _) = Keys::generate();
    for (n, kill_at) in [
        PutStep::LockTaken,
        PutStep::VersionWritten,
        PutStep::HeadMoved,
    ]
    .into_iter()
    .enumerate()
    {
        let stack = StackName::new(&format!("stack-{n}")).expect("name");
        store
            .put(&stack, &keys, b"before", "t", None, &mut |_| {})
            .expect("put");
        let killed = catch_unwind(AssertUnwindSafe(|| {
            store.put(&stack, &keys, b"after", "t", None, &mut |step| {
                if step == kill_at {
                    panic!("killed");
                }
            })
        }));
        assert!(killed.is_err());
        let seen = store.get(&stack, &keys, None).expect("readable").data;
        assert_eq!(
            seen == b"after",
            kill_at == PutStep::HeadMoved,
            "{kill_at:?}"
        );
        let lock = store
            .current_lock(&stack)
            .expect("read lock")
            .expect("still locked");
        store
            .force_unlock(&stack, &lock.id, &keys)
            .expect("force-unlock");
        let after = store.get(&stack, &keys, None).expect("readable").data;
        assert_eq!(
            after == b"after",
            kill_at != PutStep::LockTaken,
            "{kill_at:?}"
        );
        store
            .put(&stack, &keys, b"next", "t", None, &mut |_| {})
            .expect("put after recovery");
    }
}

/// The full-disk matrix of tests/faults.rs on S3: each of a put's writes fails (before it
/// lands, after it lands, and with every later write failing too) in front of a real S3
/// server; the stack always reads at the previous or the new version and recovers.
#[test]
fn a_put_whose_writes_fail_on_s3_is_undone_or_recoverable() {
    use support::faulty::{full_disk_case, Effect, FaultyBackend};
    let moto = Moto::start();
    moto.create_bucket("faults");
    let (keys, _) = Keys::generate();
    let mut kept_locks = 0;
    // Lock, version, HEAD, release: S3 has no temporary files, but the sweeps still count.
    for at in 1..=6 {
        for (effect, lasting) in [
            (Effect::NothingWritten, false),
            (Effect::NothingWritten, true),
            (Effect::Written, false),
            (Effect::Written, true),
        ] {
            let prefix = format!("case-{at}-{effect:?}-{lasting}");
            let inner = support::s3_backend(&moto.endpoint(), "faults", &prefix);
            let (backend, switch) = FaultyBackend::new(inner);
            let store = StateStore::new(Box::new(backend));
            let case = format!("s3: write {at} fails, {effect:?}, lasting {lasting}");
            if full_disk_case(&store, &switch, &keys, at, effect, lasting, &case) {
                kept_locks += 1;
            }
        }
    }
    assert!(kept_locks > 0);
}
