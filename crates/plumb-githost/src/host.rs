//! Which Git host serves a repository and how to reach its API: derived from the URL a Flux
//! GitRepository clones, optionally overridden by the user.

use std::fmt;

/// The API dialect a host speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Gitea's API v1, which Forgejo serves unchanged.
    Gitea,
    /// GitHub's REST API (github.com or GitHub Enterprise Server).
    GitHub,
}

impl Flavor {
    /// The name a person knows the host by.
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Gitea => "Gitea/Forgejo",
            Flavor::GitHub => "GitHub",
        }
    }
}

/// A repository on a Git host, and the credentials to ask about it.
#[derive(Clone, PartialEq, Eq)]
pub struct Host {
    pub flavor: Flavor,
    /// The API base URL without a trailing slash: `https://api.github.com`,
    /// `https://git.example.com/api/v1`.
    pub api: String,
    pub owner: String,
    pub repo: String,
    /// Sent as the `Authorization` header and nowhere else; [`fmt::Debug`] redacts it.
    pub token: Option<String>,
}

impl fmt::Debug for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Host")
            .field("flavor", &self.flavor)
            .field("api", &self.api)
            .field("owner", &self.owner)
            .field("repo", &self.repo)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl Host {
    /// The host of a Flux GitRepository URL (`https://host/owner/repo(.git)`,
    /// `ssh://git@host[:port]/owner/repo.git`, `git@host:owner/repo.git`), with an optional
    /// `--git-host` override: `github`, `github+https://ghe.example.com`, `gitea+https://host`
    /// (`forgejo+` is the same), or an API base URL (`https://host/api/v1`,
    /// `https://api.github.com`). `github.com` is GitHub; any other host is taken for Gitea
    /// unless overridden. The token comes from the environment: `GITHUB_TOKEN` for GitHub,
    /// `GITEA_TOKEN` then `FORGEJO_TOKEN` for Gitea. `None` when the URL names no owner/repo.
    pub fn from_url(url: &str, override_: Option<&str>) -> Option<Host> {
        Host::from_url_with_env(url, override_, |name| {
            std::env::var(name).ok().filter(|v| !v.is_empty())
        })
    }

    /// [`Host::from_url`] with the environment given as a lookup function.
    pub fn from_url_with_env(
        url: &str,
        override_: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Option<Host> {
        let remote = parse_remote(url)?;
        let (flavor, api) = match override_.map(str::trim).filter(|o| !o.is_empty()) {
            Some(o) => parse_override(o)?,
            None => default_api(&remote),
        };
        let token = match flavor {
            Flavor::GitHub => env("GITHUB_TOKEN"),
            Flavor::Gitea => env("GITEA_TOKEN").or_else(|| env("FORGEJO_TOKEN")),
        };
        Some(Host {
            flavor,
            api,
            owner: remote.owner,
            repo: remote.repo,
            token,
        })
    }

    /// The same host with `token` (or none).
    pub fn with_token(mut self, token: Option<String>) -> Host {
        self.token = token;
        self
    }

    /// The API URL of the repository itself, `{api}/repos/{owner}/{repo}`.
    pub fn repo_url(&self) -> String {
        format!("{}/repos/{}/{}", self.api, self.owner, self.repo)
    }
}

/// What a clone URL says: where the web server is, and the repository's owner and name.
#[derive(Debug, PartialEq, Eq)]
struct Remote {
    /// `https` or `http` when the URL was one of those; ssh URLs say nothing about the web port.
    web_scheme: Option<String>,
    /// Host name, with the port for http(s) URLs.
    authority: String,
    /// Path segments before owner/repo (a Gitea served under a subpath).
    prefix: String,
    owner: String,
    repo: String,
}

fn parse_remote(url: &str) -> Option<Remote> {
    let url = url.trim();
    let (web_scheme, authority, path) = if let Some((scheme, rest)) = url.split_once("://") {
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        // userinfo (git@, token@) never takes part in the host.
        let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        match scheme.to_ascii_lowercase().as_str() {
            s @ ("https" | "http") => (Some(s.to_string()), authority.to_string(), path),
            "ssh" | "git+ssh" | "ssh+git" => {
                let host = strip_port(authority);
                (None, host.to_string(), path)
            }
            _ => return None,
        }
    } else {
        // scp-like: [user@]host:path, where host has no slash before the colon.
        let (head, path) = url.split_once(':')?;
        if head.contains('/') {
            return None;
        }
        let host = head.rsplit_once('@').map_or(head, |(_, h)| h);
        (None, host.to_string(), path)
    };
    if authority.is_empty() {
        return None;
    }
    let path = path.split(['?', '#']).next().unwrap_or("");
    let mut segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let repo = segments.pop()?;
    let repo = repo.strip_suffix(".git").unwrap_or(repo);
    let owner = segments.pop()?;
    if repo.is_empty() || owner.is_empty() {
        return None;
    }
    Some(Remote {
        web_scheme,
        authority: authority.to_ascii_lowercase(),
        prefix: segments.join("/"),
        owner: owner.to_string(),
        repo: repo.to_string(),
    })
}

fn strip_port(authority: &str) -> &str {
    match authority.rsplit_once(':') {
        Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) => host,
        _ => authority,
    }
}

