//! `plumb explain CODE`: what a rule checks, why, an example and the fix (the rule's doc
//! comment), or what a `plumb diff` danger note means. `plumb explain --list`: every code with
//! its one-line summary.

use clap::Args;
use std::process::ExitCode;

#[derive(Args, Debug)]
#[command(arg_required_else_help = true)]
pub struct ExplainArgs {
    /// The rule's code (`SUB001`) or a danger note's (`DIF001`).
    #[arg(required_unless_present = "list", conflicts_with = "list")]
    pub code: Option<String>,
    /// List every rule's code and summary.
    #[arg(long)]
    pub list: bool,
}

pub fn run(args: ExplainArgs) -> ExitCode {
    if args.list {
        let mut out = String::new();
        for doc in plumb_check::explain::rule_docs() {
            out.push_str(&format!("{}  {}\n", doc.code, doc.summary));
        }
        for doc in plumb_diff::danger::DOCS {
            out.push_str(&format!("{}  {} (plumb diff)\n", doc.code, doc.summary));
        }
        print!("{out}");
        return ExitCode::SUCCESS;
    }
    let code = args.code.unwrap_or_default();
    if let Some(doc) = plumb_check::explain::rule_doc(&code) {
        print!("{}", plumb_check::explain::explain(&doc));
        return ExitCode::SUCCESS;
    }
    if let Some(doc) = plumb_diff::danger::doc(&code) {
        print!(
            "{} ({}): {} (a plumb diff danger note)\n\n{}",
            doc.code, doc.name, doc.summary, doc.doc
        );
        return ExitCode::SUCCESS;
    }
    let codes: Vec<&str> = plumb_check::explain::rule_docs()
        .iter()
        .map(|d| d.code)
        .chain(plumb_diff::danger::DOCS.iter().map(|d| d.code))
        .collect();
    let hint = plumb_kustomize::kustomization::closest(&code, &codes)
        .map(|c| format!("; did you mean `{c}`?"))
        .unwrap_or_else(|| "; `plumb explain --list` lists every code".into());
    crate::report::error(&format!("no rule has the code `{code}`{hint}"));
    ExitCode::from(2)
}
