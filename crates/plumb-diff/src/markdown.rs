//! One review comment for GitHub, Gitea or Forgejo: the summary table, the danger notes, the
//! images and charts that change, then one collapsible `<details>` block per producer with a
//! ```` ```diff ```` block, cut to a size limit.
//!
//! When the whole comment is larger than the limit, the largest blocks are cut first: every
//! block is shortened to the same number of bytes, the largest cap that fits, so small blocks
//! stay whole. If that is not enough, blocks are left out from the last one up, then rows of
//! the tables. Whatever is cut, every `<details>` and code fence is closed and the comment says
//! what was left out and how to see it all.

use crate::{Diff, ProducerDiff, Revision};

/// GitHub refuses comments over 65,536 characters; this leaves room for what an Action adds.
pub const DEFAULT_MAX_BYTES: usize = 60_000;

/// The smallest limit that always fits the title and the note saying what was cut.
pub const MIN_MAX_BYTES: usize = 2_000;

/// A producer's collapsible block.
struct Block {
    summary: String,
    /// The fence's language: `diff`, or `text` for errors.
    language: &'static str,
    lines: Vec<String>,
}

impl Block {
    fn render(&self, cap: Option<usize>) -> (String, usize) {
        let (body, cut) = cut_lines(&self.lines, cap);
        let fence = fence_for(&body);
        let mut out = format!(
            "<details><summary>{}</summary>\n\n{fence}{}\n",
            escape(&self.summary),
            self.language
        );
        out.push_str(&body);
        if cut > 0 {
            out.push_str(&format!("… {cut} more lines cut to fit the comment\n"));
        }
        out.push_str(&fence);
        out.push_str("\n\n</details>\n\n");
        (out, cut)
    }

    fn size(&self) -> usize {
        self.lines.iter().map(|l| l.len() + 1).sum()
    }
}

