//! The executor: walks the tree against the data, with Go's rules for dot, variables and
//! their scopes, missing keys, truth, function calls and the builtins.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::Error;
use crate::funcs::{Function, Functions, Param, Signature};
use crate::gofmt;
use crate::parse::{Arg, Branch, Command, List, Node, Pipe, Span};
use crate::value::Value;
use crate::{MissingKey, Template};

/// How deep `{{template}}` calls and control structures may nest together during execution
/// (Go allows 100000 template calls; the executor recurses per level, and a 2 MiB thread
/// stack holds a few hundred levels of a debug build).
const MAX_DEPTH: usize = 150;

/// A value during execution; `None` is Go's invalid value ("no value"), which a missing map
/// key gives and which prints `<no value>`.
type Val = Option<Value>;

enum Flow {
    Normal,
    Break,
    Continue,
}

pub(crate) struct State<'a> {
    tmpl: &'a Template,
    out: String,
    vars: Vec<(String, Val)>,
    depth: usize,
    executing: String,
    /// Functions given to this execution, which take precedence over the template's.
    overrides: Option<&'a Functions>,
}

/// An error raised at a span; turned into an [`Error`] with the template's position.
struct Fail {
    span: Span,
    message: String,
    /// The `define`d template that failed, when it is not the main one.
    executing: Option<String>,
}

type Exec<T> = Result<T, Fail>;

fn fail<T>(span: Span, message: impl Into<String>) -> Exec<T> {
    Err(Fail {
        span,
        message: message.into(),
        executing: None,
    })
}

pub(crate) fn execute(
    tmpl: &Template,
    data: &Value,
    overrides: Option<&Functions>,
) -> Result<String, Error> {
    let dot: Val = match data {
        Value::Null => None,
        v => Some(v.clone()),
    };
    let mut s = State {
        tmpl,
        out: String::new(),
        vars: vec![("$".to_string(), dot.clone())],
        depth: 0,
        executing: tmpl.name.clone(),
        overrides,
    };
    match s.walk(&tmpl.trees.main, &dot) {
        Ok(_) => Ok(s.out),
        Err(f) => Err(s.error(f)),
    }
}

/// Go's `fmt` of a value printed by an action: `<no value>` for nil.
fn print_val(v: &Val, out: &mut String) {
    match v {
        None | Some(Value::Null) => out.push_str("<no value>"),
        Some(v) => out.push_str(&gofmt::sprint_value(v)),
    }
}

fn truth(v: &Val) -> bool {
    v.as_ref().is_some_and(Value::is_true)
}

