//! SEC001: Secrets committed in plaintext.

use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};
use crate::rules::repo_files::{self, Chains};
use plumb_flux::sops::is_encrypted_value;
use plumb_yaml::Node;
use std::path::Path;

/// ## What it does
/// Finds Kubernetes Secrets whose `data` or `stringData` is in plaintext in the repository's
/// files: a `kind: Secret` document without SOPS metadata, and a kustomize `secretGenerator`
/// with `literals`, or with `envs`/`files` that are not SOPS-encrypted. Every YAML file of the
/// repository is read, built or not: a file Flux never applies is still in Git's history.
/// Values that hold a `${VAR}` reference are templates that substitution fills in, keys
/// that name an account (`username`, `POSTGRES_USER`) and references to a secret manager
/// (`op://`, `vault:`, `ref+vault://`, `secret://`...) hold no credential, PEM certificates
/// (`ca.crt`, `tls.crt`) and public keys (`authorized_keys`) are public, a service's bare
/// address (`redis://dragonfly:6379`) and an Alertmanager configuration whose credentials are
/// read from files give nothing away, and a value that is one placeholder (`@agekey@`,
/// `{{ .Values.password }}`) holds nothing yet: none is reported. The finding points at the
/// first key with a value.
///
/// ## Why is this bad?
/// Everyone who can clone the repository, every CI runner and every fork now has the password,
/// and deleting the file later does not take it out of the history: the credential has to be
/// rotated. base64 in `data` is an encoding, not encryption.
///
/// ## Example
/// ```yaml
/// apiVersion: v1
/// kind: Secret
/// metadata:
///   name: s3-credentials
/// stringData:
///   SECRET_ACCESS_KEY: wJalrXUtnFEMI/K7MDENG
/// ```
///
/// Use instead: encrypt it with SOPS and let kustomize-controller decrypt it
/// (`spec.decryption.provider: sops` on the Flux Kustomization):
/// ```yaml
/// stringData:
///   SECRET_ACCESS_KEY: ENC[AES256_GCM,data:hKXnvDw1...,type:str]
/// sops:
///   age:
///     - recipient: age13tgzjy06gy9vw4jkffn7qx9a0232a0g5nzux40dlju44y788yuasc72rfu
///   # ...
/// ```
/// (`sops --encrypt --in-place s3-credentials.sops.yaml`), or keep the value outside Git
/// (External Secrets, a secret manager).
pub struct PlaintextSecret;

impl Rule for PlaintextSecret {
    fn code(&self) -> &'static str {
        "SEC001"
    }

    fn summary(&self) -> &'static str {
        "a Secret with plaintext `data`/`stringData` committed in Git"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        let chains = Chains::of(cx.build, cx.root);
        // A Secret, or a kustomization's secretGenerator; SOPS files are SEC002's.
        for file in repo_files::yaml_files(cx.root, &["Secret", "secretGenerator"]) {
            for doc in &file.docs {
                if doc.get("sops").is_some() {
                    // Encrypted, or meant to be: SEC002 judges its metadata.
                    continue;
                }
                let chain = chains.get(&file.rel, doc);
                if doc.str_at(&["kind"]) == Some("Secret") {
                    if let Some(finding) = secret_document(doc, cx.root) {
                        out.push(finding.with_chain(chain));
                    }
                }
                if doc.str_at(&["kind"]) == Some("Kustomization")
                    && doc
                        .str_at(&["apiVersion"])
                        .is_some_and(|v| v.starts_with("kustomize.config.k8s.io/"))
                {
                    secret_generators(doc, &file.path, cx.root, out);
                }
            }
        }
    }
}

/// Whether a value is secret material: not empty, not encrypted, and not a template whose
/// secret parts postBuild substitution fills in from elsewhere (`${DB_PASSWORD}`).
fn is_plaintext(value: &str) -> bool {
    let value = value.trim();
    !value.is_empty()
        && !is_encrypted_value(value)
        && !value.contains("${")
        && !is_secret_reference(value)
        && !is_certificate(value)
        && !is_public_key(value)
        && !is_bare_address(value)
        && !is_object_store_location(value)
        && !is_switch(value)
        && !is_network_name(value)
        && !is_alertmanager_config_without_credentials(value)
        && !is_configuration_without_credentials(value)
        && !is_template_placeholder(value)
        && !is_placeholder(value)
}

/// Whether the whole value is a placeholder someone is to replace, not a credential:
/// `REPLACE_WITH_CA_CRT`, `replace-me`, `CHANGEME`, `your-api-key-here`, `<your token>`, `xxxx`,
/// `TODO`. None is a secret that leaked; a placeholder left to reach the cluster is SUB002's.
/// A word after one (`changeme-bootstrap-password`, which authentik takes as given) is a
/// value chosen, and still judged.
fn is_placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(['-', '_', ' ', '.'])
        .filter(|w| !w.is_empty())
        .collect();
    let angle = value.starts_with('<') && value.ends_with('>') && !value[1..].contains('<');
    let crosses = lower.len() >= 3 && lower.chars().all(|c| c == 'x' || c == '*');
    let replace = matches!(
        words.as_slice(),
        ["replace" | "change", "me"] | ["replaceme" | "changeme" | "todo" | "tbd" | "fixme"]
    ) || matches!(words.as_slice(), ["replace", "with", ..] if words.len() > 2);
    let yours = words.first() == Some(&"your") && words.last() == Some(&"here") && words.len() > 2;
    angle || crosses || replace || yours
}

