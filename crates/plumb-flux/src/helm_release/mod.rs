//! helm-controller's part of a build: every HelmRelease the Kustomizations of a cluster
//! produce, its chart fetched as source-controller fetches it ([`chart`]), its values composed
//! as helm-controller composes them, rendered by a real `helm` and post-rendered in-process
//! (crate plumb-helm), as a group of objects beside the Kustomization that produced it.
//!
//! Charts are rendered for the cluster as it stands once everything is reconciled: the API
//! versions passed to helm are those of every CRD the build produces, the Kustomizations' and
//! the releases' own (a release that adds a CRD is rendered again until the set is stable).
//! Each render is kept in a cache keyed by all its inputs; one rendered for the first time is
//! rendered twice, and a release whose two renders differ is reported: its controller would
//! never converge.

pub mod bootstrap;
pub mod capabilities;
mod chart;
pub mod render_cache;

use crate::build::{KustomizationBuild, Status};
use crate::diagnostic::{Code, Diagnostic};
use crate::fetch::{FetchOnce, FetchedChart, Fetcher, Unfetched};
use crate::model::{Object, ObjectRef};
use crate::postbuild::ObjectLookup;
use crate::sops::AgeKeys;
use crate::source::Sources;
use plumb_helm::helm::{CrdPolicy, Helm, Template};
use plumb_helm::values::{ValuesKind, ValuesReference, ValuesSource};
use rayon::prelude::*;
use render_cache::{Cached, RenderCache};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

/// How HelmReleases are rendered: the helm program, and where renders are kept.
#[derive(Debug, Clone)]
pub struct Renderer {
    pub helm: Arc<Helm>,
    pub cache: Option<RenderCache>,
}

/// The renderer, made on first use: finding helm (it runs `helm version`) is paid only by a
/// build that has a release to render, and a helm that cannot be used is reported only then.
#[derive(Clone)]
pub struct LazyRenderer {
    made: Arc<OnceLock<Result<Renderer, String>>>,
    make: Arc<dyn Fn() -> Result<Renderer, String> + Send + Sync>,
}

impl LazyRenderer {
    /// `make` finds helm; its `Err` says why there is no usable one.
    pub fn new(make: impl Fn() -> Result<Renderer, String> + Send + Sync + 'static) -> Self {
        LazyRenderer {
            made: Arc::default(),
            make: Arc::new(make),
        }
    }

    /// The renderer, made now if it was not yet.
    pub fn get(&self) -> Result<&Renderer, &str> {
        self.made
            .get_or_init(|| (self.make)())
            .as_ref()
            .map_err(String::as_str)
    }

    /// Why releases were not rendered, when the build tried and found no usable helm.
    pub fn unusable(&self) -> Option<&str> {
        self.made.get()?.as_ref().err().map(String::as_str)
    }
}

impl std::fmt::Debug for LazyRenderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyRenderer")
            .field("made", &self.made.get())
            .finish()
    }
}

/// The renderer to use, or why releases are not rendered: none was given (`--no-helm`, a
/// library caller without helm), or no usable helm was found.
pub(crate) fn resolve<'a>(
    renderer: Option<&'a LazyRenderer>,
    what: &str,
) -> Result<&'a Renderer, String> {
    match renderer.map(LazyRenderer::get) {
        Some(Ok(r)) => Ok(r),
        Some(Err(why)) => Err(format!("{what} {UNUSABLE_HELM}{why}")),
        None => Err(format!("{what} are not rendered (no helm)")),
    }
}

/// What [`resolve`] says between the releases' kind and the reason when helm was given but
/// cannot be used.
const UNUSABLE_HELM: &str = "are not rendered: ";

/// The kinds of release [`resolve`] names.
pub(crate) const HELM_RELEASES: &str = "HelmReleases";
pub(crate) const HELMFILE_RELEASES: &str = "helmfile releases";

/// Whether a release's reason for not being rendered is that the helm given cannot be used
/// (the reason [`LazyRenderer::unusable`] gives, the same for every release).
pub fn helm_was_unusable(reason: &str) -> bool {
    [HELM_RELEASES, HELMFILE_RELEASES]
        .iter()
        .any(|what| reason.starts_with(&format!("{what} {UNUSABLE_HELM}")))
}

/// A chart as `-o json` and the YAML group's title show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartInfo {
    pub name: String,
    pub version: String,
    pub digest: String,
    /// The source it came from, `Kind/namespace/name`.
    pub source: String,
}

