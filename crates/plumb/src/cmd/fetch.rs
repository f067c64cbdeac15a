//! The fetcher `plumb build`, `check` and `graph` give the Flux build: plumb-source's cache
//! (`--cache-dir`, else `PLUMB_CACHE_DIR` or the user's cache directory), online unless
//! `--offline`; URLs rewritten by the `mirrors:` of the user's configuration file, then of the
//! repository's `.plumb.yaml`.

use clap::Args;
use plumb_flux::config::UserConfig;
use plumb_flux::fetch::{Fetched, FetchedChart, Fetcher, Include, SecretData, Unfetched};
use plumb_flux::model::Source;
use plumb_source::{
    BucketCredentials, BucketError, BucketSource, Cache, ChartArtifact, ChartError, Credentials,
    GitSource, HelmChartSource, Included, LayerOperation, Mirror, Mirrors, Mode, OciChartSource,
    OciError, OciSource, SshKey,
};
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
    /// Do not render HelmReleases (they are rendered by `helm` on PATH, or `PLUMB_HELM`).
    #[arg(long)]
    pub no_helm: bool,
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
            progress: super::progress::FetchProgress::new(true),
        })
    }
}

/// Fetches GitRepositories, OCIRepositories, Buckets and charts (HelmRepository, chartRef,
/// chart directories of fetched trees) through plumb-source.
#[derive(Debug)]
pub struct SourceFetcher {
    cache: Cache,
    mode: Mode,
    mirrors: Mirrors,
    progress: super::progress::FetchProgress,
}

impl SourceFetcher {
    /// The fetcher of kustomizations' remote bases and files, with the same cache, mode and
    /// mirrors.
    pub fn remote(&self) -> std::sync::Arc<dyn plumb_kustomize::Remote> {
        std::sync::Arc::new(super::remote::KustomizeRemote::new(
            self.cache.clone(),
            self.mode,
            self.mirrors.clone(),
        ))
    }
}

impl Fetcher for SourceFetcher {
    fn fetch(&self, source: &Source) -> Result<Fetched, Unfetched> {
        self.fetch_with(source, None)
    }

    fn fetch_chart(
        &self,
        repository: &Source,
        chart: &str,
        version: &str,
        secret: Option<&SecretData>,
    ) -> Result<FetchedChart, Unfetched> {
        let kind = repository.id.kind.as_str();
        if kind != "HelmRepository" {
            return Err(Unfetched::Unsupported(format!(
                "charts are fetched from a HelmRepository, not a {kind}"
            )));
        }
        let Some(url) = repository.url.as_deref() else {
            return Err(Unfetched::Broken(format!(
                "{} has no spec.url",
                repository.id
            )));
        };
        let mirrored = self.mirrors.rewrite(url);
        let fetch_url = mirrored.as_deref().unwrap_or(url);
        let _shown = self.progress.start(format!(
            "{} chart {chart} {version} ({fetch_url})",
            repository.id
        ));
        let credentials = secret.and_then(|s| {
            Some(Credentials {
                username: s.get("username")?.to_string(),
                password: s.get("password")?.to_string(),
            })
        });
        let fetched = if repository.spec["type"].as_str() == Some("oci") {
            let source = OciChartSource {
                repo_url: fetch_url.to_string(),
                chart: chart.to_string(),
                version: version.to_string(),
                insecure: repository.spec["insecure"].as_bool().unwrap_or(false),
                credentials,
                docker_config_json: secret
                    .and_then(|s| s.get(".dockerconfigjson"))
                    .map(str::to_string),
            };
            self.cache.fetch_oci_chart(&source, self.mode)
        } else {
            let source = HelmChartSource {
                repo_url: fetch_url.to_string(),
                chart: chart.to_string(),
                version: version.to_string(),
                credentials,
            };
            self.cache.fetch_chart(&source, self.mode)
        };
        fetched
            .map(fetched_chart)
            .map_err(|e| chart_unfetched(mirrored.as_deref(), &e))
    }

