//! The build: a kustomization's resources accumulated depth first (files and nested
//! kustomizations), then the kustomization's transformers, then the output order.

use crate::config::TransformerConfig;
use crate::context::Context;
use crate::error::KustomizeError;
use crate::fs::FileSystem;
use crate::kustomization::Kustomization;
use crate::loader::{self, LoadRestrictor};
use crate::remote::{RemoteKind, RemoteTree};
use crate::resource::{ResId, Resource};
use crate::transform;
use plumb_yaml::Node;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// kustomize's `--reorder`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reorder {
    /// The kustomization's `sortOptions` if it has them, else legacy (the CLI default).
    #[default]
    Unspecified,
    /// kustomize's fixed kind order.
    Legacy,
    /// The order resources were accumulated in.
    None,
}

/// Options of one build.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    pub reorder: Reorder,
    pub load_restrictor: LoadRestrictor,
    pub managed_by_label: bool,
    /// Where files are read from: anywhere for `kustomize build`, a source's tree for Flux.
    pub fs: FileSystem,
    /// Fetches remote entries; without one they are refused.
    pub remote: Option<Arc<dyn crate::remote::Remote>>,
}

/// The result of a build: resources in output order.
#[derive(Debug, Clone, Default)]
pub struct ResourceList {
    pub resources: Vec<Resource>,
}

impl ResourceList {
    /// Appends a resource, refusing a second resource with the same identity.
    pub fn append(&mut self, resource: Resource) -> Result<(), KustomizeError> {
        // Compared by borrowed keys, the name first: it tells most resources apart.
        let key = resource.id_key();
        if self
            .resources
            .iter()
            .any(|r| r.name() == key.4 && r.id_key() == key)
        {
            return Err(clash(&resource.id()));
        }
        self.resources.push(resource);
        Ok(())
    }

    /// [`ResourceList::append`] of each resource in turn, the same error for the first that
    /// clashes. Checked through a set of the identities once the lists are long enough: one
    /// resource compared with every other one by one was 1% of building a Flux repository,
    /// whose root gathers a few hundred (into an empty list, which the check once counted as
    /// small).
    pub fn append_all(&mut self, resources: Vec<Resource>) -> Result<(), KustomizeError> {
        self.resources.reserve(resources.len());
        if self.resources.len() + resources.len() <= 128 {
            // Up to a hundred or so: each compared with the list one by one, by names read
            // once (not out of every resource's node for every resource appended), which costs
            // less than the set's hashing.
            let mut names: Vec<compact_str::CompactString> =
                self.resources.iter().map(|r| r.name().into()).collect();
            for r in resources {
                let key = r.id_key();
                let clashes = names
                    .iter()
                    .zip(&self.resources)
                    .any(|(name, o)| name == key.4 && o.id_key() == key);
                if clashes {
                    return Err(clash(&r.id()));
                }
                names.push(key.4.into());
                self.resources.push(r);
            }
            return Ok(());
        }
        // The identities borrowed, not built: the list is only read until the first clash is
        // known, then the resources before it are appended, as one by one would have.
        let clash_at = {
            let mut ids: std::collections::HashSet<(&str, &str, &str, &str, &str)> =
                self.resources.iter().map(Resource::id_key).collect();
            resources.iter().position(|r| !ids.insert(r.id_key()))
        };
        match clash_at {
            None => {
                self.resources.extend(resources);
                Ok(())
            }
            Some(i) => {
                let id = resources[i].id();
                self.resources.extend(resources.into_iter().take(i));
                Err(clash(&id))
            }
        }
    }

    pub fn ids(&self) -> Vec<ResId> {
        self.resources.iter().map(Resource::id).collect()
    }

    /// The resources as `kustomize build` prints them.
    pub fn to_yaml(&self) -> Result<String, KustomizeError> {
        let values = self
            .resources
            .iter()
            .map(|r| plumb_yaml::to_json(&r.node))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(plumb_yaml::write_stream(&values))
    }
}

/// Builds the kustomization in `dir`.
pub fn build(dir: &Path, options: &BuildOptions) -> Result<ResourceList, KustomizeError> {
    let file = loader::find_kustomization(&options.fs, options.load_restrictor, dir)?;
    let k = Kustomization::load(&options.fs, &file)?;
    build_kustomization(&k, options)
}

/// Builds a kustomization given as a value (one read from disk and then changed, or one made
/// up for a directory that has none, as Flux does); its paths are relative to `k.dir()`.
pub fn build_kustomization(
    k: &Kustomization,
    options: &BuildOptions,
) -> Result<ResourceList, KustomizeError> {
    build_over(k, ResourceList::default(), options)
}

