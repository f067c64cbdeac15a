use super::scope::{self, Produced};
use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};
use plumb_flux::postbuild;
use plumb_flux::varsub;
use std::collections::{BTreeSet, HashSet};

/// ## What it does
/// Finds `${VAR}` references that no variable resolves: in a Kustomization with
/// `postBuild`, a variable that neither `substitute` nor any `substituteFrom` ConfigMap or Secret
/// defines, and that has no default; in a Kustomization without `postBuild` (or whose variables
/// all failed to resolve, so Flux substitutes nothing), a reference to one of the cluster's
/// variables, which reaches the cluster as literal text.
///
/// ## Why is this bad?
/// kustomize-controller substitutes in strict mode since v1.9 (Flux 2.9): an undefined variable
/// fails the whole Kustomization, and nothing of it is applied. Older controllers, and
/// `--no-strict`, silently put an empty string (or `null`) in its place. Without substitution,
/// the API server receives the text `${GATEWAY_VIP}` itself: an address, a host name or a storage
/// class that does not exist.
///
/// ## Example
/// ```yaml
/// # clusters/base/infrastructure.yaml: no postBuild
/// apiVersion: kustomize.toolkit.fluxcd.io/v1
/// kind: Kustomization
/// metadata:
///   name: gateway
///   namespace: flux-system
/// spec:
///   path: ./gateway
///   sourceRef:
///     kind: GitRepository
///     name: flux-system
/// ---
/// # gateway/gateway.yaml
/// spec:
///   addresses:
///     - value: ${GATEWAY_VIP}
/// ```
///
/// Use instead:
/// ```yaml
/// spec:
///   path: ./gateway
///   sourceRef:
///     kind: GitRepository
///     name: flux-system
///   postBuild:
///     substituteFrom:
///       - kind: ConfigMap
///         name: cluster-vars
/// ```
/// and define `GATEWAY_VIP` in `cluster-vars`, or give the reference a default
/// (`${GATEWAY_VIP:=192.168.10.200}`). A `${...}` that must stay literal is written `$${...}`.
///
/// A name the cluster defines, written in a secretGenerator's literals or files, is reported
/// too: the generator writes them into the Secret's `data` in base64, where kustomize-controller
/// never finds the `${...}` (fluxcd/kustomize-controller#1089), so the application receives it
/// as written.
///
/// References inside scripts and command lines, and shell operators such as `${x#y}`, are
/// SUB003's. Without `postBuild`, only names that some Kustomization of the cluster defines
/// (and references with a default) are reported, so that `${...}` meant for another program
/// (a Grafana dashboard's `${datasource}`) is not, and none inside a script, whose `${...}`
/// the shell reads from the environment the pod gives it.
pub struct UnresolvedVariable;

