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
//! (`call` always fails). Go distinguishes `int` from `int64`; here every integer is one type,
//! so a function whose Go parameter is `int` (`indent`, `repeat`, `trunc`) also accepts an
//! integer read from the data, where Go reports "wrong type for value; expected int; got
//! int64". Maps are values, not references: `set`/`unset` on a variable (or a variable's field)
//! update that variable, but not other variables holding the same map. `{{template}}` nesting
//! stops at 200 levels (Go: 100000). `slugify` transliterates Latin letters with diacritics,
//! but not other scripts, which gosimple/slug's unidecode tables cover.

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
    /// [`Functions::resource_set`]. Add `inputs` with [`Options::with_inputs`].
    pub fn resource_set() -> Options {
        Options {
            left_delim: "<<".into(),
            right_delim: ">>".into(),
            missing_key: MissingKey::Error,
            functions: Arc::new(Functions::resource_set()),
        }
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
        exec::execute(self, data)
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
