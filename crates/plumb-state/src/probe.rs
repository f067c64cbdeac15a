//! The backend probe: proves, on a scratch prefix of a real store, that it honours the
//! conditional operations the state store's safety rests on.
//!
//! Some "S3-compatible" servers accept `If-None-Match`/`If-Match` and ignore them, or check them
//! and then write unconditionally, which only a race reveals. The probe therefore counts only
//! an exact refusal as honoured, re-reads after every refused write to confirm that nothing
//! changed, races many barrier-synchronised writers over several rounds, and fails closed: any
//! unexpected answer fails the property it was testing.

use crate::backend::{hex_id, Backend, BackendError, ETag, WriteCondition};
use crate::crypto::{open, seal, Keys, VersionHeader};
use crate::error::StateError;
use serde::Serialize;
use std::sync::Barrier;

/// How hard to race.
#[derive(Clone, Debug)]
pub struct ProbeOptions {
    /// Concurrent writers per round (at least 2).
    pub writers: usize,
    /// Rounds per race.
    pub rounds: usize,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        Self {
            writers: 16,
            rounds: 4,
        }
    }
}

/// One property and whether the store honoured it.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub ok: bool,
    pub detail: String,
}

/// Every property checked, in order.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeReport {
    pub schema: &'static str,
    pub store: String,
    pub passed: bool,
    pub checks: Vec<Check>,
    /// Set when the probe's scratch objects could not all be removed.
    pub cleanup_error: Option<String>,
}

impl ProbeReport {
    /// The report as JSON (`schema: plumb.state.probe/v1`), with a final newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Names of the properties that failed.
    pub fn failed(&self) -> Vec<&'static str> {
        self.checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| c.name)
            .collect()
    }
}

/// Names of every property, in the order the probe checks them.
pub const PROPERTIES: [&str; 11] = [
    "create-if-absent",
    "update-if-match",
    "update-if-match/wrong-etag",
    "update-if-match/stale-etag",
    "update-if-match/absent-key",
    "conditional-delete",
    "race/create-if-absent",
    "race/update-if-match",
    "versions-readable",
    "encryption/round-trip",
    "encryption/tamper-detection",
];

type Outcome = Result<String, String>;

/// Whether `backend` can be probed at all: a listing of the probe's scratch prefix answers.
/// An unreachable server, refused credentials or a bucket that does not exist is an `Err`
/// worded for the user: then the probe would fail every property without saying anything
/// about the store's safety.
pub fn reach(backend: &dyn Backend) -> Result<(), String> {
    let no_bucket = || {
        format!(
            "{}: the bucket does not exist (create it, or fix the bucket name)",
            backend.describe()
        )
    };
    match backend.list(".plumb-probe/") {
        Ok(_) => Ok(()),
        Err(BackendError::NotFound { .. }) => Err(no_bucket()),
        Err(e) => {
            let text = e.to_string();
            if text.contains("<Code>NoSuchBucket</Code>") {
                return Err(no_bucket());
            }
            let hint = if text.contains("169.254.169.254") {
                ": no credentials: AWS_ACCESS_KEY_ID is not set and the cloud's instance \
                 metadata gave none"
                    .to_string()
            } else {
                format!(": {text}")
            };
            Err(format!("{}{hint}", backend.describe()))
        }
    }
}

/// Runs every check against `backend` under a fresh scratch prefix, then removes it.
pub fn probe(backend: &dyn Backend, options: &ProbeOptions) -> ProbeReport {
    let writers = options.writers.max(2);
    let rounds = options.rounds.max(1);
    let root = format!(".plumb-probe/{}", hex_id());
    let p = Probe {
        backend,
        root: root.clone(),
    };
    let outcomes: [(&'static str, Outcome); 11] = [
        (PROPERTIES[0], p.create_if_absent()),
        (PROPERTIES[1], p.update_if_match()),
        (PROPERTIES[2], p.update_wrong_etag()),
        (PROPERTIES[3], p.update_stale_etag()),
        (PROPERTIES[4], p.update_absent_key()),
        (PROPERTIES[5], p.conditional_delete()),
        (PROPERTIES[6], p.race_create(writers, rounds)),
        (PROPERTIES[7], p.race_update(writers, rounds)),
        (PROPERTIES[8], p.versions_readable()),
        (PROPERTIES[9], p.encryption_round_trip()),
        (PROPERTIES[10], p.tamper_detection()),
    ];
    let checks: Vec<Check> = outcomes
        .into_iter()
        .map(|(name, outcome)| match outcome {
            Ok(detail) => Check {
                name,
                ok: true,
                detail,
            },
            Err(detail) => Check {
                name,
                ok: false,
                detail,
            },
        })
        .collect();
    let cleanup_error = p.clean_up().err();
    ProbeReport {
        schema: "plumb.state.probe/v1",
        store: backend.describe(),
        passed: checks.iter().all(|c| c.ok),
        checks,
        cleanup_error,
    }
}

struct Probe<'a> {
    backend: &'a dyn Backend,
    root: String,
}

