//! Adversarial inputs for the tensor tape's index operations (gathers, scatters,
//! segment softmax over `u32` and `usize` indices: out of range up to `u32::MAX`,
//! empty, with 0 segments or more segments than fit in memory), coordinate lists
//! (`coo_spmm`, `sym_norm_values`), sparse products over [`SparseMatrix`] (empty rows
//! and columns, 0 × k and k × 0 matrices), the class losses (labels and row selections
//! out of range), dropout (`p` in and out of `[0, 1]`, NaN) and custom rules that
//! misbehave, with `tensor_fuzz`'s harness (`exercise`): no panic, coded errors with the
//! tape unchanged, result shapes by contract, references on small cases and finite
//! differences on clean `f64` inputs.

use crate::check::{cases, check_op, no_near_ties_in_segments};
use crate::tensor_fuzz::{Arg, In, agrees, exercise, input, shape};
use crate::tensor_index_types::IndexOp;
use ndarray::{ArrayD, ArrayViewD, IxDyn};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use rand::SeedableRng;
use rand::rngs::StdRng;
use shade_autodiff::tensor::{
    self, Element, IndexType, Rows, RuleSlot, SparseMatrix, SymNorm, Tape, TapeBuffers, TensorRule,
    Var,
};
use shade_autodiff::{AdError, AdResult};
use shade_test_support::strategies::no_panic;

fn leak<X>(v: Vec<X>) -> &'static [X] {
    Box::leak(v.into_boxed_slice())
}

/// An index: mostly small, sometimes past any bound (`u32::MAX` included).
fn index() -> impl Strategy<Value = usize> {
    prop_oneof![8 => 0..4usize, 1 => Just(u32::MAX as usize), 1 => 4..9usize]
}

/// A number of segments: small, none, or more than an array can hold.
fn segments() -> impl Strategy<Value = usize> {
    prop_oneof![8 => 0..5usize, 1 => Just(1usize << 62), 1 => Just(usize::MAX)]
}

/// A list of indices: empty, one per row of `rows`, or of any length.
fn indices(rows: usize) -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        1 => Just(vec![]),
        4 => prop::collection::vec(index(), rows),
        1 => prop::collection::vec(index(), 0..6),
    ]
}

/// The shape of an index operation's result by its contract.
fn index_shape(op: IndexOp, x: &[usize], idx: &[usize], n: usize) -> Option<Vec<usize>> {
    let (&rows, rest) = x.split_first()?;
    let mut s = x.to_vec();
    match op {
        IndexOp::Select | IndexOp::SelectOwned => {
            idx.iter().all(|&i| i < rows).then_some(())?;
            s[0] = idx.len();
        }
        _ => {
            (idx.len() == rows && idx.iter().all(|&i| i < n)).then_some(())?;
            if !matches!(op, IndexOp::Softmax) {
                s[0] = n;
            }
        }
    }
    // The result and the segments' scratch must fit in memory (`n` up to 2^62 segments
    // is refused, never tried).
    let f: usize = rest.iter().product();
    let segs = if matches!(op, IndexOp::Select | IndexOp::SelectOwned) {
        0
    } else {
        n
    };
    let size = s.iter().try_fold(1usize, |p, &d| p.checked_mul(d.max(1)));
    segs.checked_mul(f.max(1)).filter(|&z| z < 1 << 32)?;
    size.is_some_and(|z| z < 1 << 32).then_some(())?;
    Some(s)
}

