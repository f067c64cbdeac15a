//! Substitution rules (SUB): what Flux's `postBuild` does to the text of the manifests, checked
//! against the variables each Kustomization really receives.

pub mod missing_substitute_source;
pub mod placeholder_value;
pub(crate) mod scope;
pub mod shell_syntax;
pub mod unresolved_variable;

pub use missing_substitute_source::MissingSubstituteSource;
pub use placeholder_value::PlaceholderValue;
pub use shell_syntax::ShellSyntax;
pub use unresolved_variable::UnresolvedVariable;
