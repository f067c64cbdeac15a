//! The ref of a GitRepository (`spec.ref`) and how source-controller picks what to check out from it.
//!
//! The fields follow the GitRepository API: several may be set, and the later ones in the order
//! branch, tag, semver, name, commit take precedence. Nothing set means branch `master`.

use std::fmt;

/// The branch a GitRepository without `spec.ref` (or with an empty one) checks out.
pub const DEFAULT_BRANCH: &str = "master";

/// `spec.ref` of a GitRepository, field for field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct GitRef {
    pub branch: Option<String>,
    pub tag: Option<String>,
    pub semver: Option<String>,
    pub name: Option<String>,
    pub commit: Option<String>,
}

impl GitRef {
    pub fn branch(branch: impl Into<String>) -> Self {
        GitRef {
            branch: Some(branch.into()),
            ..GitRef::default()
        }
    }

    pub fn tag(tag: impl Into<String>) -> Self {
        GitRef {
            tag: Some(tag.into()),
            ..GitRef::default()
        }
    }

    pub fn semver(range: impl Into<String>) -> Self {
        GitRef {
            semver: Some(range.into()),
            ..GitRef::default()
        }
    }

    pub fn name(name: impl Into<String>) -> Self {
        GitRef {
            name: Some(name.into()),
            ..GitRef::default()
        }
    }

    pub fn commit(sha: impl Into<String>) -> Self {
        GitRef {
            commit: Some(sha.into()),
            ..GitRef::default()
        }
    }

    /// What source-controller checks out for this ref: the field with the highest precedence wins.
    pub(crate) fn checkout(&self) -> Checkout {
        fn set(field: &Option<String>) -> Option<&str> {
            field.as_deref().filter(|s| !s.is_empty())
        }
        if let Some(sha) = set(&self.commit) {
            Checkout::Commit {
                sha: sha.to_owned(),
                branch: set(&self.branch).map(str::to_owned),
                name: set(&self.name).map(str::to_owned),
            }
        } else if let Some(name) = set(&self.name) {
            Checkout::Name(name.to_owned())
        } else if let Some(range) = set(&self.semver) {
            Checkout::Semver(range.to_owned())
        } else if let Some(tag) = set(&self.tag) {
            Checkout::Tag(tag.to_owned())
        } else {
            Checkout::Branch(set(&self.branch).unwrap_or(DEFAULT_BRANCH).to_owned())
        }
    }
}

impl fmt::Display for GitRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.checkout().fmt(f)
    }
}

/// The one thing to check out, after precedence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Checkout {
    Branch(String),
    Tag(String),
    Semver(String),
    Name(String),
    /// A commit, optionally looked for in one branch only; `name` only changes the revision string.
    Commit {
        sha: String,
        branch: Option<String>,
        name: Option<String>,
    },
}

impl Checkout {
    /// A stable key naming this ref in the cache's record of resolutions.
    pub(crate) fn cache_key(&self) -> String {
        match self {
            Checkout::Branch(b) => format!("branch\0{b}"),
            Checkout::Tag(t) => format!("tag\0{t}"),
            Checkout::Semver(s) => format!("semver\0{s}"),
            Checkout::Name(n) => format!("name\0{n}"),
            Checkout::Commit { sha, .. } => format!("commit\0{sha}"),
        }
    }

    /// The artifact revision source-controller reports for `commit` checked out through this ref
    /// (`main@sha1:…`, `v1.2.0@sha1:…`, `refs/pull/1/head@sha1:…`, `sha1:…`).
    ///
    /// `resolved_tag` is the tag a semver range selected.
    pub(crate) fn revision(&self, commit: &str, resolved_tag: Option<&str>) -> String {
        let prefix = match self {
            Checkout::Branch(b) => Some(b.as_str()),
            Checkout::Tag(t) => Some(t.as_str()),
            Checkout::Semver(_) => resolved_tag,
            Checkout::Name(n) => Some(n.as_str()),
            Checkout::Commit { branch, name, .. } => name.as_deref().or(branch.as_deref()),
        };
        match prefix {
            Some(p) => format!("{p}@sha1:{commit}"),
            None => format!("sha1:{commit}"),
        }
    }
}

impl fmt::Display for Checkout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Checkout::Branch(b) => write!(f, "branch {b:?}"),
            Checkout::Tag(t) => write!(f, "tag {t:?}"),
            Checkout::Semver(s) => write!(f, "semver {s:?}"),
            Checkout::Name(n) => write!(f, "ref name {n:?}"),
            Checkout::Commit {
                sha,
                branch: Some(b),
                ..
            } => write!(f, "commit {sha} in branch {b:?}"),
            Checkout::Commit { sha, .. } => write!(f, "commit {sha}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn empty_ref_is_branch_master() {
        assert_eq!(
            GitRef::default().checkout(),
            Checkout::Branch("master".into())
        );
        assert_eq!(
            GitRef::branch("").checkout(),
            Checkout::Branch("master".into())
        );
    }

    #[test]
    fn later_fields_take_precedence() {
        let mut r = GitRef::branch("main");
        r.tag = Some("v1".into());
        assert_eq!(r.checkout(), Checkout::Tag("v1".into()));
        r.semver = Some(">=1".into());
        assert_eq!(r.checkout(), Checkout::Semver(">=1".into()));
        r.name = Some("refs/heads/x".into());
        assert_eq!(r.checkout(), Checkout::Name("refs/heads/x".into()));
        r.commit = Some(SHA.into());
        assert!(matches!(r.checkout(), Checkout::Commit { .. }));
    }

    #[test]
    fn revisions_as_source_controller_writes_them() {
        assert_eq!(
            GitRef::branch("main").checkout().revision(SHA, None),
            format!("main@sha1:{SHA}")
        );
        assert_eq!(
            GitRef::branch("feature/x").checkout().revision(SHA, None),
            format!("feature/x@sha1:{SHA}")
        );
        assert_eq!(
            GitRef::semver("1.x")
                .checkout()
                .revision(SHA, Some("v1.2.0")),
            format!("v1.2.0@sha1:{SHA}")
        );
        assert_eq!(
            GitRef::name("refs/pull/1/head")
                .checkout()
                .revision(SHA, None),
            format!("refs/pull/1/head@sha1:{SHA}")
        );
        assert_eq!(
            GitRef::commit(SHA).checkout().revision(SHA, None),
            format!("sha1:{SHA}")
        );
        let mut pinned = GitRef::commit(SHA);
        pinned.branch = Some("main".into());
        assert_eq!(
            pinned.checkout().revision(SHA, None),
            format!("main@sha1:{SHA}")
        );
    }
}
