//! SEC002: SOPS files that cannot be decrypted, were altered, or no creation rule covers.

use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};
use crate::rules::repo_files::{self, Chains};
use plumb_flux::sops::{
    decrypt_documents, is_encrypted_value, AgeKeys, CryptRule, Metadata, SopsError,
};
use plumb_yaml::Node;
use regex::Regex;
use std::path::{Path, PathBuf};

/// ## What it does
/// Reads every SOPS-encrypted YAML or JSON file of the repository and checks that sops and
/// kustomize-controller can still decrypt it:
///
/// - the `sops:` metadata is complete (`mac`, `lastmodified`, at least one recipient, at most
///   one encryption rule) and well-formed;
/// - every value the metadata's rule (`encrypted_regex`, `unencrypted_suffix`, ...) says is
///   encrypted is an `ENC[...]` value, not plaintext pasted in after encryption;
/// - no document holds `ENC[...]` values without any `sops:` metadata (the metadata was lost,
///   typically in a merge);
/// - a `.sops.yaml` in the file's directory or above has a creation rule whose `path_regex`
///   matches the file, so `sops updatekeys` and a new recipient reach it;
/// - when an age key is given (`SOPS_AGE_KEY_FILE` or `SOPS_AGE_KEY`, as for `plumb build`),
///   the values decrypt and the MAC matches them.
///
/// ## Why is this bad?
/// kustomize-controller refuses a file it cannot decrypt or whose MAC does not match, and the
/// whole Kustomization stops reconciling, usually noticed only when a credential is rotated.
/// A file outside every creation rule keeps its old recipients when keys are rotated: the day
/// the old key is revoked, the cluster can no longer read it.
///
/// ## Example
/// ```yaml
/// # .sops.yaml
/// creation_rules:
///   - path_regex: clusters/.*\.sops\.yaml$
///     age: age13tgzjy06gy9vw4jkffn7qx9a0232a0g5nzux40dlju44y788yuasc72rfu
/// ```
/// and the encrypted file `apps/backup/s3-credentials.sops.yaml`, which the rule does not
/// match; or an encrypted file whose `sops.mac` line was dropped while resolving a conflict.
///
/// Use instead: a creation rule that covers every encrypted file
/// (`path_regex: .*\.sops\.yaml$`), and re-encrypt a damaged file from its plaintext
/// (`sops --encrypt --in-place FILE`) rather than editing the ciphertext.
pub struct BrokenSopsFile;

impl Rule for BrokenSopsFile {
    fn code(&self) -> &'static str {
        "SEC002"
    }

    fn summary(&self) -> &'static str {
        "a SOPS file whose metadata or MAC is missing or broken, or not covered by a `.sops.yaml` rule"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        // A key that cannot be read is reported by the build; without one, MACs are not checked.
        let keys = AgeKeys::from_env().ok().flatten();
        self.check_with_keys(cx, keys.as_ref(), out);
    }
}

impl BrokenSopsFile {
    /// The check, with the age keys that verify values and MACs (`None`: structure only).
    pub fn check_with_keys(
        &self,
        cx: &CheckContext<'_>,
        keys: Option<&AgeKeys>,
        out: &mut Vec<Finding>,
    ) {
        let chains = Chains::of(cx.build, cx.root);
        for file in repo_files::yaml_files(cx.root, &["sops", "ENC["]) {
            let mut file_findings = Vec::new();
            check_file(
                cx.root,
                &file.path,
                &file.rel,
                &file.docs,
                keys,
                &mut file_findings,
            );
            let chain = file
                .docs
                .iter()
                .map(|d| chains.get(&file.rel, d))
                .find(|c| !c.is_empty())
                .unwrap_or_default();
            out.extend(file_findings.into_iter().map(|f| f.with_chain(chain)));
        }
    }
}