impl Rule for UnresolvedVariable {
    fn code(&self) -> &'static str {
        "SUB001"
    }

    fn summary(&self) -> &'static str {
        "`${VAR}` left unresolved after substitution, or reaching the cluster as literal text"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        let start = out.len();
        let mut seen = HashSet::new();
        for entry in &cx.build.entries {
            let produced = Produced::of(entry);
            let scopes = scope::scopes(entry, &produced);
            let known: BTreeSet<&str> = scopes
                .iter()
                .flat_map(|s| s.vars.keys().map(String::as_str))
                .collect();
            // The Kustomizations whose build failed on a variable left in their spec.path:
            // BLD001 reports that, the one mistake is that finding.
            let path_unsubstituted: HashSet<(&str, &str)> = entry
                .kustomizations
                .iter()
                .filter(|k| {
                    k.diagnostics
                        .iter()
                        .any(|d| d.code == plumb_flux::diagnostic::Code::PathUnsubstituted)
                })
                .map(|k| {
                    (
                        k.kustomization.namespace.as_str(),
                        k.kustomization.name.as_str(),
                    )
                })
                .collect();
            for scope in &scopes {
                let ks = scope.ks;
                let who = ks.key();
                for object in &ks.objects {
                    let Some(origin) = &object.origin else {
                        continue;
                    };
                    if postbuild::is_disabled(&object.value) || scope.missing_source {
                        continue;
                    }
                    let substituted = scope.substitutes(object);
                    // A Flux Kustomization's own `spec.patches` are applied by its build, whose
                    // output its own postBuild then substitutes: their variables are its, and
                    // are checked in the objects it builds, where the patches put them.
                    let own_patches =
                        object.is(plumb_flux::model::KUSTOMIZE_GROUP, "Kustomization");
                    let path_left = own_patches
                        && path_unsubstituted
                            .contains(&(object.namespace_or_default(), object.name()));
                    if object.is("", "Secret") {
                        for (key, name) in encoded_references(&object.value) {
                            // Only a name Flux defines was meant for it: a configuration's
                            // `${VAR}` may be the application's own, read from its environment.
                            if !(scope.vars.contains_key(&name) || known.contains(name.as_str())) {
                                continue;
                            }
                            let message = format!(
                                "`${{{name}}}` reaches the cluster as literal text: {} holds it base64-encoded in `data.{key}` (as a secretGenerator writes it), where Flux's substitution never looks",
                                object.display_id()
                            );
                            let location = Location::of(origin, cx.root);
                            if !seen.insert((location.clone(), message.clone())) {
                                continue;
                            }
                            out.push(
                                Finding::new(
                                    "SUB001",
                                    message,
                                    "write the Secret as a manifest whose `stringData` holds the `${...}` (postBuild substitutes it there), or keep the value in a SOPS-encrypted file the generator reads",
                                )
                                .at(location)
                                .with_chain(&ks.chain),
                            );
                        }
                    }
                    scope::for_each_scalar(origin, &ks.path, &mut |scalar| {
                        if !scalar.value.contains("${") {
                            return;
                        }
                        if own_patches
                            && scalar.path.starts_with(&["spec".into(), "patches".into()])
                        {
                            return;
                        }
                        if path_left && scalar.path == ["spec", "path"] {
                            return;
                        }
                        // A text Flux cannot parse is SUB003's.
                        let Ok(refs) = varsub::references(scalar.value) else {
                            return;
                        };
                        for r in &refs {
                            let message = if substituted {
                                if scope.vars.contains_key(&r.name)
                                    || r.has_default
                                    || scope::shell_use(scalar, r).is_some()
                                {
                                    continue;
                                }
                                format!(
                                    "`${{{}}}` is not defined for Kustomization {who}: strict substitution (kustomize-controller v1.9+) fails the Kustomization, non-strict ships an empty string",
                                    r.name
                                )
                            } else if scope.has_post_build() {
                                // Literal text is a mistake only when it was meant for Flux: a
                                // name the cluster defines, or a default outside shell text.
                                // A Grafana dashboard's `${DS_PROMETHEUS}` is meant literally.
                                if !meant_for_flux(&known, scalar, r) {
                                    continue;
                                }
                                format!(
                                    "`{}` reaches the cluster as literal text: none of Kustomization {who}'s substitution variables resolved, so Flux substitutes nothing",
                                    &scalar.value[r.start..r.end]
                                )
                            } else {
                                // Nothing substitutes a script here: its `${...}` is the
                                // shell's, read from the environment the pod gives it.
                                if scope::is_script(scalar) || !meant_for_flux(&known, scalar, r) {
                                    continue;
                                }
                                format!(
                                    "`{}` reaches the cluster as literal text: {} has no postBuild, so nothing substitutes it",
                                    &scalar.value[r.start..r.end],
                                    if ks.synthetic {
                                        format!("the Kustomization that syncs {}", display_dir(&ks.path))
                                    } else {
                                        format!("Kustomization {who}")
                                    }
                                )
                            };
                            let location = scope::locate_reference(cx, scalar, r);
                            if !seen.insert((location.clone(), message.clone())) {
                                continue;
                            }
                            let help = if substituted {
                                format!(
                                    "define `{0}` in the vars ConfigMap this Kustomization substitutes from, or in postBuild.substitute; or give it a default: `${{{0}:=value}}`",
                                    r.name
                                )
                            } else if scope.has_post_build() {
                                "check that the ConfigMaps and Secrets of postBuild.substituteFrom exist and define these variables".to_string()
                            } else {
                                "move the manifest under a Kustomization whose postBuild substitutes from the cluster's vars, or add postBuild.substituteFrom to this one".to_string()
                            };
                            out.push(
                                Finding::new("SUB001", message, help)
                                    .at(location)
                                    .with_chain(&ks.chain),
                            );
                        }
                    });
                }
            }
        }
        let found = out.split_off(start);
        out.extend(once_per_file(found));
    }
}

