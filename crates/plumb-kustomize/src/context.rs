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
}

impl Context {
    pub fn new(options: BuildOptions) -> Context {
        Context {
            options,
            schema: Cow::Borrowed(Schema::builtin()),
            schema_chosen: false,
        }
    }

    /// Whether objects of this kind live in a namespace. Kinds the schema does not know are
    /// namespaced, as kustomize assumes.
    pub fn is_namespaced(&self, api_version: &str, kind: &str) -> bool {
        self.schema.is_namespaced(api_version, kind).unwrap_or(true)
    }
}
