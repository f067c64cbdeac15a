//! `namePrefix` and `nameSuffix`: the prefix or suffix is added to `metadata/name` (and any
//! field a `configurations:` file names) of every resource but CRDs, APIServices and
//! Namespaces, whose names other things depend on. Renamed resources remember their old names,
//! and the prefixes and suffixes they were given, for the name-reference step.

use crate::build::ResourceList;
use crate::error::KustomizeError;
use crate::fieldspec::{Create, FieldSpec};
use crate::kustomization::Kustomization;
use crate::resource::Gvk;
use plumb_yaml::{Node, NodeKind};

/// Kinds whose names kustomize never prefixes or suffixes: (group, kind).
const SKIPPED: &[(&str, &str)] = &[
    ("", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    ("", "Namespace"),
];

fn skipped(gvk: &Gvk) -> bool {
    SKIPPED
        .iter()
        .any(|(g, k)| gvk.kind == *k && (g.is_empty() || gvk.group == *g))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Prefix,
    Suffix,
}

/// Applies the kustomization's `namePrefix` then `nameSuffix`.
pub fn run(
    k: &Kustomization,
    list: &mut ResourceList,
    prefix_specs: &[FieldSpec],
    suffix_specs: &[FieldSpec],
) -> Result<(), KustomizeError> {
    for (field, end, specs) in [
        ("namePrefix", End::Prefix, prefix_specs),
        ("nameSuffix", End::Suffix, suffix_specs),
    ] {
        // kustomize runs both transformers at every level, an empty prefix included: the
        // (possibly empty) prefixes and suffixes each resource went through tell name
        // references which of several same-named objects a referrer was built with.
        let affix = match k.field(field) {
            None => String::new(),
            Some(node) => crate::transform::values::string(k, node, field)?,
        };
        apply(list, &affix, end, specs)?;
    }
    Ok(())
}

/// Adds a prefix and a suffix (either may be empty) to every field the specs select, as the
/// builtin `PrefixSuffixTransformer` does.
pub fn apply_affixes(
    list: &mut ResourceList,
    prefix: &str,
    suffix: &str,
    specs: &[FieldSpec],
) -> Result<(), KustomizeError> {
    apply(list, prefix, End::Prefix, specs)?;
    apply(list, suffix, End::Suffix, specs)
}

/// Adds `affix` at one end of every field the specs select.
fn apply(
    list: &mut ResourceList,
    affix: &str,
    end: End,
    specs: &[FieldSpec],
) -> Result<(), KustomizeError> {
    // Inline when short, as the scalars that take them keep their text.
    let join = |value: &str| match end {
        End::Prefix => compact_str::format_compact!("{affix}{value}"),
        End::Suffix => compact_str::format_compact!("{value}{affix}"),
    };
    for r in &mut list.resources {
        let gvk = r.original_gvk();
        if skipped(&gvk) {
            continue;
        }
        for spec in specs.iter().filter(|s| s.selects(&gvk)) {
            if spec.path == ["metadata", "name"] {
                match end {
                    End::Prefix => r.prefixes.push(affix.to_string()),
                    End::Suffix => r.suffixes.push(affix.to_string()),
                }
                // An empty affix leaves the name as it is: not written back.
                if !affix.is_empty() {
                    let name = join(r.name());
                    r.set_name(&name);
                }
                continue;
            }
            spec.apply(&mut r.node, Create::Nothing, &mut |leaf: &mut Node| {
                if let NodeKind::Scalar(s) = &leaf.kind {
                    let value = join(&s.value);
                    *leaf = Node::string(value).with_span(leaf.span.clone());
                }
                Ok(())
            })?;
        }
    }
    Ok(())
}
