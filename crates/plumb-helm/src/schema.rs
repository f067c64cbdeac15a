//! (module schema: being written)
