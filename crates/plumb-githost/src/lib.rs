//! plumb-githost: asks the Git host whether the repository's assumptions about it hold, for
//! `plumb verify`. Read-only: every call is a GET.
//!
//! A platform repository often assumes a protected default branch, required status checks, no
//! force pushes, an online runner for its CI and CI runs that actually ran. [`verify`] asks the
//! host (Gitea/Forgejo API v1, or GitHub REST) and says, with evidence, where the host and the
//! repository's [`workflows`] disagree.
//!
//! ```no_run
//! use plumb_githost::{verify, workflows, Host, Outcome};
//!
//! let host = Host::from_url("ssh://git@git.example.com/ops/platform.git", None).unwrap();
//! let jobs = workflows(std::path::Path::new("."), host.flavor).unwrap();
//! for check in verify(&host, &jobs, "0123456789abcdef0123456789abcdef01234567").unwrap() {
//!     if check.outcome != Outcome::Pass {
//!         println!("{}: {}\n  {}", check.id, check.title, check.evidence.join("\n  "));
//!     }
//! }
//! ```

mod client;
pub mod error;
mod glob;
pub mod host;
pub mod verify;
pub mod workflow;

pub use error::{HostError, WorkflowError};
pub use host::{Flavor, Host};
pub use verify::{verify, Check, Outcome};
pub use workflow::{parse_workflow, workflows, Job, Workflow};