impl State<'_> {
    fn error(&self, f: Fail) -> Error {
        let src = &self.tmpl.src;
        let context = src.get(f.span.start..f.span.end).unwrap_or("");
        Error::exec(
            &self.tmpl.name,
            src,
            f.executing.as_deref().unwrap_or(&self.executing),
            f.span.start,
            context,
            f.message,
        )
    }

    fn walk(&mut self, list: &List, dot: &Val) -> Exec<Flow> {
        for node in list {
            match self.node(node, dot)? {
                Flow::Normal => {}
                flow => return Ok(flow),
            }
        }
        Ok(Flow::Normal)
    }

    fn node(&mut self, node: &Node, dot: &Val) -> Exec<Flow> {
        match node {
            Node::Text(t) => self.out.push_str(t),
            Node::Action(pipe) => {
                let v = self.pipeline(dot, pipe)?;
                if pipe.decl.is_empty() {
                    print_val(&v, &mut self.out);
                }
            }
            Node::If(b) | Node::With(b) => {
                self.descend(b.pipe.span)?;
                let flow = self.if_or_with(node, b, dot);
                self.depth -= 1;
                return flow;
            }
            Node::Range(b) => {
                self.descend(b.pipe.span)?;
                let mark = self.vars.len();
                let flow = self.range(b, dot);
                self.vars.truncate(mark);
                self.depth -= 1;
                return flow;
            }
            Node::Template { span, name, pipe } => {
                // The main text is a template too, under the name it was parsed with.
                let tree = self
                    .tmpl
                    .trees
                    .defined
                    .get(name)
                    .or((name == &self.tmpl.name).then_some(&self.tmpl.trees.main));
                let Some(tree) = tree else {
                    return fail(*span, format!("template {name:?} not defined"));
                };
                let new_dot = match pipe {
                    Some(p) => self.pipeline(dot, p)?,
                    None => None,
                };
                self.descend(*span)?;
                let saved_vars =
                    std::mem::replace(&mut self.vars, vec![("$".to_string(), new_dot.clone())]);
                let saved_name = std::mem::replace(&mut self.executing, name.clone());
                let r = self.walk(tree, &new_dot);
                self.depth -= 1;
                self.executing = saved_name;
                self.vars = saved_vars;
                r.map_err(|mut f| {
                    f.executing.get_or_insert_with(|| name.clone());
                    f
                })?;
            }
            Node::Break => return Ok(Flow::Break),
            Node::Continue => return Ok(Flow::Continue),
        }
        Ok(Flow::Normal)
    }

    fn descend(&mut self, span: Span) -> Exec<()> {
        if self.depth >= MAX_DEPTH {
            return fail(
                span,
                format!("exceeded maximum template depth ({MAX_DEPTH})"),
            );
        }
        self.depth += 1;
        Ok(())
    }

    fn if_or_with(&mut self, node: &Node, b: &Branch, dot: &Val) -> Exec<Flow> {
        let mark = self.vars.len();
        let v = self.pipeline(dot, &b.pipe)?;
        let flow = if truth(&v) {
            let body_dot = if matches!(node, Node::With(_)) {
                &v
            } else {
                dot
            };
            self.walk(&b.list, body_dot)
        } else if let Some(e) = &b.else_list {
            self.walk(e, dot)
        } else {
            Ok(Flow::Normal)
        };
        self.vars.truncate(mark);
        flow
    }

    fn range(&mut self, b: &Branch, dot: &Val) -> Exec<Flow> {
        // The pipeline is evaluated without its declarations: range binds them per item.
        let v = self.pipeline_value(dot, &b.pipe)?;
        let items: Vec<(Value, Value)> = match &v {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::List(l)) => l
                .iter()
                .enumerate()
                .map(|(i, x)| (Value::GoInt(i as i64), x.clone()))
                .collect(),
            Some(Value::Map(m)) => m
                .iter()
                .map(|(k, x)| (Value::String(k.clone()), x.clone()))
                .collect(),
            Some(counter @ (Value::Int(n) | Value::GoInt(n))) => {
                if b.pipe.decl.len() > 1 {
                    return fail(
                        b.pipe.span,
                        format!("can't use {n} to iterate over more than one variable"),
                    );
                }
                // The items have the counter's type.
                let item = |i: i64| match counter {
                    Value::Int(_) => Value::Int(i),
                    _ => Value::GoInt(i),
                };
                (0..*n).map(|i| (item(i), item(i))).collect()
            }
            Some(other) => {
                return fail(
                    b.pipe.span,
                    format!("range can't iterate over {}", gofmt::sprint_value(other)),
                )
            }
        };
        if items.is_empty() {
            if let Some(e) = &b.else_list {
                return self.walk(e, dot);
            }
            return Ok(Flow::Normal);
        }
        let mark = self.vars.len();
        for (key, item) in items {
            match b.pipe.decl.len() {
                0 => {}
                1 => self.declare(&b.pipe, 0, Some(item.clone()))?,
                _ => {
                    self.declare(&b.pipe, 0, Some(key))?;
                    self.declare(&b.pipe, 1, Some(item.clone()))?;
                }
            }
            let flow = self.walk(&b.list, &Some(item))?;
            self.vars.truncate(mark);
            if let Flow::Break = flow {
                break;
            }
        }
        Ok(Flow::Normal)
    }

    fn declare(&mut self, pipe: &Pipe, i: usize, v: Val) -> Exec<()> {
        let name = &pipe.decl[i];
        if pipe.is_assign {
            match self.vars.iter_mut().rev().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = v,
                None => return fail(pipe.span, format!("undefined variable: {name}")),
            }
        } else {
            self.vars.push((name.clone(), v));
        }
        Ok(())
    }

    fn var(&self, span: Span, name: &str) -> Exec<Val> {
        match self.vars.iter().rev().find(|(n, _)| n == name) {
            Some((_, v)) => Ok(v.clone()),
            None => fail(span, format!("undefined variable: {name}")),
        }
    }

    /// A pipeline's value, with its declarations made.
    fn pipeline(&mut self, dot: &Val, pipe: &Pipe) -> Exec<Val> {
        let v = self.pipeline_value(dot, pipe)?;
        for i in 0..pipe.decl.len() {
            self.declare(pipe, i, v.clone())?;
        }
        Ok(v)
    }

    fn pipeline_value(&mut self, dot: &Val, pipe: &Pipe) -> Exec<Val> {
        let mut value: Option<Val> = None;
        for cmd in &pipe.cmds {
            let mut v = self.command(dot, cmd, value)?;
            // Go digs into an interface{} result: a nil one becomes no value.
            if v == Some(Value::Null) {
                v = None;
            }
            value = Some(v);
        }
        Ok(value.flatten())
    }

    /// One command; `last` is the previous stage's value, passed as the final argument.
    fn command(&mut self, dot: &Val, cmd: &Command, last: Option<Val>) -> Exec<Val> {
        let first = &cmd.args[0];
        let rest = &cmd.args[1..];
        match first {
            Arg::Field(span, fields) => {
                let has_args = !rest.is_empty() || last.is_some();
                self.field_chain(*span, dot.clone(), fields, has_args)
            }
            Arg::Variable(span, name, fields) => {
                let v = self.var(*span, name)?;
                if fields.is_empty() {
                    if !rest.is_empty() || last.is_some() {
                        return fail(*span, format!("can't give argument to non-function {name}"));
                    }
                    return Ok(v);
                }
                let has_args = !rest.is_empty() || last.is_some();
                self.field_chain(*span, v, fields, has_args)
            }
            Arg::Chain(_, inner, fields) => {
                // Go reports a chain's field errors at the chained operand (`<inputs>`).
                let v = self.arg_value(dot, inner)?;
                let has_args = !rest.is_empty() || last.is_some();
                self.field_chain(inner.span(), v, fields, has_args)
            }
            Arg::Ident(_, name) => self.call(dot, name, cmd, rest, last),
            Arg::Pipe(span, pipe) => {
                if !rest.is_empty() || last.is_some() {
                    return fail(*span, "can't give argument to non-function");
                }
                self.pipeline(dot, pipe)
            }
            Arg::Nil(span) => fail(*span, "nil is not a command"),
            other => {
                if !rest.is_empty() || last.is_some() {
                    let s = other.span();
                    return fail(
                        s,
                        format!(
                            "can't give argument to non-function {}",
                            &self.tmpl.src[s.start..s.end]
                        ),
                    );
                }
                self.arg_value(dot, other)
            }
        }
    }

    /// The value of an operand used as an argument.
    fn arg_value(&mut self, dot: &Val, arg: &Arg) -> Exec<Val> {
        Ok(match arg {
            Arg::Field(span, fields) => self.field_chain(*span, dot.clone(), fields, false)?,
            Arg::Variable(span, name, fields) => {
                let v = self.var(*span, name)?;
                self.field_chain(*span, v, fields, false)?
            }
            Arg::Chain(_, inner, fields) => {
                let v = self.arg_value(dot, inner)?;
                self.field_chain(inner.span(), v, fields, false)?
            }
            Arg::Dot(_) => dot.clone(),
            Arg::Nil(_) => Some(Value::Null),
            Arg::Bool(_, b) => Some(Value::Bool(*b)),
            Arg::Number(_, n) => Some(if n.is_float {
                Value::Float(n.float.unwrap_or(0.0))
            } else {
                Value::GoInt(n.int.unwrap_or(0))
            }),
            Arg::Str(_, s) => Some(Value::String(s.clone())),
            Arg::Ident(span, name) => {
                let cmd = Command {
                    span: *span,
                    args: Vec::new(),
                };
                self.call(dot, name, &cmd, &[], None)?
            }
            Arg::Pipe(_, pipe) => self.pipeline(dot, pipe)?,
        })
    }

    fn field_chain(
        &mut self,
        span: Span,
        receiver: Val,
        fields: &[String],
        has_args: bool,
    ) -> Exec<Val> {
        let mut v = receiver;
        for (i, f) in fields.iter().enumerate() {
            v = self.field(span, v, f, has_args && i == fields.len() - 1)?;
        }
        Ok(v)
    }

    fn field(&self, span: Span, receiver: Val, name: &str, has_args: bool) -> Exec<Val> {
        let missing = self.tmpl.missing_key;
        match receiver {
            None => {
                if missing == MissingKey::Error {
                    return fail(span, format!("nil data; no entry for key {name:?}"));
                }
                Ok(None)
            }
            Some(Value::Null) => fail(
                span,
                format!("nil pointer evaluating interface {{}}.{name}"),
            ),
            Some(Value::Map(m)) => {
                if has_args {
                    return fail(span, format!("{name} is not a method but has arguments"));
                }
                match m.get(name) {
                    Some(v) => Ok(Some(v.clone())),
                    None => match missing {
                        MissingKey::Default => Ok(None),
                        MissingKey::Zero => Ok(Some(Value::Null)),
                        MissingKey::Error => {
                            fail(span, format!("map has no entry for key {name:?}"))
                        }
                    },
                }
            }
            Some(other) => fail(
                span,
                format!("can't evaluate field {name} in type {}", other.go_type()),
            ),
        }
    }

    /// Calls a function: builtins here, the map's functions with Go's argument checks.
    fn call(
        &mut self,
        dot: &Val,
        name: &str,
        cmd: &Command,
        args: &[Arg],
        last: Option<Val>,
    ) -> Exec<Val> {
        let span = cmd.span;
        let found = self
            .overrides
            .and_then(|o| o.get(name))
            .or_else(|| self.tmpl.functions.get(name));
        let Some(function) = found else {
            return fail(span, format!("{name:?} is not a defined function"));
        };
        let function = function.clone();
        let given = args.len() + usize::from(last.is_some());
        match function {
            Function::Builtin => self.builtin(dot, name, span, args, last),
            Function::Native(sig, body) => {
                check_arity(span, name, &sig, given, args.len())?;
                let mut values = Vec::with_capacity(given);
                for (i, a) in args.iter().enumerate() {
                    values.push(self.typed_arg(dot, a, sig.param(i))?);
                }
                if let Some(l) = last {
                    values.push(convert(span, l, sig.param(given - 1))?);
                }
                let result = body(&values).map_err(|m| Fail {
                    span,
                    message: format!("error calling {name}: {m}"),
                    executing: None,
                })?;
                if name == "set" || name == "unset" {
                    self.write_back(args.first(), &result);
                }
                Ok(Some(result))
            }
        }
    }

    /// Go maps are references: `set $d "k" v` changes `$d`. Values here are shared copies, so
    /// the changed map is stored back into the variable (or the variable's field) it came from.
    fn write_back(&mut self, target: Option<&Arg>, result: &Value) {
        let Some(Arg::Variable(_, name, fields)) = target else {
            return;
        };
        let Some(slot) = self.vars.iter_mut().rev().find(|(n, _)| n == name) else {
            return;
        };
        fn put(v: &mut Value, path: &[String], result: &Value) {
            match path.split_first() {
                None => *v = result.clone(),
                Some((first, rest)) => {
                    if let Value::Map(m) = v {
                        if let Some(inner) = Arc::make_mut(m).get_mut(first) {
                            put(inner, rest, result);
                        }
                    }
                }
            }
        }
        if let Some(v) = &mut slot.1 {
            put(v, fields, result);
        }
    }

    /// An argument converted to the parameter's type, with Go's messages for a mismatch.
    fn typed_arg(&mut self, dot: &Val, arg: &Arg, param: Param) -> Exec<Value> {
        let span = arg.span();
        let text = || self.tmpl.src[span.start..span.end].to_string();
        match (arg, param) {
            (Arg::Number(..) | Arg::Str(..) | Arg::Bool(..), Param::Map) => {
                return fail(
                    span,
                    format!(
                        "can't handle {} for arg of type {}",
                        text(),
                        param.go_name()
                    ),
                );
            }
            (Arg::Number(..), Param::String | Param::Bool) => {
                return fail(
                    span,
                    format!("expected {}; found {}", literal_kind(param), text()),
                );
            }
            (Arg::Number(_, n), Param::Int) => {
                return match n.int {
                    Some(i) => Ok(Value::GoInt(i)),
                    None => fail(span, format!("expected integer; found {}", text())),
                }
            }
            (Arg::Str(..), Param::Int | Param::Bool) => {
                return fail(
                    span,
                    format!("expected {}; found {}", literal_kind(param), text()),
                );
            }
            (Arg::Bool(..), Param::Int | Param::String) => {
                return fail(
                    span,
                    format!("expected {}; found {}", literal_kind(param), text()),
                );
            }
            (Arg::Nil(_), Param::String | Param::Int | Param::Bool) => {
                return fail(span, format!("cannot assign nil to {}", param.go_name()));
            }
            _ => {}
        }
        let v = self.arg_value(dot, arg)?;
        convert(span, v, param)
    }

    fn builtin(
        &mut self,
        dot: &Val,
        name: &str,
        span: Span,
        args: &[Arg],
        last: Option<Val>,
    ) -> Exec<Val> {
        let given = args.len() + usize::from(last.is_some());
        if name == "and" || name == "or" {
            if given < 1 {
                return fail(
                    span,
                    format!("wrong number of args for {name}: want at least 1 got 0"),
                );
            }
            let mut v: Val = None;
            for a in args {
                v = self.arg_value(dot, a)?;
                if truth(&v) == (name == "or") {
                    return Ok(v);
                }
            }
            if let Some(l) = last {
                v = l;
            }
            return Ok(v);
        }
        let mut values: Vec<Val> = Vec::with_capacity(given);
        for (i, a) in args.iter().enumerate() {
            // printf's format is a string parameter; the rest are interface{}.
            if name == "printf" && i == 0 {
                values.push(Some(self.typed_arg(dot, a, Param::String)?));
                continue;
            }
            values.push(self.arg_value(dot, a)?);
        }
        if let Some(l) = last {
            values.push(l);
        }
        let want = |n: usize| -> Exec<()> {
            if given != n {
                return fail(
                    span,
                    format!("wrong number of args for {name}: want {n} got {given}"),
                );
            }
            Ok(())
        };
        let want_at_least = |n: usize| -> Exec<()> {
            if given < n {
                return fail(
                    span,
                    format!(
                        "wrong number of args for {name}: want at least {n} got {}",
                        args.len()
                    ),
                );
            }
            Ok(())
        };
        let calling = |m: String| Fail {
            span,
            message: format!("error calling {name}: {m}"),
            executing: None,
        };
        let anys = |values: &[Val]| -> Vec<Value> {
            values
                .iter()
                .map(|v| v.clone().unwrap_or(Value::Null))
                .collect()
        };
        match name {
            "not" => {
                want(1)?;
                Ok(Some(Value::Bool(!truth(&values[0]))))
            }
            "len" => {
                want(1)?;
                let n = match &values[0] {
                    // Go's length() calls Type() on the zero reflect.Value of a missing
                    // value, which panics; a nil interface is a nil pointer to it.
                    None => {
                        return Err(calling(
                            "reflect: call of reflect.Value.Type on zero Value".into(),
                        ))
                    }
                    Some(Value::Null) => return Err(calling("len of nil pointer".into())),
                    Some(Value::String(s)) => s.len(),
                    Some(Value::List(l)) => l.len(),
                    Some(Value::Map(m)) => m.len(),
                    Some(other) => return Err(calling(format!("len of type {}", other.go_type()))),
                };
                Ok(Some(Value::GoInt(n as i64)))
            }
            "index" => {
                want_at_least(1)?;
                index(&values[0], &values[1..]).map_err(calling)
            }
            "slice" => {
                want_at_least(1)?;
                slice(&values[0], &values[1..]).map(Some).map_err(calling)
            }
            "eq" => {
                want_at_least(1)?;
                eq(&values[0], &values[1..])
                    .map(|b| Some(Value::Bool(b)))
                    .map_err(calling)
            }
            "ne" => {
                want(2)?;
                eq(&values[0], &values[1..])
                    .map(|b| Some(Value::Bool(!b)))
                    .map_err(calling)
            }
            "lt" | "le" | "gt" | "ge" => {
                want(2)?;
                let ord = compare(&values[0], &values[1]).map_err(calling)?;
                let b = match name {
                    "lt" => ord == Ordering::Less,
                    "le" => ord != Ordering::Greater,
                    "gt" => ord == Ordering::Greater,
                    _ => ord != Ordering::Less,
                };
                Ok(Some(Value::Bool(b)))
            }
            "print" => Ok(Some(Value::String(gofmt::sprint(&anys(&values))))),
            "println" => Ok(Some(Value::String(gofmt::sprintln(&anys(&values))))),
            "printf" => {
                want_at_least(1)?;
                let format = convert(span, values[0].clone(), Param::String)?;
                let rest = anys(&values[1..]);
                Ok(Some(Value::String(gofmt::sprintf(
                    format.as_str().unwrap_or(""),
                    &rest,
                ))))
            }
            "html" | "js" | "urlquery" => {
                let text = match values.as_slice() {
                    [Some(Value::String(s))] => s.clone(),
                    vs => {
                        let printable: Vec<Value> = vs
                            .iter()
                            .map(|v| match v {
                                None | Some(Value::Null) => Value::String("<no value>".into()),
                                Some(v) => v.clone(),
                            })
                            .collect();
                        gofmt::sprint(&printable)
                    }
                };
                Ok(Some(Value::String(match name {
                    "html" => crate::escape::html(&text),
                    "js" => crate::escape::js(&text),
                    _ => crate::escape::query(&text),
                })))
            }
            "call" => {
                want_at_least(1)?;
                let what = match &values[0] {
                    None | Some(Value::Null) => "call of nil".to_string(),
                    Some(v) => format!("non-function of type {}", v.go_type()),
                };
                Err(calling(what))
            }
            _ => fail(span, format!("{name:?} is not a defined function")),
        }
    }
}

