//! A fuzz harness for the build, run by `cargo test` on a fixed budget (a fixed seed and case
//! count, plus the regressions proptest saves in `fuzz.proptest-regressions`). Each case writes
//! a generated kustomization into a temporary directory (resources of a few kinds, some of
//! them broken YAML or alias bombs; strategic merge and JSON 6902 patches with targets whose
//! patterns may be invalid or huge; the common transformers) and builds it twice. The build
//! may fail but must not panic or abort, and must give the same result both times. Memory is
//! bounded by the parser's alias budget, which every resource and patch goes through.

use plumb_kustomize::{build_yaml, BuildOptions};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use std::fs;

const NAMES: &[&str] = &["web", "db", "app-1", "app-22", "cache"];

fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        24 => prop::sample::select(vec![
            "yes", "no", "on", "~", "null", "\"\"", "''", "1", "0644", "1e3", "1.0", "x", "'a b'",
            "\"q\\nr\"", "[]", "{}", "[a, b]", "{k: v}", "|\n      text", "!!str 1",
        ])
        .prop_map(str::to_string),
        12 => "[a-z0-9 .:-]{0,12}".prop_map(|s| format!("'{s}'")),
        1 => prop::sample::select(vec!["*nowhere", "{<<: {a: 1}}", ": :"]).prop_map(str::to_string),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        40 => prop::sample::select(vec!["a", "b", "c", "on", "'1'", "'x.y'"]),
        1 => prop::sample::select(vec!["$patch", "<<", "1"]),
    ]
    .prop_map(str::to_string)
}

/// Mapping entries at an indent of two, each key once (as YAML requires).
fn data() -> impl Strategy<Value = String> {
    proptest::collection::btree_map(key(), scalar(), 0..6).prop_map(|entries| {
        entries
            .into_iter()
            .map(|(k, v)| format!("  {k}: {v}\n"))
            .collect()
    })
}

fn containers() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        (
            prop::sample::select(NAMES),
            prop::sample::select(vec!["nginx", "nginx:1.2", "redis@sha256:ab", "x/y:z"]),
            proptest::option::of(1u16..100),
            proptest::option::of(prop::sample::select(vec!["TCP", "UDP"])),
        ),
        0..4,
    )
    .prop_map(|items| {
        items
            .into_iter()
            .map(|(name, image, port, protocol)| {
                let mut c = format!("      - name: {name}\n        image: {image}\n");
                if let Some(port) = port {
                    c.push_str(&format!(
                        "        ports:\n        - containerPort: {port}\n"
                    ));
                    if let Some(p) = protocol {
                        c.push_str(&format!("          protocol: {p}\n"));
                    }
                }
                c
            })
            .collect()
    })
}

/// One resource document (or, now and then, something that is not one).
fn resource() -> impl Strategy<Value = String> {
    let name = || prop::sample::select(NAMES);
    prop_oneof![
        4 => (name(), data()).prop_map(|(n, d)| {
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {n}\ndata:\n{d}")
        }),
        4 => (name(), proptest::option::of(0u8..5), containers()).prop_map(|(n, r, c)| {
            let replicas = r.map(|r| format!("  replicas: {r}\n")).unwrap_or_default();
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {n}\n  labels:\n    app: {n}\nspec:\n{replicas}  template:\n    spec:\n      containers:\n{c}"
            )
        }),
        2 => (name(), data()).prop_map(|(n, d)| {
            format!("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {n}\n  namespace: ns\nspec:\n{d}")
        }),
        1 => "[ -~\n]{0,80}",
        1 => (2usize..9).prop_map(|levels| {
            let mut text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n  l0: &l0 [x,x,x,x,x,x,x,x,x]\n".to_string();
            for l in 1..levels {
                text.push_str(&format!("  l{l}: &l{l} [{}]\n", vec![format!("*l{}", l - 1); 9].join(",")));
            }
            text
        }),
    ]
}

fn pattern() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "web",
            ".*",
            "app-[0-9]+",
            "web|db",
            "(",
            "a{1000}{1000}",
            "[[:alpha:]]+",
            "",
        ])
        .prop_map(str::to_string),
        (1usize..3).prop_map(|mb| "a".repeat(mb << 20)),
    ]
}

