//! The function map: Go's builtins, and the sets a caller picks from (flux-operator's
//! ResourceSet functions: slim-sprig's hermetic functions, `slugify`, `toYaml`).

mod slug;
mod sprig;
pub(crate) mod yaml;

use std::collections::HashMap;
use std::sync::Arc;

use crate::value::Value;

/// The Go type a function parameter asks for; a template argument of another type is an error,
/// as Go's reflection-based call reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// `interface{}`: any value, `nil` included.
    Any,
    /// `string`.
    String,
    /// `int`: a Go `int` or an integer constant; an `int64` is refused, as Go refuses it.
    Int,
    /// `bool`.
    Bool,
    /// `map[string]interface{}`; `nil` is an empty map.
    Map,
}

impl Param {
    pub(crate) fn go_name(self) -> &'static str {
        match self {
            Param::Any => "interface {}",
            Param::String => "string",
            Param::Int => "int",
            Param::Bool => "bool",
            Param::Map => "map[string]interface {}",
        }
    }
}

/// A function's parameters: fixed ones, then optionally a variadic tail.
#[derive(Clone, Debug)]
pub struct Signature {
    /// The fixed parameters.
    pub fixed: Vec<Param>,
    /// The type of each variadic argument, if the function is variadic.
    pub variadic: Option<Param>,
}

impl Signature {
    /// A function of fixed parameters.
    pub fn fixed(params: &[Param]) -> Signature {
        Signature {
            fixed: params.to_vec(),
            variadic: None,
        }
    }

    /// A variadic function.
    pub fn variadic(fixed: &[Param], rest: Param) -> Signature {
        Signature {
            fixed: fixed.to_vec(),
            variadic: Some(rest),
        }
    }

    /// The type of the argument at `i`.
    pub(crate) fn param(&self, i: usize) -> Param {
        self.fixed
            .get(i)
            .copied()
            .or(self.variadic)
            .unwrap_or(Param::Any)
    }
}

/// A function's body: its converted arguments in, a value or an error message out (Go prints
/// it as `error calling NAME: MESSAGE`).
pub type FunctionBody = Arc<dyn Fn(&[Value]) -> Result<Value, String> + Send + Sync>;

/// A function a template may call.
#[derive(Clone)]
pub(crate) enum Function {
    /// One of Go's builtins (`and`, `index`, `printf`...), evaluated by the executor.
    Builtin,
    /// A function of the map.
    Native(Signature, FunctionBody),
}

/// The functions a template may call, checked when it is parsed (Go reports an undefined
/// function as a parse error).
#[derive(Clone)]
pub struct Functions {
    map: HashMap<String, Function>,
}

const BUILTINS: &[&str] = &[
    "and", "call", "html", "index", "slice", "js", "len", "not", "or", "print", "printf",
    "println", "urlquery", "eq", "ge", "gt", "le", "lt", "ne",
];

impl Functions {
    /// No functions at all, not even the builtins: a set of overrides for
    /// [`crate::Template::execute_with`].
    pub fn empty() -> Functions {
        Functions {
            map: HashMap::new(),
        }
    }

    /// Go's builtin functions only (`template.New(name)`).
    pub fn builtins() -> Functions {
        let map = BUILTINS
            .iter()
            .map(|n| (n.to_string(), Function::Builtin))
            .collect();
        Functions { map }
    }

    /// The function map of flux-operator's ResourceSet builder: slim-sprig's
    /// `HermeticTxtFuncMap`, `slugify` (gosimple/slug, 63 characters, smart truncation),
    /// `toYaml` and `mustToYaml` (sigs.k8s.io/yaml). The builder also defines `inputs`,
    /// returning the current input set: add it with [`Functions::insert`].
    pub fn resource_set() -> Functions {
        let mut f = Functions::builtins();
        sprig::register(&mut f);
        f.insert("slugify", Signature::fixed(&[Param::String]), |a| {
            Ok(Value::String(slug::slugify(str_arg(a, 0))))
        });
        f.insert("toYaml", Signature::fixed(&[Param::Any]), |a| {
            Ok(Value::String(yaml::to_yaml(&a[0]).unwrap_or_default()))
        });
        f.insert("mustToYaml", Signature::fixed(&[Param::Any]), |a| {
            yaml::to_yaml(&a[0]).map(Value::String)
        });
        f
    }

    /// Adds (or replaces) a function.
    pub fn insert<F>(&mut self, name: &str, signature: Signature, body: F)
    where
        F: Fn(&[Value]) -> Result<Value, String> + Send + Sync + 'static,
    {
        self.map.insert(
            name.to_string(),
            Function::Native(signature, Arc::new(body)),
        );
    }

    /// Removes a function; a template calling it no longer parses.
    pub fn remove(&mut self, name: &str) {
        self.map.remove(name);
    }

    /// Whether `name` is a function of this map.
    pub fn contains(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Function> {
        self.map.get(name)
    }
}

impl Default for Functions {
    fn default() -> Functions {
        Functions::builtins()
    }
}

impl std::fmt::Debug for Functions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.map.keys().collect();
        names.sort();
        f.debug_struct("Functions").field("names", &names).finish()
    }
}

/// The string argument at `i` (the executor has checked its type).
pub(crate) fn str_arg(args: &[Value], i: usize) -> &str {
    args.get(i).and_then(Value::as_str).unwrap_or("")
}

/// The int argument at `i` (the executor has checked its type).
pub(crate) fn int_arg(args: &[Value], i: usize) -> i64 {
    match args.get(i) {
        Some(Value::Int(n) | Value::GoInt(n)) => *n,
        _ => 0,
    }
}
