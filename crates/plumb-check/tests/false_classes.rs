//! The classes of false findings real repositories showed, each as a small repository that now
//! reports nothing, beside its twin with the real mistake, which reports exactly one finding.
//! Charts are rendered by a real helm (`PLUMB_HELM`), from chart directories of the
//! repository.

mod common;

use plumb_check::{CheckConfig, Finding, Report, Selection};
use std::path::{Path, PathBuf};

/// A repository under the tests' temporary directory: `clusters/dev` synced by the bootstrap
/// convention's `flux-system` Kustomization, this repository its source.
struct Repo {
    root: PathBuf,
}

impl Repo {
    fn new(name: &str) -> Repo {
        let repo = Repo::empty(name);
        repo.file(
            "clusters/dev/flux-system/gotk-sync.yaml",
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: flux-system, namespace: flux-system}\nspec:\n  interval: 1m\n  url: ssh://git@example.com/platform\n  ref: {branch: main}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: flux-system, namespace: flux-system}\nspec:\n  interval: 10m\n  path: ./clusters/dev\n  sourceRef: {kind: GitRepository, name: flux-system}\n",
        );
        repo
    }

    /// A repository with no file yet.
    fn empty(name: &str) -> Repo {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("false-{name}"));
        let _ = std::fs::remove_dir_all(&root);
        Repo { root }
    }

    fn file(&self, rel: &str, text: &str) -> &Repo {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self
    }

    /// A Flux Kustomization `name` of `./path` in `clusters/dev/ks-NAME.yaml`; `spec` is more of
    /// its spec, indented by two spaces.
    fn ks(&self, name: &str, path: &str, spec: &str) -> &Repo {
        self.file(
            &format!("clusters/dev/ks-{name}.yaml"),
            &format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: {name}, namespace: flux-system}}\nspec:\n  interval: 10m\n  path: ./{path}\n  prune: true\n  wait: true\n  sourceRef: {{kind: GitRepository, name: flux-system}}\n{spec}"),
        )
    }

    /// A chart directory `charts/NAME` whose `crds/` installs the `Widget` CRD
    /// (`widgets.example.com`).
    fn widget_chart(&self, name: &str) -> &Repo {
        self.file(
            &format!("charts/{name}/Chart.yaml"),
            &format!("apiVersion: v2\nname: {name}\nversion: 1.0.0\n"),
        )
        .file(
            &format!("charts/{name}/crds/widgets.yaml"),
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n",
        )
        .file(
            &format!("charts/{name}/templates/sa.yaml"),
            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: '{{ .Release.Name }}', namespace: '{{ .Release.Namespace }}'}\n",
        )
    }

    /// The `operators` Kustomization, whose HelmRelease `widgets/widget-operator` installs
    /// the Widget CRD from `charts/widget-operator`.
    fn operator(&self) -> &Repo {
        self.widget_chart("widget-operator").ks("operators", "operators", "").file(
            "operators/release.yaml",
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: widgets}\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: widget-operator, namespace: widgets}\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: ./charts/widget-operator\n      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}\n",
        )
    }

    /// `plumb check` of the repository: every finding, and the report's unchecked kinds.
    fn check(&self) -> (Vec<Finding>, Report) {
        let config = CheckConfig::load(&self.root).expect("the configuration loads");
        let build = plumb_flux::build::build_repository(&self.root, &common::options(&[]))
            .expect("the repository builds");
        let report = Report::run(&build, &config, &Selection::default());
        (report.findings.clone(), report)
    }

    fn findings(&self) -> Vec<Finding> {
        self.check().0
    }

    /// Asserts that the check reports nothing and that nothing went unchecked: the kinds were
    /// measured, not left to what was not seen.
    fn assert_clean_and_measured(&self) {
        let (found, report) = self.check();
        assert_eq!(codes(&found), Vec::<&str>::new());
        assert!(
            report.unchecked_kinds.is_empty(),
            "{:?}",
            report.unchecked_kinds
        );
    }
}

const WIDGET: &str =
    "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\n";

fn codes(found: &[Finding]) -> Vec<&str> {
    found.iter().map(|f| f.code).collect()
}

