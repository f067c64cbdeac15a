//! Semver ranges as source-controller reads them (Masterminds/semver constraints) on top of the
//! `semver` crate, and the tag a range selects.
//!
//! The syntaxes differ: Masterminds separates ANDed terms by spaces or commas, ORs with `||`,
//! allows hyphen ranges `1.2 - 1.4`, `!=`, `~>` and a `v` prefix, and a bare version means `=`,
//! where Cargo's bare version means `^`.

use semver::{Version, VersionReq};

/// A parsed range: any alternative may match.
#[derive(Debug)]
pub(crate) struct Range {
    alternatives: Vec<Alternative>,
}

#[derive(Debug)]
struct Alternative {
    require: VersionReq,
    exclude: Vec<VersionReq>,
    /// Masterminds (v3.4) considers pre-releases of any version once one term of the
    /// constraint names a pre-release (`>=1.0.0-0`); Cargo only those of that term's version.
    include_pre: bool,
}

impl Alternative {
    fn matches(&self, version: &Version) -> bool {
        let allowed = if self.include_pre && !version.pre.is_empty() {
            // A term of the version's own numbers with the lowest pre-release holds for it
            // and lifts Cargo's same-numbers rule.
            let mut require = self.require.clone();
            let lift = format!(">={}.{}.{}-0", version.major, version.minor, version.patch);
            match semver::Comparator::parse(&lift) {
                Ok(c) => require.comparators.push(c),
                Err(_) => return false,
            }
            require.matches(version)
        } else {
            self.require.matches(version)
        };
        allowed && !self.exclude.iter().any(|e| e.matches(version))
    }
}

impl Range {
    pub(crate) fn parse(text: &str) -> Result<Range, String> {
        let alternatives = text
            .split("||")
            .map(parse_alternative)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Range { alternatives })
    }

    pub(crate) fn matches(&self, version: &Version) -> bool {
        self.alternatives.iter().any(|a| a.matches(version))
    }
}

/// A tag's version as fluxcd/pkg `version.ParseVersion` reads it: strict semver, optional `v`.
pub(crate) fn tag_version(tag: &str) -> Option<Version> {
    Version::parse(tag.strip_prefix('v').unwrap_or(tag)).ok()
}

/// The tag with the highest version in `range`, among `tags`.
///
/// Versions equal in precedence (differing in build metadata only) are ordered by tag name;
/// source-controller orders them by the tagged commit's time, which the ref listing this runs
/// on does not carry.
pub(crate) fn highest_matching<'a>(
    range: &Range,
    tags: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    tags.into_iter()
        .filter_map(|t| tag_version(t).map(|v| (v, t)))
        .filter(|(v, _)| range.matches(v))
        .max_by(|(a, ta), (b, tb)| a.cmp_precedence(b).then_with(|| ta.cmp(tb)))
        .map(|(_, t)| t)
}

fn parse_alternative(text: &str) -> Result<Alternative, String> {
    let tokens = join_operators(text.replace(',', " ").split_whitespace());
    let mut require = Vec::new();
    let mut exclude = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens.get(i + 1).map(String::as_str) == Some("-") {
            let upper = tokens
                .get(i + 2)
                .ok_or_else(|| format!("hyphen range without upper bound in {text:?}"))?;
            require.push(format!(">={}", strip_v(&tokens[i])));
            require.push(format!("<={}", strip_v(upper)));
            i += 3;
            continue;
        }
        let term = &tokens[i];
        if let Some(version) = term.strip_prefix("!=") {
            exclude.push(req(&format!("={}", strip_v(version)))?);
        } else {
            require.push(translate_term(term));
        }
        i += 1;
    }
    let require = if require.is_empty() {
        VersionReq::STAR
    } else {
        req(&require.join(", "))?
    };
    let include_pre = require.comparators.iter().any(|c| !c.pre.is_empty());
    Ok(Alternative {
        require,
        exclude,
        include_pre,
    })
}

