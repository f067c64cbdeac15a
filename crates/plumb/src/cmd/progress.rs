//! A spinner on stderr while sources are fetched, when stderr is a terminal and `-q` is not
//! given; nothing at all when stderr is piped, so logs and CI output stay clean.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

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
}

impl FetchProgress {
    /// A spinner when stderr is a terminal and `show` holds; otherwise one that draws nothing.
    pub fn new(show: bool) -> FetchProgress {
        let bar = (show && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar
        });
        FetchProgress {
            bar,
            state: Mutex::new(State::default()),
        }
    }

    /// Shows `what` until the returned guard is dropped.
    pub fn start(&self, what: String) -> Fetching<'_> {
        self.update(|s| s.active.push(what.clone()));
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
