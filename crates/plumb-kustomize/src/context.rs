//! What every step of a build can see: the build's options and the schema (Kubernetes 1.21.2
//! merge keys and scopes, plus CRDs and `openapi:` schemas the kustomization adds).

use crate::build::BuildOptions;
use crate::schema::Schema;
use std::borrow::Cow;

#[derive(Debug, Clone)]
pub struct Context {
    pub options: BuildOptions,
    /// The builtin schema, copied only when a kustomization extends it (`crds:`, `openapi:`),
    /// so that many builds in parallel share one table.
    pub schema: Cow<'static, Schema>,
    /// Whether a kustomization's `openapi:` chose the schema (the outermost choice wins).
    pub schema_chosen: bool,
    /// Whether a resource of a kind the builtin schema does not know was accumulated before
    /// any `openapi:` chose a schema. kustomize then looked up its scope, which marks its
    /// builtin schema to be read along with a custom schema chosen later (by a base or a
    /// component), the builtin's definitions winning.
    pub builtin_schema_wanted: bool,
    /// Whether the build records which transformers ran over each resource: only the top
    /// kustomization's `buildMetadata: [transformerAnnotations]` prints them, and recording
    /// them for every resource, every transformer, at every level cost two strings each.
    pub record_transformations: bool,
}

impl Context {
    pub fn new(options: BuildOptions) -> Context {
        Context {
            options,
            schema: Cow::Borrowed(Schema::builtin()),
            schema_chosen: false,
            builtin_schema_wanted: false,
            record_transformations: false,
        }
    }

    /// Whether objects of this kind live in a namespace. kustomize asks its precomputed table
    /// of builtin kinds first, whatever schema `openapi:` chose, then the schema; kinds neither
    /// knows are namespaced, as kustomize assumes.
    pub fn is_namespaced(&self, api_version: &str, kind: &str) -> bool {
        Schema::builtin()
            .is_namespaced(api_version, kind)
            .or_else(|| self.schema.is_namespaced(api_version, kind))
            .unwrap_or(true)
    }

    /// Notes resources accumulated from a file, for [`Context::builtin_schema_wanted`].
    pub fn note_kinds(&mut self, resources: &[crate::resource::Resource]) {
        if self.schema_chosen || self.builtin_schema_wanted {
            return;
        }
        self.builtin_schema_wanted = resources.iter().any(|r| {
            Schema::builtin()
                .is_namespaced(r.api_version(), r.kind())
                .is_none()
        });
    }
}
