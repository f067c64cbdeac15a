//! Helm's `pkg/strvals` (v4.2) cases that `targetPath` relies on: `parser_test.go`'s
//! `TestParseSet` (both tables), `TestSetIndex`, `TestParseInto`, `TestParseIntoString` and
//! `TestParseSetNestedLevels`, same inputs and expectations. Go's tables have no case names, so
//! each row is named by its input line and a failure lists the lines that failed.

use plumb_helm::strvals::{parse, parse_into, parse_into_string, parse_string, StrvalsError};
use serde_json::{json, Map, Value};

/// Runs `rows` through `parser`; `None` expects an error.
fn check(
    parser: fn(&str) -> Result<Map<String, Value>, StrvalsError>,
    rows: &[(&str, Option<Value>)],
) {
    let mut failed = Vec::new();
    for (line, expected) in rows {
        let got = parser(line).map(Value::Object);
        match (expected, &got) {
            (Some(want), Ok(got)) if want == got => {}
            (None, Err(_)) => {}
            _ => failed.push(format!("{line}: expected {expected:?}, got {got:?}")),
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} failed:\n{}",
        failed.len(),
        rows.len(),
        failed.join("\n")
    );
}

#[test]
fn parse_set() {
    check(
        parse,
        &[
            (
                "name1=null,f=false,t=true",
                Some(json!({"name1": null, "f": false, "t": true})),
            ),
            ("name1=value1", Some(json!({"name1": "value1"}))),
            (
                "name1=value1,name2=value2",
                Some(json!({"name1": "value1", "name2": "value2"})),
            ),
            (
                "name1=value1,name2=value2,",
                Some(json!({"name1": "value1", "name2": "value2"})),
            ),
            ("name1=value1,,,,name2=value2,", None),
            (
                "name1=,name2=value2",
                Some(json!({"name1": "", "name2": "value2"})),
            ),
            (
                "leading_zeros=00009",
                Some(json!({"leading_zeros": "00009"})),
            ),
            ("zero_int=0", Some(json!({"zero_int": 0}))),
            ("long_int=1234567890", Some(json!({"long_int": 1234567890}))),
            ("boolean=true", Some(json!({"boolean": true}))),
            ("is_null=null", Some(json!({"is_null": null}))),
            ("name1,name2=", None),
            ("name1,name2=value2", None),
            ("name1,name2=value2\\", None),
            ("name1,name2", None),
            (
                "name1=one\\,two,name2=three\\,four",
                Some(json!({"name1": "one,two", "name2": "three,four"})),
            ),
            (
                "name1=one\\=two,name2=three\\=four",
                Some(json!({"name1": "one=two", "name2": "three=four"})),
            ),
            (
                "name1=one two three,name2=three two one",
                Some(json!({"name1": "one two three", "name2": "three two one"})),
            ),
            (
                "outer.inner=value",
                Some(json!({"outer": {"inner": "value"}})),
            ),
            (
                "outer.middle.inner=value",
                Some(json!({"outer": {"middle": {"inner": "value"}}})),
            ),
            (
                "outer.inner1=value,outer.inner2=value2",
                Some(json!({"outer": {"inner1": "value", "inner2": "value2"}})),
            ),
            (
                "outer.inner1=value,outer.middle.inner=value",
                Some(json!({"outer": {"inner1": "value", "middle": {"inner": "value"}}})),
            ),
            ("name1.name2", None),
            ("name1.name2,name1.name3", None),
            ("name1.name2=", Some(json!({"name1": {"name2": ""}}))),
            ("name1.=name2", None),
            ("name1.,name2", None),
            (
                "name1={value1,value2}",
                Some(json!({"name1": ["value1", "value2"]})),
            ),
            (
                "name1={value1,value2},name2={value1,value2}",
                Some(json!({"name1": ["value1", "value2"], "name2": ["value1", "value2"]})),
            ),
            ("name1={1021,902}", Some(json!({"name1": [1021, 902]}))),
            (
                "name1.name2={value1,value2}",
                Some(json!({"name1": {"name2": ["value1", "value2"]}})),
            ),
            ("name1={1021,902", None),
            ("list[0]=foo", Some(json!({"list": ["foo"]}))),
            ("list[0].foo=bar", Some(json!({"list": [{"foo": "bar"}]}))),
            (
                "list[0].foo=bar,list[0].hello=world",
                Some(json!({"list": [{"foo": "bar", "hello": "world"}]})),
            ),
            ("list[0].foo=bar,list[-30].hello=world", None),
            (
                "list[0]=foo,list[1]=bar",
                Some(json!({"list": ["foo", "bar"]})),
            ),
            (
                "list[0]=foo,list[1]=bar,",
                Some(json!({"list": ["foo", "bar"]})),
            ),
            (
                "list[0]=foo,list[3]=bar",
                Some(json!({"list": ["foo", null, null, "bar"]})),
            ),
            ("list[0]=foo,list[-20]=bar", None),
            ("illegal[0]name.foo=bar", None),
            ("noval[0]", Some(json!({"noval": []}))),
            ("noval[0]=", Some(json!({"noval": [""]}))),
            ("nested[0][0]=1", Some(json!({"nested": [[1]]}))),
            ("nested[1][1]=1", Some(json!({"nested": [null, [null, 1]]}))),
            (
                "name1.name2[0].foo=bar,name1.name2[1].foo=bar",
                Some(json!({"name1": {"name2": [{"foo": "bar"}, {"foo": "bar"}]}})),
            ),
            (
                "name1.name2[1].foo=bar,name1.name2[0].foo=bar",
                Some(json!({"name1": {"name2": [{"foo": "bar"}, {"foo": "bar"}]}})),
            ),
            (
                "name1.name2[1].foo=bar",
                Some(json!({"name1": {"name2": [null, {"foo": "bar"}]}})),
            ),
            ("]={}].", None),
        ],
    );
}

