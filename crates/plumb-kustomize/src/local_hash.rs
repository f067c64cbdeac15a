//! A hash for maps keyed by local, trusted text (paths of the repository, apiVersions and kinds
//! of the compiled-in schema and of the repository's CRDs): nothing needs SipHash's resistance to
//! chosen collisions, and SipHash over short keys was a visible share of a build.

use std::hash::{BuildHasherDefault, Hasher};

/// A multiply-and-rotate hash over eight bytes at a time.
#[derive(Default)]
pub(crate) struct LocalHasher(u64);

/// What a `HashMap` of such keys is built with.
pub(crate) type LocalHash = BuildHasherDefault<LocalHasher>;

impl Hasher for LocalHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
            self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
        }
        let mut last = [0u8; 8];
        let rest = chunks.remainder();
        last[..rest.len()].copy_from_slice(rest);
        self.0 =
            (self.0.rotate_left(5) ^ u64::from_le_bytes(last) ^ rest.len() as u64).wrapping_mul(K);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
