//! The `plumb.diff/v1` document (documented in `docs/diff.md` and `docs/diff.schema.json`).

use crate::{Diff, ProducerDiff, Revision, Unknown};
use serde_json::{json, Value};

/// The document for `diff` between `base` and `head`.
pub fn document(diff: &Diff, base: &Revision, head: &Revision) -> Value {
    let counts = diff.counts();
    json!({
        "schema": "plumb.diff/v1",
        "base": revision(base),
        "head": revision(head),
        "summary": {
            "clusters": diff.clusters.len(),
            "changed_producers": diff.clusters.iter().flat_map(|c| &c.producers).filter(|p| p.is_interesting()).count(),
            "added": counts.added,
            "changed": counts.changed,
            "removed": counts.removed,
            "moved": counts.moved,
            "dangers": diff.dangers.len(),
            "noise": diff.noise.len(),
            "uncompared": diff.uncompared(),
        },
        "clusters": diff.clusters.iter().map(|c| json!({
            "entry": c.entry,
            "in_base": c.in_base,
            "in_head": c.in_head,
            "producers": c.producers.iter().filter(|p| p.is_interesting()).map(producer).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "images": diff.images.iter().map(|i| json!({
            "repository": i.repository,
            "from": i.from,
            "to": i.to,
            "major": i.major,
            "objects": i.objects,
        })).collect::<Vec<_>>(),
        "charts": diff.charts.iter().map(|c| json!({
            "entry": c.entry,
            "release": c.release.to_string(),
            "chart": c.chart,
            "from": c.from,
            "to": c.to,
            "major": c.major,
        })).collect::<Vec<_>>(),
        "dangers": diff.dangers.iter().map(|d| json!({
            "code": d.code,
            "entry": d.entry,
            "producer": d.producer.to_string(),
            "object": object(&d.object),
            "message": d.message,
        })).collect::<Vec<_>>(),
        "noise": diff.noise.iter().map(|n| json!({
            "entry": n.entry,
            "producer": n.producer.to_string(),
            "object": object(&n.object),
            "why": n.why,
        })).collect::<Vec<_>>(),
    })
}

fn revision(r: &Revision) -> Value {
    json!({
        "label": r.label,
        "commit": r.commit,
        "summary": r.summary,
    })
}

fn object(k: &crate::ObjectKey) -> Value {
    json!({
        "group": k.group,
        "kind": k.kind,
        "namespace": k.namespace,
        "name": k.name,
    })
}

fn unknown(u: &Option<Unknown>) -> Value {
    match u {
        None => Value::Null,
        Some(Unknown::Failed(errors)) => json!({"status": "failed", "errors": errors}),
        Some(Unknown::NotBuilt(reason)) => json!({"status": "not-built", "reason": reason}),
    }
}

fn producer(p: &ProducerDiff) -> Value {
    let c = p.counts();
    json!({
        "kind": p.id.kind.as_str(),
        "namespace": p.id.namespace,
        "name": p.id.name,
        "title": p.title,
        "in_base": p.in_base,
        "in_head": p.in_head,
        "compared": p.compared(),
        "base_unknown": unknown(&p.base_unknown),
        "head_unknown": unknown(&p.head_unknown),
        "counts": {"added": c.added, "changed": c.changed, "removed": c.removed, "moved": c.moved},
        "changes": p.changes.iter().map(|ch| {
            let mut v = json!({
                "action": ch.action.as_str(),
                "object": object(&ch.object),
                "diff": ch.diff,
            });
            if let Some(map) = v.as_object_mut() {
                if let Some(from) = &ch.moved_from {
                    map.insert("moved_from".into(), json!(from.to_string()));
                }
                if let Some(name) = &ch.renamed_from {
                    map.insert("renamed_from".into(), json!(name));
                }
            }
            v
        }).collect::<Vec<_>>(),
    })
}
