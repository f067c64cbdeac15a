//! How long the parts of a build took: what `plumb build -v` prints per Kustomization and
//! `-vv` per stage. Measured with a monotonic clock around each part; no effect on the build.

use std::time::Instant;

/// The time one entry (cluster) spent in each stage, in seconds. Fetching sources happens inside
/// the Kustomization builds that need them, so it is part of `kustomize`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stages {
    /// Every Kustomization of the entry built: sources resolved or fetched, kustomize, postBuild.
    pub kustomize: f64,
    /// Every HelmRelease of the entry rendered.
    pub helm: f64,
}

/// `work`'s result and how long it took, in seconds.
pub(crate) fn timed<T>(work: impl FnOnce() -> T) -> (T, f64) {
    let started = Instant::now();
    let result = work();
    (result, started.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::timed;

    #[test]
    fn timed_returns_the_result_and_a_duration_at_least_as_long_as_the_work() {
        let (value, seconds) = timed(|| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            7
        });
        assert_eq!(value, 7);
        assert!((0.02..5.0).contains(&seconds), "{seconds}");
    }
}