/// One HelmRelease and what it renders.
#[derive(Debug, Clone)]
pub struct ReleaseBuild {
    pub namespace: String,
    pub name: String,
    /// The Kustomization whose objects hold it, `namespace/name`.
    pub kustomization: String,
    /// The Helm release name and namespace helm-controller gives it.
    pub release_name: String,
    pub release_namespace: String,
    pub chart: Option<ChartInfo>,
    /// The rendered objects, post-rendered, in helm's order.
    pub objects: Vec<Object>,
    pub diagnostics: Vec<Diagnostic>,
    pub status: Status,
    /// Whether helm's output came from the render cache.
    pub cached: bool,
    /// What the render could not check as the cluster would (a chart's schema `$ref` to a URL
    /// it does not ship: validation skipped offline).
    pub notes: Vec<String>,
}

impl ReleaseBuild {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// `HelmRelease ns/name (chart app-template 4.1.1)`, as the YAML output's group comment
    /// says it.
    pub fn title(&self) -> String {
        match &self.chart {
            Some(c) => format!(
                "HelmRelease {} (chart {} {} {}, from {})",
                self.key(),
                c.name,
                c.version,
                c.digest,
                c.source
            ),
            None => format!("HelmRelease {}", self.key()),
        }
    }
}

/// What the releases of one cluster read.
pub struct Inputs<'a> {
    pub root: &'a Path,
    pub fetcher: Option<&'a dyn Fetcher>,
    pub fetched: &'a FetchOnce,
    pub sources: &'a Sources,
    pub lookup: &'a (dyn ObjectLookup + Sync),
    pub keys: Option<&'a AgeKeys>,
    pub charts: &'a ChartOnce,
    /// `1.34.0`.
    pub kube_version: String,
}

/// One chart's fetch, done by the first release that needs it.
type Slot = Arc<OnceLock<Result<FetchedChart, Unfetched>>>;

/// Fetches each chart at most once per build, however many releases use it.
#[derive(Debug, Default)]
pub struct ChartOnce {
    results: Mutex<HashMap<String, Slot>>,
}

impl ChartOnce {
    pub fn get(
        &self,
        key: &str,
        fetch: impl FnOnce() -> Result<FetchedChart, Unfetched>,
    ) -> Result<FetchedChart, Unfetched> {
        let cell = {
            let mut map = self.results.lock().unwrap_or_else(|e| e.into_inner());
            map.entry(key.to_string()).or_default().clone()
        };
        cell.get_or_init(fetch).clone()
    }
}

/// A release ready to render, or why it is not.
struct Job<'a> {
    hr: &'a Object,
    kustomization: &'a KustomizationBuild,
    release_name: String,
    release_namespace: String,
    prepared: Result<Prepared, Outcome>,
}

/// Everything `helm template` needs.
struct Prepared {
    chart: chart::Chart,
    values: plumb_helm::values::HelmValues,
    crds: CrdPolicy,
    hooks: bool,
    /// `install.disableSchemaValidation`.
    skip_schema: bool,
}

/// A release that is not rendered (HelmReleases and helmfile releases alike).
pub(crate) enum Outcome {
    NotBuilt(String),
    Unavailable(String),
    Failed(Diagnostic),
}

