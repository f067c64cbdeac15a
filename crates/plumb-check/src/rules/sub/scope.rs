//! What kustomize-controller substitutes, per Flux Kustomization: its variables, where each one
//! was defined, and whether it runs envsubst over a given object at all. The SUB and ENV rules
//! share it, so they agree with the build on which text Flux touches.

use crate::finding::Location;
use crate::rule::CheckContext;
use plumb_flux::build::{EntryBuild, KustomizationBuild};
use plumb_flux::model::Object;
use plumb_flux::postbuild::{self, ObjectLookup, Vars};
use plumb_flux::runtime::RuntimeSecret;
use plumb_flux::varsub::VarRef;
use plumb_yaml::{Node, NodeKind, SourceFile};
use std::collections::{BTreeMap, HashMap};

/// The ConfigMaps and Secrets one cluster holds, by kind, namespace and name: the first
/// producer in tree order wins, as in the build; then those applied at bootstrap (manifests,
/// rendered helmfile releases), and the Secrets controllers create at runtime.
pub(crate) struct Produced<'a>(
    HashMap<(String, String, String), &'a Object>,
    &'a [RuntimeSecret],
);

impl<'a> Produced<'a> {
    pub(crate) fn of(entry: &'a EntryBuild) -> Produced<'a> {
        let mut map = HashMap::new();
        let built = entry.kustomizations.iter().flat_map(|k| &k.objects);
        let bootstrap = entry.bootstrap.objects.iter().chain(
            plumb_flux::helm_release::bootstrap::rendered_objects(&entry.bootstrap_releases),
        );
        for object in built.chain(bootstrap) {
            if object.group().is_empty() && matches!(object.kind(), "ConfigMap" | "Secret") {
                map.entry((
                    object.kind().to_string(),
                    object.namespace_or_default().to_string(),
                    object.name().to_string(),
                ))
                .or_insert(object);
            }
        }
        Produced(map, &entry.runtime_secrets)
    }

    /// Objects of `kind` named `name` in any namespace (a reference in the wrong namespace).
    pub(crate) fn named(&self, kind: &str, name: &str) -> Vec<&'a Object> {
        let mut found: Vec<&Object> = self
            .0
            .iter()
            .filter(|((k, _, n), _)| k == kind && n == name)
            .map(|(_, o)| *o)
            .collect();
        found.sort_by(|a, b| a.namespace().cmp(b.namespace()));
        found
    }
}

impl ObjectLookup for Produced<'_> {
    fn find(&self, kind: &str, namespace: &str, name: &str) -> Option<&Object> {
        self.0
            .get(&(kind.to_string(), namespace.to_string(), name.to_string()))
            .copied()
    }

    fn runtime_secret(&self, namespace: &str, name: &str) -> Option<&RuntimeSecret> {
        self.1.iter().find(|s| s.is(namespace, name))
    }
}

/// Where a variable's value was written.
#[derive(Debug, Clone)]
pub(crate) struct Definition {
    pub value: String,
    /// The value's node (`data.GATEWAY_VIP` of the vars ConfigMap, after the overlay's patch).
    pub node: Option<Node>,
}

/// One Kustomization's substitution: the variables Flux computes for it and their definitions.
pub(crate) struct SubstitutionScope<'a> {
    pub ks: &'a KustomizationBuild,
    /// As kustomize-controller computes them (later `substituteFrom` wins, inline over all).
    pub vars: Vars,
    pub definitions: BTreeMap<String, Definition>,
    /// A required `substituteFrom` source is missing: the controller fails the Kustomization
    /// before it applies anything (SUB004).
    pub missing_source: bool,
    /// A Secret it substitutes from is created at runtime with keys the build cannot see (an
    /// ExternalSecret's `dataFrom`): any variable may come from it.
    pub open: bool,
}

