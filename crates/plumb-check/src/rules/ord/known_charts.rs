//! Helm charts known to install CRDs, and which kinds. plumb does not render charts, so this
//! table is how ORD001–ORD003 know that a HelmRelease brings a kind.
//!
//! Each entry lists the CRDs the chart ships (in `crds/` or as templates) in its releases of
//! 2025; cilium's are registered by the operator the chart starts, which comes to the same:
//! they exist once the HelmRelease is ready, never at the dry-run of the Kustomization that
//! holds it.

use plumb_flux::build::EntryBuild;
use plumb_flux::model::{HelmRelease, Object};

type Kinds = &'static [(&'static str, &'static [&'static str])];

const PROMETHEUS_OPERATOR: Kinds = &[(
    "monitoring.coreos.com",
    &[
        "Alertmanager",
        "AlertmanagerConfig",
        "PodMonitor",
        "Probe",
        "Prometheus",
        "PrometheusAgent",
        "PrometheusRule",
        "ScrapeConfig",
        "ServiceMonitor",
        "ThanosRuler",
    ],
)];

/// Chart name → the kinds whose CRDs it installs, by group.
const CHARTS: &[(&str, Kinds)] = &[
    (
        "cert-manager",
        &[
            (
                "cert-manager.io",
                &[
                    "Certificate",
                    "CertificateRequest",
                    "ClusterIssuer",
                    "Issuer",
                ],
            ),
            ("acme.cert-manager.io", &["Challenge", "Order"]),
        ],
    ),
    (
        "cilium",
        &[(
            "cilium.io",
            &[
                "CiliumBGPAdvertisement",
                "CiliumBGPClusterConfig",
                "CiliumBGPNodeConfigOverride",
                "CiliumBGPPeerConfig",
                "CiliumBGPPeeringPolicy",
                "CiliumCIDRGroup",
                "CiliumClusterwideEnvoyConfig",
                "CiliumClusterwideNetworkPolicy",
                "CiliumEgressGatewayPolicy",
                "CiliumEnvoyConfig",
                "CiliumL2AnnouncementPolicy",
                "CiliumLoadBalancerIPPool",
                "CiliumLocalRedirectPolicy",
                "CiliumNetworkPolicy",
                "CiliumNodeConfig",
                "CiliumPodIPPool",
            ],
        )],
    ),
    (
        "gateway-helm",
        &[
            (
                "gateway.networking.k8s.io",
                &[
                    "BackendTLSPolicy",
                    "GRPCRoute",
                    "Gateway",
                    "GatewayClass",
                    "HTTPRoute",
                    "ReferenceGrant",
                    "TCPRoute",
                    "TLSRoute",
                    "UDPRoute",
                ],
            ),
            (
                "gateway.envoyproxy.io",
                &[
                    "Backend",
                    "BackendTrafficPolicy",
                    "ClientTrafficPolicy",
                    "EnvoyExtensionPolicy",
                    "EnvoyPatchPolicy",
                    "EnvoyProxy",
                    "HTTPRouteFilter",
                    "SecurityPolicy",
                ],
            ),
        ],
    ),
    ("kube-prometheus-stack", PROMETHEUS_OPERATOR),
    ("prometheus-operator-crds", PROMETHEUS_OPERATOR),
    (
        "external-secrets",
        &[(
            "external-secrets.io",
            &[
                "ClusterExternalSecret",
                "ClusterSecretStore",
                "ExternalSecret",
                "PushSecret",
                "SecretStore",
            ],
        )],
    ),
    (
        "traefik",
        &[(
            "traefik.io",
            &[
                "IngressRoute",
                "IngressRouteTCP",
                "IngressRouteUDP",
                "Middleware",
                "MiddlewareTCP",
                "ServersTransport",
                "ServersTransportTCP",
                "TLSOption",
                "TLSStore",
                "TraefikService",
            ],
        )],
    ),
    (
        "metallb",
        &[(
            "metallb.io",
            &[
                "BFDProfile",
                "BGPAdvertisement",
                "BGPPeer",
                "Community",
                "IPAddressPool",
                "L2Advertisement",
            ],
        )],
    ),
    ("sealed-secrets", &[("bitnami.com", &["SealedSecret"])]),
    (
        "kyverno",
        &[(
            "kyverno.io",
            &[
                "CleanupPolicy",
                "ClusterCleanupPolicy",
                "ClusterPolicy",
                "Policy",
                "PolicyException",
            ],
        )],
    ),
    (
        "cloudnative-pg",
        &[(
            "postgresql.cnpg.io",
            &["Backup", "Cluster", "Database", "Pooler", "ScheduledBackup"],
        )],
    ),
    (
        "keda",
        &[(
            "keda.sh",
            &[
                "ClusterTriggerAuthentication",
                "ScaledJob",
                "ScaledObject",
                "TriggerAuthentication",
            ],
        )],
    ),
    (
        "velero",
        &[(
            "velero.io",
            &[
                "Backup",
                "BackupStorageLocation",
                "Restore",
                "Schedule",
                "VolumeSnapshotLocation",
            ],
        )],
    ),
    (
        "snapshot-controller",
        &[(
            "snapshot.storage.k8s.io",
            &[
                "VolumeSnapshot",
                "VolumeSnapshotClass",
                "VolumeSnapshotContent",
            ],
        )],
    ),
    ("trust-manager", &[("trust.cert-manager.io", &["Bundle"])]),
];

/// Whether the HelmRelease `object` installs the CRD of `group`/`kind`: its chart is in the
/// table and it does not skip CRDs (`install.crds: Skip`).
pub(crate) fn installs(entry: &EntryBuild, object: &Object, group: &str, kind: &str) -> bool {
    if object.str_at(&["spec", "install", "crds"]) == Some("Skip") {
        return false;
    }
    let Some(chart) = chart_name(entry, object) else {
        return false;
    };
    chart_installs(&chart, group, kind)
}

/// Whether the table lists the chart of the HelmRelease `object`: then what it installs is
/// known without rendering it.
pub(crate) fn knows(entry: &EntryBuild, object: &Object) -> bool {
    chart_name(entry, object).is_some_and(|chart| knows_chart(&chart))
}

/// Whether the table lists the chart named `chart`.
pub(crate) fn knows_chart(chart: &str) -> bool {
    CHARTS.iter().any(|(name, _)| *name == chart)
}

/// Whether the chart named `chart` is in the table with the CRD of `group`/`kind`.
pub(crate) fn chart_installs(chart: &str, group: &str, kind: &str) -> bool {
    CHARTS
        .iter()
        .filter(|(name, _)| *name == chart)
        .flat_map(|(_, kinds)| kinds.iter())
        .any(|(g, kinds)| *g == group && kinds.contains(&kind))
}

/// The chart's name: `spec.chart.spec.chart`, or the last path segment of the OCIRepository a
/// `chartRef` names (`oci://quay.io/jetstack/charts/cert-manager` → `cert-manager`).
fn chart_name(entry: &EntryBuild, object: &Object) -> Option<String> {
    let hr = HelmRelease::from_object(object)?;
    if let Some(chart) = hr.chart {
        // A chart from a GitRepository is a path (`./charts/app`).
        return chart
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .map(str::to_string);
    }
    let source = hr.chart_source?;
    let url = entry
        .sources
        .iter()
        .find(|(s, _)| s.id == source)
        .and_then(|(s, _)| s.url.as_deref())?;
    let last = url.trim_end_matches('/').rsplit('/').next()?;
    Some(last.split([':', '@']).next().unwrap_or(last).to_string())
}