fn index_case<T: Element, I: IndexType>(
    op: IndexOp,
    x: &In,
    idx: &'static [I],
    n: usize,
    eps: f64,
) -> Result<(), TestCaseError> {
    let ix: Vec<usize> = idx.iter().map(|i| i.ix()).collect();
    let got = exercise::<T, _>(std::slice::from_ref(x), |t, h| op.run(t, h[0], idx, n))?;
    match (got, index_shape(op, &x.shape, &ix, n)) {
        (Ok(y), Some(s)) => {
            prop_assert_eq!(y.shape(), &s[..], "{:?}", op);
            let f: usize = x.shape[1..].iter().product();
            let cast = |v: f64| T::cst(v).to_f64().unwrap_or(f64::NAN);
            let yv: Vec<f64> = y.iter().map(|v| v.to_f64().unwrap_or(f64::NAN)).collect();
            let want: Option<Vec<f64>> = match op {
                IndexOp::Select | IndexOp::SelectOwned => Some(
                    ix.iter()
                        .flat_map(|&k| x.vals[k * f..(k + 1) * f].iter().map(|&v| cast(v)))
                        .collect(),
                ),
                IndexOp::Add => {
                    let mut w = vec![0.0; n * f];
                    for (e, &k) in ix.iter().enumerate() {
                        for j in 0..f {
                            w[k * f + j] = cast(w[k * f + j] + cast(x.vals[e * f + j]));
                        }
                    }
                    Some(w)
                }
                // A segment's maximum is NaN if it holds one, wherever it stands.
                IndexOp::Max | IndexOp::Mean => {
                    let mut w = vec![0.0; n * f];
                    for (p, w) in w.iter_mut().enumerate() {
                        let (k, j) = (p / f, p % f);
                        let col: Vec<f64> = ix
                            .iter()
                            .enumerate()
                            .filter(|&(_, &g)| g == k)
                            .map(|(e, _)| cast(x.vals[e * f + j]))
                            .collect();
                        if col.is_empty() {
                            continue;
                        }
                        *w = if matches!(op, IndexOp::Mean) {
                            col.iter().sum::<f64>() / col.len() as f64
                        } else if col.iter().any(|v| v.is_nan()) {
                            f64::NAN
                        } else {
                            col.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                        };
                        *w = cast(*w);
                    }
                    Some(w)
                }
                IndexOp::Softmax => None,
            };
            if let Some(w) = want {
                for (&g, &w) in yv.iter().zip(&w) {
                    let ok = agrees(g, w, eps * 4.0)
                        || matches!(op, IndexOp::Mean) && !w.is_finite() && !g.is_finite();
                    prop_assert!(ok, "{:?}: {} against {}", op, g, w);
                }
            }
            Ok(())
        }
        (Err(_), None) => Ok(()),
        (got, want) => Err(TestCaseError::fail(format!(
            "{op:?} on {:?} with {ix:?}, n = {n}: {:?}, expected {want:?}",
            x.shape,
            got.map(|y| y.shape().to_vec())
        ))),
    }
}

fn index_input() -> impl Strategy<Value = (IndexOp, In, Vec<usize>, usize, bool)> {
    let ops = vec![
        IndexOp::Select,
        IndexOp::SelectOwned,
        IndexOp::Add,
        IndexOp::Mean,
        IndexOp::Max,
        IndexOp::Softmax,
    ];
    (
        prop::sample::select(ops),
        shape(),
        any::<bool>(),
        segments(),
    )
        .prop_flat_map(|(op, s, clean, n)| {
            let rows = s.first().copied().unwrap_or(1);
            (
                Just(op),
                input(s, clean),
                indices(rows),
                Just(n),
                Just(clean),
            )
        })
}

/// A sparse matrix's shape and its triplets (a cell given twice sums).
type Triplets = (usize, usize, Vec<(usize, usize, f64)>);

/// A random sparse matrix `[r, c]` (0 rows or columns included), duplicates summed.
fn sparse() -> impl Strategy<Value = Triplets> {
    (0..4usize, 0..4usize).prop_flat_map(|(r, c)| {
        let cells = if r * c == 0 { 0 } else { r * c + 2 };
        (
            Just(r),
            Just(c),
            prop::collection::vec((0..r.max(1), 0..c.max(1), -2.0..2.0f64), 0..=cells),
        )
    })
}

fn matrix<T: Element>((r, c, ts): &Triplets) -> &'static SparseMatrix<T> {
    let mut tri = sprs::TriMatI::<T, u32>::new((*r, *c));
    for &(i, j, v) in ts {
        tri.add_triplet(i, j, T::cst(v));
    }
    Box::leak(Box::new(SparseMatrix::new(tri.to_csr())))
}

#[derive(Clone, Copy, Debug)]
enum SpOp {
    Spmm,
    Bias,
    Values,
    SpmmT,
    Dense,
}

fn sparse_shape(
    op: SpOp,
    (m, k): (usize, usize),
    nnz: usize,
    x: &[usize],
    b: &[usize],
) -> Option<Vec<usize>> {
    match (op, x) {
        (SpOp::Spmm, [r]) if *r == k => Some(vec![m]),
        (SpOp::Spmm, [r, f]) | (SpOp::Values, [r, f]) if *r == k => {
            (matches!(op, SpOp::Spmm) || b == [nnz]).then(|| vec![m, *f])
        }
        (SpOp::Values, [r]) if *r == k && b == [nnz] => Some(vec![m]),
        (SpOp::Bias, [r, f]) if *r == k && b == [*f] => Some(vec![m, *f]),
        (SpOp::SpmmT, [n, c]) if *c == k => Some(vec![m, *n]),
        (SpOp::Dense, [r, c]) if *c == m => Some(vec![*r, k]),
        _ => None,
    }
}

