//! (module values: being written)
