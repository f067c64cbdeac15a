//! `plumb cache ls|gc|clear`: the cache of fetched sources (`--cache-dir`, else
//! `PLUMB_CACHE_DIR`, else the user's cache directory).

use clap::{Args, Subcommand, ValueEnum};
use plumb_source::{Cache, Entry};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

#[derive(Args, Debug)]
pub struct CacheArgs {
    #[command(subcommand)]
    pub command: CacheCommand,
    /// The cache directory (default: `PLUMB_CACHE_DIR`, else `~/.cache/plumb`).
    #[arg(long, value_name = "DIR", global = true)]
    pub cache_dir: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
pub enum CacheCommand {
    /// List every cached revision: kind, URL, revision, size, when a build last used it.
    Ls {
        /// Output format.
        #[arg(short = 'o', long = "output", value_enum, default_value_t = ListOutput::Text)]
        output: ListOutput,
    },
    /// Remove the revisions no build used for a while, and leftovers of interrupted fetches.
    Gc {
        /// Remove what was last used longer ago than this (`30d`, `12h`, `45m`, `0s`).
        #[arg(long, value_name = "AGE", default_value = "30d", value_parser = parse_age)]
        older_than: Duration,
    },
    /// Remove everything the cache holds.
    Clear,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ListOutput {
    Text,
    Json,
}

pub fn run(args: CacheArgs) -> ExitCode {
    let cache = match &args.cache_dir {
        Some(dir) => Cache::new(dir),
        None => match Cache::from_env() {
            Some(cache) => cache,
            None => {
                crate::report::error(
                    "no cache directory: set PLUMB_CACHE_DIR or HOME, or pass --cache-dir DIR",
                );
                return ExitCode::from(2);
            }
        },
    };
    let dir = cache.dir().display().to_string();
    let result = match args.command {
        CacheCommand::Ls { output } => cache.entries().map(|entries| list(&entries, output, &dir)),
        CacheCommand::Gc { older_than } => cache
            .gc(older_than, SystemTime::now())
            .map(|removed| report("removed", &removed, &dir)),
        CacheCommand::Clear => cache
            .clear()
            .map(|removed| report("cleared", &removed, &dir)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            crate::report::error(&format!("cache directory {dir}: {e}"));
            ExitCode::from(1)
        }
    }
}

fn list(entries: &[Entry], output: ListOutput, dir: &str) {
    let now = SystemTime::now();
    match output {
        ListOutput::Json => {
            let items: Vec<_> = entries
                .iter()
                .map(|e| {
                    json!({
                        "kind": e.kind,
                        "url": e.url,
                        "revision": e.revision,
                        "path": e.dir,
                        "bytes": e.bytes,
                        "used_seconds_ago": e.used.and_then(|t| now.duration_since(t).ok()).map(|d| d.as_secs()),
                    })
                })
                .collect();
            let doc = json!({"schema": "plumb.cache/v1", "dir": dir, "entries": items});
            println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        }
        ListOutput::Text => {
            if entries.is_empty() {
                println!("The cache at {dir} is empty.");
                return;
            }
            println!(
                "{:<7} {:<60} {:<44} {:>9} {:>9}",
                "KIND", "URL", "REVISION", "SIZE", "USED"
            );
            for e in entries {
                let used = e
                    .used
                    .and_then(|t| now.duration_since(t).ok())
                    .map(|d| format!("{} ago", age(d)))
                    .unwrap_or_else(|| "?".into());
                println!(
                    "{:<7} {:<60} {:<44} {:>9} {:>9}",
                    e.kind,
                    e.url.as_deref().unwrap_or("?"),
                    e.revision,
                    bytes(e.bytes),
                    used
                );
            }
            let total: u64 = entries.iter().map(|e| e.bytes).sum();
            println!("{} revisions, {} in {dir}", entries.len(), bytes(total));
        }
    }
}

fn report(verb: &str, removed: &plumb_source::Removed, dir: &str) {
    for e in &removed.entries {
        println!(
            "{verb} {} {} {}",
            e.kind,
            e.url.as_deref().unwrap_or("?"),
            e.revision
        );
    }
    let staging = match removed.staging {
        0 => String::new(),
        n => format!(" and {n} leftovers of interrupted fetches"),
    };
    println!(
        "{verb} {} revisions ({}){staging} in {dir}",
        removed.entries.len(),
        bytes(removed.bytes())
    );
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

fn age(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=119 => format!("{s}s"),
        120..=7199 => format!("{}m", s / 60),
        7200..=172_799 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

/// `30d`, `12h`, `45m`, `90s`: a number and a unit.
fn parse_age(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("{text:?}: give a unit, as in 30d, 12h, 45m or 90s"))?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?}: expected a number then d, h, m or s"))?;
    let seconds = match unit {
        "d" => 86400,
        "h" => 3600,
        "m" => 60,
        "s" => 1,
        _ => return Err(format!("{text:?}: the unit is d, h, m or s")),
    };
    n.checked_mul(seconds)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{text:?} is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_parse_with_their_unit() {
        assert_eq!(parse_age("30d"), Ok(Duration::from_secs(30 * 86400)));
        assert_eq!(parse_age("0s"), Ok(Duration::ZERO));
        assert!(parse_age("30").unwrap_err().contains("give a unit"));
        assert!(parse_age("3w").unwrap_err().contains("the unit is"));
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(age(Duration::from_secs(3 * 86400)), "3d");
    }
}
