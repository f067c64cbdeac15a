//! `plumb state` end to end through the built binary: 16 concurrent puts on a directory store
//! and on S3 (moto), puts killed after each step, refusals of wrong keys and tampering.
//! The S3 tests need `PLUMB_MOTO_SERVER`; run through scripts/test.

#[path = "../../plumb-state/tests/support/moto.rs"]
mod moto;
#[path = "support/state_env.rs"]
mod state_env;

use moto::Moto;
use state_env::Env;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const WRITERS: usize = 16;

impl Env {
    fn file(&self, name: &str, content: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, content).expect("write input");
        path
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn s3_store(moto: &Moto, bucket: &str) -> String {
    moto.create_bucket(bucket);
    format!(
        "s3://{bucket}/platform?endpoint={}&region=us-east-1",
        moto.endpoint()
    )
}

/// Runs 16 `plumb state put` processes at once; each must either win its own serial or fail
/// with "locked"; the winners' serials must be contiguous and each must decrypt to what its
/// writer wrote.
fn concurrent_puts(env: &Env) {
    let init = env.run(&["init", "--stack", "apps"]);
    assert!(init.status.success(), "{}", stderr(&init));
    let inputs: Vec<(String, PathBuf)> = (0..WRITERS)
        .map(|i| {
            let content = format!("kubeconfig of writer {i}\n");
            let path = env.file(&format!("input-{i}"), &content);
            (content, path)
        })
        .collect();
    let children: Vec<_> = inputs
        .iter()
        .map(|(_, path)| {
            env.command(&["put", "--stack", "apps", &path.display().to_string()])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn plumb")
        })
        .collect();
    let mut winners = Vec::new();
    let mut locked = 0;
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().expect("wait");
        if out.status.success() {
            let serial: u64 = stdout(&out).trim().parse().expect("serial on stdout");
            winners.push((serial, i));
        } else {
            assert_eq!(out.status.code(), Some(2));
            assert!(
                stderr(&out).contains("locked"),
                "writer {i}: {}",
                stderr(&out)
            );
            locked += 1;
        }
    }
    winners.sort();
    println!(
        "{} puts won, {locked} refused with \"locked\"",
        winners.len()
    );
    assert!(!winners.is_empty());
    for (n, (serial, writer)) in winners.iter().enumerate() {
        assert_eq!(*serial, n as u64 + 1, "serials contiguous: {winners:?}");
        let got = env.run(&["get", "--stack", "apps", "--serial", &serial.to_string()]);
        assert!(got.status.success(), "{}", stderr(&got));
        assert_eq!(stdout(&got), inputs[*writer].0);
    }
    let head = env.run(&["get", "--stack", "apps"]);
    let last = winners.last().map(|w| w.1).unwrap_or(0);
    assert_eq!(stdout(&head), inputs[last].0);
    let history = env.run(&["history", "--stack", "apps", "-o", "json"]);
    assert!(history.status.success(), "{}", stderr(&history));
    assert_eq!(
        stdout(&history).matches("\"serial\"").count(),
        winners.len()
    );
    assert_no_temp_files(env);
}

fn assert_no_temp_files(env: &Env) {
    let left: Vec<_> = std::fs::read_dir(env.dir.path().join("tmp"))
        .expect("tmp")
        .collect();
    assert!(left.is_empty(), "plumb left temporary files: {left:?}");
}

/// No stored byte sequence contains the plaintext (directory stores only: files to scan).
fn assert_no_plaintext(root: &Path, secret: &str) {
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("read");
                let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
                assert!(!found, "plaintext in {}", path.display());
            }
        }
    }
}

#[test]
fn sixteen_concurrent_puts_on_a_directory_store() {
    let env = Env::new(None);
    concurrent_puts(&env);
    assert_no_plaintext(&env.dir.path().join("store"), "kubeconfig of writer");
}

#[test]
fn sixteen_concurrent_puts_on_s3() {
    let moto = Moto::start();
    let env = Env::new(Some(s3_store(&moto, "concurrent")));
    concurrent_puts(&env);
}

