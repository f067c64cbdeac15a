//! Which rules run: codes and prefixes from `.plumb.yaml`'s `rules:` and the command line,
//! ruff's way. The command line's `--select` replaces the file's `select`, `--ignore` adds to
//! its `ignore`, and between a selecting and an ignoring pattern the longer (more specific) one
//! wins: `ignore: [SUB]` with `select: [SUB002]` keeps SUB002.

use crate::config::RuleSelection;

/// The pattern that selects every rule.
pub const ALL: &str = "ALL";

/// Every code a finding can have, sorted.
pub fn known_codes() -> Vec<&'static str> {
    let mut codes: Vec<&'static str> = crate::rules::all().iter().map(|r| r.code()).collect();
    codes.extend(crate::explain::RULE_DOCS.iter().map(|d| d.0));
    codes.sort_unstable();
    codes.dedup();
    codes
}

/// Whether `pattern` (a code, a prefix such as `SUB`, or `ALL`) covers `code`.
pub fn matches(pattern: &str, code: &str) -> bool {
    pattern == ALL || code.starts_with(pattern)
}

/// An error message unless `pattern` covers at least one known code.
pub fn check_code(pattern: &str) -> Result<(), String> {
    let codes = known_codes();
    if codes.iter().any(|c| matches(pattern, c)) {
        return Ok(());
    }
    let hint = plumb_kustomize::kustomization::closest(pattern, &codes)
        .map(|c| format!("; did you mean `{c}`?"))
        .unwrap_or_else(|| "; `plumb explain --list` lists every code".to_string());
    Err(format!("no rule has the code `{pattern}`{hint}"))
}

/// The effective selection: the configuration's, with the command line's on top.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    select: Vec<String>,
    ignore: Vec<String>,
}

impl Selection {
    pub fn new(config: &RuleSelection, cli_select: &[String], cli_ignore: &[String]) -> Selection {
        let select = if cli_select.is_empty() {
            config.select.clone()
        } else {
            cli_select.to_vec()
        };
        let mut ignore = config.ignore.clone();
        ignore.extend(cli_ignore.iter().cloned());
        Selection { select, ignore }
    }

    /// Whether findings of `code` are reported.
    pub fn enabled(&self, code: &str) -> bool {
        let specificity = |patterns: &[String]| {
            patterns
                .iter()
                .filter(|p| matches(p, code))
                .map(|p| if p == ALL { 0 } else { p.len() })
                .max()
        };
        let selected = if self.select.is_empty() {
            Some(0)
        } else {
            specificity(&self.select)
        };
        match (selected, specificity(&self.ignore)) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(s), Some(i)) => s > i,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(select: &[&str], ignore: &[&str]) -> Selection {
        let s = |v: &[&str]| v.iter().map(|c| c.to_string()).collect::<Vec<_>>();
        Selection::new(&RuleSelection::default(), &s(select), &s(ignore))
    }

    #[test]
    fn the_more_specific_pattern_wins() {
        assert!(sel(&[], &[]).enabled("SUB001"));
        assert!(!sel(&[], &["SUB"]).enabled("SUB001"));
        assert!(sel(&["SUB002"], &["SUB"]).enabled("SUB002"));
        assert!(!sel(&["SUB"], &["SUB002"]).enabled("SUB002"));
        assert!(!sel(&["PIN"], &[]).enabled("SUB001"));
        assert!(sel(&["ALL"], &[]).enabled("LCK001"));
        assert!(!sel(&["ALL"], &["ALL"]).enabled("LCK001"));
    }

    #[test]
    fn the_command_line_replaces_select_and_adds_to_ignore() {
        let config = RuleSelection {
            select: vec!["SUB".into()],
            ignore: vec!["SUB002".into()],
            ..RuleSelection::default()
        };
        let s = Selection::new(&config, &["PIN".into()], &["PIN003".into()]);
        assert!(!s.enabled("SUB001"));
        assert!(s.enabled("PIN001"));
        assert!(!s.enabled("PIN003"));
    }

    #[test]
    fn unknown_codes_are_refused() {
        assert!(check_code("BLD").is_ok());
        assert!(check_code("ALL").is_ok());
        assert_eq!(
            check_code("BLD01X").unwrap_err(),
            "no rule has the code `BLD01X`; did you mean `BLD001`?"
        );
    }
}
