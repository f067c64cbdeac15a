//! Differential test against the real sops binary: generated documents (nested mappings and
//! sequences; strings, integers, floats, booleans, nulls, timestamps and numbers in YAML's many
//! spellings) are encrypted by sops under each crypt rule, decrypted by plumb, and compared with
//! what `sops decrypt` prints. Values left in clear by a rule exercise the MAC's reading of plain
//! YAML scalars, which only agreement with sops can prove.
//!
//! Runs only when `PLUMB_SOPS_BIN` names a sops binary (`scripts/sops-oracle` installs one from
//! PyPI and runs this test); without it, it says so and passes.

use plumb_flux::sops::{decrypt_documents, AgeKeys};
use plumb_yaml::resolve::{resolve, Schema};
use plumb_yaml::{parse_documents, Node, NodeKind};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Cases per run; `PLUMB_SOPS_CASES` raises it.
const CASES: usize = 40;

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Scalars as written in YAML, including the spellings where readers disagree.
const SCALARS: &[&str] = &[
    "plain text",
    "\"quoted: text\"",
    "'single # quoted'",
    "\"123\"",
    "42",
    "-7",
    "0",
    "0644",
    "0x1F",
    "0o17",
    "1_000",
    "9223372036854775807",
    "3.14",
    "2.0",
    "1e-7",
    "6.02e23",
    "-0.5",
    ".inf",
    "-.Inf",
    "true",
    "false",
    "True",
    "yes",
    "no",
    "on",
    "~",
    "null",
    "\"\"",
    "2024-01-02",
    "2024-01-02T03:04:05Z",
    "2024-01-02 03:04:05",
    "2024-01-02T03:04:05.25+02:00",
    "2001-12-14t21:59:43.10-05:00",
    "\"2024-01-02\"",
    "\"grüße ✓\"",
    "\"line one\\nline two\"",
    "ENC-looking but plain",
];

const KEYS: &[&str] = &[
    "secret",
    "data",
    "clear",
    "meta",
    "name",
    "value",
    "password",
    "port",
    "enabled",
    "list",
    "nested",
    "x_unencrypted",
    "token",
];

fn value(rng: &mut Rng, depth: usize, indent: usize, out: &mut String) {
    let choice = if depth >= 3 { 0 } else { rng.below(6) };
    match choice {
        0..=2 => {
            out.push(' ');
            out.push_str(rng.pick(SCALARS));
            out.push('\n');
        }
        3 | 4 => {
            out.push('\n');
            mapping(rng, depth + 1, indent + 2, out);
        }
        _ => {
            out.push('\n');
            for _ in 0..1 + rng.below(3) {
                out.push_str(&" ".repeat(indent + 2));
                out.push('-');
                if rng.below(3) == 0 && depth < 2 {
                    out.push('\n');
                    mapping(rng, depth + 2, indent + 4, out);
                } else {
                    out.push(' ');
                    out.push_str(rng.pick(SCALARS));
                    out.push('\n');
                }
            }
        }
    }
}

fn mapping(rng: &mut Rng, depth: usize, indent: usize, out: &mut String) {
    let mut used = Vec::new();
    for _ in 0..1 + rng.below(4) {
        let key = rng.pick(KEYS);
        if used.contains(&key) {
            continue;
        }
        used.push(key);
        out.push_str(&" ".repeat(indent));
        out.push_str(key);
        out.push(':');
        value(rng, depth, indent, out);
    }
}

fn sops(bin: &Path, dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new(bin)
        .current_dir(dir)
        .args(args)
        .env("SOPS_AGE_KEY_FILE", fixtures().join("keys.txt"))
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The meaning of a document, as text: mappings and sequences with every scalar resolved as
/// kustomize reads it (JSON cannot compare them: it has no infinities).
fn canonical(node: &Node) -> String {
    match &node.kind {
        NodeKind::Scalar(s) => format!("{:?}", resolve(s, Schema::Kustomize)),
        NodeKind::Sequence(items) => {
            let items: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", items.join(", "))
        }
        NodeKind::Mapping(entries) => {
            let entries: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", canonical(k), canonical(v)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
    }
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sops")
}

#[test]
fn plumb_decrypts_what_sops_encrypts() {
    let Some(bin) = std::env::var_os("PLUMB_SOPS_BIN").map(PathBuf::from) else {
        println!("PLUMB_SOPS_BIN not set: differential test against sops skipped");
        return;
    };
    let recipient = std::fs::read_to_string(fixtures().join("recipient.txt")).unwrap();
    let recipient = recipient.trim();
    let keys = AgeKeys::from_file(&fixtures().join("keys.txt")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mac-only.yaml"),
        format!(
            "creation_rules:\n  - age: {recipient}\n    encrypted_regex: ^(secret|data|password|token)$\n    mac_only_encrypted: true\n"
        ),
    )
    .unwrap();
    let rules: [&[&str]; 5] = [
        &[],
        &["--encrypted-regex", "^(secret|data|password|token)$"],
        &["--unencrypted-regex", "^(clear|meta|name)$"],
        &["--encrypted-suffix", "et"],
        &["MAC_ONLY"],
    ];

    let cases = std::env::var("PLUMB_SOPS_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(CASES);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut failed = Vec::new();
    let mut skipped = 0;
    for case in 0..cases {
        let mut text = String::new();
        mapping(&mut rng, 0, 0, &mut text);
        let file = format!("case-{case}.yaml");
        std::fs::write(dir.path().join(&file), &text).unwrap();
        let rule = rules[case % rules.len()];
        let mut args: Vec<&str> = Vec::new();
        if rule == ["MAC_ONLY"] {
            args.extend(["--config", "mac-only.yaml", "encrypt"]);
        } else {
            args.extend(["encrypt", "--age", recipient]);
            args.extend(rule);
        }
        args.extend([
            "--input-type",
            "yaml",
            "--output-type",
            "yaml",
            file.as_str(),
        ]);
        let encrypted = match sops(&bin, dir.path(), &args) {
            Ok(t) => t,
            Err(e) => {
                // sops refuses some inputs (e.g. integers it cannot represent); so may we.
                println!(
                    "case {case}: sops cannot encrypt it ({}), skipped",
                    e.trim()
                );
                skipped += 1;
                continue;
            }
        };
        let enc_file = format!("case-{case}.enc.yaml");
        std::fs::write(dir.path().join(&enc_file), &encrypted).unwrap();
        let expected = sops(
            &bin,
            dir.path(),
            &[
                "decrypt",
                "--input-type",
                "yaml",
                "--output-type",
                "yaml",
                &enc_file,
            ],
        )
        .unwrap_or_else(|e| panic!("case {case}: sops cannot decrypt its own file: {e}"));

        let docs = parse_documents(&enc_file, &encrypted).unwrap();
        let got =
            decrypt_documents(&docs, &keys).map(|d| d.iter().map(canonical).collect::<Vec<_>>());
        let want: Vec<_> = parse_documents("expected.yaml", &expected)
            .unwrap()
            .iter()
            .map(canonical)
            .collect();
        match got {
            Ok(got) if got == want => {}
            Ok(got) => failed.push(format!(
                "case {case} ({rule:?}): values differ\n{text}\nplumb: {got:?}\nsops:  {want:?}"
            )),
            Err(e) => failed.push(format!("case {case} ({rule:?}): {e}\n{text}")),
        }
    }
    println!(
        "{} passed, {} failed, {} skipped",
        cases - skipped - failed.len(),
        failed.len(),
        skipped
    );
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
