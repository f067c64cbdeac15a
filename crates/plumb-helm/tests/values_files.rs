//! A chart's `valuesFiles` merged as source-controller merges them when it packages the chart
//! (`internal/helm/chart/builder_remote.go` `mergeChartValues`, `builder_local.go`
//! `mergeFileValues`). The cases of `Test_mergeChartValues` that are about the merge are here
//! under their Go names; the ones about missing files (`ignoreMissingValuesFiles`) are the
//! caller's, which passes only the files that exist.

use plumb_helm::values::{merge_values_files, ValuesError};
use serde_json::json;

fn files(entries: &[(&str, &str)]) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|(name, text)| (name.to_string(), text.to_string()))
        .collect()
}

#[test]
fn merges_values() {
    let got = merge_values_files(&files(&[
        ("a.yaml", "a: b"),
        ("b.yaml", "b: c"),
        ("c.yaml", "b: d"),
    ]))
    .unwrap();
    assert_eq!(got, json!({"a": "b", "b": "d"}));
}

#[test]
fn uses_chart_values() {
    let got = merge_values_files(&files(&[("values.yaml", "a: b\n"), ("c.yaml", "b: d")])).unwrap();
    assert_eq!(got, json!({"a": "b", "b": "d"}));
}

#[test]
fn unmarshal_error() {
    let err = merge_values_files(&files(&[("invalid", "abcd")])).unwrap_err();
    assert!(matches!(err, ValuesError::ValuesFile { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "unmarshaling values from 'invalid' failed: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of type map[string]interface {}"
    );
}

#[test]
fn merges_values_ignoring_all_missing() {
    assert_eq!(merge_values_files(&[]).unwrap(), json!({}));
}

/// Maps merge with maps, anything else replaces; lists are replaced whole.
#[test]
fn nested_maps_merge_and_lists_replace() {
    let got = merge_values_files(&files(&[
        (
            "values.yaml",
            "web:\n  image: nginx\n  ports: [80, 443]\n  env: {A: 1}\n",
        ),
        (
            "prod.yaml",
            "web:\n  ports: [8080]\n  env: null\n  replicas: 3\n",
        ),
    ]))
    .unwrap();
    assert_eq!(
        got,
        json!({"web": {"image": "nginx", "ports": [8080], "env": null, "replicas": 3}})
    );
}

/// The chart's own `values.yaml` (however the path is spelled) is read as Helm's chart loader
/// reads it, every document merged; another file is read as one document.
#[test]
fn chart_values_file_reads_every_document() {
    let got = merge_values_files(&files(&[
        ("./values.yaml", "a: 1\n---\nb: 2\n"),
        ("extra.yaml", "c: 3\n---\nd: 4\n"),
    ]))
    .unwrap();
    assert_eq!(got, json!({"a": 1, "b": 2, "c": 3}));
}
