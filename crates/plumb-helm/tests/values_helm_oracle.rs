//! The `--set` parser checked against a real Helm (4.2, the version helm-controller v1.6
//! builds with): `helm template -f base.yaml --set LINE` renders `.Values` as JSON, and
//! [`plumb_helm::strvals::parse_into`] on the same base must give the same values, or fail with
//! the message Helm prints. Helm's `--set` is `strvals.ParseInto` into the values read from
//! `-f`, and `--set-string` is `ParseIntoString`, exactly what chartutil calls for a
//! `targetPath`; a base read from YAML also gives Go's own types (`float64` numbers) to the
//! type-assertion errors.
//!
//! Helm is found as the crate finds it (`PLUMB_HELM`, which scripts/test sets after
//! scripts/ensure-helm, else `PATH`); a missing Helm is a failure, never a skip.

use plumb_helm::strvals::{parse_into, parse_into_string};
use plumb_helm::values::merge_values_files;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn helm() -> PathBuf {
    match plumb_helm::Helm::find() {
        Ok(helm) => helm.path().to_path_buf(),
        Err(e) => panic!(
            "this test needs Helm: run scripts/ensure-helm and set PLUMB_HELM to target/test-venv/bin/helm ({e})"
        ),
    }
}

/// A chart whose only template prints `.Values` as JSON in a ConfigMap.
fn chart(dir: &Path) -> PathBuf {
    let chart = dir.join("oracle");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: oracle\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(chart.join("values.yaml"), "").unwrap();
    std::fs::write(
        chart.join("templates/values.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: values\ndata:\n  values: {{ toJson .Values | quote }}\n",
    )
    .unwrap();
    chart
}

/// What Helm makes of `line` over `base`: the values, or its error message.
fn helm_result(
    helm: &Path,
    chart: &Path,
    dir: &Path,
    base: &str,
    line: &str,
    strings: bool,
) -> Result<Value, String> {
    let base_file = dir.join("base.yaml");
    std::fs::write(&base_file, base).unwrap();
    let flag = if strings { "--set-string" } else { "--set" };
    let output = Command::new(helm)
        .args(["template", "oracle"])
        .arg(chart)
        .arg("-f")
        .arg(&base_file)
        .args([flag, line])
        .args(["--kube-version", "1.33.0"])
        .env("HELM_CACHE_HOME", dir.join("cache"))
        .env("HELM_CONFIG_HOME", dir.join("config"))
        .env("HELM_DATA_HOME", dir.join("data"))
        .output()
        .unwrap();
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let message = stderr
            .lines()
            .find_map(|l| l.strip_prefix("Error: failed parsing --set data: "))
            .or_else(|| {
                stderr
                    .lines()
                    .find_map(|l| l.strip_prefix("Error: failed parsing --set-string data: "))
            })
            .unwrap_or_else(|| panic!("{line}: helm failed otherwise: {stderr}"));
        return Err(message.to_string());
    }
    let stdout = String::from_utf8(output.stdout).unwrap();
    let docs = plumb_yaml::parse_documents("rendered", &stdout).unwrap();
    let text = docs
        .iter()
        .find_map(|d| d.str_at(&["data", "values"]))
        .unwrap_or_else(|| panic!("{line}: no values in helm's output:\n{stdout}"));
    Ok(serde_json::from_str(text).unwrap())
}

/// Ours, over the base read as the crate reads values (YAML 1.1 through JSON, as Helm's `-f`).
fn ours(base: &str, line: &str, strings: bool) -> Result<Value, String> {
    let read = merge_values_files(&[("base.yaml".to_string(), base.to_string())]).unwrap();
    let Value::Object(mut dest) = read else {
        panic!("base is not a map: {read}")
    };
    let result = if strings {
        parse_into_string(line, &mut dest)
    } else {
        parse_into(line, &mut dest)
    };
    result.map(|()| Value::Object(dest)).map_err(|e| e.0)
}

/// `n` and `y` are booleans in YAML 1.1 (as `-f` reads them): a key `false`, an item `true`.
const BASE: &str =
    "web:\n  list: [x, y]\n  n: 5\n  num: 5\n  nothing: null\ntop: [1, 2]\ns: text\nratio: 1.5\n";

