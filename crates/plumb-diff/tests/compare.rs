//! The diff engine on snapshots made by hand: what pairs with what, what counts as noise, what
//! a failing producer hides, and the markdown cut of a diff of several megabytes.

use plumb_diff::snapshot::{Cluster, Producer, ProducerId, ProducerKind, Snapshot, State};
use plumb_diff::{diff, Action, Options, Revision};
use serde_json::{json, Value};

fn ks(name: &str, parent: Option<&str>, prune: bool, objects: Vec<Value>) -> Producer {
    Producer {
        id: ProducerId {
            kind: ProducerKind::Kustomization,
            namespace: "flux-system".into(),
            name: name.into(),
        },
        title: format!("Kustomization flux-system/{name} ({name})"),
        state: State::Built,
        objects,
        prune,
        force: false,
        parent: parent.map(|p| ProducerId {
            kind: ProducerKind::Kustomization,
            namespace: "flux-system".into(),
            name: p.into(),
        }),
        chart: None,
    }
}

fn cm(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "a"}, "data": data})
}

fn snapshot(producers: Vec<Producer>) -> Snapshot {
    Snapshot {
        clusters: vec![Cluster {
            entry: "clusters/dev".into(),
            producers,
        }],
    }
}

#[test]
fn a_parent_that_fails_hides_its_children_instead_of_removing_their_objects() {
    let child_object = cm("x", json!({"a": "1"}));
    let base = snapshot(vec![
        ks("root", None, true, vec![]),
        ks("apps", Some("root"), true, vec![]),
        ks("child", Some("apps"), true, vec![child_object]),
    ]);
    let mut failing = ks("apps", Some("root"), true, vec![]);
    failing.state = State::Failed(vec!["error: boom".into()]);
    let head = snapshot(vec![ks("root", None, true, vec![]), failing]);
    let d = diff(&base, &head, &Options::default());
    assert_eq!(d.counts().removed, 0, "{:#?}", d.clusters);
    let child = d.clusters[0]
        .producers
        .iter()
        .find(|p| p.id.name == "child")
        .unwrap();
    assert!(!child.compared());
    assert!(
        child.status_text().contains("not built on head"),
        "{}",
        child.status_text()
    );
    assert!(d.dangers.is_empty());
}

#[test]
fn an_object_applied_by_another_producer_is_moved_once() {
    let obj = cm("shared", json!({"a": "1"}));
    let base = snapshot(vec![
        ks("a", None, true, vec![obj.clone()]),
        ks("b", None, true, vec![]),
    ]);
    let head = snapshot(vec![
        ks("a", None, true, vec![]),
        ks("b", None, true, vec![obj]),
    ]);
    let d = diff(&base, &head, &Options::default());
    let changes: Vec<_> = d.clusters[0]
        .producers
        .iter()
        .flat_map(|p| p.changes.iter().map(move |c| (p.id.name.clone(), c.action)))
        .collect();
    assert_eq!(changes, vec![("b".to_string(), Action::Moved)]);
}

#[test]
fn a_generated_name_whose_content_is_unchanged_is_noise_and_so_are_its_references() {
    let deploy = |cm_name: &str| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "a"},
               "spec": {"template": {"spec": {"volumes": [{"name": "v", "configMap": {"name": cm_name}}]}}}})
    };
    let mut labelled = cm("vars-7t2m9dkb5f", json!({"a": "1"}));
    labelled["metadata"]["labels"] = json!({"helm.sh/chart": "x-1"});
    let base = snapshot(vec![ks(
        "a",
        None,
        true,
        vec![labelled, deploy("vars-7t2m9dkb5f")],
    )]);
    let mut relabelled = cm("vars-gh45kt6m2c", json!({"a": "1"}));
    relabelled["metadata"]["labels"] = json!({"helm.sh/chart": "x-2"});
    let head = snapshot(vec![ks(
        "a",
        None,
        true,
        vec![relabelled, deploy("vars-gh45kt6m2c")],
    )]);
    let d = diff(&base, &head, &Options::default());
    assert!(
        !d.has_changes(),
        "{:#?}",
        d.clusters[0].producers[0].changes
    );
    assert_eq!(d.noise.len(), 2, "{:#?}", d.noise);
    let shown = diff(&base, &head, &Options { show_noise: true });
    assert_eq!(shown.counts().changed, 2);
    assert!(shown.clusters[0].producers[0].changes[0]
        .diff
        .contains("helm.sh/chart"));

    // The content changes too: a change, shown under its base name.
    let changed = snapshot(vec![ks(
        "a",
        None,
        true,
        vec![
            cm("vars-gh45kt6m2c", json!({"a": "2"})),
            deploy("vars-gh45kt6m2c"),
        ],
    )]);
    let d = diff(&base, &changed, &Options::default());
    let c = d.clusters[0].producers[0].changes.clone();
    assert_eq!(c.len(), 2, "{c:#?}");
    let cm_change = c.iter().find(|c| c.object.kind == "ConfigMap").unwrap();
    assert_eq!(cm_change.renamed_from.as_deref(), Some("vars-7t2m9dkb5f"));
    assert!(
        cm_change.diff.contains("-  a: \"1\"\n+  a: \"2\""),
        "{}",
        cm_change.diff
    );
}