#[test]
fn crds_of_a_bootstrap_helmfile_release_exist_before_flux() {
    // The chart is installed by `helmfile sync` at bootstrap: no Kustomization needs a
    // dependsOn for its kinds.
    let repo = Repo::new("bootstrap-helmfile");
    repo.widget_chart("widget-operator")
        .file(
            "bootstrap/helmfile.yaml",
            "releases:\n  - name: widget-operator\n    namespace: widgets\n    chart: ../charts/widget-operator\n",
        )
        .ks("apps", "apps", "")
        .file("apps/widget.yaml", WIDGET);
    // Measured, not unseen: the helmfile release was rendered and its CRD is known.
    repo.assert_clean_and_measured();

    // Its twin: the chart only in a Flux HelmRelease the apps do not dependsOn.
    let twin = Repo::new("bootstrap-helmfile-twin");
    twin.operator()
        .ks("apps", "apps", "")
        .file("apps/widget.yaml", WIDGET);
    let found = twin.findings();
    assert_eq!(codes(&found), ["ORD002"], "{found:#?}");
    assert!(
        found[0]
            .help
            .contains("add `{name: operators, namespace: flux-system}` to `spec.dependsOn`"),
        "{}",
        found[0].help
    );
}

#[test]
fn a_templated_bootstrap_release_is_the_helm_release_flux_adopts() {
    // onedr0p's layout: the helmfile reads chart and values from the HelmRelease (templating
    // plumb does not evaluate); its release is the one the Flux HelmRelease of the same name
    // and namespace adopts, so its chart installs what that one's render installs.
    let repo = Repo::new("bootstrap-adopted");
    repo.operator()
        .file(
            "bootstrap/helmfile/crds.yaml",
            "helmDefaults:\n  args: [--include-crds, --no-hooks]\nreleases:\n  - name: widget-operator\n    namespace: widgets\n    chart: '{{ .Values.chart }}'\n",
        )
        .ks("apps", "apps", "")
        .file("apps/widget.yaml", WIDGET);
    repo.assert_clean_and_measured();
}

#[test]
fn a_rendered_chart_provides_its_crds_to_the_kustomizations_that_depend_on_it() {
    let repo = Repo::new("chart-crd");
    repo.operator()
        .ks("apps", "apps", "  dependsOn: [{name: operators}]\n")
        .file("apps/widget.yaml", WIDGET);
    assert_eq!(codes(&repo.findings()), Vec::<&str>::new());

    // A Kustomization that waits for one that already applies a kind of the same chart
    // waits for the chart's CRDs too.
    let witnessed = Repo::new("chart-crd-witnessed");
    witnessed
        .operator()
        .ks("stores", "stores", "  dependsOn: [{name: operators}]\n")
        .file(
            "stores/widget.yaml",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: store, namespace: default}\n",
        )
        .ks("apps", "apps", "  dependsOn: [{name: stores}]\n")
        .file("apps/widget.yaml", WIDGET);
    assert_eq!(codes(&witnessed.findings()), Vec::<&str>::new());

    // The same kind beside the HelmRelease: ORD003, once.
    let same = Repo::new("chart-crd-same");
    same.operator().file("operators/widget.yaml", WIDGET).file(
        "operators/kustomization.yaml",
        "resources: [release.yaml, widget.yaml]\n",
    );
    assert_eq!(codes(&same.findings()), ["ORD003"]);
}

#[test]
fn a_component_of_five_kustomizations_is_one_finding() {
    let build = |name: &str, depends: bool| {
        let repo = Repo::new(name);
        repo.operator().file(
            "components/widget/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [widget.yaml]\n",
        );
        repo.file("components/widget/widget.yaml", WIDGET);
        for n in 1..=5 {
            let spec = format!(
                "  targetNamespace: app{n}\n  components: [../components/widget]\n{}",
                if depends {
                    "  dependsOn: [{name: operators}]\n"
                } else {
                    ""
                }
            );
            repo.ks(&format!("app{n}"), &format!("app{n}"), &spec).file(
                &format!("app{n}/configmap.yaml"),
                &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: app{n}}}\n"),
            );
        }
        repo
    };
    assert_eq!(
        codes(&build("component-good", true).findings()),
        Vec::<&str>::new()
    );
    let found = build("component-bad", false).findings();
    assert_eq!(codes(&found), ["ORD002"], "{found:#?}");
    let f = &found[0];
    assert_eq!(
        f.location.as_ref().map(|l| l.file.clone()),
        Some(PathBuf::from("components/widget/widget.yaml"))
    );
    let mut all: Vec<&str> = std::iter::once(&f.chain)
        .chain(&f.also_in)
        .map(|c| c.last().unwrap().as_str())
        .collect();
    all.sort();
    assert_eq!(
        all,
        [
            "flux-system/app1",
            "flux-system/app2",
            "flux-system/app3",
            "flux-system/app4",
            "flux-system/app5"
        ]
    );
}

