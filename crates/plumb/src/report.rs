//! How the binary reports errors to a person: one `error:` line on stderr.

pub fn error(msg: &str) {
    eprintln!("error: {msg}");
}
