//! What the `plumb state` CLI tests share: a temporary directory with an age identity and a
//! store, and the built binary run against them with none of the caller's state settings.
//! The test crate declares `mod moto` (plumb-state's test support) for the S3 credentials.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// A temporary directory with an age identity: what `plumb state` commands (and the server)
/// share.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub store: String,
    pub identity: PathBuf,
}

impl Env {
    /// A new identity, and `store` or a directory store inside the temporary directory.
    pub fn new(store: Option<String>) -> Env {
        let dir = tempfile::tempdir().expect("temp dir");
        let (_, identity_text) = plumb_state::Keys::generate();
        let identity = dir.path().join("identity.txt");
        std::fs::write(&identity, format!("{identity_text}\n")).expect("identity");
        std::fs::create_dir(dir.path().join("tmp")).expect("tmp");
        let store =
            store.unwrap_or_else(|| format!("file://{}", dir.path().join("store").display()));
        Env {
            dir,
            store,
            identity,
        }
    }

    /// `plumb state ARGS --store STORE` with this identity and the S3 test credentials.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_plumb"));
        cmd.arg("state")
            .args(args)
            .args(["--store", &self.store])
            .env("PLUMB_STATE_IDENTITY", &self.identity)
            .env_remove("PLUMB_STATE_PASSPHRASE")
            .env_remove("PLUMB_STATE_RECIPIENTS")
            .env_remove("PLUMB_STATE_FAULT")
            .env_remove("PLUMB_STATE_USERNAME")
            .env_remove("PLUMB_STATE_PASSWORD")
            // Any temporary file plumb made would land here, where the test can look.
            .env("TMPDIR", self.dir.path().join("tmp"))
            .stdin(Stdio::null());
        for (key, value) in crate::moto::AWS_ENV {
            cmd.env(key, value);
        }
        cmd
    }

    /// [`Env::command`], run to its end.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run plumb")
    }
}
