//! kustomize's own repository-spec test table (`api/internal/git/repospec_test.go`): the same
//! inputs and expected host, repository path, kustomization directory, ref, timeout and
//! submodules, checked against plumb's parser. Every case is checked; the failures are listed
//! with `N passed, M failed`.

use std::time::Duration;

use plumb_source::remote::{is_http_url, RepoSpec, DEFAULT_TIMEOUT};

struct Smoke {
    name: &'static str,
    input: &'static str,
    clone: &'static str,
    host: &'static str,
    repo_path: &'static str,
    kust_root_path: &'static str,
    reference: &'static str,
}

const SMOKE: &[Smoke] = &[
    Smoke {
        name: "https aws code commit url",
        input: "https://git-codecommit.us-east-2.amazonaws.com/someorg/somerepo/somedir",
        clone: "https://git-codecommit.us-east-2.amazonaws.com/someorg/somerepo",
        host: "https://git-codecommit.us-east-2.amazonaws.com/",
        repo_path: "someorg/somerepo",
        kust_root_path: "somedir",
        reference: "",
    },
    Smoke {
        name: "https aws code commit url with params",
        input:
            "https://git-codecommit.us-east-2.amazonaws.com/someorg/somerepo/somedir?ref=testbranch",
        clone: "https://git-codecommit.us-east-2.amazonaws.com/someorg/somerepo",
        host: "https://git-codecommit.us-east-2.amazonaws.com/",
        repo_path: "someorg/somerepo",
        kust_root_path: "somedir",
        reference: "testbranch",
    },
    Smoke {
        name: "legacy azure https url with params",
        input: "https://fabrikops2.visualstudio.com/someorg/somerepo?ref=master",
        clone: "https://fabrikops2.visualstudio.com/someorg/somerepo",
        host: "https://fabrikops2.visualstudio.com/",
        repo_path: "someorg/somerepo",
        kust_root_path: "",
        reference: "master",
    },
    Smoke {
        name: "http github url without git suffix",
        input: "http://github.com/someorg/somerepo/somedir",
        clone: "https://github.com/someorg/somerepo",
        host: "https://github.com/",
        repo_path: "someorg/somerepo",
        kust_root_path: "somedir",
        reference: "",
    },
    Smoke {
        name: "scp github url without git suffix",
        input: "git@github.com:someorg/somerepo/somedir",
        clone: "git@github.com:someorg/somerepo",
        host: "git@github.com:",
        repo_path: "someorg/somerepo",
        kust_root_path: "somedir",
        reference: "",
    },
    Smoke {
        name: "http github url with git suffix",
        input: "http://github.com/someorg/somerepo.git/somedir",
        clone: "https://github.com/someorg/somerepo.git",
        host: "https://github.com/",
        repo_path: "someorg/somerepo.git",
        kust_root_path: "somedir",
        reference: "",
    },
    Smoke {
        name: "scp github url with git suffix",
        input: "git@github.com:someorg/somerepo.git/somedir",
        clone: "git@github.com:someorg/somerepo.git",
        host: "git@github.com:",
        repo_path: "someorg/somerepo.git",
        kust_root_path: "somedir",
        reference: "",
    },
    Smoke {
        name: "non-github_scp",
        input: "git@gitlab2.sqtools.ru:infra/kubernetes/thanos-base.git?ref=v0.1.0",
        clone: "git@gitlab2.sqtools.ru:infra/kubernetes/thanos-base.git",
        host: "git@gitlab2.sqtools.ru:",
        repo_path: "infra/kubernetes/thanos-base.git",
        kust_root_path: "",
        reference: "v0.1.0",
    },
    Smoke {
        name: "non-github_scp with path delimiter",
        input: "git@bitbucket.org:company/project.git//path?ref=branch",
        clone: "git@bitbucket.org:company/project.git",
        host: "git@bitbucket.org:",
        repo_path: "company/project.git",
        kust_root_path: "path",
        reference: "branch",
    },
    Smoke {
        name:
            "non-github_scp incorrectly using slash (invalid but currently passed through to git)",
        input: "git@bitbucket.org/company/project.git//path?ref=branch",
        clone: "git@bitbucket.org/company/project.git",
        host: "git@bitbucket.org/",
        repo_path: "company/project.git",
        kust_root_path: "path",
        reference: "branch",
    },
    Smoke {
        name: "non-github_git-user_ssh",
        input: "ssh://git@bitbucket.org/company/project.git//path?ref=branch",
        clone: "ssh://git@bitbucket.org/company/project.git",
        host: "ssh://git@bitbucket.org/",
        repo_path: "company/project.git",
        kust_root_path: "path",
        reference: "branch",
    },
    Smoke {
        name: "_git host delimiter in non-github url",
        input: "https://itfs.mycompany.com/collection/project/_git/somerepos",
        clone: "https://itfs.mycompany.com/collection/project/_git/somerepos",
        host: "https://itfs.mycompany.com/",
        repo_path: "collection/project/_git/somerepos",
        kust_root_path: "",
        reference: "",
    },
    Smoke {
        name: "_git host delimiter in non-github url with params",
        input: "https://itfs.mycompany.com/collection/project/_git/somerepos?version=v1.0.0",
        clone: "https://itfs.mycompany.com/collection/project/_git/somerepos",
        host: "https://itfs.mycompany.com/",
        repo_path: "collection/project/_git/somerepos",
        kust_root_path: "",
        reference: "v1.0.0",
    },
    Smoke {
        name: "_git host delimiter in non-github url with kust root path and params",
        input:
            "https://itfs.mycompany.com/collection/project/_git/somerepos/somedir?version=v1.0.0",
        clone: "https://itfs.mycompany.com/collection/project/_git/somerepos",
        host: "https://itfs.mycompany.com/",
        repo_path: "collection/project/_git/somerepos",
        kust_root_path: "somedir",
        reference: "v1.0.0",
    },
    Smoke {
        name: "_git host delimiter in non-github url with no kust root path",
        input: "git::https://itfs.mycompany.com/collection/project/_git/somerepos",
        clone: "https://itfs.mycompany.com/collection/project/_git/somerepos",
        host: "https://itfs.mycompany.com/",
        repo_path: "collection/project/_git/somerepos",
        kust_root_path: "",
        reference: "",
    },
    Smoke {
        name: "https bitbucket url with git suffix",
        input: "https://bitbucket.example.com/scm/project/repository.git",
        clone: "https://bitbucket.example.com/scm/project/repository.git",
        host: "https://bitbucket.example.com/",
        repo_path: "scm/project/repository.git",
        kust_root_path: "",
        reference: "",
    },
    Smoke {
        name: "ssh aws code commit url",
        input: "ssh://git-codecommit.us-east-2.amazonaws.com/someorg/somerepo/somepath",
        clone: "ssh://git-codecommit.us-east-2.amazonaws.com/someorg/somerepo",
        host: "ssh://git-codecommit.us-east-2.amazonaws.com/",
        repo_path: "someorg/somerepo",
        kust_root_path: "somepath",
        reference: "",
    },
    Smoke {
        name: "scp Github with slash fixed to colon",
        input: "git@github.com/someorg/somerepo/somepath",
        clone: "git@github.com:someorg/somerepo",
        host: "git@github.com:",
        repo_path: "someorg/somerepo",
        kust_root_path: "somepath",
        reference: "",
    },
    Smoke {
        name: "https Github with double slash path delimiter and params",
        input: "https://github.com/kubernetes-sigs/kustomize//examples/multibases/dev/?ref=v1.0.6",
        clone: "https://github.com/kubernetes-sigs/kustomize",
        host: "https://github.com/",
        repo_path: "kubernetes-sigs/kustomize",
        kust_root_path: "examples/multibases/dev/",
        reference: "v1.0.6",
    },
    Smoke {
        name: "file protocol with git-suffixed repo path and params",
        input: "file://a/b/c/someRepo.git/somepath?ref=someBranch",
        clone: "file://a/b/c/someRepo.git",
        host: "file://",
        repo_path: "a/b/c/someRepo.git",
        kust_root_path: "somepath",
        reference: "someBranch",
    },
    Smoke {
        name: "file protocol with two slashes, with kust root path and params",
        input: "file://a/b/c/someRepo//somepath?ref=someBranch",
        clone: "file://a/b/c/someRepo",
        host: "file://",
        repo_path: "a/b/c/someRepo",
        kust_root_path: "somepath",
        reference: "someBranch",
    },
    Smoke {
        name: "file protocol with two slashes, with ref and no kust root path",
        input: "file://a/b/c/someRepo?ref=someBranch",
        clone: "file://a/b/c/someRepo",
        host: "file://",
        repo_path: "a/b/c/someRepo",
        kust_root_path: "",
        reference: "someBranch",
    },
    Smoke {
        name: "file protocol with three slashes, with ref and no kust root path",
        input: "file:///a/b/c/someRepo?ref=someBranch",
        clone: "file:///a/b/c/someRepo",
        host: "file://",
        repo_path: "/a/b/c/someRepo",
        kust_root_path: "",
        reference: "someBranch",
    },
    Smoke {
        name: "ssh Github with double-slashed path delimiter and params",
        input: "ssh://git@github.com/kubernetes-sigs/kustomize//examples/multibases/dev?ref=v1.0.6",
        clone: "git@github.com:kubernetes-sigs/kustomize",
        host: "git@github.com:",
        repo_path: "kubernetes-sigs/kustomize",
        kust_root_path: "examples/multibases/dev",
        reference: "v1.0.6",
    },
    Smoke {
        name: "file protocol with three slashes, no kust root path or params",
        input: "file:///a/b/c/someRepo",
        clone: "file:///a/b/c/someRepo",
        host: "file://",
        repo_path: "/a/b/c/someRepo",
        kust_root_path: "",
        reference: "",
    },
    Smoke {
        name: "file protocol with three slashes, no repo or kust root path or params",
        input: "file:///",
        clone: "file:///",
        host: "file://",
        repo_path: "/",
        kust_root_path: "",
        reference: "",
    },
    Smoke {
        name: "arbitrary https host with double-slash path delimiter",
        input: "https://example.org/path/to/repo//examples/multibases/dev",
        clone: "https://example.org/path/to/repo",
        host: "https://example.org/",
        repo_path: "path/to/repo",
        kust_root_path: "examples/multibases/dev",
        reference: "",
    },
    Smoke {
        name: "arbitrary https host with .git repo suffix",
        input: "https://example.org/path/to/repo.git/examples/multibases/dev",
        clone: "https://example.org/path/to/repo.git",
        host: "https://example.org/",
        repo_path: "path/to/repo.git",
        kust_root_path: "examples/multibases/dev",
        reference: "",
    },
    Smoke {
        name: "arbitrary ssh host with double-slash path delimiter",
        input: "ssh://alice@example.com/path/to/repo//examples/multibases/dev",
        clone: "ssh://alice@example.com/path/to/repo",
        host: "ssh://alice@example.com/",
        repo_path: "path/to/repo",
        kust_root_path: "examples/multibases/dev",
        reference: "",
    },
    Smoke {
        name: "query_slash",
        input: "https://authority/org/repo?ref=group/version",
        clone: "https://authority/org/repo",
        host: "https://authority/",
        repo_path: "org/repo",
        kust_root_path: "",
        reference: "group/version",
    },
    Smoke {
        name: "query_git_delimiter",
        input: "https://authority/org/repo/?ref=includes_git/for_some_reason",
        clone: "https://authority/org/repo",
        host: "https://authority/",
        repo_path: "org/repo",
        kust_root_path: "",
        reference: "includes_git/for_some_reason",
    },
    Smoke {
        name: "query_git_suffix",
        input: "https://authority/org/repo/?ref=includes.git/for_some_reason",
        clone: "https://authority/org/repo",
        host: "https://authority/",
        repo_path: "org/repo",
        kust_root_path: "",
        reference: "includes.git/for_some_reason",
    },
    Smoke {
        name: "non_parsable_path",
        input: "https://authority/org/repo/%-invalid-uri-so-not-parsable-by-net/url.Parse",
        clone: "https://authority/org/repo",
        host: "https://authority/",
        repo_path: "org/repo",
        kust_root_path: "%-invalid-uri-so-not-parsable-by-net/url.Parse",
        reference: "",
    },
    Smoke {
        name: "non-git username with non-github host",
        input: "ssh://myusername@bitbucket.org/ourteamname/ourrepositoryname.git//path?ref=branch",
        clone: "ssh://myusername@bitbucket.org/ourteamname/ourrepositoryname.git",
        host: "ssh://myusername@bitbucket.org/",
        repo_path: "ourteamname/ourrepositoryname.git",
        kust_root_path: "path",
        reference: "branch",
    },
    Smoke {
        name: "username-like filepath with file protocol",
        input: "file://git@home/path/to/repository.git//path?ref=branch",
        clone: "file://git@home/path/to/repository.git",
        host: "file://",
        repo_path: "git@home/path/to/repository.git",
        kust_root_path: "path",
        reference: "branch",
    },
    Smoke {
        name: "username with http protocol (invalid but currently passed through to git)",
        input: "http://git@home.com/path/to/repository.git//path?ref=branch",
        clone: "http://git@home.com/path/to/repository.git",
        host: "http://git@home.com/",
        repo_path: "path/to/repository.git",
        kust_root_path: "path",
        reference: "branch",
    },
    Smoke {
        name: "username with https protocol (invalid but currently passed through to git)",
        input: "https://git@home.com/path/to/repository.git//path?ref=branch",
        clone: "https://git@home.com/path/to/repository.git",
        host: "https://git@home.com/",
        repo_path: "path/to/repository.git",
        kust_root_path: "path",
        reference: "branch",
    },
    Smoke {
        name: "complex github ssh url from docs",
        input: "ssh://git@ssh.github.com:443/YOUR-USERNAME/YOUR-REPOSITORY.git",
        clone: "ssh://git@ssh.github.com:443/YOUR-USERNAME/YOUR-REPOSITORY.git",
        host: "ssh://git@ssh.github.com:443/",
        repo_path: "YOUR-USERNAME/YOUR-REPOSITORY.git",
        kust_root_path: "",
        reference: "",
    },
    Smoke {
        name: "colon behind slash not scp delimiter",
        input: "git@gitlab.com/user:name/YOUR-REPOSITORY.git/path",
        clone: "git@gitlab.com/user:name/YOUR-REPOSITORY.git",
        host: "git@gitlab.com/",
        repo_path: "user:name/YOUR-REPOSITORY.git",
        kust_root_path: "path",
        reference: "",
    },
    Smoke {
        name: "gitlab URLs with explicit git suffix",
        input: "git@gitlab.com:gitlab-tests/sample-project.git",
        clone: "git@gitlab.com:gitlab-tests/sample-project.git",
        host: "git@gitlab.com:",
        repo_path: "gitlab-tests/sample-project.git",
        kust_root_path: "",
        reference: "",
    },
    Smoke {
        name: "gitlab URLs without explicit git suffix",
        input: "git@gitlab.com:gitlab-tests/sample-project",
        clone: "git@gitlab.com:gitlab-tests/sample-project",
        host: "git@gitlab.com:",
        repo_path: "gitlab-tests/sample-project",
        kust_root_path: "",
        reference: "",
    },
    Smoke {
        name: "azure host with _git and // path separator",
        input: "https://username@dev.azure.com/org/project/_git/repo//path/to/kustomization/root",
        clone: "https://username@dev.azure.com/org/project/_git/repo",
        host: "https://username@dev.azure.com/",
        repo_path: "org/project/_git/repo",
        kust_root_path: "path/to/kustomization/root",
        reference: "",
    },
    Smoke {
        name: "legacy format azure host with _git",
        input: "https://org.visualstudio.com/project/_git/repo/path/to/kustomization/root",
        clone: "https://org.visualstudio.com/project/_git/repo",
        host: "https://org.visualstudio.com/",
        repo_path: "project/_git/repo",
        kust_root_path: "path/to/kustomization/root",
        reference: "",
    },
    Smoke {
        name: "ssh on github with custom username for custom ssh certificate authority",
        input: "ssh://org-12345@github.com/kubernetes-sigs/kustomize",
        clone: "org-12345@github.com:kubernetes-sigs/kustomize",
        host: "org-12345@github.com:",
        repo_path: "kubernetes-sigs/kustomize",
        kust_root_path: "",
        reference: "",
    },
    Smoke {
        name: "scp on github with custom username for custom ssh certificate authority",
        input: "org-12345@github.com/kubernetes-sigs/kustomize",
        clone: "org-12345@github.com:kubernetes-sigs/kustomize",
        host: "org-12345@github.com:",
        repo_path: "kubernetes-sigs/kustomize",
        kust_root_path: "",
        reference: "",
    },
    Smoke {
        name: "scp format gist url",
        input: "git@gist.github.com:bc7947cb727d7f9217e7862d961a1ffd.git",
        clone: "git@gist.github.com:bc7947cb727d7f9217e7862d961a1ffd.git",
        host: "git@gist.github.com:",
        repo_path: "bc7947cb727d7f9217e7862d961a1ffd.git",
        kust_root_path: "",
        reference: "",
    },
    Smoke {
        name: "https gist url",
        input: "https://gist.github.com/bc7947cb727d7f9217e7862d961a1ffd.git",
        clone: "https://gist.github.com/bc7947cb727d7f9217e7862d961a1ffd.git",
        host: "https://gist.github.com/",
        repo_path: "bc7947cb727d7f9217e7862d961a1ffd.git",
        kust_root_path: "",
        reference: "",
    },
];

