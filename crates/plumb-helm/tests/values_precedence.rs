//! What chartutil's own tests leave implicit: the precedence that Go's shared maps and slices
//! give `targetPath` writes over `spec.values`, how objects and keys are looked up, how a
//! `targetPath` value is typed, what the `valuesFrom` schema refuses, and the errors' words.

use plumb_helm::values::{compose, ValuesError, ValuesKind, ValuesReference};
use serde_json::{json, Value};
use std::cell::Cell;
use std::collections::BTreeMap;

/// Objects as (kind, name, [(key, text)]).
type Objects<'a> = &'a [(ValuesKind, &'a str, &'a [(&'a str, &'a str)])];

fn compose_with(
    objects: Objects<'_>,
    references: Value,
    values: Option<Value>,
) -> Result<Value, ValuesError> {
    let references: Vec<ValuesReference> = references
        .as_array()
        .unwrap()
        .iter()
        .map(|e| ValuesReference::from_spec(e).unwrap())
        .collect();
    let source = |kind: ValuesKind, name: &str| {
        objects
            .iter()
            .find(|(k, n, _)| *k == kind && *n == name)
            .map(|(_, _, data)| {
                data.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>()
            })
    };
    compose(&references, &source, values.as_ref())
}

const SECRET: ValuesKind = ValuesKind::Secret;
const CONFIG_MAP: ValuesKind = ValuesKind::ConfigMap;

fn target(key: &str, path: &str) -> Value {
    json!({"kind": "Secret", "name": "s", "valuesKey": key, "targetPath": path})
}

/// PRODUCT.md's example: the targetPath write goes into `spec.values`' own `web` map (nothing
/// was merged with it yet), so the final merge of `spec.values` carries it.
#[test]
fn target_path_before_a_config_map_wins_over_spec_values() {
    let got = compose_with(
        &[
            (SECRET, "s", &[("replicas", "3")]),
            (
                CONFIG_MAP,
                "web",
                &[("values.yaml", "web:\n  image: nginx\n")],
            ),
        ],
        json!([target("replicas", "web.replicas"), {"kind": "ConfigMap", "name": "web"}]),
        Some(json!({"web": {"replicas": 5}})),
    )
    .unwrap();
    assert_eq!(got, json!({"web": {"replicas": 3, "image": "nginx"}}));
}

/// Reversed, the ConfigMap's `web` is merged with `spec.values`' `web` into a new map first,
/// the write lands there, and the final merge of `spec.values` puts 5 back.
#[test]
fn target_path_after_a_config_map_loses_to_spec_values() {
    let got = compose_with(
        &[
            (SECRET, "s", &[("replicas", "3")]),
            (
                CONFIG_MAP,
                "web",
                &[("values.yaml", "web:\n  image: nginx\n")],
            ),
        ],
        json!([{"kind": "ConfigMap", "name": "web"}, target("replicas", "web.replicas")]),
        Some(json!({"web": {"replicas": 5}})),
    )
    .unwrap();
    assert_eq!(got, json!({"web": {"image": "nginx", "replicas": 5}}));
}

/// After one `targetPath`, the result holds `spec.values`' own maps, so the next `targetPath`
/// merges them with themselves into new maps: its write lands there, and the final merge of
/// `spec.values` puts 5 back (an in-place list write still reaches the shared list).
#[test]
fn a_second_target_path_no_longer_reaches_spec_values_maps() {
    let objects: Objects<'_> = &[(SECRET, "s", &[("replicas", "3"), ("v", "v")])];
    let spec = json!({"web": {"replicas": 5, "list": ["x"]}});
    let got = compose_with(
        objects,
        json!([target("v", "other"), target("replicas", "web.replicas")]),
        Some(spec.clone()),
    )
    .unwrap();
    assert_eq!(
        got,
        json!({"web": {"replicas": 5, "list": ["x"]}, "other": "v"})
    );
    let got = compose_with(
        objects,
        json!([
            target("v", "other"),
            target("v", "web.list[1]"),
            target("v", "web.list[0]")
        ]),
        Some(spec.clone()),
    )
    .unwrap();
    assert_eq!(
        got,
        json!({"web": {"replicas": 5, "list": ["v"]}, "other": "v"})
    );
    let got = compose_with(
        objects,
        json!([target("replicas", "web.replicas"), target("v", "other")]),
        Some(spec),
    )
    .unwrap();
    assert_eq!(
        got,
        json!({"web": {"replicas": 3, "list": ["x"]}, "other": "v"})
    );
}