#[test]
fn secret_manager_references_are_not_plaintext() {
    let secret = |value: &str| {
        format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: token, namespace: default}}\nstringData:\n  token: |-\n    {value}\n")
    };
    let repo = Repo::new("op-refs");
    repo.ks("apps", "apps", "").file(
        "apps/secret.yaml",
        &secret("op://kubernetes/1password/OP_CONNECT_TOKEN"),
    );
    assert_eq!(codes(&repo.findings()), Vec::<&str>::new());
    let twin = Repo::new("op-refs-twin");
    twin.ks("apps", "apps", "")
        .file("apps/secret.yaml", &secret("hunter2-but-longer"));
    assert_eq!(codes(&twin.findings()), ["SEC001"]);
}

#[test]
fn kinds_the_distribution_serves_need_no_crd() {
    let sa = "apiVersion: talos.dev/v1alpha1\nkind: ServiceAccount\nmetadata: {name: talos, namespace: default}\nspec:\n  roles: [os:reader]\n";
    let repo = Repo::new("distribution");
    repo.ks("apps", "apps", "")
        .file("apps/talos.yaml", sa)
        .file(".plumb.yaml", "distribution: talos\n");
    repo.assert_clean_and_measured();

    // Not configured: not reported, and the summary says why.
    std::fs::remove_file(repo.root.join(".plumb.yaml")).unwrap();
    let (found, report) = repo.check();
    assert_eq!(codes(&found), Vec::<&str>::new());
    assert_eq!(report.unchecked_kinds, ["talos.dev/ServiceAccount"]);
    assert!(
        report.unchecked_because[0].contains("set `distribution: talos`"),
        "{:?}",
        report.unchecked_because
    );

    // Another distribution: nothing serves it.
    repo.file(".plumb.yaml", "distribution: k3s\n");
    assert_eq!(codes(&repo.findings()), ["ORD001"]);
}

#[test]
fn a_kustomizations_own_patches_are_substituted_by_its_own_post_build() {
    let patches = "  patches:\n    - patch: |-\n        apiVersion: kustomize.toolkit.fluxcd.io/v1\n        kind: Kustomization\n        metadata: {name: _}\n        spec:\n          postBuild:\n            substitute:\n              CLUSTER: ${CLUSTER}\n      target: {kind: Kustomization}\n";
    let child = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: child, namespace: flux-system}\nspec:\n  interval: 10m\n  path: ./child\n  sourceRef: {kind: GitRepository, name: flux-system}\n";
    let repo = Repo::new("own-patches");
    repo.ks(
        "apps",
        "apps",
        &format!("  postBuild:\n    substitute:\n      CLUSTER: dev\n{patches}"),
    )
    .file("apps/child.yaml", child)
    .file(
        "child/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default}\ndata:\n  cluster: ${CLUSTER}\n",
    );
    assert_eq!(codes(&repo.findings()), Vec::<&str>::new());

    // Without the postBuild, the patch's `${CLUSTER}` reaches the children as literal text.
    let twin = Repo::new("own-patches-twin");
    twin.ks("apps", "apps", patches)
        .file("apps/child.yaml", child)
        .file(
            "child/configmap.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default}\n",
        );
    let found = twin.findings();
    assert_eq!(codes(&found), ["SUB001"], "{found:#?}");
    // At the patch text as written in the Kustomization, where the mistake is.
    let l = found[0].location.as_ref().unwrap();
    assert_eq!(
        (l.file.as_path(), l.line),
        (Path::new("clusters/dev/ks-apps.yaml"), 18)
    );
}

