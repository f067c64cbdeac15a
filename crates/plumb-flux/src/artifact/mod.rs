//! ArtifactGenerator (`source.extensions.fluxcd.io/v1beta1`, fluxcd/source-watcher): an
//! ExternalArtifact per `spec.artifacts[]`, staged from the trees of its sources by the copy
//! operations, as source-watcher's builder stages them.
//!
//! The rules followed: `from` is `@alias/pattern` and `to` is `@artifact/path`. A pattern
//! without glob characters names one file or directory, copied as `cp -r` would (a directory
//! lands as `to/<its name>`, a file at `to`, or inside it when `to` ends with `/` or is a
//! directory). A glob uses Go's `fs.Glob` (so `**` is one path element, like `*`); each match is
//! copied to `to/<match>`, except that `dir/**` strips `dir/`. A glob matching nothing, or only
//! excluded files, is an error. `exclude` patterns are doublestar globs matched against the path
//! from the source root and from the pattern's literal prefix, and a pattern without `/` against
//! file names too. Strategies: `Overwrite` (the default) replaces what an earlier copy wrote;
//! `Merge` deep-merges a YAML file into an existing one (lists replaced, later wins; a copied
//! directory is written over, not merged); `Extract` unpacks `.tar.gz`/`.tgz` files (matched
//! with doublestar; other files are passed over) into `to`.
//!
//! [`pattern`] holds the two glob languages, `copy` the operations, `merge` and `extract` the
//! two strategies that are more than a copy.

mod copy;
mod discover;
mod extract;
mod merge;
pub mod pattern;

pub use copy::{stage, CopyError};

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const GROUP: &str = "source.extensions.fluxcd.io";

/// Where a field of an ArtifactGenerator is written: its file, line and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl Place {
    fn of(node: Option<&plumb_yaml::Node>) -> Option<Place> {
        let span = node?.span.as_ref()?;
        let loc = span.location();
        Some(Place {
            file: span.file.path().to_path_buf(),
            line: loc.line,
            column: loc.column,
        })
    }
}

/// One copy operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copy {
    pub from: String,
    pub to: String,
    pub exclude: Vec<String>,
    pub strategy: Strategy,
    /// Where its `from`, `to` and `exclude` are written, when it came from a file.
    pub places: CopyPlaces,
}

/// Where the fields of one copy operation are written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyPlaces {
    pub from: Option<Place>,
    pub to: Option<Place>,
    pub exclude: Option<Place>,
}

impl Copy {
    /// A copy operation written nowhere (built in code).
    pub fn new(from: &str, to: &str, exclude: &[&str], strategy: Strategy) -> Copy {
        Copy {
            from: from.into(),
            to: to.into(),
            exclude: exclude.iter().map(|e| e.to_string()).collect(),
            strategy,
            places: CopyPlaces::default(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    Overwrite,
    Merge,
    Extract,
}

impl Strategy {
    /// `spec.artifacts[].copy[].strategy` (the CRD's enum; absent is Overwrite).
    pub fn parse(text: Option<&str>) -> Strategy {
        match text {
            Some("Merge") => Strategy::Merge,
            Some("Extract") => Strategy::Extract,
            _ => Strategy::Overwrite,
        }
    }
}

/// One output artifact of a generator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputArtifact {
    pub name: String,
    /// `revision`: `@alias` of the source whose revision the artifact takes.
    pub revision: Option<String>,
    pub copy: Vec<Copy>,
    /// Where its `name` is written.
    pub place: Option<Place>,
}

/// One entry of `spec.sources`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceEntry {
    pub alias: String,
    pub source: crate::model::ObjectRef,
    pub place: Option<Place>,
}

/// An ArtifactGenerator object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generator {
    pub namespace: String,
    pub name: String,
    pub sources: Vec<SourceEntry>,
    pub artifacts: Vec<OutputArtifact>,
    /// `spec.pathPattern`: the artifacts are templates rendered per matching directory.
    pub path_pattern: Option<(String, Option<Place>)>,
    /// The first field the CRD's schema refuses (the API server would not accept the
    /// object), and where it is written.
    pub schema_error: Option<(String, Option<Place>)>,
}

impl Generator {
    /// The ExternalArtifacts it creates: one per `spec.artifacts[].name`, in its namespace.
    pub fn outputs(&self) -> Vec<crate::model::Source> {
        self.artifacts
            .iter()
            .map(|a| crate::model::Source {
                id: crate::model::ObjectRef::new("ExternalArtifact", &self.namespace, &a.name),
                url: None,
                spec: Value::Null,
            })
            .collect()
    }