    fn fetch_chart_ref(
        &self,
        source: &Source,
        secret: Option<&SecretData>,
    ) -> Result<FetchedChart, Unfetched> {
        let kind = source.id.kind.as_str();
        if kind != "OCIRepository" {
            return Err(Unfetched::Unsupported(format!(
                "a chartRef to a {kind} is not supported yet"
            )));
        }
        let Some(url) = source.url.as_deref() else {
            return Err(Unfetched::Broken(format!("{} has no spec.url", source.id)));
        };
        let mirrored = self.mirrors.rewrite(url);
        let fetch_url = mirrored.as_deref().unwrap_or(url);
        let _shown = self
            .progress
            .start(format!("{} chart ({fetch_url})", source.id));
        let mut oci = OciSource::from_spec(fetch_url, &source.spec).map_err(|e| {
            let message = via_mirror(mirrored.as_deref(), &e);
            Unfetched::Broken(message)
        })?;
        oci.docker_config_json = secret
            .and_then(|s| s.get(".dockerconfigjson"))
            .map(str::to_string);
        self.cache
            .fetch_chart_ref(&oci, self.mode)
            .map(fetched_chart)
            .map_err(|e| chart_unfetched(mirrored.as_deref(), &e))
    }

    fn build_chart(&self, dir: &Path) -> Result<FetchedChart, Unfetched> {
        let root = self.cache.tree_root(dir);
        self.cache
            .build_chart(&root, dir, &self.mirrors, self.mode)
            .map(fetched_chart)
            .map_err(|e| {
                if e.is_source_error() {
                    Unfetched::Broken(e.to_string())
                } else {
                    Unfetched::Failed(e.to_string())
                }
            })
    }

    fn compose(&self, base: &Fetched, includes: &[Include]) -> Result<Fetched, Unfetched> {
        let includes: Vec<Included> = includes
            .iter()
            .map(|i| Included {
                tree: i.tree.clone(),
                from: i.from.clone(),
                to: i.to.clone(),
            })
            .collect();
        self.cache
            .compose(&base.dir, &includes)
            .map(|dir| Fetched {
                dir,
                revision: base.revision.clone(),
            })
            .map_err(|e| match e {
                plumb_source::IncludeError::BadPath { .. } => Unfetched::Broken(e.to_string()),
                _ => Unfetched::Failed(e.to_string()),
            })
    }

    fn fetch_with(
        &self,
        source: &Source,
        secret: Option<&SecretData>,
    ) -> Result<Fetched, Unfetched> {
        let kind = source.id.kind.as_str();
        if kind == "Bucket" {
            return self.fetch_bucket(source, secret);
        }
        let Some(url) = source.url.as_deref() else {
            return Err(Unfetched::Unsupported(format!("{kind} has no spec.url")));
        };
        let mirrored = self.mirrors.rewrite(url);
        let url = mirrored.as_deref().unwrap_or(url);
        let _shown = self.progress.start(format!("{} ({url})", source.id));
        let failed = |e: plumb_source::FetchError| {
            let message = via_mirror(mirrored.as_deref(), &e);
            if e.is_source_error() {
                Unfetched::Broken(message)
            } else {
                Unfetched::Failed(message)
            }
        };
        if kind == "OCIRepository" {
            let docker_config = secret.and_then(|s| s.get(".dockerconfigjson"));
            return self.fetch_oci(url, mirrored.as_deref(), &source.spec, docker_config);
        }
        if kind != "GitRepository" {
            return Err(Unfetched::Unsupported(format!(
                "fetching a {kind} is not supported yet"
            )));
        }
        let mut git = GitSource::from_spec(url, &source.spec);
        git.credentials = git_credentials(url, secret, |name| std::env::var(name).ok());
        git.ssh = secret.and_then(|s| {
            Some(SshKey {
                identity: s.get("identity")?.to_string(),
                known_hosts: s.get("known_hosts").map(str::to_string),
            })
        });
        self.cache
            .fetch_git(&git, self.mode)
            .map(|a| Fetched {
                dir: a.dir,
                revision: a.revision,
            })
            .map_err(failed)
    }
}

impl SourceFetcher {
    /// An OCIRepository from `url` (already rewritten by the mirrors, `mirror` when it was);
    /// credentials from the `.dockerconfigjson` of its secretRef, else the user's Docker
    /// configuration, as `flux pull artifact` reads it.
    fn fetch_oci(
        &self,
        url: &str,
        mirror: Option<&str>,
        spec: &serde_json::Value,
        docker_config: Option<&str>,
    ) -> Result<Fetched, Unfetched> {
        let failed = |e: OciError| {
            let message = via_mirror(mirror, &e);
            if e.is_source_error() {
                Unfetched::Broken(message)
            } else {
                Unfetched::Failed(message)
            }
        };
        let mut oci = OciSource::from_spec(url, spec).map_err(failed)?;
        oci.docker_config_json = docker_config.map(str::to_string);
        if oci.layer_selector.operation == LayerOperation::Copy {
            // kustomize-controller would untar the copied layer; rather than build the directory
            // holding it (which would build nothing), plumb does not build from it yet.
            return Err(Unfetched::Unsupported(
                "building from an OCIRepository with layerSelector.operation copy is not supported yet"
                    .into(),
            ));
        }
        self.cache
            .fetch_oci(&oci, self.mode)
            .map(|a| Fetched {
                dir: a.dir,
                revision: a.revision,
            })
            .map_err(failed)
    }
}

