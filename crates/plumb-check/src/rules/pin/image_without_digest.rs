//! PIN001: container images referenced by a tag alone.

use super::images::{object_images, origin_at, value_images, Step, Unpinned};
use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};
use plumb_flux::build::KustomizationBuild;
use plumb_flux::helm_release::ReleaseBuild;
use plumb_flux::model::{Object, HELM_GROUP};
use std::collections::HashSet;
use std::path::Path;

/// ## What it does
/// Finds container images referenced by a tag without a digest, every place one is written:
/// in the `containers`, `initContainers` and `ephemeralContainers` of every workload (a Pod,
/// anything with a pod template such as Deployments, StatefulSets, DaemonSets, ReplicaSets and
/// Jobs, and the job template of a CronJob); in custom resources, in their container lists and
/// in fields named `image` or `imageName` that hold an image reference (a CloudNativePG
/// `Cluster`'s `imageName`); in a HelmRelease's `values` wherever a field is plainly an image
/// (`image: repository:tag`, or a `repository` next to a `tag`); and in what a HelmRelease's
/// chart renders.
///
/// The image is judged as the cluster receives it, after the Kustomization's `images:`,
/// patches and substitution; the finding points at the text that wrote it: the base, the
/// patch or the component that set it. An image a chart renders points at the HelmRelease
/// value that set it, or, when the chart's own defaults chose it, at the HelmRelease's chart.
///
/// ## Why is this bad?
/// A tag is a name the registry's owner can point at other content at any time. Two nodes
/// pulling `podinfo:6.8.0` a week apart may run different code, a rollback to a tag does not
/// restore what ran before, and a compromised registry account can ship into the cluster
/// without a single commit to this repository. An image without any tag is `:latest`, which
/// moves on every release. Only a digest names the bytes that were reviewed.
///
/// ## Example
/// ```yaml
/// containers:
///   - name: podinfo
///     image: ghcr.io/stefanprodan/podinfo:6.8.0
/// ```
///
/// Use instead:
/// ```yaml
/// containers:
///   - name: podinfo
///     # the tag stays for people; the digest is what the node pulls
///     image: ghcr.io/stefanprodan/podinfo:6.8.0@sha256:369679b046b90a908e16c44449046e98d4821a20fe5ca1b989b96a2a0d8d8d75
/// ```
///
/// In HelmRelease values, put the digest in the tag (`tag: 6.8.0@sha256:...`) or in the chart's
/// `digest` field when it has one; an image that comes from a chart's defaults is pinned the
/// same way, by setting the value the chart reads it from.
pub struct ImageWithoutDigest;

impl Rule for ImageWithoutDigest {
    fn code(&self) -> &'static str {
        "PIN001"
    }

    fn summary(&self) -> &'static str {
        "a container image referenced by tag only, not by digest"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        // One finding per written image per chain: a base or component that several
        // Kustomizations build is one occurrence in each, and the same chain in two entries
        // (clusters sharing a tree) is reported once.
        let mut seen = HashSet::new();
        for entry in &cx.build.entries {
            for k in &entry.kustomizations {
                let releases = entry.releases.iter().filter(|r| r.kustomization == k.key());
                for finding in kustomization_findings(k, releases, cx.root) {
                    let key = (
                        finding.location.clone(),
                        finding.message.clone(),
                        finding.chain.clone(),
                    );
                    if seen.insert(key) {
                        out.push(finding);
                    }
                }
            }
        }
    }
}

/// What wrote an unpinned image.
enum Writer {
    /// The repository's text, in the object it names as written there.
    Written { object: String },
    /// The defaults of the chart a HelmRelease renders.
    ChartDefaults {
        release: String,
        chart: String,
        values_from: bool,
    },
}

/// One unpinned image at one place.
struct Occurrence {
    location: Option<Location>,
    reference: String,
    implicit_latest: bool,
    writer: Writer,
}

/// The findings of one Kustomization: its objects' images, then what its HelmReleases render.
fn kustomization_findings<'a>(
    k: &KustomizationBuild,
    releases: impl Iterator<Item = &'a ReleaseBuild>,
    root: &Path,
) -> Vec<Finding> {
    let mut found: Vec<Occurrence> = Vec::new();
    for object in &k.objects {
        let mut images = object_images(object);
        if object.is(HELM_GROUP, "HelmRelease") {
            if let Some(values) = object.value.pointer("/spec/values") {
                let mut path = vec![Step::Key("spec"), Step::Key("values")];
                value_images(values, &mut path, &mut images);
            }
        }
        for image in images {
            add(&mut found, written(object, image, root), false);
        }
    }
    for release in releases {
        if release.status != plumb_flux::build::Status::Built {
            continue;
        }
        let Some(hr) = k.objects.iter().find(|o| {
            o.is(HELM_GROUP, "HelmRelease")
                && o.name() == release.name
                && o.namespace_or_default() == release.namespace
        }) else {
            continue;
        };
        for rendered in &release.objects {
            for image in object_images(rendered) {
                add(
                    &mut found,
                    rendered_occurrence(hr, release, image, root),
                    true,
                );
            }
        }
    }
    let fallback = k
        .kustomization
        .object
        .node_at(&["spec", "path"])
        .and_then(|n| Location::of(n, root));
    found
        .into_iter()
        .map(|o| {
            finding(&o)
                .at(o.location.or_else(|| fallback.clone()))
                .with_chain(&k.chain)
        })
        .collect()
}