fn sparse_case<T: Element>(op: SpOp, a: &Triplets, ins: &[In]) -> Result<(), TestCaseError> {
    let a = matrix::<T>(a);
    let got = exercise::<T, _>(ins, |t, h| match op {
        SpOp::Spmm => t.spmm(a, h[0]),
        SpOp::Bias => t.spmm_bias(a, h[0], h[1]),
        SpOp::Values => t.spmm_values(a, h[1], h[0]),
        SpOp::SpmmT => t.spmm_t(a, h[0]),
        SpOp::Dense => t.dense_spmm(h[0], a),
    })?;
    let want = sparse_shape(
        op,
        (a.rows(), a.cols()),
        a.nnz(),
        &ins[0].shape,
        &ins[1].shape,
    );
    match (got, want) {
        (Ok(y), Some(s)) => {
            prop_assert_eq!(y.shape(), &s[..], "{:?}", op);
            // Only stored entries make terms: an unstored one is no `0 · x` (which
            // would turn an infinite `x` into NaN).
            let cast = |v: f64| T::cst(v).to_f64().unwrap_or(f64::NAN);
            let (x, b) = (&ins[0], &ins[1]);
            let f = *y.shape().get(1).unwrap_or(&1);
            let mut w = vec![0.0; y.len()];
            let (m, k) = (a.rows(), a.cols());
            for (nz, (&v, (i, q))) in a.csr().iter().enumerate() {
                let (i, q) = (i as usize, q as usize);
                let v = match op {
                    SpOp::Values => cast(b.vals[nz]),
                    _ => v.to_f64().unwrap_or(f64::NAN),
                };
                match op {
                    SpOp::Spmm | SpOp::Bias | SpOp::Values => {
                        (0..f).for_each(|j| w[i * f + j] += v * cast(x.vals[q * f + j]))
                    }
                    SpOp::SpmmT => (0..f).for_each(|j| w[i * f + j] += v * cast(x.vals[j * k + q])),
                    SpOp::Dense => {
                        (0..y.shape()[0]).for_each(|r| w[r * k + q] += cast(x.vals[r * m + i]) * v)
                    }
                }
            }
            if matches!(op, SpOp::Bias) {
                for (p, w) in w.iter_mut().enumerate() {
                    *w += cast(b.vals[p % f]);
                }
            }
            let single = x.vals.iter().filter(|v| !v.is_finite()).count() <= 1;
            for (&g, &w) in y.iter().zip(&w) {
                let (g, w) = (g.to_f64().unwrap_or(f64::NAN), cast(w));
                prop_assert!(
                    agrees(g, w, 1e-4) || !single || (w.is_finite() && w.abs() > 1e29),
                    "{:?}: {} against {}",
                    op,
                    g,
                    w
                );
            }
        }
        (Err(_), None) => {}
        (got, want) => {
            let got = got.map(|y| y.shape().to_vec());
            prop_assert!(
                false,
                "{:?} of {:?} on {:?}, {:?}: {:?}, expected {:?}",
                op,
                (a.rows(), a.cols()),
                ins[0].shape,
                ins[1].shape,
                got,
                want
            );
        }
    }
    Ok(())
}

fn sparse_input() -> impl Strategy<Value = (SpOp, Triplets, [In; 2])> {
    let ops = vec![
        SpOp::Spmm,
        SpOp::Bias,
        SpOp::Values,
        SpOp::SpmmT,
        SpOp::Dense,
    ];
    (
        prop::sample::select(ops),
        sparse(),
        any::<bool>(),
        0..4usize,
    )
        .prop_flat_map(|(op, a, clean, f)| {
            let (m, k) = (a.0, a.1);
            let nnz = {
                let mut cells: Vec<_> = a.2.iter().map(|&(i, j, _)| (i, j)).collect();
                cells.sort_unstable();
                cells.dedup();
                cells.len()
            };
            let x = prop_oneof![
                Just(vec![k, f]),
                Just(vec![k]),
                Just(vec![f, k]),
                Just(vec![f, m]),
                shape()
            ];
            let b = prop_oneof![Just(vec![f]), Just(vec![nnz]), shape()];
            (
                Just(op),
                Just(a),
                x.prop_flat_map(move |s| input(s, clean)),
                b.prop_flat_map(move |s| input(s, clean)),
            )
                .prop_map(|(op, a, x, b)| (op, a, [x, b]))
        })
}

/// A coordinate list and its values: `rows < n`, `cols < m` mostly.
#[derive(Clone, Debug)]
struct Coo {
    rows: Vec<usize>,
    cols: Vec<usize>,
    n: usize,
    v: In,
    x: In,
}

fn coo_input() -> impl Strategy<Value = Coo> {
    (
        0..5usize,
        1..3usize,
        0..4usize,
        0..3usize,
        segments(),
        any::<bool>(),
    )
        .prop_flat_map(|(k, g, m, c, n, clean)| {
            let vs = prop_oneof![Just(vec![k, g]), Just(vec![k]), shape()];
            let xs = prop_oneof![3 => Just(vec![m, g * c]), 1 => shape()];
            (
                prop::collection::vec(index(), k),
                prop::collection::vec(index(), k),
                Just(n),
                vs.prop_flat_map(move |s| input(s, clean)),
                xs.prop_flat_map(move |s| input(s, clean)),
            )
                .prop_map(|(rows, cols, n, v, x)| Coo {
                    rows,
                    cols,
                    n,
                    v,
                    x,
                })
        })
}

