//! Determinism: what the build renders is the same at every run with the same inputs, so the
//! controllers that render it converge.

pub mod nondeterministic_render;
