use super::scope::{self, Produced};
use crate::finding::Finding;
use crate::rule::{CheckContext, Rule};
use plumb_flux::postbuild::ObjectLookup;
use plumb_flux::unseen::unbuilt_holder;

/// ## What it does
/// Finds `postBuild.substituteFrom` entries naming a ConfigMap or Secret that no Kustomization
/// of the cluster produces in the Kustomization's namespace, and that are not marked
/// `optional: true`. One whose manifest is in the repository where no Kustomization applies it
/// (a bootstrap script's secrets) is applied outside Flux, and is not reported. Where a
/// Kustomization of the cluster was not built (its source or a remote resource could not be
/// fetched) and could hold the object (no `targetNamespace`, or that namespace), whether it
/// exists is not known, and nothing is reported.
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
        // A source whose manifest the repository holds where no Kustomization applies it is
        // applied outside Flux (wahooli/gitops-repo: `scripts/bootstrap-flux.sh` applies
        // `local-clusters/<cluster>/bootstrap`): whether it exists is not known here. The
        // repository is read for it once, and only when some source is missing.
        let mut applied_elsewhere: Option<Applied> = None;
        for entry in &cx.build.entries {
            let produced = Produced::of(entry);
            // Each missing source of the cluster once, with every Kustomization naming it: one
            // object to create, however many Kustomizations wait for it (mthorley/k8s-gitops:
            // 16 Kustomizations substitute from a Secret the repository does not hold).
            let mut missing: Vec<Missing> = Vec::new();
            for ks in &entry.kustomizations {
                let flux = &ks.kustomization;
                let Some(post) = &flux.post_build else {
                    continue;
                };
                for (i, reference) in post.substitute_from.iter().enumerate() {
                    let kind = reference.kind.as_str();
                    if reference.optional
                        || !matches!(kind, "ConfigMap" | "Secret")
                        || produced.holds(kind, &flux.namespace, &reference.name)
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
                    let source = (
                        kind.to_string(),
                        flux.namespace.clone(),
                        reference.name.clone(),
                    );
                    let user = (flux.key(), location);
                    match missing.iter_mut().find(|m| m.source == source) {
                        Some(m) if m.users.contains(&user) => {}
                        Some(m) => m.users.push(user),
                        None => missing.push(Missing {
                            source,
                            users: vec![user],
                            chain: ks.chain.clone(),
                        }),
                    }
                }
            }
            for m in missing {
                let outside = applied_elsewhere.get_or_insert_with(|| Applied::of(cx));
                if !outside.defines(&m.source) {
                    out.push(finding(cx, &produced, m));
                }
            }
        }
    }
}

/// The ConfigMaps and Secrets the repository's files define where no Kustomization of any
/// cluster builds them: (kind, namespace as written, name).
struct Applied(Vec<(String, Option<String>, String)>);

impl Applied {
    fn of(cx: &CheckContext<'_>) -> Applied {
        let chains = crate::rules::repo_files::Chains::of(cx.build, cx.root);
        let mut defined = Vec::new();
        for file in crate::rules::repo_files::yaml_files(cx.root, &["ConfigMap", "Secret"]) {
            for doc in &file.docs {
                let kind = doc.str_at(&["kind"]).unwrap_or_default();
                let name = doc.str_at(&["metadata", "name"]).unwrap_or_default();
                if !matches!(kind, "ConfigMap" | "Secret")
                    || name.is_empty()
                    || !chains.get(&file.rel, doc).is_empty()
                {
                    continue;
                }
                let namespace = doc.str_at(&["metadata", "namespace"]).map(str::to_string);
                defined.push((kind.to_string(), namespace, name.to_string()));
            }
        }
        Applied(defined)
    }

    /// Whether `source` is one of them: in its namespace, or written with none (applied into
    /// whichever namespace the script names).
    fn defines(&self, source: &(String, String, String)) -> bool {
        let (kind, namespace, name) = source;
        self.0.iter().any(|(k, ns, n)| {
            k == kind && n == name && ns.as_deref().is_none_or(|ns| ns == namespace)
        })
    }
}

/// A ConfigMap or Secret no Kustomization of the cluster produces: (kind, namespace, name),
/// and the Kustomizations that substitute from it, each with where it names it.
struct Missing {
    source: (String, String, String),
    users: Vec<(String, Option<crate::finding::Location>)>,
    chain: Vec<String>,
}

fn finding(cx: &CheckContext<'_>, produced: &Produced<'_>, m: Missing) -> Finding {
    let (kind, namespace, name) = &m.source;
    let who = match m.users.len() {
        1 => format!("Kustomization {} substitutes", m.users[0].0),
        n => {
            let shown: Vec<&str> = m.users.iter().take(3).map(|(k, _)| k.as_str()).collect();
            let more = match n > 3 {
                true => format!(" and {} more", n - 3),
                false => String::new(),
            };
            format!("{n} Kustomizations ({}{more}) substitute", shown.join(", "))
        }
    };
    let fails = if m.users.len() == 1 {
        "it fails"
    } else {
        "each fails"
    };
    let message = format!(
        "{who} from {kind} {namespace}/{name}, which no Kustomization of this cluster produces: {fails} with \"{name} not found\" until something creates it"
    );
    let mut finding = Finding::new(
        "SUB004",
        message,
        format!(
            "create the {kind} in the Kustomization's namespace `{namespace}` from a Kustomization this one depends on, fix the name, or mark the reference `optional: true` if it may be absent"
        ),
    )
    .at(m.users[0].1.clone())
    .with_chain(&m.chain);
    for (key, location) in m.users.iter().skip(1) {
        finding = finding.related(
            location.clone(),
            format!("Kustomization {key} substitutes from it too"),
        );
    }
    for other in produced.named(kind, name) {
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
    finding
}
