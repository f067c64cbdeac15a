use crate::finding::{Finding, Location, Severity};
use crate::rule::{CheckContext, Rule};
use crate::rules::releases;
use plumb_flux::diagnostic::{Code, Diagnostic};

/// ## What it does
/// Finds HelmReleases and helmfile releases whose chart renders differently each time with
/// the same chart, values and cluster: `plumb build` renders every release twice and compares
/// the objects (hooks aside). The finding names the objects, and the fields, that changed.
///
/// ## Why is this bad?
/// A template that calls `randAlphaNum`, `genCA`, `uuidv4` or `now` produces a new password,
/// certificate or timestamp at every render. helm-controller renders again at every upgrade
/// and drift correction, so the release never settles: each reconciliation rotates the secret
/// (restarting what mounts it, logging out users) and every `plumb diff` shows a change nobody
/// made. A chart that guards the value with `lookup` is no help: `lookup` finds nothing when
/// rendering offline, as a dry-run or a `helm template` does.
///
/// ## Example
/// ```yaml
/// # charts/app/templates/secret.yaml
/// apiVersion: v1
/// kind: Secret
/// metadata:
///   name: app-admin
/// stringData:
///   password: {{ randAlphaNum 24 | quote }}
/// ```
///
/// Use instead:
/// ```yaml
/// # the value comes from values (a SOPS Secret through valuesFrom), or the Secret is made
/// # outside the chart (an ExternalSecret, a SOPS Secret)
/// stringData:
///   password: {{ required "adminPassword is required" .Values.adminPassword | quote }}
/// ```
pub struct NondeterministicRender;

impl Rule for NondeterministicRender {
    fn code(&self) -> &'static str {
        "DET001"
    }

    fn summary(&self) -> &'static str {
        "a release renders differently each time with the same inputs: it never converges"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        for entry in &cx.build.entries {
            for release in &entry.releases {
                let at = releases::helm_release(entry, release)
                    .and_then(|(_, hr)| hr.node_at(&["metadata", "name"]))
                    .and_then(|n| Location::of(n, cx.root));
                for d in nondeterministic(&release.diagnostics) {
                    out.push(self.finding(
                        format!("HelmRelease {}: {}", release.key(), d.message),
                        at.clone().or_else(|| line_of(d)),
                        d,
                    ));
                }
            }
            for (helmfile, release) in releases::bootstrap_releases(entry) {
                let at = helmfile
                    .origin
                    .as_ref()
                    .and_then(|o| o.get("name"))
                    .and_then(|n| Location::of(n, cx.root));
                for d in nondeterministic(&release.diagnostics) {
                    out.push(self.finding(d.message.clone(), at.clone().or_else(|| line_of(d)), d));
                }
            }
        }
    }
}

impl NondeterministicRender {
    fn finding(&self, message: String, at: Option<Location>, d: &Diagnostic) -> Finding {
        let help = d.help.clone().unwrap_or_else(|| {
            "take generated values out of the templates: set them in values".to_string()
        });
        Finding::new(self.code(), message, help)
            .severity(Severity::Warning)
            .at(at)
            .with_chain(&d.chain)
    }
}

fn nondeterministic(diagnostics: &[Diagnostic]) -> impl Iterator<Item = &Diagnostic> {
    diagnostics
        .iter()
        .filter(|d| d.code == Code::RenderNondeterministic)
}

/// Where the build's diagnostic points, when the release's own text is not found.
fn line_of(d: &Diagnostic) -> Option<Location> {
    let file = d.file.clone()?;
    let line = d.line? as usize;
    Some(Location::line(
        file,
        line,
        d.column.map_or(1, |c| c as usize).max(1),
        1,
    ))
}
