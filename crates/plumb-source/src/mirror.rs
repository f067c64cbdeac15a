//! `mirrors:`: URL prefixes rewritten before anything is fetched, for air-gapped sites (a
//! registry or git server inside the site) and for tests (a local server in place of GitHub).
//!
//! A rule's `from` is a URL prefix (`https://github.com/org`) or, without a scheme, a host and
//! path prefix (`ghcr.io/org`) that matches whatever the scheme (`oci://ghcr.io/org/app`). It
//! matches only at a boundary: the whole URL, or followed by `/`, `:`, `?` or `#`; so
//! `github.com/org` does not rewrite `github.com/organisation`. Rules come in layers (the
//! user's own, then the repository's): the first layer with a match decides, and in it the
//! longest matching `from` wins, between equal ones the first listed. `to` replaces the matched
//! text; a scheme-less `to` keeps the URL's scheme.

/// One rewrite rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror {
    pub from: String,
    pub to: String,
}

/// Layers of rewrite rules, in precedence order (a user's own first, then the repository's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mirrors {
    layers: Vec<Vec<Mirror>>,
}

impl Mirrors {
    /// One layer of rules.
    pub fn new(rules: Vec<Mirror>) -> Mirrors {
        Mirrors::default().then(rules)
    }

    /// These rules, then `rules` for the URLs none of these matches.
    pub fn then(mut self, rules: Vec<Mirror>) -> Mirrors {
        self.layers.push(rules);
        self
    }

    pub fn is_empty(&self) -> bool {
        self.layers.iter().all(Vec::is_empty)
    }

    /// `url` rewritten by the first layer that has a matching rule, or `None` when none does.
    pub fn rewrite(&self, url: &str) -> Option<String> {
        self.layers
            .iter()
            .find_map(|rules| Mirrors::longest(rules, url))
    }

    fn longest(rules: &[Mirror], url: &str) -> Option<String> {
        let mut best: Option<(usize, String)> = None;
        for rule in rules {
            let Some((len, rewritten)) = apply(rule, url) else {
                continue;
            };
            if best.as_ref().is_none_or(|(l, _)| len > *l) {
                best = Some((len, rewritten));
            }
        }
        best.map(|(_, url)| url)
    }
}

/// The length of `rule.from` matched and the rewritten URL.
fn apply(rule: &Mirror, url: &str) -> Option<(usize, String)> {
    let from = rule.from.trim_end_matches('/');
    if from.is_empty() {
        return None;
    }
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, url),
    };
    let (subject, keep_scheme) = if from.contains("://") {
        (url, None)
    } else {
        (rest, scheme)
    };
    let tail = subject.strip_prefix(from)?;
    if !(tail.is_empty() || tail.starts_with(['/', ':', '?', '#'])) {
        return None;
    }
    let to = rule.to.trim_end_matches('/');
    let rewritten = match keep_scheme {
        Some(scheme) if !to.contains("://") => format!("{scheme}://{to}{tail}"),
        _ => format!("{to}{tail}"),
    };
    Some((from.len(), rewritten))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mirrors(rules: &[(&str, &str)]) -> Mirrors {
        Mirrors::new(
            rules
                .iter()
                .map(|(from, to)| Mirror {
                    from: from.to_string(),
                    to: to.to_string(),
                })
                .collect(),
        )
    }

    #[test]
    fn a_scheme_less_prefix_keeps_the_scheme() {
        let m = mirrors(&[("ghcr.io/org", "registry.internal:5000/org")]);
        assert_eq!(
            m.rewrite("oci://ghcr.io/org/app").as_deref(),
            Some("oci://registry.internal:5000/org/app")
        );
        assert_eq!(
            m.rewrite("https://ghcr.io/org").as_deref(),
            Some("https://registry.internal:5000/org")
        );
        assert_eq!(m.rewrite("oci://ghcr.io/organisation/app"), None);
        assert_eq!(m.rewrite("oci://docker.io/org/app"), None);
    }

    #[test]
    fn a_url_prefix_replaces_the_scheme_too() {
        let m = mirrors(&[("https://github.com/", "git://127.0.0.1:9418/")]);
        assert_eq!(
            m.rewrite("https://github.com/fluxcd/flux2-multi-tenancy")
                .as_deref(),
            Some("git://127.0.0.1:9418/fluxcd/flux2-multi-tenancy")
        );
        assert_eq!(m.rewrite("ssh://git@github.com/fluxcd/x"), None);
    }

    #[test]
    fn the_longest_match_wins_then_the_first() {
        let m = mirrors(&[
            ("https://github.com", "https://a.example"),
            ("https://github.com/fluxcd", "https://b.example/flux"),
            ("https://github.com/fluxcd", "https://c.example"),
        ]);
        assert_eq!(
            m.rewrite("https://github.com/fluxcd/podinfo").as_deref(),
            Some("https://b.example/flux/podinfo")
        );
        assert_eq!(
            m.rewrite("https://github.com/stefanprodan/podinfo")
                .as_deref(),
            Some("https://a.example/stefanprodan/podinfo")
        );
        assert_eq!(
            m.rewrite("https://github.com?x").as_deref(),
            Some("https://a.example?x")
        );
    }

    #[test]
    fn an_earlier_layer_wins_over_a_longer_match_in_a_later_one() {
        let user = mirrors(&[("github.com", "git.site")]);
        let both = user.then(vec![Mirror {
            from: "https://github.com/fluxcd".into(),
            to: "https://repo.example".into(),
        }]);
        assert_eq!(
            both.rewrite("https://github.com/fluxcd/x").as_deref(),
            Some("https://git.site/fluxcd/x")
        );
        assert_eq!(both.rewrite("oci://ghcr.io/x"), None);
    }
}
