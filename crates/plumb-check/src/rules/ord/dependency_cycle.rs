use super::claimed_by;
use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};

/// ## What it does
/// Finds cycles of `dependsOn` between Flux Kustomizations: `a` waits for `b`, which waits
/// (directly or through others) for `a`.
///
/// ## Why is this bad?
/// No member of a cycle ever becomes Ready, because each waits for another member first.
/// None of them is applied, nor anything that depends on them. It often appears when a
/// dependency is added in one place without looking at the other direction.
///
/// ## Example
/// ```yaml
/// # platform waits for platform-config, which waits for platform
/// kind: Kustomization
/// metadata:
///   name: platform
/// spec:
///   dependsOn:
///     - name: platform-config
/// ```
///
/// Use instead:
/// ```yaml
/// kind: Kustomization
/// metadata:
///   name: platform
/// spec: {}   # the controllers first; platform-config dependsOn platform
/// ```
pub struct DependencyCycle;

impl Rule for DependencyCycle {
    fn code(&self) -> &'static str {
        "ORD006"
    }

    fn summary(&self) -> &'static str {
        "dependsOn cycle"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        for entry in &cx.build.entries {
            for d in entry.diagnostics.iter() {
                // The build finds cycles; this rule only reports them under its code.
                if claimed_by(d) != Some("ORD006") {
                    continue;
                }
                let cycle = d.message.split_once(": ").map_or("", |(_, c)| c);
                let path = cycle.split(": ").next().unwrap_or(cycle);
                // Underline the whole dependsOn entry the build points at.
                let location = d.file.as_ref().map(|file| {
                    let (line, column) =
                        (d.line.unwrap_or(1) as usize, d.column.unwrap_or(1) as usize);
                    entry
                        .kustomizations
                        .iter()
                        .filter_map(|k| k.kustomization.object.node_at(&["spec", "dependsOn"]))
                        .filter_map(|list| list.as_sequence())
                        .flatten()
                        .filter_map(|n| Location::of(n, cx.root))
                        .find(|l| &l.file == file && l.line == line && l.column == column)
                        .unwrap_or_else(|| Location::line(file.clone(), line, column, 1))
                });
                out.push(
                    Finding::new(
                        self.code(),
                        format!("dependsOn cycle {path}: none of these Kustomizations is ever applied"),
                        "remove the dependsOn that points back: the Kustomization that installs a thing is depended on, never the other way round",
                    )
                    .at(location)
                    .with_chain(&d.chain),
                );
            }
        }
    }
}