#[test]
fn a_secret_applied_at_bootstrap_exists() {
    let spec = "  postBuild:\n    substituteFrom:\n      - {kind: Secret, name: cluster-secrets}\n";
    let app = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: default}\ndata:\n  domain: ${DOMAIN}\n";
    let repo = Repo::new("bootstrap-secret");
    repo.ks("apps", "apps", spec).file("apps/app.yaml", app).file(
        "bootstrap/secrets.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: cluster-secrets, namespace: flux-system}\nstringData:\n  DOMAIN: op://kubernetes/cluster/DOMAIN\n",
    );
    assert_eq!(codes(&repo.findings()), Vec::<&str>::new());

    let twin = Repo::new("bootstrap-secret-twin");
    twin.ks("apps", "apps", spec).file("apps/app.yaml", app);
    assert_eq!(codes(&twin.findings()), ["SUB004"]);
}

#[test]
fn a_secret_a_script_applies_is_not_known_missing() {
    // wahooli/gitops-repo: scripts/bootstrap-flux.sh applies local-clusters/<cluster>/bootstrap,
    // a directory no Kustomization builds, which holds the Secret the apps substitute from.
    let spec = "  postBuild:\n    substituteFrom:\n      - {kind: Secret, name: cluster-vars}\n";
    let app = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: default}\ndata:\n  domain: ${DOMAIN}\n";
    let secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: cluster-vars, namespace: flux-system}\nstringData:\n  DOMAIN: ${DOMAIN_FROM_SCRIPT}\n";
    let repo = Repo::new("script-secret");
    repo.ks("apps", "apps", spec)
        .file("apps/app.yaml", app)
        .file("local-clusters/dev/bootstrap/secrets/vars.yaml", secret);
    assert_eq!(codes(&repo.findings()), Vec::<&str>::new());
    // Its twin: the Secret is in another namespace, so this one is still missing.
    let twin = Repo::new("script-secret-twin");
    twin.ks("apps", "apps", spec)
        .file("apps/app.yaml", app)
        .file(
            "local-clusters/dev/bootstrap/secrets/vars.yaml",
            &secret.replace("namespace: flux-system", "namespace: other"),
        );
    assert_eq!(codes(&twin.findings()), ["SUB004"]);
}

#[test]
fn crds_a_chart_controller_creates_come_from_its_release() {
    // cilium's layout: no CRD in the chart; the operator creates them when it starts, and
    // its ClusterRole names them.
    let build = |name: &str, depends: bool| {
        let repo = Repo::new(name);
        repo.file(
            "charts/net/Chart.yaml",
            "apiVersion: v2\nname: net\nversion: 1.0.0\n",
        )
        .file(
            "charts/net/templates/clusterrole.yaml",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: net-operator}\nrules:\n  - apiGroups: [apiextensions.k8s.io]\n    resources: [customresourcedefinitions]\n    verbs: [create, get, list, watch]\n  - apiGroups: [apiextensions.k8s.io]\n    resources: [customresourcedefinitions]\n    verbs: [update]\n    resourceNames: [widgets.example.com, widgetpolicies.example.com]\n",
        )
        .ks("network", "network", "")
        .file(
            "network/release.yaml",
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: net, namespace: kube-system}\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: ./charts/net\n      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}\n",
        )
        .ks(
            "apps",
            "apps",
            if depends {
                "  dependsOn: [{name: network}]\n"
            } else {
                ""
            },
        )
        .file(
            "apps/policy.yaml",
            "apiVersion: example.com/v1\nkind: WidgetPolicy\nmetadata: {name: p, namespace: default}\n",
        );
        repo
    };
    assert_eq!(
        codes(&build("runtime-crd", true).findings()),
        Vec::<&str>::new()
    );
    let found = build("runtime-crd-twin", false).findings();
    assert_eq!(codes(&found), ["ORD002"], "{found:#?}");
    // A kind the controller does not name is still nobody's.
    let other = build("runtime-crd-other", true);
    other.file(
        "apps/gadget.yaml",
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g, namespace: default}\n",
    );
    assert_eq!(codes(&other.findings()), ["ORD001"]);
}

