//! fluxcd/pkg `chartutil` (v1.27, what helm-controller v1.6 builds with): every case of
//! `values_test.go` (`TestChartValuesFromReferences`, `TestReplacePathValue`,
//! `TestReplacePathLiteralValue`) and `merge_test.go` (`TestMergeMaps`), same inputs, same
//! expected output. Each test is named after its Go case.

use plumb_helm::values::{
    compose, merge_maps, replace_path_literal_value, replace_path_value, ValuesError, ValuesKind,
    ValuesReference,
};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

type Objects = Vec<(ValuesKind, &'static str, Vec<(&'static str, &'static str)>)>;

fn config_map(name: &'static str, data: &[(&'static str, &'static str)]) -> Objects {
    vec![(ValuesKind::ConfigMap, name, data.to_vec())]
}

fn secret(name: &'static str, data: &[(&'static str, &'static str)]) -> Objects {
    vec![(ValuesKind::Secret, name, data.to_vec())]
}

fn refs(entries: Value) -> Vec<ValuesReference> {
    entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| ValuesReference::from_spec(e).unwrap())
        .collect()
}

/// `ChartValuesFromReferences` over `objects`, with `values` as `spec.values` YAML text.
fn run(objects: Objects, references: Value, values: &str) -> Result<Value, ValuesError> {
    let source = move |kind: ValuesKind, name: &str| {
        objects
            .iter()
            .find(|(k, n, _)| *k == kind && *n == name)
            .map(|(_, _, data)| {
                data.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>()
            })
    };
    let spec: Option<Value> = if values.is_empty() {
        None
    } else {
        let docs = plumb_yaml::parse_documents("spec.values", values).unwrap();
        Some(plumb_yaml::to_json(&docs[0]).unwrap())
    };
    compose(&refs(references), &source, spec.as_ref())
}

#[test]
fn merges() {
    let mut objects = config_map(
        "values",
        &[(
            "values.yaml",
            "flat: value\nnested:\n  configuration: value\n",
        )],
    );
    objects.extend(secret(
        "values",
        &[("values.yaml", "flat:\n  nested: value\nnested: value\n")],
    ));
    let got = run(
        objects,
        json!([{"kind": "ConfigMap", "name": "values"}, {"kind": "Secret", "name": "values"}]),
        "\nother: values\n",
    )
    .unwrap();
    assert_eq!(
        got,
        json!({"flat": {"nested": "value"}, "nested": "value", "other": "values"})
    );
}

#[test]
fn with_target_path() {
    let got = run(
        secret("values", &[("single", "value")]),
        json!([{"kind": "Secret", "name": "values", "valuesKey": "single",
                "targetPath": "merge.at.specific.path"}]),
        "",
    )
    .unwrap();
    assert_eq!(
        got,
        json!({"merge": {"at": {"specific": {"path": "value"}}}})
    );
}

#[test]
fn target_path_precedence_over_all() {
    let mut objects = config_map(
        "values",
        &[(
            "values.yaml",
            "flat: value\nnested:\n  configuration:\n  - one\n  - two\n  - three\n",
        )],
    );
    objects.extend(secret("values", &[("key", "value")]));
    let got = run(
        objects,
        json!([
            {"kind": "Secret", "name": "values", "valuesKey": "key",
             "targetPath": "nested.configuration[0]"},
            {"kind": "ConfigMap", "name": "values"}
        ]),
        "\nnested:\n  configuration:\n  - list\n  - item\n  - option\n",
    )
    .unwrap();
    assert_eq!(
        got,
        json!({"flat": "value", "nested": {"configuration": ["value", "item", "option"]}})
    );
}

#[test]
fn target_path_for_string_type_array_item() {
    let mut objects = config_map(
        "values",
        &[(
            "values.yaml",
            "flat: value\nnested:\n  configuration:\n  - list\n  - item\n  - option\n",
        )],
    );
    objects.extend(secret("values", &[("values.yaml", "foo")]));
    let got = run(
        objects,
        json!([
            {"kind": "ConfigMap", "name": "values"},
            {"kind": "Secret", "name": "values", "targetPath": "nested.configuration[1]"}
        ]),
        "\nother: values\n",
    )
    .unwrap();
    assert_eq!(
        got,
        json!({"flat": "value", "nested": {"configuration": ["list", "foo", "option"]},
               "other": "values"})
    );
}

