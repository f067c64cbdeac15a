//! Where a rendered release is written: the HelmRelease object of a Flux release, the helmfile
//! entry of a bootstrap release. The rules about renders (DET001, OWN002) point there.

use plumb_flux::bootstrap::HelmfileRelease;
use plumb_flux::build::{EntryBuild, KustomizationBuild};
use plumb_flux::helm_release::ReleaseBuild;
use plumb_flux::model::{Object, HELM_GROUP};

/// The HelmRelease `release` was rendered from, and the Kustomization that produced it.
pub(crate) fn helm_release<'a>(
    entry: &'a EntryBuild,
    release: &ReleaseBuild,
) -> Option<(&'a KustomizationBuild, &'a Object)> {
    let k = entry
        .kustomizations
        .iter()
        .find(|k| k.key() == release.kustomization)?;
    let object = k.objects.iter().find(|o| {
        o.is(HELM_GROUP, "HelmRelease")
            && o.namespace_or_default() == release.namespace
            && o.name() == release.name
    })?;
    Some((k, object))
}

/// Each helmfile release of the entry's bootstrap with what it rendered (the build renders
/// them in the helmfiles' order, one each).
pub(crate) fn bootstrap_releases(
    entry: &EntryBuild,
) -> impl Iterator<Item = (&HelmfileRelease, &ReleaseBuild)> {
    entry
        .bootstrap
        .releases
        .iter()
        .zip(&entry.bootstrap_releases)
        .filter(|(h, r)| h.name == r.name && h.file.display().to_string() == r.kustomization)
}
