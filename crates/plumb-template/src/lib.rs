//! plumb-template: Go's `text/template` language, with the functions flux-operator gives
//! ResourceSet templates, so that plumb expands a ResourceSet as the operator does.
//!
//! A [`Template`] is parsed once with [`Options`] (delimiters, `missingkey`, the function map)
//! and executed against a [`Value`]; errors carry the line and column in the template text and
//! the action or function that failed.
//!
//! ```
//! use plumb_template::{Options, Template, Value};
//!
//! let data = Value::from(serde_json::json!({"tenants": ["b", "a"], "env": "prod"}));
//! let t = Template::parse("demo", "{{range .tenants}}{{.}}-{{$.env | printf \"%q\"}} {{end}}", &Options::new())
//!     .unwrap();
//! assert_eq!(t.execute(&data).unwrap(), "b-\"prod\" a-\"prod\" ");
//!
//! // A ResourceSet: `<<`/`>>`, missingkey=error, slim-sprig, and `inputs` from the caller.
//! let inputs = Value::from(serde_json::json!({"tenant": "Team One"}));
//! let opts = Options::resource_set().with_inputs(inputs);
//! let t = Template::parse("resourceset", "name: << inputs.tenant | slugify >>", &opts).unwrap();
//! assert_eq!(t.execute(&Value::Null).unwrap(), "name: team-one");
//! let err = Template::parse("resourceset", "\n  << inputs.nope >>", &opts)
//!     .unwrap()
//!     .execute(&Value::Null)
//!     .unwrap_err();
//! assert_eq!((err.line, err.column), (2, 6));
//! assert!(err.to_string().contains("map has no entry for key \"nope\""));
//! ```
//!
//! ## Where it differs from Go
//!
//! Values are JSON-shaped ([`Value`]): there are no structs, methods or Go function values
//! (`call` always fails). Go's `int` and `int64` are kept apart (a parameter of type `int`
//! refuses an `int64` from the data, as in Go), but other Go integer and float sizes are not.
//! Maps are values, not references: `set`/`unset` on a variable (or a variable's field)
//! update that variable, but not other variables holding the same map. `{{template}}` calls and
//! control structures may nest 150 levels together when executed, 100 in the text (Go: 100000
//! template calls). `slugify` transliterates Latin letters with diacritics,
//! but not other scripts, which gosimple/slug's unidecode tables cover. The date functions
//! slim-sprig keeps in its hermetic map (`ago`, `toDate`, `durationRound`, `unixEpoch`,
//! `mustDateModify`) parse but fail when called.
//!
//! [`to_yaml`] is also what flux-operator runs on each `spec.resources` entry before it is
//! parsed as a template (`yaml.JSONToYAML`), so a caller can build that template text the same
//! way.

mod error;
mod escape;
mod exec;
mod funcs;
mod gofmt;
mod lex;
mod parse;
mod value;

use std::sync::Arc;

pub use error::{Error, ErrorKind};
pub use funcs::yaml::to_yaml;
pub use funcs::{FunctionBody, Functions, Param, Signature};
pub use value::Value;

/// What a missing map key gives (`Option("missingkey=...")`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MissingKey {
    /// `missingkey=default` (or `invalid`): no value, printed `<no value>`.
    #[default]
    Default,
    /// `missingkey=zero`: the map's zero value (`nil` for `map[string]interface{}`, which also
    /// prints `<no value>`).
    Zero,
    /// `missingkey=error`: execution stops with `map has no entry for key "k"`.
    Error,
}

/// How to parse and execute a template.
#[derive(Clone, Debug)]
pub struct Options {
    /// The left delimiter (`{{`).
    pub left_delim: String,
    /// The right delimiter (`}}`).
    pub right_delim: String,
    /// What a missing map key gives.
    pub missing_key: MissingKey,
    /// The functions templates may call.
    pub functions: Arc<Functions>,
}

impl Default for Options {
    fn default() -> Options {
        Options::new()
    }
}

impl Options {
    /// Go's defaults: `{{ }}`, `missingkey=default`, the builtin functions only.
    pub fn new() -> Options {
        Options {
            left_delim: "{{".into(),
            right_delim: "}}".into(),
            missing_key: MissingKey::Default,
            functions: Arc::new(Functions::builtins()),
        }
    }

    /// What flux-operator's ResourceSet builder uses: `<<` `>>`, `missingkey=error` and
    /// [`Functions::resource_set`], with `inputs` returning an empty map (the builder's nil
    /// input set when a ResourceSet has no inputs). Give the inputs with
    /// [`Options::with_inputs`] or [`Template::execute_with_inputs`].
    pub fn resource_set() -> Options {
        Options {
            left_delim: "<<".into(),
            right_delim: ">>".into(),
            missing_key: MissingKey::Error,
            functions: Arc::new(Functions::resource_set()),
        }
        .with_inputs(Value::map(Default::default()))
    }

