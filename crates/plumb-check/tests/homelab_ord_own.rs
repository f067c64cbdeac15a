//! Issue 5's acceptance for the apply-order and ownership rules, on `examples/homelab`: the
//! repository as committed has none of their findings, and each planted mistake gives exactly
//! the expected finding at the expected place.

use plumb_check::{check, CheckConfig, Finding};
use plumb_flux::build::{build_repository, Options};
use std::path::{Path, PathBuf};

const CODES: &[&str] = &[
    "ORD001", "ORD002", "ORD003", "ORD004", "ORD005", "ORD006", "OWN001", "REF001",
];

/// A fresh copy of `examples/homelab` in a directory of its own.
fn homelab(name: &str) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/homelab");
    let to = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("homelab-ord-own-{name}"));
    let _ = std::fs::remove_dir_all(&to);
    copy_dir(&from, &to);
    to
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Replaces `old` (which must be there) with `new` in one file of the repository.
fn edit(root: &Path, file: &str, old: &str, new: &str) {
    let path = root.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(old), "{file} has no {old:?}");
    std::fs::write(&path, text.replacen(old, new, 1)).unwrap();
}

/// This area's findings for one entry of the repository at `root`.
fn findings(root: &Path, entry: &str) -> Vec<Finding> {
    let config = CheckConfig::load(root).unwrap();
    let options = Options {
        entries: vec![entry.to_string()],
        ..Options::default()
    };
    let build = build_repository(root, &options).unwrap();
    check(&build.root, &build, &config)
        .into_iter()
        .filter(|f| CODES.contains(&f.code))
        .collect()
}

/// `CODE file:line:column` per finding.
fn places(findings: &[Finding]) -> Vec<String> {
    findings
        .iter()
        .map(|f| {
            let l = f.location.as_ref().expect("a finding with a location");
            format!("{} {}:{}:{}", f.code, l.file.display(), l.line, l.column)
        })
        .collect()
}

#[test]
fn the_committed_homelab_has_no_order_or_ownership_findings() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/homelab");
    for entry in ["clusters/dev", "clusters/prod"] {
        let found = findings(&root, entry);
        assert!(found.is_empty(), "{entry}: {:#?}", found);
    }
}

#[test]
fn a_runtime_crd_next_to_its_creator_is_a_deadlock() {
    let root = homelab("ord004");
    std::fs::rename(
        root.join("platform-config-cdi/golden-images.yaml"),
        root.join("platform-config/golden-images.yaml"),
    )
    .unwrap();
    edit(
        &root,
        "platform-config-cdi/kustomization.yaml",
        "  - golden-images.yaml\n",
        "",
    );
    edit(
        &root,
        "platform-config/kustomization.yaml",
        "  - cdi.yaml\n",
        "  - cdi.yaml\n  - golden-images.yaml\n",
    );
    let found = findings(&root, "clusters/dev");
    assert_eq!(
        places(&found),
        ["ORD004 platform-config/golden-images.yaml:3:7"]
    );
    let related = &found[0].related[0];
    assert_eq!(
        (related.location.file.as_path(), related.location.line),
        (Path::new("platform-config/cdi.yaml"), 4)
    );
    assert_eq!(
        found[0].chain,
        ["entry clusters/dev", "flux-system/platform-config"]
    );
}

#[test]
fn an_app_in_two_waves_has_two_writers() {
    let root = homelab("own001");
    edit(
        &root,
        "apps/wave-1/kustomization.yaml",
        "  - backup\n",
        "  - backup\n  - ../wave-0/podinfo\n",
    );
    let found = findings(&root, "clusters/dev");
    assert_eq!(
        places(&found),
        [
            "OWN001 apps/wave-0/podinfo/namespace.yaml:4:9",
            "OWN001 apps/wave-0/podinfo/release.yaml:4:9",
            "OWN001 apps/wave-0/podinfo/route.yaml:4:9",
            "OWN001 apps/wave-0/podinfo/source.yaml:4:9",
        ]
    );
    for f in &found {
        assert_eq!(f.chain.last().unwrap(), "flux-system/apps-wave-1");
        assert_eq!(
            f.related[0].location.file,
            Path::new("clusters/base/apps.yaml")
        );
    }
}

#[test]
fn a_dependency_on_a_missing_wave_is_reported() {
    let root = homelab("ord005");
    edit(
        &root,
        "clusters/base/apps.yaml",
        "    - name: apps-wave-1\n",
        "    - name: apps-wave-3\n",
    );
    let found = findings(&root, "clusters/dev");
    assert_eq!(places(&found), ["ORD005 clusters/base/apps.yaml:68:13"]);
    assert!(
        found[0].help.starts_with("did you mean `apps-wave-"),
        "{}",
        found[0].help
    );
}