fn fetched_chart(chart: ChartArtifact) -> FetchedChart {
    FetchedChart {
        dir: chart.dir,
        name: chart.name,
        version: chart.version,
        digest: chart.digest,
    }
}

/// A chart fetch's error: the repository wrong (no such chart or version, a digest mismatch)
/// is broken, anything else (unreachable, offline and not cached) failed.
fn chart_unfetched(mirror: Option<&str>, e: &ChartError) -> Unfetched {
    let message = via_mirror(mirror, e);
    if e.is_source_error() {
        Unfetched::Broken(message)
    } else {
        Unfetched::Failed(message)
    }
}

/// The credentials for a git fetch from `url`: the `username` and `password` of the source's
/// `spec.secretRef` when the build has that Secret, else `GITHUB_TOKEN` for an https URL on
/// github.com; `None` leaves it to the git configuration's credential helpers.
fn git_credentials(
    url: &str,
    secret: Option<&SecretData>,
    env: impl Fn(&str) -> Option<String>,
) -> Option<Credentials> {
    if let Some(secret) = secret {
        if let (Some(username), Some(password)) = (secret.get("username"), secret.get("password")) {
            return Some(Credentials {
                username: username.to_string(),
                password: password.to_string(),
            });
        }
    }
    let github = url
        .strip_prefix("https://")
        .is_some_and(|rest| rest.split(['/', ':']).next() == Some("github.com"));
    let token = env("GITHUB_TOKEN").filter(|t| !t.is_empty())?;
    github.then(|| Credentials {
        username: "x-access-token".to_string(),
        password: token,
    })
}

impl SourceFetcher {
    /// A Bucket, signed with the `accesskey` and `secretkey` of its `spec.secretRef` when the
    /// build has that Secret, else with `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY` when both
    /// are set, else anonymous.
    fn fetch_bucket(
        &self,
        source: &Source,
        secret: Option<&SecretData>,
    ) -> Result<Fetched, Unfetched> {
        let mut bucket = BucketSource::from_spec(&source.spec);
        // A mirror of the endpoint (`minio.example.com:9000` → `127.0.0.1:9000`), its scheme
        // deciding plain HTTP.
        let mirrored = self.mirrors.rewrite(&bucket.endpoint_url());
        if let Some((scheme, host)) = mirrored.as_deref().and_then(|m| m.split_once("://")) {
            bucket.insecure = scheme == "http";
            bucket.endpoint = host.trim_end_matches('/').to_string();
        }
        let _shown = self
            .progress
            .start(format!("{} ({})", source.id, bucket.endpoint_url()));
        let credentials = match secret {
            Some(secret) => bucket_credentials(secret),
            None => BucketCredentials::from_env(),
        };
        self.cache
            .fetch_bucket(&bucket, credentials.as_ref(), self.mode)
            .map(|a| Fetched {
                dir: a.dir,
                revision: a.revision,
            })
            .map_err(|e| {
                let mut message = via_mirror(mirrored.as_deref(), &e);
                let secret_missing = secret.is_none() && source.spec["secretRef"].is_object();
                if secret_missing
                    && credentials.is_none()
                    && matches!(e, BucketError::AccessDenied { .. })
                {
                    message.push_str(
                        " (the build does not hold the spec.secretRef Secret readable: set \
                         AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY to sign the requests)",
                    );
                }
                match e {
                    BucketError::UnsupportedProvider { .. } => Unfetched::Unsupported(message),
                    e if e.is_source_error() => Unfetched::Broken(message),
                    _ => Unfetched::Failed(message),
                }
            })
    }
}

/// As source-controller's minio client: both keys set and not empty sign, anything else is
/// anonymous.
fn bucket_credentials(secret: &SecretData) -> Option<BucketCredentials> {
    let access_key = secret.get("accesskey").filter(|k| !k.is_empty())?;
    let secret_key = secret.get("secretkey").filter(|k| !k.is_empty())?;
    Some(BucketCredentials {
        access_key: access_key.to_string(),
        secret_key: secret_key.to_string(),
    })
}

