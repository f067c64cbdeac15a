use super::{cluster_vars, entry_chain, overlay_dirs, overlay_of, resolve, vars_objects, Overlay};
use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};
use crate::rules::sub::scope;
use plumb_yaml::Node;

/// ## What it does
/// Finds variables listed in `overlays.mustSet` of `.plumb.yaml` that an environment overlay
/// does not set: the cluster's value comes from the base's defaults. The cluster's variables
/// are those its top Kustomizations substitute from; a variable is set by the overlay when the
/// text of its final value is in the overlay's directory.
///
/// ## Why is this bad?
/// Some values must differ per cluster: its name, its domain, its addresses. A base default for
/// them is convenient for the first cluster and wrong for the second, which then announces the
/// first cluster's load-balancer address or requests certificates for its domain. Nothing fails
/// at build time; the clusters fight at runtime.
///
/// ## Example
/// ```yaml
/// # .plumb.yaml
/// overlays:
///   mustSet: [CLUSTER_NAME, GATEWAY_VIP]
/// ---
/// # clusters/prod/cluster-vars.yaml: GATEWAY_VIP comes from clusters/base
/// data:
///   CLUSTER_NAME: prod
/// ```
///
/// Use instead:
/// ```yaml
/// data:
///   CLUSTER_NAME: prod
///   GATEWAY_VIP: 10.20.0.200
/// ```
pub struct InheritedBaseDefault;

impl Rule for InheritedBaseDefault {
    fn code(&self) -> &'static str {
        "ENV003"
    }

    fn summary(&self) -> &'static str {
        "a var an overlay must set is inherited from the base default"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        let must_set = &cx.config.overlays.must_set;
        if must_set.is_empty() {
            return;
        }
        let vars_objects = vars_objects(cx);
        for dir in overlay_dirs(cx) {
            let Some(overlay) = Overlay::read(&cx.build.root, &dir) else {
                continue;
            };
            let here = vars_patch(cx, &overlay, &vars_objects);
            for entry in cx
                .build
                .entries
                .iter()
                .filter(|e| overlay_of(&dir, &e.entry))
            {
                let vars = cluster_vars(entry);
                for name in must_set {
                    let Some(definition) = vars.get(name) else {
                        continue;
                    };
                    let Some(span) = definition.node.as_ref().and_then(|n| n.span.as_ref()) else {
                        continue;
                    };
                    if scope::file_in_dir(cx, span.file.path(), &dir) {
                        continue;
                    }
                    let base = definition
                        .node
                        .as_ref()
                        .and_then(|n| scope::location_of(cx, n));
                    out.push(
                        Finding::new(
                            "ENV003",
                            format!(
                                "`{name}` must be set by overlay {dir} (overlays.mustSet), but cluster {} inherits the base default `{}`",
                                entry.entry, definition.value
                            ),
                            format!("set `{name}` in the overlay's patch of the vars ConfigMap"),
                        )
                        .at(here.clone().or_else(|| base.clone()))
                        .related(base, "the base default it inherits")
                        .with_chain(&entry_chain(entry)),
                    );
                }
            }
        }
    }
}

/// Where the overlay patches the vars ConfigMap (its `data:` key), else the overlay's
/// `kustomization.yaml`.
fn vars_patch(
    cx: &CheckContext<'_>,
    overlay: &Overlay,
    vars_objects: &[(String, String)],
) -> Option<Location> {
    let files = ["patches", "patchesStrategicMerge"]
        .iter()
        .filter_map(|k| overlay.doc.get(k).and_then(Node::as_sequence))
        .flatten()
        .filter_map(|item| item.str_at(&["path"]).or(item.scalar_value()))
        .filter_map(|p| resolve(&overlay.dir, p));
    for file in files {
        let path = cx.build.root.join(&file);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(docs) = plumb_yaml::parse_documents(&path, &text) else {
            continue;
        };
        for doc in docs {
            let (Some(kind), Some(name)) =
                (doc.str_at(&["kind"]), doc.str_at(&["metadata", "name"]))
            else {
                continue;
            };
            if vars_objects.iter().any(|(k, n)| k == kind && n == name) {
                let key = doc
                    .as_mapping()
                    .and_then(|m| m.iter().find(|(k, _)| k.scalar_value() == Some("data")))
                    .map(|(k, _)| k.clone());
                return scope::location_of(cx, key.as_ref().unwrap_or(&doc));
            }
        }
    }
    scope::location_of(cx, &overlay.doc)
}
