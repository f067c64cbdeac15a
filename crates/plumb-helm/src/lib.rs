//! helm-controller's part of a build.
//!
//! - [`values`]: a HelmRelease's values composed as helm-controller composes them (fluxcd/pkg
//!   `chartutil`): `valuesFrom` in order, `targetPath` with Helm's `--set` syntax ([`strvals`]),
//!   then `spec.values`, with its merge rules and its precedence, aliasing included.
//! - [`helm`]: the `helm` program (found on `PATH` or by `PLUMB_HELM`, its version checked)
//!   running `helm template` with everything explicit.
//! - [`release`]: the release name and namespace helm-controller gives a HelmRelease, the
//!   rendered manifest read into objects, and the post-renderers it runs in-process
//!   (`postRenderers`' kustomize patches and images, `commonMetadata`, origin labels).
//! - [`schema`]: a chart's `values.schema.json` `$ref`s resolved offline.
//!
//! This crate knows nothing of sources or of the cache: the chart is a directory on disk.

pub mod helm;
pub mod release;
pub mod schema;
pub mod strvals;
pub mod values;

pub use helm::{CrdPolicy, Helm, HelmError, RenderError, Template};
pub use release::{parse_manifest, post_render, release_name, release_namespace, Rendered};
pub use schema::{prepare_offline, SchemaPlan};
pub use values::{
    compose, compose_for_helm, merge_values_files, HelmValues, ValuesError, ValuesKind,
    ValuesReference, ValuesSource,
};
