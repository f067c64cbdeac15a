//! The Kubernetes schema facts a kustomize build depends on: how each field of a built-in kind
//! merges in a strategic merge patch, and whether a kind is namespace-scoped.
//!
//! The built-in data is the Kubernetes 1.21.2 schema kustomize embeds, reduced by
//! `scripts/gen-openapi-table.py` to `data/k8s-1.21.2-schema.json` (see `data/README.md` for the
//! format and the scope rule). Schemas from CRDs or a kustomization's `openapi:` field can be
//! loaded in the same format and layered over it with [`Schema::extend`].
//!
//! ```
//! use plumb_kustomize::schema::{ListMerge, Schema};
//!
//! let schema = Schema::builtin();
//! let deployment = schema.type_for("apps/v1", "Deployment").unwrap();
//! let containers = deployment.lookup(&["spec", "template", "spec", "containers"]).unwrap();
//! assert_eq!(containers.list_merge(), Some(ListMerge::ByKeys(vec!["name"])));
//! assert_eq!(schema.is_namespaced("rbac.authorization.k8s.io/v1", "ClusterRole"), Some(false));
//! ```

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use crate::local_hash::LocalHash;

use serde_json::{Map, Value};

/// The generated table for Kubernetes 1.21.2, compiled in.
const BUILTIN_TABLE: &str = include_str!("../data/k8s-1.21.2-schema.json");

/// Merge and scope information for a set of Kubernetes kinds.
///
/// Definitions are keyed by their OpenAPI names (`io.k8s.api.core.v1.PodSpec`), kinds by exact
/// `apiVersion` and `kind`, as kustomize's kyaml keys them.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    /// Kinds by apiVersion, then kind: looked up for most resources of every build.
    resources: HashMap<String, Kinds, LocalHash>,
    definitions: HashMap<String, Definition>,
    /// The compiled-in table's definitions, each parsed when first looked up, under
    /// `definitions` (which win). A build reads a few dozen of the 612 at most, and most builds
    /// of Flux repositories none: parsing them all was 6% of the CPU of `plumb build` on a real
    /// repository, on a thread that competed with reading the repository.
    builtin: Option<&'static BuiltinDefinitions>,
}

/// The kinds of one apiVersion.
type Kinds = HashMap<String, Resource, LocalHash>;

/// The compiled-in table's definitions as text, each parsed on first use.
#[derive(Debug)]
struct BuiltinDefinitions {
    entries: HashMap<&'static str, BuiltinDefinition>,
}

#[derive(Debug)]
struct BuiltinDefinition {
    text: &'static serde_json::value::RawValue,
    parsed: OnceLock<Definition>,
}

impl BuiltinDefinitions {
    fn get(&self, name: &str) -> Option<(&'static str, &Definition)> {
        let (name, entry) = self.entries.get_key_value(name)?;
        let definition = entry.parsed.get_or_init(|| {
            let at = At::top("definitions");
            serde_json::from_str::<Value>(entry.text.get())
                .map_err(SchemaError::from)
                .and_then(|value| parse_definition(&value, at.child(name)))
                .unwrap_or_else(|e| panic!("the compiled-in schema table: {e}"))
        });
        Some((name, definition))
    }
}

/// The compiled-in table, split into its resources (read now) and its definitions (kept as
/// text); the JSON is checked whole here, as [`Schema::from_table_json`] would check it.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct BuiltinTable<'t> {
    #[serde(rename = "_source")]
    _source: &'t serde_json::value::RawValue,
    #[serde(borrow)]
    resources: &'t serde_json::value::RawValue,
    #[serde(borrow)]
    definitions: HashMap<&'t str, &'t serde_json::value::RawValue>,
}

/// What the schema knows about one apiVersion/kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resource {
    /// The definition that describes the kind's objects, if the schema has one.
    pub definition: Option<String>,
    /// `Some(true)` if namespace-scoped, `Some(false)` if cluster-scoped, `None` if unknown.
    pub namespaced: Option<bool>,
}

