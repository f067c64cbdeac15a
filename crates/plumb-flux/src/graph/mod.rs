//! The reconciliation graph of a built repository: sources, Kustomizations and HelmReleases,
//! with parent → child edges (which Kustomization creates which) and `dependsOn` edges, and the
//! wave of each (how many `dependsOn` steps stand before it), rendered as text, Mermaid, DOT,
//! SVG ([`svg`], laid out here) or one self-contained HTML page ([`html`]).

use crate::build::{EntryBuild, RepositoryBuild};
use crate::model::ObjectRef;
use std::collections::HashMap;
use std::fmt::Write;

pub mod html;
pub mod svg;

/// How to print the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Mermaid,
    Dot,
    Svg,
    Html,
}

/// Renders every entry of `build`.
pub fn render(build: &RepositoryBuild, format: Format) -> String {
    match format {
        Format::Text => build
            .entries
            .iter()
            .map(text)
            .collect::<Vec<_>>()
            .join("\n"),
        Format::Mermaid => mermaid(build),
        Format::Dot => dot(build),
        Format::Svg => svg::render(build),
        Format::Html => html::render(build),
    }
}

/// The wave of each key: 0 without `dependsOn`, else one more than its latest dependency.
/// Members of a cycle, and what waits on them, have no wave.
pub fn waves(deps: &[(String, Vec<String>)]) -> HashMap<String, Option<usize>> {
    layered(deps, &vec![Some(0); deps.len()])
}

/// The wave of each key: at least its `floor` (`None`: never), and one more than each of its
/// dependencies'. Members of a cycle, what waits on them and what depends on a key outside
/// `deps` have no wave.
fn layered(
    deps: &[(String, Vec<String>)],
    floor: &[Option<usize>],
) -> HashMap<String, Option<usize>> {
    let index: HashMap<&str, usize> = deps
        .iter()
        .enumerate()
        .map(|(i, (k, _))| (k.as_str(), i))
        .collect();
    struct Walk<'a> {
        deps: &'a [(String, Vec<String>)],
        floor: &'a [Option<usize>],
        index: HashMap<&'a str, usize>,
        memo: Vec<Option<Option<usize>>>,
        on_path: Vec<bool>,
    }
    impl Walk<'_> {
        fn visit(&mut self, i: usize) -> Option<usize> {
            if let Some(done) = self.memo[i] {
                return done;
            }
            if self.on_path[i] {
                return None;
            }
            self.on_path[i] = true;
            let mut wave = self.floor[i];
            for d in 0..self.deps[i].1.len() {
                // A dependency outside the graph never becomes ready: no wave either.
                let w = self
                    .index
                    .get(self.deps[i].1[d].as_str())
                    .copied()
                    .and_then(|j| self.visit(j));
                wave = match (wave, w) {
                    (Some(a), Some(b)) => Some(a.max(b + 1)),
                    _ => None,
                };
            }
            self.on_path[i] = false;
            self.memo[i] = Some(wave);
            wave
        }
    }
    let mut walk = Walk {
        deps,
        floor,
        index,
        memo: vec![None; deps.len()],
        on_path: vec![false; deps.len()],
    };
    (0..deps.len())
        .map(|i| (deps[i].0.clone(), walk.visit(i)))
        .collect()
}

fn ks_waves(entry: &EntryBuild) -> HashMap<String, Option<usize>> {
    let deps: Vec<(String, Vec<String>)> = entry
        .kustomizations
        .iter()
        .map(|k| {
            (
                k.key(),
                k.kustomization
                    .depends_on
                    .iter()
                    .map(ObjectRef::key)
                    .collect(),
            )
        })
        .collect();
    waves(&deps)
}