/// `(name, input, part of the error)`.
const ERRORS: &[(&str, &str, &str)] = &[
    ("absolute_path", "/tmp", "uri looks like abs path"),
    ("relative path", "../../tmp", "failed to parse scheme"),
    (
        "local path that looks somewhat like a github url",
        "src/github.com/org/repo/path",
        "failed to parse scheme",
    ),
    ("no_slashes", "iauhsdiuashduas", "failed to parse scheme"),
    (
        "bad_scheme",
        "htxxxtp://github.com/",
        "failed to parse scheme",
    ),
    (
        "no_org_repo",
        "ssh://git.example.com",
        "failed to parse repo path segment",
    ),
    ("hashicorp_git_only", "git::___", "failed to parse scheme"),
    (
        "query_after_host",
        "https://host?ref=group/version/minor_version",
        "failed to parse repo path segment",
    ),
    (
        "path_exits_repo",
        "https://github.com/org/repo.git//path/../../exits/repo",
        "url path exits repo",
    ),
    (
        "bad github separator",
        "github.com!org/repo.git//path",
        "failed to parse scheme",
    ),
    (
        "mysterious gh: prefix previously supported is no longer handled",
        "gh:org/repo",
        "failed to parse scheme",
    ),
    (
        "invalid Github url missing orgrepo",
        "https://github.com/thisisa404.yaml",
        "failed to parse repo path segment",
    ),
    (
        "unsupported protocol after username (invalid)",
        "git@scp://github.com/org/repo.git//path",
        "failed to parse repo path segment",
    ),
    (
        "supported protocol after username (invalid)",
        "git@ssh://github.com/org/repo.git//path",
        "failed to parse repo path segment",
    ),
    (
        "file protocol with excessive slashes",
        "file:////tmp//path/to/whatever",
        "failed to parse repo path segment",
    ),
];