/// Glue an operator written apart from its version (`>= 1.2`) to it.
fn join_operators<'a>(words: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut pending = String::new();
    for word in words {
        if word != "-" && word.chars().all(|c| "<>=!~^".contains(c)) {
            pending.push_str(word);
        } else {
            out.push(format!("{pending}{word}"));
            pending.clear();
        }
    }
    if !pending.is_empty() {
        out.push(pending);
    }
    out
}

fn translate_term(term: &str) -> String {
    let op_len = term
        .find(|c: char| !"<>=~^".contains(c))
        .unwrap_or(term.len());
    let (op, version) = term.split_at(op_len);
    let op = match op {
        "" => "=",
        "~>" => "~",
        other => other,
    };
    let version = strip_v(version);
    if version == "*" || version == "x" || version == "X" {
        return "*".to_owned();
    }
    format!("{op}{version}")
}

fn strip_v(version: &str) -> &str {
    version.strip_prefix('v').unwrap_or(version)
}

fn req(text: &str) -> Result<VersionReq, String> {
    VersionReq::parse(text).map_err(|e| format!("{text:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(range: &str, version: &str) -> bool {
        Range::parse(range)
            .unwrap()
            .matches(&Version::parse(version).unwrap())
    }

    #[test]
    fn bare_version_is_exact_not_caret() {
        assert!(m("1.2.3", "1.2.3"));
        assert!(!m("1.2.3", "1.2.4"));
    }

    #[test]
    fn masterminds_syntax() {
        assert!(m(">= 1.2, < 2", "1.9.0"));
        assert!(m(">=1.2 <2", "1.9.0"));
        assert!(!m(">=1.2 <2", "2.0.0"));
        assert!(m("~> 1.2", "1.2.9"));
        assert!(!m("~1.2", "1.3.0"));
        assert!(m("^1.2", "1.9.0"));
        assert!(m("1.2 - 1.4.5", "1.4.5"));
        assert!(!m("1.2 - 1.4.5", "1.4.6"));
        assert!(m("<1 || >=3", "3.1.0"));
        assert!(!m("<1 || >=3", "2.0.0"));
        assert!(m("1.x", "1.7.0"));
        assert!(m("*", "9.0.0"));
        assert!(m(">=1, != 1.5.0", "1.4.0"));
        assert!(!m(">=1, != 1.5.0", "1.5.0"));
        assert!(m(">=v1.0.0", "1.0.0"));
    }

    #[test]
    fn a_pre_release_in_the_constraint_admits_every_pre_release() {
        assert!(!m(">=1.0.0", "1.3.0-rc.1"));
        assert!(m(">=1.0.0-0", "1.3.0-rc.1"));
        assert!(m(">=1.0.0-0 <2.0.0", "1.3.0-rc.1"));
        // Precedence: 2.0.0-rc.1 comes before 2.0.0.
        assert!(m(">=1.0.0-0 <2.0.0", "2.0.0-rc.1"));
        assert!(!m(">=1.0.0-0 <2.0.0", "2.0.1-rc.1"));
        assert!(m(">1.0.0-beta.1 <2", "1.5.0-alpha"));
        assert!(m(">=0.0.0-1", "3.0.0-rc2"));
        assert!(!m(">=1.0.0-0, != 1.3.0-rc.1", "1.3.0-rc.1"));
    }

    #[test]
    fn highest_matching_tag_wins() {
        let tags = [
            "v1.0.0",
            "v1.2.0",
            "v2.0.0",
            "not-a-version",
            "1.1",
            "v1.3.0-rc.1",
        ];
        let range = Range::parse(">=1.0.0 <2.0.0").unwrap();
        assert_eq!(highest_matching(&range, tags), Some("v1.2.0"));
        let none = Range::parse(">=3").unwrap();
        assert_eq!(highest_matching(&none, tags), None);
    }
}
