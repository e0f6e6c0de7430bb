//! proptest strategies for arrays, and the case count of a property test.

use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;
use proptest::test_runner::Config;

/// A config with `n` cases, or more when `PROPTEST_CASES` asks for more (what
/// `cargo xtask fuzz --cases N` sets); never fewer than `n`.
///
/// The rejections allowed grow with the cases (proptest's default is a fixed 1024):
/// a property that discards 3% of its inputs near kinks passes at 256 cases and would
/// abort at 10⁵ for "too many global rejects" with nothing wrong.
pub fn cases(n: u32) -> Config {
    let env = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse::<u32>().ok());
    with_rejects(Config::with_cases(env.map_or(n, |e| e.max(n))))
}

/// `config` allowing as many global rejections as it has cases (at least proptest's
/// default 1024), and sixty-four times as many local ones.
pub fn with_rejects(config: Config) -> Config {
    Config {
        max_global_rejects: config.max_global_rejects.max(config.cases),
        max_local_rejects: config
            .max_local_rejects
            .max(config.cases.saturating_mul(64)),
        ..config
    }
}

/// Runs `f`, turning a panic into a failed test case with its message (the no-panic
/// properties: any result is fine, a panic is not).
pub fn no_panic<R>(what: &str, f: impl FnOnce() -> R) -> Result<R, TestCaseError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|e| {
        let msg = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        TestCaseError::fail(format!("{what} panicked: {msg}"))
    })
}

/// How a test array is laid out in memory.
#[derive(Clone, Copy, Debug)]
pub enum Layout {
    /// Row-major, contiguous.
    Standard,
    /// Column-major (Fortran order), contiguous.
    ColumnMajor,
    /// Every other column of a wider array: owned, not contiguous.
    Strided,
}

/// Any of the three layouts.
pub fn layout() -> impl Strategy<Value = Layout> {
    prop_oneof![
        Just(Layout::Standard),
        Just(Layout::ColumnMajor),
        Just(Layout::Strided)
    ]
}

/// An `r × c` matrix with entries `f(i, j)` in the given layout.
pub fn build<T: Clone + Default>(
    r: usize,
    c: usize,
    lay: Layout,
    f: impl Fn(usize, usize) -> T,
) -> ArrayD<T> {
    use ndarray::{Array2, ShapeBuilder, s};
    let a = match lay {
        Layout::Standard => Array2::from_shape_fn((r, c), |(i, j)| f(i, j)),
        Layout::ColumnMajor => Array2::from_shape_fn((r, c).f(), |(i, j)| f(i, j)),
        Layout::Strided => Array2::from_shape_fn((r, 2 * c), |(i, j)| {
            if j % 2 == 0 {
                f(i, j / 2)
            } else {
                T::default()
            }
        })
        .slice_move(s![.., ..;2]),
    };
    a.into_dyn()
}

/// An array of the given shape with entries in `lo..hi`.
pub fn arr(shape: Vec<usize>, lo: f64, hi: f64) -> impl Strategy<Value = ArrayD<f64>> {
    let n: usize = shape.iter().product();
    prop::collection::vec(lo..hi, n).prop_map(move |v| {
        ArrayD::from_shape_vec(IxDyn(&shape), v).expect("the vector has the shape's length")
    })
}

/// A `[r, c]` matrix with `r, c` in `1..=max` and entries in `-2..2`.
pub fn mat(max: usize) -> impl Strategy<Value = ArrayD<f64>> {
    (1..=max, 1..=max).prop_flat_map(|(r, c)| arr(vec![r, c], -2.0, 2.0))
}