/// The merge-relevant fields of one object definition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Definition {
    /// Fields that are objects, lists or maps. Scalar fields are left out (they are replaced on
    /// merge whether or not a schema knows them) unless they carry patch extensions.
    pub fields: BTreeMap<String, FieldShape>,
    /// The shape of every other key when the object is itself a map (`additionalProperties`).
    pub values: Option<FieldShape>,
}

/// The shape of a field, a list's elements or a map's values, with its patch extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldShape {
    pub kind: ShapeKind,
    /// `x-kubernetes-patch-strategy` as written, e.g. `merge` or `merge,retainKeys`.
    pub strategy: Option<String>,
    /// `x-kubernetes-patch-merge-key`.
    pub merge_key: Option<String>,
    /// `x-kubernetes-list-map-keys`, kept only when a strategy is present.
    pub map_keys: Vec<String>,
}

/// What a [`FieldShape`] holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShapeKind {
    /// A string, number or boolean (or a string-typed definition such as `Quantity`).
    Scalar,
    /// An object described by the named definition.
    Object(String),
    /// A list whose elements have this shape.
    List(Box<FieldShape>),
    /// A map whose values have this shape.
    Map(Box<FieldShape>),
}

/// The directives of an `x-kubernetes-patch-strategy`, which may combine several
/// (`merge,retainKeys`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PatchStrategy {
    pub merge: bool,
    pub replace: bool,
    pub retain_keys: bool,
}

/// How kustomize merges a list field that the schema knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListMerge<'s> {
    /// Elements are matched on these keys and merged one by one (`containers` by `name`).
    ByKeys(Vec<&'s str>),
    /// A `merge` strategy without keys: a list of scalars merged as a set (`finalizers`).
    Set,
    /// No `merge` strategy: the patch's list replaces the original (`tolerations`).
    Replace,
}

/// A definition in a [`Schema`], from which its fields can be looked up.
#[derive(Debug, Clone, Copy)]
pub struct TypeRef<'s> {
    schema: &'s Schema,
    name: &'s str,
    definition: &'s Definition,
}

/// A field of a [`TypeRef`] (or a list's elements, or a map's values).
#[derive(Debug, Clone, Copy)]
pub struct FieldInfo<'s> {
    schema: &'s Schema,
    shape: &'s FieldShape,
}

/// A schema table that does not have the expected format.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("schema table is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("schema table: {path}: {message}")]
    Format { path: String, message: String },
}