#[test]
fn parse_set_strings() {
    check(
        parse_string,
        &[
            (
                "long_int_string=1234567890",
                Some(json!({"long_int_string": "1234567890"})),
            ),
            ("boolean=true", Some(json!({"boolean": "true"}))),
            ("is_null=null", Some(json!({"is_null": "null"}))),
            ("zero=0", Some(json!({"zero": "0"}))),
        ],
    );
}

/// `TestSetIndex`, through a line that sets the index in an existing list.
#[test]
fn set_index() {
    let cases: [(&str, Value, &str, Value, bool); 5] = [
        ("short", json!([0, 1]), "list[2]=2", json!([0, 1, 2]), false),
        ("equal", json!([0, 1]), "list[1]=2", json!([0, 2]), false),
        (
            "long",
            json!([0, 1, 2, 3, 4, 5]),
            "list[3]=4",
            json!([0, 1, 2, 4, 4, 5]),
            false,
        ),
        (
            "negative",
            json!([0, 1, 2, 3, 4, 5]),
            "list[-1]=4",
            json!([0, 1, 2, 3, 4, 5]),
            true,
        ),
        (
            "large",
            json!([0, 1, 2, 3, 4, 5]),
            "list[65537]=4",
            json!([0, 1, 2, 3, 4, 5]),
            true,
        ),
    ];
    for (name, initial, line, expected, fails) in cases {
        let mut dest = Map::new();
        dest.insert("list".into(), initial);
        let result = parse_into(line, &mut dest);
        assert_eq!(result.is_err(), fails, "{name}: {result:?}");
        assert_eq!(dest["list"], expected, "{name}");
    }
    let mut dest = Map::new();
    assert_eq!(
        parse_into("list[65537]=4", &mut dest)
            .unwrap_err()
            .to_string(),
        "index of 65537 is greater than maximum supported index of 65536"
    );
}

