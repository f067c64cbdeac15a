//! The block reader against granit-parser: wherever the block reader reads a text, it must give
//! the same documents, node for node (value, style, tag) and span for span, and it must never
//! read a text granit-parser refuses. Checked on every YAML file of the kustomize conformance
//! corpus (../shared/conformance, or PLUMB_CONFORMANCE_DIR's parent), of the repository's
//! examples and of every crate's test fixtures, and on texts made from every combination of a
//! set of fragments. Prints how many texts each reader read.

mod support;

use plumb_yaml::{Node, NodeKind};
use std::path::{Path, PathBuf};
use support::yaml_files;

/// Every node of `docs` in document order: span, and kind with a scalar's value, style and tag.
fn flat(docs: &[Node]) -> Vec<(Option<(usize, usize)>, String)> {
    fn walk(node: &Node, out: &mut Vec<(Option<(usize, usize)>, String)>) {
        let span = node.span.as_ref().map(|s| (s.start, s.end));
        match &node.kind {
            NodeKind::Scalar(s) => {
                out.push((span, format!("{:?} {:?} {:?}", s.value, s.style, s.tag)))
            }
            NodeKind::Sequence(items) => {
                out.push((span, format!("sequence of {}", items.len())));
                items.iter().for_each(|i| walk(i, out));
            }
            NodeKind::Mapping(entries) => {
                out.push((span, format!("mapping of {}", entries.len())));
                for (k, v) in entries {
                    walk(k, out);
                    walk(v, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    docs.iter().for_each(|d| walk(d, &mut out));
    out
}

/// Compares the readers on `text`: `Some(true)` when the block reader read it (the same as
/// granit-parser), `Some(false)` when it left it to granit-parser, `None` with a message on
/// stderr when they disagree.
fn compare(name: &str, text: &str) -> Option<bool> {
    let granit = plumb_yaml::parse_documents_granit(name, text);
    let Some(block) = plumb_yaml::parse_documents_block(name, text) else {
        return Some(false);
    };
    match granit {
        Err(e) => {
            eprintln!("{name}: the block reader read a text granit-parser refuses ({e}):\n{text}");
            None
        }
        Ok(granit) => {
            let (g, b) = (flat(&granit), flat(&block));
            if g == b {
                return Some(true);
            }
            let at = g
                .iter()
                .zip(&b)
                .position(|(x, y)| x != y)
                .unwrap_or(g.len().min(b.len()));
            eprintln!(
                "{name}: node {at} differs: granit-parser {:?}, block reader {:?}\n{text}",
                g.get(at),
                b.get(at)
            );
            None
        }
    }
}

/// The YAML files of the conformance corpora and of the repository's examples.
fn corpus_and_examples() -> Vec<PathBuf> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let conformance = match std::env::var_os("PLUMB_CONFORMANCE_DIR") {
        Some(d) => PathBuf::from(d).join(".."),
        None => here.join("../../../shared/conformance"),
    };
    assert!(
        conformance.is_dir(),
        "conformance corpus not found at {}: set PLUMB_CONFORMANCE_DIR",
        conformance.display()
    );
    let mut files = Vec::new();
    yaml_files(&conformance, &mut files);
    yaml_files(&here.join("../../examples"), &mut files);
    files
}

/// Files of go-yaml's leniency: a block scalar's indicator on the line after its key, in the
/// key's column.
const LENIENT: &[&str] = &["exactness/block-indicator-at-key-column/cm.yaml"];

#[test]
fn reads_every_corpus_file_as_granit_parser_does() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = corpus_and_examples();
    for krate in std::fs::read_dir(here.join(".."))
        .expect("crates/")
        .flatten()
    {
        yaml_files(&krate.path().join("tests"), &mut files);
    }
    let (mut block, mut granit, mut differ) = (0, 0, Vec::new());
    let mut lenient = 0;
    for path in &files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let name = path.display().to_string();
        // Text go-yaml reads and granit-parser refuses, which the block reader reads as go-yaml
        // does (the exactness case compares its build with kustomize's).
        if LENIENT.iter().any(|l| name.ends_with(l)) {
            assert!(
                plumb_yaml::parse_documents_granit(&name, &text).is_err(),
                "{name}: granit-parser reads it now; drop it from LENIENT"
            );
            assert!(
                plumb_yaml::parse_documents_block(&name, &text).is_some(),
                "{name}: the block reader gave up on it"
            );
            lenient += 1;
            continue;
        }
        match compare(&name, &text) {
            Some(true) => block += 1,
            Some(false) => granit += 1,
            None => differ.push(path.display().to_string()),
        }
    }
    println!(
        "block reader: {block} files read as granit-parser reads them, {granit} left to \
         granit-parser, {} differ",
        differ.len()
    );
    assert!(differ.is_empty(), "{differ:#?}");
    assert_eq!(lenient, LENIENT.len(), "every lenient case was found");
    // The comparison means something only if the block reader reads most of them.
    assert!(
        block > 2 * granit,
        "{block} read, {granit} left to granit-parser"
    );
}

/// Documents made from every combination of a key's value, what follows it, and the entry after
/// it, in a mapping and in a sequence, at the top and nested: the block reader reads those in its
/// subset as granit-parser does, and reads enough of them for the comparison to mean something.
#[test]
fn reads_every_combination_of_fragments_as_granit_parser_does() {
    let values = [
        "v",
        "~",
        "a b  ",
        "x # comment",
        "http://h:1/p?q#f",
        "'it''s'",
        "\"a\\\\b\\\"c\\u00e9\\x41\\t\"",
        "\"\"",
        "[]",
        "{}",
        "[a, \"b c\", 'd', -e, 1.5]",
        "[ x ]  # c",
        "[x,y]",
        "{k: v, \"q\": 1, 'r': [}",
        "{k: v, \"q\": 1, 'r': s}",
        "{ a: b }",
        "[a, b,]",
        "[a: b]",
        "{a}",
        "{a: }",
        "[http://x:1]",
        "[a, [b]]",
        "{ drop: [\"ALL\"] }",
        "{ drop: [ \"ALL\" ] }  # c",
        "{a: {b: c}, d: [e, {f: 'g'}]}",
        "[[a, b], {c: d}, []]",
        "[ {a: b} , [ c , [d] ] ]",
        "{a: {}, b: [], c: [[]], d: {e: {}}}",
        "{a: [b,], c: d}",
        "{a: [b}",
        "[a, {b}]",
        "{a: [b: c]}",
        "{a: [-]}",
        "[{a: b}, &x c]",
        "{a: [b #c\n]}",
        "[-]",
        "[a, -]",
        "[a #c\n]",
        "|\n  line\n\n    more\n  last\n",
        "|-\n  a\n",
        ">\n  a\n  b\n\n  c\n\n\n  d\n    more\n    indented\n  e\n\n    f\n  g\n",
        ">-\n  a\n  b\n",
        ">+\n  a\n  b\n\n",
        "> # c\n  a\n   b\n  c\n",
        ">\n  \ttab\n",
        "|\n  \ttab\n  x\n",
        "|+\n  a\n\n",
        "| # c\n  a\n",
        "\n  k: v\n  j: w\n",
        "\n  - a\n  - b: c\n    d: e\n  -\n  - \n",
        "\n- a\n- k: v\n",
        "\n- |\n  text\n",
        "",
        "&a v",
        "&a\n  k: *a\n",
        "&a\n- 1\n- *a\n",
        "&a \"q\"",
        "&a |\n  t\n",
        "# comment\n  k: v\n",
        "# comment\n- a\n",
        "\n  - &i a\n  - *i\n  - &j\n    k: v\n  - # c\n    - x\n  - # c\n",
        "\n- &i\n  k: v\n- *i\n",
        "\n-\n  k: v\n-   # c\n  - x\n",
        "\n  <<: *m\n  z: 1\n",
        // Outside the subset: each must be left to granit-parser, or read alike.
        "*a",
        "&a",
        "&a *b",
        "\n- &i k: v\n",
        "!!str v",
        "a\n  continued",
        "'multi\n  line'",
        "'multi\n      line\n\n      more'",
        "\"folded \\\"q\\\"\n      \\ next\"",
        "|2\n   x\n",
        "- a",
        "x: y",
        "\"a\\\n b\"",
        "\tv",
    ];
    let afters = ["\n", "\n\n", "\n# c\n", "  \n", ""];
    let nexts = [
        "",
        "b: 2\n",
        "---\nc: 3\n",
        "# end\n",
        "  # indented comment\n",
    ];
    let (mut read, mut left) = (0, 0);
    let mut failures = 0;
    for value in values {
        for after in afters {
            for next in nexts {
                let entry = if value.starts_with('\n') || value.is_empty() {
                    format!("k:{value}")
                } else {
                    format!("k: {value}")
                };
                let body = format!("{entry}{after}{next}");
                let nested: String = body
                    .lines()
                    .map(|l| {
                        if l.is_empty() {
                            String::new()
                        } else {
                            format!("  {l}")
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                let indented: String = body
                    .lines()
                    .map(|l| {
                        if l.is_empty() {
                            "\n".to_string()
                        } else {
                            format!("    {l}\n")
                        }
                    })
                    .collect();
                let anchored = format!("m: &m\n  x: 1\na: &a 1\n{body}");
                let texts = [
                    body.clone(),
                    anchored,
                    // An inline patch, read in place in its block scalar's column.
                    format!("\n  \n{indented}"),
                    format!("top:\n{nested}\n"),
                    format!("- {entry}{after}"),
                    format!("---\nlist:\n- {entry}{after}{next}"),
                ];
                for text in texts {
                    match compare("fragment.yaml", &text) {
                        Some(true) => read += 1,
                        Some(false) => left += 1,
                        None => failures += 1,
                    }
                }
            }
        }
    }
    println!("fragments: {read} read by the block reader, {left} left to granit-parser");
    assert_eq!(failures, 0, "see the texts above");
    assert!(read > 500, "{read} read, {left} left");
}

/// What the block reader must leave to granit-parser, and what it must read.
#[test]
fn leaves_what_it_does_not_read_to_granit_parser() {
    for text in [
        "",
        "# only a comment\n",
        "---\n",
        "a: *x\n",
        "a: &x\nb: 1\n",
        "a: !!str 1\n",
        "a: [1,\n  2]\n",
        "a: [1, {b: [2}]\n",
        "a: b\r\n",
        "a:\tb\n",
        "a: b\n  c\n",
        "scalar\n",
        "  a: 1\n b: 2\n",
        "%YAML 1.2\n---\na: 1\n",
        "a: 1\n...\n",
        "\u{feff}a: 1\n",
        "a: b: c\n",
        "? a\n: b\n",
        "- - a\n",
        "a: |\n  x",
    ] {
        assert!(
            plumb_yaml::parse_documents_block("t.yaml", text).is_none(),
            "{text:?} is not the block reader's"
        );
    }
    for text in [
        "a: 1\n",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  k: |\n    v\n",
        "- op: add\n  path: /x\n  value: []\n",
        "a: &x 1\nb: *x\n",
        "a: [1, [2]]\n",
        "capabilities: { drop: [\"ALL\"] }\n",
        "a:\n  - # c\n    k: v\n",
        "a: >\n  folded\n  text\n",
        "---\na: 1\n---\nb: 2\n",
    ] {
        assert!(
            plumb_yaml::parse_documents_block("t.yaml", text).is_some(),
            "{text:?} is the block reader's"
        );
    }
}

/// Texts made by cutting, inserting and replacing YAML's significant characters at random places
/// of the corpus files (a fixed seed, so every run tries the same ones): wherever the block
/// reader reads one, it reads it as granit-parser does, and it never reads one granit-parser
/// refuses. Ran for 7.5 million texts while the reader was written; this keeps 20,000.
#[test]
fn reads_mutated_corpus_files_as_granit_parser_does() {
    let texts: Vec<String> = corpus_and_examples()
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter(|t| !t.is_empty() && t.len() < 4000)
        .collect();
    assert!(texts.len() > 100, "{} texts", texts.len());
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut random = move |below: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % below as u64) as usize
    };
    let pieces = [
        " ", "  ", "\n", "\n  ", "-", "- ", ":", ": ", "#", " #", "'", "\"", "|", ">", "|-", ">+",
        "&a", "*a", "[", "]", "{", "}", ",", "\t", "\\", "---\n", "x", "\n\n", "!", "?", "%",
    ];
    let boundary = |s: &String, mut at: usize| {
        while !s.is_char_boundary(at) {
            at += 1;
        }
        at
    };
    let (mut read, mut failures) = (0, 0);
    for _ in 0..20_000 {
        let mut text = texts[random(texts.len())].clone();
        for _ in 0..1 + random(3) {
            let at = boundary(&text, random(text.len()));
            let to = boundary(&text, (at + 1 + random(4)).min(text.len()));
            let piece = pieces[random(pieces.len())];
            match random(3) {
                0 => text.insert_str(at, piece),
                1 => text.replace_range(at..to, ""),
                _ => text.replace_range(at..to, piece),
            }
            if text.is_empty() {
                break;
            }
        }
        match compare("mutated.yaml", &text) {
            Some(true) => read += 1,
            Some(false) => {}
            None => failures += 1,
        }
    }
    println!("mutations: {read} of 20000 read by the block reader");
    assert_eq!(failures, 0, "see the texts above");
    assert!(read > 5_000, "{read} read");
}

/// Aliases inside one-line flow collections (`hosts: [*host]`, the app-template idiom), read
/// as granit-parser reads them; one to no anchor, an anchor inside the collection, and an alias
/// as a key are left to it. An alias key right before its `:` is read as go-yaml reads it.
#[test]
fn reads_aliases_in_flow_collections_as_granit_parser_does() {
    for (text, read) in [
        ("a: &host h\nb: [*host]\n", true),
        ("a: &host h\nb: [ *host , x ]\nc: {k: *host}\n", true),
        ("a: &x 1\nb: &y [2]\nc: [*x, [*y], {k: *x}]\n", true),
        ("h: &host x\ntls: [hosts: [*host]]\n", false),
        ("a: [*missing]\n", false),
        ("a: [&x 1, *x]\n", false),
        ("a: &x 1\nb: {*x : 2}\n", false),
        // An alias for a block mapping's key, as app-template's `controllers: *app :` writes it.
        ("a: &app x\nb:\n  *app :\n    c: d\n  e: f\n", true),
        ("a: &app x\nb:\n  e: f\n  *app  :  g # c\n", true),
        ("a: &app x\n*app : y\n", true),
        ("a: &app x\nb:\n  - *app : y\n", true),
        ("a: &app x\nb:\n  *nope : y\n", false),
        ("a: &app x\nb: &m\n  *app : y\n", true),
    ] {
        assert_eq!(compare("alias.yaml", text), Some(read), "{text:?}");
    }
    // `*app:`, no space before the colon: go-yaml's name (letters, digits, `_`, `-`) ends at
    // the `:`, YAML 1.2's does not, and granit-parser alone refuses the text (no anchor
    // `app:`). The block reader reads it as go-yaml, and kustomize, do; so does plumb's
    // reading through granit-parser (a space put between name and colon in a copy of the
    // text), with the same spans, in the text as written.
    let text = "a: &app x\nb:\n  *app: y\n";
    assert_eq!(compare("alias.yaml", text), Some(true));
    let docs = plumb_yaml::parse_documents_block("alias.yaml", text).expect("read");
    let b = docs[0].get("b").expect("b");
    assert_eq!(b.get("x").and_then(|v| v.scalar_value()), Some("y"));
    // Where only granit-parser reads the document (a tag), in block and flow mappings, and
    // twice on a line: every span after each split is where the text has it.
    let text = "a: &app x\nt: !!str 1\nb:\n  *app: y\n  c: {*app: z, *app: w}\nlast: v\n";
    let docs = plumb_yaml::parse_documents(Path::new("alias.yaml"), text).expect("read");
    let b = docs[0].get("b").expect("b");
    assert_eq!(b.get("x").and_then(|v| v.scalar_value()), Some("y"));
    let last = docs[0].get("last").expect("last");
    let span = last.span.as_ref().expect("span");
    assert_eq!(&text[span.start..span.end], "v");
    // An alias to no anchor stays an error, at the alias as written.
    let text = "a: &app x\nt: !!str 1\nb:\n  *nope: y\n";
    let e = plumb_yaml::parse_documents(Path::new("alias.yaml"), text).expect_err("no anchor");
    assert_eq!((e.location.line, e.location.column), (4, 3), "{e}");
}

/// A key written without a value in a flow mapping (`{ name: IMDb Genres, genre: romance,
/// comedy }`, as Kometa's configuration files write them by the hundred) is read as
/// granit-parser reads it: an empty value where the `,` or `}` after the key is.
#[test]
fn reads_keys_without_values_in_flow_mappings_as_granit_parser_does() {
    for (text, read) in [
        ("t: { name: Anime, mal_id: 46, poster }\n", true),
        ("t: { name: IMDb Genres, genre: romance, comedy }\n", true),
        ("t: {a}\n", true),
        ("t: { a }\n", true),
        ("t: {a, b}\n", true),
        ("t: {a , b: c}\n", true),
        ("t: {\"q\", 'r' }\n", true),
        ("t: [x, {a, b: [c]}]\n", true),
        ("- {a: 1, b}\n- {c}\n", true),
        ("t: &m {a}\nu: *m\n", true),
        // Still granit-parser's: a key and its `:` apart, a trailing comma, a key of a list.
        ("t: {a : b}\n", false),
        ("t: {a,}\n", false),
        ("t: {a, }\n", false),
        ("t: [a: b]\n", false),
    ] {
        assert_eq!(compare("flow.yaml", text), Some(read), "{text:?}");
    }
}

/// Quoted values that go on over lines, as YAML writers fold long ones (plumb's own writer
/// folds past column 80, and postBuild reads its text back), are read as granit-parser reads
/// them; what the reader does not fold (a tab, trailing spaces, an escaped line break, a line
/// not indented past its collection) is left to granit-parser.
#[test]
fn reads_quoted_values_folded_over_lines_as_granit_parser_does() {
    for (text, read) in [
        ("a: 'x\n  y'\n", true),
        ("a: \"x\n  y\"\n", true),
        ("k:\n  v: 'one two\n    three'\n  w: 1\n", true),
        ("- \"a b\n  c\"\n- 'd\n\n  e'\n", true),
        ("a: \"x\n\n\n  y\"\n", true),
        ("a: \"\n  y\"\n", true),
        ("a: \"x\n  \"\n", true),
        ("a: 'it''s\n  a ''b'''\n", true),
        ("a: \"crds:\\n\n  \\ enabled: false\\ndone\"\nb: c\n", true),
        ("a: \"\\u00e9t\\xe9\n  \\\"q\\\"\"  # c\n", true),
        ("a:\n- b: 'x\n    y'\n", true),
        // Left to granit-parser.
        ("a: 'x \n  y'\n", false),
        ("a: \"x\\\n  y\"\n", false),
        ("a: 'x\n\ty'\n", false),
        ("k:\n  v: 'x\n  y'\n", false),
        ("a: 'x\ny'\n", false),
        ("a: 'x\n  y'z\n", false),
        ("a: 'x\n  y': b\n", false),
    ] {
        assert_eq!(compare("folded.yaml", text), Some(read), "{text:?}");
    }
}
