//! kustomize-controller's build of one directory: the kustomization it generates or amends
//! from the Kustomization's spec, built by kustomize inside the source's tree, each object
//! converted for the steps after it (postBuild, the checks). Apart from build.rs, which orders
//! the builds of a cluster.

use std::path::Path;

use crate::diagnostic::{self, Code, Diagnostic};
use crate::generate;
use crate::model::{FluxKustomization, Object};
use crate::shared_builds::{BuildKey, SharedBuilds};
use crate::trees::FileSystems;

/// `d`, which points at the kustomization kustomize-controller generates for `dir`, pointing
/// at the directory and saying the kustomization is generated.
fn generated_here(mut d: Diagnostic, dir: &Path) -> Diagnostic {
    d.file = Some(dir.to_path_buf());
    d.line = None;
    d.column = None;
    d.message.push_str(
        " (in the kustomization.yaml kustomize-controller generates for this directory, which has none)",
    );
    d
}

/// Builds `dir` as kustomize-controller does (generated kustomization, `ks`'s overlay) and
/// returns the objects: no load restrictor, but inside a file system rooted at the source
/// (`root`), so that nothing outside it is read, through `..`, an absolute path or a symlink.
pub(crate) fn build_dir(
    file_systems: &FileSystems,
    shared: Option<&SharedBuilds>,
    root: &Path,
    dir: &Path,
    ks: Option<&FluxKustomization>,
) -> Result<Vec<Object>, Diagnostic> {
    let fs = file_systems.confined(root)?;
    if let Err(e) = fs.resolve(dir) {
        return Err(match ks {
            Some(ks) => Diagnostic::error(Code::OutsideSource, format!("spec.path: {e}"))
                .at(ks.object.node_at(&["spec", "path"])),
            None => Diagnostic::error(Code::OutsideSource, format!("entry path: {e}")),
        });
    }
    match (shared, ks) {
        (Some(shared), Some(ks)) if shared.keeps(dir) => {
            let (key, at) = BuildKey::of(root, dir, ks);
            shared.get_or_build(key, at, || build_in(file_systems, fs, dir, Some(ks)))
        }
        _ => build_in(file_systems, fs, dir, ks),
    }
}

/// [`build_dir`] inside `fs`, the tree's file system, once `dir` is known to be in it.
fn build_in(
    file_systems: &FileSystems,
    fs: plumb_kustomize::FileSystem,
    dir: &Path,
    ks: Option<&FluxKustomization>,
) -> Result<Vec<Object>, Diagnostic> {
    let k = generate::kustomization_for(&fs, file_systems.tree_of(&fs), dir, ks)?;
    let options = file_systems.build_options(fs);
    let list = plumb_kustomize::build_kustomization(&k, &options).map_err(|e| {
        let d = diagnostic::from_kustomize(&e).in_file(&k.path);
        // A generated kustomization (it has no node from a file) is no file to point at.
        if k.node.span.is_none() && d.file.as_deref() == Some(k.path.as_path()) {
            generated_here(d, dir)
        } else {
            d
        }
    })?;
    crate::parallel::map(list.resources, |r| {
        let value = plumb_yaml::to_json(&r.node).map_err(|e| {
            Diagnostic::error(Code::InvalidManifest, e.message.clone()).at_line(
                &e.path,
                e.location.line,
                e.location.column,
            )
        })?;
        Ok(Object {
            value,
            origin: Some(std::sync::Arc::new(r.node)),
        })
    })
    .into_iter()
    .collect()
}

/// Why a build that needed something fetched was not made, when that is the reason it failed:
/// a source or remote resource not fetched (offline, or not supported), or one that could not
/// be reached. Not an error of the repository: the build is counted as not built or
/// unavailable, with the reason.
#[derive(Default)]
pub(crate) struct Unfetched {
    pub(crate) not_built: Option<String>,
    pub(crate) unavailable: Option<String>,
}

impl Unfetched {
    pub(crate) fn of(d: &Diagnostic, root: &Path) -> Option<Unfetched> {
        // The reason names the kustomization file as the repository does.
        let reason = || d.message.replace(&format!("{}/", root.display()), "");
        match d.code {
            Code::SourceUnavailable => Some(Unfetched {
                not_built: Some(reason()),
                unavailable: None,
            }),
            Code::RemoteUnavailable => Some(Unfetched {
                not_built: None,
                unavailable: Some(reason()),
            }),
            _ => None,
        }
    }
}
