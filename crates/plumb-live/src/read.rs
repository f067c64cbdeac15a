//! Reading the live cluster: one list request per kind, cluster-wide, through the kubeconfig
//! (`KUBECONFIG`, `--context`) and the real `kube` client. Only `GET`: discovery and lists.

use serde_json::Value;
use std::collections::HashMap;

/// A kind the checks read, with where the API serves it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Kind {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// The resource name in URLs (`kustomizations`).
    pub plural: String,
}

impl Kind {
    pub fn new(group: &str, version: &str, kind: &str, plural: &str) -> Kind {
        Kind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
        }
    }

    /// `/api/v1/configmaps`, `/apis/apps/v1/deployments`: every namespace.
    pub fn list_path(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}/{}", self.version, self.plural)
        } else {
            format!("/apis/{}/{}/{}", self.group, self.version, self.plural)
        }
    }

    /// `kustomizations.kustomize.toolkit.fluxcd.io`, `configmaps`: as RBAC names it.
    pub fn resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// The kinds every verification reads.
pub fn flux_kinds() -> Vec<Kind> {
    vec![
        Kind::new(
            "kustomize.toolkit.fluxcd.io",
            "v1",
            "Kustomization",
            "kustomizations",
        ),
        Kind::new(
            "helm.toolkit.fluxcd.io",
            "v2",
            "HelmRelease",
            "helmreleases",
        ),
        Kind::new(
            "source.toolkit.fluxcd.io",
            "v1",
            "GitRepository",
            "gitrepositories",
        ),
        Kind::new(
            "source.toolkit.fluxcd.io",
            "v1",
            "OCIRepository",
            "ocirepositories",
        ),
        Kind::new("source.toolkit.fluxcd.io", "v1", "Bucket", "buckets"),
        Kind::new("source.toolkit.fluxcd.io", "v1", "HelmChart", "helmcharts"),
        Kind::new("apps", "v1", "Deployment", "deployments"),
        Kind::new("apps", "v1", "StatefulSet", "statefulsets"),
        Kind::new("apps", "v1", "DaemonSet", "daemonsets"),
        Kind::new(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
        ),
    ]
}

/// Why the cluster could not be read: exit 2, never a pass.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("cannot load the kubeconfig{}: {message}", context.as_deref().map(|c| format!(" (context {c})")).unwrap_or_default())]
    Kubeconfig {
        context: Option<String>,
        message: String,
    },
    #[error("cannot reach the Kubernetes API at {server}: {message}")]
    Unreachable { server: String, message: String },
    #[error("the Kubernetes API at {server} refused {path} ({code}): the credentials need `{verb}` on `{resource}` at cluster scope{}", if message.is_empty() { String::new() } else { format!(": {message}") })]
    Forbidden {
        server: String,
        path: String,
        code: u16,
        verb: &'static str,
        resource: String,
        message: String,
    },
    #[error("the Kubernetes API at {server} answered {path} with something that is not Kubernetes JSON: {message}")]
    Protocol {
        server: String,
        path: String,
        message: String,
    },
}

/// What was read.
#[derive(Debug, Clone, Default)]
pub struct Live {
    /// The API server, as the kubeconfig names it.
    pub server: String,
    /// The items of each kind's list, by (group, kind).
    pub objects: HashMap<(String, String), Vec<Value>>,
    /// Kinds the API does not serve (404 on their list: their CRD is not installed).
    pub not_served: Vec<Kind>,
    /// The API resources of each group version asked for, by `apiVersion`: (kind, plural,
    /// namespaced).
    pub resources: HashMap<String, Vec<(String, String, bool)>>,
    /// Every request made, as `GET path`.
    pub requests: Vec<String>,
}

impl Live {
    /// The items of a kind (empty when it is not served).
    pub fn list(&self, group: &str, kind: &str) -> &[Value] {
        self.objects
            .get(&(group.to_string(), kind.to_string()))
            .map_or(&[], Vec::as_slice)
    }

    /// Whether the API serves `kind` of `api_version`: `None` when that group version was not
    /// asked about.
    pub fn serves(&self, api_version: &str, kind: &str) -> Option<bool> {
        self.resources
            .get(api_version)
            .map(|list| list.iter().any(|(k, _, _)| k == kind))
    }
}

/// A connection to the cluster.
pub struct Cluster {
    client: kube::Client,
    server: String,
    runtime: tokio::runtime::Runtime,
}

