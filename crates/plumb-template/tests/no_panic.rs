//! Templates a user writes are untrusted input: whatever the text, parsing and executing it
//! returns a result and never panics.

use plumb_template::{Options, Template, Value};
use proptest::prelude::*;

/// Fragments that combine into plausible and broken templates alike.
const PIECES: &[&str] = &[
    "{{",
    "}}",
    "{{-",
    "-}}",
    " ",
    "\n",
    "<<",
    ">>",
    "if",
    "else",
    "end",
    "range",
    "with",
    "define",
    "template",
    "block",
    "break",
    "continue",
    "$",
    "$x",
    ":=",
    "=",
    ",",
    "|",
    "(",
    ")",
    ".",
    ".a",
    ".b.c",
    "\"s\"",
    "`r`",
    "'c'",
    "1",
    "-2",
    "1.5",
    "0x1f",
    "1e3",
    "nil",
    "true",
    "and",
    "or",
    "not",
    "len",
    "index",
    "slice",
    "eq",
    "lt",
    "printf",
    "\"%v %d %5.2f %q\"",
    "print",
    "html",
    "js",
    "urlquery",
    "upper",
    "default",
    "dict",
    "list",
    "toYaml",
    "toJson",
    "fromJson",
    "split",
    "substr",
    "trunc",
    "repeat",
    "until",
    "seq",
    "slugify",
    "quote",
    "regexFind",
    "\"(\"",
    "set",
    "first",
    "b64dec",
    "/*",
    "*/",
    "é",
    "\t",
];

fn template_text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..40).prop_map(|p| p.concat())
}

fn data() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        Just(serde_json::json!(null)),
        Just(serde_json::json!({"a": 1, "b": {"c": [1, "x", null]}, "s": "é"})),
        Just(serde_json::json!([1, 2.5, "s", {"a": true}])),
        Just(serde_json::json!("text")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn any_text_parses_or_fails_without_panicking(text in template_text(), json in data()) {
        let data = Value::from(&json);
        for opts in [Options::new(), Options::resource_set().with_delims("{{", "}}")] {
            if let Ok(t) = Template::parse("fuzz", &text, &opts) {
                let _ = t.execute(&data);
            }
        }
    }
}
