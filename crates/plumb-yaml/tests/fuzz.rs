//! A fuzz harness run by `cargo test` on a fixed budget (a fixed seed and case count, plus the
//! regressions proptest saves in `fuzz.proptest-regressions`): arbitrary bytes and YAML-ish
//! token soup heavy with anchors, aliases and merge keys go through `parse_documents`,
//! `to_json` and `write_document`. Nothing may panic; the tree the parser returns is never
//! bigger than the alias budget allows for the input's size (so memory is bounded); and what
//! is written reads back as the same value.

use plumb_yaml::parse::{ALIAS_NODE_FLOOR, ALIAS_NODE_RATIO};
use plumb_yaml::{parse_documents, to_json, write_document, Node, NodeKind};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(18),
        ..Config::default()
    }
}

fn count(node: &Node) -> usize {
    1 + match &node.kind {
        NodeKind::Scalar(_) => 0,
        NodeKind::Sequence(items) => items.iter().map(count).sum(),
        NodeKind::Mapping(entries) => entries.iter().map(|(k, v)| count(k) + count(v)).sum(),
    }
}

/// The most nodes a text of `len` bytes may parse to: at most two nodes written per byte (an
/// empty scalar costs no text but follows an indicator that does), plus what aliases may add.
fn node_bound(len: usize) -> usize {
    let written = 2 * len + 2;
    written + ALIAS_NODE_FLOOR.max(ALIAS_NODE_RATIO * written)
}

/// Everything a user's YAML goes through; panics only where an invariant breaks.
fn exercise(text: &str) -> Result<(), TestCaseError> {
    let Ok(docs) = parse_documents("fuzz.yaml", text) else {
        return Ok(());
    };
    let nodes: usize = docs.iter().map(count).sum();
    prop_assert!(
        nodes <= node_bound(text.len()),
        "{nodes} nodes from {} bytes",
        text.len()
    );
    for doc in &docs {
        let Ok(value) = to_json(doc) else {
            continue;
        };
        let written = write_document(&value);
        let reread = parse_documents("written.yaml", &written).map_err(|e| {
            TestCaseError::fail(format!("written text does not parse: {e}\n{written}"))
        })?;
        prop_assert_eq!(reread.len(), 1, "{}", written);
        let again = to_json(&reread[0])
            .map_err(|e| TestCaseError::fail(format!("written text does not convert: {e}")))?;
        prop_assert_eq!(&again, &value, "{}", written);
    }
    Ok(())
}

fn token() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "a",
        "b",
        "key",
        "x",
        "1",
        "0x1F",
        "yes",
        "~",
        "null",
        "'q'",
        "\"d\\n\"",
        "<<",
        "!!str",
        "!!merge",
        "!t",
        ": ",
        ":",
        "- ",
        "-",
        "? ",
        ",",
        "[",
        "]",
        "{",
        "}",
        "&a ",
        "&b ",
        "&c ",
        "*a",
        "*b",
        "*c",
        "<<: *a",
        "<<: [*a, *b]",
        "\n",
        "\n",
        "\n  ",
        "\n    ",
        "  ",
        " ",
        "#c",
        "|\n  t",
        ">-\n  t",
        "---\n",
        "...\n",
        "%YAML 1.2\n",
        "\t",
    ])
}

/// Token soup: mostly broken YAML, now and then a valid document with aliases in it.
fn yaml_ish() -> impl Strategy<Value = String> {
    proptest::collection::vec(token(), 0..120).prop_map(|tokens| tokens.concat())
}

/// Well-formed documents that reuse anchors in breadth and depth: nested alias levels of some
/// width, some under merge keys. Small ones must parse, big ones must fail, none may blow up.
fn alias_levels() -> impl Strategy<Value = String> {
    (1usize..10, 1usize..14, any::<bool>()).prop_map(|(levels, width, merge)| {
        let mut text = format!(
            "l0: &l0 {{{}}}\n",
            (0..width)
                .map(|i| format!("k{i}: v"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        for level in 1..levels {
            let prev = level - 1;
            if merge {
                text.push_str(&format!("l{level}: &l{level}\n  <<: *l{prev}\n"));
                for i in 0..width {
                    text.push_str(&format!("  n{i}: *l{prev}\n"));
                }
            } else {
                let items = vec![format!("*l{prev}"); width].join(", ");
                text.push_str(&format!("l{level}: &l{level} [{items}]\n"));
            }
        }
        text
    })
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        exercise(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn yaml_ish_tokens(text in yaml_ish()) {
        exercise(&text)?;
    }
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn nested_aliases_parse_or_fail_within_the_budget(text in alias_levels()) {
        match parse_documents("levels.yaml", &text) {
            Ok(_) => exercise(&text)?,
            Err(e) => prop_assert!(e.message.contains("excessive aliasing"), "{}", e),
        }
    }
}