impl Schema {
    /// The compiled-in Kubernetes 1.21.2 schema, parsed on first use.
    ///
    /// # Panics
    ///
    /// Never in practice: the table is generated, compiled in, and parsed by the tests.
    pub fn builtin() -> &'static Schema {
        static BUILTIN: OnceLock<Schema> = OnceLock::new();
        static DEFINITIONS: OnceLock<BuiltinDefinitions> = OnceLock::new();
        BUILTIN.get_or_init(|| {
            let checked = "the compiled-in schema table is checked by tests/schema_table.rs";
            let table: BuiltinTable<'static> = serde_json::from_str(BUILTIN_TABLE).expect(checked);
            let resources: Value = serde_json::from_str(table.resources.get()).expect(checked);
            let mut schema = Schema::default();
            schema
                .add_resources(&resources, At::top("resources"))
                .expect(checked);
            let entries = table
                .definitions
                .into_iter()
                .map(|(name, text)| {
                    let parsed = OnceLock::new();
                    (name, BuiltinDefinition { text, parsed })
                })
                .collect();
            schema.builtin = Some(DEFINITIONS.get_or_init(|| BuiltinDefinitions { entries }));
            schema
        })
    }

    /// Parses a table in the format of `data/k8s-1.21.2-schema.json`. References between
    /// definitions are not checked, so a table may refer to definitions of a schema it is meant
    /// to extend; see [`Schema::missing_definitions`].
    ///
    /// # Errors
    ///
    /// [`SchemaError::Json`] if the text is not JSON, [`SchemaError::Format`] (with the path of
    /// the offending entry) if it is not a schema table.
    pub fn from_table_json(text: &str) -> Result<Schema, SchemaError> {
        let root: Value = serde_json::from_str(text)?;
        let mut schema = Schema::default();
        for (key, value) in as_object(&root, At::ROOT)? {
            let at = At::top(key);
            match key.as_str() {
                "_source" => {}
                "resources" => schema.add_resources(value, at)?,
                "definitions" => {
                    for (name, definition) in as_object(value, at)? {
                        let definition = parse_definition(definition, at.child(name))?;
                        schema.add_definition(name.clone(), definition);
                    }
                }
                other => return Err(At::ROOT.error(format!("unknown key `{other}`"))),
            }
        }
        Ok(schema)
    }

    /// Adds the kinds of a table's `resources` object (at `at` in the table).
    fn add_resources(&mut self, value: &Value, at: At<'_>) -> Result<(), SchemaError> {
        for (api_version, kinds) in as_object(value, at)? {
            let at = at.child(api_version);
            for (kind, entry) in as_object(kinds, at)? {
                let resource = parse_resource(entry, at.child(kind))?;
                self.add_resource(api_version, kind, resource);
            }
        }
        Ok(())
    }

    /// Whether objects of this apiVersion and kind are namespace-scoped: `None` when the schema
    /// does not know the kind's scope.
    ///
    /// Like kustomize, this matches the exact apiVersion (`apps/v1`, or `v1` for the core
    /// group), not just the group. kustomize treats every kind it cannot place as
    /// namespace-scoped (it only leaves alone kinds that are certainly cluster-scoped), so a
    /// caller deciding whether to set `metadata.namespace` should read `None` as namespaced.
    pub fn is_namespaced(&self, api_version: &str, kind: &str) -> Option<bool> {
        self.resource(api_version, kind)?.namespaced
    }

    /// The definition describing objects of this apiVersion (`group/version`, or `v1` for the
    /// core group) and kind.
    pub fn type_for(&self, api_version: &str, kind: &str) -> Option<TypeRef<'_>> {
        let name = self.resource(api_version, kind)?.definition.as_deref()?;
        self.definition(name)
    }

    /// A definition by its OpenAPI name, e.g. `io.k8s.api.core.v1.PodSpec`.
    pub fn definition(&self, name: &str) -> Option<TypeRef<'_>> {
        let (name, definition) = match self.definitions.get_key_value(name) {
            Some((name, definition)) => (name.as_str(), definition),
            None => self.builtin?.get(name)?,
        };
        Some(TypeRef {
            schema: self,
            name,
            definition,
        })
    }

    /// Every definition, each name once: this schema's own, then the compiled-in table's it
    /// does not replace (parsed now, if they were not yet).
    fn all_definitions(&self) -> impl Iterator<Item = (&str, &Definition)> {
        let own = self.definitions.iter().map(|(n, d)| (n.as_str(), d));
        let builtin = self.builtin_names_kept();
        own.chain(builtin.filter_map(|name| self.builtin?.get(name)))
    }

    /// The names of the compiled-in table's definitions this schema's own do not replace.
    fn builtin_names_kept(&self) -> impl Iterator<Item = &'static str> + '_ {
        let names = self
            .builtin
            .into_iter()
            .flat_map(|t| t.entries.keys().copied());
        names.filter(|name| !self.definitions.contains_key(*name))
    }

    /// Everything the schema records about one apiVersion/kind.
    pub fn resource(&self, api_version: &str, kind: &str) -> Option<&Resource> {
        self.resources.get(api_version)?.get(kind)
    }

    /// Adds or replaces a definition.
    pub fn add_definition(&mut self, name: impl Into<String>, definition: Definition) {
        self.definitions.insert(name.into(), definition);
    }

    /// Adds every definition and kind of `other`, which win over this schema's under the same
    /// names.
    pub fn extend_from(&mut self, other: &Schema) {
        for (name, definition) in other.all_definitions() {
            self.add_definition(name, definition.clone());
        }
        for (api_version, kinds) in &other.resources {
            for (kind, resource) in kinds {
                self.add_resource(api_version, kind, resource.clone());
            }
        }
    }

    /// Records what is known about an apiVersion/kind. Parts left `None` keep what the schema
    /// already knew, so a CRD can add a kind's scope and definition separately.
    pub fn add_resource(&mut self, api_version: &str, kind: &str, resource: Resource) {
        let entry = self
            .resources
            .entry(api_version.to_owned())
            .or_default()
            .entry(kind.to_owned())
            .or_default();
        if resource.definition.is_some() {
            entry.definition = resource.definition;
        }
        if resource.namespaced.is_some() {
            entry.namespaced = resource.namespaced;
        }
    }

    /// Layers `overlay` over this schema: its definitions replace same-named ones, and its
    /// resources are added as by [`Schema::add_resource`]. Use it to add CRD schemas to
    /// [`Schema::builtin`] (cloned). A kustomization's `openapi:` schema instead replaces the
    /// built-in one in kustomize, so it should be used alone.
    pub fn extend(&mut self, overlay: Schema) {
        match overlay.builtin {
            // An overlay holding the compiled-in table: all of its definitions, parsed.
            Some(_) => {
                for (name, definition) in overlay.all_definitions() {
                    self.add_definition(name, definition.clone());
                }
            }
            None => self.definitions.extend(overlay.definitions),
        }
        for (api_version, kinds) in overlay.resources {
            for (kind, resource) in kinds {
                self.add_resource(&api_version, &kind, resource);
            }
        }
    }

    /// Definition names that resources or fields refer to but the schema lacks, sorted. Empty
    /// for a complete schema.
    pub fn missing_definitions(&self) -> Vec<&str> {
        let mut missing: Vec<&str> = self
            .resources
            .values()
            .flat_map(Kinds::values)
            .filter_map(|resource| resource.definition.as_deref())
            .chain(self.all_definitions().flat_map(|(_, definition)| {
                let shapes = definition.fields.values().chain(&definition.values);
                shapes.filter_map(FieldShape::definition_name)
            }))
            .filter(|name| self.definition(name).is_none())
            .collect();
        missing.sort_unstable();
        missing.dedup();
        missing
    }

    /// How many apiVersion/kind pairs the schema knows.
    pub fn resource_count(&self) -> usize {
        self.resources.values().map(Kinds::len).sum()
    }

    /// How many definitions the schema holds.
    pub fn definition_count(&self) -> usize {
        self.definitions.len() + self.builtin_names_kept().count()
    }
}