fn literal_kind(param: Param) -> &'static str {
    match param {
        Param::String => "string",
        Param::Int => "integer",
        Param::Bool => "bool",
        Param::Map => "map[string]interface {}",
        Param::Any => "interface {}",
    }
}

fn check_arity(span: Span, name: &str, sig: &Signature, given: usize, explicit: usize) -> Exec<()> {
    if sig.variadic.is_some() {
        if given < sig.fixed.len() {
            return fail(
                span,
                format!(
                    "wrong number of args for {name}: want at least {} got {explicit}",
                    sig.fixed.len()
                ),
            );
        }
    } else if given != sig.fixed.len() {
        return fail(
            span,
            format!(
                "wrong number of args for {name}: want {} got {given}",
                sig.fixed.len()
            ),
        );
    }
    Ok(())
}

/// Go's `validateType`: a value for a parameter of a given type.
fn convert(span: Span, v: Val, param: Param) -> Exec<Value> {
    let Some(v) = v else {
        return match param {
            Param::Any => Ok(Value::Null),
            Param::Map => Ok(Value::map(BTreeMap::new())),
            p => fail(span, format!("invalid value; expected {}", p.go_name())),
        };
    };
    let ok = match (&v, param) {
        (_, Param::Any) => true,
        (Value::String(_), Param::String) => true,
        (Value::GoInt(_), Param::Int) => true,
        (Value::Bool(_), Param::Bool) => true,
        (Value::Map(_), Param::Map) => true,
        (Value::Null, Param::Map) => return Ok(Value::map(BTreeMap::new())),
        _ => false,
    };
    if ok {
        return Ok(v);
    }
    let got = match v {
        Value::Null => "interface {}",
        ref other => other.go_type(),
    };
    fail(
        span,
        format!(
            "wrong type for value; expected {}; got {got}",
            param.go_name()
        ),
    )
}

