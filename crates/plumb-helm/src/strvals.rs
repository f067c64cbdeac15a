//! (module strvals: being written)