    pub fn from_object(object: &crate::model::Object) -> Option<Generator> {
        if !object.is(GROUP, "ArtifactGenerator") {
            return None;
        }
        let ns = object.namespace_or_default();
        let spec = &object.value["spec"];
        let node = object.origin.as_deref().and_then(|o| o.get_path(&["spec"]));
        let item = |list: &str, i: usize| {
            node.and_then(|n| n.get(list))
                .and_then(|l| l.as_sequence())
                .and_then(|items| items.get(i))
        };
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
        let sources = list(&spec["sources"])
            .iter()
            .enumerate()
            .map(|(i, s)| SourceEntry {
                alias: text(&s["alias"]),
                source: crate::model::ObjectRef::new(
                    s["kind"].as_str().unwrap_or(""),
                    s["namespace"].as_str().unwrap_or(ns),
                    s["name"].as_str().unwrap_or(""),
                ),
                place: Place::of(item("sources", i).map(|n| n.get("name").unwrap_or(n))),
            })
            .collect();
        let artifacts = list(&spec["artifacts"])
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let artifact = item("artifacts", i);
                let ops = artifact
                    .and_then(|n| n.get("copy"))
                    .and_then(|l| l.as_sequence());
                OutputArtifact {
                    name: text(&a["name"]),
                    revision: a["revision"].as_str().map(str::to_string),
                    place: Place::of(artifact.map(|n| n.get("name").unwrap_or(n))),
                    copy: list(&a["copy"])
                        .iter()
                        .enumerate()
                        .map(|(j, op)| {
                            let at = ops.and_then(|o| o.get(j));
                            let field = |f: &str| Place::of(at.map(|n| n.get(f).unwrap_or(n)));
                            Copy {
                                from: text(&op["from"]),
                                to: text(&op["to"]),
                                exclude: list(&op["exclude"])
                                    .iter()
                                    .filter_map(Value::as_str)
                                    .map(str::to_string)
                                    .collect(),
                                strategy: Strategy::parse(op["strategy"].as_str()),
                                places: CopyPlaces {
                                    from: field("from"),
                                    to: field("to"),
                                    exclude: field("exclude"),
                                },
                            }
                        })
                        .collect(),
                }
            })
            .collect();
        Some(Generator {
            namespace: ns.to_string(),
            name: object.name().to_string(),
            sources,
            artifacts,
            path_pattern: spec["pathPattern"]
                .as_str()
                .filter(|p| !p.is_empty())
                .map(|p| {
                    (
                        p.to_string(),
                        Place::of(node.and_then(|n| n.get("pathPattern"))),
                    )
                }),
            schema_error: schema_error(spec, node),
        })
    }
}

/// A staged artifact: its directory, and for each file in it the source file it came from (the
/// last one written, for a merged file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Staged {
    pub dir: PathBuf,
    pub origins: BTreeMap<PathBuf, PathBuf>,
    /// Files whose text is not their origin's (YAML merged from two files, files unpacked
    /// from a tarball): a position in them is shown as the start of the origin, since its
    /// line would be of another text.
    pub rewritten: std::collections::BTreeSet<PathBuf>,
}

/// What an ArtifactGenerator generates: each ExternalArtifact (where its name is written, and
/// its tree or why there is none), and, for a `pathPattern` that could not be walked, why its
/// artifacts are unknown.
#[derive(Debug, Clone, Default)]
pub struct Generated {
    pub outputs: Vec<GeneratedArtifact>,
    pub undiscovered: Option<Undiscovered>,
}

/// One ExternalArtifact of a generator.
#[derive(Debug, Clone)]
pub struct GeneratedArtifact {
    pub source: crate::model::Source,
    pub place: Option<Place>,
    pub resolution: crate::source::Resolution,
}

/// A generator whose `pathPattern` could not be walked: its artifacts' names are not known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undiscovered {
    pub namespace: String,
    pub reason: String,
    /// Whether that is an error of the repository (not a source left unfetched).
    pub error: bool,
    pub at: Option<Place>,
}

