//! Pairing two snapshots object by object.

use crate::mask::Masker;
use crate::noise;
use crate::snapshot::{Cluster, Producer, ProducerId, Snapshot, State};
use crate::unified::unified;
use crate::{Action, Change, ClusterDiff, Diff, Noise, ObjectKey, Options, ProducerDiff, Unknown};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// Compares `base` with `head`.
pub fn diff(base: &Snapshot, head: &Snapshot, options: &Options) -> Diff {
    let masker = Masker::new(base, head);
    let mut out = Diff {
        show_noise: options.show_noise,
        ..Diff::default()
    };
    let mut entries: Vec<&str> = head.clusters.iter().map(|c| c.entry.as_str()).collect();
    for c in &base.clusters {
        if !entries.contains(&c.entry.as_str()) {
            entries.push(&c.entry);
        }
    }
    for entry in entries {
        let b = base.clusters.iter().find(|c| c.entry == entry);
        let h = head.clusters.iter().find(|c| c.entry == entry);
        let (cluster, noise) = compare_cluster(entry, b, h, &masker, options);
        out.noise.extend(noise);
        out.dangers.extend(crate::danger::find(&cluster, b, h));
        out.images.extend(crate::summary::images(&cluster));
        out.charts.extend(crate::summary::charts(entry, b, h));
        out.clusters.push(cluster);
    }
    crate::summary::merge_images(&mut out.images);
    out
}

/// One side's producer and what it knows.
struct Known<'a> {
    producer: Option<&'a Producer>,
    unknown: Option<Unknown>,
}