/// `(name, query, ref, submodules, timeout)`.
const QUERIES: &[(&str, &str, &str, bool, Duration)] = &[
    ("empty", "", "", true, DEFAULT_TIMEOUT),
    ("ref", "ref=v1.0.0", "v1.0.0", true, DEFAULT_TIMEOUT),
    (
        "ref_slash",
        "ref=kustomize/v4.5.7",
        "kustomize/v4.5.7",
        true,
        DEFAULT_TIMEOUT,
    ),
    ("version", "version=master", "master", true, DEFAULT_TIMEOUT),
    (
        "ref_and_version",
        "version=master&ref=v1.0.0",
        "v1.0.0",
        true,
        DEFAULT_TIMEOUT,
    ),
    (
        "empty_submodules",
        "version=master&submodules=",
        "master",
        true,
        DEFAULT_TIMEOUT,
    ),
    (
        "bad_submodules",
        "version=master&submodules=maybe",
        "master",
        true,
        DEFAULT_TIMEOUT,
    ),
    (
        "submodules_true",
        "version=master&submodules=true",
        "master",
        true,
        DEFAULT_TIMEOUT,
    ),
    (
        "submodules_false",
        "version=master&submodules=false",
        "master",
        false,
        DEFAULT_TIMEOUT,
    ),
    (
        "empty_timeout",
        "version=master&timeout=",
        "master",
        true,
        DEFAULT_TIMEOUT,
    ),
    (
        "bad_timeout",
        "version=master&timeout=jiffy",
        "master",
        true,
        DEFAULT_TIMEOUT,
    ),
    (
        "zero_timeout",
        "version=master&timeout=0",
        "master",
        true,
        DEFAULT_TIMEOUT,
    ),
    (
        "zero_unit_timeout",
        "version=master&timeout=0s",
        "master",
        true,
        DEFAULT_TIMEOUT,
    ),
    (
        "timeout",
        "version=master&timeout=61",
        "master",
        true,
        Duration::from_secs(61),
    ),
    (
        "timeout_unit",
        "version=master&timeout=1m1s",
        "master",
        true,
        Duration::from_secs(61),
    ),
    (
        "all",
        "version=master&submodules=false&timeout=1m1s",
        "master",
        false,
        Duration::from_secs(61),
    ),
];