/// Builds a kustomization (given as a value, as [`build_kustomization`]) whose first resources
/// are `list`, as if its `resources:` named a file holding them before its own entries: what a
/// caller with objects in memory builds without writing them to a directory first.
pub fn build_over(
    k: &Kustomization,
    mut list: ResourceList,
    options: &BuildOptions,
) -> Result<ResourceList, KustomizeError> {
    let top = k;
    let meta = transform::build_annotations::BuildMetadata::of(top);
    let mut ctx = Context::new(options.clone());
    ctx.record_transformations = meta.transformer_annotations;
    let mut builder = Builder::new(ctx, vec![options.fs.absolute(k.dir())]);
    builder.accumulate_target(k, &mut list)?;
    // The steps that run once, after every level of the tree has been built, in kustomize's
    // order: content hashes on generated names, then name references fixed, then vars.
    let config = builder.configs.pop().unwrap_or_default();
    let config = &*config;
    crate::generate::add_name_hashes(&mut list)?;
    transform::name_reference::run(&mut list, &config.name_reference, &builder.ctx)?;
    // Vars read objects in their final state: this stays after hashes and name references.
    crate::vars::resolve(&mut list, &builder.vars, &config.var_reference)?;
    transform::build_annotations::finalize(&mut list.resources, &meta);
    // The kustomization's sortOptions win over the command line's --reorder.
    match (top.field("sortOptions"), options.reorder) {
        (Some(_), _) => {
            if let Some((first, last)) = sort_options(top)? {
                transform::sort::legacy_sort(&mut list.resources, &first, &last);
            }
        }
        (None, Reorder::None) => {}
        // The default tables as they are, not copied into strings for every build.
        (None, Reorder::Legacy | Reorder::Unspecified) => {
            let (first, last) = transform::sort::default_order();
            transform::sort::legacy_sort(&mut list.resources, first, last);
        }
    }
    Ok(list)
}

/// What a kustomization adds to its level's transformer configuration: its `configurations:`
/// files, or kustomize's defaults (default var fields included) when it has none. The defaults
/// are merged once per process and shared by every level that has no `configurations:`.
fn level_config(
    k: &Kustomization,
    ctx: &Context,
) -> Result<Arc<TransformerConfig>, KustomizeError> {
    if k.string_list("configurations")?.is_empty() {
        return Ok(Arc::clone(default_level()));
    }
    Ok(Arc::new(crate::config::load_configurations(k, ctx)?))
}

/// kustomize's defaults with the default var fields: the configuration of every level that has
/// no `configurations:`, merged once per process.
fn default_level() -> &'static Arc<TransformerConfig> {
    static DEFAULT_LEVEL: OnceLock<Arc<TransformerConfig>> = OnceLock::new();
    DEFAULT_LEVEL.get_or_init(|| {
        let mut config = crate::config::defaults().clone();
        // Compiled-in data, covered by the conformance corpus: a conflict is a bug in it.
        crate::config::merge_field_specs(
            &mut config.var_reference,
            &crate::vars::default_var_reference_specs(),
        )
        .unwrap_or_else(|e| panic!("default var reference specs: {e}"));
        Arc::new(config)
    })
}

/// Parses the compiled-in tables every build reads (the OpenAPI schema, the default field
/// specs) if no build has yet. They are parsed once per process, by the first build that needs
/// them while the others wait: a caller with other work to do first (reading its repository)
/// can run this on a thread of its own so that no build waits. The schema's definitions are not
/// parsed here but each on first use ([`crate::schema::Schema::builtin`]).
pub fn prepare() {
    crate::schema::Schema::builtin();
    default_level();
}

/// kustomize's refusal of a second resource with identity `id`.
fn clash(id: &ResId) -> KustomizeError {
    KustomizeError::Other(format!(
        "may not add resource with an already registered id: {id}"
    ))
}

/// Builds `dir` and renders it as `kustomize build` prints it.
pub fn build_yaml(dir: &Path, options: &BuildOptions) -> Result<String, KustomizeError> {
    build(dir, options)?.to_yaml()
}

/// Fields plumb will not act on: refused with the file and line, never skipped.
fn refuse_unsupported(k: &Kustomization) -> Result<(), KustomizeError> {
    const UNSUPPORTED: &[(&str, &str)] = &[
        ("helmCharts", "plumb does not render Helm charts in a kustomization; render the chart into the repository, or let Flux's helm-controller install it with a HelmRelease"),
        ("helmChartInflationGenerator", "plumb does not render Helm charts in a kustomization"),
        ("helmGlobals", "plumb does not render Helm charts in a kustomization"),
        ("validators", "plumb does not run validator plugins"),
    ];
    for (field, why) in UNSUPPORTED {
        let Some(node) = k.field(field) else {
            continue;
        };
        let empty = node.as_sequence().is_some_and(Vec::is_empty)
            || node.as_mapping().is_some_and(Vec::is_empty);
        if empty {
            continue;
        }
        let line = k
            .node
            .get_key(field)
            .and_then(|key| key.span.as_ref())
            .map(|s| format!(":{}", s.location().line))
            .unwrap_or_default();
        return Err(KustomizeError::Unsupported(format!(
            "{}{line}: {field}: {why}",
            k.path.display()
        )));
    }
    Ok(())
}

/// Kinds to put first and last in legacy order.
type KindOrder = (Vec<String>, Vec<String>);