fn target() -> impl Strategy<Value = String> {
    (
        proptest::option::of(prop::sample::select(vec![
            "ConfigMap",
            "Deployment",
            "Widget",
            "Cm.*",
        ])),
        proptest::option::of(pattern()),
        proptest::option::of(prop::sample::select(vec![
            "app=web",
            "app in (web,db)",
            "!app",
            "=bad",
        ])),
    )
        .prop_map(|(kind, name, labels)| {
            let mut t = String::from("  target:\n");
            if let Some(k) = kind {
                t.push_str(&format!("    kind: {k}\n"));
            }
            if let Some(n) = name {
                t.push_str(&format!("    name: '{n}'\n"));
            }
            if let Some(l) = labels {
                t.push_str(&format!("    labelSelector: '{l}'\n"));
            }
            t
        })
}

/// A `patches` entry: an inline strategic merge or JSON 6902 patch, with or without a target.
fn patch() -> impl Strategy<Value = String> {
    let smp = (
        prop::sample::select(vec![
            ("v1", "ConfigMap"),
            ("apps/v1", "Deployment"),
            ("example.com/v1", "Widget"),
        ]),
        prop::sample::select(NAMES),
        data(),
        containers(),
        proptest::option::of(prop::sample::select(vec![
            "delete", "replace", "merge", "bogus",
        ])),
    )
        .prop_map(|((api, kind), name, d, c, directive)| {
            let directive = directive
                .map(|d| format!("$patch: {d}\n"))
                .unwrap_or_default();
            let body = if kind == "Deployment" {
                format!("spec:\n  template:\n    spec:\n      containers:\n{c}")
            } else {
                format!("data:\n{d}")
            };
            format!("apiVersion: {api}\nkind: {kind}\nmetadata:\n  name: {name}\n{directive}{body}")
        });
    let op = (
        prop::sample::select(vec!["add", "replace", "remove", "test", "move", "copy"]),
        prop::sample::select(vec![
            "/data/a",
            "/metadata/name",
            "/spec/replicas",
            "/spec/template/spec/containers/0/image",
            "/spec/template/spec/containers/-",
            "/data/~1x",
            "/nope/deeper",
            "bad",
        ]),
        scalar(),
    )
        .prop_map(|(op, path, value)| {
            format!("- op: {op}\n  path: {path}\n  from: /data/b\n  value: {value}\n")
        });
    let json = proptest::collection::vec(op, 1..4).prop_map(|ops| ops.concat());
    let body = prop_oneof![smp, json];
    (body, proptest::option::of(target())).prop_map(|(body, target)| {
        let indented: String = body.lines().map(|l| format!("    {l}\n")).collect();
        format!("- patch: |\n{indented}{}", target.unwrap_or_default())
    })
}

/// A kustomization and its resource files.
fn kustomization() -> impl Strategy<Value = (String, Vec<String>)> {
    (
        proptest::collection::vec(resource(), 1..4),
        proptest::collection::vec(patch(), 0..4),
        proptest::option::of(prop::sample::select(vec!["pre-", "x"])),
        proptest::option::of(prop::sample::select(vec!["prod", "kube-system"])),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(resources, patches, prefix, namespace, labels, images)| {
            let mut k = String::from("resources:\n");
            for i in 0..resources.len() {
                k.push_str(&format!("- r{i}.yaml\n"));
            }
            if !patches.is_empty() {
                k.push_str("patches:\n");
                k.push_str(&patches.concat());
            }
            if let Some(p) = prefix {
                k.push_str(&format!("namePrefix: {p}\n"));
            }
            if let Some(n) = namespace {
                k.push_str(&format!("namespace: {n}\n"));
            }
            if labels {
                k.push_str("labels:\n- pairs:\n    team: a\n  includeSelectors: true\n");
            }
            if images {
                k.push_str("images:\n- name: nginx\n  newTag: \"2\"\n- name: '('\n  newName: x\n");
            }
            (k, resources)
        })
}

proptest! {
    #![proptest_config(Config {
        cases: 192,
        rng_seed: RngSeed::Fixed(18),
        ..Config::default()
    })]

    #[test]
    fn generated_kustomizations_build_or_fail_the_same_way_twice(
        (k, resources) in kustomization()
    ) {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("kustomization.yaml"), &k).unwrap();
        for (i, r) in resources.iter().enumerate() {
            fs::write(tmp.path().join(format!("r{i}.yaml")), r).unwrap();
        }
        let options = BuildOptions::default();
        let first = build_yaml(tmp.path(), &options).map_err(|e| e.to_string());
        let second = build_yaml(tmp.path(), &options).map_err(|e| e.to_string());
        prop_assert_eq!(first, second);
    }
}