/// Counts checks and remembers the failures, to report them all at once.
#[derive(Default)]
struct Tally {
    passed: usize,
    failed: Vec<String>,
}

impl Tally {
    fn check(&mut self, name: String, problem: Option<String>) {
        match problem {
            None => self.passed += 1,
            Some(p) => self.failed.push(format!("{name}: {p}")),
        }
    }

    fn finish(self, table: &str) {
        println!(
            "{table}: {} passed, {} failed",
            self.passed,
            self.failed.len()
        );
        for f in &self.failed {
            println!("  FAILED {f}");
        }
        assert!(
            self.failed.is_empty(),
            "{table}: {} failed",
            self.failed.len()
        );
        assert!(self.passed > 0);
    }
}

fn mismatch(what: &str, got: &str, want: &str) -> Option<String> {
    (got != want).then(|| format!("{what} {got:?}, want {want:?}"))
}

#[test]
fn permutations_of_host_repo_path_and_ref() {
    let scheme_authority = [
        ("gitHub.com/", "https://github.com/"),
        ("github.com:", "https://github.com/"),
        ("http://github.com/", "https://github.com/"),
        ("https://github.com/", "https://github.com/"),
        ("hTTps://github.com/", "https://github.com/"),
        (
            "https://git-codecommit.us-east-2.amazonaws.com/",
            "https://git-codecommit.us-east-2.amazonaws.com/",
        ),
        (
            "https://fabrikops2.visualstudio.com/",
            "https://fabrikops2.visualstudio.com/",
        ),
        ("ssh://git.example.com:7999/", "ssh://git.example.com:7999/"),
        ("git::https://gitlab.com/", "https://gitlab.com/"),
        ("git::http://git.example.com/", "http://git.example.com/"),
        ("git::https://git.example.com/", "https://git.example.com/"),
        ("git@github.com:", "git@github.com:"),
        ("git@github.com/", "git@github.com:"),
        ("git::git@github.com:", "git@github.com:"),
        ("org-12345@github.com:", "org-12345@github.com:"),
        ("org-12345@github.com/", "org-12345@github.com:"),
    ];
    let repo_paths = ["someOrg/someRepo", "kubernetes/website"];
    let path_names = ["README.md", "foo/krusty.txt", ""];
    let refs = ["group/version", "someBranch", "master", "v0.1.0", ""];
    let mut tally = Tally::default();
    for (raw, host) in scheme_authority {
        for repo_path in repo_paths {
            for path in path_names {
                for reference in refs {
                    let mut url = format!("{raw}{repo_path}");
                    if !path.is_empty() {
                        url = format!("{url}/{path}");
                    }
                    if !reference.is_empty() {
                        url = format!("{url}?ref={reference}");
                    }
                    let problem = match RepoSpec::parse(&url) {
                        Err(e) => Some(format!("error {e}")),
                        Ok(spec) => mismatch("host", &spec.host, host)
                            .or_else(|| mismatch("repo path", &spec.repo_path, repo_path))
                            .or_else(|| mismatch("path", &spec.kust_root_path, path))
                            .or_else(|| mismatch("ref", &spec.reference, reference)),
                    };
                    tally.check(url, problem);
                }
            }
        }
    }
    tally.finish("permutations");
}