/// Renders every HelmRelease of `kustomizations` (with `extra` objects, those applied at
/// bootstrap, counted for the API versions). Without a renderer, each is reported not built.
pub fn render_releases(
    kustomizations: &[KustomizationBuild],
    extra: &[Object],
    inputs: &Inputs<'_>,
    renderer: Option<&LazyRenderer>,
) -> Vec<ReleaseBuild> {
    let found: Vec<(&Object, &KustomizationBuild)> = kustomizations
        .iter()
        .flat_map(|k| k.objects.iter().map(move |o| (o, k)))
        .filter(|(o, _)| o.is(crate::model::HELM_GROUP, "HelmRelease"))
        .collect();
    if found.is_empty() {
        return Vec::new();
    }
    let renderer = match resolve(renderer, HELM_RELEASES) {
        Ok(r) => r,
        Err(why) => {
            return found
                .into_iter()
                .map(|(hr, k)| unrendered(hr, k, Outcome::NotBuilt(why.clone())))
                .collect()
        }
    };
    let jobs: Vec<Job<'_>> = found
        .par_iter()
        .map(|&(hr, k)| Job {
            hr,
            kustomization: k,
            release_name: plumb_helm::release::release_name(&hr.value),
            release_namespace: plumb_helm::release::release_namespace(&hr.value),
            prepared: prepare(hr, inputs),
        })
        .collect();

    let built: Vec<&Object> = kustomizations
        .iter()
        .flat_map(|k| k.objects.iter())
        .chain(extra.iter())
        .collect();
    let mut api: BTreeSet<String> = capabilities::crd_api_versions(built.iter().copied());
    api.extend(charts_api_versions(jobs.iter().filter_map(|job| {
        job.prepared
            .as_ref()
            .ok()
            .map(|p| p.chart.fetched.dir.as_path())
    })));
    let ready: Vec<Option<(&Job<'_>, &Prepared)>> = jobs
        .iter()
        .map(|job| job.prepared.as_ref().ok().map(|p| (job, p)))
        .collect();
    let rendered = render_until_stable(&ready, api, |&(job, p), api_list| {
        render_one(job, p, api_list, inputs, renderer)
    });

    let scopes = capabilities::crd_scopes(
        built
            .iter()
            .copied()
            .chain(rendered.iter().flatten().flat_map(|r| r.objects.iter())),
    );
    jobs.into_iter()
        .zip(rendered)
        .map(|(job, r)| finish(job, r, &scopes))
        .collect()
}

/// A release rendered (HelmReleases and helmfile releases alike).
pub(crate) struct Rendered {
    pub(crate) objects: Vec<Object>,
    pub(crate) notes: Vec<String>,
    pub(crate) diagnostics: Vec<Diagnostic>,
    pub(crate) cached: bool,
}

/// Renders each of `items` (`None`: not to be rendered) in parallel for the API versions
/// `api`, and again while the CRDs the renders produce add versions: at most three rounds, a
/// CRD that appears only once another is served being rare.
pub(crate) fn render_until_stable<T: Sync>(
    items: &[Option<T>],
    mut api: BTreeSet<String>,
    render: impl Fn(&T, &[String]) -> Result<Rendered, Outcome> + Sync,
) -> Vec<Result<Rendered, Outcome>> {
    let mut rounds = 0;
    loop {
        rounds += 1;
        let api_list: Vec<String> = api.iter().cloned().collect();
        let rendered: Vec<Result<Rendered, Outcome>> = items
            .par_iter()
            .map(|item| match item {
                Some(item) => render(item, &api_list),
                None => Err(Outcome::NotBuilt(String::new())),
            })
            .collect();
        let mut next = api.clone();
        for r in rendered.iter().flatten() {
            next.extend(capabilities::crd_api_versions(r.objects.iter()));
        }
        if next == api || rounds == 3 {
            return rendered;
        }
        api = next;
    }
}

fn unrendered(hr: &Object, k: &KustomizationBuild, outcome: Outcome) -> ReleaseBuild {
    let mut r = ReleaseBuild {
        namespace: hr.namespace_or_default().to_string(),
        name: hr.name().to_string(),
        kustomization: k.key(),
        release_name: plumb_helm::release::release_name(&hr.value),
        release_namespace: plumb_helm::release::release_namespace(&hr.value),
        chart: None,
        objects: Vec::new(),
        diagnostics: Vec::new(),
        status: Status::Built,
        cached: false,
        notes: Vec::new(),
    };
    apply(&mut r, outcome, k);
    r
}

fn apply(r: &mut ReleaseBuild, outcome: Outcome, k: &KustomizationBuild) {
    match outcome {
        Outcome::NotBuilt(why) => r.status = Status::NotBuilt(why),
        Outcome::Unavailable(why) => r.status = Status::Unavailable(why),
        Outcome::Failed(d) => {
            r.diagnostics.push(d.with_chain(&chain(k, &r.key())));
            r.status = Status::Failed;
        }
    }
}

fn chain(k: &KustomizationBuild, release: &str) -> Vec<String> {
    let mut c = k.chain.clone();
    c.push(format!("HelmRelease {release}"));
    c
}

fn finish(
    job: Job<'_>,
    rendered: Result<Rendered, Outcome>,
    scopes: &HashMap<(String, String), bool>,
) -> ReleaseBuild {
    let chart = job.prepared.as_ref().ok().map(|p| ChartInfo {
        name: p.chart.fetched.name.clone(),
        version: p.chart.fetched.version.clone(),
        digest: p.chart.fetched.digest.clone(),
        source: p.chart.source.to_string(),
    });
    let outcome = match (job.prepared, rendered) {
        (Err(why), _) => Err(why),
        (Ok(_), r) => r,
    };
    let mut out = ReleaseBuild {
        namespace: job.hr.namespace_or_default().to_string(),
        name: job.hr.name().to_string(),
        kustomization: job.kustomization.key(),
        release_name: job.release_name,
        release_namespace: job.release_namespace,
        chart,
        objects: Vec::new(),
        diagnostics: Vec::new(),
        status: Status::Built,
        cached: false,
        notes: Vec::new(),
    };
    match outcome {
        Ok(r) => {
            let chain = chain(job.kustomization, &out.key());
            out.objects = r
                .objects
                .into_iter()
                .map(|o| with_namespace(o, &out.release_namespace, scopes))
                .collect();
            out.diagnostics = r
                .diagnostics
                .into_iter()
                .map(|d| d.with_chain(&chain))
                .collect();
            out.cached = r.cached;
            out.notes = r.notes;
            if out.diagnostics.iter().any(Diagnostic::is_error) {
                out.status = Status::Failed;
            }
        }
        Err(why) => apply(&mut out, why, job.kustomization),
    }
    out
}

/// A namespaced object helm renders without a namespace is applied in the release's
/// namespace.
fn with_namespace(
    mut object: Object,
    namespace: &str,
    scopes: &HashMap<(String, String), bool>,
) -> Object {
    if !object.namespace().is_empty() {
        return object;
    }
    let namespaced = plumb_kustomize::schema::Schema::builtin()
        .is_namespaced(object.api_version(), object.kind())
        .or_else(|| {
            scopes
                .get(&(object.group().to_string(), object.kind().to_string()))
                .copied()
        })
        .unwrap_or(true);
    if namespaced {
        if let Some(meta) = object
            .value
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
        {
            meta.insert("namespace".into(), Value::String(namespace.to_string()));
        }
    }
    object
}

/// The chart and the values of `hr`, or why it cannot be rendered.
fn prepare(hr: &Object, inputs: &Inputs<'_>) -> Result<Prepared, Outcome> {
    let chart = chart::chart_of(hr, inputs).map_err(|p| match p {
        chart::ChartProblem::NotBuilt(why) => Outcome::NotBuilt(why),
        chart::ChartProblem::Unavailable(why) => Outcome::Unavailable(why),
        chart::ChartProblem::Failed(d) => Outcome::Failed(d),
    })?;
    // Messages about values name the chart too: the user sees which release of what it is.
    let of_chart = format!(
        "chart {} {} ({})",
        chart.fetched.name, chart.fetched.version, chart.source
    );
    let values = values_of(hr, inputs).map_err(|o| match o {
        Outcome::Failed(mut d) => {
            d.message = format!("{of_chart}: {}", d.message);
            Outcome::Failed(d)
        }
        other => other,
    })?;
    let spec = &hr.value["spec"];
    // The build shows the cluster after install: install's CRD policy and hooks.
    let crds = CrdPolicy::parse(spec["install"]["crds"].as_str()).map_err(|e| {
        Outcome::Failed(
            Diagnostic::error(Code::InvalidSpec, format!("spec.install.crds: {e}"))
                .at(hr.node_at(&["spec", "install", "crds"])),
        )
    })?;
    let hooks = spec["install"]["disableHooks"].as_bool() != Some(true);
    let skip_schema = spec["install"]["disableSchemaValidation"].as_bool() == Some(true);
    Ok(Prepared {
        chart,
        values,
        crds,
        hooks,
        skip_schema,
    })
}

/// The ConfigMaps and Secrets of the HelmRelease's namespace as the build produces them.
struct Lookup<'a> {
    inputs: &'a Inputs<'a>,
    namespace: &'a str,
    /// Referenced objects whose data the build cannot know.
    unknown: Mutex<Vec<String>>,
}