/// Whether the whole value is one placeholder a tool fills in when it renders the file: Nix's
/// `@name@` (`replaceVars`, `substituteAll`: jmuchovej/homelab's `@agekey@`) or a template
/// expression `{{ ... }}` (Helm, Go templates, Jinja).
fn is_template_placeholder(value: &str) -> bool {
    let nix = value
        .strip_prefix('@')
        .and_then(|v| v.strip_suffix('@'))
        .is_some_and(|name| {
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        });
    let template = value.starts_with("{{")
        && value.ends_with("}}")
        && value.matches("{{").count() == 1
        && value.matches("}}").count() == 1;
    nix || template
}

/// The fields of Alertmanager's configuration that hold a credential (its documentation's
/// `<secret>` fields, and the webhook URLs that carry one in their path), each of which has a
/// `*_file` twin that reads it from a file instead.
const ALERTMANAGER_CREDENTIALS: &[&str] = &[
    "smtp_auth_password",
    "smtp_auth_secret",
    "auth_password",
    "auth_secret",
    "slack_api_url",
    "api_url",
    "api_key",
    "api_secret",
    "opsgenie_api_key",
    "victorops_api_key",
    "wechat_api_secret",
    "telegram_bot_token",
    "bot_token",
    "token",
    "user_key",
    "routing_key",
    "service_key",
    "webhook_url",
    "url",
    "password",
    "credentials",
    "bearer_token",
    "client_secret",
];

/// Whether the value is an Alertmanager configuration (`route:` and `receivers:`, kept in a
/// Secret as prometheus-operator expects) with no credential written in it: each of its
/// credential fields empty, a `${VAR}` substitution fills in, or an address inside the
/// cluster (`http://robusta-runner.observability.svc.cluster.local/api/alerts`); the
/// credentials read from files (`api_url_file`, `token_file`). One written in is plaintext.
fn is_alertmanager_config_without_credentials(value: &str) -> bool {
    if !value.contains("receivers:") || !value.contains("route:") {
        return false;
    }
    let Ok(docs) = plumb_yaml::parse_documents("alertmanager.yaml", value) else {
        return false;
    };
    let [config] = docs.as_slice() else {
        return false;
    };
    if config.get("route").is_none() || config.get("receivers").is_none() {
        return false;
    }
    fn credential_written(node: &Node) -> bool {
        match &node.kind {
            plumb_yaml::NodeKind::Mapping(entries) => entries.iter().any(|(k, v)| {
                let credential = k
                    .scalar_value()
                    .is_some_and(|k| ALERTMANAGER_CREDENTIALS.contains(&k));
                match v.scalar_value() {
                    Some(text) if credential => {
                        let text = text.trim();
                        !text.is_empty() && !text.contains("${") && !is_cluster_address(text)
                    }
                    _ => credential_written(v),
                }
            }),
            plumb_yaml::NodeKind::Sequence(items) => items.iter().any(credential_written),
            plumb_yaml::NodeKind::Scalar(_) => false,
        }
    }
    !credential_written(config)
}

/// Words that make a configuration key a credential's (`password`, `api_key`, `clientSecret`,
/// `bearer_token`, a Docker config's `auth`), as the key's last word ([`last_word_in`]).
const CREDENTIAL_WORDS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "pass",
    "passphrase",
    "secret",
    "secrets",
    "token",
    "tokens",
    "key",
    "keys",
    "apikey",
    "credential",
    "credentials",
    "bearer",
    "salt",
    "cookie",
    "auth",
];

/// Whether the value is a configuration file (YAML or JSON of several lines, or INI) with no
/// credential in it: gandazgul/k8s-infrastructure keeps Helm values of volumes
/// (`persistence.main.existingClaim`) and a `grafana.ini` of date formats in Secrets. A
/// credential is a key of [`CREDENTIAL_WORDS`] with a value written in (not empty, not `${VAR}`,
/// not a reference), a password hash (an htpasswd file reads as `user: $apr1$...`), or a URL
/// that is not only where a service listens (a webhook's path is its secret).
fn is_configuration_without_credentials(value: &str) -> bool {
    if !value.trim().contains('\n') {
        return false;
    }
    let credential_key = |key: &str| last_word_in(key, CREDENTIAL_WORDS);
    let setting = |key: &str, text: &str| {
        let text = text.trim().trim_matches(['"', '\'']);
        let written = !text.is_empty() && !text.contains("${") && !is_secret_reference(text);
        let hash = ["$apr1$", "$2a$", "$2b$", "$2y$", "$5$", "$6$", "{SHA}"]
            .iter()
            .any(|p| text.starts_with(p));
        let url = text.contains("://") && !is_bare_address(text) && !is_cluster_address(text);
        (credential_key(key) && written) || hash || url
    };
    if let Ok(docs) = plumb_yaml::parse_documents("configuration", value) {
        if let [doc] = docs.as_slice() {
            if doc.is_mapping() || doc.is_sequence() {
                return !has_credential(doc, "", &setting);
            }
        }
    }
    // INI: `[section]` headers, `key = value` settings, comments.
    let mut settings = 0;
    for line in value.lines().map(str::trim) {
        let header = line.starts_with('[') && line.ends_with(']');
        if line.is_empty() || line.starts_with(['#', ';']) || header {
            continue;
        }
        let Some((key, text)) = line.split_once('=') else {
            return false;
        };
        if setting(key.trim(), text) {
            return false;
        }
        settings += 1;
    }
    settings > 0
}