/// The wave of each HelmRelease: no earlier than the Kustomization that applies it, and one
/// after every release it `dependsOn` (helm-controller waits for those to be ready).
fn hr_waves(entry: &EntryBuild) -> HashMap<String, Option<usize>> {
    let ks = ks_waves(entry);
    let deps: Vec<(String, Vec<String>)> = entry
        .helm_releases
        .iter()
        .map(|(h, _)| {
            (
                h.id.key(),
                h.depends_on
                    .iter()
                    .filter(|d| d.kind == "HelmRelease")
                    .map(ObjectRef::key)
                    .collect(),
            )
        })
        .collect();
    let floor: Vec<Option<usize>> = entry
        .helm_releases
        .iter()
        .map(|(_, producer)| ks.get(producer).copied().unwrap_or(Some(0)))
        .collect();
    layered(&deps, &floor)
}

/// Sort key: by wave (unresolved last), then name.
fn by_wave(w: Option<&Option<usize>>, key: &str) -> (usize, String) {
    (w.copied().flatten().unwrap_or(usize::MAX), key.to_string())
}

fn wave_label(w: Option<&Option<usize>>) -> String {
    match w {
        Some(Some(n)) => format!("wave {n}"),
        _ => "never (dependsOn unresolved)".into(),
    }
}

fn text(entry: &EntryBuild) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "cluster {}", display_path(&entry.entry));
    let _ = writeln!(out, "  sources:");
    if let Some(repo) = &entry.repository_source {
        let _ = writeln!(out, "    {repo}  this repository");
    }
    for (s, producer) in &entry.sources {
        if Some(&s.id) == entry.repository_source.as_ref() {
            continue;
        }
        let url = s.url.as_deref().unwrap_or("-");
        let _ = writeln!(out, "    {}  {url}  (from {producer})", s.id);
    }
    let waves = ks_waves(entry);
    let _ = writeln!(out, "  kustomizations (by wave, then name):");
    let mut ordered: Vec<&crate::build::KustomizationBuild> = entry.kustomizations.iter().collect();
    // The entry itself first, then by wave and name.
    ordered.sort_by_key(|k| (!k.synthetic, by_wave(waves.get(&k.key()), &k.key())));
    for k in ordered {
        let indent = "    ";
        let mut line = if k.synthetic {
            format!("{indent}entry {}", display_path(&k.path))
        } else {
            format!(
                "{indent}{}  {}  [{}]",
                k.key(),
                display_path(&k.path),
                wave_label(waves.get(&k.key()))
            )
        };
        match k.parent.as_deref() {
            Some(parent) if parent.starts_with('/') => {
                let _ = write!(line, "  in entry {}", display_path(&parent[1..]));
            }
            Some(parent) => {
                let _ = write!(line, "  in {parent}");
            }
            None => {}
        }
        if !k.kustomization.depends_on.is_empty() {
            let deps: Vec<String> = k
                .kustomization
                .depends_on
                .iter()
                .map(ObjectRef::key)
                .collect();
            let _ = write!(line, "  dependsOn: {}", deps.join(", "));
        }
        if k.has_errors() {
            line.push_str("  (build errors)");
        }
        let _ = writeln!(out, "{line}");
    }
    if !entry.helm_releases.is_empty() {
        let hw = hr_waves(entry);
        let _ = writeln!(out, "  helmreleases (by wave, then name):");
        let mut ordered: Vec<&(crate::model::HelmRelease, String)> =
            entry.helm_releases.iter().collect();
        ordered.sort_by_key(|(h, _)| by_wave(hw.get(&h.id.key()), &h.id.key()));
        for (h, producer) in ordered {
            let chart = match (&h.chart, &h.chart_source) {
                (Some(c), Some(s)) => format!("{c} from {s}"),
                (None, Some(s)) => s.to_string(),
                _ => "-".into(),
            };
            let mut line = format!(
                "    {}  {chart}  [{}]  (from {producer})",
                h.id.key(),
                wave_label(hw.get(&h.id.key()))
            );
            if !h.depends_on.is_empty() {
                let deps: Vec<String> = h.depends_on.iter().map(ObjectRef::key).collect();
                let _ = write!(line, "  dependsOn: {}", deps.join(", "));
            }
            let _ = writeln!(out, "{line}");
        }
    }
    out
}

