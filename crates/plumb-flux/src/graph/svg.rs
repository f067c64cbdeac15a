//! The graph as SVG, laid out here (no Graphviz): one column per wave, left to right, after a
//! column of sources; in a column, the nodes grouped by the Kustomization that creates them and
//! sorted by name, so a parent with a hundred children is a tall column rather than a row a
//! hundred nodes wide. Every label is set in 12 px text inside a fixed-width box (a long name is
//! cut with `…`, its whole text in the node's `<title>`), so the picture stays readable and its
//! width grows only with the number of waves.

use super::{display_path, hr_waves, ks_waves};
use crate::build::{EntryBuild, RepositoryBuild};
use crate::model::ObjectRef;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

const BOX_W: usize = 340;
const BOX_H: usize = 40;
const GAP_X: usize = 90;
const GAP_Y: usize = 10;
const MARGIN: usize = 24;
const HEADER: usize = 56;
/// Characters of 12 px Helvetica that fit in a box, with its padding.
const CHARS: usize = 50;

/// One node placed.
struct Node {
    key: String,
    lines: [String; 2],
    title: String,
    class: &'static str,
    column: usize,
    x: usize,
    y: usize,
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn cut(s: &str) -> String {
    if s.chars().count() <= CHARS {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(CHARS - 1).collect();
        t.push('…');
        t
    }
}

/// The nodes and edges of one entry, placed from `top`; returns the height used.
fn entry_svg(entry: &EntryBuild, top: usize, out: &mut String) -> (usize, usize) {
    let kw = ks_waves(entry);
    let hw = hr_waves(entry);
    let column_of = |w: Option<&Option<usize>>, unresolved: usize| match w {
        Some(Some(n)) => n + 1,
        _ => unresolved,
    };
    let most = kw
        .values()
        .chain(hw.values())
        .filter_map(|w| *w)
        .max()
        .map_or(1, |m| m + 2);
    // Sources.
    let mut sources: Vec<ObjectRef> = entry.sources.iter().map(|(s, _)| s.id.clone()).collect();
    if let Some(repo) = &entry.repository_source {
        if !sources.contains(repo) {
            sources.insert(0, repo.clone());
        }
    }
    for (h, _) in &entry.helm_releases {
        if let Some(s) = &h.chart_source {
            if !sources.contains(s) {
                sources.push(s.clone());
            }
        }
    }
    let mut nodes: Vec<Node> = Vec::new();
    for s in &sources {
        nodes.push(Node {
            key: format!("source|{s}"),
            lines: [format!("{} {}", s.kind, s.namespace), s.name.clone()],
            title: s.to_string(),
            class: "source",
            column: 0,
            x: 0,
            y: 0,
        });
    }
    // (column, group, name) for the order inside a column.
    let mut order: Vec<(usize, String, String, usize)> = Vec::new();
    for k in &entry.kustomizations {
        let (lines, title) = if k.synthetic {
            (
                ["entry".to_string(), display_path(&k.path).to_string()],
                format!(
                    "entry {} (no Kustomization syncs it)",
                    display_path(&k.path)
                ),
            )
        } else {
            (
                [
                    format!("Kustomization {}", k.key()),
                    format!("{} · {}", display_path(&k.path), k.status.as_str()),
                ],
                format!("Kustomization {} ({})", k.key(), display_path(&k.path)),
            )
        };
        let column = if k.synthetic {
            1
        } else {
            column_of(kw.get(&k.key()), most)
        };
        order.push((
            column,
            k.parent.clone().unwrap_or_default(),
            k.key(),
            nodes.len(),
        ));
        nodes.push(Node {
            key: format!("ks|{}", k.key()),
            lines,
            title,
            class: if k.has_errors() { "ks error" } else { "ks" },
            column,
            x: 0,
            y: 0,
        });
    }
    for (h, producer) in &entry.helm_releases {
        let column = column_of(hw.get(&h.id.key()), most);
        order.push((column, producer.clone(), h.id.key(), nodes.len()));
        nodes.push(Node {
            key: format!("hr|{}", h.id.key()),
            lines: [
                format!("HelmRelease {}", h.id.key()),
                match (&h.chart, &h.chart_source) {
                    (Some(c), _) => format!("chart {c}"),
                    (None, Some(s)) => format!("chart from {s}"),
                    (None, None) => "-".into(),
                },
            ],
            title: format!("HelmRelease {} (from {producer})", h.id.key()),
            class: "hr",
            column,
            x: 0,
            y: 0,
        });
    }
    // Place: sources in column 0 in their order; the rest by (group, name) in each column.
    let mut next_y: BTreeMap<usize, usize> = BTreeMap::new();
    let mut place = |node: &mut Node| {
        let y = next_y.entry(node.column).or_insert(top + HEADER);
        node.x = MARGIN + node.column * (BOX_W + GAP_X);
        node.y = *y;
        *y += BOX_H + GAP_Y;
    };
    for node in nodes.iter_mut().filter(|n| n.class == "source") {
        place(node);
    }
    order.sort();
    for (_, _, _, i) in &order {
        place(&mut nodes[*i]);
    }
    let height = next_y.values().copied().max().unwrap_or(top + HEADER) - top;
    let columns = nodes.iter().map(|n| n.column).max().unwrap_or(0) + 1;
    let width = MARGIN * 2 + columns * (BOX_W + GAP_X) - GAP_X;
    let index: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.key.as_str(), i))
        .collect();

    let _ = writeln!(
        out,
        "<text class=\"entry\" x=\"{MARGIN}\" y=\"{}\">cluster {}</text>",
        top + 20,
        escape(display_path(&entry.entry))
    );
    for w in 0..columns {
        let label = if w == 0 {
            "sources".to_string()
        } else if w == most {
            "never (dependsOn unresolved)".into()
        } else {
            format!("wave {}", w - 1)
        };
        let _ = writeln!(
            out,
            "<text class=\"wave\" x=\"{}\" y=\"{}\">{}</text>",
            MARGIN + w * (BOX_W + GAP_X) + BOX_W / 2,
            top + 46,
            escape(&label)
        );
    }
    // Edges first, under the nodes.
    let edge = |from: &str, to: &str, class: &str, out: &mut String| {
        let (Some(&a), Some(&b)) = (index.get(from), index.get(to)) else {
            return;
        };
        let (a, b) = (&nodes[a], &nodes[b]);
        let (x1, y1) = (a.x + BOX_W, a.y + BOX_H / 2);
        let (x2, y2) = (b.x, b.y + BOX_H / 2);
        let (x1, x2) = if x2 >= x1 {
            (x1, x2)
        } else {
            (a.x, b.x + BOX_W)
        };
        let mid = (x1 + x2) / 2;
        let _ = writeln!(
            out,
            "<path class=\"{class}\" d=\"M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}\"/>"
        );
    };
    for k in &entry.kustomizations {
        let to = format!("ks|{}", k.key());
        if let Some(parent) = &k.parent {
            edge(&format!("ks|{parent}"), &to, "creates", out);
        }
        for d in &k.kustomization.depends_on {
            edge(&format!("ks|{}", d.key()), &to, "depends", out);
        }
        if !k.synthetic {
            edge(
                &format!("source|{}", k.kustomization.source_ref),
                &to,
                "sourced",
                out,
            );
        }
    }
    for (h, producer) in &entry.helm_releases {
        let to = format!("hr|{}", h.id.key());
        edge(&format!("ks|{producer}"), &to, "creates", out);
        for d in &h.depends_on {
            edge(&format!("hr|{}", d.key()), &to, "depends", out);
        }
        if let Some(s) = &h.chart_source {
            edge(&format!("source|{s}"), &to, "sourced", out);
        }
    }
    for n in &nodes {
        let _ = writeln!(
            out,
            "<g class=\"{}\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{BOX_W}\" height=\"{BOX_H}\" rx=\"6\"/><text x=\"{}\" y=\"{}\">{}</text><text class=\"sub\" x=\"{}\" y=\"{}\">{}</text></g>",
            n.class,
            escape(&n.title),
            n.x,
            n.y,
            n.x + 8,
            n.y + 16,
            escape(&cut(&n.lines[0])),
            n.x + 8,
            n.y + 32,
            escape(&cut(&n.lines[1]))
        );
    }
    (width, height)
}