/// The order the top kustomization's `sortOptions` ask for (legacy when absent).
fn sort_options(k: &Kustomization) -> Result<Option<KindOrder>, KustomizeError> {
    let Some(opts) = k.field("sortOptions") else {
        return Ok(Some(transform::sort::default_lists()));
    };
    match opts.str_at(&["order"]) {
        Some("fifo") => {
            if opts.get("legacySortOptions").is_some() {
                return Err(KustomizeError::Other(
                    "the field 'sortOptions.legacySortOptions' is set but the selected sort order is 'fifo', not 'legacy'".into(),
                ));
            }
            Ok(None)
        }
        Some("legacy") => {
            let (mut first, mut last) = transform::sort::default_lists();
            if let Some(legacy) = opts.get("legacySortOptions") {
                let list = |key: &str| -> Vec<String> {
                    legacy
                        .get(key)
                        .and_then(Node::as_sequence)
                        .map(|v| {
                            v.iter()
                                .filter_map(|n| n.scalar_value().map(str::to_string))
                                .collect()
                        })
                        .unwrap_or_default()
                };
                first = list("orderFirst");
                last = list("orderLast");
            }
            Ok(Some((first, last)))
        }
        _ => Err(KustomizeError::Other(
            "the field 'sortOptions.order' must be one of [fifo, legacy]".into(),
        )),
    }
}

struct Builder {
    ctx: Context,
    /// The kustomization directories being built, to refuse cycles.
    stack: Vec<PathBuf>,
    /// The transformer configuration of each level being built (innermost last): kustomize's
    /// defaults, plus what the level's `configurations:` and `crds:` add, plus what its
    /// sub-kustomizations added (kustomize merges configurations up to the top).
    /// Shared (`Arc`) because nearly every level's configuration is kustomize's defaults: a
    /// level takes its first merged configuration as is and copies it only to extend it.
    configs: Vec<Arc<TransformerConfig>>,
    /// `vars:` of every level, resolved once at the end of the build.
    vars: Vec<crate::vars::Var>,
}

impl Builder {
    /// A builder inside the kustomization directories of `stack`, with one level of
    /// configuration, empty, and no vars yet.
    fn new(ctx: Context, stack: Vec<PathBuf>) -> Builder {
        Builder {
            ctx,
            stack,
            configs: vec![Arc::default()],
            vars: Vec::new(),
        }
    }

    /// The configuration of the level being built.
    fn config_mut(&mut self) -> &mut Arc<TransformerConfig> {
        if self.configs.is_empty() {
            self.configs.push(Arc::default());
        }
        let last = self.configs.len() - 1;
        &mut self.configs[last]
    }

    /// Merges `other` into the level's configuration. Every configuration merged here is
    /// itself the result of merges, so it holds no spec that an earlier one of it covers:
    /// merged into an empty configuration it is unchanged, and merged into itself it adds
    /// nothing. Those two cases, nearly every level, share `other` instead of copying it.
    fn merge_config(&mut self, other: Arc<TransformerConfig>) -> Result<(), KustomizeError> {
        let level = self.config_mut();
        // An empty configuration (what a resource file's entry, built apart, adds) changes
        // nothing, and merging it would copy a shared level.
        if Arc::ptr_eq(level, &other) || *other == TransformerConfig::default() {
            return Ok(());
        }
        if **level == TransformerConfig::default() {
            *level = other;
            return Ok(());
        }
        Arc::make_mut(level).merge(Arc::unwrap_or_clone(other))
    }

    fn build_dir(&mut self, dir: &Path) -> Result<(ResourceList, Kustomization), KustomizeError> {
        let k = self.load_level(dir, false)?;
        let mut list = ResourceList::default();
        self.configs.push(Arc::default());
        let result = self.accumulate_target(&k, &mut list);
        self.stack.pop();
        let child = self.configs.pop().unwrap_or_default();
        result?;
        self.merge_config(child)?;
        Ok((list, k))
    }

    /// Loads the kustomization (or, with `component`, the Component) in `dir` and enters it:
    /// the caller pops `self.stack` when done with it.
    fn load_level(&mut self, dir: &Path, component: bool) -> Result<Kustomization, KustomizeError> {
        let fs = &self.ctx.options.fs;
        fs.resolve(dir)?;
        let abs = fs.absolute(dir);
        if self.stack.contains(&abs) {
            return Err(KustomizeError::Cycle(abs));
        }
        let file = loader::find_kustomization(fs, self.ctx.options.load_restrictor, dir)?;
        let k = Kustomization::load(fs, &file)?;
        match (component, k.is_component()) {
            (true, false) => {
                return Err(KustomizeError::Other(format!(
                    "accumulateDirectory: \"expected kind 'Component' for path '{}' but got 'Kustomization'\"",
                    abs.display()
                )))
            }
            (false, true) => {
                return Err(KustomizeError::Other(format!(
                    "accumulateDirectory: \"expected kind != 'Component' for path '{}'\"",
                    abs.display()
                )))
            }
            _ => {}
        }
        self.stack.push(abs);
        Ok(k)
    }