#[test]
fn parse_into_cases() {
    let cases = [
        (
            "outer.inner1=value1,outer.inner3=value3,outer.inner4=4",
            "",
            json!({"outer": {"inner1": "overwrite", "inner2": "value2"}}),
            json!({"outer": {"inner1": "value1", "inner2": "value2", "inner3": "value3", "inner4": 4}}),
        ),
        (
            "listOuter[0][0].type=listValue",
            "listOuter[0][0].status=alive",
            json!({}),
            json!({"listOuter": [[{"type": "listValue", "status": "alive"}]]}),
        ),
        (
            "listOuter[0][0].type=listValue",
            "listOuter[1][0].status=alive",
            json!({}),
            json!({"listOuter": [[{"type": "listValue"}], [{"status": "alive"}]]}),
        ),
        (
            "listOuter[0][1][0].type=listValue",
            "listOuter[0][0][1].status=alive",
            json!({"listOuter": [[[{"exited": "old"}]]]}),
            json!({"listOuter": [[[{"exited": "old"}, {"status": "alive"}], [{"type": "listValue"}]]]}),
        ),
    ];
    for (input, input2, got, expected) in cases {
        let Value::Object(mut dest) = got else {
            unreachable!()
        };
        parse_into(input, &mut dest).unwrap();
        if !input2.is_empty() {
            parse_into(input2, &mut dest).unwrap();
        }
        assert_eq!(Value::Object(dest), expected, "{input}");
    }
}

#[test]
fn parse_into_string_case() {
    let Value::Object(mut dest) = json!({"outer": {"inner1": "overwrite", "inner2": "value2"}})
    else {
        unreachable!()
    };
    parse_into_string("outer.inner1=1,outer.inner3=3", &mut dest).unwrap();
    assert_eq!(
        Value::Object(dest),
        json!({"outer": {"inner1": "1", "inner2": "value2", "inner3": "3"}})
    );
}

#[test]
fn parse_set_nested_levels() {
    check(
        parse,
        &[(
            "outer.middle.inner=value",
            Some(json!({"outer": {"middle": {"inner": "value"}}})),
        )],
    );
    let key: Vec<String> = (1..=32).map(|i| format!("name{i}")).collect();
    let err = parse(&format!("{}=value", key.join("."))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "value name nested level is greater than maximum supported nested level of 30"
    );
    let thirty: Vec<String> = (1..=31).map(|i| format!("name{i}")).collect();
    assert!(parse(&format!("{}=value", thirty.join("."))).is_ok());
}

/// The messages chartutil passes on from the parser, as Helm words them.
#[test]
fn error_messages_read_as_helms() {
    let cases = [
        ("a=x,b", "key \"b\" has no value"),
        ("a=x,b,c=d", "key \"b\" has no value (cannot end with ,)"),
        ("a={x,y", "list must terminate with '}'"),
        ("a[0]b=c", "unexpected data at end of array index: ['b']"),
        ("a[-30]=c", "negative -30 index not allowed"),
        ("a[x]=c", "error parsing index: strconv.Atoi: parsing \"x\": invalid syntax"),
        (
            "a[99999999999999999999]=c",
            "error parsing index: strconv.Atoi: parsing \"99999999999999999999\": value out of range",
        ),
        ("a.=b", "key map \"a\" has no value"),
    ];
    for (line, message) in cases {
        assert_eq!(parse(line).unwrap_err().to_string(), message, "{line}");
    }
}

/// What a `targetPath` line meets beyond Helm's tables: escapes in keys, values typed
/// case-insensitively, signs, an unfinished index (which Helm's loop takes as the end).
#[test]
fn target_path_details() {
    check(
        parse,
        &[
            ("a\\.b.c=1", Some(json!({"a.b": {"c": 1}}))),
            (
                "a=TRUE,b=False,c=NULL",
                Some(json!({"a": true, "b": false, "c": null})),
            ),
            (
                "a=+5,b=-0,c=-05,d=1.5,e=1e3",
                Some(json!({"a": 5, "b": 0, "c": -5, "d": "1.5", "e": "1e3"})),
            ),
            ("a=x=y", Some(json!({"a": "x=y"}))),
            ("a[0", Some(json!({}))),
            ("a={}", Some(json!({"a": [""]}))),
            ("a=line\nnext", Some(json!({"a": "line\nnext"}))),
            ("a=trailing\\", Some(json!({"a": "trailing"}))),
        ],
    );
}
