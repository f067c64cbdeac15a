//! Property tests: what plumb writes, plumb reads back as the same value; and no input, however
//! broken, makes the parser panic.

use proptest::prelude::*;
use serde_json::{Map, Value};

fn text() -> impl Strategy<Value = String> {
    let pool = prop_oneof![
        8 => proptest::char::range(' ', '~'),
        1 => Just('\n'),
        1 => Just('\t'),
        1 => Just('\r'),
        // No U+2028: go-yaml (YAML 1.1) writes it raw as a line break inside block scalars,
        // which a YAML 1.2 reader does not take for one. The differential test covers its
        // output against kustomize.
        1 => prop::sample::select(vec!['é', 'ü', '日', '😀', '\u{a0}', '\u{feff}', '\u{200b}']),
    ];
    let special = prop::sample::select(vec![
        "yes",
        "no",
        "on",
        "off",
        "y",
        "N",
        "true",
        "null",
        "~",
        "",
        "0644",
        "1e3",
        "1.0",
        ".inf",
        "12:30",
        "2001-12-14",
        "- a",
        "a: b",
        "#x",
        "'q'",
        "\"d\"",
        " lead",
        "trail ",
        "0x1F",
        "<<",
        "---",
        "...",
        "a\n",
        "\n",
        "a\n\n",
        " a\nb",
    ])
    .prop_map(str::to_string);
    prop_oneof![
        3 => proptest::collection::vec(pool, 0..120).prop_map(|v| v.into_iter().collect()),
        1 => special,
    ]
}

fn key() -> impl Strategy<Value = String> {
    text()
        .prop_map(|s| s.chars().take(40).collect::<String>())
        .prop_filter("merge key", |k| k != "<<")
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e30f64..1e30).prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            // A `<<` key is excluded: go-yaml v2 (and so kustomize) writes it unquoted, and
            // every YAML reader then takes it for a merge key.
            proptest::collection::vec((key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn read_back(text: &str) -> Value {
    let docs = plumb_yaml::parse_documents("roundtrip.yaml", text)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(docs.len(), 1, "{text}");
    plumb_yaml::to_json(&docs[0]).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn parse_write_parse_is_identity(v in value()) {
        let top = Value::Object([("k".to_string(), v)].into_iter().collect());
        // The value as kustomize would hold it after reading it once (1.0 is then 1, and so on).
        let normal = plumb_yaml::to_json(&plumb_yaml::from_json(&top)).unwrap();
        let written = plumb_yaml::write_document(&normal);
        let back = read_back(&written);
        prop_assert_eq!(&back, &normal, "written:\n{}", written);
        // Writing is deterministic and a fixed point.
        prop_assert_eq!(plumb_yaml::write_document(&back), written);
    }

    #[test]
    fn arbitrary_input_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let text = String::from_utf8_lossy(&bytes);
        if let Ok(docs) = plumb_yaml::parse_documents("fuzz.yaml", &text) {
            for d in &docs {
                let _ = plumb_yaml::to_json(d);
            }
        }
    }

    #[test]
    fn yaml_like_input_never_panics(s in "[ a-z:\\-\\[\\]{}#&*!|>'\"%@`,?\n\t.0-9]{0,80}") {
        if let Ok(docs) = plumb_yaml::parse_documents("fuzz.yaml", &s) {
            for d in &docs {
                let _ = plumb_yaml::to_json(d);
            }
        }
    }
}

/// `check` (validation without building the value) fails exactly where `to_json` fails, with
/// the same message and position: on every input of the differential and broken corpora, and
/// on each kind of error `to_json` raises.
#[test]
fn check_fails_exactly_where_to_json_fails() {
    let mut texts: Vec<(String, String)> = vec![
        ("top duplicate".into(), "a: 1\nb: 2\na: 3\n".into()),
        (
            "nested duplicate".into(),
            "a:\n  x: 1\n  y: 2\n  x: 3\n".into(),
        ),
        (
            "duplicate after resolving".into(),
            "a:\n  'x': 1\n  x: 3\n".into(),
        ),
        ("nested non-string key".into(), "a:\n  1: one\n".into()),
        ("top integer key".into(), "1: one\n".into()),
        ("not a scalar key".into(), "? [a]\n: b\n".into()),
        ("NaN".into(), "a: .nan\n".into()),
        ("infinity in a list".into(), "a: [1, -.inf]\n".into()),
        ("DEL".into(), "a: \"x\\x7Fy\"\n".into()),
        ("C1 control".into(), "a: \"x\\u0086y\"\n".into()),
        ("NEL is fine".into(), "a: \"x\\u0085y\"\n".into()),
        ("folded".into(), "a: >\n  one\n    two\n  three\n".into()),
        (
            "plain".into(),
            "a: 1\nb: [x, {c: d}]\ne: 2001-12-14\n".into(),
        ),
    ];
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    for dir in ["differential", "broken"] {
        for entry in walk(&root.join(dir)) {
            if entry.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                let text = std::fs::read_to_string(&entry).unwrap_or_default();
                texts.push((entry.display().to_string(), text));
            }
        }
    }
    let mut compared = 0;
    let mut failing = 0;
    for (name, text) in &texts {
        let Ok(docs) = plumb_yaml::parse_documents("input.yaml", text) else {
            continue;
        };
        for doc in &docs {
            let expected = plumb_yaml::to_json(doc)
                .map(drop)
                .map_err(|e| e.to_string());
            let got = plumb_yaml::check(doc).map_err(|e| e.to_string());
            assert_eq!(got, expected, "{name}");
            compared += 1;
            failing += usize::from(expected.is_err());
        }
    }
    assert!(compared > 20, "only {compared} documents compared");
    assert!(failing >= 8, "only {failing} of the documents fail to_json");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(read) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in read.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
