use super::{cluster_vars, entry_chain, glob_match};
use crate::config::Invariant;
use crate::finding::{Finding, Location, Severity};
use crate::rule::{CheckContext, Rule};
use crate::rules::sub::scope;
use cel::{Context, ExecutionError, Program, Value};
use regex::Regex;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

/// ## What it does
/// Evaluates the `invariants` of `.plumb.yaml`, named CEL expressions over a cluster's
/// variables, for every cluster (entry path) they apply to, and reports each one that is false.
/// `vars` is a map of the cluster's substitution variables (strings): those of the `substituteFrom`
/// ConfigMaps and Secrets and `substitute` of its top Kustomizations, merged.
///
/// Besides standard CEL (`int()`, `size()`, `startsWith()`, `matches()`, ...), two functions read
/// addresses:
///
/// - `ip(s)`: an IPv4 address as an `int`, so that addresses compare (`<`, `<=`, `==`) and
///   subtract; an IPv6 address or anything else is an evaluation error;
/// - `cidrContains(cidr, s)`: whether address `s` is in the CIDR block, IPv4 or IPv6.
///
/// The finding points at the definition of the first variable of the expression that the
/// cluster's own overlay sets (else of the first variable), with the other variables and the
/// invariant as related locations. An expression that cannot be evaluated (an undefined
/// variable, an address that does not parse) is a warning, unless one of its variables holds a
/// placeholder, which SUB002 reports.
///
/// ## Why is this bad?
/// Values that must agree with each other live in one flat list of variables per cluster, and
/// nothing in Kubernetes checks that they agree. A gateway address outside the load-balancer
/// pool is applied without error and never answers; the mistake shows up as an outage.
///
/// ## Example
/// ```yaml
/// # .plumb.yaml
/// invariants:
///   - name: gateway-vip-in-lb-pool
///     expr: ip(vars.GATEWAY_VIP) >= ip(vars.CILIUM_LB_POOL_START) && ip(vars.GATEWAY_VIP) <= ip(vars.CILIUM_LB_POOL_STOP)
/// ---
/// # clusters/dev/cluster-vars.yaml
/// data:
///   CILIUM_LB_POOL_START: 192.168.10.200
///   CILIUM_LB_POOL_STOP: 192.168.10.239
///   GATEWAY_VIP: 192.168.20.5
/// ```
///
/// Use instead:
/// ```yaml
/// data:
///   CILIUM_LB_POOL_START: 192.168.10.200
///   CILIUM_LB_POOL_STOP: 192.168.10.239
///   GATEWAY_VIP: 192.168.10.200
/// ```
pub struct InvariantViolated;

impl Rule for InvariantViolated {
    fn code(&self) -> &'static str {
        "ENV002"
    }

    fn summary(&self) -> &'static str {
        "an invariant over vars (a CEL expression in `.plumb.yaml`) is false"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        if cx.config.invariants.is_empty() {
            return;
        }
        let placeholders: Vec<&str> = cx.config.placeholders.iter().map(String::as_str).collect();
        for invariant in &cx.config.invariants {
            let declared = invariant_location(cx, invariant);
            let program = match Program::compile(&invariant.expr) {
                Ok(p) => p,
                Err(e) => {
                    out.push(
                        Finding::new(
                            "ENV002",
                            format!("invariant `{}` is not valid CEL: {e}", invariant.name),
                            "fix the expression in .plumb.yaml",
                        )
                        .at(declared),
                    );
                    continue;
                }
            };
            let names = referenced_vars(&invariant.expr);
            for entry in &cx.build.entries {
                if !invariant.clusters.is_empty()
                    && !invariant.clusters.iter().any(|c| {
                        glob_match(
                            c.trim_start_matches("./").trim_end_matches('/'),
                            &entry.entry,
                        )
                    })
                {
                    continue;
                }
                let vars = cluster_vars(entry);
                let values: HashMap<String, String> = vars
                    .iter()
                    .map(|(k, d)| (k.clone(), d.value.clone()))
                    .collect();
                let outcome = evaluate(&program, values);
                let (message, severity) = match outcome {
                    Ok(true) => continue,
                    Ok(false) => (
                        format!(
                            "invariant `{}` is false for cluster {}: {}",
                            invariant.name,
                            entry.entry,
                            shown(&names, &vars)
                        ),
                        Severity::Error,
                    ),
                    Err(reason) => {
                        let holds_placeholder = names.iter().any(|n| {
                            vars.get(n).is_some_and(|d| {
                                placeholders.iter().any(|p| super::glob_match(p, &d.value))
                            })
                        });
                        if holds_placeholder {
                            continue;
                        }
                        (
                            format!(
                                "invariant `{}` cannot be evaluated for cluster {}: {reason}",
                                invariant.name, entry.entry
                            ),
                            Severity::Warning,
                        )
                    }
                };
                // The variable this cluster sets itself is the likeliest to be wrong.
                let defined: Vec<(&String, Option<Location>, bool)> = names
                    .iter()
                    .filter_map(|n| {
                        let node = vars.get(n)?.node.as_ref()?;
                        let own = node
                            .span
                            .as_ref()
                            .is_some_and(|s| scope::file_in_dir(cx, s.file.path(), &entry.entry));
                        Some((n, scope::location_of(cx, node), own))
                    })
                    .collect();
                let primary = defined
                    .iter()
                    .position(|(_, _, own)| *own)
                    .or(if defined.is_empty() { None } else { Some(0) });
                let mut finding = Finding::new(
                    "ENV002",
                    message,
                    format!(
                        "change the variables of cluster {} so that `{}` holds",
                        entry.entry, invariant.expr
                    ),
                )
                .severity(severity)
                .at(primary
                    .and_then(|i| defined[i].1.clone())
                    .or_else(|| declared.clone()))
                .with_chain(&entry_chain(entry));
                for (i, (name, location, _)) in defined.iter().enumerate() {
                    if Some(i) != primary {
                        finding =
                            finding.related(location.clone(), format!("`{name}` is defined here"));
                    }
                }
                finding =
                    finding.related(declared.clone(), format!("invariant `{}`", invariant.name));
                out.push(finding);
            }
        }
    }
}