fn describe(result: &Result<ETag, BackendError>) -> String {
    match result {
        Ok(_) => "the write was accepted".to_string(),
        Err(e) => format!("it failed with an unexpected error: {e}"),
    }
}

fn is_precondition(e: &BackendError) -> bool {
    matches!(e, BackendError::PreconditionFailed { .. })
}

impl Probe<'_> {
    fn key(&self, name: &str) -> String {
        format!("{}/{name}", self.root)
    }

    fn put(&self, key: &str, data: &[u8], condition: &WriteCondition) -> Result<ETag, String> {
        self.backend
            .put(key, data, condition)
            .map_err(|e| format!("setup write of {key} failed: {e}"))
    }

    /// Confirms that `key` still holds `expected` (or nothing) after a refused operation.
    fn unchanged(&self, key: &str, expected: Option<&[u8]>, after: &str) -> Result<(), String> {
        let found = self
            .backend
            .get(key)
            .map_err(|e| format!("re-read after {after} failed: {e}"))?;
        match (found, expected) {
            (None, None) => Ok(()),
            (Some(o), Some(want)) if o.data == want => Ok(()),
            (None, Some(_)) => Err(format!("{after}: the object disappeared")),
            (Some(_), None) => Err(format!("{after}: an object appeared")),
            (Some(_), Some(_)) => Err(format!("{after}: the object's content changed")),
        }
    }

    fn create_if_absent(&self) -> Outcome {
        let key = self.key("create");
        self.put(&key, b"first", &WriteCondition::Create)?;
        let second = self.backend.put(&key, b"second", &WriteCondition::Create);
        match &second {
            Err(BackendError::AlreadyExists { .. }) => {}
            other => {
                let changed = self
                    .unchanged(&key, Some(b"first"), "the second create")
                    .err();
                return Err(format!(
                    "a create over an existing object was not refused: {}{}",
                    describe(other),
                    changed.map(|c| format!("; {c}")).unwrap_or_default()
                ));
            }
        }
        self.unchanged(&key, Some(b"first"), "the refused create")?;
        Ok("a second create was refused and the object kept its content".to_string())
    }

    fn update_if_match(&self) -> Outcome {
        let key = self.key("update");
        let etag = self.put(&key, b"one", &WriteCondition::Create)?;
        self.backend
            .put(&key, b"two", &WriteCondition::Match(etag))
            .map_err(|e| format!("an update with the current ETag was refused: {e}"))?;
        self.unchanged(&key, Some(b"two"), "the matching update")
            .map_err(|e| format!("the update did not take: {e}"))?;
        Ok("an update with the current ETag succeeded".to_string())
    }

    /// Writes `data` with `condition`, demands an exact `PreconditionFailed` (or, where
    /// `absent_ok`, `NotFound`), and confirms `key` still holds `before`.
    fn refused_update(
        &self,
        key: &str,
        condition: WriteCondition,
        before: Option<&[u8]>,
        absent_ok: bool,
        what: &str,
    ) -> Outcome {
        let result = self.backend.put(key, b"intruder", &condition);
        let exact = match &result {
            Err(e) if is_precondition(e) => true,
            Err(BackendError::NotFound { .. }) => absent_ok,
            _ => false,
        };
        let still = self.unchanged(key, before, what);
        if !exact {
            return Err(format!(
                "{what} was not refused: {}{}",
                describe(&result),
                still.err().map(|c| format!("; {c}")).unwrap_or_default()
            ));
        }
        still?;
        Ok(format!("{what} was refused and nothing changed"))
    }

    fn update_wrong_etag(&self) -> Outcome {
        let key = self.key("wrong-etag");
        self.put(&key, b"kept", &WriteCondition::Create)?;
        let wrong = ETag(format!("\"{}\"", hex_id()));
        self.refused_update(
            &key,
            WriteCondition::Match(wrong),
            Some(b"kept"),
            false,
            "an update with a wrong ETag",
        )
    }

    fn update_stale_etag(&self) -> Outcome {
        let key = self.key("stale-etag");
        let stale = self.put(&key, b"old", &WriteCondition::Create)?;
        self.put(&key, b"new", &WriteCondition::Match(stale.clone()))?;
        self.refused_update(
            &key,
            WriteCondition::Match(stale),
            Some(b"new"),
            false,
            "an update with a stale ETag",
        )
    }

    fn update_absent_key(&self) -> Outcome {
        let donor = self.key("absent-donor");
        let etag = self.put(&donor, b"donor", &WriteCondition::Create)?;
        let key = self.key("absent");
        self.refused_update(
            &key,
            WriteCondition::Match(etag),
            None,
            true,
            "an update of an absent object",
        )
    }

    fn conditional_delete(&self) -> Outcome {
        let key = self.key("delete");
        let stale = self.put(&key, b"v1", &WriteCondition::Create)?;
        let current = self.put(&key, b"v2", &WriteCondition::Match(stale.clone()))?;
        match self.backend.delete_if_match(&key, &stale) {
            Err(BackendError::PreconditionFailed { .. }) => {}
            Ok(()) => {
                return Err("a delete with a stale ETag removed the object".to_string());
            }
            Err(e) => {
                return Err(format!(
                    "a delete with a stale ETag failed with an unexpected error: {e}"
                ))
            }
        }
        self.unchanged(&key, Some(b"v2"), "the refused delete")?;
        let absent = self.key("delete-absent");
        match self.backend.delete_if_match(&absent, &current) {
            Err(BackendError::NotFound { .. } | BackendError::PreconditionFailed { .. }) => {}
            Ok(()) => return Err("a conditional delete of an absent object succeeded".to_string()),
            Err(e) => {
                return Err(format!(
                    "a conditional delete of an absent object failed with an unexpected error: {e}"
                ))
            }
        }
        self.backend
            .delete_if_match(&key, &current)
            .map_err(|e| format!("a delete with the current ETag was refused: {e}"))?;
        self.unchanged(&key, None, "the matching delete")?;
        Ok("stale and absent deletes were refused; the matching delete removed it".to_string())
    }

    /// Races `writers` threads, released together by a barrier, each writing its own content
    /// to `key` under `condition`; returns each writer's result.
    fn race(
        &self,
        key: &str,
        round: usize,
        writers: usize,
        condition: &WriteCondition,
    ) -> Vec<Result<ETag, BackendError>> {
        let barrier = Barrier::new(writers);
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..writers)
                .map(|writer| {
                    let barrier = &barrier;
                    scope.spawn(move || {
                        let data = race_content(round, writer);
                        barrier.wait();
                        self.backend.put(key, &data, condition)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(BackendError::io(key, "writer thread panicked")))
                })
                .collect()
        })
    }

    /// Judges one round: exactly one winner, every loser refused exactly, the winner's content
    /// in place.
    fn judge_round(
        &self,
        key: &str,
        round: usize,
        results: &[Result<ETag, BackendError>],
        exact: fn(&BackendError) -> bool,
    ) -> Result<(), String> {
        let winners: Vec<usize> = (0..results.len()).filter(|&i| results[i].is_ok()).collect();
        if winners.len() != 1 {
            return Err(format!(
                "round {}: {} of {} writers succeeded, expected exactly 1",
                round + 1,
                winners.len(),
                results.len()
            ));
        }
        if let Some(Err(e)) = results.iter().find(|r| matches!(r, Err(e) if !exact(e))) {
            return Err(format!(
                "round {}: a losing writer failed with an unexpected error: {e}",
                round + 1
            ));
        }
        self.unchanged(key, Some(&race_content(round, winners[0])), "the race")
            .map_err(|e| {
                format!(
                    "round {}: the winner's content is not in place: {e}",
                    round + 1
                )
            })
    }

    fn race_create(&self, writers: usize, rounds: usize) -> Outcome {
        for round in 0..rounds {
            let key = self.key(&format!("race-create-{round}"));
            let results = self.race(&key, round, writers, &WriteCondition::Create);
            self.judge_round(&key, round, &results, |e| {
                matches!(e, BackendError::AlreadyExists { .. })
            })?;
        }
        Ok(format!(
            "{rounds} rounds of {writers} concurrent creates: exactly one winner each"
        ))
    }

    fn race_update(&self, writers: usize, rounds: usize) -> Outcome {
        for round in 0..rounds {
            let key = self.key(&format!("race-update-{round}"));
            let etag = self.put(&key, b"base", &WriteCondition::Create)?;
            let results = self.race(&key, round, writers, &WriteCondition::Match(etag));
            self.judge_round(&key, round, &results, is_precondition)?;
        }
        Ok(format!(
            "{rounds} rounds of {writers} concurrent updates on one ETag: exactly one winner each"
        ))
    }

    fn versions_readable(&self) -> Outcome {
        let prefix = self.key("versions/");
        let mut written = Vec::new();
        for serial in 1..=5u64 {
            let key = format!("{prefix}{serial:020}");
            let data = format!("version {serial} {}", hex_id()).into_bytes();
            self.put(&key, &data, &WriteCondition::Create)?;
            written.push((key, data));
        }
        let listed = self
            .backend
            .list(&prefix)
            .map_err(|e| format!("listing {prefix} failed: {e}"))?;
        let expected: Vec<&String> = written.iter().map(|(k, _)| k).collect();
        if listed.iter().collect::<Vec<_>>() != expected {
            return Err(format!(
                "listing returned {} keys, not the {} written",
                listed.len(),
                expected.len()
            ));
        }
        for (key, data) in &written {
            self.unchanged(key, Some(data), "reading a version back")?;
        }
        Ok(format!(
            "{} versions listed and read back byte for byte",
            written.len()
        ))
    }

    fn encryption_round_trip(&self) -> Outcome {
        let (keys, _) = Keys::generate();
        let marker = format!("plumb-probe-plaintext-{}", hex_id());
        let header = probe_header(1, marker.len());
        let sealed = seal(&keys, &header, marker.as_bytes()).map_err(|e| e.to_string())?;
        if contains(&sealed, marker.as_bytes()) {
            return Err("the sealed payload contains its plaintext".to_string());
        }
        let key = self.key("sealed-1");
        self.put(&key, &sealed, &WriteCondition::Create)?;
        let stored = self
            .backend
            .get(&key)
            .map_err(|e| format!("reading the sealed payload back failed: {e}"))?
            .ok_or("the sealed payload vanished")?;
        if contains(&stored.data, marker.as_bytes()) {
            return Err("the store holds the plaintext".to_string());
        }
        let (_, data) = open(&keys, "probe payload", &stored.data, "probe", 1)
            .map_err(|e| format!("the stored payload does not decrypt: {e}"))?;
        if data != marker.as_bytes() {
            return Err("the decrypted payload differs from what was written".to_string());
        }
        Ok("encrypted client-side, stored, read back and decrypted intact".to_string())
    }

    fn tamper_detection(&self) -> Outcome {
        let (keys, _) = Keys::generate();
        let data = b"probe tamper payload";
        let sealed = seal(&keys, &probe_header(1, data.len()), data).map_err(|e| e.to_string())?;
        let mut flipped = sealed.clone();
        let at = flipped.len() - 8;
        flipped[at] ^= 0x01;
        let key = self.key("sealed-tampered");
        self.put(&key, &flipped, &WriteCondition::Create)?;
        let stored = self
            .backend
            .get(&key)
            .map_err(|e| format!("reading the tampered payload back failed: {e}"))?
            .ok_or("the tampered payload vanished")?;
        match open(&keys, "probe payload", &stored.data, "probe", 1) {
            Err(StateError::Tampered { .. }) => {}
            Ok(_) => return Err("a flipped byte went undetected".to_string()),
            Err(e) => return Err(format!("a flipped byte gave an unexpected error: {e}")),
        }
        match open(&keys, "probe payload", &sealed, "probe", 2) {
            Err(StateError::Misbound { .. }) => {}
            Ok(_) => return Err("a version moved to another serial was accepted".to_string()),
            Err(e) => return Err(format!("a moved version gave an unexpected error: {e}")),
        }
        let (other, _) = Keys::generate();
        match open(&other, "probe payload", &sealed, "probe", 1) {
            Err(StateError::WrongKey { .. }) => {}
            Ok(_) => return Err("a payload decrypted with the wrong key".to_string()),
            Err(e) => return Err(format!("the wrong key gave an unexpected error: {e}")),
        }
        Ok("a flipped byte, a moved version and a wrong key were each refused".to_string())
    }

    fn clean_up(&self) -> Result<(), String> {
        let keys = self
            .backend
            .list(&format!("{}/", self.root))
            .map_err(|e| e.to_string())?;
        // Keys that were only ever refused or deleted are not listed, but a backend may keep
        // side files for them (the directory backend's compare-and-swap locks).
        let unlisted = ["absent", "delete", "delete-absent"].map(|name| self.key(name));
        let mut failures = Vec::new();
        for key in keys.into_iter().chain(unlisted) {
            if let Err(e) = self.backend.delete(&key) {
                failures.push(e.to_string());
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(failures.join("; "))
        }
    }
}

