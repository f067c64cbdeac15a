//! Links the plumb binary as a position-dependent executable.
//!
//! A position-independent one (the default) has tens of thousands of relocations that the
//! dynamic loader applies at every start, touching the pages that hold them, before `main`:
//! a real cost for a command run once per build in CI and in pre-commit hooks. Only the
//! binary is linked so; tests and libraries are as before.
fn main() {
    println!("cargo::rustc-link-arg-bins=-no-pie");
}
