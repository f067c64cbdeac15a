//! Talking to a git server with gix: list the remote's refs, pick the commit a [`Checkout`]
//! means, and download only when that commit is not cached yet.

use std::any::Any;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use gix::bstr::ByteSlice;
use gix::protocol::handshake::Ref;
use gix::remote::Direction;

use crate::cache::{Credentials, SshKey};
use crate::reference::Checkout;
use crate::semver_range::{self, Range};

/// Why talking to the server failed; the caller adds the URL and ref.
#[derive(Debug)]
pub(crate) enum RemoteError {
    Unreachable(String),
    RefNotFound(Option<String>),
    Git(String),
}

/// A commit chosen from the remote's advertised refs.
pub(crate) struct Resolved {
    pub(crate) commit: String,
    /// For a semver range: the tag it selected.
    pub(crate) tag: Option<String>,
}

/// A bare repository in a temporary directory with a connection prepared for one fetch.
pub(crate) struct Session {
    repo: gix::Repository,
}

impl Session {
    /// A bare repository at `dir`; with `ssh`, its key and known hosts are written beside it
    /// (owner-only) for the ssh program to use.
    pub(crate) fn init(dir: &Path, ssh: Option<&SshKey>) -> Result<Session, RemoteError> {
        let mut repo = gix::init_bare(dir).map_err(|e| RemoteError::Git(e.to_string()))?;
        let ssh_command = ssh_command(dir, ssh).map_err(|e| RemoteError::Git(e.to_string()))?;
        // A server that does not answer is given up on, as source-controller's `spec.timeout`
        // (60 s by default) does: 10 s to connect over HTTP(S), and a transfer slower than one
        // byte a second for 60 s is aborted.
        let mut config = repo.config_snapshot_mut();
        let git = |e: gix::Error| RemoteError::Git(e.to_string());
        config
            .set_value(&gix::config::tree::gitoxide::Http::CONNECT_TIMEOUT, "10000")
            .map_err(git)?;
        config
            .set_value(&gix::config::tree::Http::LOW_SPEED_LIMIT, "1")
            .map_err(git)?;
        config
            .set_value(&gix::config::tree::Http::LOW_SPEED_TIME, "60")
            .map_err(git)?;
        config
            .set_value(&gix::config::tree::Core::SSH_COMMAND, ssh_command.as_str())
            .map_err(git)?;
        config.commit().map_err(git)?;
        Ok(Session { repo })
    }

    /// The transport options gix derives from the repository's configuration for `url`, with
    /// HTTP clients built on the process's TLS configuration ([`crate::tls`]); `None` for a
    /// transport other than HTTP.
    fn transport_options(&self, url: &str) -> Result<Option<Box<dyn Any>>, RemoteError> {
        let Some(mut options) = self
            .repo
            .transport_options(url, None)
            .map_err(|e| RemoteError::Git(error_text(&e)))?
        else {
            return Ok(None);
        };
        if let Some(http) =
            options.downcast_mut::<gix_transport::client::blocking_io::http::Options>()
        {
            let reqwest_options = gix_transport::client::blocking_io::http::reqwest::Options {
                configure_client: Some(Box::new(|builder| Ok(crate::tls::configure(builder)))),
                configure_request: None,
            };
            http.backend = Some(Arc::new(Mutex::new(reqwest_options)));
        }
        Ok(Some(options))
    }

    pub(crate) fn repo(&self) -> &gix::Repository {
        &self.repo
    }

    /// Lists the remote's refs, resolves `checkout`, and calls `needed` with the result; when it
    /// answers `true`, downloads the objects of the resolved commit.
    pub(crate) fn resolve_and_fetch(
        &self,
        url: &str,
        credentials: Option<&Credentials>,
        checkout: &Checkout,
        range: Option<&Range>,
        needed: impl FnOnce(&Resolved) -> bool,
    ) -> Result<Resolved, RemoteError> {
        let remote = self
            .repo
            .remote_at(url)
            .map_err(|e| RemoteError::Unreachable(format!("invalid URL: {e}")))?
            .with_fetch_tags(gix::remote::fetch::Tags::None)
            .with_refspecs([refspec(checkout).as_str()], Direction::Fetch)
            .map_err(|e| RemoteError::Git(e.to_string()))?;
        let connection = remote
            .connect(Direction::Fetch)
            .map_err(|e| RemoteError::Unreachable(error_text(&e)))?;
        let connection = match self.transport_options(url)? {
            Some(options) => connection.with_transport_options(options),
            None => connection,
        };
        // Given credentials answer the server's challenge; without them, the git
        // configuration's credential helpers do, as `git fetch` would.
        let given = credentials.cloned();
        let connection = match given {
            Some(c) => connection.with_credentials(move |action| match action {
                gix::credentials::helper::Action::Get(ctx) => {
                    Ok(Some(gix::credentials::protocol::Outcome {
                        identity: gix::sec::identity::Account {
                            username: c.username.clone(),
                            password: c.password.clone(),
                            oauth_refresh_token: None,
                        },
                        next: ctx.into(),
                    }))
                }
                _ => Ok(None),
            }),
            None => connection,
        };
        let prepare = connection
            .prepare_fetch(gix::progress::Discard, Default::default())
            .map_err(|e| RemoteError::Unreachable(error_text(&e)))?;
        let resolved = resolve(checkout, range, &prepare.ref_map().remote_refs)?;
        if !needed(&resolved) {
            return Ok(resolved);
        }
        // As source-controller's shallow clones: only the tip is needed, except for a commit
        // pin, which may lie anywhere in the history.
        let prepare = if matches!(checkout, Checkout::Commit { .. }) {
            prepare
        } else {
            prepare.with_shallow(gix::remote::fetch::Shallow::DepthAtRemote(
                std::num::NonZeroU32::MIN,
            ))
        };
        prepare
            .receive(gix::progress::Discard, &AtomicBool::new(false))
            .map_err(|e| RemoteError::Git(error_text(&e)))?;
        let id = gix::ObjectId::from_hex(resolved.commit.as_bytes())
            .map_err(|e| RemoteError::Git(e.to_string()))?;
        let Some(object) = self
            .repo
            .try_find_object(id)
            .map_err(|e| RemoteError::Git(e.to_string()))?
        else {
            let place = match checkout {
                Checkout::Commit {
                    branch: Some(b), ..
                } => format!("not in branch {b:?}"),
                _ => "not reachable from any branch".to_owned(),
            };
            return Err(RemoteError::RefNotFound(Some(place)));
        };
        // A server that does not peel tags in its listing named the tag object.
        let commit = object
            .peel_to_commit()
            .map_err(|e| RemoteError::Git(format!("{} is not a commit: {e}", resolved.commit)))?;
        Ok(Resolved {
            commit: commit.id.to_hex().to_string(),
            ..resolved
        })
    }
}