fn race_content(round: usize, writer: usize) -> Vec<u8> {
    format!("round {round} writer {writer}").into_bytes()
}

fn probe_header(serial: u64, size: usize) -> VersionHeader {
    VersionHeader {
        stack: "probe".to_string(),
        serial,
        previous_sha256: None,
        who: "plumb state probe".to_string(),
        created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        size: size as u64,
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{MemoryBackend, Object};
    use std::time::Duration;

    /// Accepts conditional writes and ignores their conditions, like a server that drops the
    /// headers.
    struct IgnoresConditions(MemoryBackend);

    /// Checks a condition, then writes unconditionally a moment later: right one at a time,
    /// wrong under concurrency.
    struct ChecksThenWrites(MemoryBackend);

    impl Backend for IgnoresConditions {
        fn describe(&self) -> String {
            "memory://ignores-conditions".to_string()
        }
        fn get(&self, key: &str) -> Result<Option<Object>, BackendError> {
            self.0.get(key)
        }
        fn put(&self, key: &str, data: &[u8], _: &WriteCondition) -> Result<ETag, BackendError> {
            self.0.delete(key)?;
            self.0.put(key, data, &WriteCondition::Create)
        }
        fn delete_if_match(&self, key: &str, _: &ETag) -> Result<(), BackendError> {
            self.0.delete(key)
        }
        fn delete(&self, key: &str) -> Result<(), BackendError> {
            self.0.delete(key)
        }
        fn list(&self, prefix: &str) -> Result<Vec<String>, BackendError> {
            self.0.list(prefix)
        }
    }

    impl Backend for ChecksThenWrites {
        fn describe(&self) -> String {
            "memory://checks-then-writes".to_string()
        }
        fn get(&self, key: &str) -> Result<Option<Object>, BackendError> {
            self.0.get(key)
        }
        fn put(
            &self,
            key: &str,
            data: &[u8],
            condition: &WriteCondition,
        ) -> Result<ETag, BackendError> {
            let current = self.0.get(key)?;
            match (condition, &current) {
                (WriteCondition::Create, Some(_)) => {
                    return Err(BackendError::AlreadyExists {
                        key: key.to_string(),
                    })
                }
                (WriteCondition::Match(want), Some(o)) if &o.etag != want => {
                    return Err(BackendError::PreconditionFailed {
                        key: key.to_string(),
                    })
                }
                (WriteCondition::Match(_), None) => {
                    return Err(BackendError::PreconditionFailed {
                        key: key.to_string(),
                    })
                }
                _ => {}
            }
            std::thread::sleep(Duration::from_millis(20));
            self.0.delete(key)?;
            self.0.put(key, data, &WriteCondition::Create)
        }
        fn delete_if_match(&self, key: &str, etag: &ETag) -> Result<(), BackendError> {
            self.0.delete_if_match(key, etag)
        }
        fn delete(&self, key: &str) -> Result<(), BackendError> {
            self.0.delete(key)
        }
        fn list(&self, prefix: &str) -> Result<Vec<String>, BackendError> {
            self.0.list(prefix)
        }
    }

    fn options() -> ProbeOptions {
        ProbeOptions {
            writers: 16,
            rounds: 3,
        }
    }

    #[test]
    fn an_honest_backend_passes_every_property_and_is_left_clean() {
        let backend = MemoryBackend::new();
        let report = probe(&backend, &options());
        assert!(report.passed, "{report:#?}");
        assert_eq!(report.checks.len(), PROPERTIES.len());
        assert_eq!(report.cleanup_error, None);
        assert_eq!(backend.list("").ok(), Some(Vec::new()));
    }

    #[test]
    fn a_backend_that_ignores_conditions_fails_every_conditional_property() {
        let report = probe(&IgnoresConditions(MemoryBackend::new()), &options());
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
            ]
        );
    }

    #[test]
    fn a_backend_that_checks_then_writes_fails_only_the_races() {
        let report = probe(&ChecksThenWrites(MemoryBackend::new()), &options());
        assert_eq!(
            report.failed(),
            vec!["race/create-if-absent", "race/update-if-match"]
        );
        let race = &report.checks[6];
        assert!(race.detail.contains("writers succeeded"), "{}", race.detail);
    }

    #[test]
    fn the_local_backend_passes_every_property() {
        let dir = tempfile::tempdir().expect("temp dir");
        let backend = crate::backend::LocalBackend::new(dir.path());
        let report = probe(&backend, &options());
        assert!(report.passed, "{report:#?}");
        assert_eq!(backend.list("").ok(), Some(Vec::new()));
    }
}