#[test]
fn removing_a_pvc_is_dangerous_only_where_flux_deletes_it() {
    let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "a"}});
    let mut kept = pvc.clone();
    kept["metadata"]["annotations"] = json!({"kustomize.toolkit.fluxcd.io/prune": "disabled"});
    for (prune, object, expected) in [
        (true, pvc.clone(), 1),
        (false, pvc.clone(), 0),
        (true, kept, 0),
    ] {
        let base = snapshot(vec![ks("a", None, prune, vec![object])]);
        let head = snapshot(vec![ks("a", None, prune, vec![])]);
        let d = diff(&base, &head, &Options::default());
        assert_eq!(d.counts().removed, 1);
        assert_eq!(d.dangers.len(), expected, "prune {prune}: {:?}", d.dangers);
    }
    // The Kustomization itself goes: its parent prunes, it pruned: the claim goes.
    let base = snapshot(vec![
        ks("root", None, true, vec![]),
        ks("a", Some("root"), true, vec![pvc.clone()]),
    ]);
    let head = snapshot(vec![ks("root", None, true, vec![])]);
    assert_eq!(diff(&base, &head, &Options::default()).dangers.len(), 1);
    // A parent that does not prune leaves the Kustomization, and so the claim, in place.
    let base = snapshot(vec![
        ks("root", None, false, vec![]),
        ks("a", Some("root"), true, vec![pvc]),
    ]);
    let head = snapshot(vec![ks("root", None, false, vec![])]);
    assert!(diff(&base, &head, &Options::default()).dangers.is_empty());
}

/// Every `<details>` closed, every fence closed: the fences of a document alternate open and
/// close, and a block's closing fence comes before its `</details>`.
fn assert_valid_markdown(text: &str) {
    assert_eq!(
        text.matches("<details>").count(),
        text.matches("</details>").count(),
        "unbalanced details"
    );
    let mut open: Option<String> = None;
    for line in text.lines() {
        let ticks = line.chars().take_while(|c| *c == '`').count();
        if ticks >= 3 {
            match &open {
                None => open = Some("`".repeat(ticks)),
                Some(fence) if line == fence => open = None,
                Some(_) => {}
            }
        }
        if line == "</details>" {
            assert!(open.is_none(), "</details> inside a code block");
        }
    }
    assert!(open.is_none(), "a code fence is not closed");
}