#[test]
fn entries_that_are_not_repositories() {
    let mut tally = Tally::default();
    for (name, input, error) in ERRORS {
        let problem = match RepoSpec::parse(input) {
            Ok(spec) => Some(format!("parsed as {spec:?}")),
            Err(e) => (!e.to_string().contains(error))
                .then(|| format!("error {e:?}, want one containing {error:?}")),
        };
        tally.check(format!("{name} ({input})"), problem);
    }
    tally.finish("errors");
}

#[test]
fn smoke_cases_end_to_end() {
    let mut tally = Tally::default();
    for case in SMOKE {
        let problem = match RepoSpec::parse(case.input) {
            Err(e) => Some(format!("error {e}")),
            Ok(spec) => mismatch("clone URL", &spec.clone_url(), case.clone)
                .or_else(|| mismatch("host", &spec.host, case.host))
                .or_else(|| mismatch("repo path", &spec.repo_path, case.repo_path))
                .or_else(|| mismatch("path", &spec.kust_root_path, case.kust_root_path))
                .or_else(|| mismatch("ref", &spec.reference, case.reference))
                .or_else(|| mismatch("raw", &spec.raw, case.input)),
        };
        tally.check(format!("{} ({})", case.name, case.input), problem);
    }
    tally.finish("smoke");
}