/// A fetch's error, saying which mirror was asked when a `mirrors:` rule rewrote the URL.
pub fn via_mirror(mirror: Option<&str>, e: &dyn std::fmt::Display) -> String {
    match mirror {
        Some(m) => format!("fetched from mirror {m}: {e}"),
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offline_fetcher(cache: &Path, mirrors: Vec<Mirror>) -> SourceFetcher {
        SourceFetcher {
            cache: Cache::new(cache),
            mode: Mode::Offline,
            mirrors: Mirrors::new(mirrors),
            progress: super::super::progress::FetchProgress::new(false),
        }
    }

    fn helm_repository(url: &str, spec: serde_json::Value) -> Source {
        Source {
            id: plumb_flux::model::ObjectRef::new("HelmRepository", "flux-system", "charts"),
            url: Some(url.to_string()),
            spec,
        }
    }

    #[test]
    fn charts_not_in_the_cache_offline_are_unavailable_and_name_the_mirror() {
        let tmp = tempfile::tempdir().unwrap();
        let fetcher = offline_fetcher(
            tmp.path(),
            vec![Mirror {
                from: "ghcr.io/org".into(),
                to: "registry.internal:5000/org".into(),
            }],
        );
        let oci = helm_repository(
            "oci://ghcr.io/org/charts",
            serde_json::json!({"type": "oci", "url": "oci://ghcr.io/org/charts"}),
        );
        let Err(Unfetched::Failed(why)) = fetcher.fetch_chart(&oci, "podinfo", "6.x", None) else {
            panic!("an uncached OCI chart offline is unavailable");
        };
        assert!(
            why.contains("fetched from mirror oci://registry.internal:5000/org/charts"),
            "{why}"
        );
        assert!(why.contains("podinfo") && why.contains("6.x"), "{why}");

        let http = helm_repository("https://charts.example.com", serde_json::json!({}));
        let Err(Unfetched::Failed(why)) = fetcher.fetch_chart(&http, "redis", "1.0.0", None) else {
            panic!("an uncached HTTP chart offline is unavailable");
        };
        assert!(
            why.contains("https://charts.example.com") && why.contains("redis"),
            "{why}"
        );
        assert!(!why.contains("mirror"), "{why}");

        let git = Source {
            id: plumb_flux::model::ObjectRef::new("GitRepository", "flux-system", "repo"),
            ..http
        };
        assert!(matches!(
            fetcher.fetch_chart(&git, "redis", "1.0.0", None),
            Err(Unfetched::Unsupported(_))
        ));
    }

    #[test]
    fn a_chart_directory_that_is_no_chart_is_broken() {
        let tmp = tempfile::tempdir().unwrap();
        let fetcher = offline_fetcher(&tmp.path().join("cache"), Vec::new());
        let dir = tmp.path().join("not-a-chart");
        std::fs::create_dir_all(&dir).unwrap();
        let Err(Unfetched::Broken(why)) = fetcher.build_chart(&dir) else {
            panic!("a directory without Chart.yaml is no chart");
        };
        assert!(
            why.contains("not-a-chart") && why.contains("Chart.yaml"),
            "{why}"
        );
    }

    #[test]
    fn bucket_keys_from_the_secret_need_both() {
        let secret = |pairs: &[(&str, &str)]| {
            SecretData(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        };
        let both =
            bucket_credentials(&secret(&[("accesskey", "AK"), ("secretkey", "SK")])).unwrap();
        assert_eq!(
            (both.access_key.as_str(), both.secret_key.as_str()),
            ("AK", "SK")
        );
        assert_eq!(bucket_credentials(&secret(&[("accesskey", "AK")])), None);
        assert_eq!(
            bucket_credentials(&secret(&[("accesskey", "AK"), ("secretkey", "")])),
            None
        );
    }

    #[test]
    fn the_source_secret_then_github_token() {
        let secret = SecretData(
            [("username", "bot"), ("password", "s3cret")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        let env = |name: &str| (name == "GITHUB_TOKEN").then(|| "ghp_x".to_string());
        let from_secret = git_credentials("https://git.example.com/r", Some(&secret), env).unwrap();
        assert_eq!(from_secret.username, "bot");
        assert!(!format!("{from_secret:?}").contains("s3cret"));
        let token = git_credentials("https://github.com/org/r", None, env).unwrap();
        assert_eq!(
            (token.username.as_str(), token.password.as_str()),
            ("x-access-token", "ghp_x")
        );
        assert_eq!(git_credentials("https://gitlab.com/org/r", None, env), None);
        assert_eq!(
            git_credentials("https://github.com.evil.example/r", None, env),
            None
        );
        assert_eq!(
            git_credentials("https://github.com/org/r", None, |_| None),
            None
        );
    }
}
