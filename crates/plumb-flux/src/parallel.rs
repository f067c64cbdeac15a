//! Work over the objects of one build, in parallel when there are enough of them: a large
//! build (a root Kustomization listing every app of a cluster) is often the only one of its
//! wave, and the other threads would wait for it. Results keep the objects' order.

use rayon::prelude::*;

/// Fewer items than this are done on the calling thread: handing a few to other threads costs
/// more than it saves.
const MIN_PARALLEL: usize = 32;

/// `f` of each item, in order. Items may be references (`objects.iter().collect()`, or
/// `iter_mut` for work that changes them).
pub(crate) fn map<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
    if items.len() < MIN_PARALLEL {
        return items.into_iter().map(f).collect();
    }
    items
        .into_par_iter()
        .with_min_len(MIN_PARALLEL / 2)
        .map(f)
        .collect()
}