#[test]
fn query_parameters() {
    let mut tally = Tally::default();
    for (name, query, reference, submodules, timeout) in QUERIES {
        let url = format!("https://github.com/org/repo?{query}");
        let problem = match RepoSpec::parse(&url) {
            Err(e) => Some(format!("error {e}")),
            Ok(spec) => mismatch("ref", &spec.reference, reference)
                .or_else(|| {
                    (spec.submodules != *submodules)
                        .then(|| format!("submodules {}", spec.submodules))
                })
                .or_else(|| {
                    (spec.timeout != *timeout).then(|| format!("timeout {:?}", spec.timeout))
                }),
        };
        tally.check(format!("{name} ({query})"), problem);
    }
    tally.finish("queries");
    let defaults = RepoSpec::parse("https://github.com/org/repo").unwrap();
    assert!(defaults.submodules);
    assert_eq!(defaults.timeout, DEFAULT_TIMEOUT);
}

/// kustomize's loader reads an `http` or `https` URL as a file first (`IsRemoteFile`);
/// nothing else is fetched over HTTP as a file.
#[test]
fn http_urls_are_files_first() {
    for url in [
        "https://example.com/a.yaml",
        "http://127.0.0.1:8080/file.yaml",
        "HTTPS://example.com/x",
        "https://github.com/org/repo//base?ref=v1",
    ] {
        assert!(is_http_url(url), "{url}");
    }
    for entry in [
        "github.com/org/repo",
        "git::https://example.com/org/repo",
        "ssh://git@example.com/org/repo",
        "file:///srv/repo",
        "base/deployment.yaml",
        "https://authority/org/repo/%-invalid-uri-so-not-parsable-by-net/url.Parse",
    ] {
        assert!(!is_http_url(entry), "{entry}");
    }
}
