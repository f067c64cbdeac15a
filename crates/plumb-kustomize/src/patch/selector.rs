//! A patch's `target`: group, version, kind, name and namespace as anchored regular expressions,
//! and Kubernetes label selectors on labels and annotations. Names and namespaces match the
//! resource's original or current identity, as kustomize's `ResMap.Select` does.

use crate::context::Context;
use crate::error::KustomizeError;
use crate::patch::error_at;
use crate::resource::{ResId, Resource};
use plumb_yaml::Node;
use regex::Regex;
use std::collections::BTreeMap;

/// The fields of a selector as written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SelectorSpec {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: String,
    pub namespace: String,
    pub label_selector: String,
    pub annotation_selector: String,
}

impl SelectorSpec {
    /// Reads a `target:` mapping.
    pub fn from_node(node: &Node) -> Result<SelectorSpec, KustomizeError> {
        if !node.is_mapping() {
            return Err(error_at(node, "a patch target must be a mapping"));
        }
        let get = |key: &str| node.str_at(&[key]).unwrap_or("").to_string();
        Ok(SelectorSpec {
            group: get("group"),
            version: get("version"),
            kind: get("kind"),
            name: get("name"),
            namespace: get("namespace"),
            label_selector: get("labelSelector"),
            annotation_selector: get("annotationSelector"),
        })
    }

    /// The identity part, for messages.
    pub fn res_id(&self) -> ResId {
        ResId {
            gvk: crate::resource::Gvk {
                group: self.group.as_str().into(),
                version: self.version.as_str().into(),
                kind: self.kind.as_str().into(),
            },
            namespace: self.namespace.as_str().into(),
            name: self.name.as_str().into(),
        }
    }
}

/// A compiled selector.
#[derive(Debug, Clone)]
pub struct Selector {
    group: Option<Pattern>,
    version: Option<Pattern>,
    kind: Option<Pattern>,
    name: Option<Pattern>,
    namespace: Option<Pattern>,
    labels: LabelSelector,
    annotations: LabelSelector,
}

/// One field of a target, matching whole values.
#[derive(Debug, Clone)]
enum Pattern {
    /// Letters, digits and `-_/:` that stand for themselves, and `.` for any character but a
    /// line break: what nearly every target writes (`HelmRelease`, `apps`,
    /// `helm.toolkit.fluxcd.io`), matched as the anchored expression would match it without
    /// running one. A compiled expression is cloned from the process's cache with an empty
    /// matching cache of its own, which every patch entry paid for again.
    Plain(String),
    Regex(Regex),
}

impl Pattern {
    fn is_match(&self, value: &str) -> bool {
        match self {
            Pattern::Plain(pattern) => {
                let mut value = value.chars();
                pattern.chars().all(|p| match (p, value.next()) {
                    ('.', Some(c)) => c != '\n',
                    (p, Some(c)) => p == c,
                    (_, None) => false,
                }) && value.next().is_none()
            }
            Pattern::Regex(re) => re.is_match(value),
        }
    }
}

/// Compiles the target's `field`, anchored to match whole values; an empty pattern matches
/// anything.
fn anchored(field: &str, pattern: &str) -> Result<Option<Pattern>, KustomizeError> {
    if pattern.is_empty() {
        return Ok(None);
    }
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '/' | ':' | '.');
    // A pattern past the length bound is refused as an expression would be.
    if pattern.len() <= crate::pattern::MAX_PATTERN_LEN && pattern.chars().all(plain) {
        return Ok(Some(Pattern::Plain(pattern.to_string())));
    }
    crate::pattern::compile_anchored(pattern)
        .map(|re| Some(Pattern::Regex(re)))
        .map_err(|e| KustomizeError::Other(format!("target {field}: error parsing regexp: {e}")))
}

/// What kustomize compares namespaces by: `default` for no namespace, a marker for kinds that
/// have none.
pub fn effective_namespace<'a>(id: &'a ResId, ctx: &Context) -> &'a str {
    if !ctx.is_namespaced(&id.gvk.api_version(), &id.gvk.kind) {
        return "_non_namespaceable_";
    }
    if id.namespace.is_empty() || id.namespace == "default" {
        return "default";
    }
    &id.namespace
}

impl Selector {
    pub fn new(spec: &SelectorSpec) -> Result<Selector, KustomizeError> {
        Ok(Selector {
            group: anchored("group", &spec.group)?,
            version: anchored("version", &spec.version)?,
            kind: anchored("kind", &spec.kind)?,
            name: anchored("name", &spec.name)?,
            namespace: anchored("namespace", &spec.namespace)?,
            labels: LabelSelector::parse(&spec.label_selector)?,
            annotations: LabelSelector::parse(&spec.annotation_selector)?,
        })
    }

