//! proptest strategies for arrays, and the case count of a property test.

use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;
use proptest::test_runner::Config;

/// A config with `n` cases, or more when `PROPTEST_CASES` asks for more (what
/// `cargo xtask fuzz --cases N` sets); never fewer than `n`.
pub fn cases(n: u32) -> Config {
    let env = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse::<u32>().ok());
    Config::with_cases(env.map_or(n, |e| e.max(n)))
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