fn is_github_dot_com(authority: &str) -> bool {
    matches!(strip_port(authority), "github.com" | "www.github.com")
}

fn default_api(remote: &Remote) -> (Flavor, String) {
    if is_github_dot_com(&remote.authority) {
        return (Flavor::GitHub, "https://api.github.com".to_string());
    }
    let scheme = remote.web_scheme.as_deref().unwrap_or("https");
    let mut base = format!("{scheme}://{}", remote.authority);
    if !remote.prefix.is_empty() {
        base.push('/');
        base.push_str(&remote.prefix);
    }
    (Flavor::Gitea, format!("{base}/api/v1"))
}

fn parse_override(o: &str) -> Option<(Flavor, String)> {
    let lower = o.to_ascii_lowercase();
    if lower == "github" {
        return Some((Flavor::GitHub, "https://api.github.com".to_string()));
    }
    if let Some((kind, url)) = o.split_once('+') {
        let url = url.trim_end_matches('/');
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return None;
        }
        return match kind.to_ascii_lowercase().as_str() {
            "gitea" | "forgejo" => Some((Flavor::Gitea, api_base(url, "/api/v1"))),
            "github" => Some((Flavor::GitHub, github_base(url))),
            _ => None,
        };
    }
    let url = o.trim_end_matches('/');
    if !(lower.starts_with("https://") || lower.starts_with("http://")) {
        return None;
    }
    let authority = url.split_once("://")?.1.split('/').next().unwrap_or("");
    if authority.eq_ignore_ascii_case("api.github.com") || lower.ends_with("/api/v3") {
        Some((Flavor::GitHub, url.to_string()))
    } else {
        Some((Flavor::Gitea, url.to_string()))
    }
}

/// `url` as an API base: kept when it already ends in `suffix`, else `suffix` appended.
fn api_base(url: &str, suffix: &str) -> String {
    if url.ends_with(suffix) {
        url.to_string()
    } else {
        format!("{url}{suffix}")
    }
}