fn index(item: &Val, indexes: &[Val]) -> Result<Val, String> {
    let mut cur = match item {
        None | Some(Value::Null) => return Err("index of untyped nil".into()),
        Some(v) => v.clone(),
    };
    for ix in indexes {
        cur = match &cur {
            Value::List(l) => {
                let i = list_index(ix, "index")?;
                if i < 0 || i as usize >= l.len() {
                    return Err(format!("index out of range: {i}"));
                }
                l[i as usize].clone()
            }
            Value::String(s) => {
                let i = list_index(ix, "index")?;
                if i < 0 || i as usize >= s.len() {
                    return Err(format!("index out of range: {i}"));
                }
                Value::GoInt(s.as_bytes()[i as usize] as i64)
            }
            Value::Map(m) => match ix {
                Some(Value::String(k)) => match m.get(k) {
                    Some(v) => v.clone(),
                    None => Value::Null,
                },
                None | Some(Value::Null) => {
                    return Err("value is nil; should be of type string".into())
                }
                Some(other) => {
                    return Err(format!(
                        "value has type {}; should be string",
                        other.go_type()
                    ))
                }
            },
            Value::Null => return Err("index of nil pointer".into()),
            other => return Err(format!("can't index item of type {}", other.go_type())),
        };
    }
    Ok(Some(cur))
}

