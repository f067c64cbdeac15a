//! Lock files: dependencies resolved once and committed, not at every run.

pub mod missing_lock_file;
