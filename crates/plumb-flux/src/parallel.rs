//! Work over the objects of one build, in parallel when there are enough of them: a large
//! build (a root Kustomization listing every app of a cluster) is often the only one of its
//! wave, and the other threads would wait for it. Results keep the objects' order.

use rayon::prelude::*;

/// Fewer items than this are done on the calling thread: handing a few to other threads costs
/// more than it saves.
const MIN_PARALLEL: usize = 32;

/// `f` of each item, in order.
pub(crate) fn map_vec<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
    if items.len() < MIN_PARALLEL {
        return items.into_iter().map(f).collect();
    }
    items
        .into_par_iter()
        .with_min_len(MIN_PARALLEL / 2)
        .map(f)
        .collect()
}

/// `f` of each item, in order.
pub(crate) fn map_slice<T: Sync, R: Send>(
    items: &[T],
    f: impl Fn(&T) -> R + Sync + Send,
) -> Vec<R> {
    if items.len() < MIN_PARALLEL {
        return items.iter().map(f).collect();
    }
    items
        .par_iter()
        .with_min_len(MIN_PARALLEL / 2)
        .map(f)
        .collect()
}

/// `f` of each item, which it may change, in order.
pub(crate) fn map_slice_mut<T: Send, R: Send>(
    items: &mut [T],
    f: impl Fn(&mut T) -> R + Sync + Send,
) -> Vec<R> {
    if items.len() < MIN_PARALLEL {
        return items.iter_mut().map(f).collect();
    }
    items
        .par_iter_mut()
        .with_min_len(MIN_PARALLEL / 2)
        .map(f)
        .collect()
}
