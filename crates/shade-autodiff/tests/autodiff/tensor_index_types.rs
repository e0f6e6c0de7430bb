//! The index operations over `u32` index arrays (a graph's own edge lists) against the
//! same arrays as `usize`: the same bits for values, gradients and tangents, and the
//! same coded error, with the tape left as it was, for an index out of range.
//! (`tensor_graph` checks the `u32` path's rules against finite differences.)

use crate::tensor_graph::{coo_case, leak, leak_u32, narrow, norm_case, segments};
use ndarray::{Array1, Array2, ArrayD};
use proptest::prelude::*;
use shade_autodiff::tensor::{self, Element, IndexType, SymNorm, Tape, TapeBuffers, Var};
use shade_autodiff::{AdError, AdResult, Const, Duplicated};

/// The index operations of `index.rs` (`SelectOwned`: `index_select_owned`, whose
/// indices are a `Vec<usize>` of its own; the others take the slice as it is).
#[derive(Clone, Copy, Debug)]
pub(crate) enum IndexOp {
    Select,
    SelectOwned,
    Add,
    Mean,
    Max,
    Softmax,
}

/// The operations that take a slice of either index type as it is.
const INDEX_OPS: [IndexOp; 5] = [
    IndexOp::Select,
    IndexOp::Add,
    IndexOp::Mean,
    IndexOp::Max,
    IndexOp::Softmax,
];

impl IndexOp {
    /// Runs the operation on `x` with `idx` (`n` segments; unused by the gather).
    pub(crate) fn run<'a, T: Element, I: IndexType>(
        self,
        t: &mut Tape<'a, T>,
        x: Var,
        idx: &'a [I],
        n: usize,
    ) -> AdResult<Var> {
        match self {
            IndexOp::Select => t.index_select(x, idx),
            IndexOp::SelectOwned => t.index_select_owned(x, idx.iter().map(|i| i.ix()).collect()),
            IndexOp::Add => t.scatter_add(x, idx, n),
            IndexOp::Mean => t.scatter_mean(x, idx, n),
            IndexOp::Max => t.scatter_max(x, idx, n),
            IndexOp::Softmax => t.segment_softmax(x, idx, n),
        }
    }

    /// The operation's name, as its errors give it.
    fn name(self) -> &'static str {
        match self {
            IndexOp::Select => "index_select",
            IndexOp::SelectOwned => "index_select_owned",
            IndexOp::Add => "scatter_add",
            IndexOp::Mean => "scatter_mean",
            IndexOp::Max => "scatter_max",
            IndexOp::Softmax => "segment_softmax",
        }
    }
}

/// What a program computes at `inputs`: its value, the pullback of a fixed seed (every
/// input tracked) and the pushforward along a fixed direction.
struct Derivatives {
    value: ArrayD<f64>,
    gradients: Vec<ArrayD<f64>>,
    tangent: ArrayD<f64>,
}

fn pattern(shape: &[usize], offset: usize) -> ArrayD<f64> {
    let mut a = ArrayD::zeros(shape);
    for (k, v) in a.iter_mut().enumerate() {
        *v = (((k + offset) as f64) * 0.731).sin() * 1.3;
    }
    a
}

fn derivatives<F>(inputs: &[ArrayD<f64>], f: F) -> Derivatives
where
    F: for<'a> Fn(&mut Tape<'a, f64>, &[Var]) -> AdResult<Var>,
{
    let mut bufs = TapeBuffers::new();
    let consts: Vec<_> = inputs.iter().map(Const).collect();
    let value = tensor::value(&mut bufs, |t, h| f(t, &h), consts).unwrap();
    let seed = pattern(value.shape(), 0);
    let mut gradients: Vec<_> = inputs.iter().map(|x| x.mapv(|_| 0.0)).collect();
    let args: Vec<_> = inputs
        .iter()
        .zip(gradients.iter_mut())
        .map(|(x, g)| Duplicated(x, g))
        .collect();
    tensor::pullback(&mut bufs, |t, h| f(t, &h), args, &seed).unwrap();
    let mut dirs: Vec<_> = inputs
        .iter()
        .enumerate()
        .map(|(i, x)| pattern(x.shape(), 100 * (i + 1)))
        .collect();
    let args: Vec<_> = inputs
        .iter()
        .zip(dirs.iter_mut())
        .map(|(x, d)| Duplicated(x, d))
        .collect();
    let (_, tangent) = tensor::pushforward(&mut bufs, |t, h| f(t, &h), args).unwrap();
    Derivatives {
        value,
        gradients,
        tangent,
    }
}