    pub fn matches(&self, resource: &Resource, ctx: &Context) -> bool {
        // The kind first (what most targets name), borrowed from the resource; the ids and the
        // label maps only when the selector asks about them: every patch asks this of every
        // resource, and most resources are told apart by their kind.
        let is = |p: &Option<Pattern>, s: &str| p.as_ref().is_none_or(|p| p.is_match(s));
        let (group, version, kind, _, _) = resource.id_key();
        if !is(&self.kind, kind) || !is(&self.group, group) || !is(&self.version, version) {
            return false;
        }
        if self.namespace.is_some() || self.name.is_some() {
            let current = resource.id();
            let original = resource.previous_ids.first().unwrap_or(&current);
            if !is(&self.namespace, effective_namespace(original, ctx))
                && !is(&self.namespace, effective_namespace(&current, ctx))
            {
                return false;
            }
            if !is(&self.name, &original.name) && !is(&self.name, &current.name) {
                return false;
            }
        }
        let asks = |selector: &LabelSelector, field: &str| {
            selector.requirements.is_empty() || selector.matches(&string_map(&resource.node, field))
        };
        asks(&self.labels, "labels") && asks(&self.annotations, "annotations")
    }
}

fn string_map(node: &Node, field: &str) -> BTreeMap<String, String> {
    node.get_path(&["metadata", field])
        .and_then(Node::as_mapping)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            Some((
                k.scalar_value()?.to_string(),
                v.scalar_value().unwrap_or("").to_string(),
            ))
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Operator {
    Exists,
    DoesNotExist,
    In,
    NotIn,
    GreaterThan,
    LessThan,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

/// A Kubernetes label selector (`app=web,tier!=db,env in (a,b),!legacy`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    Not,
    Eq,
    DoubleEq,
    NotEq,
    Gt,
    Lt,
    Comma,
    Open,
    Close,
    In,
    NotInKw,
}

fn tokenize(s: &str) -> Vec<Token> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let special = |c: char| matches!(c, '!' | '=' | '>' | '<' | ',' | '(' | ')');
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let two = chars.get(i + 1).copied();
        let token = match (c, two) {
            ('!', Some('=')) => {
                i += 2;
                Token::NotEq
            }
            ('=', Some('=')) => {
                i += 2;
                Token::DoubleEq
            }
            ('!', _) => {
                i += 1;
                Token::Not
            }
            ('=', _) => {
                i += 1;
                Token::Eq
            }
            ('>', _) => {
                i += 1;
                Token::Gt
            }
            ('<', _) => {
                i += 1;
                Token::Lt
            }
            (',', _) => {
                i += 1;
                Token::Comma
            }
            ('(', _) => {
                i += 1;
                Token::Open
            }
            (')', _) => {
                i += 1;
                Token::Close
            }
            _ => {
                let start = i;
                while i < chars.len() && !chars[i].is_whitespace() && !special(chars[i]) {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                match word.as_str() {
                    "in" => Token::In,
                    "notin" => Token::NotInKw,
                    _ => Token::Ident(word),
                }
            }
        };
        out.push(token);
    }
    out
}

fn parse_error(s: &str, message: &str) -> KustomizeError {
    KustomizeError::Other(format!(
        "unable to parse requirement: {message} in selector {s:?}"
    ))
}