/// The lines that fit in `cap` bytes (all without a cap), joined, and how many were cut. A
/// line longer than the whole cap is shortened at a character boundary.
fn cut_lines(lines: &[String], cap: Option<usize>) -> (String, usize) {
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        if let Some(cap) = cap {
            if out.len() + line.len() + 1 > cap {
                if out.is_empty() && cap > 0 {
                    let mut end = cap.saturating_sub(4).min(line.len());
                    while !line.is_char_boundary(end) {
                        end -= 1;
                    }
                    out.push_str(&line[..end]);
                    out.push_str("…\n");
                }
                return (out, lines.len() - i);
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    (out, 0)
}

/// A backtick fence longer than any run of backticks in `body`.
fn fence_for(body: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

/// Text for HTML (a `<summary>`) and for table cells.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('|', "\\|")
}

/// Inline code that survives backticks in `s`.
fn code(s: &str) -> String {
    if s.contains('`') {
        format!("`` {} ``", s.replace('|', "\\|"))
    } else {
        format!("`{}`", s.replace('|', "\\|"))
    }
}

/// The comment for `diff`, at most `max_bytes` long.
pub fn render(diff: &Diff, base: &Revision, head: &Revision, max_bytes: usize) -> String {
    let max_bytes = max_bytes.max(MIN_MAX_BYTES);
    let title = title(diff, base, head);
    let tables = tables(diff);
    let blocks = blocks(diff);
    let footer = footer(diff);

    let compose = |rows: Option<usize>, shown: usize, cap: Option<usize>| -> String {
        let mut out = title.clone();
        let mut left_rows = 0;
        for (heading, rows_of) in &tables {
            let keep = rows.map_or(rows_of.len(), |r| r.min(rows_of.len()));
            left_rows += rows_of.len() - keep;
            out.push_str(heading);
            for row in &rows_of[..keep] {
                out.push_str(row);
            }
            if keep < rows_of.len() {
                out.push_str(&format!(
                    "\n_… {} more rows cut to fit the comment._\n",
                    rows_of.len() - keep
                ));
            }
            out.push('\n');
        }
        let mut cut_lines_total = 0;
        let mut rendered = String::new();
        for b in &blocks[..shown] {
            let (text, cut) = b.render(cap);
            cut_lines_total += cut;
            rendered.push_str(&text);
        }
        let left_blocks = blocks.len() - shown;
        if cut_lines_total > 0 || left_blocks > 0 || left_rows > 0 {
            let mut what = Vec::new();
            if cut_lines_total > 0 {
                what.push(format!("{cut_lines_total} diff lines"));
            }
            if left_blocks > 0 {
                what.push(format!("the diffs of {left_blocks} producers"));
            }
            if left_rows > 0 {
                what.push(format!("{left_rows} table rows"));
            }
            out.push_str(&format!(
                "> [!NOTE]\n> Cut to {max_bytes} bytes: {} left out, largest diffs first. Run `plumb diff` (or `plumb diff -o text` in the job log) to see it all.\n\n",
                what.join(", ")
            ));
        }
        out.push_str(&rendered);
        out.push_str(&footer);
        out
    };

    let full = compose(None, blocks.len(), None);
    if full.len() <= max_bytes {
        return full;
    }
    // The largest cap on every block's body that fits (binary search: size grows with cap).
    let largest = blocks.iter().map(Block::size).max().unwrap_or(0);
    let fits = |cap: usize| compose(None, blocks.len(), Some(cap)).len() <= max_bytes;
    if fits(0) {
        let (mut lo, mut hi) = (0, largest);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        return compose(None, blocks.len(), Some(lo));
    }
    // Blocks left out from the end.
    for shown in (0..blocks.len()).rev() {
        let text = compose(None, shown, Some(0));
        if text.len() <= max_bytes {
            return text;
        }
    }
    // Table rows.
    let most_rows = tables.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
    for rows in (0..most_rows).rev() {
        let text = compose(Some(rows), 0, Some(0));
        if text.len() <= max_bytes {
            return text;
        }
    }
    // Only the title and the note: the limit is at least MIN_MAX_BYTES.
    let mut text = compose(Some(0), 0, Some(0));
    if text.len() > max_bytes {
        text = format!(
            "### plumb diff\n\n> [!NOTE]\n> Too large for {max_bytes} bytes. Run `plumb diff` to see it.\n"
        );
    }
    text
}

fn title(diff: &Diff, base: &Revision, head: &Revision) -> String {
    let c = diff.counts();
    let mut out = String::from("### plumb diff\n\n");
    out.push_str(&format!(
        "{} → {}\n\n",
        code(&base.describe()),
        code(&head.describe())
    ));
    if !diff.has_changes() {
        out.push_str("No change to what the clusters apply.\n\n");
        return out;
    }
    out.push_str(&format!(
        "**{}** added · **{}** changed · **{}** removed · **{}** moved",
        c.added, c.changed, c.removed, c.moved
    ));
    if !diff.dangers.is_empty() {
        out.push_str(&format!(
            " · **{}**",
            crate::plural(diff.dangers.len(), "danger note")
        ));
    }
    let uncompared = diff.uncompared();
    if uncompared > 0 {
        out.push_str(&format!(
            " · {} not compared (failing, not built or not rendered)",
            crate::plural(uncompared, "producer")
        ));
    }
    out.push_str("\n\n");
    out
}

/// The summary, danger, image and chart tables: (heading with header row, rows).
fn tables(diff: &Diff) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    if !diff.dangers.is_empty() {
        let rows = diff
            .dangers
            .iter()
            .map(|d| {
                format!(
                    "| ⚠️ {} | {} | {} | {} |\n",
                    code(d.code),
                    code(&d.entry),
                    escape(&d.object.to_string()),
                    escape(&d.message)
                )
            })
            .collect();
        out.push((
            "#### Danger\n\n| code | cluster | object | why |\n|---|---|---|---|\n".to_string(),
            rows,
        ));
    }
    let mut rows = Vec::new();
    for c in &diff.clusters {
        for p in c.producers.iter().filter(|p| p.is_interesting()) {
            let n = p.counts();
            rows.push(format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                code(&c.entry),
                escape(&p.id.to_string()),
                n.added,
                n.changed,
                n.removed,
                n.moved,
                escape(&note_of(p))
            ));
        }
    }
    if !rows.is_empty() {
        out.push((
            "#### Changes\n\n| cluster | producer | added | changed | removed | moved in | note |\n|---|---|--:|--:|--:|--:|---|\n"
                .to_string(),
            rows,
        ));
    }
    if !diff.images.is_empty() {
        let rows = diff
            .images
            .iter()
            .map(|i| {
                format!(
                    "| {} | {} | {}{} | {} |\n",
                    code(&i.repository),
                    code(&i.from),
                    code(&i.to),
                    if i.major { " ⚠️ major" } else { "" },
                    i.objects.len()
                )
            })
            .collect();
        out.push((
            "#### Images\n\n| image | from | to | objects |\n|---|---|---|--:|\n".to_string(),
            rows,
        ));
    }
    if !diff.charts.is_empty() {
        let rows = diff
            .charts
            .iter()
            .map(|c| {
                format!(
                    "| {} | {} | {} | {} | {}{} |\n",
                    code(&c.entry),
                    escape(&c.release.to_string()),
                    code(&c.chart),
                    code(&c.from),
                    code(&c.to),
                    if c.major { " ⚠️ major" } else { "" }
                )
            })
            .collect();
        out.push((
            "#### Charts\n\n| cluster | release | chart | from | to |\n|---|---|---|---|---|\n"
                .to_string(),
            rows,
        ));
    }
    out
}

/// The table's note for a producer: new, gone, fails, not built.
fn note_of(p: &ProducerDiff) -> String {
    let text = p.status_text();
    text.split(", ")
        .filter(|part| !part.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn blocks(diff: &Diff) -> Vec<Block> {
    let mut out = Vec::new();
    for c in &diff.clusters {
        for p in c.producers.iter().filter(|p| p.is_interesting()) {
            let summary = format!("{} · {}: {}", c.entry, p.title, p.status_text());
            if !p.compared() {
                out.push(Block {
                    summary,
                    language: "text",
                    lines: p
                        .unknown_text()
                        .iter()
                        .flat_map(|t| t.lines().map(str::to_string).collect::<Vec<_>>())
                        .collect(),
                });
                continue;
            }
            if p.changes.is_empty() {
                continue;
            }
            out.push(Block {
                summary,
                language: "diff",
                lines: crate::text::change_lines(p),
            });
        }
    }
    out
}

fn footer(diff: &Diff) -> String {
    match diff.noise_line() {
        Some(line) => format!("<sub>{}</sub>\n", escape(&line)),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_outgrow_backticks_in_the_body() {
        assert_eq!(fence_for("a\n"), "```");
        assert_eq!(fence_for("```yaml\n"), "````");
    }

    #[test]
    fn a_cut_keeps_whole_lines_and_counts_the_rest() {
        let lines: Vec<String> = (0..10).map(|i| format!("line {i}")).collect();
        let (body, cut) = cut_lines(&lines, Some(14));
        assert_eq!(body, "line 0\nline 1\n");
        assert_eq!(cut, 8);
        let (body, cut) = cut_lines(&["x".repeat(100)], Some(10));
        assert_eq!(body, "xxxxxx…\n");
        assert_eq!(cut, 1);
    }
}