    /// One level of the tree, in kustomize's order: resources, components, generators, then
    /// the builtin transformers in their fixed order.
    fn accumulate_target(
        &mut self,
        k: &Kustomization,
        list: &mut ResourceList,
    ) -> Result<(), KustomizeError> {
        refuse_unsupported(k)?;
        crate::openapi::apply(k, &mut self.ctx)?;
        let mut entries = k.string_list("bases")?;
        entries.extend(k.string_list("resources")?);
        if !self.accumulate_side_by_side(k, &entries, list)? {
            for entry in entries {
                self.accumulate(k.dir(), &entry, list)
                    .map_err(|e| KustomizeError::accumulating(&entry, entry_line(k, &entry), e))?;
            }
        }
        let own = level_config(k, &self.ctx)?;
        self.merge_config(own)?;
        let crds = crate::crds::load(k, &self.ctx)?;
        if !crds.is_empty() {
            let config = Arc::make_mut(self.config_mut());
            transform::name_reference::merge(&mut config.name_reference, crds.name_references);
            crate::config::merge_field_specs(&mut config.common_labels, &crds.labels)?;
            crate::config::merge_field_specs(&mut config.common_annotations, &crds.annotations)?;
            crate::config::merge_field_specs(&mut config.name_prefix, &crds.prefixes)?;
        }
        // Generators run before components (kustomize since PR 5170), so a component transforms
        // what its kustomization generated.
        let generator_configs = self.plugin_configs(k, "generators")?;
        crate::generate::run(k, list, &self.ctx)?;
        // Generated resources, new or replacing one, are the ones without an origin yet.
        for r in list.resources.iter_mut().filter(|r| r.origin.is_none()) {
            let kind = if r.kind() == "Secret" {
                "SecretGenerator"
            } else {
                "ConfigMapGenerator"
            };
            r.origin
                .get_or_insert_with(|| crate::resource::Origin::builtin(&k.path, kind));
        }
        for config in &generator_configs {
            crate::generate::run_configs(k, std::slice::from_ref(config), list, &self.ctx)?;
            let origin = transform::build_annotations::plugin_origin(config, &k.path);
            for r in list.resources.iter_mut().filter(|r| r.origin.is_none()) {
                r.origin.get_or_insert_with(|| origin.clone());
            }
        }
        for entry in k.string_list("components")? {
            self.apply_component(k.dir(), &entry, list)
                .map_err(|e| KustomizeError::Other(format!("accumulating components: {e}")))?;
        }
        self.run_steps(k, list)?;
        // kustomize merges a level's vars after its transformers ran.
        crate::vars::collect(k, list, &mut self.vars)
    }

    /// Accumulates a level's resource entries side by side (a directory of namespaces, each
    /// a kustomization of its apps, is most of a Flux repository's root build), each entry by a
    /// builder of its own, joined in the entries' order: their resources appended, the
    /// transformer configurations they added merged, as one builder taking them one after
    /// another does. That is exact while no entry changes what the entries after it read: when
    /// one chose the build's schema (`openapi:`) or collected vars (each checked against the
    /// vars before it), the results are dropped and `false` returned, for the caller to
    /// accumulate the entries one by one. Also `false`, with nothing done, for a single entry,
    /// a remote one, or a schema already chosen (copying it per entry would cost more than the
    /// build).
    fn accumulate_side_by_side(
        &mut self,
        k: &Kustomization,
        entries: &[String],
        list: &mut ResourceList,
    ) -> Result<bool, KustomizeError> {
        use rayon::prelude::*;
        let local = |entry: &String| {
            !loader::is_remote(entry)
                && self
                    .ctx
                    .options
                    .remote
                    .as_ref()
                    .is_none_or(|r| matches!(r.classify(entry), RemoteKind::Local))
        };
        if entries.len() < 2
            || self.ctx.schema_chosen
            || matches!(self.ctx.schema, std::borrow::Cow::Owned(_))
            || !entries.iter().all(local)
        {
            return Ok(false);
        }
        let parts: Vec<(Builder, Result<ResourceList, KustomizeError>)> = entries
            .par_iter()
            .map(|entry| {
                let mut fork = Builder::new(self.ctx.clone(), self.stack.clone());
                let mut part = ResourceList::default();
                let result = fork.accumulate(k.dir(), entry, &mut part).map(|()| part);
                (fork, result)
            })
            .collect();
        // A var's name is checked against those collected before it, across entries: an entry
        // with vars (rare, and deprecated) is left to the serial build to say which came first.
        if parts
            .iter()
            .any(|(fork, _)| fork.ctx.schema_chosen || !fork.vars.is_empty())
        {
            return Ok(false);
        }
        for (entry, (fork, part)) in entries.iter().zip(parts) {
            let at = |e| KustomizeError::accumulating(entry, entry_line(k, entry), e);
            let part = part.map_err(at)?;
            // In the order one builder takes these steps: the entry's configuration merged as
            // its build ends, then its resources appended.
            if let Some(config) = fork.configs.into_iter().next() {
                self.merge_config(config).map_err(at)?;
            }
            list.append_all(part.resources).map_err(at)?;
            self.ctx.builtin_schema_wanted |= fork.ctx.builtin_schema_wanted;
        }
        Ok(true)
    }

