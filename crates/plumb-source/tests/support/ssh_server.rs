//! OpenSSH's real `sshd` on a free loopback port, run with its own host key, configuration and
//! authorized key (the test's own user logs in; git-upload-pack runs as it), killed on drop.
//! `scripts/ensure-sshd` installs the server.

#![allow(dead_code)]

use std::fs;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Sshd {
    pub port: u16,
    child: Child,
    /// The client's private key, which the server authorizes.
    pub identity: String,
    /// A `known_hosts` line for the server's host key.
    pub known_hosts: String,
    pub user: String,
}

/// Whether the server can be run here.
pub fn available() -> bool {
    Path::new("/usr/sbin/sshd").exists()
        && Command::new("ssh")
            .arg("-V")
            .stderr(Stdio::null())
            .status()
            .is_ok()
}

fn keygen(path: &Path) {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .expect("ssh-keygen");
    assert!(status.success());
}

impl Sshd {
    pub fn start(dir: &Path, port: u16) -> Sshd {
        fs::create_dir_all(dir).unwrap();
        let host = dir.join("host_ed25519");
        let client = dir.join("client_ed25519");
        keygen(&host);
        keygen(&client);
        fs::copy(client.with_extension("pub"), dir.join("authorized_keys")).unwrap();
        // sshd started by root wants its privilege separation directory.
        let _ = fs::create_dir_all("/run/sshd");
        let config = dir.join("sshd_config");
        fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {host}\nAuthorizedKeysFile {keys}\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
                 StrictModes no\nPermitRootLogin prohibit-password\nPidFile {pid}\n\
                 LogLevel ERROR\n",
                host = host.display(),
                keys = dir.join("authorized_keys").display(),
                pid = dir.join("sshd.pid").display(),
            ),
        )
        .unwrap();
        let child = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start sshd");
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "sshd did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let host_pub = fs::read_to_string(host.with_extension("pub")).unwrap();
        let mut fields = host_pub.split_whitespace();
        let (kind, key) = (fields.next().unwrap(), fields.next().unwrap());
        let user = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_string();
        Sshd {
            port,
            child,
            identity: fs::read_to_string(&client).unwrap(),
            known_hosts: format!("[127.0.0.1]:{port} {kind} {key}\n"),
            user,
        }
    }

    /// An ssh URL of the repository at absolute path `repo`.
    pub fn url(&self, repo: &Path) -> String {
        format!(
            "ssh://{}@127.0.0.1:{}{}",
            self.user,
            self.port,
            repo.display()
        )
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