fn check_file(
    root: &Path,
    file: &Path,
    rel: &Path,
    docs: &[Node],
    keys: Option<&AgeKeys>,
    out: &mut Vec<Finding>,
) {
    let at = |node: &Node| Location::of(node, root);
    let mut encrypted = Vec::new();
    let mut intact = true;
    for doc in docs {
        let Some(sops_key) = doc.get_key("sops") else {
            if let Some(value) = first_encrypted_value(doc) {
                out.push(
                    Finding::new(
                        "SEC002",
                        format!("`{}` holds SOPS-encrypted values but no `sops:` metadata: nobody can decrypt it", rel.display()),
                        "restore the `sops:` block from Git history, or re-encrypt the file from its plaintext",
                    )
                    .at(at(value)),
                );
            }
            continue;
        };
        encrypted.push(doc.clone());
        match Metadata::from_document(doc) {
            Err(e) => {
                intact = false;
                out.push(
                    Finding::new(
                        "SEC002",
                        format!("the SOPS metadata of `{}` is broken: {e}", rel.display()),
                        "restore the `sops:` block from Git history, or re-encrypt the file from its plaintext (`sops --encrypt --in-place`)",
                    )
                    .at(at(sops_key)),
                );
            }
            Ok(metadata) if metadata.key_kinds.is_empty() => {
                intact = false;
                out.push(
                    Finding::new(
                        "SEC002",
                        format!("the SOPS metadata of `{}` lists no recipient: no key can decrypt it", rel.display()),
                        "re-encrypt the file for the cluster's age key (`sops --encrypt --age age1... --in-place`)",
                    )
                    .at(at(sops_key)),
                );
            }
            Ok(metadata) => {
                if let Some((path, value)) = plaintext_where_encrypted(doc, &metadata.rule) {
                    intact = false;
                    out.push(
                        Finding::new(
                            "SEC002",
                            format!("`{path}` in `{}` is plaintext, but the SOPS metadata says it is encrypted: the MAC no longer matches and the value is in Git", rel.display()),
                            "edit SOPS files with `sops edit FILE`, never by hand; re-encrypt it and rotate the value",
                        )
                        .at(at(value)),
                    );
                }
            }
        }
    }
    let Some(first) = encrypted.first() else {
        return;
    };
    let sops_key = first.get_key("sops");
    if let (true, Some(keys)) = (intact, keys) {
        if let Err(e) = decrypt_documents(&encrypted, keys) {
            if is_damage(&e) {
                out.push(
                    Finding::new(
                        "SEC002",
                        format!("`{}` does not decrypt: {e}", rel.display()),
                        "re-encrypt the file from its plaintext (`sops --encrypt --in-place`); edit it only with `sops edit`",
                    )
                    .at(first
                        .get("sops")
                        .and_then(|s| s.get_key("mac"))
                        .or(sops_key)
                        .and_then(at)),
                );
            }
        }
    }
    if let Some(problem) = coverage(root, file) {
        out.push(Finding::new("SEC002", problem.0, problem.1).at(sops_key.and_then(at)));
    }
}

/// Errors that mean the file is damaged, not that the key given is not one of its recipients.
fn is_damage(e: &SopsError) -> bool {
    matches!(
        e,
        SopsError::Metadata(_)
            | SopsError::DataKey(_)
            | SopsError::MalformedValue { .. }
            | SopsError::ValueAuthentication { .. }
            | SopsError::BadPlaintext { .. }
            | SopsError::MacAuthentication
            | SopsError::MacMismatch
    )
}

fn first_encrypted_value(node: &Node) -> Option<&Node> {
    if let Some(text) = node.scalar_value() {
        return is_encrypted_value(text).then_some(node);
    }
    if let Some(items) = node.as_sequence() {
        return items.iter().find_map(first_encrypted_value);
    }
    node.as_mapping()?
        .iter()
        .find_map(|(_, v)| first_encrypted_value(v))
}

/// Whether a value at a key path is encrypted.
type PathPredicate = Box<dyn Fn(&[&str]) -> bool>;