/// The variables `${NAME}` in the decoded `data` of a Secret, with the key holding each (once
/// per key and name). kustomize's secretGenerator writes its literals and files there in
/// base64, which kustomize-controller substitutes as it finds it: a reference inside stays as
/// written (fluxcd/kustomize-controller#1089).
fn encoded_references(secret: &serde_json::Value) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let Some(data) = secret.get("data").and_then(|d| d.as_object()) else {
        return found;
    };
    for (key, value) in data {
        let Some(text) = value.as_str().and_then(crate::rules::sec::decoded_data) else {
            continue;
        };
        if !text.contains("${") {
            continue;
        }
        let Ok(refs) = varsub::references(&text) else {
            continue;
        };
        for r in refs {
            if !found.iter().any(|(k, n)| k == key && *n == r.name) {
                found.push((key.clone(), r.name));
            }
        }
    }
    found
}

/// One finding per variable, file and Kustomization: a dashboard that names `${DS_PROMETHEUS}`
/// forty times is one mistake. The first place is kept, and the message counts the others.
fn once_per_file(found: Vec<Finding>) -> Vec<Finding> {
    let mut kept: Vec<(Finding, usize)> = Vec::new();
    let mut index: std::collections::HashMap<_, usize> = std::collections::HashMap::new();
    for f in found {
        let key = (
            f.location.as_ref().map(|l| l.file.clone()),
            f.message.clone(),
            f.chain.clone(),
        );
        match index.get(&key) {
            Some(&i) => kept[i].1 += 1,
            None => {
                index.insert(key, kept.len());
                kept.push((f, 1));
            }
        }
    }
    kept.into_iter()
        .map(|(mut f, count)| {
            if count > 1 {
                f.message
                    .push_str(&format!(" ({count} references in this file)"));
            }
            f
        })
        .collect()
}

/// Whether a reference that reaches the cluster as literal text was meant for Flux: a name some
/// Kustomization of the cluster defines, or one with a default outside shell text (in a script
/// or command line, `PORT=${PORT:-5432}` is the shell's, and meant literally).
fn meant_for_flux(
    known: &BTreeSet<&str>,
    scalar: &scope::ScalarAt<'_>,
    r: &varsub::VarRef,
) -> bool {
    if scope::is_script(scalar) && in_comment(scalar.value, r.start) {
        // Nothing reads a comment of a script: literal text there changes nothing.
        return false;
    }
    if scalar.path.last().is_some_and(|k| k == "description") {
        // Prose: a CRD schema's description (Flux's own gotk-components.yaml explains
        // `${var:=default}`) is documentation, which literal text does not break.
        return false;
    }
    known.contains(r.name.as_str())
        || (r.has_default && !scope::is_script(scalar) && !scope::is_shell_operator(&r.operator))
}

/// Whether offset `at` of a script lies on a comment line (`# ...`, not the `#!` line).
fn in_comment(script: &str, at: usize) -> bool {
    let opening = scope::line_around(script, at, at).0.trim_start();
    opening.starts_with('#') && !opening.starts_with("#!")
}

fn display_dir(path: &str) -> &str {
    if path.is_empty() {
        "."
    } else {
        path
    }
}

#[cfg(test)]
mod tests {
    use super::in_comment;

    #[test]
    fn a_reference_on_a_comment_line_of_a_script_is_in_a_comment() {
        // chaijunkin/home-ops: "# ... ReplicationSource is ${APP}-r2" in a job's script.
        let script = "#!/bin/sh\n  # the source is ${APP}-r2\necho ${APP}\n";
        assert!(in_comment(script, script.find("${APP}").unwrap()));
        assert!(!in_comment(script, script.rfind("${APP}").unwrap()));
        assert!(!in_comment("#!/bin/sh ${X}", 10));
    }
}