impl Generated {
    /// Every artifact of `generator` unstaged for `reason` (not an error of the repository).
    pub fn unstaged(generator: &Generator, reason: &str) -> Generated {
        let outputs = match generator.path_pattern {
            Some(_) => Vec::new(),
            None => generator
                .outputs()
                .into_iter()
                .zip(&generator.artifacts)
                .map(|(source, a)| GeneratedArtifact {
                    source,
                    place: a.place.clone(),
                    resolution: crate::source::Resolution::Unstaged {
                        reason: reason.to_string(),
                        error: false,
                        at: None,
                    },
                })
                .collect(),
        };
        let undiscovered = generator.path_pattern.as_ref().map(|(_, at)| Undiscovered {
            namespace: generator.namespace.clone(),
            reason: reason.to_string(),
            error: false,
            at: at.clone(),
        });
        Generated {
            outputs,
            undiscovered,
        }
    }
}

/// The ExternalArtifacts of `generator`, staged under `staging` from the trees its sources
/// resolve to in `sources` (directories of the checkout under `root`), or why each cannot be.
pub fn stage_generator(
    generator: &Generator,
    sources: &crate::source::Sources,
    root: &Path,
    staging: &Path,
) -> Generated {
    use crate::source::Resolution;
    let who = format!(
        "ArtifactGenerator {}/{}",
        generator.namespace, generator.name
    );
    // A problem of the whole generator fails every artifact it has.
    let mut failed: Option<(String, bool, Option<Place>)> = generator
        .validate()
        .map(|(why, at)| (format!("{who} is invalid: {why}"), true, at));
    let mut trees = BTreeMap::new();
    for entry in &generator.sources {
        let source = &entry.source;
        let unusable = match sources.resolve(source) {
            Resolution::Dir(dir) | Resolution::Assumed(dir, _) => {
                trees.insert(entry.alias.clone(), crate::source::join(root, &dir));
                None
            }
            Resolution::Staged(staged) => {
                trees.insert(entry.alias.clone(), staged.dir.clone());
                None
            }
            Resolution::NotFound => Some((
                format!(
                    "{who} reads {source} (alias '{}'), which nothing creates",
                    entry.alias
                ),
                true,
            )),
            Resolution::Unmapped { .. } | Resolution::Unstaged { .. } => {
                Some((format!("{who} reads {source}, which is not fetched"), false))
            }
        };
        if let Some((reason, error)) = unusable {
            failed.get_or_insert((reason, error, entry.place.clone()));
        }
    }
    let artifacts = match (&generator.path_pattern, &failed) {
        (None, _) => generator.artifacts.clone(),
        (Some((_, pattern_at)), Some((reason, error, at))) => {
            return Generated {
                outputs: Vec::new(),
                undiscovered: Some(Undiscovered {
                    namespace: generator.namespace.clone(),
                    reason: reason.clone(),
                    error: *error,
                    at: at.clone().or_else(|| pattern_at.clone()),
                }),
            }
        }
        (Some((pattern, at)), None) => {
            match discover::expand(pattern, &generator.artifacts, &trees) {
                Ok(artifacts) => artifacts,
                Err(why) => {
                    return Generated {
                        outputs: Vec::new(),
                        undiscovered: Some(Undiscovered {
                            namespace: generator.namespace.clone(),
                            reason: format!("{who} failed: {why}"),
                            error: true,
                            at: at.clone(),
                        }),
                    }
                }
            }
        }
    };
    let outputs = artifacts
        .iter()
        .map(|artifact| {
            let id = crate::model::ObjectRef::new(
                "ExternalArtifact",
                &generator.namespace,
                &artifact.name,
            );
            let resolution = match &failed {
                Some((reason, error, at)) => Resolution::Unstaged {
                    reason: reason.clone(),
                    error: *error,
                    at: at.clone(),
                },
                None => {
                    let dir = staging.join(&generator.namespace).join(&artifact.name);
                    match stage(artifact, &trees, &dir) {
                        Ok(staged) => Resolution::Staged(std::sync::Arc::new(staged)),
                        Err(e) => {
                            let op = artifact.copy.get(e.operation);
                            let at = op.and_then(|op| match e.field {
                                "to" => op.places.to.clone(),
                                "exclude" => op.places.exclude.clone(),
                                _ => op.places.from.clone(),
                            });
                            Resolution::Unstaged {
                                reason: format!(
                                    "{who} failed to build artifact '{}': {}",
                                    artifact.name, e.message
                                ),
                                error: true,
                                at: at.or_else(|| artifact.place.clone()),
                            }
                        }
                    }
                }
            };
            GeneratedArtifact {
                source: crate::model::Source {
                    id,
                    url: None,
                    spec: Value::Null,
                },
                place: artifact.place.clone(),
                resolution,
            }
        })
        .collect();
    Generated {
        outputs,
        undiscovered: None,
    }
}