    /// A component works on the resources accumulated so far: its own resources join them,
    /// then its generators and transformers run over all of them.
    fn apply_component(
        &mut self,
        root: &Path,
        entry: &str,
        list: &mut ResourceList,
    ) -> Result<(), KustomizeError> {
        if let Some(tree) = self.remote_tree(entry, "component")? {
            return self.in_remote_tree(&tree, |builder| {
                let k = builder.load_level(&tree.dir, true)?;
                let result = builder.accumulate_target(&k, list);
                builder.stack.pop();
                result
            });
        }
        let path = self.local_entry(root, entry, "component")?;
        self.ctx.options.fs.resolve(&path)?;
        if !self.ctx.options.fs.is_dir(&path) {
            return Err(KustomizeError::Other(format!(
                "must build at directory: '{}': a component is a directory holding a kustomization",
                loader::absolute(&path).display()
            )));
        }
        let k = self.load_level(&path, true)?;
        let result = self.accumulate_target(&k, list);
        self.stack.pop();
        result
    }

    /// Generators and transformers of one kustomization (or component) over `list`.
    fn run_steps(
        &mut self,
        k: &Kustomization,
        list: &mut ResourceList,
    ) -> Result<(), KustomizeError> {
        let transformer_configs = self.plugin_configs(k, "transformers")?;
        let ctx = &self.ctx;
        let config = self.configs.last().cloned().unwrap_or_default();
        let config = &*config;
        // Each builtin a field configures, for buildMetadata's transformer annotations: it is
        // recorded on every resource present when it ran.
        let recording = ctx.record_transformations;
        let record = |list: &mut ResourceList, kind: &str, times: usize| {
            if !recording {
                return;
            }
            for r in &mut list.resources {
                for _ in 0..times {
                    r.transformations
                        .push(crate::resource::Origin::builtin(&k.path, kind));
                }
            }
        };
        let count = |field: &str| match k.field(field) {
            None => 0,
            Some(n) => n.as_sequence().map_or(1, Vec::len),
        };
        // Generators ran in accumulate_target, before components. Transformers, in
        // kustomize's fixed order, then the kustomization's own `transformers:`.
        transform::patches::patches_strategic_merge(k, list, ctx)?;
        record(
            list,
            "PatchStrategicMergeTransformer",
            count("patchesStrategicMerge").min(1),
        );
        transform::patches::patches(k, list, ctx)?;
        record(list, "PatchTransformer", count("patches"));
        transform::namespace::run(k, list, ctx, config)?;
        record(list, "NamespaceTransformer", count("namespace"));
        transform::name_prefix_suffix::run(k, list, &config.name_prefix, &config.name_suffix)?;
        record(list, "PrefixTransformer", count("namePrefix"));
        record(list, "SuffixTransformer", count("nameSuffix"));
        transform::labels::run(k, list, ctx, config)?;
        record(
            list,
            "LabelTransformer",
            count("labels") + count("commonLabels").min(1),
        );
        transform::annotations::run(k, list, ctx, config)?;
        record(
            list,
            "AnnotationsTransformer",
            count("commonAnnotations").min(1),
        );
        transform::patches::patches_json6902(k, list, ctx)?;
        record(list, "PatchJson6902Transformer", count("patchesJson6902"));
        transform::replicas::run(k, list, ctx, config)?;
        record(list, "ReplicaCountTransformer", count("replicas"));
        transform::images::run(k, list, ctx, config)?;
        record(list, "ImageTagTransformer", count("images"));
        transform::replacements::run(k, list, ctx)?;
        record(list, "ReplacementTransformer", count("replacements").min(1));
        for config in &transformer_configs {
            if !transform::builtin::run_transformer(config, list, k, ctx)? {
                return Err(transform::builtin::not_supported(config));
            }
            if recording {
                let origin = transform::build_annotations::plugin_origin(config, &k.path);
                for r in &mut list.resources {
                    r.transformations.push(origin.clone());
                }
            }
        }
        Ok(())
    }

    /// The plugin configurations a `transformers:` or `generators:` field lists: files,
    /// kustomization directories (built, their output being the configurations) or inline YAML.
    fn plugin_configs(
        &mut self,
        k: &Kustomization,
        field: &str,
    ) -> Result<Vec<Resource>, KustomizeError> {
        let mut out = ResourceList::default();
        // Configurations are built apart: their own transformer configuration stays theirs.
        // Building them only merges into the configuration stack, never reads it, so they
        // start from an empty one.
        let saved = std::mem::take(&mut self.configs);
        let result = self.plugin_entries(k, field, &mut out);
        self.configs = saved;
        result?;
        Ok(out.resources)
    }

