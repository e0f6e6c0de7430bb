//! The contiguous fast paths of `transpose` (2-D, cache-blocked), of elementwise reverse
//! rules (e.g. relu) and of broadcasting arithmetic (same shape, bias rows) agree with
//! independent ndarray references, for f32 and f64, on inputs in standard layout,
//! column-major layout and strided (non-contiguous) layout.

use crate::check::cases;
use ndarray::ArrayD;
use proptest::prelude::*;
use shade_autodiff::tensor::{self, Element, TapeBuffers};
use shade_autodiff::{Const, Duplicated};
use shade_test_support::strategies::{Layout, build, layout};

/// Entries in about `[-2, 2)` from a seed (some exactly zero).
fn entry<T: Element + From<f32>>(seed: u64) -> impl Fn(usize, usize) -> T {
    move |i, j| {
        let h = (i as u64 * 7919 + j as u64 * 104_729 + seed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        <T as From<f32>>::from(((h >> 40) % 17) as f32 / 4.0 - 2.0)
    }
}

fn close<T: Element + Into<f64>>(a: &ArrayD<T>, b: &ArrayD<T>) -> Result<(), TestCaseError> {
    prop_assert_eq!(a.shape(), b.shape());
    for (&x, &y) in a.iter().zip(b.iter()) {
        let (x, y): (f64, f64) = (x.into(), y.into());
        prop_assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "{} vs {}", x, y);
    }
    Ok(())
}

fn transpose_case<T: Element + From<f32> + Into<f64>>(
    r: usize,
    c: usize,
    lay: Layout,
    seed: u64,
) -> Result<(), TestCaseError> {
    let x = build::<T>(r, c, lay, entry(seed));
    let want = x.t().to_owned();
    let y = tensor::value(
        &mut TapeBuffers::new(),
        |t, (x,)| t.transpose(x),
        (Const(&x),),
    )
    .unwrap();
    close(&y, &want)?;
    // Reverse: dx = seedᵀ, into a zero adjoint and into one that already holds values.
    let sd = build::<T>(c, r, Layout::Standard, entry(seed + 1));
    for start in [T::zero(), T::one()] {
        let mut dx = x.mapv(|_| start);
        tensor::pullback(
            &mut TapeBuffers::new(),
            |t, (x,)| t.transpose(x),
            (Duplicated(&x, &mut dx),),
            &sd,
        )
        .unwrap();
        close(&dx, &sd.t().mapv(|v| v + start))?;
    }
    Ok(())
}

fn relu_case<T: Element + From<f32> + Into<f64>>(
    r: usize,
    c: usize,
    lay: Layout,
    seed: u64,
) -> Result<(), TestCaseError> {
    let x = build::<T>(r, c, lay, entry(seed));
    let sd = build::<T>(r, c, Layout::Standard, entry(seed + 1));
    let mut dx = x.mapv(|_| T::zero());
    tensor::pullback(
        &mut TapeBuffers::new(),
        |t, (x,)| t.relu(x),
        (Duplicated(&x, &mut dx),),
        &sd,
    )
    .unwrap();
    let mut want = sd.clone();
    want.zip_mut_with(&x, |g, &x| {
        if x <= T::zero() {
            *g = T::zero();
        }
    });
    close(&dx, &want)?;
    let y = tensor::value(&mut TapeBuffers::new(), |t, (x,)| t.relu(x), (Const(&x),)).unwrap();
    close(&y, &x.mapv(|v| v.max(T::zero())))
}

fn add_case<T: Element + From<f32> + Into<f64>>(
    r: usize,
    c: usize,
    lay: Layout,
    bias_first: bool,
    seed: u64,
) -> Result<(), TestCaseError> {
    let a = build::<T>(r, c, lay, entry(seed));
    let same = build::<T>(r, c, Layout::Standard, entry(seed + 2));
    let bias = ndarray::Array1::from_shape_fn(c, |j| entry::<T>(seed + 3)(0, j)).into_dyn();
    for b in [&same, &bias] {
        let y = tensor::value(
            &mut TapeBuffers::new(),
            |t, (a, b)| {
                if bias_first { t.sub(b, a) } else { t.sub(a, b) }
            },
            (Const(&a), Const(b)),
        )
        .unwrap();
        let want = if bias_first { b - &a } else { &a - b };
        close(&y, &want)?;
        let y = tensor::value(
            &mut TapeBuffers::new(),
            |t, (a, b)| t.mul(a, b),
            (Const(&a), Const(b)),
        )
        .unwrap();
        close(&y, &(&a * b))?;
    }
    // Reverse of `a + bias`: da = seed, dbias = column sums of seed.
    let sd = build::<T>(r, c, Layout::Standard, entry(seed + 1));
    let (mut da, mut db) = (a.mapv(|_| T::zero()), bias.mapv(|_| T::zero()));
    tensor::pullback(
        &mut TapeBuffers::new(),
        |t, (a, b)| t.add(a, b),
        (Duplicated(&a, &mut da), Duplicated(&bias, &mut db)),
        &sd,
    )
    .unwrap();
    close(&da, &sd)?;
    close(&db, &sd.sum_axis(ndarray::Axis(0)))
}

