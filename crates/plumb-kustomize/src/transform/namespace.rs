//! `namespace:`: every namespaced object moves to the namespace (cluster-scoped kinds are left
//! alone), subjects named `default` of (Cluster)RoleBindings follow it, and the field specs add
//! the rest (a core `v1` Namespace is renamed to it; APIService and CRD webhook services).
//! Other RoleBinding subjects are the name-reference step's business.

use crate::build::ResourceList;
use crate::config::TransformerConfig;
use crate::context::Context;
use crate::error::KustomizeError;
use crate::fieldspec::{Create, FieldSpec};
use crate::kustomization::Kustomization;
use crate::resource::{ResId, Resource};
use crate::transform::values;
use plumb_yaml::{Node, ScalarStyle};

const METADATA_NAMESPACE: &str = "metadata/namespace";
const METADATA_NAME: &str = "metadata/name";
const SUBJECTS_NAMESPACE: &str = "subjects/namespace";

/// Cluster-scoped kinds the Kubernetes 1.21.2 schema does not know but kustomize api v0.21.3
/// treats as cluster-scoped (checked with kustomize-ref: only these `v1` admission policy kinds;
/// their beta and alpha versions, and other newer kinds, count as namespaced).
const EXTRA_CLUSTER_SCOPED: &[(&str, &str)] = &[
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
    ),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicyBinding",
    ),
];

fn is_namespaced(ctx: &Context, api_version: &str, kind: &str) -> bool {
    !EXTRA_CLUSTER_SCOPED.contains(&(api_version, kind)) && ctx.is_namespaced(api_version, kind)
}

/// Which subjects of (Cluster)RoleBindings take the namespace: the builtin
/// NamespaceTransformer's `setRoleBindingSubjects`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Subjects {
    /// Those named `default` (`defaultOnly`, the default).
    #[default]
    NamedDefault,
    /// Those of kind ServiceAccount (`allServiceAccounts`).
    ServiceAccounts,
    /// None (`none`).
    None,
}

impl Subjects {
    /// The mode `setRoleBindingSubjects` names (empty: the default), as kustomize refuses others.
    pub fn parse(text: &str) -> Result<Subjects, KustomizeError> {
        match text {
            "" | "defaultOnly" => Ok(Subjects::NamedDefault),
            "allServiceAccounts" => Ok(Subjects::ServiceAccounts),
            "none" => Ok(Subjects::None),
            other => Err(KustomizeError::Other(format!(
                "invalid value {other:?} for setRoleBindingSubjects: must be one of \"defaultOnly\", \"none\" or \"allServiceAccounts\""
            ))),
        }
    }
}

/// How the namespace is set: the builtin NamespaceTransformer's options; the kustomization's
/// `namespace:` uses the defaults.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// `unsetOnly`: only fields that are missing or empty are set.
    pub unset_only: bool,
    pub subjects: Subjects,
}

/// Applies the kustomization's `namespace:`.
pub fn run(
    k: &Kustomization,
    list: &mut ResourceList,
    ctx: &Context,
    config: &TransformerConfig,
) -> Result<(), KustomizeError> {
    run_with(k, list, ctx, config, Options::default())
}