fn list_index(ix: &Val, what: &str) -> Result<i64, String> {
    match ix {
        Some(Value::Int(i) | Value::GoInt(i)) => Ok(*i),
        None | Some(Value::Null) => Err(format!("cannot {what} slice/array with nil")),
        Some(other) => Err(format!(
            "cannot {what} slice/array with type {}",
            other.go_type()
        )),
    }
}

fn slice(item: &Val, indexes: &[Val]) -> Result<Value, String> {
    let item = match item {
        None | Some(Value::Null) => return Err("slice of untyped nil".into()),
        Some(v) => v,
    };
    if indexes.len() > 3 {
        return Err(format!("too many slice indexes: {}", indexes.len()));
    }
    let len = match item {
        Value::String(s) => {
            if indexes.len() == 3 {
                return Err("cannot 3-index slice a string".into());
            }
            s.len()
        }
        Value::List(l) => l.len(),
        other => return Err(format!("can't slice item of type {}", other.go_type())),
    };
    let mut ix = [0usize, len, len];
    for (i, v) in indexes.iter().enumerate() {
        let n = list_index(v, "slice")?;
        if n < 0 || n as usize > len {
            return Err(format!("index out of range: {n}"));
        }
        ix[i] = n as usize;
    }
    if ix[0] > ix[1] {
        return Err(format!("invalid slice index: {} > {}", ix[0], ix[1]));
    }
    if indexes.len() == 3 && ix[1] > ix[2] {
        return Err(format!("invalid slice index: {} > {}", ix[1], ix[2]));
    }
    Ok(match item {
        Value::String(s) => match s.get(ix[0]..ix[1]) {
            Some(sub) => Value::String(sub.to_string()),
            None => {
                Value::String(String::from_utf8_lossy(&s.as_bytes()[ix[0]..ix[1]]).into_owned())
            }
        },
        Value::List(l) => Value::list(l[ix[0]..ix[1]].to_vec()),
        _ => unreachable!("checked above"),
    })
}

