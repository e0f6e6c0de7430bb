//! Shared gradient checker for the tensor-layer tests: reverse rule = forward rule =
//! central finite differences, on one random direction and one random seed.

#![allow(dead_code)]

use ndarray::ArrayD;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use rand::SeedableRng;
use rand::rngs::StdRng;
use shade_autodiff::tensor::{self, Tape, TapeBuffers, TensorArg, Var};
use shade_autodiff::{AdResult, Const, Duplicated};
use shade_test_support::close;

pub(crate) use shade_test_support::strategies::{arr, cases, mat};

fn uniform(rng: &mut StdRng) -> f64 {
    use rand::Rng;
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

fn random_like(a: &ArrayD<f64>, rng: &mut StdRng) -> ArrayD<f64> {
    a.mapv(|_| uniform(rng))
}

/// Half the width of the band around a kink (of relu, abs, clamp, or a tie of max and
/// min) in which the checks do not compare derivatives: central differences with step
/// `1e-6` straddle a kink within it, and a kink has no derivative (the reverse rule's
/// value is a subgradient, which differences across the kink need not match).
pub(crate) const KINK: f64 = 1e-4;

/// Whether no entry of `a` lies within [`KINK`] of a point of `kinks`.
pub(crate) fn away_from(a: &ArrayD<f64>, kinks: &[f64]) -> bool {
    a.iter().all(|v| kinks.iter().all(|k| (v - k).abs() > KINK))
}

/// Whether no two entries of `a` that one max/min reduction compares (along `axis`,
/// or all of them for `None`) lie within [`KINK`] of each other.
pub(crate) fn no_near_ties(a: &ArrayD<f64>, axis: Option<usize>) -> bool {
    let apart = |lane: Vec<f64>| {
        let mut l = lane;
        l.sort_by(f64::total_cmp);
        l.windows(2).all(|w| w[1] - w[0] > KINK)
    };
    match axis {
        None => apart(a.iter().copied().collect()),
        Some(ax) => a
            .lanes(ndarray::Axis(ax))
            .into_iter()
            .all(|lane| apart(lane.iter().copied().collect())),
    }
}

/// [`no_near_ties`] for a segment max: rows of `x` in one segment of `idx`, column by
/// column.
pub(crate) fn no_near_ties_in_segments(x: &ArrayD<f64>, idx: &[usize]) -> bool {
    let cols = x.shape().get(1).copied().unwrap_or(1);
    let segs = idx.iter().copied().max().map_or(0, |m| m + 1);
    (0..segs).all(|s| {
        (0..cols).all(|c| {
            let mut lane: Vec<f64> = idx
                .iter()
                .enumerate()
                .filter(|&(_, &g)| g == s)
                .map(|(r, _)| x[[r, c]])
                .collect();
            lane.sort_by(f64::total_cmp);
            lane.windows(2).all(|w| w[1] - w[0] > KINK)
        })
    })
}

/// An argument that is either constant or tracked.
pub(crate) enum Arg<'a> {
    C(&'a ArrayD<f64>),
    D(&'a ArrayD<f64>, &'a mut ArrayD<f64>),
}

impl<'a> TensorArg<'a, f64> for Arg<'a> {
    type Handle = Var;
    fn register(self, tape: &mut Tape<'a, f64>, pos: usize) -> AdResult<Var> {
        match self {
            Arg::C(x) => Const(x).register(tape, pos),
            Arg::D(x, dx) => Duplicated(x, dx).register(tape, pos),
        }
    }
}

fn consts(xs: &[ArrayD<f64>]) -> Vec<Arg<'_>> {
    xs.iter().map(Arg::C).collect()
}

fn dot(a: &ArrayD<f64>, b: &ArrayD<f64>) -> f64 {
    a.iter().zip(b.iter()).map(|(x, y)| x * y).sum()
}

