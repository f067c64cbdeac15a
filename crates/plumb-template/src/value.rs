//! The data a template reads and its functions return: the shapes JSON and YAML decode into.
//!
//! Maps are sorted by key because Go maps have no order and text/template, `fmt` and
//! `encoding/json` always visit them in sorted key order.

use std::collections::BTreeMap;
use std::sync::Arc;

/// A value as a Go template sees it (`nil`, `bool`, `int64`, `float64`, `string`,
/// `[]interface{}`, `map[string]interface{}`).
///
/// Lists and maps are shared: cloning a value is cheap.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Value {
    /// Go's `nil` (a JSON `null`).
    #[default]
    Null,
    /// A boolean.
    Bool(bool),
    /// An `int64`: the integers of data decoded from JSON (as Kubernetes' JSON decoder gives
    /// them) and of sprig's arithmetic.
    Int(i64),
    /// A Go `int`: integer constants in a template, `len`, range indexes, sprig's `int`,
    /// `atoi` and `until`. Go tells it from `int64`: a function parameter of type `int`
    /// refuses an `int64`, and `typeOf` and `deepEqual` see the difference.
    GoInt(i64),
    /// A floating-point number.
    Float(f64),
    /// A string.
    String(String),
    /// A list (`[]interface{}`).
    List(Arc<Vec<Value>>),
    /// A map with string keys, in sorted key order.
    Map(Arc<BTreeMap<String, Value>>),
}

impl Value {
    /// A list value.
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Arc::new(items))
    }

    /// A map value.
    pub fn map(entries: BTreeMap<String, Value>) -> Value {
        Value::Map(Arc::new(entries))
    }

    /// A string value.
    pub fn string(s: impl Into<String>) -> Value {
        Value::String(s.into())
    }

    /// Go's truth: false, 0, nil, and an empty string, list or map are false.
    pub fn is_true(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Int(i) | Value::GoInt(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::String(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.is_empty(),
        }
    }

    /// The Go type name `%T` prints for this value.
    pub fn go_type(&self) -> &'static str {
        match self {
            Value::Null => "<nil>",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int64",
            Value::GoInt(_) => "int",
            Value::Float(_) => "float64",
            Value::String(_) => "string",
            Value::List(_) => "[]interface {}",
            Value::Map(_) => "map[string]interface {}",
        }
    }

    /// The reflect kind name (`kindOf`) of this value.
    pub fn go_kind(&self) -> &'static str {
        match self {
            Value::Null => "invalid",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int64",
            Value::GoInt(_) => "int",
            Value::Float(_) => "float64",
            Value::String(_) => "string",
            Value::List(_) => "slice",
            Value::Map(_) => "map",
        }
    }

    /// The integer, of either Go type.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) | Value::GoInt(i) => Some(*i),
            _ => None,
        }
    }

    /// The value as a string slice, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// Converts to JSON; a float that is not finite becomes `null`.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) | Value::GoInt(i) => serde_json::Value::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::String(s) => serde_json::Value::String(s.clone()),
            Value::List(l) => serde_json::Value::Array(l.iter().map(Value::to_json).collect()),
            Value::Map(m) => {
                serde_json::Value::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
        }
    }

    /// Converts JSON as Go's `encoding/json` decodes into `interface{}`: every number a float64
    /// (what sprig's `fromJson` gives).
    pub fn from_json_floats(json: &serde_json::Value) -> Value {
        match json {
            serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(0.0)),
            serde_json::Value::Array(a) => {
                Value::list(a.iter().map(Value::from_json_floats).collect())
            }
            serde_json::Value::Object(o) => Value::map(
                o.iter()
                    .map(|(k, v)| (k.clone(), Value::from_json_floats(v)))
                    .collect(),
            ),
            other => Value::from(other),
        }
    }
}

/// Converts JSON as Kubernetes' decoder (`k8s.io/apimachinery/pkg/util/json`) does, which is
/// how flux-operator reads ResourceSet inputs: an integer literal becomes `int64`, any other
/// number `float64`.
impl From<&serde_json::Value> for Value {
    fn from(json: &serde_json::Value) -> Value {
        match json {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(0.0)),
            },
            serde_json::Value::String(s) => Value::String(s.clone()),
            serde_json::Value::Array(a) => Value::list(a.iter().map(Value::from).collect()),
            serde_json::Value::Object(o) => {
                Value::map(o.iter().map(|(k, v)| (k.clone(), Value::from(v))).collect())
            }
        }
    }
}

impl From<serde_json::Value> for Value {
    fn from(json: serde_json::Value) -> Value {
        Value::from(&json)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s)
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::Int(i)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}