#[test]
fn set_lines_read_as_helm_reads_them() {
    let rows: &[(&str, &str, bool)] = &[
        ("", "a=1,b=true,c=False,d=00,e=-3,f=1.5,g=+7,h=0", false),
        ("", "a.b.c=x,a.d=y", false),
        ("", "a\\.b=1,c\\[0\\]=2", false),
        ("", "list[0]=a,list[3]=b", false),
        ("", "n[1][1]=1", false),
        ("", "x={a,b,c},y={}", false),
        ("", "x={1,true,null}", false),
        ("", "name1.name2[1].foo=bar,name1.name2[0].foo=baz", false),
        ("", "a=x=y,b=one two", false),
        ("", "a=with\\,commas,b=back\\\\slash", false),
        ("", "a=1,b=true,c=null,d={1,2}", true),
        ("", "a=multi\nline", false),
        ("", "a=x,b", false),
        ("", "a=x,b,c=d", false),
        ("", "a[x]=1", false),
        ("", "a[-1]=1", false),
        ("", "a[65537]=1", false),
        ("", "a.=b", false),
        ("", "a={x", false),
        ("", "a[0]b=c", false),
        ("", "a[0]b\\'\n=c", false),
        ("", "a.b=c,a=d,a.e=f", false),
        (BASE, "web.list[0]=v", false),
        (BASE, "web.list[3]=v", false),
        (BASE, "top[1]=9", false),
        (BASE, "web.n=7,web.m=1", false),
        (BASE, "web.nothing=1", false),
        (BASE, "s.x=1", false),
        (BASE, "top.x=1", false),
        (BASE, "web[0]=1", false),
        (BASE, "web.n[0]=1", false),
        (BASE, "web.num[0]=1", false),
        (BASE, "web.false.x=1", false),
        (BASE, "web.nothing.x=1", false),
        (BASE, "ratio.x=1", false),
        (BASE, "top[0][0]=1", false),
        (BASE, "top[0].a=1", false),
    ];
    let helm = helm();
    let dir = tempfile::tempdir().unwrap();
    let chart = chart(dir.path());
    let mut failed = Vec::new();
    for (base, line, strings) in rows {
        let expected = helm_result(&helm, &chart, dir.path(), base, line, *strings);
        let got = ours(base, line, *strings);
        if got != expected {
            failed.push(format!(
                "{line:?} (strings: {strings}): helm {expected:?}, plumb {got:?}"
            ));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} differ from helm:\n{}",
        failed.len(),
        rows.len(),
        failed.join("\n")
    );
}

/// Every number as the `float64` Go holds: the crate keeps YAML integers exact, Helm rounds them
/// (and rounds them the same way again when it reads the values the crate hands it).
fn as_floats(value: Value) -> Value {
    match value {
        Value::Number(n) => n
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number),
        Value::Array(items) => Value::Array(items.into_iter().map(as_floats).collect()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k, as_floats(v))).collect())
        }
        other => other,
    }
}

/// Values YAML read as Helm reads `-f` and a chart's `values.yaml` (every document through
/// `sigs.k8s.io/yaml`), which is also how chartutil reads `valuesFrom` data, one document at a time.
#[test]
fn values_yaml_read_as_helm_reads_it() {
    let texts = [
        "a: yes\nb: no\nc: on\nd: off\ne: y\nf: n\ng: ~\nh: Null\ni: True\nj: YES\n",
        "oct: 0644\nhex: 0x1F\nbig: 12345678901234567890\nhuge: 123456789012345678901234567890\nneg: -12\nflt: 1.50\nexp: 1e3\nunder: 1_000\nsinf: '.inf'\n",
        "date: 2024-01-02\nts: 2024-01-02T03:04:05Z\nquoted: '2024-01-02'\n",
        "1: one\n2.5: float\ntrue: bool\n0x10: hexkey\n1e7: big\n",
        "base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\nlist: &l [1, 2]\ncopy: *l\n",
        "a: 1\nb: {c: 2}\n---\nb: {d: 3}\n---\n",
        "lit: |\n  line1\n  line2\nfold: >\n  a\n  b\nkeep: |+\n  x\n\nstrip: |-\n  y\n",
        "a: 1\na: 2\n",
        "empty:\nlist: []\nmap: {}\nnested: {a: [ {b: null} ]}\n",
    ];
    let helm = helm();
    let dir = tempfile::tempdir().unwrap();
    let chart = chart(dir.path());
    let mut failed = Vec::new();
    for text in texts {
        let expected =
            helm_result(&helm, &chart, dir.path(), text, "plumb=oracle", false).map(|mut v| {
                v.as_object_mut().unwrap().remove("plumb");
                as_floats(v)
            });
        let got = merge_values_files(&[("values.yaml".to_string(), text.to_string())])
            .map(as_floats)
            .map_err(|e| e.to_string());
        if got != expected {
            failed.push(format!("{text:?}: helm {expected:?}, plumb {got:?}"));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} differ from helm:\n{}",
        failed.len(),
        texts.len(),
        failed.join("\n")
    );
}

