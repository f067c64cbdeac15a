//! `plumb check --statistics` (ruff's `--statistics`): instead of the findings, how many of
//! each code, with the rule's summary, most frequent first. plumb fixes nothing, so there is
//! no fixable column.
//!
//! ```text
//!     2  PIN001  a container image referenced by tag only, not by digest
//!     1  SEC001  a Secret with plaintext `data`/`stringData` committed in Git
//! ```

use crate::report::Report;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One code's count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statistic {
    pub code: &'static str,
    pub count: usize,
    /// The rule's one-line summary (`plumb explain --list`).
    pub summary: &'static str,
}

/// The codes of the report's findings with their counts: by count, most first, then by code.
pub fn statistics(report: &Report) -> Vec<Statistic> {
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    for f in &report.findings {
        *counts.entry(f.code).or_default() += 1;
    }
    let summaries: BTreeMap<&'static str, &'static str> = crate::rules::all()
        .iter()
        .map(|r| (r.code(), r.summary()))
        .collect();
    let mut out: Vec<Statistic> = counts
        .into_iter()
        .map(|(code, count)| Statistic {
            code,
            count,
            summary: summaries.get(code).copied().unwrap_or(""),
        })
        .collect();
    out.sort_by(|a, b| b.count.cmp(&a.count).then(a.code.cmp(b.code)));
    out
}

/// One line per code: the count right-aligned, the code, the summary. Nothing when there is
/// no finding.
pub fn text(report: &Report) -> String {
    let stats = statistics(report);
    let width = stats
        .iter()
        .map(|s| s.count.to_string().len())
        .max()
        .unwrap_or(0)
        .max(5);
    let code_width = stats.iter().map(|s| s.code.len()).max().unwrap_or(0);
    stats
        .iter()
        .map(|s| {
            format!(
                "{:>width$}  {:<code_width$}  {}\n",
                s.count, s.code, s.summary
            )
        })
        .collect()
}

/// `[{"code": "SUB002", "count": 2, "summary": "…"}, …]`, in the order of [`text`].
pub fn json(report: &Report) -> Value {
    Value::Array(
        statistics(report)
            .iter()
            .map(|s| json!({"code": s.code, "count": s.count, "summary": s.summary}))
            .collect(),
    )
}
