//! Waves: each app lands in the first wave after all of its dependencies (the longest path over
//! `dependsOn`), or later where a `wave:` pin says so. Validation comes first: unique names,
//! dependencies that exist, no cycle, no pin earlier than the dependencies allow.

use crate::catalog::App;
use crate::error::RenderError;
use std::collections::BTreeMap;

/// A validated catalog: the apps by name and the wave of each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Sorted by name.
    pub apps: Vec<App>,
    /// `waves[n]`: indices into `apps` of the apps in wave `n`, by name. A wave may be empty
    /// when a pin skips it; it is still rendered, so the `dependsOn` chain stays whole.
    pub waves: Vec<Vec<usize>>,
    /// The wave of each app, by index into `apps`.
    pub wave_of: Vec<usize>,
}

impl Plan {
    /// Validates `apps` and computes their waves.
    pub fn new(mut apps: Vec<App>) -> Result<Plan, RenderError> {
        apps.sort_by(|a, b| a.name.cmp(&b.name));
        let mut index = BTreeMap::new();
        for (i, app) in apps.iter().enumerate() {
            if let Some(&first) = index.get(app.name.as_str()) {
                let first: &App = &apps[first];
                return Err(RenderError::at(
                    &app.file,
                    app.line,
                    format!(
                        "app `{}` is already in the catalog at {}:{}",
                        app.name,
                        first.file.display(),
                        first.line
                    ),
                ));
            }
            index.insert(app.name.as_str(), i);
        }
        let names: Vec<&str> = apps.iter().map(|a| a.name.as_str()).collect();
        let mut edges: Vec<Vec<usize>> = Vec::with_capacity(apps.len());
        for app in &apps {
            let mut out = Vec::new();
            for dep in &app.depends_on {
                let Some(&j) = index.get(dep.name.as_str()) else {
                    let hint = plumb_kustomize::kustomization::closest(&dep.name, &names)
                        .map(|c| format!("; did you mean `{c}`?"))
                        .unwrap_or_else(|| format!("; the catalog has {}", names.join(", ")));
                    return Err(RenderError::at(
                        &app.file,
                        dep.line,
                        format!(
                            "app `{}` depends on `{}`, which is not in the catalog{hint}",
                            app.name, dep.name
                        ),
                    ));
                };
                out.push(j);
            }
            edges.push(out);
        }
        if let Some(cycle) = find_cycle(&edges) {
            let first = &apps[cycle[0]];
            let line = first
                .depends_on
                .iter()
                .find(|d| d.name == apps[cycle[1 % cycle.len()]].name)
                .map_or(first.line, |d| d.line);
            let mut spelt: Vec<&str> = cycle.iter().map(|&i| apps[i].name.as_str()).collect();
            spelt.push(&apps[cycle[0]].name);
            return Err(RenderError::at(
                &first.file,
                line,
                format!("dependency cycle: {}", spelt.join(" → ")),
            ));
        }
        let mut wave_of: Vec<Option<usize>> = vec![None; apps.len()];
        for i in 0..apps.len() {
            wave(i, &apps, &edges, &mut wave_of)?;
        }
        let wave_of: Vec<usize> = wave_of.into_iter().map(|w| w.unwrap_or(0)).collect();
        let count = wave_of.iter().max().map_or(0, |m| m + 1);
        let mut waves = vec![Vec::new(); count];
        for (i, &w) in wave_of.iter().enumerate() {
            waves[w].push(i);
        }
        Ok(Plan {
            apps,
            waves,
            wave_of,
        })
    }
}

/// The wave of app `i`, its dependencies' first (the graph has no cycle by now).
fn wave(
    i: usize,
    apps: &[App],
    edges: &[Vec<usize>],
    memo: &mut [Option<usize>],
) -> Result<usize, RenderError> {
    if let Some(w) = memo[i] {
        return Ok(w);
    }
    let mut earliest = 0;
    let mut because: Option<(usize, usize)> = None;
    for &j in &edges[i] {
        let w = wave(j, apps, edges, memo)?;
        if w + 1 > earliest {
            earliest = w + 1;
            because = Some((j, w));
        }
    }
    let app = &apps[i];
    let w = match app.wave {
        Some(pin) if pin < earliest => {
            let (j, dep_wave) = because.unwrap_or((i, 0));
            return Err(RenderError::at(
                &app.file,
                app.wave_line,
                format!(
                    "app `{}` is pinned to wave {pin}, but it depends on `{}` (wave {dep_wave}): wave {earliest} is the earliest it can be in",
                    app.name, apps[j].name
                ),
            ));
        }
        Some(pin) => pin,
        None => earliest,
    };
    memo[i] = Some(w);
    Ok(w)
}

/// A cycle of `edges` as the indices along it, starting at its smallest index (the first name
/// in order), or `None`.
fn find_cycle(edges: &[Vec<usize>]) -> Option<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    fn visit(
        i: usize,
        edges: &[Vec<usize>],
        mark: &mut [Mark],
        path: &mut Vec<usize>,
    ) -> Option<Vec<usize>> {
        mark[i] = Mark::OnPath;
        path.push(i);
        for &j in &edges[i] {
            match mark[j] {
                Mark::OnPath => {
                    let start = path.iter().position(|&p| p == j).unwrap_or(0);
                    return Some(path[start..].to_vec());
                }
                Mark::New => {
                    if let Some(c) = visit(j, edges, mark, path) {
                        return Some(c);
                    }
                }
                Mark::Done => {}
            }
        }
        path.pop();
        mark[i] = Mark::Done;
        None
    }
    let mut mark = vec![Mark::New; edges.len()];
    for i in 0..edges.len() {
        if mark[i] == Mark::New {
            let mut path = Vec::new();
            if let Some(mut cycle) = visit(i, edges, &mut mark, &mut path) {
                let min = cycle
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, &v)| v)
                    .map_or(0, |(k, _)| k);
                cycle.rotate_left(min);
                return Some(cycle);
            }
        }
    }
    None
}