/// Whether a setting under `node` (whose key is `key`) is a credential, as `setting` judges
/// each scalar with its key.
fn has_credential(node: &Node, key: &str, setting: &dyn Fn(&str, &str) -> bool) -> bool {
    match &node.kind {
        plumb_yaml::NodeKind::Mapping(entries) => entries
            .iter()
            .any(|(k, v)| has_credential(v, k.scalar_value().unwrap_or_default(), setting)),
        plumb_yaml::NodeKind::Sequence(items) => {
            items.iter().any(|n| has_credential(n, key, setting))
        }
        plumb_yaml::NodeKind::Scalar(s) => setting(key, &s.value),
    }
}

/// A URL's scheme (lowercased), host (with its port) and path, for one with no user,
/// password, query, fragment or white space: a URL that carries nothing but where it points.
fn plain_url(value: &str) -> Option<(String, &str, &str)> {
    let (scheme, rest) = value.split_once("://")?;
    if rest.contains(['@', '?', '#']) || rest.contains(char::is_whitespace) {
        return None;
    }
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    (!host.is_empty()).then(|| (scheme.to_ascii_lowercase(), host, path))
}

/// Whether the value is an HTTP address of a Service of the cluster (`http://name`,
/// `http://name.namespace.svc`, `...svc.cluster.local`), with no user, password or query:
/// where an in-cluster receiver listens, not a third party's webhook with its token.
fn is_cluster_address(value: &str) -> bool {
    let Some((scheme, host_port, _)) = plain_url(value) else {
        return false;
    };
    let host = host_port.split(':').next().unwrap_or_default();
    matches!(scheme.as_str(), "http" | "https")
        && !host.is_empty()
        && (!host.contains('.')
            || host.ends_with(".svc")
            || host.ends_with(".svc.cluster.local")
            || host.ends_with(".cluster.local"))
}

/// Schemes of services whose URL, past the host, names at most a database or a number: a
/// Redis, SQL, document, message or directory server.
const SERVICE_SCHEMES: &[&str] = &[
    "redis",
    "rediss",
    "valkey",
    "postgres",
    "postgresql",
    "mysql",
    "mariadb",
    "mongodb",
    "mongodb+srv",
    "clickhouse",
    "memcached",
    "amqp",
    "amqps",
    "nats",
    "kafka",
    "ldap",
    "ldaps",
    "smtp",
    "smtps",
    "tcp",
    "udp",
];

/// Whether the value is only where a service listens (`redis://dragonfly:6379`,
/// `postgres://db.default.svc:5432/app`, `http://minio:9000`), which charts often read from
/// a Secret: no user or password (`@`), no query or fragment, where a token can ride, past
/// the host at most a database's name, and for HTTP nothing, since a webhook's path is its
/// secret (`https://hooks.slack.com/services/...`).
fn is_bare_address(value: &str) -> bool {
    let Some((scheme, host, path)) = plain_url(value) else {
        return false;
    };
    let host_ok = host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '[' | ']'));
    let path_ok = match scheme.as_str() {
        "http" | "https" => path.is_empty(),
        s if SERVICE_SCHEMES.contains(&s) => {
            path.len() <= 63
                && path
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        }
        _ => false,
    };
    host_ok && path_ok
}

/// Whether the value is a restic repository on S3
/// (`s3:http://minio.kube-system.svc:9000/restic/app`, wrmilling/k3s-gitops's VolSync Secrets):
/// where the bucket is, with no user, password or query in it; the keys to it are other values
/// of the Secret.
fn is_object_store_location(value: &str) -> bool {
    value
        .strip_prefix("s3:")
        .and_then(plain_url)
        .is_some_and(|(scheme, _, _)| matches!(scheme.as_str(), "http" | "https"))
}

/// Whether the value is an on/off setting (`AUTHENTIK_INSECURE: "false"`): no credential is a
/// boolean.
fn is_switch(value: &str) -> bool {
    ["true", "false", "yes", "no", "on", "off"]
        .iter()
        .any(|w| value.eq_ignore_ascii_case(w))
}

/// Whether the value is an IP address, a network (`192.168.0.0/16`) or a host name
/// (`internal.localhost`, `nas.example.com`): where something is, as wahooli/gitops-repo's
/// cluster variables Secret holds its DNS servers' addresses and its domains. A name is
/// lowercase labels joined by dots, its last one letters; `localhost` alone is one too.
fn is_network_name(value: &str) -> bool {
    let address = value.split_once('/').map_or(value, |(ip, bits)| {
        if bits.parse::<u8>().is_ok() {
            ip
        } else {
            value
        }
    });
    if address.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    let labels: Vec<&str> = value.split('.').collect();
    let label_ok = |l: &&str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    value == "localhost"
        || (labels.len() >= 2
            && labels.iter().all(label_ok)
            && labels
                .last()
                .is_some_and(|tld| tld.len() >= 2 && tld.bytes().all(|b| b.is_ascii_lowercase())))
}