fn bits(a: &ArrayD<f64>) -> (Vec<usize>, Vec<u64>) {
    (a.shape().to_vec(), a.iter().map(|v| v.to_bits()).collect())
}

/// `a` and `b` hold the same bits: value, every gradient, tangent.
fn same_bits(a: &Derivatives, b: &Derivatives, what: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(bits(&a.value), bits(&b.value), "{} value", what);
    prop_assert_eq!(a.gradients.len(), b.gradients.len());
    for (ga, gb) in a.gradients.iter().zip(&b.gradients) {
        prop_assert_eq!(bits(ga), bits(gb), "{} gradient", what);
    }
    prop_assert_eq!(bits(&a.tangent), bits(&b.tangent), "{} tangent", what);
    Ok(())
}

proptest! {
    #![proptest_config(crate::check::cases(64))]

    /// Every index operation gives the same bits with `u32` indices as with the same
    /// indices as `usize`: values, gradients and tangents.
    #[test]
    fn index_ops_give_the_same_bits_with_u32_and_usize_indices((x, idx, n) in segments()) {
        let rows = x.shape()[0];
        for op in INDEX_OPS {
            let wide: &'static [usize] = match op {
                // Rows of `x`, with repeats (none when `x` has no rows).
                IndexOp::Select if rows == 0 => &[],
                IndexOp::Select => leak(idx.iter().chain(&idx).map(|&i| (3 * i + 1) % rows).collect()),
                _ => leak(idx.clone()),
            };
            let narrow = leak_u32(wide);
            let a = derivatives(std::slice::from_ref(&x), move |t, v| op.run(t, v[0], wide, n));
            let b = derivatives(std::slice::from_ref(&x), move |t, v| op.run(t, v[0], narrow, n));
            same_bits(&a, &b, op.name())?;
        }
    }

    /// `coo_spmm` and `sym_norm_values` give the same bits with `u32` pairs as with
    /// `usize` pairs.
    #[test]
    fn coordinate_lists_give_the_same_bits_with_u32_and_usize_indices(
        (rows, cols, n, v, x) in coo_case(),
        case in norm_case(),
    ) {
        let (rows, cols) = (leak(rows), leak(cols));
        let (rows32, cols32) = (leak_u32(rows), leak_u32(cols));
        let inputs = [v, x];
        let a = derivatives(&inputs, move |t, h| t.coo_spmm(rows, cols, n, h[0], h[1]));
        let b = derivatives(&inputs, move |t, h| t.coo_spmm(rows32, cols32, n, h[0], h[1]));
        same_bits(&a, &b, "coo_spmm")?;
        let case = Box::leak(Box::new(case));
        let w = std::slice::from_ref(&case.w);
        for (fill, normalize) in [(1.0, true), (2.0, true), (1.0, false)] {
            let s = case.sym(fill, normalize);
            let s32 = narrow(s);
            let a = derivatives(w, move |t, h| t.sym_norm_values(h[0], s));
            let b = derivatives(w, move |t, h| t.sym_norm_values(h[0], s32));
            same_bits(&a, &b, "sym_norm_values")?;
        }
    }
}

/// The values of `coo_spmm` in [`check_out_of_range`]: one per pair.
const PAIRS: usize = 4;

