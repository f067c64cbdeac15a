//! The helm that renders HelmReleases for `plumb build`, `check` and `graph`: `PLUMB_HELM`,
//! else `helm` on PATH, its version checked; renders are kept in the cache directory's
//! `render/`. Without a usable helm, plumb says so once and builds everything else.

use plumb_flux::helm_release::render_cache::RenderCache;
use plumb_flux::helm_release::Renderer;
use plumb_helm::helm::Helm;
use std::sync::Arc;

/// The renderer the build uses, or `None` (`--no-helm`, or no usable helm: then a warning
/// says why, once).
pub fn renderer(fetch: &super::fetch::FetchArgs) -> Option<Renderer> {
    if fetch.no_helm {
        return None;
    }
    let helm = match Helm::find() {
        Ok(helm) => helm,
        Err(e) => {
            eprintln!(
                "warning: HelmReleases are not rendered: {e}\n  = help: install helm (v3.17 or later, or v4) or set PLUMB_HELM to it; --no-helm says this is intended"
            );
            return None;
        }
    };
    let cache = fetch
        .cache_dir
        .clone()
        .or_else(|| plumb_source::Cache::from_env().map(|c| c.dir().to_path_buf()))
        .map(|dir| RenderCache::new(dir.join("render")));
    Some(Renderer {
        helm: Arc::new(helm),
        cache,
    })
}