#[derive(PartialEq, Clone, Copy)]
enum Kind {
    Invalid,
    Bool,
    Int,
    Float,
    String,
    Other,
}

fn kind(v: &Val) -> Kind {
    match v {
        None | Some(Value::Null) => Kind::Invalid,
        Some(Value::Bool(_)) => Kind::Bool,
        Some(Value::Int(_) | Value::GoInt(_)) => Kind::Int,
        Some(Value::Float(_)) => Kind::Float,
        Some(Value::String(_)) => Kind::String,
        Some(_) => Kind::Other,
    }
}

/// Go's `eq`: arg1 equals any of the others; basic kinds only, else an error.
fn eq(a: &Val, others: &[Val]) -> Result<bool, String> {
    if others.is_empty() {
        return Err("missing argument for comparison".into());
    }
    let k1 = kind(a);
    for b in others {
        let k2 = kind(b);
        let truth = if k1 != k2 {
            if k1 != Kind::Invalid && k2 != Kind::Invalid {
                return Err("incompatible types for comparison".into());
            }
            false
        } else {
            match (a, b) {
                (Some(Value::Bool(x)), Some(Value::Bool(y))) => x == y,
                (Some(Value::Int(x) | Value::GoInt(x)), Some(Value::Int(y) | Value::GoInt(y))) => {
                    x == y
                }
                (Some(Value::Float(x)), Some(Value::Float(y))) => x == y,
                (Some(Value::String(x)), Some(Value::String(y))) => x == y,
                (None | Some(Value::Null), None | Some(Value::Null)) => true,
                (Some(x), _) => {
                    return Err(format!(
                        "non-comparable type {}: {}",
                        gofmt::sprint_value(x),
                        x.go_type()
                    ))
                }
                _ => false,
            }
        };
        if truth {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Go's `lt` family: ordered basic kinds of the same kind.
fn compare(a: &Val, b: &Val) -> Result<Ordering, String> {
    let (k1, k2) = (kind(a), kind(b));
    if matches!(k1, Kind::Invalid | Kind::Other | Kind::Bool)
        || matches!(k2, Kind::Invalid | Kind::Other | Kind::Bool)
    {
        return Err("invalid type for comparison".into());
    }
    if k1 != k2 {
        return Err("incompatible types for comparison".into());
    }
    Ok(match (a, b) {
        (Some(Value::Int(x) | Value::GoInt(x)), Some(Value::Int(y) | Value::GoInt(y))) => x.cmp(y),
        (Some(Value::Float(x)), Some(Value::Float(y))) => {
            x.partial_cmp(y).unwrap_or(Ordering::Equal)
        }
        (Some(Value::String(x)), Some(Value::String(y))) => x.cmp(y),
        _ => Ordering::Equal,
    })
}