    /// Other delimiters (Go's `Delims`; empty means the default).
    pub fn with_delims(mut self, left: &str, right: &str) -> Options {
        self.left_delim = if left.is_empty() { "{{" } else { left }.into();
        self.right_delim = if right.is_empty() { "}}" } else { right }.into();
        self
    }

    /// Another `missingkey` behaviour.
    pub fn with_missing_key(mut self, missing_key: MissingKey) -> Options {
        self.missing_key = missing_key;
        self
    }

    /// Adds the function `inputs`, which returns `inputs` (the ResourceSet builder's way of
    /// giving a template its input set: it executes the template with nil data).
    pub fn with_inputs(mut self, inputs: Value) -> Options {
        Arc::make_mut(&mut self.functions)
            .insert("inputs", Signature::fixed(&[]), move |_| Ok(inputs.clone()));
        self
    }

    /// Adds (or replaces) a function.
    pub fn with_function<F>(mut self, name: &str, signature: Signature, body: F) -> Options
    where
        F: Fn(&[Value]) -> Result<Value, String> + Send + Sync + 'static,
    {
        Arc::make_mut(&mut self.functions).insert(name, signature, body);
        self
    }
}

/// A parsed template: the main text and the templates it `define`s.
#[derive(Debug)]
pub struct Template {
    name: String,
    src: String,
    trees: parse::Trees,
    missing_key: MissingKey,
    functions: Arc<Functions>,
}

impl Template {
    /// Parses `text`; `name` is the name errors print (Go's `template.New(name)`).
    pub fn parse(name: &str, text: &str, options: &Options) -> Result<Template, Error> {
        let tokens = lex::lex(name, text, &options.left_delim, &options.right_delim)?;
        let functions = options.functions.clone();
        let trees = parse::parse(name, text, tokens, &|f| functions.contains(f))?;
        Ok(Template {
            name: name.to_string(),
            src: text.to_string(),
            trees,
            missing_key: options.missing_key,
            functions,
        })
    }

    /// Executes the template with `data` as dot (`Value::Null` is Go's nil data).
    pub fn execute(&self, data: &Value) -> Result<String, Error> {
        exec::execute(self, data, None)
    }

    /// Executes with `functions` taking precedence over the template's own for this run only
    /// (a name must still have been a function when the template was parsed).
    pub fn execute_with(&self, data: &Value, functions: &Functions) -> Result<String, Error> {
        exec::execute(self, data, Some(functions))
    }

    /// Executes as flux-operator's ResourceSet builder does for one input set: nil data, and
    /// `inputs` returning `inputs`. Parse once with [`Options::resource_set`], then run this
    /// for each input set.
    pub fn execute_with_inputs(&self, inputs: &Value) -> Result<String, Error> {
        let mut functions = Functions::empty();
        let inputs = inputs.clone();
        functions.insert("inputs", Signature::fixed(&[]), move |_| Ok(inputs.clone()));
        exec::execute(self, &Value::Null, Some(&functions))
    }

    /// The template's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The names of the templates it defines (`define`, `block`), sorted.
    pub fn defined_templates(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.trees.defined.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_and_options_are_shareable_across_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<Template>();
        shareable::<Options>();
        shareable::<Error>();
    }