#[test]
fn a_diff_of_megabytes_is_cut_to_the_limit_and_stays_valid_markdown() {
    let producers = |version: &str| -> Vec<Producer> {
        (0..40)
            .map(|i| {
                let objects = (0..100)
                    .map(|j| {
                        cm(
                            &format!("cm-{j}"),
                            json!({"payload": format!("{version} ```{}", "x".repeat(200 + j))}),
                        )
                    })
                    .collect();
                ks(&format!("app-{i}"), None, true, objects)
            })
            .collect()
    };
    let d = diff(
        &snapshot(producers("v1")),
        &snapshot(producers("v2")),
        &Options::default(),
    );
    let base = Revision {
        label: "main".into(),
        ..Revision::default()
    };
    let head = Revision {
        label: "work tree".into(),
        ..Revision::default()
    };
    let whole = plumb_diff::markdown::render(&d, &base, &head, usize::MAX);
    assert!(whole.len() > 2_000_000, "{} bytes", whole.len());
    assert_valid_markdown(&whole);
    for limit in [60_000, 10_000, 2_000] {
        let cut = plumb_diff::markdown::render(&d, &base, &head, limit);
        assert!(cut.len() <= limit, "{} > {limit}", cut.len());
        assert!(cut.contains(&format!("Cut to {limit} bytes")), "{cut}");
        assert_valid_markdown(&cut);
    }
    // At 60,000 bytes every producer still has its block, each shortened.
    let cut = plumb_diff::markdown::render(&d, &base, &head, 60_000);
    assert_eq!(cut.matches("<details>").count(), 40);
    assert_eq!(cut.matches("more lines cut").count(), 40);
}

/// The danger codes a change from `before` to `after` (one object of one pruning
/// Kustomization, or none on a side) gets.
fn dangers_of(before: Option<Value>, after: Option<Value>) -> Vec<(String, String)> {
    let base = snapshot(vec![ks("a", None, true, before.into_iter().collect())]);
    let head = snapshot(vec![ks("a", None, true, after.into_iter().collect())]);
    diff(&base, &head, &Options::default())
        .dangers
        .iter()
        .map(|d| (d.code.to_string(), d.message.clone()))
        .collect()
}

fn codes(list: &[(String, String)]) -> Vec<&str> {
    list.iter().map(|(c, _)| c.as_str()).collect()
}

#[test]
fn each_danger_is_noted_once_and_only_for_its_change() {
    let deploy = |replicas: Option<i64>, extra: Value| {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "a"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "template": {"spec": {"containers": [{"name": "web", "image": "web:1"}]}}}});
        if let Some(n) = replicas {
            d["spec"]["replicas"] = json!(n);
        }
        if let Value::Object(extra) = extra {
            for (k, v) in extra {
                d["spec"]["template"]["spec"][k] = v;
            }
        }
        d
    };
    // DIF004: the default of one, then an explicit 3, to 0; 0 to 2 is no danger.
    assert_eq!(
        codes(&dangers_of(
            Some(deploy(None, json!({}))),
            Some(deploy(Some(0), json!({})))
        )),
        ["DIF004"]
    );
    assert_eq!(
        codes(&dangers_of(
            Some(deploy(Some(3), json!({}))),
            Some(deploy(Some(0), json!({})))
        )),
        ["DIF004"]
    );
    assert!(dangers_of(
        Some(deploy(Some(0), json!({}))),
        Some(deploy(Some(2), json!({})))
    )
    .is_empty());

    // DIF007: a hostPath volume and a privileged container, added or new; kept ones are not.
    let host = json!({"volumes": [{"name": "sock", "hostPath": {"path": "/run/docker.sock"}}],
                      "containers": [{"name": "web", "image": "web:1", "securityContext": {"privileged": true}}]});
    let found = dangers_of(
        Some(deploy(None, json!({}))),
        Some(deploy(None, host.clone())),
    );
    assert_eq!(codes(&found), ["DIF007"]);
    assert!(
        found[0].1.contains("privileged container web") && found[0].1.contains("/run/docker.sock"),
        "{found:?}"
    );
    assert_eq!(
        codes(&dangers_of(None, Some(deploy(None, host.clone())))),
        ["DIF007"]
    );
    assert!(dangers_of(
        Some(deploy(None, host.clone())),
        Some(deploy(Some(2), host))
    )
    .is_empty());

    // DIF005: suspended and resumed.
    let hr = |suspend: Option<bool>| {
        let mut v = json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                           "metadata": {"name": "app", "namespace": "a"}, "spec": {"interval": "1h"}});
        if let Some(s) = suspend {
            v["spec"]["suspend"] = json!(s);
        }
        v
    };
    let suspended = dangers_of(Some(hr(None)), Some(hr(Some(true))));
    assert_eq!(codes(&suspended), ["DIF005"]);
    assert!(suspended[0].1.contains("is suspended"));
    let resumed = dangers_of(Some(hr(Some(true))), Some(hr(Some(false))));
    assert!(resumed[0].1.contains("is resumed"), "{resumed:?}");
    assert!(dangers_of(Some(hr(Some(false))), Some(hr(None))).is_empty());

    // DIF006: a wildcard rule gained, a cluster-admin binding; an unchanged wildcard is not.
    let role = |rules: Value| json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}, "rules": rules});
    let narrow = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]);
    let wide = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}, {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]);
    assert_eq!(
        codes(&dangers_of(
            Some(role(narrow.clone())),
            Some(role(wide.clone()))
        )),
        ["DIF006"]
    );
    assert!(dangers_of(
        Some(role(wide.clone())),
        Some(role(json!([wide[1].clone(), narrow[0].clone()])))
    )
    .is_empty());
    let binding = |role: &str| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "b"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role}})
    };
    let found = dangers_of(Some(binding("view")), Some(binding("cluster-admin")));
    // A binding's roleRef is immutable too: both notes, each once.
    assert_eq!(codes(&found), ["DIF001", "DIF006"], "{found:?}");

    // DIF008: prune turned on for a Kustomization that applies objects (the child producer).
    let child_ks = |prune: bool| {
        json!({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": "child", "namespace": "flux-system"}, "spec": {"prune": prune, "path": "./child"}})
    };
    let base = snapshot(vec![
        ks("root", None, true, vec![child_ks(false)]),
        ks(
            "child",
            Some("root"),
            false,
            vec![cm("x", json!({})), cm("y", json!({}))],
        ),
    ]);
    let head = snapshot(vec![
        ks("root", None, true, vec![child_ks(true)]),
        ks(
            "child",
            Some("root"),
            true,
            vec![cm("x", json!({})), cm("y", json!({}))],
        ),
    ]);
    let found = diff(&base, &head, &Options::default()).dangers;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].code, "DIF008");
    assert!(
        found[0].message.contains("the 2 objects it applies"),
        "{}",
        found[0].message
    );

    // DIF002: a claim shrinks; growing is fine.
    let pvc = |size: &str| {
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "d", "namespace": "a"},
        "spec": {"resources": {"requests": {"storage": size}}}})
    };
    assert_eq!(
        codes(&dangers_of(Some(pvc("10Gi")), Some(pvc("9500Mi")))),
        ["DIF002"]
    );
    assert!(dangers_of(Some(pvc("10Gi")), Some(pvc("20Gi"))).is_empty());
}

