//! One home for running a kernel compiled for the widest vectors the processor has.
//!
//! The kernels of the tensor layer are plain loops the compiler vectorises; compiled for
//! the baseline target they get SSE2's four `f32` lanes, with AVX2 eight, with AVX-512F
//! sixteen. A kernel's body is written once, `#[inline(always)]`, and handed to
//! [`wide`], which runs it inside a function compiled with AVX-512F (or else AVX2) when
//! the processor said at run time that it executes it, and as it is otherwise. No fused
//! multiply-add is enabled (and Rust never contracts a multiply and an add into one), so
//! every compilation performs the same IEEE operations in the same order per element:
//! the results are identical bit for bit (each caller's tests check it). AVX-512F took
//! the activations' share of the policy model's gradient from 15 % to 11 % of its time
//! (`small_profile policy`, one thread, `perf record`), the same bits.

/// `body()`, compiled with AVX-512F or AVX2 where the processor has them.
///
/// The closure is called once, inside a `#[target_feature]` function into which it
/// (and the `#[inline(always)]` kernels it calls) is inlined. Public for the crates
/// built on this one (shade-gnn's optimisers run their update loops in it): a loop over
/// slices in `body` is vectorised for the widest lanes, with the same IEEE operations
/// per element, so the same bits as outside it.
///
/// ```
/// use shade_autodiff::tensor::simd::wide;
/// let (mut p, g) = (vec![1.0f32; 1000], vec![0.5f32; 1000]);
/// wide(|| {
///     for (p, &g) in p.iter_mut().zip(&g) {
///         *p -= 0.1 * g / (g * g).sqrt();
///     }
/// });
/// assert!(p.iter().all(|&p| p == 1.0 - 0.1 * 0.5 / 0.25f32.sqrt()));
/// ```
#[inline(always)]
pub fn wide<R>(body: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        #[target_feature(enable = "avx2,avx512f")]
        fn run512<R>(body: impl FnOnce() -> R) -> R {
            body()
        }
        #[allow(unsafe_code)]
        // SAFETY: the processor said it executes AVX-512F (and so AVX2) instructions.
        return unsafe { run512(body) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        #[target_feature(enable = "avx2")]
        fn run<R>(body: impl FnOnce() -> R) -> R {
            body()
        }
        #[allow(unsafe_code)]
        // SAFETY: the processor said it executes AVX2 instructions (checked just above),
        // the only requirement of calling a function compiled with that target feature;
        // `run` only calls the safe closure.
        return unsafe { run(body) };
    }
    body()
}

#[cfg(test)]
mod tests {
    #[test]
    fn runs_the_body_once_and_returns_its_value() {
        let mut calls = 0;
        let v = super::wide(|| {
            calls += 1;
            (0..100).map(|i| i as f32 * 0.5).sum::<f32>()
        });
        assert_eq!((v, calls), (2475.0, 1));
    }
}