/// A write inside a `spec.values` list (index within its length) is made in the list itself.
#[test]
fn target_path_inside_a_spec_values_list_is_kept() {
    let got = compose_with(
        &[(SECRET, "s", &[("v", "v")])],
        json!([target("v", "a[0]")]),
        Some(json!({"a": ["x", "y"]})),
    )
    .unwrap();
    assert_eq!(got, json!({"a": ["v", "y"]}));
}

/// Past the end of a top-level `spec.values` list Helm makes a new, longer list; `spec.values`
/// keeps its own, and the final merge puts it back.
#[test]
fn target_path_past_a_top_level_spec_values_list_is_lost() {
    let got = compose_with(
        &[(SECRET, "s", &[("v", "v")])],
        json!([target("v", "a[2]")]),
        Some(json!({"a": ["x", "y"]})),
    )
    .unwrap();
    assert_eq!(got, json!({"a": ["x", "y"]}));
}

/// The same longer list under a `spec.values` map is stored in that (shared) map, so it stays.
#[test]
fn target_path_past_a_nested_spec_values_list_is_kept() {
    let got = compose_with(
        &[(SECRET, "s", &[("v", "v")])],
        json!([target("v", "web.list[2]")]),
        Some(json!({"web": {"list": ["x", "y"]}})),
    )
    .unwrap();
    assert_eq!(got, json!({"web": {"list": ["x", "y", "v"]}}));
}

#[test]
fn later_entries_override_earlier_ones() {
    let got = compose_with(
        &[
            (SECRET, "s", &[("one", "1"), ("two", "2")]),
            (CONFIG_MAP, "cm", &[("values.yaml", "a:\n  b: 3\n  c: 4\n")]),
        ],
        json!([target("one", "a.b"), target("two", "a.b"), {"kind": "ConfigMap", "name": "cm"}]),
        Some(json!({"other": true})),
    )
    .unwrap();
    assert_eq!(got, json!({"a": {"b": 3, "c": 4}, "other": true}));
}

#[test]
fn each_object_is_read_once() {
    let reads = Cell::new(0);
    let source = |_: ValuesKind, _: &str| {
        reads.set(reads.get() + 1);
        Some(BTreeMap::from([
            ("a".to_string(), "a: 1".to_string()),
            ("b".to_string(), "b: 2".to_string()),
        ]))
    };
    let references: Vec<ValuesReference> = [
        json!({"kind": "ConfigMap", "name": "x", "valuesKey": "a"}),
        json!({"kind": "ConfigMap", "name": "x", "valuesKey": "b"}),
        json!({"kind": "Secret", "name": "x", "valuesKey": "a"}),
    ]
    .iter()
    .map(|e| ValuesReference::from_spec(e).unwrap())
    .collect();
    let got = compose(&references, &source, None).unwrap();
    assert_eq!(got, json!({"a": 1, "b": 2}));
    assert_eq!(reads.get(), 2);
}

/// chartutil remembers an object an optional entry found missing; a later entry that is not
/// optional fails with "resource not found".
#[test]
fn missing_object_seen_before_is_resource_not_found() {
    let err = compose_with(
        &[],
        json!([{"kind": "Secret", "name": "gone", "optional": true},
               {"kind": "Secret", "name": "gone"}]),
        None,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "could not resolve Secret chart values reference 'gone' with key 'values.yaml': resource not found"
    );
}

