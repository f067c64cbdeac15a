use super::scope::{self, Produced, ScalarAt};
use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};
use plumb_flux::varsub;
use regex::Regex;
use std::collections::BTreeMap;

/// ## What it does
/// Finds placeholder values that reach a built object: text matching one of the `placeholders`
/// patterns of `.plumb.yaml` (default `TBD-*`, `CHANGEME`, `REPLACE_ME`; `*` matches any run of
/// letters, digits, `-` and `_`), as a whole word of a value.
///
/// When the placeholder arrives through substitution, the finding points at the variable's
/// definition (the line of the vars ConfigMap, after the cluster's overlay) and lists every
/// `${VAR}` it is substituted into; otherwise it points at the value where it is written.
///
/// ## Why is this bad?
/// A placeholder is a decision not taken yet. Flux applies it as it is: a `LoadBalancer` asks
/// for the address `TBD-PROD-GATEWAY-VIP`, a Helm chart connects to the host `CHANGEME`. The API
/// server accepts most such strings, so the failure shows up later, at runtime, far from the
/// line that causes it.
///
/// ## Example
/// ```yaml
/// # clusters/prod/cluster-vars.yaml
/// data:
///   GATEWAY_VIP: TBD-PROD-GATEWAY-VIP
/// ```
///
/// Use instead:
/// ```yaml
/// data:
///   GATEWAY_VIP: 10.20.0.200
/// ```
/// or keep the objects that need the value out of this cluster until it is decided.
pub struct PlaceholderValue;

/// One placeholder's finding, before it is emitted: where it is written and where it arrives.
struct Pending {
    token: String,
    object: String,
    var: Option<String>,
    /// Where it is substituted: the `${VAR}` text and the object.
    uses: Vec<(Option<Location>, String, String)>,
    chain: Vec<String>,
}

impl Rule for PlaceholderValue {
    fn code(&self) -> &'static str {
        "SUB002"
    }

    fn summary(&self) -> &'static str {
        "a placeholder value (`TBD-*`, `CHANGEME`, `REPLACE_ME`) reaches a built object"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        let patterns = compile(&cx.config.placeholders);
        if patterns.is_empty() {
            return;
        }
        let mut pending: BTreeMap<Option<Location>, Pending> = BTreeMap::new();
        for entry in &cx.build.entries {
            let produced = Produced::of(entry);
            let scopes = scope::scopes(entry, &produced);
            // Placeholders written in a value, vars ConfigMaps included.
            for ks in &entry.kustomizations {
                for object in &ks.objects {
                    let Some(origin) = &object.origin else {
                        continue;
                    };
                    scope::for_each_scalar(origin, &ks.path, &mut |scalar| {
                        for (location, token) in placeholders_in(cx, scalar, &patterns) {
                            pending.entry(location).or_insert_with(|| Pending {
                                token,
                                object: describe(object),
                                var: None,
                                uses: Vec::new(),
                                chain: ks.chain.clone(),
                            });
                        }
                    });
                }
            }
            // Placeholders that arrive through `${VAR}`: the use is related to the definition.
            for scope in &scopes {
                for object in &scope.ks.objects {
                    let Some(origin) = &object.origin else {
                        continue;
                    };
                    if !scope.substitutes(object) {
                        continue;
                    }
                    scope::for_each_scalar(origin, &scope.ks.path, &mut |scalar| {
                        if !scalar.value.contains("${") {
                            return;
                        }
                        let Ok(refs) = varsub::references(scalar.value) else {
                            return;
                        };
                        for r in &refs {
                            let Some(definition) = scope.definitions.get(&r.name) else {
                                continue;
                            };
                            let Some(token) = first_match(&definition.value, &patterns) else {
                                continue;
                            };
                            let at = definition.node.as_ref().and_then(|node| {
                                let def = ScalarAt {
                                    node,
                                    value: node.scalar_value().unwrap_or(""),
                                    path: &[],
                                    anchor: Some(node),
                                    dir: "",
                                };
                                scope::locate(cx, &def, &token, 0)
                            });
                            let slot = pending.entry(at).or_insert_with(|| Pending {
                                token: token.clone(),
                                object: String::new(),
                                var: None,
                                uses: Vec::new(),
                                chain: scope.ks.chain.clone(),
                            });
                            slot.var = Some(r.name.clone());
                            let used = (
                                scope::locate_reference(cx, scalar, r),
                                scalar.value[r.start..r.end].to_string(),
                                describe(object),
                            );
                            if !slot.uses.contains(&used) {
                                slot.uses.push(used);
                            }
                        }
                    });
                }
            }
        }
        // A placeholder written several times in one object (21 `"sha256": "TBD-..."` of one
        // registry file) is one finding, at its first place, counting the others.
        let mut repeats: BTreeMap<(String, String), usize> = BTreeMap::new();
        for p in pending.values().filter(|p| p.var.is_none()) {
            *repeats
                .entry((p.object.clone(), p.token.clone()))
                .or_default() += 1;
        }
        for (location, p) in pending {
            // The first place of a written placeholder takes its count; the others have none.
            let written = match &p.var {
                Some(_) => 0,
                None => match repeats.remove(&(p.object.clone(), p.token.clone())) {
                    Some(n) => n,
                    None => continue,
                },
            };
            let message = match &p.var {
                Some(var) => {
                    let mut objects: Vec<&str> = p
                        .uses
                        .iter()
                        .map(|(_, _, object)| object.as_str())
                        .collect();
                    objects.dedup();
                    format!(
                        "placeholder `{}` of `{var}` is substituted into {}",
                        p.token,
                        objects.join(", ")
                    )
                }
                None => {
                    let also = match written - 1 {
                        0 => String::new(),
                        1 => " (written once more in it)".to_string(),
                        n => format!(" (written {n} more times in it)"),
                    };
                    format!("placeholder `{}` reaches {}{also}", p.token, p.object)
                }
            };
            let mut finding = Finding::new(
                "SUB002",
                message,
                "replace the placeholder with the real value before this cluster reconciles, or keep what needs it out of this cluster",
            )
            .at(location)
            .with_chain(&p.chain);
            for (at, text, object) in p.uses {
                finding = finding.related(at, format!("`{text}` substituted in {object}"));
            }
            out.push(finding);
        }
    }
}

