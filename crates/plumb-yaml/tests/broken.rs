//! Malformed YAML: every file under `tests/broken/` gives an error naming the file, the line and
//! the column of the offending text (checked by hand against the file), and nothing panics.

use std::path::Path;

/// (file, line, column, words the message must contain)
const CASES: &[(&str, usize, usize, &str)] = &[
    ("at-sign.yaml", 1, 4, "unexpected character"),
    ("backtick.yaml", 1, 1, "unexpected character"),
    ("bad-directive.yaml", 2, 1, "duplicate version directive"),
    ("bad-indent.yaml", 3, 2, "did not find expected key"),
    (
        "block-scalar-indent.yaml",
        3,
        3,
        "did not find expected key",
    ),
    (
        "duplicate-key.yaml",
        3,
        1,
        "mapping key \"a\" already defined at line 1",
    ),
    ("invalid-escape.yaml", 1, 4, "unknown escape character"),
    (
        "mapping-in-value.yaml",
        1,
        5,
        "mapping values are not allowed",
    ),
    ("merge-scalar.yaml", 3, 3, "map merge requires map"),
    ("nested-unclosed.yaml", 3, 11, "unclosed quote"),
    ("second-doc.yaml", 3, 4, "unclosed bracket"),
    (
        "seq-then-map.yaml",
        2,
        1,
        "did not find expected '-' indicator",
    ),
    ("short-hex.yaml", 1, 4, "hexadecimal number"),
    ("stray-bracket.yaml", 2, 4, "misplaced bracket"),
    ("tab-indent.yaml", 2, 2, "tabs disallowed"),
    (
        "tag-mismatch.yaml",
        1,
        10,
        "cannot decode !!str `abc` as a !!int",
    ),
    ("unclosed-double.yaml", 2, 4, "unclosed quote"),
    ("unclosed-flow-block.yaml", 2, 2, "':' indicator"),
    ("unclosed-flow-map.yaml", 1, 4, "unclosed bracket '{'"),
    ("unclosed-flow-seq.yaml", 1, 4, "unclosed bracket '['"),
    ("unclosed-single.yaml", 2, 4, "unclosed quote"),
    ("undefined-alias.yaml", 2, 4, "unknown anchor 'nope'"),
];

fn load(path: &Path) -> Result<Vec<serde_json::Value>, plumb_yaml::YamlError> {
    let text = std::fs::read_to_string(path).expect("readable fixture");
    plumb_yaml::parse_documents(path, &text)?
        .iter()
        .map(plumb_yaml::to_json)
        .collect()
}

#[test]
fn broken_files_report_file_line_and_column() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/broken");
    let on_disk = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(on_disk, CASES.len(), "every fixture has an expectation");
    assert!(CASES.len() >= 15);
    for &(file, line, column, words) in CASES {
        let path = dir.join(file);
        let err = load(&path).expect_err(file);
        assert_eq!(err.path, path, "{file}");
        assert_eq!(
            (err.location.line, err.location.column),
            (line, column),
            "{file}: {err}"
        );
        assert!(err.message.contains(words), "{file}: {err}");
        let shown = err.to_string();
        assert!(
            shown.starts_with(&format!("{}:{line}:{column}: ", path.display())),
            "{shown}"
        );
    }
}