#[test]
fn names_post_build_could_not_substitute_are_no_objects() {
    // budimanjojo/home-cluster: a component named `${APP}-postgres-db`, substituted per app by
    // each parent; a variable no parent sets fails both, and Flux applies neither.
    let build = |name: &str, first: &str, second: &str, data: &str| {
        let repo = Repo::new(name);
        for (ks, app) in [("first", first), ("second", second)] {
            repo.ks(
                ks,
                "database",
                &format!("  postBuild:\n    substitute: {{APP: {app}}}\n"),
            );
        }
        repo.file(
            "database/cm.yaml",
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: '${{APP}}-db', namespace: default}}\ndata: {{extensions: '{data}'}}\n"),
        );
        repo
    };
    let failing = codes(&build("post-build-fails", "one", "two", "${EXTENSIONS}").findings())
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
    assert!(!failing.iter().any(|c| c == "OWN001"), "{failing:?}");
    assert!(failing.iter().any(|c| c == "SUB001"), "{failing:?}");
    // Its twin: both substitute, to the same name.
    assert_eq!(
        codes(&build("post-build-fails-twin", "one", "one", "none").findings()),
        ["OWN001"]
    );
}

#[test]
fn kustomizations_that_apply_to_other_clusters_are_not_two_writers() {
    // A hub's Kustomizations with `kubeConfig` each write to their own cluster.
    let build = |name: &str, second: &str| {
        let repo = Repo::new(name);
        for (ks, secret) in [("staging", "staging-kubeconfig"), ("production", second)] {
            repo.ks(
                ks,
                "tenants",
                &format!("  kubeConfig:\n    secretRef: {{name: {secret}}}\n"),
            );
        }
        repo.file(
            "tenants/namespace.yaml",
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: podinfo}\n",
        );
        repo
    };
    assert_eq!(
        codes(&build("kubeconfig", "production-kubeconfig").findings()),
        Vec::<&str>::new()
    );
    assert_eq!(
        codes(&build("kubeconfig-twin", "staging-kubeconfig").findings()),
        ["OWN001"]
    );
}

#[test]
fn a_helmfile_rendered_for_its_crds_installs_no_release_to_adopt() {
    // ahinko's `00-crds.yaml`: `--include-crds` is a flag of `helm template` only, so the file
    // is rendered for its CRDs and piped to kubectl; the Flux HelmRelease of the same name
    // installs the release itself, with its own values.
    let build = |name: &str, args: &str| {
        let repo = Repo::new(name);
        repo.operator()
            .file(
                "charts/widget-operator/templates/config.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: widget-config}\ndata:\n  mode: '{{ .Values.mode | default \"normal\" }}'\n",
            )
            .file(
                "bootstrap/helmfile.d/00-crds.yaml",
                &format!("{args}releases:\n  - name: widget-operator\n    namespace: widgets\n    chart: ../../charts/widget-operator\n    values: [{{mode: bootstrap}}]\n"),
            );
        repo
    };
    let crds = build(
        "crds-helmfile",
        "helmDefaults:\n  args: [--include-crds, --no-hooks]\n",
    );
    assert_eq!(codes(&crds.findings()), Vec::<&str>::new());
    // Synced at bootstrap with other values: adopting it changes what bootstrap installed.
    let synced = build("crds-helmfile-twin", "");
    assert_eq!(codes(&synced.findings()), ["OWN002"]);
}

#[test]
fn a_variable_left_in_a_path_is_one_finding() {
    // flux-system has no postBuild: the child's path keeps `${MODE:=a}` and its build fails.
    // That is BLD001's, not also SUB001's at the same text.
    let repo = Repo::new("variable-in-path");
    repo.ks("app", "app-${MODE:=a}", "").file(
        "app-a/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: default}\n",
    );
    let found = repo.findings();
    assert_eq!(codes(&found), ["BLD001"], "{found:#?}");
    assert!(found[0].message.contains("app-${MODE:=a}"), "{found:#?}");
}

