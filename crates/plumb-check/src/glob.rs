//! Path globs for `rules.perPathIgnores`: `*` and `?` within one path segment, `**` across
//! segments; a pattern also covers everything under a directory it matches.

/// Whether `pattern` matches `path` (`/`-separated, relative to the repository) or one of its
/// parent directories.
pub fn matches_path(pattern: &str, path: &str) -> bool {
    let pattern = pattern.trim_start_matches("./").trim_end_matches('/');
    let p: Vec<char> = pattern.chars().collect();
    let mut prefix = path;
    loop {
        if glob(&p, &prefix.chars().collect::<Vec<_>>()) {
            return true;
        }
        match prefix.rfind('/') {
            Some(i) => prefix = &prefix[..i],
            None => return false,
        }
    }
}

fn glob(p: &[char], s: &[char]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some('*') if p.get(1) == Some(&'*') => {
            // `**/` also matches no directory at all.
            let rest = &p[2..];
            if let Some(after_slash) = rest.strip_prefix(&['/']) {
                if glob(after_slash, s) {
                    return true;
                }
            }
            (0..=s.len()).any(|i| glob(rest, &s[i..]))
        }
        Some('*') => {
            let rest = &p[1..];
            let mut i = 0;
            loop {
                if glob(rest, &s[i..]) {
                    return true;
                }
                if i == s.len() || s[i] == '/' {
                    return false;
                }
                i += 1;
            }
        }
        Some('?') => s.first().is_some_and(|c| *c != '/') && glob(&p[1..], &s[1..]),
        Some(c) => s.first() == Some(c) && glob(&p[1..], &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::matches_path;

    #[test]
    fn globs() {
        assert!(matches_path("apps/legacy/*", "apps/legacy/a.yaml"));
        assert!(!matches_path("apps/*.yaml", "apps/legacy/a.yaml"));
        assert!(matches_path("apps/**/a.yaml", "apps/legacy/x/a.yaml"));
        assert!(matches_path("apps/**/a.yaml", "apps/a.yaml"));
        assert!(matches_path("apps/legacy", "apps/legacy/x/a.yaml"));
        assert!(matches_path("./apps/legacy/", "apps/legacy/a.yaml"));
        assert!(matches_path("**/*.sops.yaml", "apps/s.sops.yaml"));
        assert!(!matches_path("apps/leg", "apps/legacy/a.yaml"));
        assert!(matches_path("a?c", "abc"));
    }
}