    fn plugin_entries(
        &mut self,
        k: &Kustomization,
        field: &str,
        out: &mut ResourceList,
    ) -> Result<(), KustomizeError> {
        for entry in k.string_list(field)? {
            let path = loader::clean(&k.dir().join(&entry));
            if !entry.contains('\n')
                && (self.ctx.options.fs.exists(&path) || loader::is_remote(&entry))
            {
                self.accumulate(k.dir(), &entry, out).map_err(|e| {
                    KustomizeError::Other(format!("loading {field} '{entry}': {e}"))
                })?;
                continue;
            }
            let label = format!("{} ({field} entry)", k.path.display());
            let docs = plumb_yaml::parse_documents(label, &entry)?;
            let mut found = false;
            for doc in docs.into_iter().filter(|d| d.is_mapping()) {
                found = true;
                out.resources.push(Resource::new(doc));
            }
            if !found {
                return Err(KustomizeError::Io {
                    path,
                    message: format!(
                        "{field} entry is neither a file, a directory nor inline YAML"
                    ),
                });
            }
        }
        Ok(())
    }

    /// The local path a `resources:` or `components:` entry names. Without a [`Remote`]
    /// (crate::remote::Remote), entries that look remote are refused; with one, what it does
    /// not take for remote is local, as in kustomize.
    fn local_entry(&self, root: &Path, entry: &str, what: &str) -> Result<PathBuf, KustomizeError> {
        if self.ctx.options.remote.is_none() && loader::is_remote(entry) {
            return Err(KustomizeError::Remote {
                what: what.to_string(),
                url: entry.to_string(),
            });
        }
        Ok(loader::clean(&root.join(entry)))
    }

    /// A remote resource entry, read as kustomize reads it: an `http(s)` URL as a file first,
    /// then as a repository; a repository spec that names a local file is that file. `false`
    /// when the entry is local.
    fn accumulate_remote(
        &mut self,
        root: &Path,
        entry: &str,
        list: &mut ResourceList,
    ) -> Result<bool, KustomizeError> {
        let Some(remote) = self.ctx.options.remote.clone() else {
            return Ok(false);
        };
        let fetch_error = |failure: crate::remote::RemoteFailure| KustomizeError::RemoteFetch {
            what: "resource".into(),
            url: entry.to_string(),
            message: failure.message,
            broken: failure.broken,
        };
        let file_error = match remote.classify(entry) {
            RemoteKind::Local => return Ok(false),
            RemoteKind::Repository => {
                if self
                    .ctx
                    .options
                    .fs
                    .is_file(&loader::clean(&root.join(entry)))
                {
                    return Ok(false);
                }
                None
            }
            RemoteKind::Http { repository } => {
                let read = remote.file(entry).map_err(fetch_error).and_then(|text| {
                    parse_resources(Path::new(entry), &text, PathBuf::from(entry))
                });
                match read {
                    Ok(resources) => {
                        list.append_all(resources)?;
                        return Ok(true);
                    }
                    Err(e) if !repository => return Err(e),
                    Err(e) => Some(e),
                }
            }
        };
        let tree = match self.remote_tree(entry, "resource") {
            Ok(Some(tree)) => tree,
            Ok(None) => return Ok(false),
            // Both readings failed: say why each did, as kustomize does.
            Err(KustomizeError::RemoteFetch {
                message, broken, ..
            }) if file_error.is_some() => {
                // Wrong when a server answered that one reading names nothing (a 404, a ref
                // the repository lacks) and the other failed too.
                let (file, file_broken) = match file_error {
                    Some(KustomizeError::RemoteFetch {
                        message, broken, ..
                    }) => (message, broken),
                    other => (other.map(|e| e.to_string()).unwrap_or_default(), false),
                };
                return Err(fetch_error(crate::remote::RemoteFailure {
                    message: format!("{file}; read as a git repository: {message}"),
                    broken: broken || file_broken,
                }));
            }
            Err(e) => return Err(e),
        };
        let (built, _) = self.in_remote_tree(&tree, |builder| builder.build_dir(&tree.dir))?;
        list.append_all(built.resources)?;
        Ok(true)
    }

    /// The fetched tree of a repository entry (an `http(s)` one included), `None` when the
    /// entry is no repository or no [`crate::remote::Remote`] is set.
    fn remote_tree(&self, entry: &str, what: &str) -> Result<Option<RemoteTree>, KustomizeError> {
        let Some(remote) = &self.ctx.options.remote else {
            return Ok(None);
        };
        match remote.classify(entry) {
            RemoteKind::Repository | RemoteKind::Http { repository: true } => {}
            RemoteKind::Local | RemoteKind::Http { repository: false } => return Ok(None),
        }
        let tree = remote
            .directory(entry)
            .map_err(|failure| KustomizeError::RemoteFetch {
                what: what.to_string(),
                url: entry.to_string(),
                message: failure.message,
                broken: failure.broken,
            })?;
        Ok(Some(tree))
    }