/// Runs `bad` on a tape holding `y = tanh(x)` (`x` tracked) and a constant `v` of
/// [`PAIRS`] values, and expects `IndexOutOfRange` with the given position, index and
/// bound; the tape keeps its length, and the program goes on to a gradient that equals
/// the one of the program without the failed call.
fn check_out_of_range<F>(x: &ArrayD<f64>, want: (&str, usize, usize, usize), bad: F)
where
    F: for<'a> Fn(&mut Tape<'a, f64>, Var, Var) -> AdResult<Var>,
{
    let (op, position, index, bound) = want;
    let mut bufs = TapeBuffers::new();
    let program = |t: &mut Tape<'_, f64>, x: Var, with_bad: bool| -> AdResult<Var> {
        let y = t.tanh(x)?;
        let v = t.constant(&Array1::from_elem(PAIRS, 0.5));
        if with_bad {
            let before = t.len();
            let e = bad(t, y, v).unwrap_err();
            assert_eq!(e.code(), "SHADE-E0111", "{op}: {e}");
            match &e {
                AdError::IndexOutOfRange {
                    op: o,
                    position: p,
                    index: i,
                    bound: b,
                } => {
                    assert!(o.starts_with(op), "{o} is not {op}");
                    assert_eq!((*p, *i, *b), (position, index, bound), "{op}");
                }
                other => panic!("{op}: {other:?}"),
            }
            assert_eq!(t.len(), before, "{op}: the failed call left a value");
        }
        let s = t.mul(y, y)?;
        t.sum(s)
    };
    let mut want_dx = x.mapv(|_| 0.0);
    let mut dx = x.mapv(|_| 0.0);
    let clean = tensor::gradient(
        &mut bufs,
        |t, (x,)| program(t, x, false),
        (Duplicated(x, &mut want_dx),),
    )
    .unwrap();
    let after = tensor::gradient(
        &mut bufs,
        |t, (x,)| program(t, x, true),
        (Duplicated(x, &mut dx),),
    )
    .unwrap();
    assert_eq!(clean.to_bits(), after.to_bits(), "{op}");
    assert_eq!(bits(&want_dx), bits(&dx), "{op}");
}

/// A `u32` index out of range (one past the bound, and `u32::MAX`) is
/// `SHADE-E0111` naming its position, its value and the bound, for every operation
/// that takes indices, exactly as the same index as `usize`; no panic, and the tape is
/// left as it was and usable.
#[test]
fn u32_indices_out_of_range_are_coded_errors_and_leave_the_tape_usable() {
    let x = Array2::from_shape_fn((3, 2), |(i, j)| (i * 2 + j) as f64 * 0.3 - 0.7).into_dyn();
    for big in [3u32, u32::MAX] {
        let bad: &'static [u32] = leak(vec![0, 2, big, 1]);
        let wide: &'static [usize] = leak(bad.iter().map(|&i| i as usize).collect());
        let index = big as usize;
        for op in INDEX_OPS {
            let (idx, idx_wide, n) = match op {
                // Three rows to select from.
                IndexOp::Select => (bad, wide, 0),
                // One index per row of `x`, three segments.
                _ => (&bad[1..], &wide[1..], 3),
            };
            let position = match op {
                IndexOp::Select => 2,
                _ => 1,
            };
            let want = (op.name(), position, index, 3);
            check_out_of_range(&x, want, move |t, y, _| op.run(t, y, idx, n));
            check_out_of_range(&x, want, move |t, y, _| op.run(t, y, idx_wide, n));
        }
        // `coo_spmm`: a row `>= n` (3), then a column `>= M` (the 3 rows of `x`).
        let ok: &'static [u32] = &[0, 1, 2, 1];
        assert_eq!(ok.len(), PAIRS);
        for (rows, cols) in [(bad, ok), (ok, bad)] {
            let want = ("coo_spmm", 2, index, 3);
            check_out_of_range(&x, want, move |t, y, v| t.coo_spmm(rows, cols, 3, v, y));
        }
        // `sym_norm_values`: a row or a column `>= num_nodes` (3).
        for (rows, cols) in [(bad, ok), (ok, bad)] {
            let s: SymNorm<'static, u32> = SymNorm {
                rows,
                cols,
                from: &[Some(0), Some(1), Some(2), None],
                fill: 1.0,
                entry: &[0, 1, 2, 3],
                num_entries: 4,
                num_nodes: 3,
                normalize: true,
            };
            let want = ("sym_norm_values", 2, index, 3);
            check_out_of_range(&x, want, move |t, y, _| t.sym_norm_values(y, s));
        }
    }
}

/// `u32` index slices are program arguments as `usize` ones are (`Const(&idx[..])`).
#[test]
fn u32_index_slices_are_program_arguments() {
    let x = Array2::from_shape_fn((3, 2), |(i, j)| (i + 3 * j) as f64);
    let idx = [2u32, 0, 2];
    let y = tensor::value(
        &mut TapeBuffers::new(),
        |t, (x, i)| t.index_select(x, i),
        (Const(&x), Const(&idx[..])),
    )
    .unwrap();
    assert_eq!(y, x.select(ndarray::Axis(0), &[2, 0, 2]).into_dyn());
}