#[test]
fn an_unrendered_release_whose_values_config_map_changed_says_its_render_is_unknown() {
    let hr = json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": {"name": "app", "namespace": "a"},
        "spec": {"valuesFrom": [{"kind": "ConfigMap", "name": "app-values"}]}});
    let release = || Producer {
        id: ProducerId {
            kind: ProducerKind::HelmRelease,
            namespace: "a".into(),
            name: "app".into(),
        },
        title: "HelmRelease a/app".into(),
        state: State::NotBuilt("chart unavailable".into()),
        // Its values are objects of its Kustomization, not of the release.
        objects: vec![],
        prune: true,
        force: false,
        parent: Some(ProducerId {
            kind: ProducerKind::Kustomization,
            namespace: "flux-system".into(),
            name: "apps".into(),
        }),
        chart: None,
    };
    let side = |replicas: &str| {
        snapshot(vec![
            ks(
                "apps",
                None,
                true,
                vec![
                    hr.clone(),
                    cm("app-values", json!({"values.yaml": replicas})),
                ],
            ),
            release(),
        ])
    };
    let d = diff(
        &side("replicas: 1"),
        &side("replicas: 2"),
        &Options::default(),
    );
    let p = d.clusters[0]
        .producers
        .iter()
        .find(|p| p.id.name == "app" && p.id.kind == ProducerKind::HelmRelease)
        .unwrap();
    assert!(p.render_unknown, "{:#?}", d.clusters[0].producers);
    assert!(p.is_interesting());
    assert!(
        p.status_text().contains("what it renders is unknown"),
        "{}",
        p.status_text()
    );
    // Nothing it reads changed: not shown.
    let d = diff(
        &side("replicas: 1"),
        &side("replicas: 1"),
        &Options::default(),
    );
    assert!(!d.has_changes());
}
