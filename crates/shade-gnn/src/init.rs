//! Seeded initialisers: Glorot (Xavier) and Kaiming (He), uniform and normal, as in
//! PyTorch's `torch.nn.init`.
//!
//! Every initialiser draws from the caller's [`StdRng`], so a model initialised from
//! `StdRng::seed_from_u64(s)` is the same on every run. Weights are `[fan_out, fan_in]`
//! (PyTorch's layout) unless stated otherwise; `fan_in` and `fan_out` are passed
//! explicitly so that attention vectors and the like can choose their own.

use ndarray::{ArrayD, IxDyn};
use rand::RngExt;
use rand::rngs::StdRng;
use shade_autodiff::tensor::Element;

/// A uniform draw in `[-bound, bound)`.
pub fn uniform<T: Element>(rng: &mut StdRng, shape: &[usize], bound: f64) -> ArrayD<T> {
    ArrayD::from_shape_simple_fn(IxDyn(shape), || {
        T::cst((rng.random::<f64>() * 2.0 - 1.0) * bound)
    })
}

/// A standard normal draw (Box–Muller) scaled by `std`.
pub fn normal<T: Element>(rng: &mut StdRng, shape: &[usize], std: f64) -> ArrayD<T> {
    ArrayD::from_shape_simple_fn(IxDyn(shape), || {
        let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
        let u2: f64 = rng.random();
        T::cst(std * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos())
    })
}

/// Glorot (Xavier) uniform: `U(-a, a)` with `a = sqrt(6 / (fan_in + fan_out))`
/// (PyG's `glorot`, Lux's `glorot_uniform`).
pub fn glorot_uniform<T: Element>(
    rng: &mut StdRng,
    shape: &[usize],
    fan_in: usize,
    fan_out: usize,
) -> ArrayD<T> {
    let a = (6.0 / (fan_in + fan_out).max(1) as f64).sqrt();
    uniform(rng, shape, a)
}

/// Glorot (Xavier) normal: `N(0, 2 / (fan_in + fan_out))`.
pub fn glorot_normal<T: Element>(
    rng: &mut StdRng,
    shape: &[usize],
    fan_in: usize,
    fan_out: usize,
) -> ArrayD<T> {
    normal(rng, shape, (2.0 / (fan_in + fan_out).max(1) as f64).sqrt())
}

/// Kaiming (He) uniform for ReLU: `U(-b, b)` with `b = sqrt(6 / fan_in)`.
pub fn kaiming_uniform<T: Element>(rng: &mut StdRng, shape: &[usize], fan_in: usize) -> ArrayD<T> {
    uniform(rng, shape, (6.0 / fan_in.max(1) as f64).sqrt())
}

/// Kaiming (He) normal for ReLU: `N(0, 2 / fan_in)`.
pub fn kaiming_normal<T: Element>(rng: &mut StdRng, shape: &[usize], fan_in: usize) -> ArrayD<T> {
    normal(rng, shape, (2.0 / fan_in.max(1) as f64).sqrt())
}

/// PyTorch's default for `nn.Linear` (weight and bias): `U(-1/sqrt(fan_in), 1/sqrt(fan_in))`,
/// i.e. `kaiming_uniform_(a = sqrt(5))`.
pub fn torch_linear<T: Element>(rng: &mut StdRng, shape: &[usize], fan_in: usize) -> ArrayD<T> {
    uniform(rng, shape, 1.0 / (fan_in.max(1) as f64).sqrt())
}

/// Zeros.
pub fn zeros<T: Element>(shape: &[usize]) -> ArrayD<T> {
    ArrayD::zeros(IxDyn(shape))
}

/// Ones.
pub fn ones<T: Element>(shape: &[usize]) -> ArrayD<T> {
    ArrayD::from_elem(IxDyn(shape), T::one())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn bounds_moments_and_seeding() {
        let mut rng = StdRng::seed_from_u64(1);
        let w: ArrayD<f64> = glorot_uniform(&mut rng, &[200, 100], 100, 200);
        let a = (6.0f64 / 300.0).sqrt();
        assert!(w.iter().all(|&x| x.abs() <= a));
        // Var of U(-a, a) is a²/3.
        let var = w.iter().map(|x| x * x).sum::<f64>() / w.len() as f64;
        assert!((var - a * a / 3.0).abs() < 0.05 * a * a / 3.0, "{var}");
        let n: ArrayD<f64> = kaiming_normal(&mut rng, &[100, 100], 50);
        let var = n.iter().map(|x| x * x).sum::<f64>() / n.len() as f64;
        assert!((var - 2.0 / 50.0).abs() < 0.004, "{var}");
        let again: ArrayD<f64> =
            glorot_uniform(&mut StdRng::seed_from_u64(1), &[200, 100], 100, 200);
        assert_eq!(again, w);
    }
}