impl ValuesSource for Lookup<'_> {
    fn data(&self, kind: ValuesKind, name: &str) -> Option<BTreeMap<String, String>> {
        let kind = match kind {
            ValuesKind::ConfigMap => "ConfigMap",
            ValuesKind::Secret => "Secret",
        };
        let who = format!("{kind} {}/{name}", self.namespace);
        let Some(object) = self.inputs.lookup.find(kind, self.namespace, name) else {
            if kind == "Secret" {
                if let Some(s) = self.inputs.lookup.runtime_secret(self.namespace, name) {
                    self.lock().push(format!(
                        "{who} is created at runtime by {}: its values are not known",
                        s.producer
                    ));
                }
            }
            return None;
        };
        let mut problems = Vec::new();
        let data = crate::postbuild::data_of(object, self.inputs.keys, &mut problems);
        if !problems.is_empty() {
            self.lock().push(format!(
                "{who} cannot be decrypted: its values are not known"
            ));
            return None;
        }
        Some(data.into_iter().collect())
    }
}

impl Lookup<'_> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.unknown.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `valuesFrom` then `spec.values`, composed as helm-controller does.
fn values_of(hr: &Object, inputs: &Inputs<'_>) -> Result<plumb_helm::values::HelmValues, Outcome> {
    let spec = &hr.value["spec"];
    let at = hr.node_at(&["spec", "valuesFrom"]);
    let mut references = Vec::new();
    for entry in spec["valuesFrom"].as_array().into_iter().flatten() {
        let r = ValuesReference::from_spec(entry).map_err(|e| {
            Outcome::Failed(Diagnostic::error(Code::InvalidSpec, format!("valuesFrom: {e}")).at(at))
        })?;
        references.push(r);
    }
    let lookup = Lookup {
        inputs,
        namespace: hr.namespace_or_default(),
        unknown: Mutex::new(Vec::new()),
    };
    let values = spec.get("values").filter(|v| !v.is_null());
    let composed = plumb_helm::values::compose_for_helm(&references, &lookup, values);
    let unknown = lookup
        .unknown
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(why) = unknown.into_iter().next() {
        return Err(Outcome::NotBuilt(format!("valuesFrom: {why}")));
    }
    composed.map_err(|e| {
        Outcome::Failed(Diagnostic::error(Code::ValuesNotFound, format!("valuesFrom: {e}")).at(at))
    })
}

