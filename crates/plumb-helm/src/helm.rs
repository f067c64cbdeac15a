//! (module helm: being written)