/// The whole build as one SVG document, its entries one under another.
pub fn render(build: &RepositoryBuild) -> String {
    let mut body = String::new();
    let mut top = MARGIN;
    let mut width = 0;
    for entry in &build.entries {
        let (w, h) = entry_svg(entry, top, &mut body);
        width = width.max(w);
        top += h + MARGIN * 2;
    }
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{top}\" viewBox=\"0 0 {width} {top}\" font-family=\"Helvetica, Arial, sans-serif\">\n"
    );
    out.push_str(
        "<style>\
text{font-size:12px;fill:#1f2328}\
text.sub{fill:#57606a}\
text.entry{font-size:16px;font-weight:bold}\
text.wave{font-size:13px;font-weight:bold;text-anchor:middle;fill:#57606a}\
rect{stroke-width:1.2}\
.source rect{fill:#fff8c5;stroke:#9a6700}\
.ks rect{fill:#ddf4ff;stroke:#0969da}\
.ks.error rect{fill:#ffebe9;stroke:#cf222e}\
.hr rect{fill:#dafbe1;stroke:#1a7f37}\
path{fill:none;stroke-width:1.1}\
path.creates{stroke:#8c959f}\
path.depends{stroke:#cf222e;stroke-dasharray:5 3}\
path.sourced{stroke:#d4a72c;stroke-dasharray:1 3}\
</style>\n",
    );
    let _ = writeln!(
        out,
        "<rect x=\"0\" y=\"0\" width=\"{width}\" height=\"{top}\" fill=\"#ffffff\"/>"
    );
    out.push_str(&body);
    out.push_str("</svg>\n");
    out
}