/// GitHub's API base for a web URL: api.github.com for github.com, `/api/v3` on Enterprise
/// Server.
fn github_base(url: &str) -> String {
    let authority = url
        .split_once("://")
        .map_or("", |(_, r)| r.split('/').next().unwrap_or(""));
    if is_github_dot_com(authority) || authority.eq_ignore_ascii_case("api.github.com") {
        "https://api.github.com".to_string()
    } else {
        api_base(url, "/api/v3")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn host(url: &str, o: Option<&str>) -> Host {
        Host::from_url_with_env(url, o, env(&[])).unwrap_or_else(|| panic!("{url} parses"))
    }

    #[test]
    fn github_https_with_and_without_git_suffix() {
        for url in [
            "https://github.com/acme/platform.git",
            "https://github.com/acme/platform",
            "https://github.com/acme/platform/",
            "https://x-access-token:abc@github.com/acme/platform.git",
        ] {
            let h = host(url, None);
            assert_eq!(h.flavor, Flavor::GitHub, "{url}");
            assert_eq!(h.api, "https://api.github.com", "{url}");
            assert_eq!((h.owner.as_str(), h.repo.as_str()), ("acme", "platform"));
        }
    }

    #[test]
    fn github_ssh_and_scp_like() {
        for url in [
            "ssh://git@github.com/acme/platform.git",
            "ssh://git@github.com:22/acme/platform.git",
            "git@github.com:acme/platform.git",
            "github.com:acme/platform",
        ] {
            let h = host(url, None);
            assert_eq!(h.flavor, Flavor::GitHub, "{url}");
            assert_eq!(h.repo_url(), "https://api.github.com/repos/acme/platform");
        }
    }

    #[test]
    fn self_hosted_is_gitea_on_the_web_scheme_and_port() {
        let h = host("http://gitea.lan:3000/ops/flux.git", None);
        assert_eq!(h.flavor, Flavor::Gitea);
        assert_eq!(h.api, "http://gitea.lan:3000/api/v1");
        assert_eq!((h.owner.as_str(), h.repo.as_str()), ("ops", "flux"));

        // ssh's port is the ssh server's, not the web server's.
        let h = host("ssh://git@git.example.com:2222/ops/flux.git", None);
        assert_eq!(h.api, "https://git.example.com/api/v1");
        let h = host("git@git.example.com:ops/flux.git", None);
        assert_eq!(h.api, "https://git.example.com/api/v1");

        // A Gitea served under a subpath keeps it.
        let h = host("https://example.com/git/ops/flux.git", None);
        assert_eq!(h.api, "https://example.com/git/api/v1");
    }

    #[test]
    fn overrides() {
        let url = "ssh://git@git.example.com:2222/ops/flux.git";
        let h = host(url, Some("gitea+http://git.example.com:3000"));
        assert_eq!(
            (h.flavor, h.api.as_str()),
            (Flavor::Gitea, "http://git.example.com:3000/api/v1")
        );
        let h = host(url, Some("forgejo+https://code.example.com/api/v1/"));
        assert_eq!(
            (h.flavor, h.api.as_str()),
            (Flavor::Gitea, "https://code.example.com/api/v1")
        );
        let h = host(url, Some("github"));
        assert_eq!(
            (h.flavor, h.api.as_str()),
            (Flavor::GitHub, "https://api.github.com")
        );
        let h = host(url, Some("github+https://ghe.example.com"));
        assert_eq!(
            (h.flavor, h.api.as_str()),
            (Flavor::GitHub, "https://ghe.example.com/api/v3")
        );
        let h = host(url, Some("http://127.0.0.1:8080/api/v1"));
        assert_eq!(
            (h.flavor, h.api.as_str()),
            (Flavor::Gitea, "http://127.0.0.1:8080/api/v1")
        );
        let h = host(url, Some("https://api.github.com"));
        assert_eq!(h.flavor, Flavor::GitHub);
        assert_eq!((h.owner.as_str(), h.repo.as_str()), ("ops", "flux"));
        assert!(Host::from_url_with_env(url, Some("bitbucket+https://x"), env(&[])).is_none());
        assert!(Host::from_url_with_env(url, Some("gitlab"), env(&[])).is_none());
    }

    #[test]
    fn urls_without_owner_and_repo_are_not_hosts() {
        for url in [
            "",
            "https://github.com/",
            "https://github.com/acme",
            "/srv/git/repo",
            "file:///srv/a/b",
        ] {
            assert!(
                Host::from_url_with_env(url, None, env(&[])).is_none(),
                "{url}"
            );
        }
    }

    #[test]
    fn tokens_come_from_the_flavor_s_variables() {
        let vars = env(&[
            ("GITHUB_TOKEN", "gh-secret"),
            ("FORGEJO_TOKEN", "fj-secret"),
        ]);
        let h = Host::from_url_with_env("git@github.com:a/b.git", None, &vars).unwrap();
        assert_eq!(h.token.as_deref(), Some("gh-secret"));
        let h = Host::from_url_with_env("git@git.lan:a/b.git", None, &vars).unwrap();
        assert_eq!(h.token.as_deref(), Some("fj-secret"));
        let both = env(&[("GITEA_TOKEN", "gt-secret"), ("FORGEJO_TOKEN", "fj-secret")]);
        let h = Host::from_url_with_env("git@git.lan:a/b.git", None, both).unwrap();
        assert_eq!(h.token.as_deref(), Some("gt-secret"));
        let debug = format!("{h:?}");
        assert!(!debug.contains("gt-secret"), "{debug}");
        assert!(debug.contains("<redacted>"), "{debug}");
    }
}