#[test]
fn values_reference_to_non_existing_secret() {
    let err = run(vec![], json!([{"kind": "Secret", "name": "missing"}]), "").unwrap_err();
    assert!(matches!(err, ValuesError::NotFound { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "could not resolve Secret chart values reference 'missing' with key 'values.yaml': secrets \"missing\" not found"
    );
}

#[test]
fn optional_values_reference_to_non_existing_secret() {
    let got = run(
        vec![],
        json!([{"kind": "Secret", "name": "missing", "optional": true}]),
        "",
    )
    .unwrap();
    assert_eq!(got, json!({}));
}

#[test]
fn values_reference_to_non_existing_config_map() {
    let err = run(
        vec![],
        json!([{"kind": "ConfigMap", "name": "missing"}]),
        "",
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "could not resolve ConfigMap chart values reference 'missing' with key 'values.yaml': configmaps \"missing\" not found"
    );
}

#[test]
fn optional_values_reference_to_non_existing_config_map() {
    let got = run(
        vec![],
        json!([{"kind": "ConfigMap", "name": "missing", "optional": true}]),
        "",
    )
    .unwrap();
    assert_eq!(got, json!({}));
}

#[test]
fn missing_secret_key() {
    let err = run(
        secret("values", &[]),
        json!([{"kind": "Secret", "name": "values", "valuesKey": "nonexisting"}]),
        "",
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "could not resolve Secret chart values reference 'values' with key 'nonexisting': key not found"
    );
}

#[test]
fn missing_config_map_key() {
    let err = run(
        config_map("values", &[]),
        json!([{"kind": "ConfigMap", "name": "values", "valuesKey": "nonexisting"}]),
        "",
    )
    .unwrap_err();
    assert!(matches!(err, ValuesError::KeyNotFound { .. }), "{err:?}");
}

#[test]
fn unsupported_values_reference_kind() {
    let err = ValuesReference::from_spec(&json!({"kind": "Unsupported", "name": "x"})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "could not resolve Unsupported chart values reference 'x' with key 'values.yaml': unsupported values reference kind"
    );
}

#[test]
fn invalid_values() {
    let err = run(
        config_map("values", &[("values.yaml", "\ninvalid")]),
        json!([{"kind": "ConfigMap", "name": "values"}]),
        "",
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "could not resolve ConfigMap chart values reference 'values' with key 'values.yaml': error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of type common.Values"
    );
}

#[test]
fn non_literal_target_path_mangles_value_with_commas() {
    let err = run(
        config_map("values", &[("application.yml", "endpoints: [a,b,c]")]),
        json!([{"kind": "ConfigMap", "name": "values", "valuesKey": "application.yml",
                "targetPath": "externalConfig.application\\.yml.content"}]),
        "",
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "could not resolve ConfigMap chart values reference 'values' with key 'application.yml': targetPath 'externalConfig.application\\.yml.content': key \"b\" has no value (cannot end with ,)"
    );
}

const APPLICATION_YML: &str = "server:\n  port: 8080\nmanagement:\n  endpoints:\n    web:\n      exposure:\n        include: [ \"prometheus\", \"health\" ]\n";

#[test]
fn literal_target_path_preserves_helm_set_metacharacters() {
    let got = run(
        config_map("values", &[("application.yml", APPLICATION_YML)]),
        json!([{"kind": "ConfigMap", "name": "values", "valuesKey": "application.yml",
                "targetPath": "externalConfig.application\\.yml.content", "literal": true}]),
        "",
    )
    .unwrap();
    assert_eq!(
        got,
        json!({"externalConfig": {"application.yml": {"content": APPLICATION_YML}}})
    );
}

const APPLICATION_CONF: &str =
    "kafka {\n  bootstrap = \"b-1:9098,b-2:9098\"\n  group = \"my.service\"\n}\n";

#[test]
fn literal_target_path_preserves_multi_line_hocon_with_equals_and_braces() {
    let got = run(
        secret("values", &[("application.conf", APPLICATION_CONF)]),
        json!([{"kind": "Secret", "name": "values", "valuesKey": "application.conf",
                "targetPath": "externalConfig.application\\.conf.content", "literal": true}]),
        "",
    )
    .unwrap();
    assert_eq!(
        got,
        json!({"externalConfig": {"application.conf": {"content": APPLICATION_CONF}}})
    );
}

#[test]
fn literal_flag_without_target_path_is_ignored_root_yaml_merge() {
    let got = run(
        config_map("values", &[("values.yaml", "flat: value\n")]),
        json!([{"kind": "ConfigMap", "name": "values", "literal": true}]),
        "",
    )
    .unwrap();
    assert_eq!(got, json!({"flat": "value"}));
}

const BROKERS: &str = "kafka01.net:9092,kafka02.net:9092,kafka03.net:9092";

#[test]
fn flux2_2625_non_literal_comma_separated_brokers_fail_to_merge() {
    let err = run(
        secret("kafka", &[("brokers", BROKERS)]),
        json!([{"kind": "Secret", "name": "kafka", "valuesKey": "brokers",
                "targetPath": "kafka.brokers"}]),
        "",
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .ends_with("key \"net:9092\" has no value (cannot end with ,)"),
        "{err}"
    );
}

#[test]
fn flux2_2625_literal_comma_separated_brokers_preserved_verbatim() {
    let got = run(
        secret("kafka", &[("brokers", BROKERS)]),
        json!([{"kind": "Secret", "name": "kafka", "valuesKey": "brokers",
                "targetPath": "kafka.brokers", "literal": true}]),
        "",
    )
    .unwrap();
    assert_eq!(got, json!({"kafka": {"brokers": BROKERS}}));
}

// TestReplacePathValue

fn replaced(path: &str, value: &str) -> Value {
    let mut values = Map::new();
    replace_path_value(&mut values, path, value).unwrap();
    Value::Object(values)
}

fn replaced_literal(path: &str, value: &str) -> Value {
    let mut values = Map::new();
    replace_path_literal_value(&mut values, path, value).unwrap();
    Value::Object(values)
}

#[test]
fn replace_path_value_outer_inner() {
    assert_eq!(
        replaced("outer.inner", "value"),
        json!({"outer": {"inner": "value"}})
    );
}

#[test]
fn replace_path_value_inline_list() {
    assert_eq!(
        replaced("name", "{a,b,c}"),
        json!({"name": ["a", "b", "c"]})
    );
}

#[test]
fn replace_path_value_with_escape() {
    assert_eq!(
        replaced("name", "value1\\,value2"),
        json!({"name": "value1,value2"})
    );
}

#[test]
fn replace_path_value_target_path_with_boolean_value() {
    assert_eq!(
        replaced("merge.at.specific.path", "true"),
        json!({"merge": {"at": {"specific": {"path": true}}}})
    );
}

#[test]
fn replace_path_value_target_path_with_set_string_behavior() {
    assert_eq!(
        replaced("merge.at.specific.path", "\"true\""),
        json!({"merge": {"at": {"specific": {"path": "true"}}}})
    );
}

#[test]
fn replace_path_value_target_path_with_array_item() {
    assert_eq!(
        replaced("merge.at[2]", "value"),
        json!({"merge": {"at": [null, null, "value"]}})
    );
}

#[test]
fn replace_path_value_dot_sequence_escaping_path() {
    assert_eq!(
        replaced("nodeSelector.kubernetes\\.io/role", "master"),
        json!({"nodeSelector": {"kubernetes.io/role": "master"}})
    );
}

// TestReplacePathLiteralValue

#[test]
fn replace_path_literal_value_simple_string() {
    assert_eq!(
        replaced_literal("outer.inner", "value"),
        json!({"outer": {"inner": "value"}})
    );
}

#[test]
fn replace_path_literal_value_value_with_commas_is_preserved() {
    assert_eq!(replaced_literal("name", "a,b,c"), json!({"name": "a,b,c"}));
}

#[test]
fn replace_path_literal_value_value_with_braces_is_preserved_not_parsed_as_inline_list() {
    assert_eq!(
        replaced_literal("name", "{a,b,c}"),
        json!({"name": "{a,b,c}"})
    );
}

#[test]
fn replace_path_literal_value_value_with_equals_signs_is_preserved() {
    assert_eq!(
        replaced_literal("name", "foo=bar=baz"),
        json!({"name": "foo=bar=baz"})
    );
}

#[test]
fn replace_path_literal_value_value_with_brackets_is_preserved_not_parsed_as_array_index() {
    assert_eq!(
        replaced_literal("config", "endpoints: [a, b, c]"),
        json!({"config": "endpoints: [a, b, c]"})
    );
}

#[test]
fn replace_path_literal_value_multi_line_yaml_content_is_preserved_verbatim() {
    assert_eq!(
        replaced_literal("externalConfig.application\\.yml.content", APPLICATION_YML),
        json!({"externalConfig": {"application.yml": {"content": APPLICATION_YML}}})
    );
}

#[test]
fn replace_path_literal_value_hocon_content_with_equals_and_quoted_strings_is_preserved() {
    let hocon = "kafka {\n  bootstrap = \"b-1:9098,b-2:9098\"\n  group = \"svc.consumer\"\n}\n";
    assert_eq!(
        replaced_literal("externalConfig.application\\.conf.content", hocon),
        json!({"externalConfig": {"application.conf": {"content": hocon}}})
    );
}

#[test]
fn replace_path_literal_value_json_string_is_preserved_verbatim_no_escape_needed() {
    assert_eq!(
        replaced_literal("subnet_ids", r#"["a","b","c"]"#),
        json!({"subnet_ids": r#"["a","b","c"]"#})
    );
}

#[test]
fn replace_path_literal_value_boolean_like_string_stays_a_string() {
    assert_eq!(
        replaced_literal("feature.enabled", "true"),
        json!({"feature": {"enabled": "true"}})
    );
}

#[test]
fn replace_path_literal_value_dot_escape_in_path_still_works() {
    assert_eq!(
        replaced_literal("nodeSelector.kubernetes\\.io/role", "master"),
        json!({"nodeSelector": {"kubernetes.io/role": "master"}})
    );
}

#[test]
fn replace_path_literal_value_flux2_2625_kafka_broker_list_with_host_port_and_commas() {
    assert_eq!(
        replaced_literal("kafka.brokers", BROKERS),
        json!({"kafka": {"brokers": BROKERS}})
    );
}

// TestMergeMaps: one Go test with four assertions, one Rust test each.

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn nested_map() -> Map<String, Value> {
    object(json!({"foo": "bar", "baz": {"cool": "stuff"}}))
}

fn another_nested_map() -> Map<String, Value> {
    object(json!({"foo": "bar", "baz": {"cool": "things", "awesome": "stuff"}}))
}

fn flat_map() -> Map<String, Value> {
    object(json!({"foo": "bar", "baz": "stuff"}))
}

#[test]
fn merge_maps_nested_map_overwrites_a_flat_value() {
    assert_eq!(merge_maps(&flat_map(), &nested_map()), nested_map());
}

#[test]
fn merge_maps_flat_value_overwrites_a_map() {
    assert_eq!(merge_maps(&nested_map(), &flat_map()), flat_map());
}

#[test]
fn merge_maps_nested_map_overwrites_another_nested_map() {
    assert_eq!(
        merge_maps(&nested_map(), &another_nested_map()),
        another_nested_map()
    );
}

#[test]
fn merge_maps_map_with_different_keys_merges_properly() {
    let another_flat_map = object(json!({"testing": "fun"}));
    assert_eq!(
        merge_maps(&another_flat_map, &another_nested_map()),
        object(json!({"testing": "fun", "foo": "bar",
                      "baz": {"cool": "things", "awesome": "stuff"}}))
    );
}
