//! The glob patterns the hosts match names with: Gitea's branch protection rule names and
//! required status contexts, and the workflow `branches:` filters of both hosts.

/// Whether `text` matches `pattern`: `?` is one character, `*` any run of characters, `**`
/// any run including `separator`. With a separator, `*` and `?` never match it (branch names:
/// `release/*` matches `release/1.0`, not `release/1.0/rc`); without one, `*` matches anything.
pub(crate) fn matches(pattern: &str, text: &str, separator: Option<char>) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    match_from(&p, &t, separator)
}

fn match_from(p: &[char], t: &[char], sep: Option<char>) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some('*') => {
            let double = p.get(1) == Some(&'*');
            let rest = if double { &p[2..] } else { &p[1..] };
            let crosses = double || sep.is_none();
            // Try every length the star could take, shortest first.
            for i in 0..=t.len() {
                if match_from(rest, &t[i..], sep) {
                    return true;
                }
                if i < t.len() && !crosses && Some(t[i]) == sep {
                    return false;
                }
            }
            false
        }
        Some('?') => match t.first() {
            Some(&c) if Some(c) != sep => match_from(&p[1..], &t[1..], sep),
            _ => false,
        },
        Some(&c) => t.first() == Some(&c) && match_from(&p[1..], &t[1..], sep),
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn stars_questions_and_separators() {
        assert!(matches("main", "main", Some('/')));
        assert!(!matches("main", "mainline", Some('/')));
        assert!(matches("release/*", "release/1.0", Some('/')));
        assert!(!matches("release/*", "release/1.0/rc", Some('/')));
        assert!(matches("release/**", "release/1.0/rc", Some('/')));
        assert!(matches("b?ild", "build", None));
        assert!(matches("CI / * (push)", "CI / build (push)", None));
        assert!(matches("CI / *", "CI / a/b (push)", None));
        assert!(!matches("CI / test (push)", "CI / build (push)", None));
        assert!(matches("*", "", None));
        assert!(!matches("?", "", None));
    }
}
