//! The fetcher `plumb build`, `check` and `graph` give the Flux build: plumb-source's cache
//! (`--cache-dir`, else `PLUMB_CACHE_DIR` or the user's cache directory), online unless
//! `--offline`.

use clap::Args;
use plumb_flux::fetch::{Fetched, Fetcher, Unfetched};
use plumb_flux::model::Source;
use plumb_source::{BucketCredentials, BucketError, BucketSource, Cache, GitSource, Mode};
use std::path::PathBuf;

#[derive(Args, Debug, Clone, Default)]
pub struct FetchArgs {
    /// Fetch nothing: sources in other repositories come from the cache only.
    #[arg(long)]
    pub offline: bool,
    /// Where fetched sources are cached (default: `PLUMB_CACHE_DIR`, else the user's cache
    /// directory, `~/.cache/plumb`).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

impl FetchArgs {
    /// The fetcher, or `None` when no cache directory can be found (then sources in other
    /// repositories are reported as not fetched).
    pub fn fetcher(&self) -> Option<SourceFetcher> {
        let cache = match &self.cache_dir {
            Some(dir) => Cache::new(dir),
            None => Cache::from_env()?,
        };
        let mode = if self.offline {
            Mode::Offline
        } else {
            Mode::Online
        };
        Some(SourceFetcher { cache, mode })
    }
}

/// Fetches GitRepositories through plumb-source; other kinds are not fetched yet.
#[derive(Debug)]
pub struct SourceFetcher {
    cache: Cache,
    mode: Mode,
}

impl Fetcher for SourceFetcher {
    fn fetch(&self, source: &Source) -> Result<Fetched, Unfetched> {
        let kind = source.id.kind.as_str();
        if kind == "Bucket" {
            return self.fetch_bucket(source);
        }
        let Some(url) = source.url.as_deref() else {
            return Err(Unfetched::Unsupported(format!("{kind} has no spec.url")));
        };
        if kind != "GitRepository" {
            return Err(Unfetched::Unsupported(format!(
                "fetching a {kind} is not supported yet"
            )));
        }
        if url.starts_with("ssh://") || url.starts_with("git@") {
            return Err(Unfetched::Unsupported(
                "fetching over ssh is not supported yet".into(),
            ));
        }
        let git = GitSource::from_spec(url, &source.spec);
        self.cache
            .fetch_git(&git, self.mode)
            .map(|a| Fetched {
                dir: a.dir,
                revision: a.revision,
            })
            .map_err(|e| Unfetched::Failed(e.to_string()))
    }
}

impl SourceFetcher {
    /// A Bucket, signed with `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY` when both are set
    /// (the repository's `spec.secretRef` Secret is not read), anonymous otherwise.
    fn fetch_bucket(&self, source: &Source) -> Result<Fetched, Unfetched> {
        let bucket = BucketSource::from_spec(&source.spec);
        let credentials = BucketCredentials::from_env();
        self.cache
            .fetch_bucket(&bucket, credentials.as_ref(), self.mode)
            .map(|a| Fetched {
                dir: a.dir,
                revision: a.revision,
            })
            .map_err(|e| {
                let mut message = e.to_string();
                let unsigned = credentials.is_none() && source.spec["secretRef"].is_object();
                if unsigned && matches!(e, BucketError::AccessDenied { .. }) {
                    message.push_str(
                        " (plumb does not read spec.secretRef: set AWS_ACCESS_KEY_ID and \
                         AWS_SECRET_ACCESS_KEY to sign the requests)",
                    );
                }
                Unfetched::Failed(message)
            })
    }
}