    /// Runs `f` with the file system confined to a fetched tree, whose kustomization directory
    /// must be a directory inside it; kustomize never lets a clone read outside itself.
    fn in_remote_tree<T>(
        &mut self,
        tree: &RemoteTree,
        f: impl FnOnce(&mut Self) -> Result<T, KustomizeError>,
    ) -> Result<T, KustomizeError> {
        let fs = FileSystem::confined(&tree.root)?;
        fs.resolve(&tree.dir)?;
        if fs.is_file(&tree.dir) {
            return Err(KustomizeError::Other(format!(
                "'{}' refers to a file; expecting a directory",
                tree.dir.display()
            )));
        }
        let saved_fs = std::mem::replace(&mut self.ctx.options.fs, fs);
        let saved_restrictor = std::mem::replace(
            &mut self.ctx.options.load_restrictor,
            LoadRestrictor::RootOnly,
        );
        let result = f(self);
        self.ctx.options.fs = saved_fs;
        self.ctx.options.load_restrictor = saved_restrictor;
        result
    }

    fn accumulate(
        &mut self,
        root: &Path,
        entry: &str,
        list: &mut ResourceList,
    ) -> Result<(), KustomizeError> {
        if self.accumulate_remote(root, entry, list)? {
            return Ok(());
        }
        let path = self.local_entry(root, entry, "resource")?;
        let fs = &self.ctx.options.fs;
        fs.resolve(&path)?;
        if fs.is_dir(&path) {
            // kustomize takes a directory for a new root, and refuses an absolute one.
            if Path::new(entry).is_absolute() {
                return Err(KustomizeError::Other(format!(
                    "new root '{entry}' cannot be absolute"
                )));
            }
            let (built, _) = self.build_dir(&path)?;
            list.append_all(built.resources)?;
            return Ok(());
        }
        if !fs.exists(&path) {
            return Err(KustomizeError::Io {
                path: path.clone(),
                message: "no such file or directory".into(),
            });
        }
        loader::check_restrictor(self.ctx.options.load_restrictor, root, &path)?;
        let resources = read_resources(&self.ctx.options.fs, &path)?;
        self.ctx.note_kinds(&resources);
        list.append_all(resources)
    }
}

/// The file and line of a `resources:` (or `bases:`) entry, for errors that point at it.
fn entry_line(k: &Kustomization, entry: &str) -> Option<(PathBuf, usize)> {
    ["bases", "resources"]
        .iter()
        .filter_map(|field| k.node.get(field).and_then(Node::as_sequence))
        .flatten()
        .find(|n| n.scalar_value() == Some(entry))
        .and_then(|n| n.span.as_ref())
        .map(|s| (s.file.path().to_path_buf(), s.location().line))
}

/// Reads the resources of a YAML file: every non-empty document, `*List` kinds expanded.
pub fn read_resources(fs: &FileSystem, path: &Path) -> Result<Vec<Resource>, KustomizeError> {
    let (docs, vouched) = fs.read_documents_vouched(path)?;
    let origin = fs.absolute(path);
    // Documents nobody else holds (a file parsed for the first time) are moved, not copied.
    // Documents kept for every reader are checked by the first that reads them.
    match Arc::try_unwrap(docs) {
        Ok(docs) => resources_of(docs, path, origin, true),
        Err(docs) => {
            let resources = resources_of(docs.iter().cloned(), path, origin, !vouched)?;
            if !vouched {
                fs.vouch(path, &docs);
            }
            Ok(resources)
        }
    }
}

/// The resources of YAML text read from `path` (a file, or a URL as a path), with `origin` the
/// file they come from.
pub fn parse_resources(
    path: &Path,
    text: &str,
    origin: PathBuf,
) -> Result<Vec<Resource>, KustomizeError> {
    resources_of(plumb_yaml::parse_documents(path, text)?, path, origin, true)
}

/// The resources of the documents of `path`; each checked as JSON unless these documents
/// already were (`check` false).
fn resources_of(
    docs: impl IntoIterator<Item = Node>,
    path: &Path,
    origin: PathBuf,
    check: bool,
) -> Result<Vec<Resource>, KustomizeError> {
    let mut out = Vec::new();
    for doc in docs {
        push_resource(doc, path, &mut out)?;
    }
    let origin = crate::resource::Origin::File(origin);
    for r in &mut out {
        // A duplicate key inside a resource is an error in kustomize; find it early.
        if check {
            plumb_yaml::check(&r.node)?;
        }
        r.origin = Some(origin.clone());
    }
    Ok(out)
}

/// One document of a resource file, or an item of a List in it, into `out`: none when it is
/// null, `{}` or `[]`; refused, as kustomize refuses it, without the metadata a resource needs
/// (so anything left is a mapping); a List's items each in turn.
fn push_resource(doc: Node, path: &Path, out: &mut Vec<Resource>) -> Result<(), KustomizeError> {
    if doc.is_nil_or_empty() {
        return Ok(());
    }
    if let Some(missing) = missing_metadata(&doc) {
        return Err(KustomizeError::Other(format!(
            "{}: {missing}",
            located(path, &doc)
        )));
    }
    if doc.str_at(&["kind"]).unwrap_or("").ends_with("List") {
        if let Some(items) = doc.get("items").and_then(Node::as_sequence) {
            for item in items.clone() {
                push_resource(item, path, out)?;
            }
            return Ok(());
        }
    }
    out.push(Resource::new(doc));
    Ok(())
}