/// The API versions the CRDs in the `crds/` of the charts at `dirs` serve, each chart read once
/// however many releases use it.
pub(crate) fn charts_api_versions<'a>(dirs: impl Iterator<Item = &'a Path>) -> BTreeSet<String> {
    let dirs: BTreeSet<&Path> = dirs.collect();
    dirs.into_iter()
        .flat_map(|dir| capabilities::crd_api_versions(chart_crd_files(dir).iter()))
        .collect()
}

/// The CRDs a chart ships in `crds/` (its own and its unpacked subcharts'), read without
/// rendering: they are not templates.
fn chart_crd_files(dir: &Path) -> Vec<Object> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.join("crds")];
    for entry in std::fs::read_dir(dir.join("charts"))
        .into_iter()
        .flatten()
        .flatten()
    {
        dirs.push(entry.path().join("crds"));
    }
    for d in dirs {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            for doc in plumb_yaml::parse_documents(&path, &text).unwrap_or_default() {
                if let Ok(value) = plumb_yaml::to_json(&doc) {
                    out.push(Object {
                        value,
                        origin: None,
                    });
                }
            }
        }
    }
    out
}

/// helm's output for a release: from the cache, else rendered twice and compared.
fn render_one(
    job: &Job<'_>,
    p: &Prepared,
    api_versions: &[String],
    inputs: &Inputs<'_>,
    renderer: &Renderer,
) -> Result<Rendered, Outcome> {
    let at = job.hr.node_at(&["spec"]);
    let chart = &p.chart.fetched;
    let values_text = format!("{}\n{}", p.values.values, p.values.int64_set.join("\n"));
    let override_text = p
        .chart
        .values_override
        .as_ref()
        .map(Value::to_string)
        .unwrap_or_default();
    let crds = format!("{:?}", p.crds);
    let hooks = format!("{} {}", p.hooks, p.skip_schema);
    let api = api_versions.join(",");
    let key = RenderCache::key(&[
        "plumb-render-1",
        renderer.helm.version(),
        &chart.digest,
        &override_text,
        &values_text,
        &job.release_name,
        &job.release_namespace,
        &inputs.kube_version,
        &api,
        &crds,
        &hooks,
    ]);
    let failed = |e: &dyn std::fmt::Display| {
        Outcome::Failed(
            Diagnostic::error(
                Code::RenderFailed,
                format!(
                    "chart {} {} ({}): {e}",
                    chart.name, chart.version, p.chart.source
                ),
            )
            .at(at),
        )
    };
    let staged_dir;
    let (cached, hit) = match renderer.cache.as_ref().and_then(|c| c.get(&key)) {
        Some(c) => (c, true),
        None => {
            staged_dir =
                staged_chart(chart, p.chart.values_override.as_ref()).map_err(|e| failed(&e))?;
            let dir = staged_dir.as_ref().map(|d| d.path()).unwrap_or(&chart.dir);
            let template = Template {
                chart_dir: dir,
                release_name: &job.release_name,
                namespace: &job.release_namespace,
                values: &p.values.values,
                set: &p.values.int64_set,
                kube_version: &inputs.kube_version,
                api_versions,
                crds: p.crds,
                hooks: p.hooks,
                is_upgrade: false,
                skip_schema_validation: p.skip_schema,
            };
            (
                render_twice(renderer, &key, &template).map_err(|e| failed(&e))?,
                false,
            )
        }
    };
    let tests = job.hr.value["spec"]["test"]["enable"].as_bool() == Some(true);
    let (objects, changed) =
        read_render(&cached, tests).map_err(|e| failed(&format!("renders invalid YAML: {e}")))?;
    let mut diagnostics = Vec::new();
    if !changed.is_empty() {
        diagnostics.push(
            Diagnostic::warning(
                Code::RenderNondeterministic,
                format!(
                    "chart {} {} renders differently each time with the same values ({}): helm-controller would see a change at every reconciliation",
                    chart.name,
                    chart.version,
                    changed.join(", ")
                ),
            )
            .at(at)
            .with_help("values that generate certificates, passwords or timestamps at render time: set them in values, or generate them outside the chart"),
        );
    }
    let post = plumb_helm::release::post_render(&job.hr.value, objects).map_err(|e| {
        Outcome::Failed(
            Diagnostic::error(Code::RenderFailed, format!("postRenderers: {e}"))
                .at(job.hr.node_at(&["spec", "postRenderers"]).or(at)),
        )
    })?;
    Ok(Rendered {
        notes: cached.notes.clone(),
        objects: post
            .into_iter()
            .map(|r| Object {
                value: r.value,
                origin: None,
            })
            .collect(),
        diagnostics,
        cached: hit,
    })
}