/// Whether the value is only PEM certificates (a CA bundle, `tls.crt`, `ca.crt`): public by
/// design, unlike the private key that may sit beside them (`tls.key`).
fn is_certificate(value: &str) -> bool {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let mut rest = value.trim();
    if !rest.starts_with(BEGIN) {
        return false;
    }
    while let Some(block) = rest.strip_prefix(BEGIN) {
        let Some(end) = block.find(END) else {
            return false;
        };
        rest = block[end + END.len()..].trim_start();
    }
    rest.is_empty()
}

/// The algorithms of OpenSSH public keys, as the first word of a key's line.
const SSH_KEY_TYPES: &[&str] = &[
    "ssh-ed25519",
    "ssh-rsa",
    "ssh-dss",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
];

/// Whether the value is only public keys: OpenSSH ones, one a line as in `authorized_keys`
/// (after the line's options, with comment lines), or PEM public key blocks. A public key is
/// meant to be handed out; its private half is what a Secret must not show.
fn is_public_key(value: &str) -> bool {
    let value = value.trim();
    if value.starts_with("-----BEGIN PUBLIC KEY-----")
        || value.starts_with("-----BEGIN RSA PUBLIC KEY-----")
        || value.starts_with("-----BEGIN PGP PUBLIC KEY BLOCK-----")
    {
        return !value.contains("PRIVATE KEY");
    }
    let ssh_key = |line: &str| {
        let words: Vec<&str> = line.split_whitespace().collect();
        // The key's type, then its blob: base64 of the type's length (0x000000..), "AAAA".
        words
            .windows(2)
            .any(|w| SSH_KEY_TYPES.contains(&w[0]) && w[1].starts_with("AAAA"))
    };
    let mut keys = value
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .peekable();
    keys.peek().is_some() && keys.all(ssh_key)
}

/// A `data` value: base64 of the secret, which may itself be a reference.
fn is_plaintext_data(value: &str) -> bool {
    match super::decoded_data(value) {
        Some(text) => is_plaintext(value) && is_plaintext(&text),
        None => is_plaintext(value),
    }
}

/// How secret managers' references begin: 1Password (`op inject`, the 1Password operator),
/// bank-vaults (`vault:`), vals (`ref+vault://`, `ref+awssecrets://`…), argocd-vault-plugin
/// (`<path:…>`), Azure Key Vault (`akv://`), Google Secret Manager (`sm://`, berglas), AWS
/// Secrets Manager ARNs, and the `secret://NAME` and `azure://VAULT/NAME` references bootstrap
/// tools resolve from a secret store (GizmoTickler/home-ops's homeops-cli templates,
/// shelken/home-ops's bootstrap resources).
const REFERENCE_PREFIXES: &[&str] = &[
    "op://",
    "secret://",
    "azure://",
    "vault:",
    "ref+",
    "<path:",
    "akv://",
    "sm://",
    "berglas://",
    "gcp:secretmanager:",
    "arn:aws:secretsmanager:",
    "arn:aws:ssm:",
];

/// Whether the value is only references to a secret manager (a template for `op inject` and
/// the like), which hold no secret themselves: each of its lines one reference (a 1Password
/// item name may hold spaces: `op://Automation/1password connect/token`).
fn is_secret_reference(value: &str) -> bool {
    let mut lines = value
        .lines()
        .map(|l| {
            l.trim()
                .trim_matches(|c| matches!(c, '{' | '}' | '"' | '\'' | ',' | ' '))
        })
        .filter(|l| !l.is_empty())
        .peekable();
    lines.peek().is_some() && lines.all(|l| REFERENCE_PREFIXES.iter().any(|p| l.starts_with(p)))
}

/// Whether a Secret's key names an account, an identifier or a connection setting rather than
/// a credential (`username`, `POSTGRES_USER`, `clusterID`, `volumeHandle`, `storageClass`,
/// `DB_PORT`, `protocol`, `LOG_LEVEL`, `STORAGE_DRIVER`): a user name in plaintext gives nothing
/// away, and Secrets often hold one beside a password a controller generates in the cluster
/// (mittwald's secret-generator, `autogenerate: password`); sulibot/home-ops keeps a CephFS
/// volume handle, its cluster ID, file system name and storage class in a Secret,
/// zacheryph/k8s-gitops a database's host, port and extension beside a substituted password.
/// A key is judged by its last word ([`last_word_in`]: `AWS_ACCESS_KEY_ID` is an identifier;
/// the `AWS_SECRET_ACCESS_KEY` beside it is not).
fn is_identity_key(key: &str) -> bool {
    const IDENTIFIERS: &[&str] = &[
        "user",
        "username",
        "login",
        "email",
        "id",
        "handle",
        "name",
        "class",
        "host",
        "hostname",
        "port",
        "protocol",
        "region",
        "bucket",
        "database",
        "extension",
        "cache",
        "path",
        "driver",
        "level",
        "mode",
    ];
    last_word_in(key, IDENTIFIERS)
}

