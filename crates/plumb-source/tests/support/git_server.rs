//! A real git server for tests: repositories made with the git binary, served by `git daemon`
//! on a free loopback port. Shared by plumb-source's tests and the CLI's (`#[path]`).

#![allow(dead_code)]

use std::fs;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A working repository under the daemon's base path, driven with the git binary.
pub struct Repo {
    pub dir: PathBuf,
    home: PathBuf,
}

impl Repo {
    pub fn init(base: &Path, name: &str, branch: &str) -> Repo {
        let dir = base.join(name);
        let home = base.join(".home");
        fs::create_dir_all(&home).unwrap();
        let repo = Repo { dir, home };
        fs::create_dir_all(&repo.dir).unwrap();
        repo.git(&["init", "-q", "-b", branch]);
        repo
    }

    pub fn git(&self, args: &[&str]) -> String {
        let output = Command::new("git")
            .args(args)
            .current_dir(&self.dir)
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "plumb")
            .env("GIT_AUTHOR_EMAIL", "plumb@example.invalid")
            .env("GIT_COMMITTER_NAME", "plumb")
            .env("GIT_COMMITTER_EMAIL", "plumb@example.invalid")
            .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z")
            .stdin(Stdio::null())
            .output()
            .expect("git runs");
        assert!(
            output.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    }

    pub fn write(&self, path: &str, content: &str) {
        let path = self.dir.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    /// Commits everything in the work tree and returns the commit's SHA-1.
    pub fn commit(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }
}

/// `git daemon` serving `base` on a free loopback port, killed on drop.
///
/// The daemon binary is started directly: `git daemon` runs `git-daemon` as a child, so killing
/// the `git` wrapper would leave the daemon serving.
pub struct Daemon {
    child: Option<Child>,
    pub port: u16,
}

impl Daemon {
    pub fn start(base: &Path) -> Daemon {
        // The free port is free when asked, not when the daemon binds it: a test running
        // beside this one can take it first, and the daemon then exits (while the port answers,
        // for the other test). A daemon that is not running once its port answers is started
        // again on another port.
        for _ in 0..5 {
            if let Some(daemon) = Daemon::try_start(base) {
                return daemon;
            }
        }
        panic!("git daemon did not start on 5 ports in turn");
    }

    fn try_start(base: &Path) -> Option<Daemon> {
        let port = free_port();
        let exec_path = Command::new("git").arg("--exec-path").output().unwrap();
        let exec_path = String::from_utf8(exec_path.stdout).unwrap();
        let child = Command::new(Path::new(exec_path.trim()).join("git-daemon"))
            .arg("--listen=127.0.0.1")
            .arg(format!("--port={port}"))
            .arg("--export-all")
            .arg(format!("--base-path={}", base.display()))
            .arg("--reuseaddr")
            .arg(base)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("git daemon starts");
        let mut daemon = Daemon {
            child: Some(child),
            port,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if daemon.exited() {
                return None;
            }
            assert!(Instant::now() < deadline, "git daemon did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Listening: it, or another process on the same port, in which case it exits on
        // failing to bind.
        std::thread::sleep(Duration::from_millis(50));
        (!daemon.exited()).then_some(daemon)
    }

    fn exited(&mut self) -> bool {
        self.child
            .as_mut()
            .is_none_or(|c| c.try_wait().ok().flatten().is_some())
    }

    pub fn url(&self, name: &str) -> String {
        format!("git://127.0.0.1:{}/{name}", self.port)
    }

    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            assert!(Instant::now() < deadline, "git daemon still listening");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
