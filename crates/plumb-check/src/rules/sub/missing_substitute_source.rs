use super::scope::{self, Produced};
use crate::finding::Finding;
use crate::rule::{CheckContext, Rule};
use plumb_flux::postbuild::ObjectLookup;
use plumb_flux::unseen::unbuilt_holder;
use std::collections::HashSet;

/// ## What it does
/// Finds `postBuild.substituteFrom` entries naming a ConfigMap or Secret that no Kustomization
/// of the cluster produces in the Kustomization's namespace, and that are not marked
/// `optional: true`. Where a Kustomization of the cluster was not built (its source or a remote
/// resource could not be fetched) and could hold the object (no `targetNamespace`, or that
/// namespace), whether it exists is not known, and nothing is reported.
///
/// ## Why is this bad?
/// kustomize-controller reads the variables from the cluster before it builds. A missing
/// ConfigMap or Secret fails the Kustomization ("substitute from 'ConfigMap/cluster-vars'
/// error: configmaps \"cluster-vars\" not found"), on every reconciliation, until something
/// creates it. A common cause is a name or namespace that differs from the one the entry
/// Kustomization applies.
///
/// ## Example
/// ```yaml
/// spec:
///   postBuild:
///     substituteFrom:
///       - kind: ConfigMap
///         name: cluster-settings   # the repository defines `cluster-vars`
/// ```
///
/// Use instead:
/// ```yaml
/// spec:
///   postBuild:
///     substituteFrom:
///       - kind: ConfigMap
///         name: cluster-vars
///       - kind: Secret
///         name: cluster-secrets   # created outside Git
///         optional: true
/// ```
pub struct MissingSubstituteSource;

impl Rule for MissingSubstituteSource {
    fn code(&self) -> &'static str {
        "SUB004"
    }

    fn summary(&self) -> &'static str {
        "`substituteFrom` names a ConfigMap/Secret that no Kustomization produces (and it is not `optional`)"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        let mut seen = HashSet::new();
        for entry in &cx.build.entries {
            let produced = Produced::of(entry);
            for ks in &entry.kustomizations {
                let flux = &ks.kustomization;
                let Some(post) = &flux.post_build else {
                    continue;
                };
                for (i, reference) in post.substitute_from.iter().enumerate() {
                    let kind = reference.kind.as_str();
                    if reference.optional
                        || !matches!(kind, "ConfigMap" | "Secret")
                        || produced
                            .find(kind, &flux.namespace, &reference.name)
                            .is_some()
                        || (kind == "Secret"
                            && produced
                                .runtime_secret(&flux.namespace, &reference.name)
                                .is_some())
                        || unbuilt_holder(&entry.kustomizations, &flux.namespace).is_some()
                    {
                        continue;
                    }
                    let item = flux
                        .object
                        .origin
                        .as_ref()
                        .and_then(|o| o.get_path(&["spec", "postBuild", "substituteFrom"]))
                        .and_then(|list| list.as_sequence())
                        .and_then(|items| items.get(i));
                    let location = item
                        .and_then(|n| n.get("name").or(Some(n)))
                        .and_then(|n| scope::location_of(cx, n))
                        .or_else(|| {
                            flux.object
                                .origin
                                .as_ref()
                                .and_then(|o| scope::location_of(cx, o))
                        });
                    let message = format!(
                        "Kustomization {} substitutes from {kind} {}/{}, which no Kustomization of this cluster produces: it fails with \"{} not found\" until something creates it",
                        flux.key(),
                        flux.namespace,
                        reference.name,
                        reference.name
                    );
                    if !seen.insert((location.clone(), message.clone())) {
                        continue;
                    }
                    let mut finding = Finding::new(
                        "SUB004",
                        message,
                        format!(
                            "create the {kind} in the Kustomization's namespace `{}` from a Kustomization this one depends on, fix the name, or mark the reference `optional: true` if it may be absent",
                            flux.namespace
                        ),
                    )
                    .at(location)
                    .with_chain(&ks.chain);
                    for other in produced.named(kind, &reference.name) {
                        finding = finding.related(
                            other
                                .origin
                                .as_ref()
                                .and_then(|o| scope::location_of(cx, o)),
                            format!(
                                "a {kind} of that name is produced in namespace `{}`",
                                other.namespace_or_default()
                            ),
                        );
                    }
                    out.push(finding);
                }
            }
        }
    }
}
