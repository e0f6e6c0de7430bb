//! One home for running a kernel compiled for AVX2 when the processor has it.
//!
//! The kernels of the tensor layer are plain loops the compiler vectorises; compiled for
//! the baseline target they get SSE2's four `f32` lanes, compiled with AVX2 eight. A
//! kernel's body is written once, `#[inline(always)]`, and handed to [`avx2`], which
//! runs it inside a function compiled with that target feature when the processor
//! said at run time that it executes it, and as it is otherwise. No fused multiply-add
//! is enabled, so both compilations perform the same IEEE operations in the same order
//! per element: the results are identical bit for bit (each caller's tests check it).

/// `body()`, compiled with AVX2 where the processor has it.
///
/// The closure is called once, inside a `#[target_feature(enable = "avx2")]` function
/// into which it (and the `#[inline(always)]` kernels it calls) is inlined.
#[inline(always)]
pub(crate) fn avx2<R>(body: impl FnOnce() -> R) -> R {
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
        let v = super::avx2(|| {
            calls += 1;
            (0..100).map(|i| i as f32 * 0.5).sum::<f32>()
        });
        assert_eq!((v, calls), (2475.0, 1));
    }
}
