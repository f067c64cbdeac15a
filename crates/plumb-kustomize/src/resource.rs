//! A resource: one Kubernetes object as a node tree, and its identity (group, version, kind,
//! namespace, name) the way kustomize computes it.

use compact_str::CompactString;
use plumb_yaml::Node;
use std::fmt;

/// Group, version and kind. Their strings are kept inline up to 24 bytes (nearly every group,
/// version and kind): ids are made for every resource by most transformers, and their heap
/// strings were a sixth of a build's allocations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gvk {
    pub group: CompactString,
    pub version: CompactString,
    pub kind: CompactString,
}

impl Gvk {
    /// Splits an `apiVersion` into group and version (`apps/v1`, `v1`).
    pub fn from_api_version(api_version: &str, kind: &str) -> Gvk {
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None if api_version == "builtin" => (api_version, ""),
            None => ("", api_version),
        };
        Gvk {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// `group/version`, or the version alone for the core group; inline when short (`v1`,
    /// `apps/v1`): scopes are looked up by it for every candidate of every name reference.
    pub fn api_version(&self) -> CompactString {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            compact_str::format_compact!("{}/{}", self.group, self.version)
        }
    }
}

impl fmt::Display for Gvk {
    /// kustomize's `Kind.version.group` form used in messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn or<'a>(s: &'a str, empty: &'static str) -> &'a str {
            if s.is_empty() {
                empty
            } else {
                s
            }
        }
        write!(
            f,
            "{}.{}.{}",
            or(&self.kind, "[noKind]"),
            or(&self.version, "[noVer]"),
            or(&self.group, "[noGrp]")
        )
    }
}

/// A resource's identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResId {
    pub gvk: Gvk,
    pub namespace: CompactString,
    pub name: CompactString,
}

impl ResId {
    /// The identity as [`Resource::id_key`] borrows it from a resource: group, version, kind,
    /// namespace, name.
    pub fn key(&self) -> (&str, &str, &str, &str, &str) {
        (
            &self.gvk.group,
            &self.gvk.version,
            &self.gvk.kind,
            &self.namespace,
            &self.name,
        )
    }
}

impl fmt::Display for ResId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = if self.namespace.is_empty() {
            "[noNs]"
        } else {
            &self.namespace
        };
        let name = if self.name.is_empty() {
            "[noName]"
        } else {
            &self.name
        };
        write!(f, "{}/{}.{}", self.gvk, name, ns)
    }
}

/// One object in a build, with what the build remembers about it beyond its text.
#[derive(Debug, Clone)]
pub struct Resource {
    pub node: Node,
    /// The identities this resource had before transformers renamed it (oldest first): name
    /// references to any of them are rewritten to its current name at the end of the build.
    pub previous_ids: Vec<ResId>,
    /// Name prefixes and suffixes added so far, innermost first (kustomize uses them to pick
    /// between candidates when fixing name references).
    pub prefixes: Vec<String>,
    pub suffixes: Vec<String>,
    /// A generated ConfigMap or Secret whose name gets a content-hash suffix at the end of the
    /// build.
    pub needs_hash: bool,
    /// For generated resources: `create`, `merge` or `replace`.
    pub behavior: Option<String>,
    /// Where the resource came from (`buildMetadata: [originAnnotations]`).
    pub origin: Option<Origin>,
    /// The transformers that ran over it (`buildMetadata: [transformerAnnotations]`).
    pub transformations: Vec<Origin>,
}

/// Where a resource, or a transformer that changed it, was configured: a file the resource
/// was read from, or the file that configured a builtin plugin and the plugin itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    File(std::path::PathBuf),
    Plugin {
        configured_in: std::path::PathBuf,
        kind: String,
        /// The plugin configuration's `metadata.name` and `metadata.namespace`, when given.
        name: String,
        namespace: String,
    },
}

impl Origin {
    /// A builtin plugin configured by a kustomization field.
    pub fn builtin(configured_in: &std::path::Path, kind: &str) -> Origin {
        Origin::Plugin {
            configured_in: configured_in.to_path_buf(),
            kind: kind.to_string(),
            name: String::new(),
            namespace: String::new(),
        }
    }
}