/// The first non-empty string value that the crypt rule says is encrypted but is not, with its
/// key path. Comment rules are not judged: the node tree keeps no comments.
fn plaintext_where_encrypted<'n>(doc: &'n Node, rule: &CryptRule) -> Option<(String, &'n Node)> {
    let compile = |r: &str| Regex::new(r).ok();
    let encrypts: PathPredicate = match rule {
        CryptRule::UnencryptedSuffix(s) => {
            let s = s.clone();
            Box::new(move |p| !p.iter().any(|k| k.ends_with(s.as_str())))
        }
        CryptRule::EncryptedSuffix(s) => {
            let s = s.clone();
            Box::new(move |p| p.iter().any(|k| k.ends_with(s.as_str())))
        }
        CryptRule::UnencryptedRegex(r) => {
            let r = compile(r)?;
            Box::new(move |p| !p.iter().any(|k| r.is_match(k)))
        }
        CryptRule::EncryptedRegex(r) => {
            let r = compile(r)?;
            Box::new(move |p| p.iter().any(|k| r.is_match(k)))
        }
        CryptRule::UnencryptedCommentRegex(_) | CryptRule::EncryptedCommentRegex(_) => return None,
    };
    let mut path = Vec::new();
    for (key, value) in doc.as_mapping()? {
        let name = key.scalar_value().unwrap_or_default();
        if name == "sops" {
            continue;
        }
        path.push(name);
        let found = walk_plaintext(value, &mut path, &*encrypts);
        path.pop();
        if found.is_some() {
            return found;
        }
    }
    None
}

fn walk_plaintext<'n>(
    node: &'n Node,
    path: &mut Vec<&'n str>,
    encrypts: &dyn Fn(&[&str]) -> bool,
) -> Option<(String, &'n Node)> {
    if let Some(scalar) = node.as_scalar() {
        let text = scalar.value.trim();
        let plain = !text.is_empty() && !node.is_null() && !is_encrypted_value(text);
        return (plain && encrypts(path)).then(|| (path.join("."), node));
    }
    if let Some(items) = node.as_sequence() {
        return items
            .iter()
            .find_map(|item| walk_plaintext(item, path, encrypts));
    }
    for (key, value) in node.as_mapping()? {
        path.push(key.scalar_value().unwrap_or_default());
        let found = walk_plaintext(value, path, encrypts);
        path.pop();
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Why no `.sops.yaml` creation rule covers `file`, if none does: the nearest `.sops.yaml` in
/// the file's directory or above (up to the repository root), whose first rule with a matching
/// `path_regex` (matched, as sops does, against the path relative to that file, unanchored; no
/// `path_regex` matches every file) decides.
fn coverage(root: &Path, file: &Path) -> Option<(String, String)> {
    let rel_display = repo_files::relative(root, file).display().to_string();
    let Some(config) = nearest_config(root, file) else {
        return Some((
            format!("no `.sops.yaml` covers `{rel_display}`: `sops updatekeys` and new recipients never reach it"),
            format!("add a `.sops.yaml` at the repository root with a creation rule whose `path_regex` matches `{rel_display}`"),
        ));
    };
    let docs = repo_files::documents(&config)?;
    let rules = docs.first()?.get("creation_rules")?.as_sequence()?;
    let config_dir = config.parent().unwrap_or(root);
    let against = file
        .strip_prefix(config_dir)
        .unwrap_or(file)
        .to_string_lossy()
        .replace('\\', "/");
    let covered = rules.iter().any(|rule| match rule.str_at(&["path_regex"]) {
        None | Some("") => true,
        Some(pattern) => Regex::new(pattern).is_ok_and(|r| r.is_match(&against)),
    });
    let config_rel = repo_files::relative(root, &config).display().to_string();
    (!covered).then(|| {
        (
            format!("no creation rule of `{config_rel}` matches `{against}`: `sops updatekeys` and new recipients never reach it"),
            format!("add a creation rule whose `path_regex` matches `{against}`, or move the file where one does"),
        )
    })
}

fn nearest_config(root: &Path, file: &Path) -> Option<PathBuf> {
    let mut dir = file.parent();
    while let Some(d) = dir {
        let candidate = d.join(".sops.yaml");
        if candidate.is_file() {
            return Some(candidate);
        }
        if d == root || !d.starts_with(root) {
            return None;
        }
        dir = d.parent();
    }
    None
}