/// A put aborted right after each step leaves the stack readable at the previous or the new
/// version; the lock is breakable with force-unlock, and puts carry on.
fn killed_puts(env: &Env) {
    for (n, step) in ["lock-taken", "version-written", "head-moved"]
        .into_iter()
        .enumerate()
    {
        let stack = format!("crash-{n}");
        let before = env.file("before", "before\n");
        let after = env.file("after", "after\n");
        let put = |file: &Path, fault: Option<&str>| {
            let mut cmd = env.command(&["put", "--stack", &stack, &file.display().to_string()]);
            if let Some(fault) = fault {
                cmd.env("PLUMB_STATE_FAULT", fault);
            }
            cmd.output().expect("run plumb")
        };
        assert!(put(&before, None).status.success());
        let killed = put(&after, Some(step));
        assert!(!killed.status.success(), "{step}: the put was not killed");
        let get = env.run(&["get", "--stack", &stack]);
        assert!(get.status.success(), "{step}: {}", stderr(&get));
        let seen = stdout(&get);
        assert!(seen == "before\n" || seen == "after\n", "{step}: {seen:?}");
        let blocked = put(&before, None);
        assert!(
            stderr(&blocked).contains("locked"),
            "{step}: {}",
            stderr(&blocked)
        );
        let id = stderr(&blocked)
            .split("lock id ")
            .nth(1)
            .and_then(|rest| rest.split(')').next())
            .expect("lock id in the message")
            .to_string();
        let unlocked = env.run(&["force-unlock", "--stack", &stack, "--lock-id", &id]);
        assert!(unlocked.status.success(), "{step}: {}", stderr(&unlocked));
        let get = env.run(&["get", "--stack", &stack]);
        let now = stdout(&get);
        assert_eq!(now == "after\n", step != "lock-taken", "{step}: {now:?}");
        let next = put(&env.file("next", "next\n"), None);
        assert!(next.status.success(), "{step}: {}", stderr(&next));
        let expected = if now == "after\n" { "3" } else { "2" };
        assert_eq!(
            stdout(&next).trim(),
            expected,
            "{step}: serials stay contiguous"
        );
    }
    assert_no_temp_files(env);
}

#[test]
fn killed_puts_recover_on_a_directory_store() {
    killed_puts(&Env::new(None));
}

#[test]
fn killed_puts_recover_on_s3() {
    let moto = Moto::start();
    killed_puts(&Env::new(Some(s3_store(&moto, "crashes"))));
}