/// [`run`] with the builtin transformer's options.
pub fn run_with(
    k: &Kustomization,
    list: &mut ResourceList,
    ctx: &Context,
    config: &TransformerConfig,
    options: Options,
) -> Result<(), KustomizeError> {
    let Some(node) = k.field("namespace") else {
        return Ok(());
    };
    let namespace = values::string(k, node, "namespace")?;
    if namespace.is_empty() {
        return Ok(());
    }
    // metadata/namespace is never left to the specs: they would reach cluster-scoped kinds.
    // Each with its path written out once, not for every resource.
    let specs: Vec<(&FieldSpec, String)> = config
        .namespace
        .iter()
        .map(|fs| (fs, fs.path_string()))
        .filter(|(_, path)| path != METADATA_NAMESPACE)
        .collect();
    // Each resource's id as it stands: changed by the step for that resource only, and read by
    // every step's check for a clash (compared as ids, not read from each node again).
    let mut ids: Vec<ResId> = list.resources.iter().map(Resource::id).collect();
    for i in 0..list.resources.len() {
        let r = &mut list.resources[i];
        let gvk = r.gvk();
        // kustomize records every resource's id before this transformer, cluster-scoped ones
        // and unchanged ones included: name references then see them as renamed candidates
        // (with kustomize-ref: a ClusterRoleBinding keeps naming its own, unsuffixed
        // ClusterRole only when a namespace transformer ran above both).
        r.previous_ids.push(ids[i].clone());
        if is_namespaced(ctx, r.api_version(), r.kind()) {
            if let Some(meta) = r.node.ensure_mapping("metadata") {
                if !options.unset_only || is_unset(meta.get("namespace")) {
                    meta.set("namespace", Node::string(namespace.as_str()));
                }
            }
        }
        let is_binding = matches!(gvk.kind.as_str(), "RoleBinding" | "ClusterRoleBinding");
        if is_binding {
            set_subjects(&mut r.node, &namespace, options);
        }
        // Only a core Namespace is renamed: other kinds called Namespace keep their names.
        let core = r.api_version() == "v1";
        for (fs, path) in &specs {
            let path = path.as_str();
            if !fs.selects(&gvk)
                || (!core && path == METADATA_NAME)
                || (is_binding
                    && path == SUBJECTS_NAMESPACE
                    && matches!(fs.kind.as_str(), "RoleBinding" | "ClusterRoleBinding"))
            {
                continue;
            }
            fs.apply(&mut r.node, Create::Scalar, &mut |leaf| {
                if options.unset_only && !is_unset(Some(leaf)) {
                    return Ok(());
                }
                set_scalar(leaf, &namespace, path)
            })?;
        }
        ids[i] = r.id();
        let id = &ids[i];
        if ids.iter().filter(|o| o.name == id.name && *o == id).count() > 1 {
            return Err(KustomizeError::Other(format!(
                "namespace transformation produces ID conflict: {id}"
            )));
        }
    }
    Ok(())
}

/// Sets the namespace of the subjects `options` selects: by default those named `default`.
fn set_subjects(node: &mut Node, namespace: &str, options: Options) {
    let Some(subjects) = node.get_mut("subjects").and_then(Node::as_sequence_mut) else {
        return;
    };
    for subject in subjects.iter_mut().filter(|s| s.is_mapping()) {
        let selected = match options.subjects {
            Subjects::NamedDefault => subject.str_at(&["name"]) == Some("default"),
            Subjects::ServiceAccounts => subject.str_at(&["kind"]) == Some("ServiceAccount"),
            Subjects::None => false,
        };
        if selected && (!options.unset_only || is_unset(subject.get("namespace"))) {
            subject.set("namespace", Node::string(namespace));
        }
    }
}

/// Whether a namespace field counts as unset for `unsetOnly`: missing, or a scalar with no text
/// (kustomize's `SetEntryIfEmpty`): `namespace: ""` or `namespace:`, not `~` or `null`. The
/// parser reads an empty value as `~` with an empty span, which tells the two apart.
fn is_unset(field: Option<&Node>) -> bool {
    let Some(node) = field else {
        return true;
    };
    match node.as_scalar() {
        Some(s) if s.value.is_empty() => true,
        Some(s) if s.value == "~" && s.style == ScalarStyle::Plain => node
            .span
            .as_ref()
            .is_some_and(|span| span.start == span.end),
        _ => false,
    }
}

fn set_scalar(leaf: &mut Node, value: &str, path: &str) -> Result<(), KustomizeError> {
    if leaf.as_scalar().is_none() {
        return Err(KustomizeError::Other(format!(
            "namespace field specs must target scalar nodes: {path} is not a scalar"
        )));
    }
    *leaf = Node::string(value).with_span(leaf.span.clone());
    Ok(())
}
