//! Kinds a Kubernetes distribution serves itself, with no CRD in the repository: k3s' and
//! RKE2's embedded helm-controller, Talos' API access, k0s' charts and autopilot.
//!
//! Facts from the distributions' own API packages (k3s `pkg/apis/k3s.cattle.io/v1`,
//! k3s-io/helm-controller `pkg/apis/helm.cattle.io/v1`, Talos' `talos.dev/v1alpha1`
//! ServiceAccount, k0s `pkg/apis`; all Apache-2.0). `.plumb.yaml`'s `distribution:` names the
//! one the clusters run.

pub use crate::config::Distribution;

const K3S: &[(&str, &str)] = &[
    ("helm.cattle.io", "HelmChart"),
    ("helm.cattle.io", "HelmChartConfig"),
    ("k3s.cattle.io", "Addon"),
    ("k3s.cattle.io", "ETCDSnapshotFile"),
];

const TALOS: &[(&str, &str)] = &[("talos.dev", "ServiceAccount")];

const K0S: &[(&str, &str)] = &[
    ("helm.k0sproject.io", "Chart"),
    ("autopilot.k0sproject.io", "ControlNode"),
    ("autopilot.k0sproject.io", "Plan"),
    ("autopilot.k0sproject.io", "UpdateConfig"),
    ("etcd.k0sproject.io", "EtcdMember"),
];

impl Distribution {
    /// Every distribution, in the order `.plumb.yaml` documents them.
    pub const ALL: [Distribution; 4] = [
        Distribution::K3s,
        Distribution::Rke2,
        Distribution::Talos,
        Distribution::K0s,
    ];

    /// The name `.plumb.yaml` uses.
    pub fn name(self) -> &'static str {
        match self {
            Distribution::K3s => "k3s",
            Distribution::Rke2 => "rke2",
            Distribution::Talos => "talos",
            Distribution::K0s => "k0s",
        }
    }

    pub fn parse(name: &str) -> Option<Distribution> {
        Distribution::ALL.into_iter().find(|d| d.name() == name)
    }

    fn kinds(self) -> &'static [(&'static str, &'static str)] {
        match self {
            // RKE2 embeds the same helm-controller and k3s API.
            Distribution::K3s | Distribution::Rke2 => K3S,
            Distribution::Talos => TALOS,
            Distribution::K0s => K0S,
        }
    }

    pub(crate) fn serves(self, group: &str, kind: &str) -> bool {
        self.kinds().contains(&(group, kind))
    }
}

/// The first distribution that serves the kind.
pub(crate) fn serving(group: &str, kind: &str) -> Option<Distribution> {
    Distribution::ALL
        .into_iter()
        .find(|d| d.serves(group, kind))
}