impl<'a> SubstitutionScope<'a> {
    pub(crate) fn new(
        ks: &'a KustomizationBuild,
        produced: &Produced<'_>,
    ) -> SubstitutionScope<'a> {
        let flux = &ks.kustomization;
        let collected = postbuild::collect_vars(flux, produced, None);
        let open = !collected.open.is_empty();
        let vars = collected.vars;
        let mut definitions = BTreeMap::new();
        // `key`'s value, defined at `path` of `object`'s text.
        let definition = |key: &str, object: &Object, path: &[&str]| Definition {
            value: vars.get(key).cloned().unwrap_or_default(),
            node: object
                .origin
                .as_ref()
                .and_then(|o| o.get_path(path))
                .cloned(),
        };
        if let Some(post) = &flux.post_build {
            for reference in &post.substitute_from {
                let Some(object) = produced.find(&reference.kind, &flux.namespace, &reference.name)
                else {
                    continue;
                };
                let fields: &[&str] = if reference.kind == "Secret" {
                    &["data", "stringData"]
                } else {
                    &["data"]
                };
                for field in fields {
                    let Some(map) = object.value.get(field).and_then(|m| m.as_object()) else {
                        continue;
                    };
                    for key in map.keys() {
                        definitions.insert(key.clone(), definition(key, object, &[field, key]));
                    }
                }
            }
            for (key, _) in &post.substitute {
                definitions.insert(
                    key.clone(),
                    definition(key, &flux.object, &["spec", "postBuild", "substitute", key]),
                );
            }
        }
        definitions.retain(|k, _| vars.contains_key(k));
        let missing_source = flux.post_build.as_ref().is_some_and(|post| {
            post.substitute_from
                .iter()
                .any(|r| !r.optional && produced.find(&r.kind, &flux.namespace, &r.name).is_none())
        });
        SubstitutionScope {
            ks,
            vars,
            definitions,
            missing_source,
            open,
        }
    }

    pub(crate) fn has_post_build(&self) -> bool {
        self.ks.kustomization.post_build.is_some()
    }

    /// Whether kustomize-controller runs envsubst over `object`: the Kustomization has a
    /// postBuild, the object does not opt out, and some variable resolved (or the strategy is
    /// `Always`).
    pub(crate) fn substitutes(&self, object: &Object) -> bool {
        match &self.ks.kustomization.post_build {
            Some(post) => {
                !postbuild::is_disabled(&object.value) && (!self.vars.is_empty() || post.always)
            }
            None => false,
        }
    }
}

/// The scopes of every Kustomization of one cluster, in tree order.
pub(crate) fn scopes<'a>(
    entry: &'a EntryBuild,
    produced: &Produced<'_>,
) -> Vec<SubstitutionScope<'a>> {
    entry
        .kustomizations
        .iter()
        .map(|k| SubstitutionScope::new(k, produced))
        .collect()
}

/// One scalar of an object's source: its value, the mapping keys and sequence indices above it,
/// and the nearest node with a span (itself, when it has one).
pub(crate) struct ScalarAt<'n> {
    pub node: &'n Node,
    pub value: &'n str,
    pub path: &'n [String],
    pub anchor: Option<&'n Node>,
    /// The directory the Kustomization builds, relative to the repository root: where a
    /// generated value without a span (a `configMapGenerator` file) is looked for.
    pub dir: &'n str,
}

/// Calls `f` for every scalar value (not key) under `node`, an object that Kustomization
/// directory `dir` builds, in document order.
pub(crate) fn for_each_scalar(node: &Node, dir: &str, f: &mut dyn FnMut(&ScalarAt<'_>)) {
    fn walk<'n>(
        node: &'n Node,
        dir: &str,
        path: &mut Vec<String>,
        anchor: Option<&'n Node>,
        f: &mut dyn FnMut(&ScalarAt<'_>),
    ) {
        let anchor = if node.span.is_some() {
            Some(node)
        } else {
            anchor
        };
        match &node.kind {
            NodeKind::Scalar(s) => f(&ScalarAt {
                node,
                value: &s.value,
                path,
                anchor,
                dir,
            }),
            NodeKind::Sequence(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(i.to_string());
                    walk(item, dir, path, anchor, f);
                    path.pop();
                }
            }
            NodeKind::Mapping(entries) => {
                for (k, v) in entries {
                    path.push(k.scalar_value().unwrap_or("").to_string());
                    walk(v, dir, path, anchor, f);
                    path.pop();
                }
            }
        }
    }
    walk(node, dir, &mut Vec::new(), None, f);
}

/// The location of `text[start..end]`, relative to the repository root.
pub(crate) fn location_in(
    cx: &CheckContext<'_>,
    file: &SourceFile,
    start: usize,
    end: usize,
) -> Location {
    let at = file.location(start);
    let width = file
        .text()
        .get(start..end)
        .map_or(1, |t| t.lines().next().unwrap_or("").chars().count());
    let path = file.path();
    let path = path
        .strip_prefix(&cx.build.root)
        .or_else(|_| path.strip_prefix(cx.root))
        .unwrap_or(path);
    Location::line(path, at.line, at.column, width)
}

/// The location of a node's text, relative to the repository root.
pub(crate) fn location_of(cx: &CheckContext<'_>, node: &Node) -> Option<Location> {
    let span = node.span.as_ref()?;
    Some(location_in(cx, &span.file, span.start, span.end))
}