/// `optional` also skips a missing key (the code does, whatever the CRD's description says).
#[test]
fn optional_skips_a_missing_key() {
    let got = compose_with(
        &[(CONFIG_MAP, "cm", &[("values.yaml", "a: 1")])],
        json!([{"kind": "ConfigMap", "name": "cm", "valuesKey": "other", "optional": true}]),
        Some(json!({"b": 2})),
    )
    .unwrap();
    assert_eq!(got, json!({"b": 2}));
}

/// `optional` does not excuse bad data, and the message says the reference was optional.
#[test]
fn optional_does_not_excuse_invalid_yaml() {
    let err = compose_with(
        &[(CONFIG_MAP, "cm", &[("values.yaml", "- a\n- b\n")])],
        json!([{"kind": "ConfigMap", "name": "cm", "optional": true}]),
        None,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "could not resolve optional ConfigMap chart values reference 'cm' with key 'values.yaml': error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type common.Values"
    );
}

#[test]
fn target_path_values_are_typed_as_helm_set_types_them() {
    let data: &[(&str, &str)] = &[
        ("int", "3"),
        ("float", "1.5"),
        ("zero", "0"),
        ("octal", "007"),
        ("null", "null"),
        ("upper", "TRUE"),
        ("single", "'3'"),
        ("double", "\"false\""),
        ("quote", "'"),
        ("empty", ""),
        ("big", "99999999999999999999"),
    ];
    let references: Vec<Value> = data
        .iter()
        .map(|(k, _)| target(k, &format!("v.{k}")))
        .collect();
    let got = compose_with(&[(SECRET, "s", data)], Value::Array(references), None).unwrap();
    assert_eq!(
        got,
        json!({"v": {"int": 3, "float": "1.5", "zero": 0, "octal": "007", "null": null,
                     "upper": true, "single": "3", "double": "false", "quote": "",
                     "empty": "", "big": "99999999999999999999"}})
    );
}

/// Commas in a non-literal value start new keys at the top of the values.
#[test]
fn target_path_value_with_a_comma_sets_another_key() {
    let got = compose_with(
        &[(SECRET, "s", &[("v", "1,other.key=x")])],
        json!([target("v", "a")]),
        None,
    )
    .unwrap();
    assert_eq!(got, json!({"a": 1, "other": {"key": "x"}}));
}

/// Helm's parser asserts types and recovers the panic as an error; chartutil reports it.
#[test]
fn target_path_through_a_scalar_fails_as_helm_does() {
    let cases = [
        (
            json!({"a": "text"}),
            "a.b",
            "string, not map[string]interface {}",
        ),
        (
            json!({"a": null}),
            "a.b",
            "nil, not map[string]interface {}",
        ),
        (
            json!({"a": 3}),
            "a.b",
            "float64, not map[string]interface {}",
        ),
        (
            json!({"a": {"b": 1}}),
            "a[0]",
            "map[string]interface {}, not []interface {}",
        ),
    ];
    for (values, path, conversion) in cases {
        let err = compose_with(
            &[(SECRET, "s", &[("v", "x")])],
            json!([target("v", path)]),
            Some(values),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "could not resolve Secret chart values reference 's' with key 'v': targetPath '{path}': unable to parse key: interface conversion: interface {{}} is {conversion}"
            )
        );
    }
}

/// Values data is read as YAML 1.1 through JSON (sigs.k8s.io/yaml), the first document only.
#[test]
fn values_data_is_read_as_yaml_1_1() {
    let got = compose_with(
        &[(
            CONFIG_MAP,
            "cm",
            &[(
                "values.yaml",
                "enabled: yes\non: off\n1: one\ndate: 2024-01-02\nempty:\nhex: 0x10\n---\nsecond: doc\n",
            )],
        )],
        json!([{"kind": "ConfigMap", "name": "cm"}]),
        None,
    )
    .unwrap();
    assert_eq!(
        got,
        json!({"enabled": true, "true": false, "1": "one", "date": "2024-01-02",
               "empty": null, "hex": 16})
    );
}

