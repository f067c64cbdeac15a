//! `commonAnnotations`: annotation pairs written, as strings, into `metadata/annotations` of
//! every resource and the pod templates of the workload kinds the field specs name.

use crate::build::ResourceList;
use crate::config::TransformerConfig;
use crate::context::Context;
use crate::error::KustomizeError;
use crate::kustomization::Kustomization;
use crate::transform::{labels, values};

/// Applies the kustomization's `commonAnnotations`.
pub fn run(
    k: &Kustomization,
    list: &mut ResourceList,
    _ctx: &Context,
    config: &TransformerConfig,
) -> Result<(), KustomizeError> {
    let Some(node) = k.field("commonAnnotations") else {
        return Ok(());
    };
    let pairs = values::string_map(k, node, "commonAnnotations")?;
    labels::set_map_entries(list, &pairs, &config.common_annotations)
}
