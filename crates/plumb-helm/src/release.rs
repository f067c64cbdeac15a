//! (module release: being written)