/// Where the `nth` occurrence of `needle` is in the source text of `scalar`; the scalar (or its
/// nearest located ancestor) when its source text does not hold it (a value a transformer
/// rewrote, or a generated one).
pub(crate) fn locate(
    cx: &CheckContext<'_>,
    scalar: &ScalarAt<'_>,
    needle: &str,
    nth: usize,
) -> Option<Location> {
    if let Some(span) = &scalar.node.span {
        if let Some((i, _)) = span.text().match_indices(needle).nth(nth) {
            let start = span.start + i;
            return Some(location_in(cx, &span.file, start, start + needle.len()));
        }
    }
    if scalar.node.span.is_none() {
        if let Some(found) = generated_source(cx, scalar, needle, nth) {
            return Some(found);
        }
    }
    scalar.anchor.and_then(|a| location_of(cx, a))
}

/// A generated ConfigMap or Secret value has no span: look for the file it was generated from
/// (a file named like its key under the Kustomization's directory, for `files:`), else for a
/// `kustomization.yaml` there holding the text (`literals:`).
fn generated_source(
    cx: &CheckContext<'_>,
    scalar: &ScalarAt<'_>,
    needle: &str,
    nth: usize,
) -> Option<Location> {
    let [field, key] = scalar.path else {
        return None;
    };
    if !matches!(field.as_str(), "data" | "stringData") {
        return None;
    }
    let mut stack = vec![cx.build.root.join(scalar.dir)];
    let mut candidates = Vec::new();
    while let Some(dir) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = read.filter_map(Result::ok).map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if !name.starts_with('.') {
                    stack.push(path);
                }
            } else if name == key || name == "kustomization.yaml" || name == "kustomization.yml" {
                candidates.push((name != key, path));
            }
        }
    }
    candidates.sort();
    candidates.into_iter().find_map(|(literal, path)| {
        let text = std::fs::read_to_string(&path).ok()?;
        // A literal's value follows `KEY=` on one line; a file's text is the value itself.
        let nth = if literal { 0 } else { nth };
        let (start, _) = text
            .match_indices(needle)
            .filter(|(i, _)| {
                !literal
                    || text[..*i]
                        .rsplit('\n')
                        .next()
                        .is_some_and(|l| l.contains(&format!("{key}=")))
            })
            .nth(nth)?;
        let file = SourceFile::new(path, text);
        Some(location_in(cx, &file, start, start + needle.len()))
    })
}

/// Where reference `r` of `scalar`'s value is written in its source.
pub(crate) fn locate_reference(
    cx: &CheckContext<'_>,
    scalar: &ScalarAt<'_>,
    r: &VarRef,
) -> Option<Location> {
    let text = &scalar.value[r.start..r.end];
    let nth = scalar
        .value
        .match_indices(text)
        .position(|(i, _)| i == r.start)
        .unwrap_or(0);
    locate(cx, scalar, text, nth)
}

/// Keys above a scalar that make it a script or a command line, whose `${...}` are meant for a
/// shell rather than for Flux.
const SCRIPT_KEYS: &[&str] = &[
    "command",
    "args",
    "script",
    "scripts",
    "runcmd",
    "bootcmd",
    "entrypoint",
];

/// The text of `text`'s line before `start` and after `end` (offsets within one line).
pub(crate) fn line_around(text: &str, start: usize, end: usize) -> (&str, &str) {
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
    (&text[line_start..start], &text[end..line_end])
}

/// Whether a scalar is shell text: a script (`#!`), a file named like one (`backup.sh` in a
/// ConfigMap), or part of a command line.
pub(crate) fn is_script(scalar: &ScalarAt<'_>) -> bool {
    scalar.value.starts_with("#!")
        || scalar.path.last().is_some_and(|k| {
            [".sh", ".bash", ".zsh", ".ksh"]
                .iter()
                .any(|ext| k.ends_with(ext))
        })
        || scalar
            .path
            .iter()
            .any(|k| SCRIPT_KEYS.contains(&k.as_str()))
}

/// Operators of Flux's envsubst that only a shell script would use on a variable Flux does not
/// define: pattern removal, replacement, substrings, case and length.
pub(crate) fn is_shell_operator(operator: &str) -> bool {
    !operator.is_empty() && !matches!(operator, "=" | ":=" | ":-" | ":?" | ":+")
}

/// Why a reference to a variable Flux does not define is shell syntax rather than a Flux
/// variable: `None` when it reads as a Flux variable.
pub(crate) fn shell_use(scalar: &ScalarAt<'_>, r: &VarRef) -> Option<&'static str> {
    if is_shell_operator(&r.operator) {
        Some("a shell parameter expansion")
    } else if r.operator.is_empty() && is_script(scalar) {
        Some("a variable of the script")
    } else {
        None
    }
}

/// Whether `file` lies inside the repository directory `dir` (`""` is the root).
pub(crate) fn file_in_dir(cx: &CheckContext<'_>, file: &std::path::Path, dir: &str) -> bool {
    let rel = file
        .strip_prefix(&cx.build.root)
        .or_else(|_| file.strip_prefix(cx.root))
        .unwrap_or(file);
    dir.is_empty() || rel.starts_with(dir)
}