impl FieldShape {
    /// A shape without patch extensions.
    pub fn new(kind: ShapeKind) -> FieldShape {
        FieldShape {
            kind,
            strategy: None,
            merge_key: None,
            map_keys: Vec::new(),
        }
    }

    /// The definition this shape, or the elements or values inside it, refers to.
    fn definition_name(&self) -> Option<&str> {
        match &self.kind {
            ShapeKind::Scalar => None,
            ShapeKind::Object(name) => Some(name),
            ShapeKind::List(inner) | ShapeKind::Map(inner) => inner.definition_name(),
        }
    }
}

impl PatchStrategy {
    /// Parses a comma-separated `x-kubernetes-patch-strategy`; unknown directives are ignored,
    /// as kyaml ignores them.
    pub fn parse(strategy: &str) -> PatchStrategy {
        let mut parsed = PatchStrategy::default();
        for directive in strategy.split(',') {
            match directive {
                "merge" => parsed.merge = true,
                "replace" => parsed.replace = true,
                "retainKeys" => parsed.retain_keys = true,
                _ => {}
            }
        }
        parsed
    }
}

impl<'s> TypeRef<'s> {
    /// The definition's OpenAPI name.
    pub fn name(&self) -> &'s str {
        self.name
    }

    /// The named field. As in kyaml, a map-typed definition answers for any key with its value
    /// shape. `None` means the field is a scalar or unknown to the schema: either way it has no
    /// merge metadata, and a list under it is not described by the schema.
    pub fn field(&self, name: &str) -> Option<FieldInfo<'s>> {
        let shape = self
            .definition
            .fields
            .get(name)
            .or(self.definition.values.as_ref())?;
        Some(FieldInfo {
            schema: self.schema,
            shape,
        })
    }

    /// The object, list and map fields, in name order.
    pub fn fields(&self) -> impl Iterator<Item = (&'s str, FieldInfo<'s>)> + 's {
        let schema = self.schema;
        self.definition
            .fields
            .iter()
            .map(move |(name, shape)| (name.as_str(), FieldInfo { schema, shape }))
    }

    /// Follows a path of field names, stepping into objects and into the elements of lists of
    /// objects (`["spec", "template", "spec", "containers", "ports"]` from a Deployment).
    pub fn lookup(&self, path: &[&str]) -> Option<FieldInfo<'s>> {
        let (last, parents) = path.split_last()?;
        let mut current = *self;
        for name in parents {
            let field = current.field(name)?;
            current = field.object_type().or_else(|| field.item_type())?;
        }
        current.field(last)
    }
}

