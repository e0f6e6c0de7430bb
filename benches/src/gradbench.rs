//! GradBench's objectives written once as plain Rust `fn`s, differentiated at compile
//! time by `#[autodiff_reverse]` / `#[autodiff_forward]` (definitions: each eval's
//! README in the GradBench repository).
//!
//! Shared by the `compiled` bench, by `shade-autodiff-macros`' tests (which check the
//! generated gradients against the tape) and by a GradBench tool binary.

// Index loops are the form the compile-time engine differentiates (iterator adaptors
// are outside its subset); the argument lists are GradBench's.
#![allow(clippy::needless_range_loop, clippy::too_many_arguments)]

pub mod gmm;
pub mod kmeans;
pub mod lse;
pub mod lstm;

/// A small deterministic generator (uniform in `[0, 1)`), so problems are
/// reproducible without a random-number crate in the objectives.
#[derive(Clone, Debug)]
pub struct Lcg(u64);

impl Lcg {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Lcg(seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407))
    }

    /// The next number in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `n` numbers in `[lo, hi)`.
    pub fn vec(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| lo + (hi - lo) * self.next_f64()).collect()
    }
}
