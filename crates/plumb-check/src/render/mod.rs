//! The four ways a report is printed: `text` for people (rustc-style), `json` (`plumb.check/v1`,
//! schema in `docs/check.schema.json`), `sarif` (SARIF 2.1.0, for code-scanning services) and
//! `github` (workflow commands that GitHub Actions turns into annotations); [`statistics`] counts
//! the findings by code instead (`--statistics`).

pub mod github;
pub mod json;
pub mod sarif;
pub mod statistics;
pub mod text;

use std::path::Path;

/// A path as the outputs write it: `/`-separated.
fn slash_path(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}
