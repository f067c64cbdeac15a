use super::scope::{self, Produced};
use crate::finding::Finding;
use crate::rule::{CheckContext, Rule};
use plumb_flux::varsub::{self, SubstError};
use std::collections::HashSet;

/// ## What it does
/// Finds shell syntax in resources that Flux substitutes (their Kustomization has `postBuild`,
/// some variable resolved, and the object does not opt out with
/// `kustomize.toolkit.fluxcd.io/substitute: disabled`):
///
/// - `${...}` that Flux's envsubst cannot parse at all: arrays (`${a[@]}`), `${x-y}`, `${x+y}`;
/// - shell parameter expansions on a variable Flux does not define: `${x#y}`, `${x%%.*}`,
///   `${x/y/z}`, `${x:1:2}`, `${#x}`, `${x^^}`;
/// - `${VAR}` in a script or command line (a `#!` file, a `*.sh` ConfigMap key, `command`,
///   `args`, cloud-init `runcmd`) where `VAR` is the script's own variable, not one of Flux's.
///
/// Plain `$VAR` is left alone by Flux and is not reported, and neither is an expansion whose
/// variable may come from a Secret created at runtime with keys the build cannot see (an
/// ExternalSecret's `dataFrom`): Flux evaluates `${x/y/z}` itself when `x` is defined.
///
/// ## Why is this bad?
/// kustomize-controller runs envsubst over the whole rendered object before applying it. Syntax
/// it cannot parse fails the Kustomization, in strict and non-strict mode alike. An expansion
/// it can parse is evaluated by Flux, not by the shell: the variable is undefined, so strict mode
/// fails and non-strict mode ships the script with an empty string where `${name}` was.
///
/// ## Example
/// ```yaml
/// # apps/backup/backup.sh, in a configMapGenerator of a Kustomization with postBuild
/// for dir in /data/*; do
///   name="${dir##*/}"
///   tar -czf "/backup/${name}.tar.gz" "$dir"
/// done
/// ```
///
/// Use instead:
/// ```yaml
/// for dir in /data/*; do
///   name="$${dir##*/}"
///   tar -czf "/backup/$${name}.tar.gz" "$dir"
/// done
/// ```
/// `$${...}` reaches the container as `${...}`. Alternatively label the object
/// `kustomize.toolkit.fluxcd.io/substitute: disabled` when it needs no Flux variable at all.
pub struct ShellSyntax;

impl Rule for ShellSyntax {
    fn code(&self) -> &'static str {
        "SUB003"
    }

    fn summary(&self) -> &'static str {
        "shell syntax inside a substituted resource that must be written `$${...}`"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        let mut seen = HashSet::new();
        for entry in &cx.build.entries {
            let produced = Produced::of(entry);
            for scope in scope::scopes(entry, &produced) {
                let ks = scope.ks;
                for object in &ks.objects {
                    let Some(origin) = &object.origin else {
                        continue;
                    };
                    if !scope.substitutes(object) {
                        continue;
                    }
                    scope::for_each_scalar(origin, &ks.path, &mut |scalar| {
                        if !scalar.value.contains("${") {
                            return;
                        }
                        let mut found = Vec::new();
                        match varsub::references(scalar.value) {
                            Err(SubstError::Syntax {
                                problem,
                                expression,
                                ..
                            }) => {
                                let text = expression_text(scalar.value, expression);
                                let nth = scalar.value[..expression].matches(&text).count();
                                found.push((
                                    scope::locate(cx, scalar, &text, nth),
                                    format!(
                                        "`{text}` is shell syntax Flux's substitution cannot parse ({problem}): Kustomization {} fails in strict and non-strict mode",
                                        ks.key()
                                    ),
                                    escaped(&text),
                                ));
                            }
                            Err(_) => {}
                            Ok(refs) => {
                                for r in &refs {
                                    // Defined, or perhaps defined where the build cannot see
                                    // (a runtime Secret's keys), or never substituted: the
                                    // controller fails first on a missing source (SUB004).
                                    if scope.vars.contains_key(&r.name)
                                        || scope.open
                                        || scope.missing_source
                                    {
                                        continue;
                                    }
                                    let Some(what) = scope::shell_use(scalar, r) else {
                                        continue;
                                    };
                                    let text = &scalar.value[r.start..r.end];
                                    found.push((
                                        scope::locate_reference(cx, scalar, r),
                                        format!(
                                            "`{text}` looks like {what}, but Flux substitutes it first: `{}` is not one of Kustomization {}'s variables, so strict mode fails and non-strict mode leaves an empty string",
                                            r.name,
                                            ks.key()
                                        ),
                                        escaped(text),
                                    ));
                                }
                            }
                        }
                        for (location, message, fixed) in found {
                            if !seen.insert((location.clone(), message.clone())) {
                                continue;
                            }
                            out.push(
                                Finding::new(
                                    "SUB003",
                                    message,
                                    format!("write `{fixed}`: Flux turns `$${{` into a literal `${{`, which the shell then expands"),
                                )
                                .at(location)
                                .with_chain(&ks.chain),
                            );
                        }
                    });
                }
            }
        }
    }
}

/// The expression starting at `start`: up to its first `}` (included) or the end of the line.
fn expression_text(text: &str, start: usize) -> String {
    let rest = &text[start..];
    let end = rest.find(['}', '\n']).map_or(rest.len(), |i| {
        if rest[i..].starts_with('}') {
            i + 1
        } else {
            i
        }
    });
    rest[..end].to_string()
}

/// `text` with its leading `$` doubled.
fn escaped(text: &str) -> String {
    format!("${text}")
}
