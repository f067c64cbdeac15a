//! Name references: after every level is built and generated names got their hashes, a field
//! that names another object (a Deployment's `configMapRef`, a RoleBinding's `roleRef`) is
//! rewritten to that object's final name. The candidates are the objects whose previous names
//! include the written name, narrowed as kustomize narrows them: right kind, reachable from the
//! referrer's namespace, same name prefixes and suffixes; more than one distinct answer is an
//! error.

use crate::build::ResourceList;
use crate::context::Context;
use crate::error::KustomizeError;
use crate::fieldspec::{Create, FieldSpec};
use crate::resource::{Gvk, ResId, Resource};
use plumb_yaml::{Node, NodeKind};
use std::collections::HashSet;

/// Which fields of which kinds may name an object of kind `target`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackReference {
    pub target: Gvk,
    pub referrers: Vec<FieldSpec>,
}

/// Reads a `nameReference:` list (the default data or a `configurations:` file).
pub fn parse(node: &Node) -> Result<Vec<BackReference>, KustomizeError> {
    let Some(items) = node.as_sequence() else {
        return Ok(Vec::new());
    };
    items
        .iter()
        .map(|item| {
            let text = |k: &str| item.str_at(&[k]).unwrap_or("").to_string();
            let referrers = match item.get("fieldSpecs") {
                Some(specs) => FieldSpec::list_from_node(specs)?,
                None => Vec::new(),
            };
            Ok(BackReference {
                target: Gvk {
                    group: text("group").into(),
                    version: text("version").into(),
                    kind: text("kind").into(),
                },
                referrers,
            })
        })
        .collect()
}

/// Adds `extra` to `base` the way kustomize merges configurations: referrers of an existing
/// target are appended (without duplicates), new targets are added at the end.
pub fn merge(base: &mut Vec<BackReference>, extra: Vec<BackReference>) {
    for br in extra {
        match base.iter_mut().find(|b| b.target == br.target) {
            Some(existing) => {
                for spec in br.referrers {
                    if !existing.referrers.contains(&spec) {
                        existing.referrers.push(spec);
                    }
                }
            }
            None => base.push(br),
        }
    }
}

/// Whether a selector GVK (empty parts are wildcards) selects `gvk`.
fn selects(selector: &Gvk, gvk: &Gvk) -> bool {
    (selector.group.is_empty() || selector.group == gvk.group)
        && (selector.version.is_empty() || selector.version == gvk.version)
        && (selector.kind.is_empty() || selector.kind == gvk.kind)
}

/// Rewrites every name reference in `list` to the current name of the object it names.
pub fn run(
    list: &mut ResourceList,
    back_refs: &[BackReference],
    ctx: &Context,
) -> Result<(), KustomizeError> {
    let n = list.resources.len();
    for i in 0..n {
        let orig_gvk = list.resources[i].original_id().gvk;
        let mut jobs: Vec<(&Gvk, &FieldSpec)> = Vec::new();
        for br in back_refs {
            for spec in &br.referrers {
                if spec.selects(&orig_gvk) {
                    jobs.push((&br.target, spec));
                }
            }
        }
        if jobs.is_empty() {
            continue;
        }
        let candidates = subset_referable_by(list, i, ctx)?;
        for (target, spec) in jobs {
            // Most specs name a field the referrer does not have: nothing to copy then.
            if !spec.reaches(&list.resources[i].node) {
                continue;
            }
            // The referrer is edited on a copy so that the candidates (which may include the
            // referrer itself) stay readable.
            let mut node = list.resources[i].node.clone();
            let referrer = &list.resources[i];
            let fixer = Fixer {
                referrer,
                target,
                spec,
                candidates: candidates.iter().map(|&c| &list.resources[c]).collect(),
                ctx,
            };
            let mut result = Ok(());
            spec.apply(&mut node, Create::Nothing, &mut |leaf| {
                if result.is_ok() {
                    result = fixer.set(leaf);
                }
                Ok(())
            })?;
            result.map_err(|e| {
                KustomizeError::Other(format!(
                    "updating name reference in '{}' field of '{}': {e}",
                    spec.path_string(),
                    list.resources[i].id()
                ))
            })?;
            list.resources[i].node = node;
        }
    }
    Ok(())
}

