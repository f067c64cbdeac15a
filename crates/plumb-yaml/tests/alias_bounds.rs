//! Alias expansion is bounded: an alias bomb (a few hundred bytes that expand to billions of
//! nodes) fails with an error at the alias that crosses the budget, while ordinary anchors,
//! aliases and merge keys, even heavily reused, still parse to the same values.

use plumb_yaml::parse::{ALIAS_NODE_FLOOR, ALIAS_NODE_RATIO, MAX_DEPTH};
use plumb_yaml::{parse_documents, to_json, write_document, Node, NodeKind};

/// `levels` anchored sequences of nine items each, every level nine aliases of the one before:
/// 9^levels scalars once expanded. Eight levels is the bomb of issue #18 (it took about 2 GB and aborted before).
fn bomb(levels: usize) -> String {
    let names: Vec<char> = ('a'..='z').take(levels).collect();
    let mut text = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\n");
    text.push_str(&format!("{0}: &{0} [{1}]\n", names[0], ["x"; 9].join(",")));
    for pair in names.windows(2) {
        let items = vec![format!("*{}", pair[0]); 9].join(",");
        text.push_str(&format!("{0}: &{0} [{items}]\n", pair[1]));
    }
    text
}

fn count(node: &Node) -> usize {
    1 + match &node.kind {
        NodeKind::Scalar(_) => 0,
        NodeKind::Sequence(items) => items.iter().map(count).sum(),
        NodeKind::Mapping(entries) => entries.iter().map(|(k, v)| count(k) + count(v)).sum(),
    }
}

fn assert_bomb_fails(levels: usize) {
    let text = bomb(levels);
    let err = parse_documents("bomb.yaml", &text).expect_err("an alias bomb must not parse");
    assert!(
        err.message.contains("excessive aliasing"),
        "unexpected message: {}",
        err.message
    );
    assert_eq!(err.path.to_str(), Some("bomb.yaml"));
    // Levels b, c, d copy 2,021 nodes in all; keeping e (66,430 nodes, line 9) after its nine
    // copies of d (66,429) is the first step over the 100,000-node floor.
    assert_eq!(err.location.line, 9, "{err}");
    assert!(text[err.offset..].starts_with("[*d"), "{err}");
    assert!(err.to_string().starts_with("bomb.yaml:9:7: "), "{err}");
}

#[test]
fn eight_level_alias_bomb_is_an_error_at_the_line_over_budget() {
    assert_bomb_fails(8);
}

#[test]
fn seven_level_alias_bomb_is_an_error_too() {
    assert_bomb_fails(7);
}

#[test]
fn four_levels_stay_under_the_floor_and_parse_fully() {
    // 9^4 scalars under d: d is written once but holds 7,381 nodes, most of them copies.
    let docs = parse_documents("b.yaml", &bomb(4)).unwrap();
    let d = docs[0].get("d").unwrap();
    assert_eq!(count(d), 1 + 9 * (1 + 9 * (1 + 9 * (1 + 9))));
    let value = to_json(&docs[0]).unwrap();
    assert_eq!(value["d"][8][8][8][8], "x");
}

#[test]
fn reuse_up_to_the_floor_is_allowed_and_one_past_it_is_not() {
    // One anchored sequence of 99 scalars (100 nodes), aliased `uses` times: with the copy the
    // anchor keeps, aliases add 100 * (uses + 1) nodes.
    let doc = |uses: usize| {
        let mut text = format!("a: &a [{}]\nb:\n", vec!["x"; 99].join(","));
        text.push_str(&"- *a\n".repeat(uses));
        text
    };
    let fits = ALIAS_NODE_FLOOR / 100 - 1;
    let docs = parse_documents("ok.yaml", &doc(fits)).unwrap();
    assert_eq!(docs[0].get("b").unwrap().as_sequence().unwrap().len(), fits);
    let err = parse_documents("over.yaml", &doc(fits + 1)).unwrap_err();
    assert!(err.message.contains("excessive aliasing"), "{err}");
    assert_eq!(err.location.line, 2 + fits + 1);
}

