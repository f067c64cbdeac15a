//! Field specs: kustomize's way of naming "this field, in these kinds" (`path:
//! spec/template/metadata/labels`, `kind: Deployment`, `create: true`). Transformers apply a
//! change at every field a list of specs selects; the defaults live in [`crate::config`], and a
//! kustomization's `configurations:` add more.
//!
//! Walking a path: a mapping is entered by key (created when the spec says `create` and the
//! caller says what to create at the leaf; intermediate fields are created as mappings); a
//! sequence is walked element by element, whether or not the path says `[]`.

use crate::error::KustomizeError;
use crate::resource::Gvk;
use plumb_yaml::{Node, NodeKind};

/// One field spec.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSpec {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// Path segments; a trailing `[]` on a segment is kept (it says the field is a sequence).
    pub path: Vec<String>,
    pub create: bool,
}

/// What to create at the end of a path when the field is missing and the spec allows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Create {
    Nothing,
    Mapping,
    Scalar,
    Sequence,
}

impl FieldSpec {
    /// A spec for every kind.
    pub fn any_kind(path: &str, create: bool) -> FieldSpec {
        FieldSpec {
            path: split_path(path),
            create,
            ..FieldSpec::default()
        }
    }

    /// Reads one spec from its YAML form.
    pub fn from_node(node: &Node) -> Result<FieldSpec, KustomizeError> {
        let text = |k: &str| node.str_at(&[k]).unwrap_or("").to_string();
        let path = node.str_at(&["path"]).ok_or_else(|| {
            KustomizeError::Other(format!("fieldSpec without a path{}", location(node)))
        })?;
        let create = match node.get("create").and_then(Node::scalar_value) {
            None => false,
            Some(v) => matches!(v, "true" | "True" | "TRUE"),
        };
        Ok(FieldSpec {
            group: text("group"),
            version: text("version"),
            kind: text("kind"),
            path: split_path(path),
            create,
        })
    }

    /// Reads a list of specs (a YAML sequence).
    pub fn list_from_node(node: &Node) -> Result<Vec<FieldSpec>, KustomizeError> {
        match node.as_sequence() {
            Some(items) => items.iter().map(FieldSpec::from_node).collect(),
            None if node.is_null() => Ok(Vec::new()),
            None => Err(KustomizeError::Other(format!(
                "fieldSpecs must be a list{}",
                location(node)
            ))),
        }
    }

    /// Whether the spec applies to objects of `gvk` (empty parts match anything).
    pub fn selects(&self, gvk: &Gvk) -> bool {
        (self.group.is_empty() || self.group == gvk.group)
            && (self.version.is_empty() || self.version == gvk.version)
            && (self.kind.is_empty() || self.kind == gvk.kind)
    }

    /// The path joined back with `/`.
    pub fn path_string(&self) -> String {
        self.path.join("/")
    }

    /// Calls `visit` on every node the path reaches in `root`, creating missing fields when the
    /// spec says `create` and `leaf` says what to create.
    pub fn apply(
        &self,
        root: &mut Node,
        leaf: Create,
        visit: &mut dyn FnMut(&mut Node) -> Result<(), KustomizeError>,
    ) -> Result<(), KustomizeError> {
        walk(root, &self.path, self.create, leaf, visit)
    }

    /// Whether `apply(root, Create::Nothing, ..)` would visit a node or change `root` (a null
    /// where the path says `field[]` becomes an empty sequence). When it would not, a caller
    /// need not copy `root` to edit it.
    pub fn reaches(&self, root: &Node) -> bool {
        reaches(root, &self.path)
    }
}

/// A path segment's field name, and whether it says the field is a sequence (`name[]`).
fn segment(part: &str) -> (&str, bool) {
    match part.strip_suffix("[]") {
        Some(field) => (field, true),
        None => (part, false),
    }
}

/// `walk` with `Create::Nothing`, reading only.
fn reaches(node: &Node, path: &[String]) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return true;
    };
    match &node.kind {
        NodeKind::Sequence(items) => items.iter().any(|item| reaches(item, path)),
        NodeKind::Mapping(_) => {
            let (field, is_seq) = segment(first);
            match node.get(field) {
                None => false,
                Some(child) if is_seq && child.is_null() => true,
                Some(child) => reaches(child, rest),
            }
        }
        NodeKind::Scalar(_) => false,
    }
}

fn location(node: &Node) -> String {
    node.span
        .as_ref()
        .map(|s| {
            let l = s.location();
            format!(" at {}:{}:{}", s.file.path().display(), l.line, l.column)
        })
        .unwrap_or_default()
}

/// Splits a field path on `/`, keeping `\/` as a literal slash and `[...]` together.
pub fn split_path(path: &str) -> Vec<String> {
    let mut out = split_outside_brackets(path, '/', true);
    out.retain(|s| !s.is_empty());
    out
}

