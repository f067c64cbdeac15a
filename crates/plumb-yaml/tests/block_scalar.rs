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

#[test]
fn a_patched_copy_keeps_the_places_of_what_the_patch_did_not_change() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: \"1\"\n  b: two\nlist: [x, y]\n";
    let old = &plumb_yaml::parse_documents("c.yaml", text).unwrap()[0];
    let mut value = plumb_yaml::to_json(old).unwrap();
    value["data"]["b"] = "three".into();
    value["data"]["c"] = "new".into();
    value["list"] = serde_json::json!(["x", "y", "z"]);
    let new = plumb_yaml::from_json_keeping(&value, old);
    assert_eq!(plumb_yaml::to_json(&new).unwrap(), value);
    let line = |path: &[&str]| {
        new.get_path(path)
            .and_then(|n| n.span.as_ref())
            .map(|s| s.location().line)
    };
    assert_eq!(line(&["kind"]), Some(2));
    assert_eq!(line(&["metadata", "name"]), Some(4));
    assert_eq!(line(&["data", "a"]), Some(6));
    // What the patch changed or added has no place of its own.
    assert_eq!(line(&["data", "b"]), None);
    assert_eq!(line(&["data", "c"]), None);
}