/// `template` rendered twice (after making its chart's schema usable offline: `$ref`s to URLs
/// the chart ships resolved to its files, validation skipped for any other), kept in the
/// renderer's cache under `key`. `Err` is helm's message.
pub(crate) fn render_twice(
    renderer: &Renderer,
    key: &str,
    template: &Template<'_>,
) -> Result<Cached, String> {
    let plan =
        plumb_helm::schema::prepare_offline(template.chart_dir).map_err(|e| e.to_string())?;
    let template = Template {
        chart_dir: &plan.chart_dir,
        skip_schema_validation: template.skip_schema_validation || plan.skip_validation,
        ..template.clone()
    };
    let render = || {
        renderer
            .helm
            .template(&template)
            .map_err(|e| helm_message(&e))
    };
    let first = render()?;
    let second = render()?;
    let c = Cached {
        differs: (second != first).then_some(second),
        manifest: first,
        notes: plan.notes.clone(),
    };
    if let Some(cache) = &renderer.cache {
        cache.put(key, &c);
    }
    Ok(c)
}

/// The objects of a render in canonical order (test hooks only when `tests`), and those its
/// second render had otherwise.
pub(crate) fn read_render(
    cached: &Cached,
    tests: bool,
) -> Result<(Vec<plumb_helm::release::Rendered>, Vec<String>), plumb_helm::helm::RenderError> {
    let mut objects: Vec<plumb_helm::release::Rendered> =
        plumb_helm::release::parse_manifest(&cached.manifest)?
            .into_iter()
            .filter(|r| tests || !is_test_hook(r))
            .collect();
    canonical_order(&mut objects);
    // Hooks are created and deleted around an install or upgrade; they are not part of the
    // release that drift detection compares, so a random hook name is no drift.
    let applied = |list: &[plumb_helm::release::Rendered]| -> Vec<plumb_helm::release::Rendered> {
        list.iter().filter(|r| !r.hook).cloned().collect()
    };
    let changed = match &cached.differs {
        Some(other) => differing(
            &applied(&objects),
            &applied(&plumb_helm::release::parse_manifest(other)?),
        ),
        None => Vec::new(),
    };
    Ok((objects, changed))
}

/// helm's own words for a failed render, without the chart's cache path and helm's
/// `--debug` hint (plumb runs helm; the user does not).
fn helm_message(e: &plumb_helm::helm::RenderError) -> String {
    match e {
        plumb_helm::helm::RenderError::Helm {
            release,
            helm,
            stderr,
            ..
        } => {
            let text: Vec<&str> = stderr
                .lines()
                .filter(|l| !l.starts_with("Use --debug flag"))
                .collect();
            let text = text.join("\n");
            let text = text.trim().trim_start_matches("Error: ");
            format!("helm template failed (release {release}, helm {helm}): {text}")
        }
        other => other.to_string(),
    }
}

/// A `helm.sh/hook: test` object: helm-controller creates it only when it runs the release's
/// tests (`spec.test.enable`).
fn is_test_hook(r: &plumb_helm::release::Rendered) -> bool {
    r.hook
        && r.value["metadata"]["annotations"]["helm.sh/hook"]
            .as_str()
            .is_some_and(|h| {
                h.split(',')
                    .any(|w| matches!(w.trim(), "test" | "test-success"))
            })
}