impl Generator {
    /// source-watcher's `validateSpec`: aliases and artifact names unique, names valid
    /// Kubernetes object names. The first problem, and where it is written.
    fn validate(&self) -> Option<(String, Option<Place>)> {
        if let Some(problem) = &self.schema_error {
            return Some(problem.clone());
        }
        let mut aliases = std::collections::BTreeSet::new();
        for s in &self.sources {
            if !aliases.insert(s.alias.as_str()) {
                return Some((
                    format!("duplicate source alias '{}' found", s.alias),
                    s.place.clone(),
                ));
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for a in &self.artifacts {
            if !names.insert(a.name.as_str()) {
                return Some((
                    format!("duplicate artifact name '{}' found", a.name),
                    a.place.clone(),
                ));
            }
            if let Some(alias) = &a.revision {
                let alias = alias.trim_start_matches('@');
                if !aliases.contains(alias) {
                    return Some((
                        format!(
                            "artifact {} revision source alias '{alias}' not found",
                            a.name
                        ),
                        a.place.clone(),
                    ));
                }
            }
            if self.path_pattern.is_none() && !is_dns_subdomain(&a.name) {
                return Some((
                    format!(
                        "artifact name {:?} is not a valid Kubernetes object name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
                        a.name
                    ),
                    a.place.clone(),
                ));
            }
        }
        None
    }
}

/// The CRD's patterns and enums (source.extensions.fluxcd.io_artifactgenerators.yaml), as the
/// API server reports a value they refuse.
fn schema_error(spec: &Value, node: Option<&plumb_yaml::Node>) -> Option<(String, Option<Place>)> {
    const ALIAS: &str = "^[a-z0-9]([a-z0-9_-]*[a-z0-9])?$";
    const FROM: &str = "^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)/(.*)$";
    const TO: &str = "^@(artifact)/(.*)$";
    const REVISION: &str = "^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)$";
    let at = |path: &[&str]| {
        let mut n = node?;
        for key in path {
            n = match key.parse::<usize>() {
                Ok(i) => n.as_sequence()?.get(i)?,
                Err(_) => n.get(key)?,
            };
        }
        Some(n)
    };
    let pattern = |field: String, value: &str, re: &str, path: &[&str]| {
        let ok = regex::Regex::new(re).is_ok_and(|r| r.is_match(value));
        (!ok).then(|| {
            (
                format!("{field}: Invalid value: {value:?}: {field} in body should match '{re}'"),
                Place::of(at(path)),
            )
        })
    };
    let items = |v: &Value| v.as_array().cloned().unwrap_or_default();
    for (i, s) in items(&spec["sources"]).iter().enumerate() {
        let alias = s["alias"].as_str().unwrap_or_default();
        let (n, field) = (i.to_string(), format!("spec.sources[{i}].alias"));
        if let Some(e) = pattern(field, alias, ALIAS, &["sources", &n, "alias"]) {
            return Some(e);
        }
    }
    for (i, a) in items(&spec["artifacts"]).iter().enumerate() {
        let n = i.to_string();
        if let Some(revision) = a["revision"].as_str() {
            let field = format!("spec.artifacts[{i}].revision");
            if let Some(e) = pattern(field, revision, REVISION, &["artifacts", &n, "revision"]) {
                return Some(e);
            }
        }
        for (j, op) in items(&a["copy"]).iter().enumerate() {
            let m = j.to_string();
            let path = |f: &'static str| ["artifacts", n.as_str(), "copy", m.as_str(), f];
            let field = |f: &str| format!("spec.artifacts[{i}].copy[{j}].{f}");
            let from = op["from"].as_str().unwrap_or_default();
            if let Some(e) = pattern(field("from"), from, FROM, &path("from")) {
                return Some(e);
            }
            let to = op["to"].as_str().unwrap_or_default();
            if let Some(e) = pattern(field("to"), to, TO, &path("to")) {
                return Some(e);
            }
            if let Some(strategy) = op["strategy"].as_str() {
                if !matches!(strategy, "Overwrite" | "Merge" | "Extract") {
                    return Some((
                        format!(
                            "{}: Unsupported value: {strategy:?}: supported values: \"Overwrite\", \"Merge\", \"Extract\"",
                            field("strategy")
                        ),
                        Place::of(at(&path("strategy"))),
                    ));
                }
            }
        }
    }
    None
}

/// Kubernetes' `NameIsDNSSubdomain`.
fn is_dns_subdomain(name: &str) -> bool {
    let label = |l: &str| {
        !l.is_empty()
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    !name.is_empty() && name.len() <= 253 && name.split('.').all(label)
}

impl Staged {
    /// A build of this tree with every file position moved back to the checkout's file it was
    /// copied from, so that diagnostics and findings point at the repository.
    pub fn remap(
        &self,
        built: Result<Vec<crate::model::Object>, crate::diagnostic::Diagnostic>,
    ) -> Result<Vec<crate::model::Object>, crate::diagnostic::Diagnostic> {
        let mut files = std::collections::HashMap::new();
        match built {
            Ok(mut objects) => {
                for o in &mut objects {
                    if let Some(node) = &mut o.origin {
                        self.remap_node(std::sync::Arc::make_mut(node), &mut files);
                    }
                }
                Ok(objects)
            }
            Err(mut d) => {
                if let Some(file) = d.file.clone() {
                    if let Some(origin) = self.origin_of(&file) {
                        d.file = Some(origin.to_path_buf());
                        // A line of a merged or unpacked file is not a line of its origin.
                        let rel = file.strip_prefix(&self.dir).unwrap_or(&file);
                        if self.rewritten.contains(rel) {
                            d.line = None;
                            d.column = None;
                        }
                    }
                }
                d.message = d.message.replace(&format!("{}/", self.dir.display()), "");
                Err(d)
            }
        }
    }

    fn remap_node(
        &self,
        node: &mut plumb_yaml::Node,
        files: &mut std::collections::HashMap<PathBuf, std::sync::Arc<plumb_yaml::SourceFile>>,
    ) {
        if let Some(span) = &mut node.span {
            let path = span.file.path().to_path_buf();
            if let Some(origin) = self.origin_of(&path) {
                let rewritten = path
                    .strip_prefix(&self.dir)
                    .is_ok_and(|rel| self.rewritten.contains(rel));
                let file = files.entry(path).or_insert_with(|| {
                    let text = match rewritten {
                        true => String::new(),
                        false => span.file.text().to_string(),
                    };
                    plumb_yaml::SourceFile::new(origin, text.as_str())
                });
                span.file = file.clone();
                if rewritten {
                    span.start = 0;
                    span.end = 0;
                }
            }
        }
        match &mut node.kind {
            plumb_yaml::NodeKind::Sequence(items) => {
                items.iter_mut().for_each(|n| self.remap_node(n, files))
            }
            plumb_yaml::NodeKind::Mapping(pairs) => {
                for (k, v) in pairs {
                    self.remap_node(k, files);
                    self.remap_node(v, files);
                }
            }
            plumb_yaml::NodeKind::Scalar(_) => {}
        }
    }

    /// The file of the checkout that `path` (inside the staged tree) was copied from.
    pub fn origin_of(&self, path: &Path) -> Option<&Path> {
        let rel = path.strip_prefix(&self.dir).ok()?;
        self.origins.get(rel).map(PathBuf::as_path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generator(yaml: &str) -> Generator {
        let docs = plumb_yaml::parse_documents(Path::new("gen.yaml"), yaml).unwrap();
        let object = crate::model::Object {
            value: plumb_yaml::to_json(&docs[0]).unwrap(),
            origin: Some(std::sync::Arc::new(docs[0].clone())),
        };
        Generator::from_object(&object).unwrap()
    }

    const GENERATOR: &str = "apiVersion: source.extensions.fluxcd.io/v1beta1
kind: ArtifactGenerator
metadata: {name: gen, namespace: apps}
spec:
  sources:
    - alias: repo
      kind: GitRepository
      name: monorepo
  artifacts:
    - name: web
      copy:
        - from: \"@repo/web/**\"
          to: \"@artifact/\"
          exclude: [\"*.md\"]
          strategy: Merge
";

    #[test]
    fn a_generator_remembers_where_each_field_is_written() {
        let g = generator(GENERATOR);
        assert_eq!(g.sources[0].alias, "repo");
        assert_eq!(
            g.sources[0].source,
            crate::model::ObjectRef::new("GitRepository", "apps", "monorepo")
        );
        assert_eq!(g.sources[0].place.as_ref().map(|p| p.line), Some(8));
        let artifact = &g.artifacts[0];
        assert_eq!(
            artifact.place.as_ref().map(|p| (p.line, p.column)),
            Some((10, 13))
        );
        let op = &artifact.copy[0];
        assert_eq!(op.strategy, Strategy::Merge);
        assert_eq!(op.exclude, vec!["*.md"]);
        let line = |p: &Option<Place>| p.as_ref().map(|p| p.line);
        assert_eq!(line(&op.places.from), Some(12));
        assert_eq!(line(&op.places.to), Some(13));
        assert_eq!(line(&op.places.exclude), Some(14));
        assert_eq!(op.places.from.as_ref().unwrap().file, Path::new("gen.yaml"));
    }

    #[test]
    fn duplicate_aliases_and_names_and_invalid_names_are_refused_where_written() {
        assert_eq!(generator(GENERATOR).validate(), None);
        let twice = GENERATOR.replace(
            "  artifacts:\n",
            "    - alias: repo\n      kind: OCIRepository\n      name: other\n  artifacts:\n",
        );
        let (why, at) = generator(&twice).validate().unwrap();
        assert_eq!(why, "duplicate source alias 'repo' found");
        assert_eq!(at.map(|p| p.line), Some(11));
        let names = format!("{GENERATOR}    - name: web\n      copy: []\n");
        let (why, at) = generator(&names).validate().unwrap();
        assert_eq!(why, "duplicate artifact name 'web' found");
        assert_eq!(at.map(|p| p.line), Some(16));
        let (why, _) = generator(&GENERATOR.replace("name: web", "name: Web_App"))
            .validate()
            .unwrap();
        assert!(
            why.contains("\"Web_App\" is not a valid Kubernetes object name"),
            "{why}"
        );
        assert!(is_dns_subdomain("podinfo.v2-beta"));
        assert!(!is_dns_subdomain("-podinfo"));
    }

    /// artifactgenerator_validation_test.go, TestArtifactGeneratorReconciler_Validation and
    /// TestArtifactGeneratorReconciler_ValidationCEL: what the reconciler or the CRD refuses.
    #[test]
    fn source_watcher_validation_cases() {
        let problem = |from: &str, to: &str| generator(&GENERATOR.replace(from, to)).validate();
        // "unknown artifact revision"
        let (why, at) = problem(
            "    - name: web\n",
            "    - name: web\n      revision: \"@unknown\"\n",
        )
        .unwrap();
        assert_eq!(
            why,
            "artifact web revision source alias 'unknown' not found"
        );
        assert_eq!(at.map(|p| p.line), Some(10));
        assert_eq!(
            problem(
                "    - name: web\n",
                "    - name: web\n      revision: \"@repo\"\n"
            ),
            None
        );
        // "valid source alias"
        assert_eq!(problem("alias: repo", "alias: git_repo-v2"), None);
        // "invalid source alias uppercase", "... with hyphen at start", "... at end", "... with slash"
        for alias in ["Invalid-Alias", "-invalid", "invalid-", "invalid/alias"] {
            let (why, at) = problem("alias: repo", &format!("alias: {alias}")).unwrap();
            assert!(
                why.starts_with(&format!(
                    "spec.sources[0].alias: Invalid value: \"{alias}\""
                )),
                "{why}"
            );
            assert_eq!(at.map(|p| p.line), Some(6));
        }
        // "invalid static artifact name"
        let (why, _) = problem("name: web", "name: Invalid Name").unwrap();
        assert!(
            why.contains("is not a valid Kubernetes object name"),
            "{why}"
        );
        // "valid artifact copy from and to"
        assert_eq!(
            problem(
                "@repo/web/**\"\n          to: \"@artifact/\"",
                "@repo/test.yaml\"\n          to: \"@artifact/v2/replace.yaml\""
            ),
            None
        );
        // "invalid artifact copy from"
        let (why, at) = problem("\"@repo/web/**\"", "\"source/file.yaml\"").unwrap();
        assert!(
            why.starts_with("spec.artifacts[0].copy[0].from: Invalid value"),
            "{why}"
        );
        assert_eq!(at.map(|p| p.line), Some(12));
        // "invalid artifact copy to"
        let (why, at) = problem("\"@artifact/\"", "\"@artefact/file.yaml\"").unwrap();
        assert!(
            why.starts_with("spec.artifacts[0].copy[0].to: Invalid value"),
            "{why}"
        );
        assert_eq!(at.map(|p| p.line), Some(13));
        // The strategy enum: a lower-case strategy is refused, not taken for Overwrite.
        let (why, at) = problem("strategy: Merge", "strategy: merge").unwrap();
        assert!(why.contains("Unsupported value: \"merge\""), "{why}");
        assert_eq!(at.map(|p| p.line), Some(15));
    }
}
