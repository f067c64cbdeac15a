//! `plumb kustomize build`: a drop-in for `kustomize build`.

use clap::Subcommand;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum KustomizeCommand {
    /// Build a kustomization directory and print the resources, byte-identical to kustomize.
    Build {
        /// The directory holding kustomization.yaml.
        #[arg(default_value = ".")]
        dir: std::path::PathBuf,
    },
}

pub fn run(cmd: KustomizeCommand) -> ExitCode {
    match cmd {
        KustomizeCommand::Build { dir } => {
            crate::report::error(&format!("{}: not built yet", dir.display()));
            ExitCode::from(2)
        }
    }
}