/// What kustomize finds missing in a resource read from a file, which it refuses before
/// anything else (`GetValidatedMetadata`): none of `apiVersion`, `kind` and the name,
/// namespace, labels and annotations of `metadata` (so any document that is no mapping); then
/// the kind; then, unless the kind is a list, `metadata.name`. sulibot/home-ops lists variable
/// files (`APP: prometheus`) as resources: kustomize fails there.
fn missing_metadata(doc: &Node) -> Option<String> {
    fn field<'n>(node: &'n Node, key: &str) -> Option<&'n Node> {
        node.get(key).filter(|v| !v.is_nil_or_empty())
    }
    fn text(node: Option<&Node>) -> &str {
        node.and_then(Node::scalar_value).unwrap_or_default()
    }
    let metadata = field(doc, "metadata");
    let name = metadata.and_then(|m| field(m, "name"));
    let metadata_known = name.is_some()
        || metadata.is_some_and(|m| {
            ["namespace", "labels", "annotations"]
                .iter()
                .any(|k| field(m, k).is_some())
        });
    let (api_version, kind) = (field(doc, "apiVersion"), field(doc, "kind"));
    if api_version.is_none() && kind.is_none() && !metadata_known {
        return Some("missing Resource metadata".to_string());
    }
    let (api_version, kind, name) = (text(api_version), text(kind), text(name));
    if kind.is_empty() {
        return Some(format!(
            "missing kind in object (apiVersion `{api_version}`, name `{name}`)"
        ));
    }
    if !kind.ends_with("List") && name.is_empty() {
        return Some(format!(
            "missing metadata.name in object (apiVersion `{api_version}`, kind `{kind}`)"
        ));
    }
    None
}

/// `path:line:column` of `node`.
fn located(path: &Path, node: &Node) -> String {
    let (line, column) = node
        .span
        .as_ref()
        .map(|s| {
            let l = s.location();
            (l.line, l.column)
        })
        .unwrap_or((0, 0));
    format!("{}:{line}:{column}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_maps(names: impl IntoIterator<Item = String>) -> Vec<Resource> {
        names
            .into_iter()
            .map(|name| {
                let text = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n");
                Resource::new(
                    plumb_yaml::parse_documents("cm.yaml", &text)
                        .unwrap()
                        .remove(0),
                )
            })
            .collect()
    }

    /// Long lists take the set of identities, short ones the comparisons one by one: both
    /// accept the same resources and refuse the first clash with the same message.
    #[test]
    fn append_all_is_append_in_turn() {
        for (before, batch) in [(3, 2), (40, 30), (0, 140), (100, 60)] {
            let mut list = ResourceList::default();
            list.append_all(config_maps((0..before).map(|i| format!("a{i}"))))
                .expect("distinct names");
            let mut names: Vec<String> = (0..batch).map(|i| format!("b{i}")).collect();
            // A clash with the list, or within the batch when the list starts empty.
            let clashing = match before {
                0 => "b7".to_string(),
                _ => format!("a{}", before - 1),
            };
            names.push(clashing.clone());
            names.push("a0".into());
            let mut one_by_one = list.clone();
            let by_one = config_maps(names.clone())
                .into_iter()
                .try_for_each(|r| one_by_one.append(r))
                .expect_err("a clash");
            let all = list.append_all(config_maps(names)).expect_err("a clash");
            assert_eq!(all.to_string(), by_one.to_string());
            assert!(all.to_string().contains(&clashing), "{all}");
            assert_eq!(list.resources.len(), one_by_one.resources.len());
        }
    }
}

#[cfg(test)]
mod vouched_tests {
    use super::read_resources;
    use crate::FileSystem;

    /// A file many kustomizations read is kept after its second parse; its resources are
    /// checked until one read passed, and a file that fails fails every read.
    #[test]
    fn kept_documents_are_checked_until_they_pass_and_fail_every_time() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let good = tmp.path().join("good.yaml");
        let bad = tmp.path().join("bad.yaml");
        std::fs::write(
            &good,
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
        )
        .expect("write");
        std::fs::write(
            &bad,
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n",
        )
        .expect("write");
        let fs = FileSystem::confined(tmp.path()).expect("root");
        for read in 0..4 {
            let resources = read_resources(&fs, &good).expect("good file");
            assert_eq!(resources.len(), 1);
            assert_eq!(resources[0].name(), "a");
            let (_, vouched) = fs.read_documents_vouched(&good).expect("read");
            // This read of the first round parses the file a second time and keeps it; the
            // next round's read_resources is the first to read the kept documents, and checks
            // them once.
            assert_eq!(vouched, read >= 1, "read {read}");
            let err = read_resources(&fs, &bad).expect_err("duplicate key");
            assert!(err.to_string().contains("already defined"), "{err}");
        }
    }
}