impl Cluster {
    /// Connects with the kubeconfig at `kubeconfig`, else `KUBECONFIG`, else
    /// `~/.kube/config`, and `context`, else its current context. Nothing is sent yet.
    pub fn connect(
        kubeconfig: Option<&std::path::Path>,
        context: Option<&str>,
    ) -> Result<Cluster, LiveError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| LiveError::Kubeconfig {
                context: context.map(str::to_string),
                message: format!("cannot start the I/O runtime: {e}"),
            })?;
        let options = kube::config::KubeConfigOptions {
            context: context.map(str::to_string),
            ..Default::default()
        };
        let loaded = match kubeconfig {
            Some(path) => kube::config::Kubeconfig::read_from(path)
                .map_err(|e| e.to_string())
                .and_then(|file| {
                    runtime
                        .block_on(kube::Config::from_custom_kubeconfig(file, &options))
                        .map_err(|e| e.to_string())
                })
                .map_err(|e| format!("{}: {e}", path.display())),
            None => runtime
                .block_on(kube::Config::from_kubeconfig(&options))
                .map_err(|e| e.to_string()),
        };
        let config = loaded.map_err(|message| LiveError::Kubeconfig {
            context: context.map(str::to_string),
            message,
        })?;
        let server = config.cluster_url.to_string();
        let client = {
            let _guard = runtime.enter();
            kube::Client::try_from(config).map_err(|e| LiveError::Kubeconfig {
                context: context.map(str::to_string),
                message: e.to_string(),
            })?
        };
        Ok(Cluster {
            client,
            server,
            runtime,
        })
    }

    /// `GET path` as JSON; `Ok(None)` for a 404.
    fn get(
        &self,
        path: &str,
        verb: &'static str,
        resource: &str,
    ) -> Result<Option<Value>, LiveError> {
        let request = http::Request::get(path)
            .header("Accept", "application/json")
            .body(Vec::new())
            .map_err(|e| LiveError::Protocol {
                server: self.server.clone(),
                path: path.to_string(),
                message: e.to_string(),
            })?;
        match self.runtime.block_on(self.client.request_text(request)) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| LiveError::Protocol {
                    server: self.server.clone(),
                    path: path.to_string(),
                    message: e.to_string(),
                }),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
            Err(kube::Error::Api(status)) if status.code == 401 || status.code == 403 => {
                Err(LiveError::Forbidden {
                    server: self.server.clone(),
                    path: path.to_string(),
                    code: status.code,
                    verb,
                    resource: resource.to_string(),
                    message: status.message.clone(),
                })
            }
            Err(kube::Error::Api(status)) => Err(LiveError::Protocol {
                server: self.server.clone(),
                path: path.to_string(),
                message: format!("{} {}", status.code, status.message),
            }),
            Err(e) => Err(LiveError::Unreachable {
                server: self.server.clone(),
                message: error_chain(&e),
            }),
        }
    }

    /// Asks discovery about each group version of `wanted` (`apiVersion`, kind) once, then
    /// lists once, across namespaces, every Flux and workload kind and every served kind of
    /// `wanted`.
    pub fn read(&self, wanted: &[(String, String)]) -> Result<Live, LiveError> {
        let mut live = Live {
            server: self.server.clone(),
            ..Live::default()
        };
        let mut versions: Vec<&String> = wanted.iter().map(|(v, _)| v).collect();
        versions.sort();
        versions.dedup();
        for gv in versions {
            let path = if gv.contains('/') {
                format!("/apis/{gv}")
            } else {
                format!("/api/{gv}")
            };
            live.requests.push(format!("GET {path}"));
            let list = self.get(&path, "get", "discovery")?;
            let resources = list
                .as_ref()
                .and_then(|l| l.get("resources"))
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter_map(|r| {
                            let name = r.get("name")?.as_str()?;
                            // `deployments/scale` and kin are subresources.
                            (!name.contains('/')).then_some(())?;
                            Some((
                                r.get("kind")?.as_str()?.to_string(),
                                name.to_string(),
                                r.get("namespaced").and_then(Value::as_bool).unwrap_or(true),
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default();
            live.resources.insert(gv.clone(), resources);
        }
        let mut kinds = flux_kinds();
        for (gv, kind) in wanted {
            let Some((_, plural, _)) = live
                .resources
                .get(gv)
                .and_then(|list| list.iter().find(|(k, _, _)| k == kind))
            else {
                continue;
            };
            let (group, version) = gv.split_once('/').unwrap_or(("", gv));
            let k = Kind::new(group, version, kind, plural);
            if !kinds.iter().any(|x| x.group == k.group && x.kind == k.kind) {
                kinds.push(k);
            }
        }
        for kind in &kinds {
            let path = kind.list_path();
            live.requests.push(format!("GET {path}"));
            match self.get(&path, "list", &kind.resource())? {
                Some(list) => {
                    let api_version = if kind.group.is_empty() {
                        kind.version.clone()
                    } else {
                        format!("{}/{}", kind.group, kind.version)
                    };
                    let items = list
                        .get("items")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default()
                        .into_iter()
                        .map(|mut item| {
                            // A list's items need not carry their apiVersion and kind.
                            if let Some(map) = item.as_object_mut() {
                                map.entry("apiVersion")
                                    .or_insert_with(|| Value::String(api_version.clone()));
                                map.entry("kind")
                                    .or_insert_with(|| Value::String(kind.kind.clone()));
                            }
                            item
                        })
                        .collect();
                    live.objects
                        .insert((kind.group.clone(), kind.kind.clone()), items);
                }
                None => live.not_served.push(kind.clone()),
            }
        }
        Ok(live)
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}