#[test]
fn a_missing_depends_on_is_one_finding_however_many_objects_need_it() {
    // damacus/home-ops: two DNSEndpoints in two files of one Kustomization that does not
    // dependsOn the one defining their CRD. One dependsOn fixes both.
    let repo = Repo::new("missing-depends-on");
    repo.operator()
        .ks("app", "app", "")
        .file("app/a.yaml", WIDGET)
        .file("app/b.yaml", &WIDGET.replace("name: w,", "name: w2,"));
    let found = repo.findings();
    assert_eq!(codes(&found), ["ORD002"], "{found:#?}");
    assert!(
        found[0]
            .message
            .ends_with("(1 more `Widget` object of it: the same dependsOn)"),
        "{}",
        found[0].message
    );
}

/// gavinmcfall/home-ops, moving from `flux bootstrap` to flux-operator: the bootstrap
/// Kustomization `cluster` (path `kubernetes/flux`, which has no kustomization.yaml) applies
/// the HelmRepositories and `kubernetes/flux/cluster`, the directory the flux-instance chart's
/// sync names too. One cluster: built as two, the sync's had no HelmRepository and each
/// HelmRelease read as never installed (140 REF001 there).
fn migrating_repo(name: &str, repositories: bool) -> Repo {
    let repo = Repo::empty(name);
    repo.file(
        "kubernetes/flux/config/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [./cluster.yaml]\n",
    )
    .file(
        "kubernetes/flux/config/cluster.yaml",
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: flux-system, namespace: flux-system}\nspec:\n  interval: 30m\n  url: https://example.com/home-ops.git\n  ref: {branch: main}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: cluster, namespace: flux-system}\nspec:\n  interval: 30m\n  path: ./kubernetes/flux\n  prune: true\n  sourceRef: {kind: GitRepository, name: flux-system}\n",
    )
    .file(
        "kubernetes/flux/cluster/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [./ks.yaml]\n",
    )
    .file(
        "kubernetes/flux/cluster/ks.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: cluster-apps, namespace: flux-system}\nspec:\n  interval: 30m\n  path: ./kubernetes/apps\n  prune: true\n  sourceRef: {kind: GitRepository, name: flux-system}\n",
    )
    .file(
        "kubernetes/apps/flux-instance.yaml",
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata: {name: flux-instance, namespace: flux-system}\nspec:\n  interval: 1h\n  url: oci://ghcr.io/controlplaneio-fluxcd/charts/flux-instance\n  ref: {tag: 0.56.0}\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: flux-instance, namespace: flux-system}\nspec:\n  interval: 1h\n  chartRef: {kind: OCIRepository, name: flux-instance}\n  values:\n    instance:\n      sync:\n        kind: GitRepository\n        url: https://example.com/home-ops.git\n        ref: refs/heads/main\n        path: kubernetes/flux/cluster\n",
    )
    .file(
        "kubernetes/apps/podinfo.yaml",
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: podinfo, namespace: flux-system}\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: podinfo\n      version: 6.5.0\n      sourceRef: {kind: HelmRepository, name: podinfo}\n",
    );
    if repositories {
        repo.file(
            "kubernetes/flux/repositories/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [./podinfo.yaml]\n",
        )
        .file(
            "kubernetes/flux/repositories/podinfo.yaml",
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: podinfo, namespace: flux-system}\nspec:\n  interval: 1h\n  url: https://stefanprodan.github.io/podinfo\n",
        );
    }
    repo
}

#[test]
fn a_flux_instance_sync_another_entry_applies_is_part_of_its_cluster() {
    let repo = migrating_repo("migrating-to-operator", true);
    let build = plumb_flux::build::build_repository(&repo.root, &common::options(&[]))
        .expect("the repository builds");
    let entries: Vec<&str> = build.entries.iter().map(|e| e.entry.as_str()).collect();
    assert_eq!(entries, ["kubernetes/flux"]);
    let notes: Vec<String> = build.assumptions().iter().map(|a| a.message()).collect();
    assert!(
        notes.iter().any(|n| n.starts_with(
            "kubernetes/flux/cluster, which the sync of HelmRelease flux-system/flux-instance"
        ) && n
            .contains("Kustomization flux-system/cluster there applies that directory too")),
        "{notes:#?}"
    );
    let found = repo.findings();
    assert_eq!(codes(&found), Vec::<&str>::new(), "{found:#?}");

    // Its twin defines no HelmRepository: one finding, not one per cluster.
    let twin = migrating_repo("migrating-to-operator-twin", false);
    let found = twin.findings();
    assert_eq!(codes(&found), ["REF001"], "{found:#?}");

    // Named as entries, the two directories are the two clusters the user asked for.
    let named = plumb_flux::build::build_repository(
        &repo.root,
        &common::options(&["kubernetes/flux", "kubernetes/flux/cluster"]),
    )
    .expect("the repository builds");
    assert_eq!(named.entries.len(), 2);
}