impl<'s> FieldInfo<'s> {
    /// The raw shape and patch extensions.
    pub fn shape(&self) -> &'s FieldShape {
        self.shape
    }

    /// The definition of an object field; `None` for lists, maps and scalars.
    pub fn object_type(&self) -> Option<TypeRef<'s>> {
        match &self.shape.kind {
            ShapeKind::Object(name) => self.schema.definition(name),
            _ => None,
        }
    }

    pub fn is_list(&self) -> bool {
        matches!(self.shape.kind, ShapeKind::List(_))
    }

    /// Whether this is a map (`additionalProperties`), such as `labels` or `resources.limits`.
    pub fn is_map(&self) -> bool {
        matches!(self.shape.kind, ShapeKind::Map(_))
    }

    /// The shape of a list's elements.
    pub fn items(&self) -> Option<FieldInfo<'s>> {
        match &self.shape.kind {
            ShapeKind::List(items) => Some(FieldInfo {
                schema: self.schema,
                shape: items,
            }),
            _ => None,
        }
    }

    /// The shape of a map's values.
    pub fn values(&self) -> Option<FieldInfo<'s>> {
        match &self.shape.kind {
            ShapeKind::Map(values) => Some(FieldInfo {
                schema: self.schema,
                shape: values,
            }),
            _ => None,
        }
    }

    /// The definition of a list's elements, when they are objects.
    pub fn item_type(&self) -> Option<TypeRef<'s>> {
        self.items()?.object_type()
    }

    /// The definition of a map's values, when they are objects.
    pub fn value_type(&self) -> Option<TypeRef<'s>> {
        self.values()?.object_type()
    }

    /// Whether this is a list of strings, numbers or booleans.
    pub fn is_scalar_list(&self) -> bool {
        self.items()
            .is_some_and(|items| items.shape.kind == ShapeKind::Scalar)
    }

    /// The directives of `x-kubernetes-patch-strategy`; all false when there is none.
    pub fn patch_strategy(&self) -> PatchStrategy {
        self.shape
            .strategy
            .as_deref()
            .map(PatchStrategy::parse)
            .unwrap_or_default()
    }

    /// `x-kubernetes-patch-merge-key`, if the field has a patch strategy.
    pub fn merge_key(&self) -> Option<&'s str> {
        self.shape.merge_key.as_deref()
    }

    /// The keys that identify list elements, as kyaml's `PatchStrategyAndKeyList` gives them:
    /// none without a patch strategy, else `x-kubernetes-list-map-keys` if present (`ports` by
    /// `containerPort` and `protocol`), else the merge key.
    pub fn merge_keys(&self) -> Vec<&'s str> {
        if self.shape.strategy.is_none() {
            return Vec::new();
        }
        if !self.shape.map_keys.is_empty() {
            return self.shape.map_keys.iter().map(String::as_str).collect();
        }
        self.merge_key().into_iter().collect()
    }

    /// How kustomize merges this list; `None` if the field is not a list. A list the schema
    /// knows is only merged when its strategy includes `merge`; kustomize infers merge keys
    /// only for lists it has no schema for.
    pub fn list_merge(&self) -> Option<ListMerge<'s>> {
        if !self.is_list() {
            return None;
        }
        if !self.patch_strategy().merge {
            return Some(ListMerge::Replace);
        }
        let keys = self.merge_keys();
        Some(if keys.is_empty() {
            ListMerge::Set
        } else {
            ListMerge::ByKeys(keys)
        })
    }
}