/// `Kind namespace/name`, or `Kind name` for a cluster-scoped object.
fn describe(object: &plumb_flux::model::Object) -> String {
    match object.namespace() {
        "" => format!("{} {}", object.kind(), object.name()),
        ns => format!("{} {ns}/{}", object.kind(), object.name()),
    }
}

/// Word characters of a placeholder.
const WORD: &str = "A-Za-z0-9_-";

/// Each pattern as a regex matching it as a whole word; group 1 is the placeholder.
fn compile(patterns: &[String]) -> Vec<Regex> {
    patterns
        .iter()
        .filter(|p| !p.is_empty())
        .filter_map(|p| {
            let body = p
                .split('*')
                .map(regex::escape)
                .collect::<Vec<_>>()
                .join(&format!("[{WORD}]*"));
            Regex::new(&format!("(?:^|[^{WORD}])({body})(?:$|[^{WORD}])")).ok()
        })
        .collect()
}

/// The first placeholder in `text`.
fn first_match(text: &str, patterns: &[Regex]) -> Option<String> {
    patterns
        .iter()
        .filter_map(|re| re.captures(text).and_then(|c| c.get(1)))
        .min_by_key(|m| m.start())
        .map(|m| m.as_str().to_string())
}

/// Whether the placeholder at `start..end` of `text` is code about a placeholder, not one: on
/// its line, after a comment marker (`#`, `//`), or an operand of a comparison (a script that
/// checks `[ "$TOKEN" != "CHANGEME" ]` before using the value).
fn tested_or_commented(text: &str, start: usize, end: usize) -> bool {
    let (before, after) = scope::line_around(text, start, end);
    let opening = before.trim_start();
    let commented = opening.starts_with('#')
        || opening.starts_with("//")
        || before.contains(" # ")
        || before.contains(" // ");
    let operand = |side: &str, at_end: bool| {
        let side = side.trim_matches(|c: char| c == '"' || c == '\'' || c == ' ');
        ["==", "!=", "-eq", "-ne"].iter().any(|op| {
            if at_end {
                side.ends_with(op)
            } else {
                side.starts_with(op)
            }
        })
    };
    let quoted_before = before.trim_end_matches(['"', '\'']);
    let quoted_after = after.trim_start_matches(['"', '\'']);
    commented
        || (quoted_before.len() < before.len() || quoted_after.len() < after.len())
            && (operand(before, true) || operand(after, false))
}

/// Every placeholder in a scalar's value, located in its source.
fn placeholders_in(
    cx: &CheckContext<'_>,
    scalar: &ScalarAt<'_>,
    patterns: &[Regex],
) -> Vec<(Option<Location>, String)> {
    let mut found = Vec::new();
    for re in patterns {
        for m in re.captures_iter(scalar.value).filter_map(|c| c.get(1)) {
            if tested_or_commented(scalar.value, m.start(), m.end()) {
                continue;
            }
            let token = m.as_str();
            let nth = scalar.value[..m.start()].matches(token).count();
            found.push((scope::locate(cx, scalar, token, nth), token.to_string()));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::tested_or_commented;

    fn at(text: &str, token: &str) -> bool {
        let start = text.find(token).expect("the token");
        tested_or_commented(text, start, start + token.len())
    }

    #[test]
    fn a_script_testing_for_a_placeholder_holds_none() {
        // j0sh3rs/home-ops: openclaw's start script skips tokens left at their placeholder.
        assert!(at(
            "set -e\nif [ -n \"$GITHUB_TOKEN\" ] && [ \"$GITHUB_TOKEN\" != \"CHANGEME\" ]; then\n",
            "CHANGEME"
        ));
        assert!(at("  # Same CHANGEME idiom as above\n", "CHANGEME"));
        assert!(at("x: 1 # CHANGEME later\n", "CHANGEME"));
        // Values that are placeholders.
        assert!(!at("CHANGEME", "CHANGEME"));
        assert!(!at("PASSWORD=\"CHANGEME\"\n", "CHANGEME"));
        assert!(!at(
            "host: https://TBD-gateway.example.com\n",
            "TBD-gateway"
        ));
        assert!(!at(
            "{\"sha256\": \"TBD-on-acquisition\"}",
            "TBD-on-acquisition"
        ));
    }
}