/// gavinmcfall/home-ops: HelmReleases dependsOn `database/dragonfly-operator`, defined in a
/// Kustomization whose remote CRD could not be fetched. Not built, its objects are unknown:
/// whether the dependency exists is not known, so ORD005 says nothing (the summary counts the
/// Kustomization as not checked). A Kustomization whose targetNamespace is another namespace
/// cannot hold it: its twin is one finding.
#[test]
fn a_dependency_an_unbuilt_kustomization_may_hold_is_not_reported_missing() {
    let operator = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: dragonfly-operator}\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: ./charts/dragonfly\n      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}\n";
    let app = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: pelican, namespace: games}\nspec:\n  interval: 1h\n  dependsOn:\n    - {name: dragonfly-operator, namespace: database}\n  chart:\n    spec:\n      chart: ./charts/pelican\n      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}\n";
    let unbuilt = |name: &str, target: &str| {
        let repo = Repo::new(name);
        repo.widget_chart("dragonfly")
            .widget_chart("pelican")
            .ks("operator", "operator", &format!("  targetNamespace: {target}\n"))
            .file(
                "operator/kustomization.yaml",
                "resources:\n  - https://example.invalid/dragonfly/crd.yaml\n  - ./helmrelease.yaml\n",
            )
            .file("operator/helmrelease.yaml", operator)
            .ks("games", "games", "")
            .file("games/helmrelease.yaml", app);
        repo
    };
    let repo = unbuilt("unbuilt-dependency", "database");
    let found = repo.findings();
    assert_eq!(codes(&found), Vec::<&str>::new(), "{found:#?}");

    let twin = unbuilt("unbuilt-dependency-twin", "cache");
    let found = twin.findings();
    assert_eq!(codes(&found), ["ORD005"], "{found:#?}");
}

#[test]
fn a_placeholder_written_throughout_one_object_is_one_finding() {
    // gavinmcfall/home-ops: a registry file of one ConfigMap gives 21 items the sha256
    // `TBD-on-acquisition`: one decision to take, one finding.
    let repo = Repo::new("placeholder-repeated");
    repo.ks("app", "app", "").file(
        "app/registry.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: registry, namespace: default}\ndata:\n  registry.json: |\n    [{\"sha256\": \"TBD-on-acquisition\"},\n     {\"sha256\": \"TBD-on-acquisition\"},\n     {\"sha256\": \"TBD-on-acquisition\"}]\n  other: TBD-later\n",
    );
    let found = repo.findings();
    assert_eq!(codes(&found), ["SUB002", "SUB002"], "{found:#?}");
    assert_eq!(
        found[0].message,
        "placeholder `TBD-on-acquisition` reaches ConfigMap default/registry (written 2 more times in it)"
    );
    assert_eq!(
        found[1].message,
        "placeholder `TBD-later` reaches ConfigMap default/registry"
    );
}

#[test]
fn a_variable_in_a_schema_description_is_prose() {
    // justingarfield/home-ops commits Flux's gotk-components.yaml, whose Kustomization CRD
    // explains postBuild with `${var:=default}` in a description; nothing substitutes it there,
    // and nothing needs to.
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema:\n          type: object\n          properties:\n            spec:\n              type: object\n              description: substitutes variables such as ${var:=default}\n";
    let repo = Repo::new("description-prose");
    repo.ks("crds", "crds", "").file("crds/crd.yaml", crd);
    let found = repo.findings();
    assert_eq!(codes(&found), Vec::<&str>::new(), "{found:#?}");

    // Its twin writes the same text into a ConfigMap's value: that reaches the cluster.
    let twin = Repo::new("description-prose-twin");
    twin.ks("app", "app", "").file(
        "app/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: default}\ndata:\n  text: substitutes variables such as ${var:=default}\n",
    );
    let found = twin.findings();
    assert_eq!(codes(&found), ["SUB001"], "{found:#?}");
}

