//! What is in place before a Flux Kustomization is applied: the Kustomizations it waits for
//! through `dependsOn` (ready), and those that applied it (its parents, whose CRDs were applied
//! and established in the same server-side apply before the child object existed).

use plumb_flux::build::EntryBuild;
use std::collections::{HashMap, VecDeque};

/// The apply order of one entry's Kustomizations, by index into `entry.kustomizations`.
pub(crate) struct EntryOrder {
    /// `ready[y][z]`: `z` is Ready before `y` is applied (reached through a `dependsOn`).
    ready: Vec<Vec<bool>>,
    /// `applied[y][z]`: `z` was applied before `y` (ready, or an ancestor that created `y`).
    applied: Vec<Vec<bool>>,
    /// Never applied: waits on a Kustomization that does not exist or on a cycle.
    blocked: Vec<bool>,
}

impl EntryOrder {
    pub(crate) fn new(entry: &EntryBuild) -> EntryOrder {
        let n = entry.kustomizations.len();
        let index: HashMap<String, usize> = entry
            .kustomizations
            .iter()
            .enumerate()
            .map(|(i, k)| (k.key(), i))
            .collect();
        let mut deps = vec![Vec::new(); n];
        let mut missing = vec![false; n];
        let mut parent = vec![None; n];
        for (i, k) in entry.kustomizations.iter().enumerate() {
            for d in &k.kustomization.depends_on {
                match index.get(&d.key()) {
                    Some(&j) => deps[i].push(j),
                    None => missing[i] = true,
                }
            }
            parent[i] = k.parent.as_ref().and_then(|p| index.get(p)).copied();
        }
        let mut ready = vec![vec![false; n]; n];
        let mut applied = vec![vec![false; n]; n];
        for y in 0..n {
            // States are (node, reached through a dependsOn edge last).
            let mut queue = VecDeque::new();
            let push = |queue: &mut VecDeque<(usize, bool)>, z: usize| {
                for &d in &deps[z] {
                    queue.push_back((d, true));
                }
                if let Some(p) = parent[z] {
                    queue.push_back((p, false));
                }
            };
            push(&mut queue, y);
            while let Some((z, through_dep)) = queue.pop_front() {
                let seen = applied[y][z];
                ready[y][z] |= through_dep;
                applied[y][z] = true;
                // What `z` leads to does not depend on how `z` was reached.
                if !seen {
                    push(&mut queue, z);
                }
            }
        }
        let blocked = (0..n)
            .map(|y| (0..n).any(|z| (z == y || applied[y][z]) && (missing[z] || applied[z][z])))
            .collect();
        EntryOrder {
            ready,
            applied,
            blocked,
        }
    }

    /// Whether `z` is Ready before `y` is applied.
    pub(crate) fn ready_before(&self, y: usize, z: usize) -> bool {
        self.ready[y][z]
    }

    /// Whether `z`'s objects were applied before `y`'s (its own objects count too).
    pub(crate) fn applied_before(&self, y: usize, z: usize) -> bool {
        y == z || self.applied[y][z]
    }

    /// Whether `y` never gets applied (ORD005 or ORD006 stands before it).
    pub(crate) fn blocked(&self, y: usize) -> bool {
        self.blocked[y]
    }
}