/// Splits `path` on `sep` outside `[...]` (list selectors like `[name=a/b]` stay whole); with
/// `escapes`, a backslash before `sep` makes it literal.
pub fn split_outside_brackets(path: &str, sep: char, escapes: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if escapes && chars.peek() == Some(&sep) => {
                cur.push(sep);
                chars.next();
            }
            '[' => {
                depth += 1;
                cur.push(c);
            }
            ']' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            c if c == sep && depth == 0 => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn walk(
    node: &mut Node,
    path: &[String],
    create: bool,
    leaf: Create,
    visit: &mut dyn FnMut(&mut Node) -> Result<(), KustomizeError>,
) -> Result<(), KustomizeError> {
    let Some((first, rest)) = path.split_first() else {
        return visit(node);
    };
    if let NodeKind::Sequence(items) = &mut node.kind {
        for item in items.iter_mut() {
            walk(item, path, create, leaf, visit)?;
        }
        return Ok(());
    }
    match &node.kind {
        NodeKind::Sequence(_) => Ok(()),
        NodeKind::Mapping(_) => {
            let (field, is_seq) = segment(first);
            let make = if !create || leaf == Create::Nothing || is_seq {
                None
            } else if rest.is_empty() {
                Some(leaf)
            } else {
                Some(Create::Mapping)
            };
            if node.get(field).is_none() {
                match make {
                    None => return Ok(()),
                    Some(kind) => node.set(field, empty(kind)),
                }
            }
            let Some(child) = node.get_mut(field) else {
                return Ok(());
            };
            let want = if is_seq { Some(Create::Sequence) } else { make };
            if child.is_null() {
                if let Some(kind @ (Create::Mapping | Create::Sequence)) = want {
                    *child = empty(kind).with_span(child.span.clone());
                }
            }
            walk(child, rest, create, leaf, visit)
        }
        NodeKind::Scalar(_) => Ok(()),
    }
}

fn empty(kind: Create) -> Node {
    match kind {
        Create::Mapping => Node::mapping(),
        Create::Sequence => Node::sequence(Vec::new()),
        Create::Scalar | Create::Nothing => Node::null(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Node {
        plumb_yaml::parse_documents("t.yaml", text)
            .unwrap()
            .remove(0)
    }

    #[test]
    fn split_keeps_escaped_slashes_and_brackets() {
        assert_eq!(split_path("a/b\\/c/d[]/e"), vec!["a", "b/c", "d[]", "e"]);
        assert_eq!(
            split_path("spec/x[name=a/b]/y"),
            vec!["spec", "x[name=a/b]", "y"]
        );
    }

    /// `reaches` says yes exactly when applying without creating visits a node or changes the
    /// document, on documents with the path's fields present, missing, null, scalar and in
    /// sequences.
    #[test]
    fn reaches_exactly_where_apply_visits_or_changes() {
        let docs = [
            "a: 1\n",
            "spec: null\n",
            "spec: x\n",
            "spec:\n  volumes: null\n",
            "spec:\n  volumes: []\n",
            "spec:\n  volumes:\n  - name: v\n  - configMap:\n      name: c\n",
            "spec:\n  volumes:\n  - name: v\n",
            "spec:\n  volumes:\n    configMap:\n      name: c\n",
            "- spec:\n    volumes:\n    - configMap: {name: c}\n",
            "spec:\n  volumes:\n  - - configMap: {name: c}\n",
        ];
        let paths = [
            "spec/volumes/configMap/name",
            "spec/volumes[]/configMap/name",
            "spec/volumes",
            "spec/volumes[]",
            "spec",
            "spec/missing[]/x",
            "spec[]/volumes",
        ];
        let mut reached = 0;
        for text in docs {
            for path in paths {
                let spec = FieldSpec::any_kind(path, false);
                let before = doc(text);
                let mut after = before.clone();
                let mut visits = 0;
                spec.apply(&mut after, Create::Nothing, &mut |_| {
                    visits += 1;
                    Ok(())
                })
                .unwrap();
                let touched = visits > 0 || after != before;
                assert_eq!(spec.reaches(&before), touched, "{path} in {text:?}");
                reached += usize::from(touched);
            }
        }
        assert!(
            reached > 10 && reached < docs.len() * paths.len(),
            "{reached}"
        );
    }

    #[test]
    fn walks_sequences_and_creates_mappings() {
        let mut n = doc("spec:\n  containers:\n  - name: a\n  - name: b\n");
        let fs = FieldSpec::any_kind("spec/containers/image", true);
        let mut seen = 0;
        fs.apply(&mut n, Create::Scalar, &mut |leaf| {
            seen += 1;
            *leaf = Node::string("nginx");
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, 2);
        assert_eq!(
            n.get_path(&["spec", "containers"])
                .unwrap()
                .as_sequence()
                .unwrap()[1]
                .str_at(&["image"]),
            Some("nginx")
        );
        let fs = FieldSpec::any_kind("metadata/labels", true);
        fs.apply(&mut n, Create::Mapping, &mut |leaf| {
            leaf.set("a", Node::string("b"));
            Ok(())
        })
        .unwrap();
        assert_eq!(n.str_at(&["metadata", "labels", "a"]), Some("b"));
    }

    #[test]
    fn does_not_create_without_create_or_through_sequences() {
        let mut n = doc("kind: X\n");
        let mut seen = 0;
        for (path, create) in [("spec/selector", false), ("spec/items[]/x", true)] {
            FieldSpec::any_kind(path, create)
                .apply(&mut n, Create::Mapping, &mut |_| {
                    seen += 1;
                    Ok(())
                })
                .unwrap();
        }
        assert_eq!(seen, 0);
        // As in kustomize, the mapping before a `[]` segment is created, the sequence is not.
        assert_eq!(
            n.get("spec").and_then(Node::as_mapping).map(Vec::len),
            Some(0)
        );
    }

    #[test]
    fn null_fields_become_the_created_kind() {
        let mut n = doc("metadata:\n  labels:\n");
        FieldSpec::any_kind("metadata/labels", true)
            .apply(&mut n, Create::Mapping, &mut |leaf| {
                assert!(leaf.is_mapping());
                Ok(())
            })
            .unwrap();
    }
}
