//! Spinners on stderr while long work runs (sources fetched, a repository built and its
//! HelmReleases rendered), when stderr is a terminal and `-q` is not given; nothing at all when
//! stderr is piped, so logs and CI output stay clean. Also counts the fetches and their time,
//! for `-vv`.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Sources fetched in this run, and the time during which at least one fetch was under way.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fetched {
    pub count: usize,
    pub seconds: f64,
}

static FETCH_COUNT: AtomicUsize = AtomicUsize::new(0);
static FETCH_MICROS: AtomicU64 = AtomicU64::new(0);

/// What was fetched so far in this run.
pub fn fetched() -> Fetched {
    Fetched {
        count: FETCH_COUNT.load(Ordering::Relaxed),
        seconds: FETCH_MICROS.load(Ordering::Relaxed) as f64 / 1e6,
    }
}

/// Whether to draw at all: stderr is a terminal and `-q` was not given.
fn drawing() -> bool {
    !crate::report::quiet() && std::io::stderr().is_terminal()
}

/// The one display every spinner of the run is drawn in, so two never overwrite each other.
fn display() -> &'static MultiProgress {
    static DISPLAY: OnceLock<MultiProgress> = OnceLock::new();
    DISPLAY.get_or_init(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
}

fn spinner(template: &str) -> ProgressBar {
    let bar = display().add(ProgressBar::new_spinner());
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar
}

/// A spinner saying what long work is running and for how long, until dropped.
#[derive(Debug)]
pub struct Working {
    bar: Option<ProgressBar>,
}

impl Working {
    /// Shows `what` (`building examples/homelab`) with the time since it started.
    pub fn new(what: String) -> Working {
        let bar = drawing().then(|| {
            let bar = spinner("{spinner} {msg} ({elapsed})");
            bar.set_message(what);
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Working { bar }
    }
}

impl Drop for Working {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// What is being fetched right now, shown as one line.
#[derive(Debug)]
pub struct FetchProgress {
    bar: Option<ProgressBar>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    active: Vec<String>,
    done: usize,
    /// Since when at least one fetch is under way.
    busy_since: Option<Instant>,
}

impl FetchProgress {
    /// A spinner when stderr is a terminal and `show` holds; otherwise one that draws nothing.
    pub fn new(show: bool) -> FetchProgress {
        let bar = (show && drawing()).then(|| spinner("{spinner} {msg}"));
        FetchProgress {
            bar,
            state: Mutex::new(State::default()),
        }
    }

    /// Shows `what` until the returned guard is dropped.
    pub fn start(&self, what: String) -> Fetching<'_> {
        self.update(|s| {
            if s.active.is_empty() {
                s.busy_since = Some(Instant::now());
            }
            s.active.push(what.clone());
        });
        if let Some(bar) = &self.bar {
            if bar.is_finished() {
                bar.reset();
            }
            bar.enable_steady_tick(Duration::from_millis(120));
        }
        Fetching {
            progress: self,
            what,
        }
    }

    fn update(&self, change: impl FnOnce(&mut State)) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        change(&mut state);
        let Some(bar) = &self.bar else {
            return;
        };
        match state.active.first() {
            Some(first) => {
                let more = match state.active.len() {
                    1 => String::new(),
                    n => format!(" and {} more", n - 1),
                };
                bar.set_message(format!("fetching {first}{more} ({} done)", state.done));
            }
            None => bar.finish_and_clear(),
        }
    }
}

/// One fetch in progress.
pub struct Fetching<'a> {
    progress: &'a FetchProgress,
    what: String,
}

impl Drop for Fetching<'_> {
    fn drop(&mut self) {
        let what = std::mem::take(&mut self.what);
        self.progress.update(|s| {
            if let Some(i) = s.active.iter().position(|a| *a == what) {
                s.active.remove(i);
            }
            s.done += 1;
            FETCH_COUNT.fetch_add(1, Ordering::Relaxed);
            if s.active.is_empty() {
                if let Some(since) = s.busy_since.take() {
                    let micros = u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX);
                    FETCH_MICROS.fetch_add(micros, Ordering::Relaxed);
                }
            }
        });
    }
}

impl Drop for FetchProgress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