/// Whether the last word of `key`, split as [`plumb_flux::runtime::snake_case`] splits
/// camelCase, is one of `words`.
fn last_word_in(key: &str, words: &[&str]) -> bool {
    plumb_flux::runtime::snake_case(key)
        .split(|c: char| !c.is_ascii_alphanumeric())
        .rfind(|w| !w.is_empty())
        .is_some_and(|w| words.contains(&w))
}

fn secret_document(doc: &Node, root: &Path) -> Option<Finding> {
    let name = doc.str_at(&["metadata", "name"]).unwrap_or("(unnamed)");
    for field in ["data", "stringData"] {
        let Some(entries) = doc.get(field).and_then(Node::as_mapping) else {
            continue;
        };
        for (key, value) in entries {
            if key.scalar_value().is_some_and(is_identity_key) {
                continue;
            }
            let plain = if field == "data" {
                is_plaintext_data
            } else {
                is_plaintext
            };
            if value.scalar_value().is_some_and(plain) {
                let key_name = key.scalar_value().unwrap_or_default();
                let encoding = if field == "data" {
                    " (base64 is an encoding, not encryption)"
                } else {
                    ""
                };
                return Some(
                    Finding::new(
                        "SEC001",
                        format!("Secret `{name}` is committed with its `{field}.{key_name}` in plaintext{encoding}"),
                        "encrypt the file with SOPS (`sops --encrypt --in-place FILE`, decrypted by the Flux Kustomization's `spec.decryption`), or keep the value out of Git, and rotate the credential: Git keeps it in its history",
                    )
                    .at(Location::of(key, root)),
                );
            }
        }
    }
    None
}

/// `secretGenerator` entries whose values are in the repository in plaintext.
fn secret_generators(doc: &Node, file: &Path, root: &Path, out: &mut Vec<Finding>) {
    let dir = file.parent().unwrap_or(root);
    for generator in doc
        .get("secretGenerator")
        .and_then(Node::as_sequence)
        .into_iter()
        .flatten()
    {
        let name = generator.str_at(&["name"]).unwrap_or("(unnamed)");
        let literal = generator
            .get("literals")
            .and_then(Node::as_sequence)
            .into_iter()
            .flatten()
            .find(|l| {
                l.scalar_value()
                    .and_then(|s| s.split_once('='))
                    .is_some_and(|(_, v)| is_plaintext(literal_value(v)))
            });
        if let Some(literal) = literal {
            let key = literal
                .scalar_value()
                .and_then(|s| s.split_once('='))
                .map_or("", |(k, _)| k);
            out.push(
                Finding::new(
                    "SEC001",
                    format!("secretGenerator `{name}` has the literal `{key}` in plaintext"),
                    "move the value into a SOPS-encrypted file (`envs: [secret.sops.env]`, which kustomize-controller decrypts), or out of Git, and rotate it",
                )
                .at(Location::of(literal, root)),
            );
            continue;
        }
        for field in ["envs", "files"] {
            let plain = generator
                .get(field)
                .and_then(Node::as_sequence)
                .into_iter()
                .flatten()
                .find(|f| {
                    f.scalar_value()
                        .map(|s| s.rsplit_once('=').map_or(s, |(_, path)| path))
                        .is_some_and(|path| is_plaintext_file(&dir.join(path)))
                });
            if let Some(entry) = plain {
                out.push(
                    Finding::new(
                        "SEC001",
                        format!(
                            "secretGenerator `{name}` reads `{}`, which is not SOPS-encrypted",
                            entry.scalar_value().unwrap_or_default()
                        ),
                        "encrypt the file with SOPS (`sops --encrypt --in-place FILE`), which kustomize-controller decrypts before generating, or keep it out of Git, and rotate its values",
                    )
                    .at(Location::of(entry, root)),
                );
                break;
            }
        }
    }
}

/// A literal's value as kustomize takes it from `key=value`: one pair of matching quotes
/// around it removed (`password=""` is empty).
fn literal_value(value: &str) -> &str {
    ['"', '\'']
        .iter()
        .find_map(|&q| value.strip_prefix(q).and_then(|v| v.strip_suffix(q)))
        .unwrap_or(value)
}