/// kustomize's `IsCertainlyClusterScoped`: its builtin table first, then the schema.
fn is_cluster_scoped(id: &ResId, ctx: &Context) -> bool {
    let (api_version, kind) = (id.gvk.api_version(), &id.gvk.kind);
    crate::schema::Schema::builtin()
        .is_namespaced(&api_version, kind)
        .or_else(|| ctx.schema.is_namespaced(&api_version, kind))
        == Some(false)
}

/// The namespace kustomize compares: cluster-scoped objects have none, an empty one is
/// `default`.
fn effective_namespace<'a>(id: &'a ResId, ctx: &Context) -> Option<&'a str> {
    if is_cluster_scoped(id, ctx) {
        None
    } else if id.namespace.is_empty() {
        Some("default")
    } else {
        Some(&id.namespace)
    }
}

/// The resources the referrer at `index` could name: everything for a cluster-scoped
/// referrer; otherwise cluster-scoped objects, objects in its namespace, and for a RoleBinding
/// the namespaces of its ServiceAccount subjects.
fn subset_referable_by(
    list: &ResourceList,
    index: usize,
    ctx: &Context,
) -> Result<Vec<usize>, KustomizeError> {
    let referrer = &list.resources[index];
    let rid = referrer.id();
    if is_cluster_scoped(&rid, ctx) {
        return Ok((0..list.resources.len()).collect());
    }
    let binding_namespaces = role_binding_namespaces(referrer)?;
    let rns = effective_namespace(&rid, ctx);
    Ok(list
        .resources
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            let id = r.id();
            is_cluster_scoped(&id, ctx)
                || effective_namespace(&id, ctx) == rns
                || binding_namespaces.contains(r.namespace())
        })
        .map(|(i, _)| i)
        .collect())
}

fn role_binding_namespaces(r: &Resource) -> Result<HashSet<String>, KustomizeError> {
    let mut out = HashSet::new();
    if r.kind() != "RoleBinding" {
        return Ok(out);
    }
    for subject in r
        .node
        .get("subjects")
        .and_then(Node::as_sequence)
        .into_iter()
        .flatten()
    {
        let (Some(ns), Some("ServiceAccount")) =
            (subject.get("namespace"), subject.str_at(&["kind"]))
        else {
            continue;
        };
        match plumb_yaml::to_json(ns) {
            Ok(serde_json::Value::String(s)) => {
                out.insert(s);
            }
            _ => {
                return Err(KustomizeError::Other(format!(
                    "Invalid Input: namespace is blank for resource {:?}\n",
                    r.id().to_string()
                )))
            }
        }
    }
    Ok(out)
}

struct Fixer<'a> {
    referrer: &'a Resource,
    target: &'a Gvk,
    spec: &'a FieldSpec,
    candidates: Vec<&'a Resource>,
    ctx: &'a Context,
}