#[test]
fn what_a_cluster_applied_by_hand_hands_to_flux_has_one_writer() {
    // tvories/k8s-gitops: cluster `nas` syncs itself; `cluster-0` is applied once with
    // `kubectl apply -k`, its GitRepository then applied by its `repositories` Kustomization.
    let build = |name: &str, twice: bool| {
        let repo = Repo::empty(name);
        let git = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: k8s-gitops, namespace: flux-system}\nspec:\n  interval: 1m\n  url: https://github.com/example/k8s-gitops.git\n  ref: {branch: main}\n";
        let ks = |name: &str, path: &str| {
            format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: {name}, namespace: flux-system}}\nspec:\n  interval: 10m\n  path: ./{path}\n  prune: true\n  sourceRef: {{kind: GitRepository, name: k8s-gitops}}\n")
        };
        // A clone of that repository at main: the tests' directory may sit inside another
        // checkout, whose remote would say otherwise.
        repo.file(
            ".git/config",
            "[remote \"origin\"]\n\turl = https://github.com/example/k8s-gitops.git\n",
        )
        .file(".git/HEAD", "ref: refs/heads/main\n")
        .file("clusters/nas/flux/repo.yaml", git)
        .file(
            "clusters/nas/flux/cluster.yaml",
            &ks("cluster", "clusters/nas/flux"),
        )
        .file(
            "clusters/cluster-0/kustomization.yaml",
            "resources: [repositories, deploy.yaml]\n",
        )
        .file("clusters/cluster-0/repositories/k8s-gitops.yaml", git)
        .file(
            "clusters/cluster-0/repositories/kustomization.yaml",
            "resources: [k8s-gitops.yaml]\n",
        )
        .file(
            "clusters/cluster-0/deploy.yaml",
            &ks("deploy", "clusters/cluster-0/flux"),
        )
        .file(
            "clusters/cluster-0/flux/repositories.yaml",
            &ks("repositories", "clusters/cluster-0/repositories"),
        );
        if twice {
            repo.file(
                "clusters/cluster-0/flux/again.yaml",
                &ks("again", "clusters/cluster-0/repositories"),
            );
        }
        repo
    };
    assert_eq!(
        codes(&build("hand-applied", false).findings()),
        Vec::<&str>::new()
    );
    assert_eq!(
        codes(&build("hand-applied-twin", true).findings()),
        ["OWN001"]
    );
}

#[test]
fn a_script_that_nothing_substitutes_keeps_its_shell_variables() {
    // webgrip/homelab-cluster: "No postBuild.substituteFrom: the scripts contain shell ${vars}
    // Flux must not touch"; the CronJob gives SECRET_DOMAIN from a ConfigMap, and another
    // Kustomization of the cluster substitutes a variable of that name.
    let build = |name: &str, file: &str, text: &str| {
        let repo = Repo::new(name);
        repo.ks(
            "apps",
            "apps",
            "  postBuild:\n    substitute:\n      SECRET_DOMAIN: example.com\n",
        )
        .file(
            "apps/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\ndata:\n  host: app.${SECRET_DOMAIN}\n",
        )
        .ks("bootstrap", "bootstrap", "")
        .file(
            "bootstrap/kustomization.yaml",
            &format!("configMapGenerator:\n  - name: scripts\n    namespace: default\n    files: [{file}]\n"),
        )
        .file(&format!("bootstrap/{file}"), text);
        repo
    };
    let script = "#!/bin/sh\nif [ -n \"${SECRET_DOMAIN:-}\" ]; then\n  echo \"https://forgejo.${SECRET_DOMAIN}/api\"\nfi\n";
    assert_eq!(
        codes(&build("script-shell-vars", "config.sh", script).findings()),
        Vec::<&str>::new()
    );
    // The same name in a value that is no script was meant for Flux.
    assert_eq!(
        codes(
            &build(
                "script-shell-vars-twin",
                "url.txt",
                "https://forgejo.${SECRET_DOMAIN}/api\n"
            )
            .findings()
        ),
        ["SUB001"]
    );
}