/// The ssh program as git would run it, never prompting (a build has no one to answer): with
/// `key`, that identity alone and only the given known hosts; without, the user's own ssh
/// configuration, keys and agent.
fn ssh_command(dir: &Path, key: Option<&SshKey>) -> std::io::Result<String> {
    let mut command = String::from("ssh -o BatchMode=yes");
    let Some(key) = key else {
        return Ok(command);
    };
    let parent = dir.parent().unwrap_or(dir);
    let write_private = |name: &str, text: &str| -> std::io::Result<std::path::PathBuf> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let path = parent.join(name);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        let mut text = text.to_string();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        file.write_all(text.as_bytes())?;
        Ok(path)
    };
    let quote = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', "'\\''"));
    let identity = write_private("identity", &key.identity)?;
    command.push_str(&format!(" -o IdentitiesOnly=yes -i {}", quote(&identity)));
    if let Some(known) = &key.known_hosts {
        let known = write_private("known_hosts", known)?;
        command.push_str(&format!(
            " -o UserKnownHostsFile={} -o StrictHostKeyChecking=yes",
            quote(&known)
        ));
    }
    Ok(command)
}

/// What to download for a checkout; the remote's listing is filtered by the same refspec.
fn refspec(checkout: &Checkout) -> String {
    match checkout {
        Checkout::Branch(b) => format!("+refs/heads/{b}:refs/heads/{b}"),
        Checkout::Tag(t) => format!("+refs/tags/{t}:refs/tags/{t}"),
        Checkout::Semver(_) => "+refs/tags/*:refs/tags/*".to_owned(),
        Checkout::Name(n) => format!("+{n}:{n}"),
        // As source-controller: the one branch when given, else every branch, never tags.
        Checkout::Commit {
            branch: Some(b), ..
        } => format!("+refs/heads/{b}:refs/heads/{b}"),
        Checkout::Commit { .. } => "+refs/heads/*:refs/heads/*".to_owned(),
    }
}

fn resolve(
    checkout: &Checkout,
    range: Option<&Range>,
    refs: &[Ref],
) -> Result<Resolved, RemoteError> {
    let find = |full: &str| {
        refs.iter()
            .find_map(|r| (ref_name(r) == full).then(|| peeled(r)).flatten())
            .map(|commit| Resolved { commit, tag: None })
            .ok_or(RemoteError::RefNotFound(None))
    };
    match checkout {
        Checkout::Branch(b) => find(&format!("refs/heads/{b}")),
        Checkout::Tag(t) => find(&format!("refs/tags/{t}")),
        Checkout::Name(n) => find(n),
        Checkout::Commit { sha, branch, .. } => {
            if let Some(b) = branch {
                find(&format!("refs/heads/{b}"))?;
            }
            Ok(Resolved {
                commit: sha.clone(),
                tag: None,
            })
        }
        Checkout::Semver(text) => {
            let range = range.ok_or_else(|| RemoteError::Git(format!("unparsed range {text}")))?;
            let tags: Vec<&str> = refs
                .iter()
                .filter_map(|r| ref_name(r).strip_prefix("refs/tags/"))
                .collect();
            let tag =
                semver_range::highest_matching(range, tags.iter().copied()).ok_or_else(|| {
                    RemoteError::RefNotFound(Some("no tag satisfies the range".into()))
                })?;
            let mut resolved = find(&format!("refs/tags/{tag}"))?;
            resolved.tag = Some(tag.to_owned());
            Ok(resolved)
        }
    }
}

fn ref_name(r: &Ref) -> &str {
    let name = match r {
        Ref::Peeled { full_ref_name, .. }
        | Ref::Direct { full_ref_name, .. }
        | Ref::Symbolic { full_ref_name, .. }
        | Ref::Unborn { full_ref_name, .. } => full_ref_name,
    };
    name.to_str().unwrap_or("")
}

/// The object a ref ends at after peeling annotated tags.
fn peeled(r: &Ref) -> Option<String> {
    match r {
        Ref::Peeled { object, .. } | Ref::Direct { object, .. } | Ref::Symbolic { object, .. } => {
            Some(object.to_hex().to_string())
        }
        Ref::Unborn { .. } => None,
    }
}

/// gix's error with its causes, on one line, each message once.
fn error_text(e: &gix::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.iter_errors() {
        let text = cause.to_string();
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    if parts.is_empty() {
        e.to_string()
    } else {
        parts.join(": ")
    }
}