#[test]
fn wrong_key_and_tampering_are_refused_with_clear_errors() {
    let env = Env::new(None);
    let input = env.file("in", "secret\n");
    for content in ["one", "two"] {
        let file = env.file(content, content);
        let out = env.run(&["put", "--stack", "db", &file.display().to_string()]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    drop(input);

    let other = Env::new(None);
    let wrong = env
        .command(&["get", "--stack", "db"])
        .env("PLUMB_STATE_IDENTITY", &other.identity)
        .output()
        .expect("run");
    assert_eq!(wrong.status.code(), Some(2));
    assert!(stderr(&wrong).contains("wrong key"), "{}", stderr(&wrong));

    let versions = env.dir.path().join("store/db/versions");
    let v1 = versions.join(format!("{:020}", 1));
    let v2 = versions.join(format!("{:020}", 2));
    let original2 = std::fs::read(&v2).expect("v2");

    // A version copied over another.
    std::fs::copy(&v1, &v2).expect("copy");
    let copied = env.run(&["get", "--stack", "db", "--serial", "2"]);
    assert_eq!(copied.status.code(), Some(2));
    assert!(
        stderr(&copied).contains("copied or replayed"),
        "{}",
        stderr(&copied)
    );
    let head = env.run(&["get", "--stack", "db"]);
    assert!(stderr(&head).contains("replaced"), "{}", stderr(&head));

    // A flipped byte.
    let mut flipped = original2.clone();
    let at = flipped.len() - 3;
    flipped[at] ^= 0x01;
    std::fs::write(&v2, &flipped).expect("flip");
    let tampered = env.run(&["get", "--stack", "db", "--serial", "2"]);
    assert_eq!(tampered.status.code(), Some(2));
    assert!(
        stderr(&tampered).contains("modified or is corrupt"),
        "{}",
        stderr(&tampered)
    );
    std::fs::write(&v2, &original2).expect("restore");

    // An old HEAD replayed.
    let head_path = env.dir.path().join("store/db/HEAD");
    let head_now = std::fs::read(&head_path).expect("head");
    let old_head = String::from_utf8_lossy(&head_now)
        .replace("\"serial\":2", "\"serial\":1")
        .into_bytes();
    let v1_sha = {
        let history = env.run(&["history", "--stack", "db", "-o", "json"]);
        let text = stdout(&history);
        text.split("\"sha256\": \"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .expect("sha")
            .to_string()
    };
    let current_sha = String::from_utf8_lossy(&head_now)
        .split("\"sha256\":\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("head sha")
        .to_string();
    let old_head = String::from_utf8_lossy(&old_head)
        .replace(&current_sha, &v1_sha)
        .into_bytes();
    std::fs::write(&head_path, old_head).expect("replay");
    let replayed = env.run(&["get", "--stack", "db"]);
    assert_eq!(replayed.status.code(), Some(2));
    assert!(
        stderr(&replayed).contains("rolled back"),
        "{}",
        stderr(&replayed)
    );
}

#[test]
fn probe_passes_on_a_directory_store_and_on_moto() {
    let env = Env::new(None);
    let out = env.run(&["probe", "-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("\"passed\": true"));

    let moto = Moto::start();
    let env = Env::new(Some(s3_store(&moto, "probe")));
    let out = env.run(&["probe"]);
    println!("{}", stdout(&out));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stdout(&out).contains("safe: all 11 properties honoured"));
}

#[test]
fn put_without_a_key_or_with_a_bad_store_is_a_usage_error() {
    let env = Env::new(None);
    let out = env
        .command(&["put", "--stack", "x"])
        .env_remove("PLUMB_STATE_IDENTITY")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no key"), "{}", stderr(&out));
    let out = Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(["state", "probe", "--store", "gs://nope"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown scheme"), "{}", stderr(&out));
    let out = env.run(&["init", "--stack", "../escape"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("invalid stack name"),
        "{}",
        stderr(&out)
    );
}

/// Faults made by editing a directory store's files, and the commands that recover from each,
/// through the binary alone.
mod faults {
    use super::{stderr, stdout, Env};
    use std::path::PathBuf;

    /// Runs plumb and checks its exit code; returns (stdout, stderr).
    fn run(env: &Env, args: &[&str], code: i32) -> (String, String) {
        let assert = assert_cmd::Command::from_std(env.command(args)).assert();
        let out = assert.get_output().clone();
        assert_eq!(
            out.status.code(),
            Some(code),
            "plumb state {args:?}:\n{}{}",
            stdout(&out),
            stderr(&out)
        );
        (stdout(&out), stderr(&out))
    }

    fn put(env: &Env, stack: &str, content: &str) -> String {
        let file = env.file("input", content);
        let (out, _) = run(
            env,
            &["put", "--stack", stack, &file.display().to_string()],
            0,
        );
        out.trim().to_string()
    }

    fn get(env: &Env, stack: &str) -> String {
        run(env, &["get", "--stack", stack], 0).0
    }

    fn stack_dir(env: &Env, stack: &str) -> PathBuf {
        env.dir.path().join("store").join(stack)
    }

    fn version(env: &Env, stack: &str, serial: u64) -> PathBuf {
        stack_dir(env, stack).join(format!("versions/{serial:020}"))
    }

    fn flip_byte(path: &PathBuf) {
        let mut bytes = std::fs::read(path).expect("read");
        let at = bytes.len() - 3;
        bytes[at] ^= 0x01;
        std::fs::write(path, bytes).expect("write");
    }

    fn three_versions(env: &Env, stack: &str) {
        for (n, content) in ["one\n", "two\n", "three\n"].into_iter().enumerate() {
            assert_eq!(put(env, stack, content), (n + 1).to_string());
        }
    }

    #[test]
    fn a_deleted_head_refuses_init_and_repair_rebuilds_it_after_showing_the_plan() {
        let env = Env::new(None);
        three_versions(&env, "db");
        let head = stack_dir(&env, "db").join("HEAD");
        std::fs::remove_file(&head).expect("delete HEAD");
        let (_, err) = run(&env, &["init", "--stack", "db"], 2);
        assert!(err.contains("versions up to 3 exist"), "{err}");
        assert!(err.contains("plumb state repair --stack db"), "{err}");
        for args in [&["get", "--stack", "db"][..], &["history", "--stack", "db"]] {
            let (_, err) = run(&env, args, 2);
            assert!(err.contains("plumb state repair"), "{args:?}: {err}");
        }
        let (plan, err) = run(&env, &["repair", "--stack", "db"], 1);
        assert!(plan.contains("HEAD: missing"), "{plan}");
        assert!(plan.contains("create HEAD naming version 3"), "{plan}");
        assert!(err.contains("--yes"), "{err}");
        assert!(!head.exists(), "repair without --yes changed the store");
        let (done, _) = run(&env, &["repair", "--stack", "db", "--yes"], 0);
        assert!(done.contains("created HEAD naming version 3"), "{done}");
        assert_eq!(get(&env, "db"), "three\n");
        let (again, _) = run(&env, &["repair", "--stack", "db"], 0);
        assert!(again.contains("nothing to repair"), "{again}");
        assert_eq!(put(&env, "db", "four\n"), "4");
    }

    #[test]
    fn history_reports_a_flipped_byte_and_a_missing_version_and_goes_on() {
        let env = Env::new(None);
        three_versions(&env, "db");
        flip_byte(&version(&env, "db", 1));
        let (text, err) = run(&env, &["history", "--stack", "db"], 1);
        let statuses: Vec<&str> = text
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().last())
            .collect();
        assert_eq!(statuses, ["damaged", "committed", "head"], "{text}");
        assert!(err.contains("stack db version 1 is damaged"), "{err}");
        assert!(err.contains("modified or is corrupt"), "{err}");
        assert_eq!(get(&env, "db"), "three\n");

        std::fs::remove_file(version(&env, "db", 2)).expect("delete version 2");
        let (json, err) = run(&env, &["history", "--stack", "db", "-o", "json"], 1);
        assert!(json.contains("\"status\": \"missing\""), "{json}");
        assert!(json.contains("\"status\": \"damaged\""), "{json}");
        assert!(err.contains("stack db version 2 is missing"), "{err}");
        assert!(err.contains("db/versions/00000000000000000002"), "{err}");
        assert_eq!(get(&env, "db"), "three\n");
        assert_eq!(put(&env, "db", "four\n"), "4");
    }

    #[test]
    fn a_damaged_head_version_is_moved_aside_by_repair() {
        let env = Env::new(None);
        three_versions(&env, "db");
        let v3 = version(&env, "db", 3);
        flip_byte(&v3);
        let damaged = std::fs::read(&v3).expect("v3");
        let (_, err) = run(&env, &["get", "--stack", "db"], 2);
        assert!(err.contains("version 3"), "{err}");
        let (plan, _) = run(&env, &["repair", "--stack", "db"], 1);
        assert!(plan.contains("version 3: damaged"), "{plan}");
        assert!(plan.contains("move damaged version 3 aside"), "{plan}");
        assert!(plan.contains("rewrite HEAD naming version 2"), "{plan}");
        run(&env, &["repair", "--stack", "db", "--yes"], 0);
        assert_eq!(get(&env, "db"), "two\n");
        let aside: Vec<_> = std::fs::read_dir(stack_dir(&env, "db").join("damaged"))
            .expect("damaged/")
            .flatten()
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .collect();
        assert_eq!(aside.len(), 1);
        assert_eq!(std::fs::read(aside[0].path()).expect("read"), damaged);
        assert_eq!(put(&env, "db", "three again\n"), "3");
        assert_eq!(get(&env, "db"), "three again\n");
    }

    /// What a put that failed before this fix left: a version above HEAD and no lock.
    #[test]
    fn a_version_above_head_without_a_lock_points_at_repair_which_completes_it() {
        let env = Env::new(None);
        put(&env, "db", "one\n");
        let head = stack_dir(&env, "db").join("HEAD");
        let old_head = std::fs::read(&head).expect("HEAD");
        put(&env, "db", "two\n");
        std::fs::write(&head, old_head).expect("roll back");
        let (_, err) = run(&env, &["get", "--stack", "db"], 2);
        assert!(err.contains("rolled back"), "{err}");
        assert!(err.contains("plumb state repair --stack db"), "{err}");
        let (_, err) = run(
            &env,
            &["force-unlock", "--stack", "db", "--lock-id", "x"],
            2,
        );
        assert!(err.contains("plumb state repair"), "{err}");
        let (plan, _) = run(&env, &["repair", "--stack", "db"], 1);
        assert!(plan.contains("rewrite HEAD naming version 2"), "{plan}");
        run(&env, &["repair", "--stack", "db", "--yes"], 0);
        assert_eq!(get(&env, "db"), "two\n");
        assert_eq!(put(&env, "db", "three\n"), "3");
    }

    #[test]
    fn a_garbage_lock_is_cleared_by_force_unlock() {
        let env = Env::new(None);
        put(&env, "db", "one\n");
        std::fs::write(stack_dir(&env, "db").join("lock"), "garbage").expect("lock");
        let file = env.file("two", "two\n");
        let (_, err) = run(
            &env,
            &["put", "--stack", "db", &file.display().to_string()],
            2,
        );
        assert!(err.contains("not a plumb lock"), "{err}");
        assert!(err.contains("db/lock"), "{err}");
        let id = err
            .split("--lock-id ")
            .nth(1)
            .and_then(|rest| rest.split('`').next())
            .expect("an id to give force-unlock")
            .to_string();
        assert_eq!(get(&env, "db"), "one\n");
        let (_, err) = run(
            &env,
            &["force-unlock", "--stack", "db", "--lock-id", &id],
            0,
        );
        assert!(err.contains("broke the lock"), "{err}");
        assert_eq!(put(&env, "db", "two\n"), "2");
    }

    #[test]
    fn temporary_files_of_a_killed_put_are_removed_by_the_next_one() {
        let env = Env::new(None);
        put(&env, "db", "one\n");
        let left = stack_dir(&env, "db").join("versions/.tmp-4242-0011223344556677");
        std::fs::write(&left, "half a version").expect("plant");
        assert_eq!(put(&env, "db", "two\n"), "2");
        assert!(!left.exists(), "the next put left {}", left.display());
        let (text, _) = run(&env, &["history", "--stack", "db"], 0);
        assert_eq!(text.lines().count(), 3, "{text}");
    }

    #[test]
    fn a_put_with_a_key_that_cannot_read_the_stack_needs_rekey() {
        let env = Env::new(None);
        put(&env, "db", "one\n");
        let other = Env::new(None);
        let file = env.file("mine", "mine\n");
        let stranger = |extra: &[&str]| {
            let mut args = vec!["put", "--stack", "db"];
            args.extend_from_slice(extra);
            let path = file.display().to_string();
            let mut cmd = env.command(&[args.as_slice(), &[path.as_str()]].concat());
            cmd.env("PLUMB_STATE_IDENTITY", &other.identity);
            assert_cmd::Command::from_std(cmd)
                .assert()
                .get_output()
                .clone()
        };
        let refused = stranger(&[]);
        assert_eq!(refused.status.code(), Some(2));
        assert!(stderr(&refused).contains("--rekey"), "{}", stderr(&refused));
        assert_eq!(get(&env, "db"), "one\n");
        let rekeyed = stranger(&["--rekey"]);
        assert!(rekeyed.status.success(), "{}", stderr(&rekeyed));
        let (_, err) = run(&env, &["get", "--stack", "db"], 2);
        assert!(err.contains("wrong key"), "{err}");
    }
}
