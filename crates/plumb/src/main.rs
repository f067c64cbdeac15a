//! plumb: the command-line binary. Argument parsing and output only; every behaviour lives in a
//! library crate where a test can reach it.

mod cmd;
mod report;

/// jemalloc rather than glibc's malloc: a build allocates and frees many small nodes and strings
/// across threads. Measured on generated-1000 (scripts/bench-repo's generator): 22% less CPU
/// and 130 MB peak RSS against 143 MB; mimalloc was as fast but peaked at 160 MB.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read before `main`: one arena per CPU (a build runs one thread per CPU)
/// instead of four. Measured with scripts/bench-repo, where each run follows a run of the Go
/// reference: haraldkoch/kochhaus-home 0.086 s against 0.094 s with jemalloc's defaults,
/// generated-1000 0.261 s against 0.265 s and 130 MB against 132 MB at peak. Transparent huge
/// pages (`thp:always`) cut a lone run's page faults by two thirds, but after another process
/// had used and freed much memory they made the same runs slower (0.096 s and 0.342 s), so
/// they are not asked for. `_RJEM_MALLOC_CONF` in the environment still overrides this.
#[cfg(not(target_env = "msvc"))]
#[export_name = "_rjem_malloc_conf"]
pub static MALLOC_CONF: Option<&'static u8> = Some(&b"percpu_arena:percpu\0"[0]);

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "plumb",
    version,
    about = "Build, check and verify Flux GitOps repositories, exactly as the cluster will",
    propagate_version = true
)]
pub struct Cli {
    /// Run as if plumb was started in DIR.
    #[arg(short = 'C', global = true, value_name = "DIR")]
    pub chdir: Option<PathBuf>,
    /// When to use colours.
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto)]
    pub color: Color,
    /// Print only errors on stderr: no notes, warnings, summary or progress.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Print more on stderr; repeatable: `-v` what was built and assumed (per Kustomization:
    /// path, source, objects, time), `-vv` also the time of each stage.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

impl Color {
    /// Whether to colour what goes to stdout: `auto` is a terminal without `NO_COLOR`.
    pub fn for_stdout(self) -> bool {
        match self {
            Color::Always => true,
            Color::Never => false,
            Color::Auto => {
                use std::io::IsTerminal;
                std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
            }
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Build every Flux Kustomization reachable from the entry paths, as the cluster will.
    Build(cmd::build::BuildArgs),
    /// Build, then run the rules: compiler-style findings for the mistakes that cost days.
    Check(cmd::check::CheckArgs),
    /// What a change does to the clusters: both revisions built, paired object by object.
    Diff(cmd::diff::DiffArgs),
    /// What a rule checks, why, an example and the fix.
    Explain(cmd::explain::ExplainArgs),
    /// The reconciliation graph: sources, Kustomizations, HelmReleases, dependsOn and waves.
    Graph(cmd::graph::GraphArgs),
    /// The catalog rendered into dependency-ordered waves; `--check`: render == golden.
    Render(cmd::render::RenderArgs),
    /// The live cluster measured against the repository, read-only: each check with its evidence.
    Verify(cmd::verify::VerifyArgs),
    /// The cache of fetched sources: list it, remove what no build used lately, or clear it.
    Cache(cmd::cache::CacheArgs),
    /// kustomize-compatible commands.
    #[command(subcommand)]
    Kustomize(cmd::kustomize::KustomizeCommand),
    /// The locked, versioned, encrypted state store, and its backend probe.
    State(cmd::state::StateArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell to generate completions for.
        shell: clap_complete::Shell,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    if let Some(dir) = &cli.chdir {
        if let Err(e) = std::env::set_current_dir(dir) {
            report::error(&format!(
                "cannot change to directory {}: {e}",
                dir.display()
            ));
            return ExitCode::from(2);
        }
    }
    let result = std::panic::catch_unwind(|| run(cli));
    match result {
        Ok(code) => code,
        Err(_) => {
            report::error(
                "internal error: plumb hit a bug; please report it with the input that caused it",
            );
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> ExitCode {
    let verbosity = report::Verbosity {
        quiet: cli.quiet,
        verbose: cli.verbose,
    };
    report::start(verbosity);
    match cli.command {
        Command::Build(args) => cmd::build::run(args, verbosity),
        Command::Check(args) => cmd::check::run(args, cli.color, verbosity),
        Command::Diff(args) => cmd::diff::run(args, cli.color, verbosity),
        Command::Explain(args) => cmd::explain::run(args),
        Command::Graph(args) => cmd::graph::run(args, verbosity),
        Command::Kustomize(c) => cmd::kustomize::run(c),
        Command::State(args) => cmd::state::run(args),
        Command::Render(args) => cmd::render::run(args, verbosity),
        Command::Verify(args) => cmd::verify::run(args, cli.color, verbosity),
        Command::Cache(args) => cmd::cache::run(args),
        Command::Completions { shell } => {
            let mut cmd = Cli::command();
            clap_complete::generate(shell, &mut cmd, "plumb", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::{ArgAction, CommandFactory};

    /// Every argument of `command` and its subcommands without a description, or repeatable
    /// without saying so, as `plumb build --entry: ...`.
    fn undocumented(command: &clap::Command, path: &str, problems: &mut Vec<String>) {
        if command.get_about().is_none() && path != "plumb" {
            problems.push(format!("{path}: no description"));
        }
        for arg in command.get_arguments() {
            let id = arg.get_id().as_str();
            if arg.is_hide_set() || matches!(id, "help" | "version") {
                continue;
            }
            let name = match (arg.get_long(), arg.get_short()) {
                (Some(long), _) => format!("--{long}"),
                (None, Some(short)) => format!("-{short}"),
                (None, None) => id.to_uppercase(),
            };
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            if help.trim().is_empty() {
                problems.push(format!("{path} {name}: no help text"));
            }
            let repeatable = matches!(arg.get_action(), ArgAction::Append | ArgAction::Count)
                || arg
                    .get_num_args()
                    .is_some_and(|range| range.max_values() > 1);
            if repeatable && !help.contains("repeatable") {
                problems.push(format!(
                    "{path} {name}: repeatable, and its help does not say so"
                ));
            }
        }
        for sub in command.get_subcommands() {
            undocumented(sub, &format!("{path} {}", sub.get_name()), problems);
        }
    }

    #[test]
    fn every_flag_of_every_subcommand_has_help_and_repeatable_ones_say_so() {
        let mut command = Cli::command();
        command.build();
        let mut problems = Vec::new();
        undocumented(&command, "plumb", &mut problems);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    /// `state get` and `history` only read versions: a recipient would be accepted and ignored.
    /// Only the commands that write versions take one: `put`, and `serve` for what the backend
    /// posts.
    #[test]
    fn only_state_writers_take_recipients() {
        let command = Cli::command();
        let state = command.find_subcommand("state").expect("plumb state");
        let with_recipient: Vec<&str> = state
            .get_subcommands()
            .filter(|c| c.get_arguments().any(|a| a.get_long() == Some("recipient")))
            .map(clap::Command::get_name)
            .collect();
        assert_eq!(with_recipient, ["put", "serve"]);
    }
}
