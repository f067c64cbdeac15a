//! Secrets that a controller in the cluster creates from another object, at runtime: an
//! ExternalSecret's target, a SealedSecret, a ClusterSecret, a cert-manager Certificate's
//! Secret, a pocket-id-operator client's credentials. No build output holds them, yet Flux
//! finds them when it reads `substituteFrom`; their values are unknown here, so they are
//! substituted as visible placeholders.

use crate::model::Object;
use serde_json::Value;

/// A Secret a controller will create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeSecret {
    /// `None`: created in several namespaces (ClusterSecret, ClusterExternalSecret).
    pub namespace: Option<String>,
    pub name: String,
    /// What creates it: `ExternalSecret network/cloudflare-tunnel`.
    pub producer: String,
    /// The keys it is known to have.
    pub keys: Vec<String>,
    /// Whether it may have keys beyond `keys` (`dataFrom`, templates the build cannot see).
    pub open: bool,
}

impl RuntimeSecret {
    /// Whether this is the Secret `namespace`/`name`.
    pub fn is(&self, namespace: &str, name: &str) -> bool {
        self.name == name && self.namespace.as_deref().is_none_or(|n| n == namespace)
    }

    /// The value a key stands for: visible in a build, never mistaken for a real value.
    pub fn placeholder(&self, key: &str) -> String {
        format!("RUNTIME-SECRET:{}:{key}", self.name)
    }
}

