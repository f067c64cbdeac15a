//! plumb-render: a catalog of apps (`catalog/<app>.yaml`) rendered into dependency-ordered
//! waves: `apps/wave-<N>/kustomization.yaml` and one Flux Kustomization `apps-wave-<N>` per wave
//! that `dependsOn` the wave before, so a crash-looping app in a later wave never stalls an
//! earlier one. [`Render::check`] proves the committed tree is the render (render == golden).
//!
//! ```
//! let dir = tempfile::tempdir().unwrap();
//! let repo = dir.path();
//! std::fs::write(repo.join(".plumb.yaml"), "render: {}\n").unwrap();
//! std::fs::create_dir_all(repo.join("catalog")).unwrap();
//! std::fs::write(repo.join("catalog/db.yaml"), "name: db\nsource: https://example.com/db\n").unwrap();
//! std::fs::write(repo.join("catalog/web.yaml"), "name: web\nsource: https://example.com/web\ndependsOn: [db]\n").unwrap();
//! let render = plumb_render::Render::load(repo).unwrap();
//! assert_eq!(render.plan.waves.len(), 2);
//! assert!(render.tree["apps/wave-1/kustomization.yaml"].contains("https://example.com/web"));
//! assert_eq!(render.check(repo).unwrap().len(), 3); // nothing written yet
//! render.write(repo).unwrap();
//! assert!(render.check(repo).unwrap().is_empty());
//! ```

pub mod catalog;
pub mod check;
pub mod config;
pub mod error;
pub mod render;
pub mod waves;

pub use catalog::{App, AppSource};
pub use check::{Change, Difference, Written};
pub use config::RenderConfig;
pub use error::RenderError;
pub use render::Tree;
pub use waves::Plan;

use std::path::Path;

/// A repository's render: its configuration, the validated catalog with its waves, and the
/// files they make, in memory.
#[derive(Debug, Clone)]
pub struct Render {
    pub config: RenderConfig,
    pub plan: Plan,
    pub tree: Tree,
}

impl Render {
    /// Reads `<repo>/.plumb.yaml`'s `render:` block and the catalog, validates it (an app's
    /// `path` must be a directory of the repository) and renders it.
    pub fn load(repo: &Path) -> Result<Render, RenderError> {
        let config = RenderConfig::load(repo)?;
        let apps = catalog::load(repo, &config.catalog)?;
        for app in &apps {
            if let AppSource::Path(p) = &app.source {
                let full = repo.join(p);
                if p.split('/').any(|c| c == "..") || !full.is_dir() {
                    return Err(RenderError::at(
                        &app.file,
                        app.line,
                        format!(
                            "app `{}` has `path: {p}`, which is not a directory of the repository",
                            app.name
                        ),
                    ));
                }
            }
        }
        Render::new(config, apps)
    }

    /// Validates `apps` and renders them as `config` says, reading nothing.
    pub fn new(config: RenderConfig, apps: Vec<App>) -> Result<Render, RenderError> {
        let plan = Plan::new(apps)?;
        let tree = render::render(&config, &plan);
        Ok(Render { config, plan, tree })
    }

    /// Where `<repo>` differs from the render; empty: render == golden. Writes nothing.
    pub fn check(&self, repo: &Path) -> Result<Vec<Difference>, RenderError> {
        check::compare(repo, &self.config, &self.plan, &self.tree)
    }

    /// Writes the render into `<repo>`.
    pub fn write(&self, repo: &Path) -> Result<Written, RenderError> {
        check::write(repo, &self.config, &self.plan, &self.tree)
    }

    /// The wave table, markdown.
    pub fn table(&self) -> String {
        render::table(&self.config, &self.plan)
    }
}