/// A file in the repository with content, no SOPS metadata in any of sops's formats
/// (YAML/JSON `sops` key, dotenv `sops_mac=`, INI `[sops]`), and a credential in it: a
/// configuration whose credentials are all `${VAR}` (tyzbit/fleet-infra's acars-processor
/// settings) or none holds no secret.
fn is_plaintext_file(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    !text.trim().is_empty()
        && !text.contains("sops_mac=")
        && !text.contains("\"sops\":")
        && !text.contains("\nsops:")
        && !text.starts_with("sops:")
        && !text.contains("[sops]")
        && !is_configuration_without_credentials(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_not_secrets() {
        assert!(is_plaintext("hunter2"));
        assert!(!is_plaintext("postgres://app:${DB_PASSWORD}@db"));
        // Where a service listens, with no credential in it (vrozaksen/home-ops).
        assert!(!is_plaintext("redis://renovate-operator-dragonfly:6379"));
        assert!(!is_plaintext(
            "postgres://db.default.svc.cluster.local:5432/app"
        ));
        assert!(!is_plaintext("http://minio.storage:9000/"));
        assert!(is_plaintext("redis://:hunter2@dragonfly:6379"));
        assert!(is_plaintext("postgres://app:hunter2@db:5432/app"));
        assert!(is_plaintext("redis://dragonfly:6379?password=hunter2"));
        assert!(is_plaintext(
            "https://hooks.slack.com/services/T000/B000/XXXXXXXX"
        ));
        assert!(is_plaintext("https://discord.com/api/webhooks/1234/abcd"));
        assert!(is_plaintext("ntfy://ntfy.sh/my-private-topic"));
        assert!(is_plaintext("postgres://db:5432/app/extra"));
    }

    #[test]
    fn a_generator_literal_or_file_without_a_credential_is_not_plaintext() {
        let tree = tempfile::tempdir().unwrap();
        let root = tree.path();
        let files = [
            // tyzbit/fleet-infra: every credential of the settings a `${VAR}`.
            ("settings.yaml", "Database:\n  ConnectionString: \"${DSN}\"\nSend:\n  APIKey: \"${KEY}\"\n  URL: http://adsb-ultrafeeder\n"),
            ("app.env", "LOG_LEVEL=info\nPASSWORD=${PASSWORD}\n"),
            ("leaked.env", "LOG_LEVEL=info\nPASSWORD=hunter2\n"),
            ("token", "ghp_0123456789abcdef\n"),
        ];
        for (name, text) in files {
            std::fs::write(root.join(name), text).unwrap();
        }
        let generators = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nsecretGenerator:\n  - name: empty\n    literals: [password=\"\", token='']\n  - name: config\n    files: [settings.yaml]\n    envs: [app.env]\n  - name: leaked\n    envs: [leaked.env]\n  - name: token\n    files: [token]\n  - name: literal\n    literals: [password='hunter2']\n";
        let doc = plumb_yaml::parse_documents("kustomization.yaml", generators)
            .unwrap()
            .remove(0);
        let mut out = Vec::new();
        secret_generators(&doc, &root.join("kustomization.yaml"), root, &mut out);
        let messages: Vec<&str> = out.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "secretGenerator `leaked` reads `leaked.env`, which is not SOPS-encrypted",
                "secretGenerator `token` reads `token`, which is not SOPS-encrypted",
                "secretGenerator `literal` has the literal `password` in plaintext",
            ]
        );
    }

    #[test]
    fn placeholders_someone_is_to_replace_are_not_secrets() {
        // TheBranchDriftCatalyst/talos-homelab's Secrets waiting for their certificates and
        // API key.
        for placeholder in [
            "REPLACE_WITH_CA_CRT",
            "replace-me",
            "CHANGEME",
            "your-api-key-here",
            "<your token>",
            "xxxxxxxx",
            "TODO",
        ] {
            assert!(!is_plaintext(placeholder), "{placeholder}");
        }
        for value in [
            "changeme-bootstrap-password",
            "replace",
            "yourpasswordhere1",
            "x",
        ] {
            assert!(is_plaintext(value), "{value}");
        }
    }

    #[test]
    fn placeholders_a_tool_fills_in_are_not_secrets() {
        assert!(!is_plaintext("@agekey@"));
        assert!(!is_plaintext("{{ .Values.auth.password | b64enc }}"));
        assert!(is_plaintext("@hunter2"));
        assert!(is_plaintext("p@ss@word!"));
        assert!(is_plaintext("{{ .Values.user }}:hunter2"));
        assert!(is_plaintext("{{ a }}{{ b }}"));
    }

    #[test]
    fn public_keys_are_not_secrets() {
        // allenporter/k8s-gitops: a devcontainer's authorized_keys.
        let key =
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMgapzKxl5psYtNtqE5E7gJt6WC6677ClsT4S9fsx3Lk a@b";
        assert!(!is_plaintext(key));
        let many =
            format!("# laptop\n{key}\nno-pty,command=\"/bin/true\" ssh-rsa AAAAB3NzaC1yc2E x\n");
        assert!(!is_plaintext(&many));
        assert!(!is_plaintext(
            "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n"
        ));
        // A private key, or a password beside a key, is reported.
        assert!(is_plaintext("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----"));
        assert!(is_plaintext(&format!("{key}\nhunter2")));
        assert!(is_plaintext("ssh-ed25519 hunter2"));
    }

    #[test]
    fn an_alertmanager_configuration_is_plaintext_only_with_a_credential_written_in() {
        // sob/home-ops: receivers read their credentials from files, a webhook in the cluster.
        let from_files = "route:\n  receiver: default\nreceivers:\n- name: robusta\n  \
            webhook_configs:\n  - url: 'http://robusta-runner.observability.svc.cluster.local/api/alerts'\n\
            - name: default\n  slack_configs:\n  - api_url_file: /etc/alertmanager/secrets/slack\n    \
            channel: '#alerts'\n  pushover_configs:\n  - user_key_file: /etc/am/user\n    \
            token_file: /etc/am/token\n";
        assert!(!is_plaintext(from_files));
        let slack =
            "route:\n  receiver: default\nreceivers:\n- name: default\n  slack_configs:\n  \
            - api_url: https://hooks.slack.com/services/T0/B0/XXXX\n";
        assert!(is_plaintext(slack));
        let discord = "route:\n  receiver: d\nreceivers:\n- name: d\n  webhook_configs:\n  \
            - url: https://discord.com/api/webhooks/1/abc\n";
        assert!(is_plaintext(discord));
        let smtp = "global:\n  smtp_auth_password: hunter2\nroute:\n  receiver: d\nreceivers:\n- name: d\n";
        assert!(is_plaintext(smtp));
        let basic_auth = "route:\n  receiver: d\nreceivers:\n- name: d\n  webhook_configs:\n  \
            - url: http://relay\n    http_config:\n      basic_auth:\n        password: hunter2\n";
        assert!(is_plaintext(basic_auth));
        let substituted = "route:\n  receiver: d\nreceivers:\n- name: d\n  pushover_configs:\n  \
            - token: ${PUSHOVER_TOKEN}\n    user_key: ${PUSHOVER_USER}\n";
        assert!(!is_plaintext(substituted));
        // Not an Alertmanager configuration: judged as any value.
        assert!(is_plaintext("receivers: []\n"));
        assert!(!is_plaintext("${DB_PASSWORD}"));
        assert!(!is_plaintext(" ${A}${B} "));
        assert!(!is_plaintext(""));
        // Secret managers' references are templates, not secrets.
        assert!(!is_plaintext(
            "op://kubernetes/1password/OP_CONNECT_TOKEN\n"
        ));
        assert!(!is_plaintext("{{ op://vault/item/field }}"));
        assert!(!is_plaintext("vault:secret/data/app#password"));
        assert!(!is_plaintext("ref+vault://secret/app#/password"));
        assert!(!is_plaintext("<path:secret/data/app#password>"));
        assert!(!is_plaintext("akv://my-vault/secret"));
        assert!(!is_plaintext("op://Automation/1password connect/token"));
        assert!(!is_plaintext("secret://op_connect_token"));
        assert!(!is_plaintext("azure://homelab-vault/flux-git-token"));
        assert!(is_plaintext("secret-token-value"));
        assert!(is_plaintext("op://vault/item/field\nhunter2"));
        assert!(is_plaintext("password: op"));
        // base64 of `op://vault/item/field`, and of `hunter2`.
        assert!(!is_plaintext_data("b3A6Ly92YXVsdC9pdGVtL2ZpZWxk"));
        assert!(is_plaintext_data("aHVudGVyMg=="));
        assert!(!is_plaintext(
            "ENC[AES256_GCM,data:abc=,iv:x,tag:y,type:str]"
        ));
    }
}