    #[test]
    fn one_parse_executes_against_many_inputs_in_parallel() {
        let opts = Options::new();
        let t = Template::parse("t", "{{.n}}-{{.n | printf \"%03d\"}}", &opts).unwrap();
        let outputs: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|i| {
                    let t = &t;
                    s.spawn(move || {
                        t.execute(&Value::from(serde_json::json!({ "n": i })))
                            .unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(outputs, ["0-000", "1-001", "2-002", "3-003"]);
    }

    #[test]
    fn a_custom_function_is_called_with_its_arguments_and_its_error_is_reported() {
        let opts = Options::new()
            .with_function(
                "pair",
                Signature::fixed(&[Param::String, Param::Int]),
                |a| {
                    Ok(Value::String(format!(
                        "{}={}",
                        a[0].as_str().unwrap_or(""),
                        match a[1] {
                            Value::GoInt(i) => i,
                            _ => -1,
                        }
                    )))
                },
            )
            .with_function("boom", Signature::fixed(&[]), |_| Err("it broke".into()));
        let t = Template::parse("t", "{{pair \"a\" 1}}", &opts).unwrap();
        assert_eq!(t.execute(&Value::Null).unwrap(), "a=1");
        let err = Template::parse("t", "x\n {{boom}}", &opts)
            .unwrap()
            .execute(&Value::Null)
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Exec);
        assert_eq!((err.line, err.column, err.offset), (2, 4, 5));
        assert_eq!(err.context.as_deref(), Some("boom"));
        assert_eq!(
            err.to_string(),
            "template: t:2:4: executing \"t\" at <boom>: error calling boom: it broke"
        );
    }

    #[test]
    fn a_parse_error_has_no_execution_context() {
        let err = Template::parse("rs", "a\n<< nope >>", &Options::resource_set()).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Parse);
        assert_eq!((err.line, err.column), (2, 4));
        assert_eq!(
            err.to_string(),
            "template: rs:2:4: function \"nope\" not defined"
        );
    }

    #[test]
    fn removing_a_function_makes_templates_calling_it_fail_to_parse() {
        let mut functions = Functions::resource_set();
        assert!(functions.contains("toYaml"));
        functions.remove("toYaml");
        let opts = Options {
            functions: std::sync::Arc::new(functions),
            ..Options::resource_set()
        };
        let err = Template::parse("rs", "<< toYaml 1 >>", &opts).unwrap_err();
        assert!(err.message.contains("\"toYaml\" not defined"), "{err}");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = format!("{{{{{}1{}}}}}", "(".repeat(5000), ")".repeat(5000));
        let err = Template::parse("t", &deep, &Options::new()).unwrap_err();
        assert!(
            err.message.contains("exceeded maximum nesting depth"),
            "{err}"
        );
        let ifs = format!("{}x{}", "{{if 1}}".repeat(5000), "{{end}}".repeat(5000));
        let err = Template::parse("t", &ifs, &Options::new()).unwrap_err();
        assert!(
            err.message.contains("exceeded maximum nesting depth"),
            "{err}"
        );
        // The deepest structure that parses also executes, inside recursion, on a 2 MiB stack.
        let fine = format!(
            "{{{{define \"d\"}}}}{}x{}{{{{end}}}}{{{{template \"d\"}}}}",
            "{{if 1}}".repeat(99),
            "{{end}}".repeat(99)
        );
        let t = Template::parse("t", &fine, &Options::new()).unwrap();
        assert_eq!(t.execute(&Value::Null).unwrap(), "x");
    }

    #[test]
    fn endless_template_recursion_stops_with_an_error() {
        let text = r#"{{define "r"}}{{with .}}{{range .}}{{template "r" $}}{{end}}{{end}}{{end}}{{template "r" .}}"#;
        let t = Template::parse("t", text, &Options::new()).unwrap();
        let err = t.execute(&Value::from(serde_json::json!([1]))).unwrap_err();
        assert!(
            err.message.contains("exceeded maximum template depth"),
            "{err}"
        );
        assert_eq!(err.executing.as_deref(), Some("r"));
    }

    #[test]
    fn huge_results_are_refused() {
        let opts = Options::resource_set();
        for text in [
            "<< repeat 1000000000 \"abc\" >>",
            "<< until 1000000000000 >>",
            "<< seq 1 99999999999 >>",
            "<< indent 99999999999 \"x\" >>",
            "<< untilStep 0 99999999999 1 >>",
        ] {
            let err = Template::parse("t", text, &opts)
                .unwrap()
                .execute(&Value::Null)
                .unwrap_err();
            assert!(err.message.contains("too large"), "{text}: {err}");
        }
        let t = Template::parse("t", "{{printf \"%99999999d\" 1}}", &Options::new()).unwrap();
        assert_eq!(t.execute(&Value::Null).unwrap(), "%!(BADWIDTH)1");
    }

    #[test]
    fn one_resource_set_template_runs_for_each_input_set() {
        let t = Template::parse(
            "resourceset",
            "name: << inputs.tenant >>-<< inputs.n | add1 >>",
            &Options::resource_set(),
        )
        .unwrap();
        let a = t
            .execute_with_inputs(&Value::from(serde_json::json!({"tenant": "a", "n": 1})))
            .unwrap();
        let b = t
            .execute_with_inputs(&Value::from(serde_json::json!({"tenant": "b", "n": 5})))
            .unwrap();
        assert_eq!((a.as_str(), b.as_str()), ("name: a-2", "name: b-6"));
        // Without inputs, `inputs` is the builder's nil map: every key is missing.
        let err = t.execute(&Value::Null).unwrap_err();
        assert!(
            err.to_string()
                .contains("at <inputs>: map has no entry for key \"tenant\""),
            "{err}"
        );
    }
}