fn compare_cluster(
    entry: &str,
    base: Option<&Cluster>,
    head: Option<&Cluster>,
    masker: &Masker,
    options: &Options,
) -> (ClusterDiff, Vec<Noise>) {
    let empty = Vec::new();
    let base_producers = base.map_or(&empty, |c| &c.producers);
    let head_producers = head.map_or(&empty, |c| &c.producers);
    let mut ids: Vec<&ProducerId> = head_producers.iter().map(|p| &p.id).collect();
    for p in base_producers {
        if !ids.contains(&&p.id) {
            ids.push(&p.id);
        }
    }
    let find = |list: &'_ [Producer], id: &ProducerId| list.iter().position(|p| &p.id == id);

    // Per producer, what each side knows about its objects.
    let mut producers: Vec<(ProducerId, Known, Known)> = Vec::new();
    for id in ids {
        let b = find(base_producers, id).map(|i| &base_producers[i]);
        let h = find(head_producers, id).map(|i| &head_producers[i]);
        let b_unknown = side_unknown(b, h, head_producers, base_producers);
        let h_unknown = side_unknown(h, b, base_producers, head_producers);
        producers.push((
            id.clone(),
            Known {
                producer: b,
                unknown: b_unknown,
            },
            Known {
                producer: h,
                unknown: h_unknown,
            },
        ));
    }

    // Objects of the producers compared, per side: key → producer index, value.
    let compared: Vec<bool> = producers
        .iter()
        .map(|(_, b, h)| b.unknown.is_none() && h.unknown.is_none())
        .collect();
    let objects_of = |known: &Known| -> Vec<(ObjectKey, Value)> {
        known.producer.map_or_else(Vec::new, |p| {
            p.objects
                .iter()
                .map(|o| (ObjectKey::of(o), o.clone()))
                .collect()
        })
    };
    let mut base_objects: Vec<Vec<(ObjectKey, Value)>> = Vec::new();
    let mut head_objects: Vec<Vec<(ObjectKey, Value)>> = Vec::new();
    for (i, (_, b, h)) in producers.iter().enumerate() {
        if compared[i] {
            base_objects.push(objects_of(b));
            head_objects.push(objects_of(h));
        } else {
            base_objects.push(Vec::new());
            head_objects.push(Vec::new());
        }
    }

    // Pairs by (producer, key); what is left on one side only.
    struct Pending {
        producer: usize,
        key: ObjectKey,
        value: Value,
    }
    let mut paired: Vec<(usize, ObjectKey, Value, Value)> = Vec::new();
    let mut added: Vec<Pending> = Vec::new();
    let mut removed: Vec<Pending> = Vec::new();
    for i in 0..producers.len() {
        let head_keys: HashSet<&ObjectKey> = head_objects[i].iter().map(|(k, _)| k).collect();
        let base_map: HashMap<&ObjectKey, &Value> =
            base_objects[i].iter().map(|(k, v)| (k, v)).collect();
        for (key, value) in &head_objects[i] {
            match base_map.get(key) {
                Some(b) => paired.push((i, key.clone(), (*b).clone(), value.clone())),
                None => added.push(Pending {
                    producer: i,
                    key: key.clone(),
                    value: value.clone(),
                }),
            }
        }
        for (key, value) in &base_objects[i] {
            if !head_keys.contains(key) {
                removed.push(Pending {
                    producer: i,
                    key: key.clone(),
                    value: value.clone(),
                });
            }
        }
    }

    // Moved: added under one producer, removed under another.
    let mut moved: Vec<(usize, usize, ObjectKey, Value, Value)> = Vec::new();
    let mut still_added = Vec::new();
    for a in added {
        match removed
            .iter()
            .position(|r| r.key == a.key && r.producer != a.producer)
        {
            Some(j) => {
                let r = removed.remove(j);
                moved.push((a.producer, r.producer, a.key, r.value, a.value));
            }
            None => still_added.push(a),
        }
    }
    let mut added = still_added;

    // Generated names whose hash changed: a removed and an added ConfigMap or Secret of one
    // producer with the same stem.
    let mut renamed: Vec<(usize, ObjectKey, String, Value, Value)> = Vec::new();
    let mut renames: HashMap<String, String> = HashMap::new();
    let mut i = 0;
    while i < added.len() {
        let a = &added[i];
        let stem = noise::generated_stem(&a.key.kind, &a.key.name);
        let partner = stem.and_then(|stem| {
            let same = |p: &Pending| {
                p.producer == a.producer
                    && p.key.kind == a.key.kind
                    && p.key.group == a.key.group
                    && p.key.namespace == a.key.namespace
                    && noise::generated_stem(&p.key.kind, &p.key.name) == Some(stem)
            };
            let candidates: Vec<usize> = removed
                .iter()
                .enumerate()
                .filter(|(_, r)| same(r))
                .map(|(j, _)| j)
                .collect();
            let rivals = added.iter().filter(|p| same(p)).count();
            (candidates.len() == 1 && rivals == 1).then(|| candidates[0])
        });
        match partner {
            Some(j) => {
                let r = removed.remove(j);
                let a = added.remove(i);
                let bare = |v: &Value| content(&noise::normalise(v, &HashMap::new()));
                if bare(&r.value) == bare(&a.value) {
                    renames.insert(a.key.name.clone(), r.key.name.clone());
                }
                renamed.push((a.producer, a.key, r.key.name, r.value, a.value));
            }
            None => i += 1,
        }
    }

    let mut changes: Vec<Vec<Change>> = vec![Vec::new(); producers.len()];
    let mut noise_out = Vec::new();
    let no_renames = HashMap::new();
    let view = |v: &Value, renames: &HashMap<String, String>| -> Value {
        if options.show_noise {
            masker.mask(v)
        } else {
            masker.mask(&noise::normalise(v, renames))
        }
    };
    // What a pair's diff shows, once both sides are normalised already.
    let shown = |raw: &Value, normalised: &Value| -> Value {
        masker.mask(if options.show_noise { raw } else { normalised })
    };
    let title = |key: &ObjectKey| key.to_string();
    let mut note_noise = |producer: usize, key: &ObjectKey, why: String| {
        noise_out.push(Noise {
            entry: entry.to_string(),
            producer: producers[producer].0.clone(),
            object: key.clone(),
            why,
        });
    };

    for (p, key, b, h) in paired {
        if b == h {
            continue;
        }
        let (nb, nh) = (
            noise::normalise(&b, &no_renames),
            noise::normalise(&h, &renames),
        );
        if nb == nh {
            note_noise(p, &key, noise::describe(&b, &h, &renames));
            if !options.show_noise {
                continue;
            }
        }
        let diff = unified(&title(&key), Some(&shown(&b, &nb)), Some(&shown(&h, &nh)));
        let noise_hidden = !options.show_noise && noise::differs_in_noise(&b, &h, &renames);
        changes[p].push(Change {
            object: key,
            action: Action::Changed,
            moved_from: None,
            renamed_from: None,
            diff,
            noise_hidden,
            base: Some(b),
            head: Some(h),
        });
    }
    for (p, key, base_name, b, h) in renamed {
        let same = renames.get(&key.name) == Some(&base_name);
        if same {
            note_noise(
                p,
                &key,
                format!("generated name hash ({base_name} → {})", key.name),
            );
            if !options.show_noise {
                continue;
            }
        }
        // Compared under the base name, so that the diff shows the content.
        let mut h_view = h.clone();
        if !options.show_noise {
            if let Some(name) = h_view.pointer_mut("/metadata/name") {
                *name = Value::String(base_name.clone());
            }
        }
        let diff = unified(
            &format!("{} (was {base_name})", title(&key)),
            Some(&view(&b, &no_renames)),
            Some(&view(&h_view, &no_renames)),
        );
        changes[p].push(Change {
            object: key,
            action: Action::Changed,
            moved_from: None,
            renamed_from: Some(base_name),
            noise_hidden: !options.show_noise,
            diff,
            base: Some(b),
            head: Some(h),
        });
    }
    for (p, from, key, b, h) in moved {
        let (nb, nh) = (
            noise::normalise(&b, &no_renames),
            noise::normalise(&h, &renames),
        );
        let diff = if nb == nh && !options.show_noise {
            String::new()
        } else {
            unified(&title(&key), Some(&shown(&b, &nb)), Some(&shown(&h, &nh)))
        };
        let noise_hidden = !options.show_noise && noise::differs_in_noise(&b, &h, &renames);
        changes[p].push(Change {
            object: key,
            action: Action::Moved,
            moved_from: Some(producers[from].0.clone()),
            renamed_from: None,
            diff,
            noise_hidden,
            base: Some(b),
            head: Some(h),
        });
    }
    for a in added {
        let diff = unified(&title(&a.key), None, Some(&view(&a.value, &renames)));
        changes[a.producer].push(Change {
            object: a.key,
            action: Action::Added,
            moved_from: None,
            renamed_from: None,
            diff,
            noise_hidden: false,
            base: None,
            head: Some(a.value),
        });
    }
    for r in removed {
        let diff = unified(&title(&r.key), Some(&view(&r.value, &no_renames)), None);
        changes[r.producer].push(Change {
            object: r.key,
            action: Action::Removed,
            moved_from: None,
            renamed_from: None,
            diff,
            noise_hidden: false,
            base: Some(r.value),
            head: None,
        });
    }

    // Each producer's changes in its head order, then what only the base side had.
    let mut out = Vec::new();
    for (i, ((id, b, h), mut list)) in producers.into_iter().zip(changes).enumerate() {
        let order = |key: &ObjectKey, base: bool| -> usize {
            let list = if base {
                &base_objects[i]
            } else {
                &head_objects[i]
            };
            let offset = if base { head_objects[i].len() } else { 0 };
            list.iter()
                .position(|(k, _)| k == key)
                .map_or(usize::MAX, |p| p + offset)
        };
        list.sort_by_key(|c| match c.action {
            Action::Removed => order(&c.object, true),
            _ => order(&c.object, false),
        });
        let title = h
            .producer
            .or(b.producer)
            .map(|p| p.title.clone())
            .unwrap_or_else(|| id.to_string());
        out.push(ProducerDiff {
            id,
            title,
            in_base: b.producer.is_some(),
            in_head: h.producer.is_some(),
            base_unknown: b.unknown,
            head_unknown: h.unknown,
            changes: list,
            render_unknown: false,
        });
    }
    let changed_releases: HashSet<(String, String)> = out
        .iter()
        .flat_map(|p| &p.changes)
        .filter(|c| c.object.is("helm.toolkit.fluxcd.io", "HelmRelease"))
        .map(|c| {
            let ns = if c.object.namespace.is_empty() {
                "default".to_string()
            } else {
                c.object.namespace.clone()
            };
            (ns, c.object.name.clone())
        })
        .collect();
    // ConfigMaps and Secrets that changed, by (kind, namespace, name): the values a release
    // reads through `valuesFrom`.
    let changed_values: HashSet<(String, String, String)> = out
        .iter()
        .flat_map(|p| &p.changes)
        .filter(|c| {
            c.object.group.is_empty() && matches!(c.object.kind.as_str(), "ConfigMap" | "Secret")
        })
        .map(|c| {
            (
                c.object.kind.clone(),
                c.object.namespace.clone(),
                c.object.name.clone(),
            )
        })
        .collect();
    let release_objects: Vec<&Value> = head_producers
        .iter()
        .chain(base_producers.iter())
        .flat_map(|p| &p.objects)
        .filter(|o| ObjectKey::of(o).is("helm.toolkit.fluxcd.io", "HelmRelease"))
        .collect();
    let reads_changed_values = |namespace: &str, name: &str| {
        release_objects
            .iter()
            .filter(|o| {
                let key = ObjectKey::of(o);
                key.name == name
                    && (key.namespace == namespace
                        || (key.namespace.is_empty() && namespace == "default"))
            })
            .flat_map(|o| {
                o.pointer("/spec/valuesFrom")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .any(|v| {
                let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
                let values_name = v.get("name").and_then(Value::as_str).unwrap_or("");
                changed_values.contains(&(
                    kind.to_string(),
                    namespace.to_string(),
                    values_name.to_string(),
                ))
            })
    };
    for p in &mut out {
        if p.id.kind == crate::ProducerKind::HelmRelease && !p.compared() {
            p.render_unknown = changed_releases
                .contains(&(p.id.namespace.clone(), p.id.name.clone()))
                || reads_changed_values(&p.id.namespace, &p.id.name);
        }
    }
    (
        ClusterDiff {
            entry: entry.to_string(),
            in_base: base.is_some(),
            in_head: head.is_some(),
            producers: out,
        },
        noise_out,
    )
}

/// Why one side's objects of a producer are unknown: it fails or was not built there; or it is
/// absent there while an ancestor it had on the other side is present but not built (its
/// objects are not "removed": the build that would say so did not happen).
fn side_unknown(
    this: Option<&Producer>,
    other: Option<&Producer>,
    other_side: &[Producer],
    this_side: &[Producer],
) -> Option<Unknown> {
    if let Some(p) = this {
        return match &p.state {
            State::Built => None,
            State::Failed(errors) => Some(Unknown::Failed(errors.clone())),
            State::NotBuilt(reason) => Some(Unknown::NotBuilt(reason.clone())),
        };
    }
    // Absent on this side: walk the other side's ancestors up to one this side has.
    let mut parent = other.and_then(|p| p.parent.clone());
    let mut seen = HashSet::new();
    while let Some(id) = parent {
        if !seen.insert(id.clone()) {
            break;
        }
        if let Some(p) = this_side.iter().find(|p| p.id == id) {
            return match &p.state {
                State::Built => None,
                State::Failed(_) => Some(Unknown::NotBuilt(format!(
                    "{id} fails, so what it applies is not known"
                ))),
                State::NotBuilt(why) => {
                    Some(Unknown::NotBuilt(format!("{id} was not built ({why})")))
                }
            };
        }
        parent = other_side
            .iter()
            .find(|p| p.id == id)
            .and_then(|p| p.parent.clone());
    }
    None
}

/// An object without its name: what a generated ConfigMap or Secret holds.
fn content(value: &Value) -> Value {
    let mut v = value.clone();
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("name");
    }
    v
}