#[test]
fn large_documents_get_a_budget_proportional_to_their_size() {
    // 30,000 written scalars in the anchor, aliased five times: 180,000 copied nodes, over the
    // floor but within ten times what is written.
    let mut text = format!("a: &a [{}]\nb:\n", vec!["x"; 30_000].join(","));
    text.push_str(&"- *a\n".repeat(5));
    let docs = parse_documents("big.yaml", &text).unwrap();
    const { assert!(5 * 30_001 > ALIAS_NODE_FLOOR) };
    const { assert!(6 * 30_001 < ALIAS_NODE_RATIO * 30_000) };
    assert_eq!(docs[0].get("b").unwrap().as_sequence().unwrap().len(), 5);
}

#[test]
fn aliases_cannot_nest_collections_past_the_depth_limit() {
    // Each line wraps the previous anchor in 200 more sequences: the text never nests deeper
    // than the parser allows, the aliases do.
    let mut text = format!("a0: &a0 {}x{}\n", "[".repeat(200), "]".repeat(200));
    for i in 1..4 {
        text.push_str(&format!(
            "a{i}: &a{i} {}*a{}{}\n",
            "[".repeat(200),
            i - 1,
            "]".repeat(200)
        ));
    }
    let err = parse_documents("deep.yaml", &text).unwrap_err();
    assert!(
        err.message.contains(&format!("more than {MAX_DEPTH}")),
        "{err}"
    );
    assert_eq!(err.location.line, 3);
}

#[test]
fn anchors_nested_in_anchors_are_charged_for_the_copies_they_keep() {
    // 200 anchors, each around the next, over 1,000 scalars: keeping each anchor copies its
    // whole subtree, 200 times over.
    let mut text = String::new();
    for i in 0..200 {
        text.push_str(&format!("&n{i} ["));
    }
    text.push_str(&vec!["x"; 1000].join(","));
    text.push_str(&"]".repeat(200));
    let err = parse_documents("nested.yaml", &text).unwrap_err();
    assert!(err.message.contains("keeping this anchored node"), "{err}");
}

#[test]
fn anchors_aliases_and_merge_keys_keep_their_meaning() {
    let text = "\
base: &base {a: 1, b: 2}
list: &list [p, q]
m:
  <<: [*base, {b: 3, c: 4}]
  c: 5
s: [*list, *list]
";
    let docs = parse_documents("ok.yaml", text).unwrap();
    assert_eq!(
        write_document(&to_json(&docs[0]).unwrap()),
        "base:\n  a: 1\n  b: 2\nlist:\n- p\n- q\nm:\n  a: 1\n  b: 2\n  c: 5\ns:\n- - p\n  - q\n- - p\n  - q\n"
    );
}

#[test]
fn merging_large_mappings_is_linear() {
    // A quadratic merge would compare 10^10 keys here; a linear one takes milliseconds.
    let keys: Vec<String> = (0..50_000).map(|i| format!("k{i}: {i}")).collect();
    let text = format!("a: &a {{{}}}\nb:\n  <<: *a\n  k7: seven\n", keys.join(", "));
    let docs = parse_documents("merge.yaml", &text).unwrap();
    let b = docs[0].get("b").unwrap();
    assert_eq!(b.as_mapping().unwrap().len(), 50_000);
    assert_eq!(b.get("k7").unwrap().scalar_value(), Some("seven"));
    assert_eq!(b.get("k49999").unwrap().scalar_value(), Some("49999"));
}

#[test]
fn an_alias_key_ends_its_name_at_the_colon_as_go_yaml_does() {
    // gavinmcfall/home-ops: `*app:` as a key. go-yaml reads an alias's name as letters,
    // digits, `_` and `-`, so this is the alias `app` and a `:`; YAML 1.2 reads the name
    // `app:`, an anchor nothing defines. kustomize builds it.
    let text = "name: &app ipmi\nsidecar: &side exporter\ncontrollers:\n  *app:\n    strategy: RollingUpdate\n  *side :\n    spaced: true\nother: *app\n";
    let docs = parse_documents("alias-key.yaml", text).unwrap();
    assert_eq!(
        write_document(&to_json(&docs[0]).unwrap()),
        "controllers:\n  exporter:\n    spaced: true\n  ipmi:\n    strategy: RollingUpdate\nname: ipmi\nother: ipmi\nsidecar: exporter\n"
    );
}
