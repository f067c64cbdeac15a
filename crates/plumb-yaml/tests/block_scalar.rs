//! Parsing the YAML a block scalar holds where it is written.

#[test]
fn a_block_scalars_documents_point_into_the_file() {
    let text = "spec:\n  patches:\n    - patch: |-\n        kind: ConfigMap\n        metadata: {name: c}\n        data:\n          key: value\n      target: {kind: ConfigMap}\n";
    let docs = plumb_yaml::parse_documents("ks.yaml", text).unwrap();
    let scalar = docs[0]
        .get_path(&["spec", "patches"])
        .and_then(|p| p.as_sequence())
        .and_then(|s| s[0].get("patch"))
        .unwrap();
    let inner = plumb_yaml::parse_block_scalar(scalar).expect("parsed in place");
    let value = inner[0].get_path(&["data", "key"]).unwrap();
    let at = value.span.as_ref().unwrap().location();
    assert_eq!((at.line, at.column), (7, 16));
    assert_eq!(value.span.as_ref().unwrap().text(), "value");
    // A plain scalar is not parsed in place.
    let kind = docs[0].get_path(&["spec"]).unwrap();
    assert!(plumb_yaml::parse_block_scalar(kind).is_none());
}