fn coo_shape(c: &Coo) -> Option<Vec<usize>> {
    let k = c.rows.len();
    let g = match c.v.shape[..] {
        [kk] if kk == k => 1,
        [kk, g] if kk == k && g > 0 => g,
        _ => return None,
    };
    let [m, f] = c.x.shape[..] else { return None };
    (f % g == 0
        && c.rows.iter().all(|&r| r < c.n)
        && c.cols.iter().all(|&q| q < m)
        && c.n.checked_mul(f.max(1)).is_some_and(|z| z < 1 << 32))
    .then(|| vec![c.n, f])
}

fn coo_case<T: Element, I: IndexType>(
    c: &Coo,
    rows: &'static [I],
    cols: &'static [I],
) -> Result<(), TestCaseError> {
    let got = exercise::<T, _>(&[c.v.clone(), c.x.clone()], |t, h| {
        t.coo_spmm(rows, cols, c.n, h[0], h[1])
    })?;
    match (got, coo_shape(c)) {
        (Ok(y), Some(s)) => prop_assert_eq!(y.shape(), &s[..]),
        (Err(_), None) => {}
        (got, want) => prop_assert!(
            false,
            "coo_spmm {:?}: {:?}, expected {:?}",
            c,
            got.map(|y| y.shape().to_vec()),
            want
        ),
    }
    Ok(())
}

/// A symmetric normalisation's structure, in range or not.
#[derive(Clone, Debug)]
struct Norm {
    rows: Vec<usize>,
    cols: Vec<usize>,
    from: Vec<Option<usize>>,
    entry: Vec<usize>,
    num_entries: usize,
    num_nodes: usize,
    fill: f64,
    normalize: bool,
    w: In,
}

fn norm_input() -> impl Strategy<Value = Norm> {
    (
        0..5usize,
        0..4usize,
        any::<bool>(),
        prop::option::weighted(0.2, 0..6usize),
    )
        .prop_flat_map(|(k, wl, clean, other)| {
            let len = other.unwrap_or(k);
            (
                prop::collection::vec(index(), k),
                prop::collection::vec(index(), len),
                prop::collection::vec(
                    prop::option::of(prop_oneof![4 => 0..wl.max(1), 1 => Just(usize::MAX)]),
                    k,
                ),
                prop::collection::vec(index(), len),
                prop_oneof![0..5usize, Just(1usize << 62)],
                prop_oneof![0..5usize, Just(1usize << 62)],
                prop_oneof![Just(1.0), Just(0.0), Just(f64::NAN), Just(-1.0)],
                any::<bool>(),
                input(vec![wl], clean),
            )
                .prop_map(
                    |(rows, cols, from, entry, num_entries, num_nodes, fill, normalize, w)| Norm {
                        rows,
                        cols,
                        from,
                        entry,
                        num_entries,
                        num_nodes,
                        fill,
                        normalize,
                        w,
                    },
                )
        })
}

fn norm_shape(s: &Norm) -> Option<Vec<usize>> {
    let k = s.rows.len();
    let ok = s.cols.len() == k
        && s.entry.len() == k
        && s.rows.iter().chain(&s.cols).all(|&i| i < s.num_nodes)
        && s.entry.iter().all(|&e| e < s.num_entries)
        && s.from.iter().flatten().all(|&i| i < s.w.vals.len())
        && s.num_nodes < 1 << 32
        && s.num_entries < 1 << 32;
    ok.then(|| vec![s.num_entries])
}

fn norm_case<T: Element, I: IndexType>(
    s: &'static Norm,
    rows: &'static [I],
    cols: &'static [I],
) -> Result<(), TestCaseError> {
    let got = exercise::<T, _>(std::slice::from_ref(&s.w), |t, h| {
        let sn = SymNorm {
            rows,
            cols,
            from: &s.from,
            fill: s.fill,
            entry: &s.entry,
            num_entries: s.num_entries,
            num_nodes: s.num_nodes,
            normalize: s.normalize,
        };
        t.sym_norm_values(h[0], sn)
    })?;
    match (got, norm_shape(s)) {
        (Ok(y), Some(sh)) => prop_assert_eq!(y.shape(), &sh[..]),
        (Err(_), None) => {}
        (got, want) => prop_assert!(
            false,
            "sym_norm_values {:?}: {:?}, expected {:?}",
            s,
            got.map(|y| y.shape().to_vec()),
            want
        ),
    }
    Ok(())
}

fn u32s(v: &[usize]) -> &'static [u32] {
    leak(
        v.iter()
            .map(|&i| u32::try_from(i).unwrap_or(u32::MAX))
            .collect(),
    )
}

/// A misbehaving custom rule: its forward fails or gives another shape, its adjoint
/// or tangent has the wrong shape, or it behaves.
#[derive(Clone, Copy, Debug)]
enum Bad {
    Fine,
    ForwardErr,
    WrongAdjoint,
    WrongTangent,
}

