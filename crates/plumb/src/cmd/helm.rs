//! The helm that renders HelmReleases for `plumb build`, `check` and `graph`: `PLUMB_HELM`,
//! else `helm` on PATH, its version checked; renders are kept in the cache directory's
//! `render/`. Without a usable helm, plumb says so once and builds everything else.

use plumb_flux::helm_release::render_cache::RenderCache;
use plumb_flux::helm_release::{LazyRenderer, Renderer};
use plumb_helm::helm::Helm;
use std::sync::Arc;

/// The renderer the build uses, or `None` for `--no-helm`. helm is looked for only when the
/// build has a release to render ([`warn_unusable`] then says once why it could not be used).
pub fn renderer(fetch: &super::fetch::FetchArgs) -> Option<LazyRenderer> {
    if fetch.no_helm {
        return None;
    }
    let cache = fetch
        .cache_dir
        .clone()
        .or_else(|| plumb_source::Cache::from_env().map(|c| c.dir().to_path_buf()))
        .map(|dir| RenderCache::new(dir.join("render")));
    Some(LazyRenderer::new(move || {
        let helm = Helm::find().map_err(|e| e.to_string())?;
        Ok(Renderer {
            helm: Arc::new(helm),
            cache: cache.clone(),
        })
    }))
}

/// The warning, once, that the build found releases to render and no usable helm.
pub fn warn_unusable(renderer: Option<&LazyRenderer>) {
    if let Some(why) = renderer.and_then(LazyRenderer::unusable) {
        crate::report::warning(&format!(
            "HelmReleases are not rendered: {why}\n  = help: install helm (v3.17 or later, or v4) or set PLUMB_HELM to it; --no-helm says this is intended"
        ));
    }
}
