//! The graph as one self-contained HTML page: its data, script and styles inline, nothing
//! fetched when it is viewed. Columns by wave, left to right, after the sources; in a column,
//! the nodes grouped under the Kustomization that creates them, a group of more than
//! [`COLLAPSE`] collapsed until opened; a search box that filters by name; a click on a node
//! shows its path, source, objects, `dependsOn`, children and errors.
//!
//! With a `#test=TERM` fragment the page searches for TERM, clicks the first node shown and
//! writes what the details panel says into `data-test` of `<body>`, with the milliseconds the
//! page took to lay out in `data-render-ms`: what the browser test reads.

use super::{hr_waves, ks_waves};
use crate::build::RepositoryBuild;
use serde_json::{json, Value};

/// Groups with more members start collapsed.
pub const COLLAPSE: usize = 12;

/// The page for `build`.
pub fn render(build: &RepositoryBuild) -> String {
    render_with(build, &std::collections::HashMap::new())
}

/// The page for `build`, with the `plumb check` findings of each Kustomization (by
/// `namespace/name`) shown in its details.
pub fn render_with(
    build: &RepositoryBuild,
    findings: &std::collections::HashMap<String, Vec<String>>,
) -> String {
    let mut clusters = Vec::new();
    for entry in &build.entries {
        let kw = ks_waves(entry);
        let hw = hr_waves(entry);
        let mut nodes: Vec<Value> = Vec::new();
        let mut sources: Vec<String> = entry
            .sources
            .iter()
            .map(|(s, _)| s.id.to_string())
            .collect();
        if let Some(repo) = &entry.repository_source {
            if !sources.contains(&repo.to_string()) {
                sources.insert(0, repo.to_string());
            }
        }
        for (s, producer) in &entry.sources {
            nodes.push(json!({
                "id": format!("source|{}", s.id), "kind": "source", "name": s.id.to_string(),
                "wave": null, "group": "", "url": s.url, "from": producer,
            }));
        }
        if let Some(repo) = &entry.repository_source {
            if !entry.sources.iter().any(|(s, _)| &s.id == repo) {
                nodes.push(json!({"id": format!("source|{repo}"), "kind": "source", "name": repo.to_string(),
                    "wave": null, "group": "", "url": "this repository"}));
            }
        }
        for k in &entry.kustomizations {
            let errors: Vec<String> = k
                .diagnostics
                .iter()
                .filter(|d| d.is_error())
                .map(ToString::to_string)
                .collect();
            nodes.push(json!({
                "id": format!("ks|{}", k.key()),
                "kind": if k.synthetic { "entry" } else { "ks" },
                "name": if k.synthetic { format!("entry {}", if k.path.is_empty() { "." } else { &k.path }) } else { k.key() },
                "wave": kw.get(&k.key()).copied().flatten(),
                "group": k.parent.clone().unwrap_or_default(),
                "path": if k.path.is_empty() { ".".to_string() } else { k.path.clone() },
                "source": k.source,
                "status": k.status.as_str(),
                "objects": k.objects.len(),
                "dependsOn": k.kustomization.depends_on.iter().map(|d| format!("ks|{}", d.key())).collect::<Vec<_>>(),
                "errors": errors,
                // Findings name a Kustomization `namespace/name`, an entry `entry PATH`.
                "findings": findings
                    .get(&k.key())
                    .or_else(|| findings.get(&format!("entry {}", if k.path.is_empty() { "." } else { &k.path })))
                    .filter(|_| k.synthetic || findings.contains_key(&k.key()))
                    .cloned()
                    .unwrap_or_default(),
            }));
        }
        for (h, producer) in &entry.helm_releases {
            let release = entry
                .releases
                .iter()
                .find(|r| r.namespace == h.id.namespace && r.name == h.id.name);
            nodes.push(json!({
                "id": format!("hr|{}", h.id.key()),
                "kind": "hr",
                "name": h.id.key(),
                "wave": hw.get(&h.id.key()).copied().flatten(),
                "group": producer,
                "source": h.chart_source.as_ref().map(ToString::to_string),
                "chart": h.chart,
                "status": release.map(|r| r.status.as_str()),
                "objects": release.map(|r| r.objects.len()),
                "dependsOn": h.depends_on.iter().filter(|d| d.kind == "HelmRelease").map(|d| format!("hr|{}", d.key())).collect::<Vec<_>>(),
                "errors": release.map(|r| r.diagnostics.iter().filter(|d| d.is_error()).map(ToString::to_string).collect::<Vec<_>>()).unwrap_or_default(),
            }));
        }
        clusters.push(json!({"entry": if entry.entry.is_empty() { "." } else { &entry.entry }, "nodes": nodes}));
    }
    // `</` cannot end the script early once escaped.
    let data = serde_json::to_string(&clusters)
        .unwrap_or_else(|_| "[]".into())
        .replace("</", "<\\/");
    PAGE.replace("/*DATA*/[]", &data)
        .replace("/*COLLAPSE*/12", &COLLAPSE.to_string())
}