impl<T: Element> TensorRule<T> for Bad {
    fn name(&self) -> &'static str {
        "bad"
    }
    fn forward(&self, x: &[ArrayViewD<'_, T>]) -> AdResult<ArrayD<T>> {
        match self {
            Bad::ForwardErr => Err(AdError::InvalidArgument {
                op: "bad",
                what: "refused".into(),
            }),
            _ => Ok(x[0].mapv(|v| v * v)),
        }
    }
    fn vjp(
        &self,
        x: &[ArrayViewD<'_, T>],
        _: ArrayViewD<'_, T>,
        g: ArrayViewD<'_, T>,
        _: usize,
        mut dx: RuleSlot<'_, T>,
    ) -> AdResult<()> {
        match self {
            Bad::WrongAdjoint => dx.add(&ArrayD::<T>::zeros(IxDyn(&[x[0].len() + 1]))),
            _ => dx.add(&(&g * &x[0].mapv(|v| v + v))),
        }
    }
    fn jvp(
        &self,
        x: &[ArrayViewD<'_, T>],
        _: ArrayViewD<'_, T>,
        t: &[Option<ArrayViewD<'_, T>>],
        mut ty: RuleSlot<'_, T>,
    ) -> AdResult<()> {
        match (self, &t[0]) {
            (Bad::WrongTangent, _) => ty.assign(&ArrayD::<T>::zeros(IxDyn(&[7]))),
            (_, Some(t)) => ty.assign(&(t * &x[0].mapv(|v| v + v))),
            (_, None) => Ok(()),
        }
    }
}

/// A program and every mode of it: no panic, and an error coded; then the same
/// storage gives a fresh tape's bits.
fn custom_case<T: Element>(bad: Bad, x: &In) -> Result<(), TestCaseError> {
    let xs = x.build::<T>();
    let prog = |t: &mut Tape<'_, T>, h: Vec<Var>| {
        let y = t.custom(bad, &[h[0]])?;
        t.sum(y)
    };
    let mut bufs = TapeBuffers::new();
    let mut dx = x.zeros::<T>();
    let r = no_panic("custom reverse", || {
        tensor::pullback(
            &mut bufs,
            prog,
            vec![Arg::D(&xs, &mut dx)],
            &ArrayD::from_elem(IxDyn(&[]), T::one()),
        )
    })?;
    let mut tx = x.zeros::<T>();
    let f = no_panic("custom forward", || {
        tensor::pushforward(&mut bufs, prog, vec![Arg::D(&xs, &mut tx)])
    })?;
    let codes = (r.err().map(|e| e.code()), f.err().map(|e| e.code()));
    let want = match bad {
        Bad::Fine => (None, None),
        Bad::ForwardErr => (Some("SHADE-E0114"), Some("SHADE-E0114")),
        Bad::WrongAdjoint => (Some("SHADE-E0116"), None),
        Bad::WrongTangent => (None, Some("SHADE-E0116")),
    };
    prop_assert_eq!(codes, want, "{:?}", bad);
    let mut d1 = x.zeros::<T>();
    let fine = |t: &mut Tape<'_, T>, h: Vec<Var>| {
        let y = t.custom(Bad::Fine, &[h[0]])?;
        t.sum(y)
    };
    tensor::pullback(
        &mut bufs,
        fine,
        vec![Arg::D(&xs, &mut d1)],
        &ArrayD::from_elem(IxDyn(&[]), T::one()),
    )
    .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut d0 = x.zeros::<T>();
    tensor::pullback(
        &mut TapeBuffers::new(),
        fine,
        vec![Arg::D(&xs, &mut d0)],
        &ArrayD::from_elem(IxDyn(&[]), T::one()),
    )
    .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert!(
        d0.iter()
            .zip(d1.iter())
            .all(|(a, b)| a == b || (a.is_nan() && b.is_nan())),
        "storage after a rule's error differs"
    );
    Ok(())
}

/// A CSR structure from its arrays, any of them wrong: the checked constructor, then
/// the products outside a tape into `out` of any shape and layout.
fn csr_case<T: Element>(
    shape: (usize, usize),
    indptr: &[usize],
    indices: &[usize],
    data: &[f64],
    x: &In,
    out: &In,
    transposed: bool,
) -> Result<(), TestCaseError> {
    let data: Vec<T> = data.iter().map(|&v| T::cst(v)).collect();
    let a = no_panic("try_from_csr", || {
        SparseMatrix::try_from_csr(shape, indptr.to_vec(), indices.to_vec(), data)
    })?;
    let a = match a {
        Ok(a) => a,
        Err(e) => {
            prop_assert_eq!(e.code(), "SHADE-E0114", "{}", e);
            return Ok(());
        }
    };
    prop_assert_eq!(
        (a.rows(), a.cols(), a.nnz()),
        (shape.0, shape.1, indices.len())
    );
    let (xs, mut o) = (x.build::<T>(), out.build::<T>());
    let (Ok(xv), Ok(ov)) = (
        xs.view().into_dimensionality::<ndarray::Ix2>(),
        o.view_mut().into_dimensionality::<ndarray::Ix2>(),
    ) else {
        return Ok(());
    };
    let before = ov.to_owned();
    let r = no_panic("product into", || {
        if transposed {
            a.transpose_mul_dense_into(xv, ov)
        } else {
            a.mul_dense_into(xv, ov)
        }
    })?;
    let (m, k) = if transposed {
        (a.cols(), a.rows())
    } else {
        (a.rows(), a.cols())
    };
    let fits = x.shape == [k, out.shape[1]] && out.shape[0] == m;
    let standard = xs.is_standard_layout() && o.is_standard_layout();
    match r {
        Ok(()) => {
            prop_assert!(
                fits,
                "a product into {:?} from {:?} for {:?}",
                out.shape,
                x.shape,
                shape
            );
            let d = a.csr().to_dense();
            let d = if transposed { d.t().to_owned() } else { d };
            let want = &before
                + &d.dot(
                    &xs.view()
                        .into_dimensionality::<ndarray::Ix2>()
                        .expect("2-D"),
                );
            for (&g, &w) in o.iter().zip(want.iter()) {
                let (g, w) = (
                    g.to_f64().unwrap_or(f64::NAN),
                    w.to_f64().unwrap_or(f64::NAN),
                );
                prop_assert!(agrees(g, w, 1e-4) || !w.is_finite(), "{} against {}", g, w);
            }
        }
        Err(e) => {
            prop_assert_eq!(e.code(), "SHADE-E0110", "{}", e);
            prop_assert!(
                !fits || !standard,
                "refused {:?} from {:?}: {}",
                out.shape,
                x.shape,
                e
            );
            prop_assert!(
                o.iter()
                    .zip(before.iter())
                    .all(|(a, b)| a == b || a.is_nan() && b.is_nan())
            );
        }
    }
    Ok(())
}

type CsrCase = (
    (usize, usize),
    Vec<usize>,
    Vec<usize>,
    Vec<f64>,
    In,
    In,
    bool,
);

/// A CSR structure (valid, from random cells, or random arrays with huge entries)
/// and the operands of a product with it (fitting, or of any shape).
fn csr_input() -> impl Strategy<Value = CsrCase> {
    let valid = sparse().prop_map(|(r, c, ts)| {
        let mut cells: Vec<(usize, usize)> = ts.iter().map(|&(i, j, _)| (i, j)).collect();
        cells.sort_unstable();
        cells.dedup();
        let indptr = (0..=r)
            .map(|i| cells.iter().filter(|&&(ri, _)| ri < i).count())
            .collect();
        let indices: Vec<usize> = cells.iter().map(|&(_, j)| j).collect();
        let data = (0..indices.len()).map(|i| i as f64 * 0.5 - 1.0).collect();
        ((r, c), indptr, indices, data)
    });
    let wild = (
        (
            prop_oneof![4 => 0..4usize, 1 => Just(1usize << 40)],
            0..4usize,
        ),
        prop::collection::vec(prop_oneof![4 => 0..5usize, 1 => Just(usize::MAX)], 0..6),
        prop::collection::vec(
            prop_oneof![4 => 0..4usize, 1 => Just(u32::MAX as usize + 1)],
            0..5,
        ),
        prop::collection::vec(-2.0..2.0f64, 0..6),
    );
    (prop_oneof![3 => valid, 1 => wild], 0..4usize, any::<bool>()).prop_flat_map(|(csr, f, transposed)| {
        let (r, c) = csr.0;
        let (k, m) = if transposed { (r, c) } else { (c, r) };
        let (k, m) = (k.min(4), m.min(4));
        let xs = prop_oneof![3 => Just(vec![k, f]), 1 => (0..4usize, 0..4usize).prop_map(|(a, b)| vec![a, b])];
        let os = prop_oneof![3 => Just(vec![m, f]), 1 => (0..4usize, 0..4usize).prop_map(|(a, b)| vec![a, b])];
        let (shape, indptr, indices, data) = csr;
        (
            Just(shape), Just(indptr), Just(indices), Just(data),
            xs.prop_flat_map(|s| input(s, false)),
            os.prop_flat_map(|s| input(s, false)),
            Just(transposed),
        )
    })
}

proptest! {
    #![proptest_config(cases(48))]

    #[test]
    fn csr_structures((shape, indptr, indices, data, x, out, transposed) in csr_input()) {
        csr_case::<f64>(shape, &indptr, &indices, &data, &x, &out, transposed)?;
        csr_case::<f32>(shape, &indptr, &indices, &data, &x, &out, transposed)?;
    }

    #[test]
    fn index_ops((op, x, idx, n, clean) in index_input(), seed in any::<u64>()) {
        let wide = leak(idx.clone());
        let narrow = u32s(&idx);
        index_case::<f64, usize>(op, &x, wide, n, 1e-12)?;
        index_case::<f32, usize>(op, &x, wide, n, 1e-5)?;
        if idx.iter().all(|&i| i <= u32::MAX as usize) {
            index_case::<f64, u32>(op, &x, narrow, n, 1e-12)?;
        }
        if clean && index_shape(op, &x.shape, &idx, n).is_some() {
            let xs = x.build::<f64>();
            if !matches!(op, IndexOp::Max) || x.shape.len() == 2 && no_near_ties_in_segments(&xs, &idx) {
                check_op(&[xs], seed, |t, h| op.run(t, h[0], wide, n))?;
            }
        }
    }

    #[test]
    fn sparse_ops((op, a, ins) in sparse_input(), seed in any::<u64>()) {
        sparse_case::<f64>(op, &a, &ins)?;
        sparse_case::<f32>(op, &a, &ins)?;
        let m = matrix::<f64>(&a);
        if ins.iter().all(In::finite) && sparse_shape(op, (m.rows(), m.cols()), m.nnz(), &ins[0].shape, &ins[1].shape).is_some() {
            let xs: Vec<ArrayD<f64>> = ins.iter().map(In::build).collect();
            check_op(&xs, seed, |t, h| match op {
                SpOp::Spmm => t.spmm(m, h[0]),
                SpOp::Bias => t.spmm_bias(m, h[0], h[1]),
                SpOp::Values => t.spmm_values(m, h[1], h[0]),
                SpOp::SpmmT => t.spmm_t(m, h[0]),
                SpOp::Dense => t.dense_spmm(h[0], m),
            })?;
        }
    }

    #[test]
    fn coordinate_lists(c in coo_input(), s in norm_input(), seed in any::<u64>()) {
        let (rows, cols) = (leak(c.rows.clone()), leak(c.cols.clone()));
        coo_case::<f64, usize>(&c, rows, cols)?;
        coo_case::<f32, u32>(&c, u32s(&c.rows), u32s(&c.cols))?;
        if coo_shape(&c).is_some() && c.v.finite() && c.x.finite() {
            let xs = [c.v.build::<f64>(), c.x.build::<f64>()];
            check_op(&xs, seed, |t, h| t.coo_spmm(rows, cols, c.n, h[0], h[1]))?;
        }
        let s: &'static Norm = Box::leak(Box::new(s));
        norm_case::<f64, usize>(s, &s.rows, &s.cols)?;
        norm_case::<f32, u32>(s, u32s(&s.rows), u32s(&s.cols))?;
    }

    #[test]
    fn losses(x in shape().prop_flat_map(|s| input(s, false)), labels in indices(3), kind in 0..3u8,
              mask in prop::collection::vec(any::<bool>(), 0..5), sel in indices(3)) {
        let (labels, mask, sel) = (leak(labels), leak(mask), leak(sel));
        let rows = match kind { 0 => Rows::All, 1 => Rows::Mask(mask), _ => Rows::Index(sel) };
        let (n, c) = match x.shape[..] { [n, c] => (n, c), _ => (0, 0) };
        let picked = match rows { Rows::All => n, Rows::Mask(m) => m.iter().filter(|&&b| b).count(), Rows::Index(i) => i.len() };
        // Only the selected rows' labels are read (an unlabelled row may hold anything).
        let sel_ok = match rows { Rows::Mask(m) => m.len() == n, Rows::Index(i) => i.iter().all(|&r| r < n), Rows::All => true };
        let chosen: Vec<usize> = match rows {
            Rows::All => (0..n).collect(),
            Rows::Mask(m) => (0..m.len()).filter(|&i| m[i]).collect(),
            Rows::Index(i) => i.to_vec(),
        };
        let ok = x.shape.len() == 2 && labels.len() == n && sel_ok && picked > 0
            && chosen.iter().all(|&r| labels[r] < c);
        for nll in [false, true] {
            let got = exercise::<f64, _>(std::slice::from_ref(&x), |t, h| if nll { t.nll(h[0], labels, rows) } else { t.cross_entropy(h[0], labels, rows) })?;
            prop_assert_eq!(got.as_ref().map(|y| y.shape().to_vec()).ok(), ok.then(Vec::new), "nll {} on {:?}, labels {:?}, {:?}", nll, x.shape, labels, rows);
            let _ = exercise::<f32, _>(std::slice::from_ref(&x), |t, h| if nll { t.nll(h[0], labels, rows) } else { t.cross_entropy(h[0], labels, rows) })?;
        }
    }

    #[test]
    fn dropout(x in shape().prop_flat_map(|s| input(s, false)), p in prop::sample::select(vec![0.0, 0.5, 1.0, -0.1, f64::NAN, 1.5, 0.999]), training in any::<bool>()) {
        let prog = |t: &mut Tape<'_, f64>, h: &[Var]| t.dropout(h[0], p, &mut StdRng::seed_from_u64(7), training);
        let got = exercise::<f64, _>(std::slice::from_ref(&x), prog)?;
        let _ = exercise::<f32, _>(std::slice::from_ref(&x), |t, h| t.dropout(h[0], p, &mut StdRng::seed_from_u64(7), training))?;
        let valid = (0.0..=1.0).contains(&p);
        prop_assert_eq!(got.is_ok(), valid, "p = {}", p);
        if let Ok(y) = got {
            prop_assert_eq!(y.shape(), &x.shape[..]);
            let k = if training && p < 1.0 { 1.0 / (1.0 - p) } else { 1.0 };
            for (&v, &y) in x.vals.iter().zip(y.iter()) {
                let kept = !training || p == 0.0;
                // A dropped element is `x · 0`: zero, NaN for an infinite or NaN `x`.
                let dropped = !kept && (y == 0.0 || !v.is_finite() && y.is_nan());
                prop_assert!(dropped || agrees(y, v * k, 1e-12), "dropout p = {}: {} -> {}", p, v, y);
            }
        }
    }

    #[test]
    fn custom_rules(x in shape().prop_flat_map(|s| input(s, false)), bad in prop::sample::select(vec![Bad::Fine, Bad::ForwardErr, Bad::WrongAdjoint, Bad::WrongTangent])) {
        custom_case::<f64>(bad, &x)?;
        custom_case::<f32>(bad, &x)?;
    }
}
/// A segment's maximum is NaN when the segment holds one, before or after its other
/// rows (it took NaN only from a segment's first row), as `max` of a whole value; the
/// adjoint goes to that NaN.
#[test]
fn scatter_max_takes_nan_wherever_it_stands() {
    let x = ndarray::array![1.0, f64::NAN, f64::NAN, 1.0].into_dyn();
    let mut dx = ndarray::ArrayD::zeros(IxDyn(&[4]));
    let idx = [0usize, 0, 1, 1];
    let seed = ndarray::array![1.0, 2.0].into_dyn();
    let y = tensor::value(
        &mut TapeBuffers::new(),
        |t, (x,)| t.scatter_max(x, &idx[..], 2),
        (shade_autodiff::Const(&x),),
    )
    .unwrap();
    assert!(y.iter().all(|v| v.is_nan()), "{y}");
    tensor::pullback(
        &mut TapeBuffers::new(),
        |t, (x,)| t.scatter_max(x, &idx[..], 2),
        (shade_autodiff::Duplicated(&x, &mut dx),),
        &seed,
    )
    .unwrap();
    assert_eq!(
        dx.iter().copied().collect::<Vec<_>>(),
        vec![0.0, 1.0, 2.0, 0.0]
    );
}

/// A small matrix with many nonzeros (its products on the dense copy) times a value
/// holding NaN or an infinity: the entries it does not store make no term, so a row
/// that stores nothing against the NaN stays finite, in the value and in the gradient
/// (the dense copy's `0 · NaN` made it NaN).
#[test]
fn dense_path_adds_no_term_for_unstored_entries() {
    // [[0, 2, 0], [1, 0, 3], [4, 0, 5]]: 5 of 9 entries stored.
    let a = SparseMatrix::try_from_csr(
        (3, 3),
        vec![0, 1, 3, 5],
        vec![1, 0, 2, 0, 2],
        vec![2.0, 1.0, 3.0, 4.0, 5.0],
    )
    .unwrap();
    for bad in [f64::NAN, f64::INFINITY] {
        let x = ndarray::array![[1.0], [1.0], [bad]].into_dyn();
        let y = tensor::value(
            &mut TapeBuffers::new(),
            |t, (x,)| t.spmm(&a, x),
            (shade_autodiff::Const(&x),),
        )
        .unwrap();
        assert_eq!(y[[0, 0]], 2.0, "{y}");
        // dX = Aᵀ G with G infinite in row 1 only: column 1 of A stores row 0 alone.
        let g = ndarray::array![[0.0], [bad], [0.0]].into_dyn();
        let mut dx = ndarray::ArrayD::zeros(IxDyn(&[3, 1]));
        tensor::pullback(
            &mut TapeBuffers::new(),
            |t, (x,)| t.spmm(&a, x),
            (shade_autodiff::Duplicated(&x, &mut dx),),
            &g,
        )
        .unwrap();
        assert_eq!(dx[[1, 0]], 0.0, "{dx}");
    }
}

/// `clamp` keeps NaN (it gave `lo`: a NaN made a number, as no other map does).
#[test]
fn clamp_keeps_nan() {
    let x = ndarray::array![f64::NAN, 3.0, -3.0].into_dyn();
    let c = shade_autodiff::Const(&x);
    let y = tensor::value(
        &mut TapeBuffers::new(),
        |t, (x,)| t.clamp(x, -1.0, 1.0),
        (c,),
    );
    let y: Vec<f64> = y.unwrap().iter().copied().collect();
    assert!(y[0].is_nan() && y[1..] == [1.0, -1.0], "{y:?}");
}