proptest! {
    #![proptest_config(cases(64))]

    #[test]
    fn transpose_matches_ndarray(r in 1..70usize, c in 1..70usize, lay in layout(), seed in 0u64..1000) {
        transpose_case::<f64>(r, c, lay, seed)?;
        transpose_case::<f32>(r, c, lay, seed)?;
    }

    #[test]
    fn relu_matches_reference(r in 1..20usize, c in 1..20usize, lay in layout(), seed in 0u64..1000) {
        relu_case::<f64>(r, c, lay, seed)?;
        relu_case::<f32>(r, c, lay, seed)?;
    }

    #[test]
    fn broadcast_arithmetic_matches_ndarray(
        r in 1..20usize, c in 1..20usize, lay in layout(), bias_first in any::<bool>(), seed in 0u64..1000
    ) {
        add_case::<f64>(r, c, lay, bias_first, seed)?;
        add_case::<f32>(r, c, lay, bias_first, seed)?;
    }
}

#[test]
fn transpose_of_higher_rank_reverses_all_axes() {
    let x = ndarray::Array3::from_shape_fn((2, 3, 4), |(i, j, k)| (i * 100 + j * 10 + k) as f64)
        .into_dyn();
    let y = tensor::value(
        &mut TapeBuffers::new(),
        |t, (x,)| t.transpose(x),
        (Const(&x),),
    )
    .unwrap();
    assert_eq!(y.shape(), &[4, 3, 2]);
    assert_eq!(y[[3, 1, 0]], 13.0);
    assert_eq!(y, x.t().to_owned());
}

/// Elementwise maps over at least 2²⁰ contiguous elements (the small-op rule) run on
/// rayon's threads; the result is the same element for element as on one thread (the
/// split cannot reorder anything), checked on two threads explicitly, and within a few
/// ulp of the definition with std's functions (the activations are vectorised
/// polynomials, not libm's).
#[test]
fn large_elementwise_maps_split_over_threads_and_agree() {
    let on = |threads: usize, x: &ArrayD<f32>| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            tensor::value(
                &mut TapeBuffers::new(),
                |t, (x,)| {
                    let e = t.elu(x, 1.0)?;
                    t.tanh(e)
                },
                (Const(x),),
            )
            .unwrap()
        })
    };
    for n in [(1 << 20) - 1, 1 << 20, 1_100_007] {
        let x = ArrayD::from_shape_fn(ndarray::IxDyn(&[n]), |i| ((i[0] as f32) * 0.37).sin() * 3.0);
        let y = on(2, &x);
        assert_eq!(y, on(1, &x), "n = {n}");
        let want = x.mapv(|v| if v > 0.0 { v } else { v.exp_m1() }.tanh());
        for (i, (&a, &b)) in y.iter().zip(&want).enumerate() {
            assert!(
                (a - b).abs() <= 4.0 * f32::EPSILON * b.abs(),
                "n = {n}, [{i}]: {a} vs {b}"
            );
        }
    }
}

/// `f` on a rayon pool of `threads` threads.
fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