#[test]
fn empty_or_null_data_is_no_values() {
    let got = compose_with(
        &[(
            CONFIG_MAP,
            "cm",
            &[("a", ""), ("b", "null\n"), ("c", "# nothing\n")],
        )],
        json!([{"kind": "ConfigMap", "name": "cm", "valuesKey": "a"},
               {"kind": "ConfigMap", "name": "cm", "valuesKey": "b"},
               {"kind": "ConfigMap", "name": "cm", "valuesKey": "c"}]),
        Some(json!({"x": 1})),
    )
    .unwrap();
    assert_eq!(got, json!({"x": 1}));
}

#[test]
fn spec_values_that_are_not_an_object_count_as_none() {
    let got = compose_with(&[], json!([]), Some(json!(["not", "a", "map"]))).unwrap();
    assert_eq!(got, json!({}));
}

#[test]
fn unfinished_yaml_names_the_line() {
    let err = compose_with(
        &[(CONFIG_MAP, "cm", &[("values.yaml", "a: 1\nb: [c\n")])],
        json!([{"kind": "ConfigMap", "name": "cm"}]),
        None,
    )
    .unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with(
            "could not resolve ConfigMap chart values reference 'cm' with key 'values.yaml': error converting YAML to JSON: yaml: line "
        ),
        "{message}"
    );
}

#[test]
fn from_spec_reads_every_field() {
    let reference = ValuesReference::from_spec(&json!({
        "kind": "Secret", "name": "s", "valuesKey": "k.yaml", "targetPath": "a\\.b[1].c",
        "optional": true, "literal": true
    }))
    .unwrap();
    assert_eq!(
        reference,
        ValuesReference {
            kind: ValuesKind::Secret,
            name: "s".into(),
            values_key: Some("k.yaml".into()),
            target_path: Some("a\\.b[1].c".into()),
            optional: true,
            literal: true,
        }
    );
    assert_eq!(reference.key(), "k.yaml");
    let defaulted = ValuesReference::from_spec(&json!({"kind": "ConfigMap", "name": "c"})).unwrap();
    assert_eq!(defaulted.key(), "values.yaml");
    assert!(!defaulted.optional && !defaulted.literal && defaulted.target_path.is_none());
}

#[test]
fn from_spec_refuses_what_the_crd_refuses() {
    let cases = [
        (json!({"name": "x"}), "kind: Required value"),
        (json!({"kind": "ConfigMap"}), "name: Required value"),
        (
            json!({"kind": "ConfigMap", "name": ""}),
            "name: Invalid value",
        ),
        (
            json!({"kind": "ConfigMap", "name": "x", "valuesKey": "a/b"}),
            "valuesKey: Invalid value",
        ),
        (
            json!({"kind": "ConfigMap", "name": "x", "targetPath": "a=b"}),
            "targetPath: Invalid value",
        ),
        (
            json!({"kind": "ConfigMap", "name": "x", "targetPath": "a[123456]"}),
            "targetPath: Invalid value",
        ),
        (
            json!({"kind": "ConfigMap", "name": "x", "targetPath": "a[]"}),
            "targetPath: Invalid value",
        ),
        (
            json!({"kind": "ConfigMap", "name": "x", "optional": "yes"}),
            "optional: must be a boolean",
        ),
        (
            json!({"kind": "ConfigMap", "name": 3}),
            "name: must be a string",
        ),
        (json!("ConfigMap/x"), "must be an object"),
    ];
    for (entry, expected) in cases {
        let err = ValuesReference::from_spec(&entry).unwrap_err();
        assert!(
            matches!(err, ValuesError::InvalidReference(_)),
            "{entry}: {err:?}"
        );
        assert!(err.to_string().contains(expected), "{entry}: {err}");
    }
    assert!(ValuesReference::from_spec(
        &json!({"kind": "ConfigMap", "name": "x", "targetPath": "a_b-c.d\\.e/f[0][12345]"})
    )
    .is_ok());
}