/// helm's order, except that objects of one kind from one template, which a chart may emit in
/// any order (ranging over unsorted keys), are sorted by name: the build's output is the same
/// at every run.
fn canonical_order(objects: &mut [plumb_helm::release::Rendered]) {
    let run_key = |r: &plumb_helm::release::Rendered| {
        (
            r.source.clone(),
            r.value["kind"].as_str().unwrap_or("").to_string(),
        )
    };
    let mut start = 0;
    while start < objects.len() {
        let key = run_key(&objects[start]);
        let mut end = start + 1;
        while end < objects.len() && run_key(&objects[end]) == key {
            end += 1;
        }
        objects[start..end].sort_by(|a, b| {
            let name = |r: &plumb_helm::release::Rendered| {
                (
                    r.value["metadata"]["namespace"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                    r.value["metadata"]["name"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                )
            };
            name(a).cmp(&name(b))
        });
        start = end;
    }
}

/// The objects (`Kind/name`) one render has and the other has not, or has otherwise; an
/// object both have with other content is followed by the fields that differ
/// (`Secret/generated (stringData.password)`). Order does not count: helm sorts what it
/// applies, and helm-controller compares releases by their chart and values, never by the
/// manifest's text.
fn differing(
    a: &[plumb_helm::release::Rendered],
    b: &[plumb_helm::release::Rendered],
) -> Vec<String> {
    let id = |v: &Value| {
        format!(
            "{}/{}",
            v["kind"].as_str().unwrap_or(""),
            v["metadata"]["name"].as_str().unwrap_or("")
        )
    };
    let same_object = |x: &Value, y: &Value| {
        x["kind"] == y["kind"]
            && x["metadata"]["name"] == y["metadata"]["name"]
            && x["metadata"]["namespace"] == y["metadata"]["namespace"]
    };
    let mut theirs: Vec<&Value> = b.iter().map(|r| &r.value).collect();
    let mut unmatched = Vec::new();
    for r in a {
        match theirs.iter().position(|v| **v == r.value) {
            Some(i) => {
                theirs.swap_remove(i);
            }
            None => unmatched.push(&r.value),
        }
    }
    let mut out = Vec::new();
    for v in unmatched {
        match theirs.iter().position(|w| same_object(v, w)) {
            Some(i) => {
                let other = theirs.remove(i);
                out.push(format!(
                    "{} ({})",
                    id(v),
                    shown_fields(&changed_fields(v, other), 3)
                ));
            }
            None => out.push(id(v)),
        }
    }
    for v in theirs {
        let name = id(v);
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// The paths of the fields whose values differ between `a` and `b`
/// (`spec.template.spec.containers[0].args`, `metadata.labels["app.kubernetes.io/name"]`): a
/// field only one of them has, a scalar that differs, a list whose length differs. Empty when
/// they are equal.
pub fn changed_fields(a: &Value, b: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_changes(a, b, &mut String::new(), &mut out);
    out
}

fn collect_changes(a: &Value, b: &Value, path: &mut String, out: &mut Vec<String>) {
    if a == b {
        return;
    }
    let at = path.len();
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys = x.keys().chain(y.keys().filter(|k| !x.contains_key(*k)));
            for key in keys {
                let null = Value::Null;
                let (va, vb) = (x.get(key).unwrap_or(&null), y.get(key).unwrap_or(&null));
                let plain = !key.is_empty()
                    && key
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if plain {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(key);
                } else {
                    path.push_str(&format!("[{key:?}]"));
                }
                collect_changes(va, vb, path, out);
                path.truncate(at);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                path.push_str(&format!("[{i}]"));
                collect_changes(va, vb, path, out);
                path.truncate(at);
            }
        }
        _ => out.push(if path.is_empty() {
            ".".to_string()
        } else {
            path.clone()
        }),
    }
}

/// At most `max` of `fields`, comma-separated, with how many more there are.
pub fn shown_fields(fields: &[String], max: usize) -> String {
    let mut text = fields
        .iter()
        .take(max)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if fields.len() > max {
        text.push_str(&format!(" and {} more", fields.len() - max));
    }
    text
}

/// A chart whose `values.yaml` `valuesFiles` replace is rendered from a copy; any other from
/// where it is.
fn staged_chart(
    chart: &FetchedChart,
    values: Option<&Value>,
) -> std::io::Result<Option<tempfile::TempDir>> {
    let Some(values) = values else {
        return Ok(None);
    };
    let tmp = tempfile::Builder::new().prefix("plumb-chart-").tempdir()?;
    copy_tree(&chart.dir, tmp.path())?;
    std::fs::write(
        tmp.path().join("values.yaml"),
        plumb_yaml::write_stream([values]),
    )?;
    Ok(Some(tmp))
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            std::fs::create_dir_all(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// A HelmRelease's place for messages: `HelmRelease ns/name`.
pub fn release_id(r: &ReleaseBuild) -> ObjectRef {
    ObjectRef::new("HelmRelease", &r.namespace, &r.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rendered(kind: &str, name: &str, data: &str) -> plumb_helm::release::Rendered {
        plumb_helm::release::Rendered {
            value: json!({"kind": kind, "metadata": {"name": name}, "data": {"x": data}}),
            source: None,
            hook: false,
            crd: false,
        }
    }

    #[test]
    fn hooks_that_differ_between_renders_are_no_drift() {
        let manifest = |suffix: &str| {
            format!("---\n# Source: c/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stable\n---\n# Source: c/templates/test.yaml\napiVersion: v1\nkind: Pod\nmetadata:\n  name: test-{suffix}\n  annotations:\n    helm.sh/hook: test\n---\n# Source: c/templates/job.yaml\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate-{suffix}\n  annotations:\n    helm.sh/hook: pre-install\n")
        };
        let cached = Cached {
            manifest: manifest("a1"),
            differs: Some(manifest("b2")),
            notes: Vec::new(),
        };
        let (objects, changed) = read_render(&cached, false).unwrap();
        assert!(changed.is_empty(), "{changed:?}");
        // The test Pod is dropped (no test.enable); the pre-install Job is kept.
        assert_eq!(objects.len(), 2);
        let secret = Cached {
            manifest: manifest("a1").replace("name: stable", "name: stable-a1"),
            differs: Some(manifest("b2").replace("name: stable", "name: stable-b2")),
            notes: Vec::new(),
        };
        let (_, changed) = read_render(&secret, false).unwrap();
        assert_eq!(changed, ["ConfigMap/stable-a1", "ConfigMap/stable-b2"]);
    }

    #[test]
    fn objects_of_one_kind_and_template_are_in_name_order() {
        let mut objects = vec![
            rendered("Service", "b", "1"),
            rendered("Service", "a", "1"),
            rendered("Deployment", "c", "1"),
            rendered("Deployment", "a", "1"),
        ];
        canonical_order(&mut objects);
        let names: Vec<String> = objects
            .iter()
            .map(|r| {
                format!(
                    "{}/{}",
                    r.value["kind"].as_str().unwrap(),
                    r.value["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect();
        assert_eq!(
            names,
            ["Service/a", "Service/b", "Deployment/a", "Deployment/c"]
        );
    }

    #[test]
    fn renders_differ_by_their_objects_not_by_their_order() {
        let a = [rendered("Service", "a", "1"), rendered("Service", "b", "1")];
        let reordered = [rendered("Service", "b", "1"), rendered("Service", "a", "1")];
        assert!(differing(&a, &reordered).is_empty());
        let changed = [rendered("Service", "b", "1"), rendered("Service", "a", "2")];
        assert_eq!(differing(&a, &changed), ["Service/a (data.x)"]);
        let fewer = [rendered("Service", "a", "1")];
        assert_eq!(differing(&a, &fewer), ["Service/b"]);
        assert_eq!(differing(&fewer, &a), ["Service/b"]);
    }

    #[test]
    fn changed_fields_name_each_differing_leaf() {
        let a = json!({"metadata": {"labels": {"app.kubernetes.io/name": "a", "tier": "web"}},
            "spec": {"args": ["--x", "--y"], "ports": [1], "keep": {"k": 1}, "gone": 1}});
        let b = json!({"metadata": {"labels": {"app.kubernetes.io/name": "b", "tier": "web"}},
            "spec": {"args": ["--x", "--z"], "ports": [1, 2], "keep": {"k": 1}, "new": 1}});
        assert_eq!(
            changed_fields(&a, &b),
            [
                "metadata.labels[\"app.kubernetes.io/name\"]",
                "spec.args[1]",
                "spec.ports",
                "spec.gone",
                "spec.new"
            ]
        );
        assert!(changed_fields(&a, &a).is_empty());
        assert_eq!(
            shown_fields(&changed_fields(&a, &b), 3),
            "metadata.labels[\"app.kubernetes.io/name\"], spec.args[1], spec.ports and 2 more"
        );
    }
}