/// The variables an expression reads: `vars.NAME` and `vars["NAME"]`, in order, once each.
fn referenced_vars(expr: &str) -> Vec<String> {
    let Ok(re) = Regex::new(r#"\bvars(?:\.([A-Za-z_][A-Za-z0-9_]*)|\[\s*["']([^"']+)["']\s*\])"#)
    else {
        return Vec::new();
    };
    let mut names: Vec<String> = Vec::new();
    for c in re.captures_iter(expr) {
        if let Some(m) = c.get(1).or_else(|| c.get(2)) {
            if !names.iter().any(|n| n == m.as_str()) {
                names.push(m.as_str().to_string());
            }
        }
    }
    names
}

/// `NAME=value` for each variable of the expression.
fn shown(names: &[String], vars: &std::collections::BTreeMap<String, scope::Definition>) -> String {
    names
        .iter()
        .map(|n| match vars.get(n) {
            Some(d) => format!("{n}={}", d.value),
            None => format!("{n} undefined"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs the program with `vars` bound and `ip()`/`cidrContains()` registered.
fn evaluate(program: &Program, vars: HashMap<String, String>) -> Result<bool, String> {
    let mut context = Context::default();
    context.add_variable_from_value("vars", vars);
    context.add_function("ip", ip).map_err(|e| e.to_string())?;
    context
        .add_function("cidrContains", cidr_contains)
        .map_err(|e| e.to_string())?;
    match program.execute(&context) {
        Ok(Value::Bool(b)) => Ok(b),
        Ok(other) => Err(format!("the expression gives {other:?}, not a bool")),
        Err(e) => Err(e.to_string()),
    }
}

/// `ip(s)`: an IPv4 address as an int.
fn ip(s: Arc<String>) -> Result<i64, ExecutionError> {
    match s.trim().parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => Ok(i64::from(u32::from(v4))),
        Ok(IpAddr::V6(_)) => Err(ExecutionError::function_error(
            "ip",
            format!("`{s}` is an IPv6 address: ip() compares IPv4 only; use cidrContains()"),
        )),
        Err(_) => Err(ExecutionError::function_error(
            "ip",
            format!("`{s}` is not an IP address"),
        )),
    }
}

/// `cidrContains(cidr, s)`: whether address `s` is inside the block.
fn cidr_contains(cidr: Arc<String>, s: Arc<String>) -> Result<bool, ExecutionError> {
    let fail = |m: String| ExecutionError::function_error("cidrContains", m);
    let (net, bits) = cidr
        .trim()
        .split_once('/')
        .ok_or_else(|| fail(format!("`{cidr}` is not a CIDR block")))?;
    let net: IpAddr = net
        .parse()
        .map_err(|_| fail(format!("`{cidr}` is not a CIDR block")))?;
    let bits: u32 = bits
        .parse()
        .map_err(|_| fail(format!("`{cidr}` is not a CIDR block")))?;
    let addr: IpAddr = s
        .trim()
        .parse()
        .map_err(|_| fail(format!("`{s}` is not an IP address")))?;
    let (net, addr, width) = match (net, addr) {
        (IpAddr::V4(n), IpAddr::V4(a)) => (u128::from(u32::from(n)), u128::from(u32::from(a)), 32),
        (IpAddr::V6(n), IpAddr::V6(a)) => (u128::from(n), u128::from(a), 128),
        _ => return Ok(false),
    };
    if bits > width {
        return Err(fail(format!(
            "`{cidr}` has a prefix longer than the address"
        )));
    }
    let shift = width - bits;
    Ok(shift >= 128 || (net >> shift) == (addr >> shift))
}

/// Where the invariant is written in `.plumb.yaml`: its expression, else its name.
fn invariant_location(cx: &CheckContext<'_>, invariant: &Invariant) -> Option<Location> {
    let path = cx.build.root.join(plumb_flux::config::FILE_NAME);
    let text = std::fs::read_to_string(&path).ok()?;
    let file = plumb_yaml::SourceFile::new(&path, text);
    [invariant.expr.as_str(), invariant.name.as_str()]
        .iter()
        .filter(|needle| !needle.is_empty())
        .find_map(|needle| {
            let start = file.text().find(needle)?;
            Some(scope::location_in(cx, &file, start, start + needle.len()))
        })
}