/// Where in a table a parser is: the keys from the root, rendered (`definitions.a.B.fields`)
/// only when an error names it, so that reading a table allocates no path per entry.
#[derive(Clone, Copy)]
struct At<'p> {
    parent: Option<&'p At<'p>>,
    key: &'p str,
}

impl<'p> At<'p> {
    /// The table itself, named `$` when an error is about it as a whole.
    const ROOT: At<'static> = At {
        parent: None,
        key: "$",
    };

    /// A key of the table itself.
    fn top(key: &'p str) -> At<'p> {
        At { parent: None, key }
    }

    fn child(&'p self, key: &'p str) -> At<'p> {
        At {
            parent: Some(self),
            key,
        }
    }

    fn render(&self) -> String {
        match self.parent {
            Some(parent) => format!("{}.{}", parent.render(), self.key),
            None => self.key.to_owned(),
        }
    }

    fn error(&self, message: impl Into<String>) -> SchemaError {
        SchemaError::Format {
            path: self.render(),
            message: message.into(),
        }
    }
}

fn as_object<'v>(value: &'v Value, at: At<'_>) -> Result<&'v Map<String, Value>, SchemaError> {
    value
        .as_object()
        .ok_or_else(|| at.error("expected an object"))
}

fn as_str<'v>(value: &'v Value, at: At<'_>) -> Result<&'v str, SchemaError> {
    value.as_str().ok_or_else(|| at.error("expected a string"))
}

fn parse_resource(value: &Value, at: At<'_>) -> Result<Resource, SchemaError> {
    let mut resource = Resource::default();
    for (key, value) in as_object(value, at)? {
        let at = at.child(key);
        match key.as_str() {
            "definition" => resource.definition = Some(as_str(value, at)?.to_owned()),
            "namespaced" => {
                let namespaced = value
                    .as_bool()
                    .ok_or_else(|| at.error("expected a boolean"))?;
                resource.namespaced = Some(namespaced);
            }
            other => return Err(at.error(format!("unknown key `{other}`"))),
        }
    }
    Ok(resource)
}

fn parse_definition(value: &Value, at: At<'_>) -> Result<Definition, SchemaError> {
    let mut definition = Definition::default();
    for (key, value) in as_object(value, at)? {
        let at = at.child(key);
        match key.as_str() {
            "fields" => {
                for (name, shape) in as_object(value, at)? {
                    let shape = parse_shape(shape, at.child(name))?;
                    definition.fields.insert(name.clone(), shape);
                }
            }
            "values" => definition.values = Some(parse_shape(value, at)?),
            other => return Err(at.error(format!("unknown key `{other}`"))),
        }
    }
    Ok(definition)
}

fn parse_shape(value: &Value, at: At<'_>) -> Result<FieldShape, SchemaError> {
    let mut shape = FieldShape::new(ShapeKind::Scalar);
    for (key, value) in as_object(value, at)? {
        let at = at.child(key);
        let kind = match key.as_str() {
            "ref" => ShapeKind::Object(as_str(value, at)?.to_owned()),
            "items" => ShapeKind::List(Box::new(parse_shape(value, at)?)),
            "values" => ShapeKind::Map(Box::new(parse_shape(value, at)?)),
            "strategy" => {
                shape.strategy = Some(as_str(value, at)?.to_owned());
                continue;
            }
            "key" => {
                shape.merge_key = Some(as_str(value, at)?.to_owned());
                continue;
            }
            "mapKeys" => {
                let keys = value
                    .as_array()
                    .ok_or_else(|| at.error("expected a list"))?;
                shape.map_keys = keys
                    .iter()
                    .map(|key| as_str(key, at).map(str::to_owned))
                    .collect::<Result<_, _>>()?;
                continue;
            }
            other => return Err(at.error(format!("unknown key `{other}`"))),
        };
        if shape.kind != ShapeKind::Scalar {
            return Err(at.error("only one of `ref`, `items`, `values` may be given"));
        }
        shape.kind = kind;
    }
    Ok(shape)
}