/// The Secret `object` makes a controller create, if it is such an object.
pub fn secret_created_by(object: &Object) -> Option<RuntimeSecret> {
    let v = &object.value;
    let spec = v.get("spec").unwrap_or(&Value::Null);
    // Made only for the kinds below: register asks this of every object a build produces.
    let namespace = || object.namespace_or_default().to_string();
    let producer = || {
        let namespace = object.namespace_or_default();
        format!("{} {namespace}/{}", object.kind(), object.name())
    };
    let map_keys = |m: &Value| -> Vec<String> {
        m.as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    let text = |v: &Value| v.as_str().map(str::to_string);
    match (object.group(), object.kind()) {
        ("external-secrets.io", "ExternalSecret") => Some(external_secret(
            spec,
            Some(namespace()),
            object.name(),
            producer(),
        )),
        ("external-secrets.io", "ClusterExternalSecret") => {
            let name = text(&spec["externalSecretName"]).unwrap_or_else(|| object.name().into());
            Some(external_secret(
                &spec["externalSecretSpec"],
                None,
                &name,
                producer(),
            ))
        }
        ("bitnami.com", "SealedSecret") => {
            let template = &spec["template"];
            Some(RuntimeSecret {
                namespace: Some(namespace()),
                name: text(&template["metadata"]["name"]).unwrap_or_else(|| object.name().into()),
                keys: map_keys(&spec["encryptedData"])
                    .into_iter()
                    .chain(map_keys(&template["data"]))
                    .collect(),
                open: false,
                producer: producer(),
            })
        }
        ("clustersecret.io", "ClusterSecret") => Some(RuntimeSecret {
            namespace: None,
            name: object.name().into(),
            keys: map_keys(&v["data"]),
            open: v.get("dataValueFrom").is_some(),
            producer: producer(),
        }),
        ("cert-manager.io", "Certificate") => Some(RuntimeSecret {
            namespace: Some(namespace()),
            name: text(&spec["secretName"])?,
            keys: ["tls.crt", "tls.key", "ca.crt"].map(String::from).to_vec(),
            open: false,
            producer: producer(),
        }),
        ("pocketid.internal", "PocketIDOIDCClient") => Some(RuntimeSecret {
            namespace: Some(namespace()),
            name: text(&spec["secret"]["name"])
                .unwrap_or_else(|| format!("{}-oidc-credentials", object.name())),
            keys: pocket_id_keys(spec),
            open: false,
            producer: producer(),
        }),
        // CloudNativePG writes `<cluster>-app` for the database owner unless the bootstrap
        // names a Secret of the user's own (its docs: applications.md, "Secrets"); the keys
        // are those a cluster's `-app` Secret holds.
        ("postgresql.cnpg.io", "Cluster") => {
            let bootstrap = spec["bootstrap"].as_object();
            let own_secret = bootstrap.is_some_and(|b| {
                b.values()
                    .any(|method| method["secret"]["name"].as_str().is_some())
            });
            (!own_secret).then(|| RuntimeSecret {
                namespace: Some(namespace()),
                name: format!("{}-app", object.name()),
                keys: CNPG_APP_KEYS.map(String::from).to_vec(),
                open: false,
                producer: producer(),
            })
        }
        ("onepassword.com", "OnePasswordItem") => Some(RuntimeSecret {
            namespace: Some(namespace()),
            name: object.name().into(),
            keys: Vec::new(),
            open: true,
            producer: producer(),
        }),
        _ => None,
    }
    .map(|mut s| {
        s.keys.sort();
        s.keys.dedup();
        s
    })
}

/// The keys of the `<cluster>-app` Secret CloudNativePG writes, as a running cluster's holds.
const CNPG_APP_KEYS: [&str; 11] = [
    "dbname",
    "fqdn-jdbc-uri",
    "fqdn-uri",
    "host",
    "jdbc-uri",
    "password",
    "pgpass",
    "port",
    "uri",
    "user",
    "username",
];

/// The keys of the Secret pocket-id-operator writes for a PocketIDOIDCClient: its defaults, each
/// renamed by `spec.secret.keys` (`clientID: OAUTH_CLIENT_ID`), the client secret only for a
/// client that is not public. The defaults are those the operator documents
/// (docs/pocketidoidcclient.md of pocket-id-operator: "Generated Secret").
fn pocket_id_keys(spec: &Value) -> Vec<String> {
    const DEFAULTS: [&str; 11] = [
        "client_id",
        "client_secret",
        "issuer_url",
        "callback_urls",
        "logout_callback_urls",
        "discovery_url",
        "authorization_url",
        "token_url",
        "userinfo_url",
        "jwks_url",
        "end_session_url",
    ];
    let renamed = spec["secret"]["keys"].as_object();
    let public = spec["isPublic"].as_bool() == Some(true);
    DEFAULTS
        .iter()
        .filter(|key| !(public && **key == "client_secret"))
        .map(|key| {
            renamed
                .and_then(|m| {
                    m.iter()
                        .find(|(field, _)| snake_case(field) == *key)
                        .and_then(|(_, v)| v.as_str())
                })
                .unwrap_or(key)
                .to_string()
        })
        .collect()
}

/// `clientID` → `client_id`, `endSessionUrl` → `end_session_url`, `s3Bucket` → `s3_bucket`: a
/// word starts at an upper-case letter that follows a lower-case letter or a digit. Also how
/// plumb-check splits a Secret's key into words.
pub fn snake_case(field: &str) -> String {
    let mut out = String::new();
    let mut previous_lower = false;
    for c in field.chars() {
        if c.is_ascii_uppercase() && previous_lower {
            out.push('_');
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// An ExternalSecret's target: `spec.target.name` (default: the ExternalSecret's name), keys
/// from `data[].secretKey` and the template's `data`; `dataFrom` brings keys the build cannot
/// know.
fn external_secret(
    spec: &Value,
    namespace: Option<String>,
    name: &str,
    producer: String,
) -> RuntimeSecret {
    let target = &spec["target"];
    let mut keys: Vec<String> = spec["data"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["secretKey"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let template = &target["template"];
    if let Some(data) = template["data"].as_object() {
        keys.extend(data.keys().cloned());
    }
    let templated = template["data"].is_object()
        && template["mergePolicy"].as_str() != Some("Merge")
        && template.get("templateFrom").is_none();
    RuntimeSecret {
        namespace,
        name: target["name"].as_str().unwrap_or(name).to_string(),
        producer,
        keys,
        // With a template (and no merge), the Secret holds exactly the template's keys.
        open: !templated && spec.get("dataFrom").is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(yaml: &str) -> Object {
        let docs = plumb_yaml::parse_documents(std::path::Path::new("t.yaml"), yaml).unwrap();
        Object {
            value: plumb_yaml::to_json(&docs[0]).unwrap(),
            origin: None,
        }
    }

    #[test]
    fn an_external_secret_creates_its_target() {
        let s = secret_created_by(&object(
            "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata: {name: tunnel, namespace: network}\nspec:\n  target: {name: cloudflare-tunnel-id-secret}\n  data:\n  - secretKey: CLOUDFLARE_TUNNEL_ID\n    remoteRef: {key: cloudflare, property: id}\n",
        ))
        .unwrap();
        assert!(s.is("network", "cloudflare-tunnel-id-secret"));
        assert!(!s.is("default", "cloudflare-tunnel-id-secret"));
        assert_eq!(s.keys, vec!["CLOUDFLARE_TUNNEL_ID"]);
        assert!(!s.open);
        assert_eq!(s.producer, "ExternalSecret network/tunnel");
    }

    #[test]
    fn a_pocket_id_client_makes_its_credentials_secret() {
        let renamed = secret_created_by(&object(
            "apiVersion: pocketid.internal/v1alpha1\nkind: PocketIDOIDCClient\nmetadata: {name: paperless-ngx, namespace: default}\nspec:\n  secret:\n    keys: {clientID: OAUTH_CLIENT_ID, clientSecret: OAUTH_CLIENT_SECRET}\n",
        ))
        .expect("a Secret");
        assert_eq!(renamed.name, "paperless-ngx-oidc-credentials");
        assert_eq!(renamed.namespace.as_deref(), Some("default"));
        assert!(renamed.keys.contains(&"OAUTH_CLIENT_ID".to_string()));
        assert!(renamed.keys.contains(&"OAUTH_CLIENT_SECRET".to_string()));
        assert!(renamed.keys.contains(&"issuer_url".to_string()));
        assert!(!renamed.keys.contains(&"client_id".to_string()));
        let public = secret_created_by(&object(
            "apiVersion: pocketid.internal/v1alpha1\nkind: PocketIDOIDCClient\nmetadata: {name: forgejo, namespace: default}\nspec:\n  isPublic: true\n  secret: {name: forgejo-oidc}\n",
        ))
        .expect("a Secret");
        assert_eq!(public.name, "forgejo-oidc");
        assert!(public.keys.contains(&"client_id".to_string()));
        assert!(!public.keys.contains(&"client_secret".to_string()));
        assert_eq!(super::snake_case("endSessionUrl"), "end_session_url");
    }

    #[test]
    fn data_from_leaves_the_keys_open_unless_a_template_fixes_them() {
        let open = secret_created_by(&object(
            "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata: {name: app, namespace: a}\nspec:\n  dataFrom: [{extract: {key: app}}]\n",
        ))
        .unwrap();
        assert_eq!(open.name, "app");
        assert!(open.open);
        let templated = secret_created_by(&object(
            "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata: {name: app, namespace: a}\nspec:\n  dataFrom: [{extract: {key: app}}]\n  target:\n    template:\n      data: {URL: 'postgres://{{ .user }}'}\n",
        ))
        .unwrap();
        assert!(!templated.open);
        assert_eq!(templated.keys, vec!["URL"]);
    }

    #[test]
    fn other_objects_create_nothing() {
        assert!(secret_created_by(&object(
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"
        ))
        .is_none());
    }
}