#[cfg(test)]
mod identity_keys {
    use super::{
        is_certificate, is_configuration_without_credentials, is_identity_key, is_network_name,
        secret_document,
    };
    use std::path::Path;

    fn finding_key(text: &str) -> Option<String> {
        let doc = plumb_yaml::parse_documents("secret.yaml", text)
            .unwrap()
            .remove(0);
        secret_document(&doc, Path::new("")).map(|f| f.message)
    }

    #[test]
    fn a_certificate_is_public_but_the_key_beside_it_is_not() {
        use base64::Engine;
        let b64 = |t: &str| base64::engine::general_purpose::STANDARD.encode(t);
        let cert = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n";
        let key =
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n";
        // xunholy/k8s-gitops: cilium's CA, certificate and key, rendered into the repository.
        let ca = format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cilium-ca\ndata:\n  ca.crt: {}\n  ca.key: {}\n",
            b64(cert),
            b64(key)
        );
        assert_eq!(
            finding_key(&ca).as_deref(),
            Some("Secret `cilium-ca` is committed with its `data.ca.key` in plaintext (base64 is an encoding, not encryption)")
        );
        // A trust bundle holds no secret: certificates only, one or a chain.
        let bundle = format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: root-ca\ndata:\n  ca.crt: {}\nstringData:\n  chain.pem: |\n    {}    {}",
            b64(cert),
            cert.replace('\n', "\n    "),
            cert.replace('\n', "\n    ")
        );
        assert_eq!(finding_key(&bundle), None, "{bundle}");
        // Text around a certificate is not a certificate.
        assert!(!is_certificate(&format!("{cert}password: x")));
        assert!(!is_certificate("-----BEGIN CERTIFICATE-----\nMIIB"));
    }

    #[test]
    fn a_user_name_is_no_credential_but_the_password_beside_it_is() {
        // ionfury/homelab: the password is generated in the cluster, only the user is written.
        let generated = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  annotations:\n    secret-generator.v1.mittwald.de/autogenerate: password\nstringData:\n  username: paperless\n";
        assert_eq!(finding_key(generated), None);
        let both = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  username: paperless\n  password: hunter2\n";
        assert_eq!(
            finding_key(both).as_deref(),
            Some("Secret `db` is committed with its `stringData.password` in plaintext")
        );
        for key in [
            "username",
            "USER",
            "POSTGRES_USER",
            "admin-user",
            "DB_USERNAME",
            "login",
            "adminUser",
            "clusterID",
            "volumeHandle",
            "fsName",
            "storageClass",
            "AWS_ACCESS_KEY_ID",
            "client-id",
            "DB_PORT",
            "protocol",
            "REDIS_HOSTNAME",
            "PGADMIN_DEFAULT_EMAIL",
            "DB_VECTOR_EXTENSION",
            "TRANSFORMERS_CACHE",
            "s3Bucket",
            "AUTHENTIK_LOG_LEVEL",
            "NUXT_STORAGE_DRIVER",
            "authMode",
        ] {
            assert!(is_identity_key(key), "{key}");
        }
        // geoffdavis/talos-gitops: settings beside a token an ExternalSecret fills in.
        let settings = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: proxy\nstringData:\n  AUTHENTIK_HOST: \"http://authentik-server.authentik.svc.cluster.local:80\"\n  AUTHENTIK_INSECURE: \"false\"\n  AUTHENTIK_LOG_LEVEL: \"info\"\n  AUTHENTIK_TOKEN: \"\"\n";
        assert_eq!(finding_key(settings), None);
        // wahooli/gitops-repo: a cluster's addresses and domains.
        for value in [
            "10.22.0.10",
            "192.168.0.0/16",
            "fd00::1",
            "localhost",
            "internal.localhost",
            "nas.example.com",
        ] {
            assert!(is_network_name(value), "{value}");
        }
        for value in [
            "c3I7yWDjKaxNcpS8",
            "password",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc",
            "abc.123",
            "10.0.0.0/abc",
        ] {
            assert!(!is_network_name(value), "{value}");
        }
        // gandazgul/k8s-infrastructure: Helm values of volumes and a grafana.ini in Secrets.
        for config in [
            "persistence:\n  main:\n    enabled: true\n    existingClaim: main-volume\n    mountPath: /data\n",
            "[date_formats]\ndefault_timezone = UTC\n",
            "{\n  \"datasources\": [{\"url\": \"http://prometheus:9090\", \"basicAuthPassword\": \"\"}]\n}\n",
            "auth:\n  password: ${ADMIN_PASSWORD}\n",
        ] {
            assert!(is_configuration_without_credentials(config), "{config}");
        }
        for config in [
            "admin:\n  password: hunter2\n",
            "[remote]\ntype = s3\nsecret_access_key = abc123\n",
            "{\"auths\": {\"ghcr.io\": {\"auth\": \"dXNlcjpwYXNz\"}}}\n",
            "url: https://user:pass@db.example.com/x\nname: a\n",
            "slack:\n  api_url: https://hooks.slack.com/services/T0/B0/XXXX\n",
            "alice: $apr1$abc$def\nbob: $apr1$ghi$jkl\n",
            "[Interface]\nPrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n",
            "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----\n",
            "just a line\nand another\n",
        ] {
            assert!(!is_configuration_without_credentials(config), "{config}");
        }
        // wrmilling/k3s-gitops: where a restic repository is, its keys substituted.
        let restic = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: restic\nstringData:\n  RESTIC_REPOSITORY: \"s3:http://minio.kube-system.svc:9000/restic/app\"\n  RESTIC_PASSWORD: ${RESTIC_PASSWORD}\n";
        assert_eq!(finding_key(restic), None);
        // A repository whose URL carries its keys, or a password beside the settings, is one.
        for value in ["s3:https://AKIA:secret@s3.example.com/b", "hunter2"] {
            let with = format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: r\nstringData:\n  RESTIC_REPOSITORY: \"{value}\"\n");
            assert!(finding_key(&with).is_some(), "{value}");
        }
        // zacheryph/k8s-gitops: a Secret whose credentials are substituted, with its connection
        // settings written in.
        let settings = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: immich\nstringData:\n  DB_HOSTNAME: ${HOST}\n  DB_PORT: \"5432\"\n  DB_USERNAME: immich\n  DB_PASSWORD: ${PASSWORD}\n  DB_DATABASE_NAME: immich\n  DB_VECTOR_EXTENSION: pgvector\n  REDIS_HOSTNAME: dragonfly.immich.svc\n  TRANSFORMERS_CACHE: /usr/src/app/.cache\n  protocol: https\n";
        assert_eq!(finding_key(settings), None);
        // sulibot/home-ops: a Secret of a volume's identifiers only.
        let identifiers = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: kopia\nstringData:\n  volumeHandle: \"0001-0024-407036f5\"\n  clusterID: \"407036f5\"\n  fsName: backups\n  storageClass: csi-cephfs\n";
        assert_eq!(finding_key(identifiers), None);
        let keys = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s3\nstringData:\n  AWS_ACCESS_KEY_ID: AKIAEXAMPLE\n  AWS_SECRET_ACCESS_KEY: c2VjcmV0\n";
        assert_eq!(
            finding_key(keys).as_deref(),
            Some(
                "Secret `s3` is committed with its `stringData.AWS_SECRET_ACCESS_KEY` in plaintext"
            )
        );
        for key in [
            "password",
            "user-password",
            "token",
            "usertoken",
            "api-key",
            "users.json",
            "clientSecret",
            "AWS_SECRET_ACCESS_KEY",
            "KOPIA_PASSWORD",
            "idToken",
            "name-and-password",
        ] {
            assert!(!is_identity_key(key), "{key}");
        }
    }
}
