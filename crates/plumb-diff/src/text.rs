//! The diff for a terminal: the summary, the danger notes, then each producer's diffs,
//! coloured when asked.

use crate::{Action, Diff, ProducerDiff, Revision};

/// The lines of a producer's changes: each change's unified diff, a moved object's origin
/// first.
pub fn change_lines(p: &ProducerDiff) -> Vec<String> {
    let mut out = Vec::new();
    for c in &p.changes {
        if c.action == Action::Moved {
            let from = c
                .moved_from
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            out.push(format!("# {} moved here from {from}", c.object));
        }
        out.extend(c.diff.lines().map(str::to_string));
    }
    out
}

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";
const YELLOW: &str = "\x1b[33m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// The whole text; `show_noise` lists the objects left out as noise.
pub fn render(
    diff: &Diff,
    base: &Revision,
    head: &Revision,
    color: bool,
    show_noise: bool,
) -> String {
    let paint = |style: &str, s: &str| {
        if color {
            format!("{style}{s}{RESET}")
        } else {
            s.to_string()
        }
    };
    let mut out = format!("plumb diff {} → {}\n", base.describe(), head.describe());
    if !diff.has_changes() {
        out.push_str("no change to what the clusters apply\n");
    }
    for c in &diff.clusters {
        let shown: Vec<&ProducerDiff> = c.producers.iter().filter(|p| p.is_interesting()).collect();
        if shown.is_empty() {
            continue;
        }
        let presence = match (c.in_base, c.in_head) {
            (false, true) => " (new cluster)",
            (true, false) => " (cluster gone)",
            _ => "",
        };
        out.push_str(&format!("\n{}{presence}\n", paint(BOLD, &c.entry)));
        for p in shown {
            out.push_str(&format!("  {}: {}\n", p.id, p.status_text()));
        }
    }
    if !diff.images.is_empty() {
        out.push_str(&format!("\n{}\n", paint(BOLD, "images")));
        for i in &diff.images {
            let major = if i.major {
                format!(" {}", paint(YELLOW, "(major)"))
            } else {
                String::new()
            };
            out.push_str(&format!(
                "  {}: {} → {}{major} ({})\n",
                i.repository,
                i.from,
                i.to,
                crate::plural(i.objects.len(), "object")
            ));
        }
    }
    if !diff.charts.is_empty() {
        out.push_str(&format!("\n{}\n", paint(BOLD, "charts")));
        for c in &diff.charts {
            let major = if c.major {
                format!(" {}", paint(YELLOW, "(major)"))
            } else {
                String::new()
            };
            out.push_str(&format!(
                "  {} {}: {} {} → {}{major}\n",
                c.entry, c.release, c.chart, c.from, c.to
            ));
        }
    }
    if !diff.dangers.is_empty() {
        out.push_str(&format!("\n{}\n", paint(BOLD, "danger")));
        for d in &diff.dangers {
            out.push_str(&format!(
                "  {} {}: {}\n",
                paint(YELLOW, d.code),
                d.entry,
                d.message
            ));
        }
        out.push_str("  (`plumb explain CODE` says why and what to do instead)\n");
    }
    for c in &diff.clusters {
        for p in c.producers.iter().filter(|p| p.is_interesting()) {
            let lines = if p.compared() {
                change_lines(p)
            } else {
                p.unknown_text()
            };
            if lines.is_empty() {
                continue;
            }
            out.push_str(&format!(
                "\n{}\n",
                paint(BOLD, &format!("== {} · {} ==", c.entry, p.title))
            ));
            for line in lines {
                let style = if line.starts_with("+++") || line.starts_with("---") {
                    BOLD
                } else if line.starts_with('+') {
                    GREEN
                } else if line.starts_with('-') {
                    RED
                } else if line.starts_with("@@") {
                    CYAN
                } else {
                    ""
                };
                if style.is_empty() {
                    out.push_str(&line);
                } else {
                    out.push_str(&paint(style, &line));
                }
                out.push('\n');
            }
        }
    }
    if show_noise && !diff.noise.is_empty() {
        out.push_str(&format!(
            "\n{}\n",
            paint(BOLD, "noise (shown in the diffs above)")
        ));
        for n in &diff.noise {
            out.push_str(&format!(
                "  {} {} {}: {}\n",
                n.entry, n.producer, n.object, n.why
            ));
        }
    }
    if let Some(line) = diff.noise_line() {
        out.push_str(&format!("\n{line}\n"));
    }
    out
}
