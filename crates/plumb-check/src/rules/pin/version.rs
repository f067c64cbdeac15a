//! Versions and references: which are exact and which float.

use regex::Regex;
use std::sync::OnceLock;

/// An exact semantic version, `v` prefix allowed: `1.2.3`, `v1.17.2`, `1.0.0-rc.1+build.5`.
pub(crate) fn is_exact_version(text: &str) -> bool {
    static EXACT: OnceLock<Regex> = OnceLock::new();
    EXACT
        .get_or_init(|| {
            Regex::new(r"^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
                .expect("a valid regex")
        })
        .is_match(text.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_and_floating() {
        for exact in ["1.2.3", "v1.17.2", "6.8.0", "1.0.0-rc.1", "2.0.0+build.5"] {
            assert!(is_exact_version(exact), "{exact}");
        }
        for floating in [
            "latest",
            "1.x",
            "1.2",
            "v1",
            "*",
            ">=1.0.0",
            "^1.2.3",
            "~1.2.3",
            "1.2.3 || 1.3.0",
            "",
        ] {
            assert!(!is_exact_version(floating), "{floating}");
        }
    }
}