impl Fixer<'_> {
    fn set(&self, node: &mut Node) -> Result<(), KustomizeError> {
        if node.is_null() {
            return Ok(());
        }
        match &node.kind {
            NodeKind::Scalar(_) => self.set_scalar(node),
            NodeKind::Mapping(_) => self.set_mapping(node),
            NodeKind::Sequence(_) => {
                if let Some(items) = node.as_sequence_mut() {
                    for item in items.iter_mut() {
                        match &item.kind {
                            NodeKind::Scalar(_) => self.set_scalar(item)?,
                            NodeKind::Mapping(_) => self.set_mapping(item)?,
                            NodeKind::Sequence(_) => {
                                return Err(KustomizeError::Other(
                                    "expected a scalar or a mapping in the sequence".into(),
                                ))
                            }
                        }
                    }
                }
                Ok(())
            }
        }
    }

    fn set_scalar(&self, node: &mut Node) -> Result<(), KustomizeError> {
        let old = node.scalar_value().unwrap_or("").to_string();
        let Some(referral) = self.select(&old, &self.candidates, false)? else {
            return Ok(());
        };
        if referral.name() != old {
            *node = Node::string(referral.name()).with_span(node.span.clone());
        }
        Ok(())
    }

    fn set_mapping(&self, node: &mut Node) -> Result<(), KustomizeError> {
        let Some(old) = node
            .get("name")
            .and_then(Node::scalar_value)
            .map(str::to_string)
        else {
            return Err(KustomizeError::Other(
                "path config error; no 'name' field in node".into(),
            ));
        };
        // The candidates in the field's namespace, as kustomize groups them: by the effective
        // namespace of their original id (no namespace is `default`; cluster-scoped objects are
        // in none), else of their current one. A subject `namespace: default` names a
        // ServiceAccount written without a namespace (mthorley/k8s-gitops).
        let candidates: Vec<&Resource> = match node.get("namespace").and_then(Node::scalar_value) {
            None => self.candidates.clone(),
            Some(ns) => {
                let in_namespace = |id: &ResId| effective_namespace(id, self.ctx) == Some(ns);
                let by_original: Vec<&Resource> = self
                    .candidates
                    .iter()
                    .copied()
                    .filter(|r| in_namespace(&r.original_id()))
                    .collect();
                if !by_original.is_empty() {
                    by_original
                } else {
                    self.candidates
                        .iter()
                        .copied()
                        .filter(|r| in_namespace(&r.id()))
                        .collect()
                }
            }
        };
        let Some(referral) = self.select(&old, &candidates, true)? else {
            return Ok(());
        };
        if referral.name() == old && referral.namespace().is_empty() {
            return Ok(());
        }
        node.set("name", Node::string(referral.name()));
        if !referral.namespace().is_empty() {
            node.set("namespace", Node::string(referral.namespace()));
        }
        Ok(())
    }

    fn select<'r>(
        &self,
        old: &str,
        candidates: &[&'r Resource],
        with_namespace: bool,
    ) -> Result<Option<&'r Resource>, KustomizeError> {
        let mut c: Vec<&Resource> = candidates
            .iter()
            .copied()
            .filter(|r| r.previous_ids.iter().any(|id| id.name == old))
            .filter(|r| {
                r.previous_ids
                    .iter()
                    .any(|id| selects(self.target, &id.gvk))
            })
            .collect();
        if self.spec.path_string().ends_with("roleRef/name") {
            if let Some(role_gvk) = role_ref_gvk(self.referrer) {
                c.retain(|r| r.previous_ids.iter().any(|id| selects(&role_gvk, &id.gvk)));
            }
        }
        let rid = self.referrer.id();
        if !is_cluster_scoped(&rid, self.ctx) {
            let rns = effective_namespace(&rid, self.ctx);
            c.retain(|r| {
                let id = r.id();
                is_cluster_scoped(&id, self.ctx)
                    || r.kind() == "ServiceAccount"
                    || effective_namespace(&id, self.ctx) == rns
            });
        }
        if c.len() == 1 {
            return Ok(Some(c[0]));
        }
        c.retain(|r| {
            same_ending(&r.prefixes, &self.referrer.prefixes)
                && same_ending(&r.suffixes, &self.referrer.suffixes)
        });
        match c.len() {
            0 => Ok(None),
            1 => Ok(Some(c[0])),
            _ => {
                let identical = c.iter().all(|r| {
                    r.name() == c[0].name()
                        && (!with_namespace || r.namespace() == c[0].namespace())
                });
                if identical {
                    Ok(Some(c[0]))
                } else {
                    let ids: Vec<String> = c.iter().map(|r| r.id().to_string()).collect();
                    Err(KustomizeError::Other(format!(
                        " found multiple possible referrals: {}",
                        ids.join(", ")
                    )))
                }
            }
        }
    }
}

fn role_ref_gvk(r: &Resource) -> Option<Gvk> {
    let role_ref = r.node.get("roleRef")?;
    Some(Gvk {
        group: role_ref.str_at(&["apiGroup"])?.into(),
        version: Default::default(),
        kind: role_ref.str_at(&["kind"])?.into(),
    })
}

/// Whether the shorter list is the tail of the longer (both empty counts as equal).
fn same_ending(a: &[String], b: &[String]) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.is_empty() {
        return long.is_empty();
    }
    long.ends_with(short)
}