impl LabelSelector {
    /// Parses the selector syntax of Kubernetes' `labels.Parse`; the empty selector matches
    /// everything.
    pub fn parse(s: &str) -> Result<LabelSelector, KustomizeError> {
        let tokens = tokenize(s);
        let mut requirements = Vec::new();
        let mut pos = 0;
        let ident = |t: Option<&Token>| match t {
            Some(Token::Ident(w)) => Some(w.clone()),
            Some(Token::In) => Some("in".into()),
            Some(Token::NotInKw) => Some("notin".into()),
            _ => None,
        };
        while pos < tokens.len() {
            let requirement = if tokens[pos] == Token::Not {
                let key = ident(tokens.get(pos + 1))
                    .ok_or_else(|| parse_error(s, "expected a key after '!'"))?;
                pos += 2;
                Requirement {
                    key,
                    operator: Operator::DoesNotExist,
                    values: Vec::new(),
                }
            } else {
                let key = ident(tokens.get(pos)).ok_or_else(|| parse_error(s, "expected a key"))?;
                pos += 1;
                match tokens.get(pos) {
                    None | Some(Token::Comma) => Requirement {
                        key,
                        operator: Operator::Exists,
                        values: Vec::new(),
                    },
                    Some(
                        op @ (Token::Eq | Token::DoubleEq | Token::NotEq | Token::Gt | Token::Lt),
                    ) => {
                        let operator = match op {
                            Token::NotEq => Operator::NotIn,
                            Token::Gt => Operator::GreaterThan,
                            Token::Lt => Operator::LessThan,
                            _ => Operator::In,
                        };
                        pos += 1;
                        let value = match tokens.get(pos) {
                            Some(Token::Comma) | None => String::new(),
                            other => {
                                pos += 1;
                                ident(other).ok_or_else(|| parse_error(s, "expected a value"))?
                            }
                        };
                        if matches!(operator, Operator::GreaterThan | Operator::LessThan)
                            && value.parse::<i64>().is_err()
                        {
                            return Err(parse_error(
                                s,
                                "for 'Gt', 'Lt' operators, the value must be an integer",
                            ));
                        }
                        Requirement {
                            key,
                            operator,
                            values: vec![value],
                        }
                    }
                    Some(set_op @ (Token::In | Token::NotInKw)) => {
                        let operator = if *set_op == Token::In {
                            Operator::In
                        } else {
                            Operator::NotIn
                        };
                        pos += 1;
                        if tokens.get(pos) != Some(&Token::Open) {
                            return Err(parse_error(s, "found '', expected: '('"));
                        }
                        pos += 1;
                        let mut values = Vec::new();
                        loop {
                            match tokens.get(pos) {
                                Some(Token::Close) => {
                                    pos += 1;
                                    break;
                                }
                                Some(Token::Comma) => {
                                    pos += 1;
                                }
                                other => {
                                    let v = ident(other)
                                        .ok_or_else(|| parse_error(s, "expected ')'"))?;
                                    values.push(v);
                                    pos += 1;
                                }
                            }
                        }
                        Requirement {
                            key,
                            operator,
                            values,
                        }
                    }
                    Some(_) => return Err(parse_error(s, "expected an operator")),
                }
            };
            requirements.push(requirement);
            match tokens.get(pos) {
                None => {}
                Some(Token::Comma) => pos += 1,
                Some(_) => return Err(parse_error(s, "expected ','")),
            }
        }
        Ok(LabelSelector { requirements })
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| {
            let value = labels.get(&r.key);
            match r.operator {
                Operator::Exists => value.is_some(),
                Operator::DoesNotExist => value.is_none(),
                Operator::In => value.is_some_and(|v| r.values.contains(v)),
                Operator::NotIn => value.is_none_or(|v| !r.values.contains(v)),
                Operator::GreaterThan | Operator::LessThan => {
                    let (Some(actual), Some(bound)) = (
                        value.and_then(|v| v.parse::<i64>().ok()),
                        r.values.first().and_then(|v| v.parse::<i64>().ok()),
                    ) else {
                        return false;
                    };
                    if r.operator == Operator::GreaterThan {
                        actual > bound
                    } else {
                        actual < bound
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_plain_pattern_matches_what_its_anchored_expression_matches() {
        let patterns = [
            "HelmRelease",
            "apps",
            "helm.toolkit.fluxcd.io",
            "a.b",
            "...",
            "v1",
            "cert-manager_x/y:z",
        ];
        let values = [
            "",
            "HelmRelease",
            "HelmReleases",
            "helmrelease",
            "xHelmRelease",
            "apps",
            "helm.toolkit.fluxcd.io",
            "helmxtoolkit.fluxcd.io",
            "a.b",
            "axb",
            "a\nb",
            "aéb",
            "ab",
            "a.bc",
            "abc",
            "ééé",
            "v1",
            "v1\n",
            "cert-manager_x/y:z",
            "é",
        ];
        for pattern in patterns {
            let plain = anchored("name", pattern).unwrap().unwrap();
            assert!(matches!(plain, Pattern::Plain(_)), "{pattern}");
            let re = crate::pattern::compile_anchored(pattern).unwrap();
            for value in values {
                assert_eq!(
                    plain.is_match(value),
                    re.is_match(value),
                    "{pattern} ~ {value:?}"
                );
            }
        }
        assert!(matches!(
            anchored("name", "a|b").unwrap().unwrap(),
            Pattern::Regex(_)
        ));
        assert!(anchored("name", "").unwrap().is_none());
    }

    #[test]
    fn label_selector_syntax() {
        let l = labels(&[("app", "web"), ("tier", "front"), ("n", "5")]);
        let yes = [
            "",
            "app=web",
            "app==web",
            "tier!=db",
            "app in (web, api)",
            "x notin (a)",
            "app",
            "!x",
            "n>3",
            "n<9",
            "app=web,tier=front",
        ];
        for s in yes {
            assert!(LabelSelector::parse(s).unwrap().matches(&l), "{s}");
        }
        let no = [
            "app=api",
            "app!=web",
            "tier notin (front)",
            "x",
            "!app",
            "n>5",
            "app=web,tier=db",
        ];
        for s in no {
            assert!(!LabelSelector::parse(s).unwrap().matches(&l), "{s}");
        }
        assert!(LabelSelector::parse("app in web").is_err());
    }
}