/// helm-controller hands Helm the `int64` that `--set` parsing makes of a `targetPath` integer;
/// a values file would make it a `float64` (`1e+06` in a template). The `--set` lines of
/// `compose_for_helm` after the file restore the `int64`, and leave YAML numbers `float64`.
#[test]
fn target_path_integers_reach_helm_as_int64() {
    use plumb_helm::values::{compose_for_helm, ValuesKind, ValuesReference};
    use std::collections::BTreeMap;

    let helm = helm();
    let dir = tempfile::tempdir().unwrap();
    let chart = chart(dir.path());
    std::fs::write(
        chart.join("templates/kinds.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kinds\ndata:\n  kinds: {{ printf \"%v %s|%v %s|%v %s|%v %s\" .Values.big (kindOf .Values.big) .Values.web.list (kindOf (index .Values.web.list 1)) (index .Values \"a.b\") (kindOf (index .Values \"a.b\")) .Values.other (kindOf .Values.other) | quote }}\n",
    )
    .unwrap();
    let references: Vec<ValuesReference> = [
        // First, so that the longer list is stored in `spec.values`' own `web` map.
        serde_json::json!({"kind": "Secret", "name": "s", "valuesKey": "big", "targetPath": "web.list[1]"}),
        serde_json::json!({"kind": "Secret", "name": "s", "valuesKey": "big", "targetPath": "big"}),
        serde_json::json!({"kind": "Secret", "name": "s", "valuesKey": "small", "targetPath": "a\\.b"}),
    ]
    .iter()
    .map(|e| ValuesReference::from_spec(e).unwrap())
    .collect();
    let source = |_: ValuesKind, _: &str| {
        Some(BTreeMap::from([
            ("big".to_string(), "1000000".to_string()),
            ("small".to_string(), "-7".to_string()),
        ]))
    };
    let spec = serde_json::json!({"other": 1000000, "web": {"list": ["x"]}});
    let composed = compose_for_helm(&references, &source, Some(&spec)).unwrap();
    assert_eq!(
        composed.int64_set,
        ["web.list[1]=1000000", "big=1000000", "a\\.b=-7"]
    );

    let render = |set: &[String]| {
        let values_file = dir.path().join("composed.json");
        std::fs::write(&values_file, composed.values.to_string()).unwrap();
        let mut command = Command::new(&helm);
        command
            .args(["template", "oracle"])
            .arg(&chart)
            .arg("-f")
            .arg(&values_file)
            .args([
                "--show-only",
                "templates/kinds.yaml",
                "--kube-version",
                "1.33.0",
            ])
            .env("HELM_CACHE_HOME", dir.path().join("cache"))
            .env("HELM_CONFIG_HOME", dir.path().join("config"))
            .env("HELM_DATA_HOME", dir.path().join("data"));
        for line in set {
            command.args(["--set", line]);
        }
        let output = command.output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8(output.stdout).unwrap();
        let docs = plumb_yaml::parse_documents("rendered", &stdout).unwrap();
        docs[0].str_at(&["data", "kinds"]).unwrap().to_string()
    };
    assert_eq!(
        render(&composed.int64_set),
        "1000000 int64|[x 1000000] int64|-7 int64|1e+06 float64"
    );
    assert_eq!(
        render(&[]),
        "1e+06 float64|[x 1e+06] float64|-7 float64|1e+06 float64"
    );
}