/// Adds an occurrence unless its place already has the same image. A rendered image that
/// the values set is the values' finding, told with the reference the chart made of them
/// (`docker.io/bitnami/redis:7.4.2` where the values say `bitnami/redis` and `7.4.2`).
fn add(found: &mut Vec<Occurrence>, occurrence: Occurrence, rendered: bool) {
    let at_values = rendered && matches!(occurrence.writer, Writer::Written { .. });
    if at_values && occurrence.location.is_some() {
        if let Some(o) = found.iter_mut().find(|o| {
            o.location == occurrence.location && matches!(o.writer, Writer::Written { .. })
        }) {
            o.reference = occurrence.reference;
            o.implicit_latest = occurrence.implicit_latest;
            return;
        }
    }
    if !found
        .iter()
        .any(|o| o.location == occurrence.location && o.reference == occurrence.reference)
    {
        found.push(occurrence);
    }
}

fn written(object: &Object, image: Unpinned<'_>, root: &Path) -> Occurrence {
    Occurrence {
        location: origin_at(object, &image.path).and_then(|n| Location::of(n, root)),
        reference: image.reference,
        implicit_latest: image.implicit_latest,
        writer: Writer::Written {
            object: written_identity(object),
        },
    }
}

/// An image a release rendered: at the values that set it, else at the HelmRelease's chart.
fn rendered_occurrence(
    hr: &Object,
    release: &ReleaseBuild,
    image: Unpinned<'_>,
    root: &Path,
) -> Occurrence {
    let values_path = hr
        .value
        .pointer("/spec/values")
        .and_then(|values| super::chart_images::values_path_of(values, &image.reference));
    if let Some(path) = values_path {
        return Occurrence {
            location: origin_at(hr, &path).and_then(|n| Location::of(n, root)),
            reference: image.reference,
            implicit_latest: image.implicit_latest,
            writer: Writer::Written {
                object: written_identity(hr),
            },
        };
    }
    let chart_path: &[Step<'_>] = if hr.value.pointer("/spec/chart").is_some() {
        &[
            Step::Key("spec"),
            Step::Key("chart"),
            Step::Key("spec"),
            Step::Key("chart"),
        ]
    } else {
        &[Step::Key("spec"), Step::Key("chartRef"), Step::Key("name")]
    };
    Occurrence {
        location: origin_at(hr, chart_path).and_then(|n| Location::of(n, root)),
        reference: image.reference,
        implicit_latest: image.implicit_latest,
        writer: Writer::ChartDefaults {
            release: written_identity(hr),
            chart: chart_label(hr, release),
            values_from: hr
                .value
                .pointer("/spec/valuesFrom")
                .and_then(|v| v.as_array())
                .is_some_and(|v| !v.is_empty()),
        },
    }
}

/// `chart podinfo 6.8.0`: the chart the release rendered, or the one its HelmRelease names.
fn chart_label(hr: &Object, release: &ReleaseBuild) -> String {
    if let Some(chart) = &release.chart {
        return format!("chart `{}` {}", chart.name, chart.version);
    }
    let name = hr
        .str_at(&["spec", "chart", "spec", "chart"])
        .or_else(|| hr.str_at(&["spec", "chartRef", "name"]))
        .unwrap_or("");
    format!("chart `{name}`")
}

/// `Deployment podinfo`, or `Deployment apps/podinfo` when the file writes the namespace: the
/// object as its file writes it, the same whichever Kustomization (namespace, name prefix)
/// built it.
fn written_identity(object: &Object) -> String {
    let as_written = |path: &[&str]| {
        let node = object.origin.as_deref()?.get_path(path)?;
        let text = node.span.as_ref()?.text().lines().next()?.trim();
        let text = text
            .strip_prefix(['"', '\''])
            .and_then(|t| t.strip_suffix(['"', '\'']))
            .unwrap_or(text);
        (!text.is_empty()).then(|| text.to_string())
    };
    let name = as_written(&["metadata", "name"]).unwrap_or_else(|| object.name().to_string());
    match as_written(&["metadata", "namespace"]) {
        Some(namespace) => format!("{} {namespace}/{name}", object.kind()),
        None => format!("{} {name}", object.kind()),
    }
}

fn finding(o: &Occurrence) -> Finding {
    let reference = &o.reference;
    let shown = if o.implicit_latest {
        format!("{reference}:<version>")
    } else {
        reference.to_string()
    };
    let moves = if o.implicit_latest {
        "has neither tag nor digest: it is `:latest`, whatever that is when a node pulls it"
    } else {
        "is referenced by its tag only: the registry can move the tag to other content"
    };
    let inspect =
        format!("(`crane digest {shown}` or `docker buildx imagetools inspect {shown}` prints it)");
    match &o.writer {
        Writer::Written { object } => Finding::new(
            "PIN001",
            format!("image `{reference}` of {object} {moves}"),
            format!("pin the digest: `{shown}@sha256:<digest>` {inspect}"),
        ),
        Writer::ChartDefaults {
            release,
            chart,
            values_from,
        } => {
            let from = if *values_from {
                "the chart's defaults or the HelmRelease's valuesFrom"
            } else {
                "the chart's defaults"
            };
            Finding::new(
                "PIN001",
                format!("image `{reference}`, rendered by {chart} for {release}, comes from {from} and {moves}"),
                format!("pin it through the HelmRelease's values: set the value the chart builds this image from (often `image.tag`, or `image.digest` where the chart has one) so that it renders `{shown}@sha256:<digest>` {inspect}"),
            )
        }
    }
}