/// Same-shape and bias-row arithmetic, dropout (its mask, value and reverse rule) and
/// per-group dot products (value and reverse rule) over at least 2²⁰ elements run in one
/// piece per thread; every element is what the definition gives, bit for bit, on one
/// thread and on two (an odd length for dropout, so that a piece ends inside a 64-bit
/// draw's pair).
#[test]
fn large_arithmetic_dropout_and_group_dots_split_over_threads_and_agree() {
    use rand::SeedableRng;
    let (n, f) = (16_385, 64);
    let x = ArrayD::from_shape_fn(ndarray::IxDyn(&[n, f]), |i| entry::<f32>(1)(i[0], i[1]));
    let y = ArrayD::from_shape_fn(ndarray::IxDyn(&[n, f]), |i| {
        entry::<f32>(2)(i[0], i[1]) + 9.0
    });
    let b = ArrayD::from_shape_fn(ndarray::IxDyn(&[f]), |i| entry::<f32>(3)(7, i[0]));
    for threads in [1, 2] {
        let arith = on_threads(threads, || {
            tensor::value(
                &mut TapeBuffers::new(),
                |t, (x, y, b)| {
                    let s = t.add(x, y)?;
                    let q = t.div(s, y)?;
                    let m = t.mul(q, b)?;
                    t.sub(b, m)
                },
                (Const(&x), Const(&y), Const(&b)),
            )
            .unwrap()
        });
        for ((i, &got), (&x, &y)) in arith.indexed_iter().zip(x.iter().zip(&y)) {
            let bj = b[[i[1]]];
            assert_eq!(got, bj - (x + y) / y * bj, "{threads} threads, {i:?}");
        }
    }
    let len = n * f + 1;
    let v = ArrayD::from_shape_fn(ndarray::IxDyn(&[len]), |i| (i[0] % 13) as f32 - 6.0);
    let mask = tensor::keep_mask(len, 0.3, &mut rand::rngs::StdRng::seed_from_u64(8));
    let scale = (1.0 / (1.0 - 0.3f64)) as f32;
    for threads in [1, 2] {
        let m = on_threads(threads, || {
            tensor::keep_mask(len, 0.3, &mut rand::rngs::StdRng::seed_from_u64(8))
        });
        assert_eq!(m, mask, "{threads} threads");
        let mut dropped = v.clone();
        on_threads(threads, || {
            let s = dropped.as_slice_mut().unwrap();
            tensor::dropout_in_place(s, 0.3, &mut rand::rngs::StdRng::seed_from_u64(8)).unwrap()
        });
        for (i, ((&d, &v), &k)) in dropped.iter().zip(&v).zip(&mask).enumerate() {
            assert_eq!(
                d,
                if k { v * scale } else { 0.0 },
                "in place, {threads} threads, [{i}]"
            );
        }
        let w = v.mapv(|v| v * 0.5);
        let mut g = ArrayD::zeros(v.raw_dim());
        on_threads(threads, || {
            tensor::gradient(
                &mut TapeBuffers::new(),
                |t, (v, w)| {
                    let mut rng = rand::rngs::StdRng::seed_from_u64(8);
                    let d = t.dropout(v, 0.3, &mut rng, true)?;
                    let p = t.mul(d, w)?;
                    t.sum(p)
                },
                (Duplicated(&v, &mut g), Const(&w)),
            )
            .unwrap()
        });
        for (i, (&g, &k)) in g.iter().zip(&mask).enumerate() {
            let want = if k { w[[i]] * scale } else { 0.0 };
            assert_eq!(g, want, "{threads} threads, [{i}]");
        }
        let d = on_threads(threads, || {
            tensor::value(
                &mut TapeBuffers::new(),
                |t, (v,)| t.dropout(v, 0.3, &mut rand::rngs::StdRng::seed_from_u64(8), true),
                (Const(&v),),
            )
            .unwrap()
        });
        for (i, ((&d, &v), &k)) in d.iter().zip(&v).zip(&mask).enumerate() {
            assert_eq!(
                d,
                if k { v * scale } else { 0.0 },
                "{threads} threads, [{i}]"
            );
        }
    }
    let (groups, c) = (8, f / 8);
    let a = ArrayD::from_shape_fn(ndarray::IxDyn(&[f]), |i| entry::<f32>(4)(3, i[0]));
    let wg = ArrayD::from_shape_fn(ndarray::IxDyn(&[n, groups]), |i| {
        entry::<f32>(5)(i[0], i[1])
    });
    for threads in [1, 2] {
        let s = on_threads(threads, || {
            tensor::value(
                &mut TapeBuffers::new(),
                |t, (x, a)| t.group_dot(x, a, groups),
                (Const(&x), Const(&a)),
            )
            .unwrap()
        });
        for ((r, k), &got) in s.indexed_iter().map(|(i, v)| ((i[0], i[1]), v)) {
            let want = (0..c).fold(0.0f32, |acc, j| acc + x[[r, k * c + j]] * a[[k * c + j]]);
            assert_eq!(got, want, "{threads} threads, [{r}, {k}]");
        }
        let mut g = ArrayD::zeros(x.raw_dim());
        on_threads(threads, || {
            tensor::gradient(
                &mut TapeBuffers::new(),
                |t, (x, a, w)| {
                    let s = t.group_dot(x, a, groups)?;
                    let p = t.mul(s, w)?;
                    t.sum(p)
                },
                (Duplicated(&x, &mut g), Const(&a), Const(&wg)),
            )
            .unwrap()
        });
        for (i, &got) in g.indexed_iter() {
            let want = wg[[i[0], i[1] / c]] * a[[i[1]]];
            assert_eq!(got, want, "{threads} threads, {i:?}");
        }
    }
}
