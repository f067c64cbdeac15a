//! The fetcher `plumb build`, `check` and `graph` give the Flux build: plumb-source's cache
//! (`--cache-dir`, else `PLUMB_CACHE_DIR` or the user's cache directory), online unless
//! `--offline`; URLs rewritten by the `mirrors:` of the user's configuration file, then of the
//! repository's `.plumb.yaml`.

use clap::Args;
use plumb_flux::config::UserConfig;
use plumb_flux::fetch::{Fetched, Fetcher, Unfetched};
use plumb_flux::model::Source;
use plumb_source::{Cache, GitSource, Mirror, Mirrors, Mode};
use std::path::{Path, PathBuf};

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
    /// The fetcher for the repository at `repo`, or `None` when no cache directory can be
    /// found (then sources in other repositories are reported as not fetched). `Err` is an
    /// unusable user configuration file, its message naming the file and line.
    pub fn fetcher(&self, repo: &Path) -> Result<Option<SourceFetcher>, String> {
        let rules = |list: Vec<plumb_flux::config::MirrorRule>| {
            list.into_iter()
                .map(|r| Mirror {
                    from: r.from,
                    to: r.to,
                })
                .collect::<Vec<_>>()
        };
        let user = match UserConfig::path_from_env() {
            Some(path) => UserConfig::load(&path).map_err(|e| e.to_string())?.mirrors,
            None => Vec::new(),
        };
        // An unusable .plumb.yaml is reported by the build itself, with its line.
        let repository = plumb_flux::config::Config::load(repo)
            .map(|c| c.mirrors)
            .unwrap_or_default();
        let mirrors = Mirrors::new(rules(user)).then(rules(repository));
        Ok(self.cache_fetcher(mirrors))
    }

    fn cache_fetcher(&self, mirrors: Mirrors) -> Option<SourceFetcher> {
        let cache = match &self.cache_dir {
            Some(dir) => Cache::new(dir),
            None => Cache::from_env()?,
        };
        let mode = if self.offline {
            Mode::Offline
        } else {
            Mode::Online
        };
        Some(SourceFetcher {
            cache,
            mode,
            mirrors,
        })
    }
}

/// Fetches GitRepositories through plumb-source; other kinds are not fetched yet.
#[derive(Debug)]
pub struct SourceFetcher {
    cache: Cache,
    mode: Mode,
    mirrors: Mirrors,
}

impl Fetcher for SourceFetcher {
    fn fetch(&self, source: &Source) -> Result<Fetched, Unfetched> {
        let kind = source.id.kind.as_str();
        let Some(url) = source.url.as_deref() else {
            return Err(Unfetched::Unsupported(format!("{kind} has no spec.url")));
        };
        let mirrored = self.mirrors.rewrite(url);
        let url = mirrored.as_deref().unwrap_or(url);
        let failed = |e: plumb_source::FetchError| {
            let message = match &mirrored {
                Some(m) => format!("fetched from mirror {m}: {e}"),
                None => e.to_string(),
            };
            if e.is_source_error() {
                Unfetched::Broken(message)
            } else {
                Unfetched::Failed(message)
            }
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
            .map_err(failed)
    }
}
