//! The floor of a build: every YAML file of a tree parsed and written back with plumb-yaml's
//! parser and writer (the ones `plumb build` uses), one file after another, nothing else.
//!
//! `cargo run --release -p plumb-yaml --example parse_write -- TREE [ROUNDS]` prints
//! `files N documents D bytes B seconds S` for the fastest of ROUNDS passes (default 5); files
//! that do not parse (templates, encrypted files) are counted apart and not timed.
//! scripts/bench-repo compares `plumb build` against it.

#[path = "../tests/support/mod.rs"]
mod support;

/// The allocator the plumb binary uses: a floor measured with another (glibc's malloc, a
/// quarter of this program's time) would be a slower floor than plumb's own parse and write.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::yaml_files;

/// Parses and writes one file; `None` when it is not YAML plumb-yaml reads.
fn parse_write(path: &Path, text: &str) -> Option<(usize, usize)> {
    let docs = plumb_yaml::parse_documents(path, text).ok()?;
    let values = docs
        .iter()
        .map(plumb_yaml::to_json)
        .collect::<Result<Vec<_>, _>>()
        .ok()?;
    Some((values.len(), plumb_yaml::write_stream(&values).len()))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(tree) = args.next() else {
        eprintln!("usage: parse_write TREE [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(5);
    let mut paths = Vec::new();
    yaml_files(Path::new(&tree), &mut paths);
    let texts: Vec<(PathBuf, String)> = paths
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(&p).ok().map(|t| (p, t)))
        .collect();
    let readable: Vec<&(PathBuf, String)> = texts
        .iter()
        .filter(|(p, t)| parse_write(p, t).is_some())
        .collect();
    let mut best = Duration::MAX;
    let (mut documents, mut bytes) = (0, 0);
    for _ in 0..rounds.max(1) {
        let start = Instant::now();
        (documents, bytes) = (0, 0);
        for (path, text) in &readable {
            if let Some((d, b)) = parse_write(path, text) {
                documents += d;
                bytes += b;
            }
        }
        best = best.min(start.elapsed());
    }
    println!(
        "files {} unreadable {} documents {documents} bytes {bytes} seconds {:.4}",
        readable.len(),
        texts.len() - readable.len(),
        best.as_secs_f64()
    );
}