/// Checks `f` at `inputs`: the reverse rule (pullback with a random seed), the forward
/// rule (pushforward along a random direction) and central finite differences agree;
/// gradients with the first input constant equal the others' gradients with it tracked.
pub(crate) fn check_op<F>(inputs: &[ArrayD<f64>], seed: u64, f: F) -> Result<(), TestCaseError>
where
    F: for<'a> Fn(&mut Tape<'a, f64>, &[Var]) -> AdResult<Var>,
{
    check_op_tol(inputs, seed, 1e-5, f)
}

/// [`check_op`] with a given relative tolerance for the finite differences.
pub(crate) fn check_op_tol<F>(
    inputs: &[ArrayD<f64>],
    seed: u64,
    tol: f64,
    f: F,
) -> Result<(), TestCaseError>
where
    F: for<'a> Fn(&mut Tape<'a, f64>, &[Var]) -> AdResult<Var>,
{
    let mut rng = StdRng::seed_from_u64(seed);
    let mut bufs = TapeBuffers::new();
    let y = tensor::value(&mut bufs, |t, h| f(t, &h), consts(inputs)).unwrap();
    let w = random_like(&y, &mut rng);
    let v: Vec<_> = inputs.iter().map(|x| random_like(x, &mut rng)).collect();

    // Reverse: accumulate twice into shadows that start at 1 to check `+=`.
    let mut g: Vec<_> = inputs.iter().map(|x| x.mapv(|_| 1.0)).collect();
    for _ in 0..2 {
        let args = inputs
            .iter()
            .zip(g.iter_mut())
            .map(|(x, g)| Arg::D(x, g))
            .collect::<Vec<_>>();
        tensor::pullback(&mut bufs, |t, h| f(t, &h), args, &w).unwrap();
    }
    let g: Vec<_> = g.into_iter().map(|g| (g - 1.0) / 2.0).collect();

    // Forward.
    let mut vt = v.clone();
    let args = inputs
        .iter()
        .zip(vt.iter_mut())
        .map(|(x, t)| Arg::D(x, t))
        .collect::<Vec<_>>();
    let (y2, dy) = tensor::pushforward(&mut bufs, |t, h| f(t, &h), args).unwrap();
    prop_assert_eq!(y2.shape(), y.shape());
    for (a, b) in y2.iter().zip(y.iter()) {
        prop_assert!(
            a == b || (a.is_nan() && b.is_nan()),
            "primal differs: {} vs {}",
            a,
            b
        );
    }
    let fwd = dot(&w, &dy);
    let rev: f64 = g.iter().zip(&v).map(|(g, v)| dot(g, v)).sum();
    prop_assert!(close(fwd, rev, 1e-9), "forward {} vs reverse {}", fwd, rev);

    // Central differences along v.
    let h = 1e-6;
    let shifted = |s: f64| -> f64 {
        let xs: Vec<_> = inputs.iter().zip(&v).map(|(x, v)| x + &(v * s)).collect();
        let mut b = TapeBuffers::new();
        let y = tensor::value(&mut b, |t, hh| f(t, &hh), consts(&xs)).unwrap();
        dot(&w, &y)
    };
    let fd = (shifted(h) - shifted(-h)) / (2.0 * h);
    prop_assert!(
        close(fd, rev, tol),
        "finite differences {} vs reverse {}",
        fd,
        rev
    );

    // The first input constant: the others' gradients are unchanged, and no rule runs for it.
    if inputs.len() > 1 {
        let mut g2: Vec<_> = inputs.iter().map(|x| x.mapv(|_| 0.0)).collect();
        let mut it = g2.iter_mut();
        let _ = it.next();
        let mut args = vec![Arg::C(&inputs[0])];
        args.extend(inputs[1..].iter().zip(it).map(|(x, g)| Arg::D(x, g)));
        tensor::pullback(&mut bufs, |t, h| f(t, &h), args, &w).unwrap();
        for (a, b) in g2.iter().zip(&g).skip(1) {
            for (x, y) in a.iter().zip(b.iter()) {
                prop_assert!(
                    close(*x, *y, 1e-9),
                    "constant first input changed a gradient"
                );
            }
        }
        prop_assert!(g2[0].iter().all(|&x| x == 0.0));
    }
    Ok(())
}