fn display_path(p: &str) -> &str {
    if p.is_empty() {
        "."
    } else {
        p
    }
}

/// Node ids for Mermaid and DOT: stable, derived from position.
struct Ids {
    map: HashMap<String, String>,
}

impl Ids {
    fn get(&mut self, key: &str, prefix: &str) -> String {
        let n = self.map.len();
        self.map
            .entry(key.to_string())
            .or_insert_with(|| format!("{prefix}{n}"))
            .clone()
    }
}

/// Nodes and edges of one entry: `(id, label, shape)` and `(from, to, kind)`.
type Nodes = Vec<(String, String, &'static str)>;
type Edges = Vec<(String, String, &'static str)>;

fn collect(entry: &EntryBuild, ids: &mut Ids, scope: usize) -> (Nodes, Edges) {
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    let waves = ks_waves(entry);
    let key = |kind: &str, k: &str| format!("{scope}|{kind}|{k}");
    let mut sources: Vec<ObjectRef> = entry.sources.iter().map(|(s, _)| s.id.clone()).collect();
    if let Some(repo) = &entry.repository_source {
        if !sources.contains(repo) {
            sources.insert(0, repo.clone());
        }
    }
    for s in &sources {
        let id = ids.get(&key("source", &s.to_string()), "s");
        nodes.push((id, s.to_string(), "source"));
    }
    for k in &entry.kustomizations {
        let id = ids.get(&key("ks", &k.key()), "k");
        let label = if k.synthetic {
            format!("entry {}", display_path(&k.path))
        } else {
            format!(
                "Kustomization {}\\n{} · {}",
                k.key(),
                display_path(&k.path),
                wave_label(waves.get(&k.key()))
            )
        };
        nodes.push((id.clone(), label, "ks"));
        if let Some(parent) = &k.parent {
            edges.push((ids.get(&key("ks", parent), "k"), id.clone(), "creates"));
        }
        for d in &k.kustomization.depends_on {
            edges.push((id.clone(), ids.get(&key("ks", &d.key()), "k"), "dependsOn"));
        }
        if !k.synthetic && sources.contains(&k.kustomization.source_ref) {
            edges.push((
                ids.get(&key("source", &k.kustomization.source_ref.to_string()), "s"),
                id.clone(),
                "source",
            ));
        }
    }
    let hw = hr_waves(entry);
    for (h, producer) in &entry.helm_releases {
        let id = ids.get(&key("hr", &h.id.key()), "h");
        if let Some(source) = &h.chart_source {
            let source_id = ids.get(&key("source", &source.to_string()), "s");
            if !sources.contains(source) {
                sources.push(source.clone());
                nodes.push((
                    source_id.clone(),
                    format!("{source}\\n(not in the build)"),
                    "source",
                ));
            }
            edges.push((source_id, id.clone(), "source"));
        }
        nodes.push((
            id.clone(),
            format!(
                "HelmRelease {}\\n{}",
                h.id.key(),
                wave_label(hw.get(&h.id.key()))
            ),
            "hr",
        ));
        edges.push((ids.get(&key("ks", producer), "k"), id.clone(), "creates"));
        for d in &h.depends_on {
            edges.push((id.clone(), ids.get(&key("hr", &d.key()), "h"), "dependsOn"));
        }
    }
    (nodes, edges)
}

fn mermaid(build: &RepositoryBuild) -> String {
    let mut out = String::from("flowchart TB\n");
    let mut ids = Ids {
        map: HashMap::new(),
    };
    for (scope, entry) in build.entries.iter().enumerate() {
        let (nodes, edges) = collect(entry, &mut ids, scope);
        let _ = writeln!(
            out,
            "  subgraph cluster{scope}[\"{}\"]",
            display_path(&entry.entry)
        );
        for (id, label, shape) in nodes {
            let label = label.replace("\\n", "<br/>").replace('"', "'");
            let _ = match shape {
                "source" => writeln!(out, "    {id}[(\"{label}\")]"),
                "hr" => writeln!(out, "    {id}{{{{\"{label}\"}}}}"),
                _ => writeln!(out, "    {id}[\"{label}\"]"),
            };
        }
        for (from, to, kind) in edges {
            let _ = match kind {
                "dependsOn" => writeln!(out, "    {from} -. dependsOn .-> {to}"),
                "source" => writeln!(out, "    {from} --- {to}"),
                _ => writeln!(out, "    {from} --> {to}"),
            };
        }
        let _ = writeln!(out, "  end");
    }
    out
}

fn dot(build: &RepositoryBuild) -> String {
    // Waves left to right, each wave one column: a parent with a hundred children is a tall
    // column, not a row a hundred nodes wide.
    let mut out = String::from(
        "digraph plumb {\n  rankdir=LR;\n  ranksep=1.2;\n  node [fontname=\"Helvetica\"];\n",
    );
    let mut ids = Ids {
        map: HashMap::new(),
    };
    for (scope, entry) in build.entries.iter().enumerate() {
        let (nodes, edges) = collect(entry, &mut ids, scope);
        let _ = writeln!(out, "  subgraph cluster_{scope} {{");
        let _ = writeln!(out, "    label=\"{}\";", display_path(&entry.entry));
        for (id, label, shape) in nodes {
            let shape = match shape {
                "source" => "cylinder",
                "hr" => "hexagon",
                _ => "box",
            };
            let _ = writeln!(
                out,
                "    {id} [label=\"{}\", shape={shape}];",
                label.replace('"', "'")
            );
        }
        for (from, to, kind) in edges {
            let style = match kind {
                // Against the rank order: a dependency is an earlier wave.
                "dependsOn" => " [style=dashed, label=\"dependsOn\", constraint=false]",
                "source" => " [style=dotted, arrowhead=none]",
                _ => "",
            };
            let _ = writeln!(out, "    {from} -> {to}{style};");
        }
        // One rank per wave.
        let kw = ks_waves(entry);
        let hw = hr_waves(entry);
        let mut ranks: std::collections::BTreeMap<usize, Vec<String>> = Default::default();
        for k in entry.kustomizations.iter().filter(|k| !k.synthetic) {
            if let Some(Some(w)) = kw.get(&k.key()) {
                ranks
                    .entry(*w)
                    .or_default()
                    .push(ids.get(&format!("{scope}|ks|{}", k.key()), "k"));
            }
        }
        for (h, _) in &entry.helm_releases {
            if let Some(Some(w)) = hw.get(&h.id.key()) {
                ranks
                    .entry(*w)
                    .or_default()
                    .push(ids.get(&format!("{scope}|hr|{}", h.id.key()), "h"));
            }
        }
        for members in ranks.values() {
            let _ = writeln!(out, "    {{ rank=same; {}; }}", members.join("; "));
        }
        let _ = writeln!(out, "  }}");
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waves_follow_depends_on() {
        let deps = vec![
            ("a".to_string(), vec![]),
            ("b".to_string(), vec!["a".to_string()]),
            ("c".to_string(), vec!["b".to_string(), "a".to_string()]),
            ("x".to_string(), vec!["y".to_string()]),
            ("y".to_string(), vec!["x".to_string()]),
            ("z".to_string(), vec!["missing".to_string()]),
        ];
        let w = waves(&deps);
        assert_eq!(w["a"], Some(0));
        assert_eq!(w["b"], Some(1));
        assert_eq!(w["c"], Some(2));
        assert_eq!(w["x"], None);
        assert_eq!(w["y"], None);
        assert_eq!(w["z"], None);
    }
}
