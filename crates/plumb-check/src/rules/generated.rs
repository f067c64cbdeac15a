//! Where an object a ResourceSet generates is written: it has no text of its own, so a finding
//! on it points at the ResourceSet's entry that generates objects of its kind (the field at
//! the finding's path in its `spec.resources` item of that kind, else the item; else its
//! `resourcesTemplate`).

use crate::finding::Location;
use plumb_flux::build::EntryBuild;
use plumb_flux::model::Object;
use plumb_flux::resourceset::{self, depends_on::owner};
use plumb_flux::sync::OPERATOR_GROUP;
use std::path::Path;

/// The location of the ResourceSet text that generated `object` (of its field at `path` when
/// the text has it), when a ResourceSet of `entry` did (by the operator's owner labels) and
/// `object` has no text of its own.
pub(crate) fn location(
    entry: &EntryBuild,
    object: &Object,
    path: &[&str],
    root: &Path,
) -> Option<Location> {
    if object.origin.is_some() {
        return None;
    }
    let rset_key = owner(object)?;
    let rset = entry
        .kustomizations
        .iter()
        .flat_map(|k| &k.objects)
        .find(|o| o.is(OPERATOR_GROUP, "ResourceSet") && resourceset::key(o) == rset_key)?;
    let origin = rset.origin.as_deref()?;
    let spec = origin.get("spec")?;
    let written = spec
        .get("resources")
        .and_then(|r| r.as_sequence())
        .and_then(|items| {
            items
                .iter()
                .find(|item| item.str_at(&["kind"]) == Some(object.kind()))
                .map(|item| item.get_path(path).unwrap_or(item))
        })
        .or_else(|| spec.get("resourcesTemplate"))
        .unwrap_or(spec);
    Location::of(written, root)
}