impl Resource {
    pub fn new(node: Node) -> Resource {
        Resource {
            node,
            previous_ids: Vec::new(),
            prefixes: Vec::new(),
            suffixes: Vec::new(),
            needs_hash: false,
            behavior: None,
            origin: None,
            transformations: Vec::new(),
        }
    }

    /// The identity this resource had when it was first read or generated.
    pub fn original_id(&self) -> ResId {
        self.previous_ids
            .first()
            .cloned()
            .unwrap_or_else(|| self.id())
    }

    /// The group, version and kind this resource had when it was first read or generated:
    /// [`Resource::original_id`]'s, without reading its name and namespace.
    pub fn original_gvk(&self) -> Gvk {
        match self.previous_ids.first() {
            Some(id) => id.gvk.clone(),
            None => self.gvk(),
        }
    }

    /// Renames the resource, remembering the old identity.
    pub fn set_name(&mut self, name: &str) {
        // Compared before the old identity is built: most calls rename nothing.
        if self.name() == name {
            return;
        }
        let old = self.id();
        self.previous_ids.push(old);
        if let Some(meta) = self.node.ensure_mapping("metadata") {
            meta.set("name", Node::string(name));
        }
    }

    /// Moves the resource to another namespace, remembering the old identity.
    pub fn set_namespace(&mut self, namespace: &str) {
        if self.namespace() == namespace {
            return;
        }
        let old = self.id();
        self.previous_ids.push(old);
        if let Some(meta) = self.node.ensure_mapping("metadata") {
            meta.set("namespace", Node::string(namespace));
        }
    }

    pub fn api_version(&self) -> &str {
        self.node.str_at(&["apiVersion"]).unwrap_or("")
    }

    pub fn kind(&self) -> &str {
        self.node.str_at(&["kind"]).unwrap_or("")
    }

    pub fn name(&self) -> &str {
        self.node.str_at(&["metadata", "name"]).unwrap_or("")
    }

    pub fn namespace(&self) -> &str {
        self.node.str_at(&["metadata", "namespace"]).unwrap_or("")
    }

    pub fn gvk(&self) -> Gvk {
        Gvk::from_api_version(self.api_version(), self.kind())
    }

    /// Whether [`Resource::id`] is `id`, without building it.
    pub fn has_id(&self, id: &ResId) -> bool {
        // The name first: it tells most resources of a list apart, before the version is split.
        if self.name() != id.name || self.kind() != id.gvk.kind {
            return false;
        }
        let (group, version) = self.group_version();
        self.namespace() == id.namespace && group == id.gvk.group && version == id.gvk.version
    }

    /// [`Resource::id`] borrowed from the resource: group, version, kind, namespace, name. Two
    /// resources have the same key exactly when they have the same id.
    pub fn id_key(&self) -> (&str, &str, &str, &str, &str) {
        let (group, version) = self.group_version();
        (group, version, self.kind(), self.namespace(), self.name())
    }

    /// The group and version of the apiVersion, as [`Gvk::from_api_version`] splits it.
    fn group_version(&self) -> (&str, &str) {
        let api_version = self.api_version();
        match api_version.split_once('/') {
            Some(parts) => parts,
            None if api_version == "builtin" => (api_version, ""),
            None => ("", api_version),
        }
    }

    /// The identity kustomize uses for this resource now.
    pub fn id(&self) -> ResId {
        ResId {
            gvk: self.gvk(),
            namespace: self.namespace().into(),
            name: self.name().into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn has_id_agrees_with_id() {
        let texts = [
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a\n  namespace: n\n",
            "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: a\n",
            "kind: Secret\nmetadata:\n  name: b\n",
            // The same id as the ConfigMap above, written with an empty group.
            "apiVersion: /v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: n\n",
        ];
        let resources: Vec<Resource> = texts
            .iter()
            .map(|t| Resource::new(plumb_yaml::parse_documents("r.yaml", t).unwrap().remove(0)))
            .collect();
        for a in &resources {
            for b in &resources {
                assert_eq!(a.has_id(&b.id()), a.id() == b.id(), "{} {}", a.id(), b.id());
                assert_eq!(a.id_key() == b.id().key(), a.id() == b.id(), "{}", b.id());
                assert_eq!(
                    a.id_key() == b.id_key(),
                    a.id() == b.id(),
                    "{} {}",
                    a.id(),
                    b.id()
                );
            }
        }
    }
}