const PAGE: &str = r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>plumb graph</title>
<style>
body{font:13px/1.35 Helvetica,Arial,sans-serif;margin:0;color:#1f2328;display:flex;height:100vh}
#main{flex:1;overflow:auto;padding:12px}
#side{width:360px;border-left:1px solid #d0d7de;padding:12px;overflow:auto;background:#f6f8fa}
#search{width:100%;box-sizing:border-box;padding:6px;margin-bottom:8px;font-size:14px}
h2{font-size:15px;margin:14px 0 6px}
.cols{display:flex;gap:18px;align-items:flex-start}
.col{min-width:250px;max-width:280px}
.col>h3{font-size:12px;color:#57606a;text-align:center;margin:4px 0}
details{border:1px solid #d0d7de;border-radius:6px;margin:4px 0;background:#fff}
summary{cursor:pointer;padding:3px 6px;color:#57606a;font-size:12px}
.node{border:1px solid;border-radius:5px;margin:3px 5px;padding:3px 6px;cursor:pointer;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.node.source{background:#fff8c5;border-color:#9a6700}
.node.ks,.node.entry{background:#ddf4ff;border-color:#0969da}
.node.hr{background:#dafbe1;border-color:#1a7f37}
.node.err{background:#ffebe9;border-color:#cf222e}
.node.hit{outline:2px solid #bf8700}
.node.sel{outline:3px solid #8250df}
.hidden{display:none}
#details dt{font-weight:bold;margin-top:6px}#details dd{margin:0 0 0 8px;word-break:break-all}
#details a{color:#0969da;cursor:pointer}
pre{white-space:pre-wrap;font-size:11px;background:#fff;border:1px solid #d0d7de;padding:4px}
</style></head>
<body>
<div id="main"></div>
<div id="side"><input id="search" placeholder="search by name" autocomplete="off"><div id="details">Click a node.</div></div>
<script>
const DATA = /*DATA*/[];
const COLLAPSE = /*COLLAPSE*/12;
const started = performance.now();
const byId = new Map();
const main = document.getElementById('main');
function el(tag, cls, text){const e=document.createElement(tag); if(cls) e.className=cls; if(text!==undefined) e.textContent=text; return e;}
for (const [ci, cluster] of DATA.entries()) {
  main.appendChild(el('h2', '', 'cluster ' + cluster.entry));
  const cols = el('div', 'cols'); main.appendChild(cols);
  const waves = new Map();
  for (const n of cluster.nodes) {
    const key = n.kind === 'source' ? -1 : (n.wave === null ? 1e9 : n.wave);
    if (!waves.has(key)) waves.set(key, []);
    waves.get(key).push(n);
    byId.set(ci + '|' + n.id, n); n.cluster = ci;
  }
  for (const key of [...waves.keys()].sort((a,b)=>a-b)) {
    const col = el('div', 'col'); cols.appendChild(col);
    col.appendChild(el('h3', '', key < 0 ? 'sources' : key === 1e9 ? 'never (dependsOn unresolved)' : 'wave ' + key));
    const groups = new Map();
    for (const n of waves.get(key)) { if (!groups.has(n.group)) groups.set(n.group, []); groups.get(n.group).push(n); }
    for (const g of [...groups.keys()].sort()) {
      const members = groups.get(g).sort((a,b)=>a.name.localeCompare(b.name));
      const box = el('details'); box.open = members.length <= COLLAPSE;
      const label = g.startsWith('/') ? 'in entry ' + g.slice(1) : g ? 'in ' + g : key < 0 ? 'sources' : 'top';
      box.appendChild(el('summary', '', label + ' (' + members.length + ')'));
      for (const n of members) {
        const d = el('div', 'node ' + n.kind + (n.errors && n.errors.length ? ' err' : ''), n.name);
        d.title = n.name; d.dataset.id = ci + '|' + n.id; n.div = d; n.box = box;
        d.addEventListener('click', () => show(n));
        box.appendChild(d);
      }
      col.appendChild(box);
    }
  }
}
function link(id, cluster){const n = byId.get(cluster + '|' + id); const a = el('a', '', n ? n.name : id); if (n) a.addEventListener('click', () => show(n)); return a;}
function show(n){
  document.querySelectorAll('.sel').forEach(e => e.classList.remove('sel'));
  n.div.classList.add('sel'); n.box.open = true; n.div.scrollIntoView({block: 'nearest'});
  const dl = el('dl');
  const row = (k, v) => { if (v === undefined || v === null || (Array.isArray(v) && !v.length)) return; dl.appendChild(el('dt', '', k)); const dd = el('dd'); if (v instanceof Node) dd.appendChild(v); else dd.textContent = String(v); dl.appendChild(dd); };
  row('name', n.name); row('kind', {source:'source', ks:'Kustomization', entry:'entry', hr:'HelmRelease'}[n.kind]);
  row('wave', n.wave); row('path', n.path); row('source', n.source || n.url); row('chart', n.chart);
  row('status', n.status); row('objects', n.objects);
  if (n.dependsOn && n.dependsOn.length) { const s = el('span'); n.dependsOn.forEach((d,i) => { if (i) s.append(', '); s.appendChild(link(d, n.cluster)); }); row('dependsOn', s); }
  const children = DATA[n.cluster].nodes.filter(c => c.group && ('ks|' + c.group === n.id));
  if (children.length) { const s = el('span'); children.forEach((c,i) => { if (i) s.append(', '); s.appendChild(link(c.id, n.cluster)); }); row('creates', s); }
  if (n.errors && n.errors.length) { const p = el('pre', '', n.errors.join('\n\n')); row('errors', p); }
  if (n.findings && n.findings.length) { const p = el('pre', '', n.findings.join('\n')); row('plumb check', p); }
  const details = document.getElementById('details'); details.replaceChildren(dl);
  return details.textContent;
}
const search = document.getElementById('search');
function filter(term){
  const t = term.trim().toLowerCase(); let first = null;
  for (const n of byId.values()) {
    const hit = !t || n.name.toLowerCase().includes(t);
    n.div.classList.toggle('hidden', !hit); n.div.classList.toggle('hit', !!t && hit);
    if (t && hit) { n.box.open = true; if (!first) first = n; }
  }
  return first;
}
search.addEventListener('input', () => filter(search.value));
document.body.dataset.renderMs = (performance.now() - started).toFixed(1);
document.body.dataset.nodes = String(byId.size);
if (location.hash.startsWith('#test=')) {
  const term = decodeURIComponent(location.hash.slice(6));
  search.value = term;
  const first = filter(term);
  const shown = [...byId.values()].filter(n => !n.div.classList.contains('hidden')).length;
  document.body.dataset.test = JSON.stringify({shown, clicked: first ? first.name : null, details: first ? (first.div.click(), document.getElementById('details').textContent) : ''});
}
</script></body></html>
"##;
