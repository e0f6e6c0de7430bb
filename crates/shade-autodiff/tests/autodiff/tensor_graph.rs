//! Gradient checks for losses, graph indexing (gather, scatter, segment softmax),
//! sparse × dense products, coordinate-list products (`coo_spmm`, `sym_norm_values`),
//! `group_dot`, dropout and custom rules; plus dense references.

use crate::check::{arr, cases, check_op, mat, no_near_ties_in_segments};
use ndarray::{Array1, Array2, ArrayD, array};
use proptest::prelude::*;
use rand::SeedableRng;
use rand::rngs::StdRng;
use shade_autodiff::tensor::{self, Rows, SparseMatrix, SymNorm, TapeBuffers};
use shade_autodiff::{Const, Duplicated};

pub(crate) fn leak<T>(v: Vec<T>) -> &'static [T] {
    Box::leak(v.into_boxed_slice())
}

/// `idx` as `u32` (the width of a graph's edge lists), kept for the test's lifetime.
pub(crate) fn leak_u32(idx: &[usize]) -> &'static [u32] {
    leak(idx.iter().map(|&i| u32::try_from(i).unwrap()).collect())
}

/// Logits `[n, c]`, labels, and a selection (all rows, a mask, or indices with repeats).
fn classification() -> impl Strategy<Value = (ArrayD<f64>, Vec<usize>, u8, Vec<bool>, Vec<usize>)> {
    (1..6usize, 1..5usize).prop_flat_map(|(n, c)| {
        (
            arr(vec![n, c], -3.0, 3.0),
            prop::collection::vec(0..c, n),
            0..3u8,
            prop::collection::vec(any::<bool>(), n).prop_map(|mut m| {
                m[0] = true;
                m
            }),
            prop::collection::vec(0..n, 1..8),
        )
    })
}

fn rows_of(kind: u8, mask: &'static [bool], idx: &'static [usize]) -> Rows<'static> {
    match kind {
        0 => Rows::All,
        1 => Rows::Mask(mask),
        _ => Rows::Index(idx),
    }
}

/// Source rows `[e, f]`, a segment index per row with repeats, and a number of
/// segments larger than needed (isolated nodes); `e` may be 0.
pub(crate) fn segments() -> impl Strategy<Value = (ArrayD<f64>, Vec<usize>, usize)> {
    (0..7usize, 1..4usize, 1..6usize).prop_flat_map(|(e, f, n)| {
        (
            arr(vec![e, f], -2.0, 2.0),
            prop::collection::vec(0..n, e),
            Just(n + 1),
        )
    })
}

/// A random sparse matrix `[r, c]` (duplicates summed), as CSR.
fn sparse(max: usize) -> impl Strategy<Value = SparseMatrix<f64>> {
    (1..=max, 1..=max).prop_flat_map(|(r, c)| {
        prop::collection::vec((0..r, 0..c, -2.0..2.0f64), 0..(r * c + 2)).prop_map(move |ts| {
            let mut tri = sprs::TriMatI::<_, u32>::new((r, c));
            for (i, j, v) in ts {
                tri.add_triplet(i, j, v);
            }
            SparseMatrix::new(tri.to_csr())
        })
    })
}

fn dense(a: &SparseMatrix<f64>) -> Array2<f64> {
    a.csr().to_dense()
}

/// The leading square block of `a` (`n × n`, kept for the test's lifetime) and node
/// features `[n, 3]`, for the GCN-shaped programs.
fn square_with_features(a: &SparseMatrix<f64>) -> (&'static SparseMatrix<f64>, usize, ArrayD<f64>) {
    let n = a.rows().min(a.cols());
    let d = dense(a);
    let s = d.slice(ndarray::s![..n, ..n]).to_owned();
    let sq = SparseMatrix::new(sprs::CsMatI::csr_from_dense(s.view(), 0.0));
    let x = ArrayD::from_shape_fn(vec![n, 3], |i| (i[0] + 2 * i[1]) as f64 * 0.2 - 0.5);
    (Box::leak(Box::new(sq)), n, x)
}

proptest! {
    #![proptest_config(cases(64))]

    #[test]
    fn cross_entropy((x, y, k, m, i) in classification(), seed in any::<u64>()) {
        let (y, m, i) = (leak(y), leak(m), leak(i));
        check_op(&[x], seed, move |t, v| t.cross_entropy(v[0], y, rows_of(k, m, i)))?;
    }

    #[test]
    fn nll((x, y, k, m, i) in classification(), seed in any::<u64>()) {
        let (y, m, i) = (leak(y), leak(m), leak(i));
        check_op(&[x], seed, move |t, v| {
            let l = t.log_softmax(v[0], 1)?;
            t.nll(l, y, rows_of(k, m, i))
        })?;
    }

    #[test]
    fn mse(a in mat(4), seed in any::<u64>()) {
        let b = a.mapv(|x| (x * 3.0).cos());
        check_op(&[a, b], seed, |t, v| t.mse(v[0], v[1]))?;
    }

    #[test]
    fn bce_with_logits(a in mat(4), seed in any::<u64>()) {
        let b = a.mapv(|x| (x * 3.0).cos() * 0.5 + 0.5);
        check_op(&[a.mapv(|x| x * 10.0), b], seed, |t, v| t.bce_with_logits(v[0], v[1]))?;
    }

    #[test]
    fn index_select(x in mat(4), raw in prop::collection::vec(0..100usize, 0..7), seed in any::<u64>()) {
        let n = x.shape()[0];
        let idx = leak(raw.into_iter().map(|i| i % n).collect());
        check_op(std::slice::from_ref(&x), seed, move |t, v| t.index_select(v[0], idx))?;
        let idx = leak_u32(idx);
        check_op(&[x], seed, move |t, v| t.index_select(v[0], idx))?;
    }

    /// With indices the tape owns: the same values and rules as with borrowed ones.
    #[test]
    fn index_select_owned(x in mat(4), raw in prop::collection::vec(0..100usize, 0..7), seed in any::<u64>()) {
        let n = x.shape()[0];
        let idx: Vec<usize> = raw.into_iter().map(|i| i % n).collect();
        let owned = idx.clone();
        let y = tensor::value(&mut TapeBuffers::new(), |t, (x,)| t.index_select_owned(x, owned), (Const(&x),)).unwrap();
        prop_assert_eq!(y, x.select(ndarray::Axis(0), &idx));
        check_op(&[x], seed, move |t, v| t.index_select_owned(v[0], idx.clone()))?;
    }

    #[test]
    fn scatter_add((x, idx, n) in segments(), seed in any::<u64>()) {
        let idx = leak(idx);
        check_op(std::slice::from_ref(&x), seed, move |t, v| t.scatter_add(v[0], idx, n))?;
        let idx = leak_u32(idx);
        check_op(&[x], seed, move |t, v| t.scatter_add(v[0], idx, n))?;
    }

    #[test]
    fn scatter_mean((x, idx, n) in segments(), seed in any::<u64>()) {
        let idx = leak(idx);
        check_op(std::slice::from_ref(&x), seed, move |t, v| t.scatter_mean(v[0], idx, n))?;
        let idx = leak_u32(idx);
        check_op(&[x], seed, move |t, v| t.scatter_mean(v[0], idx, n))?;
    }

    #[test]
    fn scatter_max((x, idx, n) in segments(), seed in any::<u64>()) {
        prop_assume!(no_near_ties_in_segments(&x, &idx));
        let idx = leak(idx);
        check_op(std::slice::from_ref(&x), seed, move |t, v| t.scatter_max(v[0], idx, n))?;
        let idx = leak_u32(idx);
        check_op(&[x], seed, move |t, v| t.scatter_max(v[0], idx, n))?;
    }

    #[test]
    fn segment_softmax((x, idx, n) in segments(), seed in any::<u64>()) {
        let idx = leak(idx);
        check_op(std::slice::from_ref(&x), seed, move |t, v| t.segment_softmax(v[0], idx, n))?;
        let idx = leak_u32(idx);
        check_op(&[x], seed, move |t, v| t.segment_softmax(v[0], idx, n))?;
    }

    #[test]
    fn segment_softmax_one_head((x, idx, n) in segments(), seed in any::<u64>()) {
        let e = x.shape()[0];
        let s = x.index_axis(ndarray::Axis(1), 0).to_owned();
        let idx = leak(idx);
        prop_assert_eq!(s.len(), e);
        check_op(&[s], seed, move |t, v| t.segment_softmax(v[0], idx, n))?;
    }

    #[test]
    fn spmm(a in sparse(5), f in 1..4usize, seed in any::<u64>()) {
        let x = ArrayD::from_shape_fn(vec![a.cols(), f], |i| (i[0] * 7 + i[1] * 3) as f64 * 0.1 - 0.5);
        let reference = dense(&a).dot(&x.view().into_dimensionality::<ndarray::Ix2>().unwrap());
        let a: &'static SparseMatrix<f64> = Box::leak(Box::new(a));
        let mut b = TapeBuffers::new();
        let y = tensor::value(&mut b, |t, (x,)| t.spmm(a, x), (Const(&x),)).unwrap();
        prop_assert!((y - reference.into_dyn()).iter().all(|d| d.abs() < 1e-12));
        check_op(&[x], seed, move |t, v| t.spmm(a, v[0]))?;
    }

    /// `A · X + b` against the dense reference, and its rules (for `X` and `b`).
    #[test]
    fn spmm_bias(a in sparse(5), f in 1..4usize, seed in any::<u64>()) {
        let x = ArrayD::from_shape_fn(vec![a.cols(), f], |i| (i[0] * 7 + i[1] * 3) as f64 * 0.1 - 0.5);
        let bias = ArrayD::from_shape_fn(vec![f], |i| i[0] as f64 * 0.4 - 0.3);
        let b1 = bias.view().into_dimensionality::<ndarray::Ix1>().unwrap();
        let reference = dense(&a).dot(&x.view().into_dimensionality::<ndarray::Ix2>().unwrap()) + b1;
        let a: &'static SparseMatrix<f64> = Box::leak(Box::new(a));
        let mut b = TapeBuffers::new();
        let y = tensor::value(&mut b, |t, (x, c)| t.spmm_bias(a, x, c), (Const(&x), Const(&bias))).unwrap();
        prop_assert!((y - reference.into_dyn()).iter().all(|d| d.abs() < 1e-12));
        check_op(&[x, bias], seed, move |t, v| t.spmm_bias(a, v[0], v[1]))?;
    }

    #[test]
    fn spmm_vector(a in sparse(5), seed in any::<u64>()) {
        let x = ArrayD::from_shape_fn(vec![a.cols()], |i| i[0] as f64 * 0.3 - 0.4);
        let a: &'static SparseMatrix<f64> = Box::leak(Box::new(a));
        check_op(&[x], seed, move |t, v| t.spmm(a, v[0]))?;
    }

    #[test]
    fn dense_spmm(a in sparse(5), m in 1..4usize, seed in any::<u64>()) {
        let x = ArrayD::from_shape_fn(vec![m, a.rows()], |i| (i[0] * 5 + i[1]) as f64 * 0.1 - 0.3);
        let reference = x.view().into_dimensionality::<ndarray::Ix2>().unwrap().dot(&dense(&a));
        let a: &'static SparseMatrix<f64> = Box::leak(Box::new(a));
        let mut b = TapeBuffers::new();
        let y = tensor::value(&mut b, |t, (x,)| t.dense_spmm(x, a), (Const(&x),)).unwrap();
        prop_assert!((y - reference.into_dyn()).iter().all(|d| d.abs() < 1e-12));
        check_op(&[x], seed, move |t, v| t.dense_spmm(v[0], a))?;
    }

    #[test]
    fn spmm_values(a in sparse(5), f in 1..4usize, seed in any::<u64>()) {
        let x = ArrayD::from_shape_fn(vec![a.cols(), f], |i| (i[0] * 7 + i[1] * 3) as f64 * 0.1 - 0.5);
        let w = ArrayD::from_shape_fn(vec![a.nnz()], |i| i[0] as f64 * 0.2 - 0.7);
        let a: &'static SparseMatrix<f64> = Box::leak(Box::new(a));
        check_op(&[w, x], seed, move |t, v| t.spmm_values(a, v[0], v[1]))?;
    }

    #[test]
    fn dropout(x in mat(5), p in 0.0..0.9f64, rseed in any::<u64>(), seed in any::<u64>()) {
        check_op(&[x], seed, move |t, v| {
            let mut rng = StdRng::seed_from_u64(rseed);
            t.dropout(v[0], p, &mut rng, true)
        })?;
    }

    #[test]
    fn custom_rule(x in mat(4), seed in any::<u64>()) {
        check_op(&[x], seed, |t, v| t.custom(Cube, &[v[0]]))?;
    }

    #[test]
    fn gcn_like_program(a in sparse(5), seed in any::<u64>()) {
        // Â · relu(Â · X · W) with a bias, then a loss: many ops chained.
        let (a, n, x) = square_with_features(&a);
        let w = ArrayD::from_shape_fn(vec![3, 2], |i| (i[0] * 2 + i[1]) as f64 * 0.3 - 0.6);
        let bias = ArrayD::from_shape_fn(vec![2], |i| i[0] as f64 * 0.1);
        let labels = leak((0..n).map(|i| i % 2).collect());
        check_op(&[w, bias, x], seed, move |t, v| {
            let xw = t.matmul(v[2], v[0])?;
            let h = t.spmm(a, xw)?;
            let h = t.add(h, v[1])?;
            let h = t.tanh(h)?;
            let h = t.spmm(a, h)?;
            t.cross_entropy(h, labels, Rows::All)
        })?;
    }

    /// A two-layer GCN as shade-gnn runs it (`Â·(X·W₁) + b₁`, relu, `Â·(H·W₂) + b₂`,
    /// cross-entropy): the reverse sweep frees `X·W₁`, the pre-activation and `H·W₂`
    /// before it starts (no rule reads them) and relu's rule reads its output.
    #[test]
    fn gcn_relu_program(a in sparse(5), seed in any::<u64>()) {
        let (a, n, x) = square_with_features(&a);
        let w1 = ArrayD::from_shape_fn(vec![3, 4], |i| (i[0] * 2 + i[1]) as f64 * 0.3 - 0.6);
        let b1 = ArrayD::from_shape_fn(vec![4], |i| i[0] as f64 * 0.1 - 0.15);
        let w2 = ArrayD::from_shape_fn(vec![4, 2], |i| (i[0] + 3 * i[1]) as f64 * 0.2 - 0.4);
        let b2 = ArrayD::from_shape_fn(vec![2], |i| i[0] as f64 * 0.2);
        let labels = leak((0..n).map(|i| i % 2).collect());
        check_op(&[w1, b1, w2, b2, x], seed, move |t, v| {
            let xw = t.matmul(v[4], v[0])?;
            let h = t.spmm_bias(a, xw, v[1])?;
            let h = t.relu(h)?;
            let hw = t.matmul(h, v[2])?;
            let h = t.spmm_bias(a, hw, v[3])?;
            t.cross_entropy(h, labels, Rows::All)
        })?;
    }
}

/// Pairs `(rows[k], cols[k])` over `n` rows and `m` columns (repeats and, for a
/// square case, loops included), values `[K, G]` and `x` `[m, G·C]`; `K` may be 0.
pub(crate) fn coo_case()
-> impl Strategy<Value = (Vec<usize>, Vec<usize>, usize, ArrayD<f64>, ArrayD<f64>)> {
    (1..5usize, 1..5usize, 0..9usize, 1..3usize, 1..3usize).prop_flat_map(|(n, m, k, g, c)| {
        (
            prop::collection::vec(0..n, k),
            prop::collection::vec(0..m, k),
            Just(n),
            arr(vec![k, g], -2.0, 2.0),
            arr(vec![m, g * c], -2.0, 2.0),
        )
    })
}

/// A normalisation structure as GCN builds it: `pairs` over `n` nodes, each carrying
/// graph weight `from[k]` or the fill (an added loop), summed into the distinct
/// `(row, col)` entries (CSR order); positive weights, some nodes without pairs.
#[derive(Debug, Clone)]
pub(crate) struct NormCase {
    rows: Vec<usize>,
    cols: Vec<usize>,
    from: Vec<Option<usize>>,
    entry: Vec<usize>,
    num_entries: usize,
    n: usize,
    pub(crate) w: ArrayD<f64>,
}

pub(crate) fn norm_case() -> impl Strategy<Value = NormCase> {
    (1..6usize, 0..10usize).prop_flat_map(|(n, e)| {
        (
            prop::collection::vec((0..n, 0..n), e),
            prop::collection::vec(any::<bool>(), n),
            arr(vec![e], 0.2, 2.0),
        )
            .prop_map(move |(edges, loops, w)| {
                let mut rows: Vec<usize> = edges.iter().map(|p| p.1).collect();
                let mut cols: Vec<usize> = edges.iter().map(|p| p.0).collect();
                let mut from: Vec<Option<usize>> = (0..edges.len()).map(Some).collect();
                for (i, _) in loops.iter().enumerate().filter(|(_, l)| **l) {
                    rows.push(i);
                    cols.push(i);
                    from.push(None);
                }
                let mut keys: Vec<(usize, usize)> =
                    rows.iter().copied().zip(cols.iter().copied()).collect();
                keys.sort_unstable();
                keys.dedup();
                let entry = rows
                    .iter()
                    .zip(&cols)
                    .map(|(&r, &c)| keys.binary_search(&(r, c)).unwrap())
                    .collect();
                NormCase {
                    rows,
                    cols,
                    from,
                    entry,
                    num_entries: keys.len(),
                    n,
                    w,
                }
            })
    })
}

/// `s` with its pairs as `u32` (kept for the test's lifetime).
pub(crate) fn narrow(s: SymNorm<'static>) -> SymNorm<'static, u32> {
    SymNorm {
        rows: leak_u32(s.rows),
        cols: leak_u32(s.cols),
        from: s.from,
        fill: s.fill,
        entry: s.entry,
        num_entries: s.num_entries,
        num_nodes: s.num_nodes,
        normalize: s.normalize,
    }
}

impl NormCase {
    pub(crate) fn sym(&'static self, fill: f64, normalize: bool) -> SymNorm<'static> {
        SymNorm {
            rows: &self.rows,
            cols: &self.cols,
            from: &self.from,
            fill,
            entry: &self.entry,
            num_entries: self.num_entries,
            num_nodes: self.n,
            normalize,
        }
    }

    /// The values written from the definition with plain loops.
    fn reference(&self, fill: f64, normalize: bool) -> Vec<f64> {
        let wf: Vec<f64> = self
            .from
            .iter()
            .map(|f| f.map_or(fill, |i| self.w[[i]]))
            .collect();
        let mut deg = vec![0.0; self.n];
        for (k, &r) in self.rows.iter().enumerate() {
            deg[r] += wf[k];
        }
        let s = |i: usize| {
            if deg[i] == 0.0 {
                0.0
            } else {
                1.0 / deg[i].sqrt()
            }
        };
        let mut out = vec![0.0; self.num_entries];
        for k in 0..wf.len() {
            out[self.entry[k]] += if normalize {
                s(self.rows[k]) * wf[k] * s(self.cols[k])
            } else {
                wf[k]
            };
        }
        out
    }
}

proptest! {
    #![proptest_config(cases(64))]

    /// `coo_spmm` against the per-pair definition, and its rules against each other
    /// and finite differences.
    #[test]
    fn coo_spmm((rows, cols, n, v, x) in coo_case(), seed in any::<u64>()) {
        let (k, g) = (v.shape()[0], v.shape()[1]);
        let (m, f) = (x.shape()[0], x.shape()[1]);
        let c = f / g;
        let mut want = ArrayD::<f64>::zeros(vec![n, f]);
        for e in 0..k {
            for h in 0..g {
                for j in 0..c {
                    want[[rows[e], h * c + j]] += v[[e, h]] * x[[cols[e], h * c + j]];
                }
            }
        }
        let (rows, cols) = (leak(rows), leak(cols));
        let y = tensor::value(
            &mut TapeBuffers::new(),
            |t, (v, x)| t.coo_spmm(rows, cols, n, v, x),
            (Const(&v), Const(&x)),
        )
        .unwrap();
        prop_assert!((y - &want).iter().all(|d| d.abs() < 1e-12));
        check_op(&[v.clone(), x], seed, move |t, a| t.coo_spmm(rows, cols, n, a[0], a[1]))?;
        // One group given as `[K]`.
        let v1 = v.index_axis(ndarray::Axis(1), 0).to_owned();
        let x1 = ArrayD::from_shape_fn(vec![m, 2], |i| (i[0] + i[1]) as f64 * 0.3 - 0.4);
        check_op(&[v1.clone(), x1.clone()], seed, move |t, a| t.coo_spmm(rows, cols, n, a[0], a[1]))?;
        // The graph's `u32` edge lists, as they are.
        let (rows, cols) = (leak_u32(rows), leak_u32(cols));
        check_op(&[v1, x1], seed, move |t, a| t.coo_spmm(rows, cols, n, a[0], a[1]))?;
    }

    /// `sym_norm_values` against PyG's `gcn_norm` written with plain loops, for every
    /// option (normalised or not, fill 1 or 2), and its rules against each other and
    /// finite differences.
    #[test]
    fn sym_norm_values(case in norm_case(), seed in any::<u64>()) {
        let case: &'static NormCase = Box::leak(Box::new(case));
        let w = case.w.clone();
        for (fill, normalize) in [(1.0, true), (2.0, true), (1.0, false)] {
            let s = case.sym(fill, normalize);
            let y = tensor::value(
                &mut TapeBuffers::new(),
                |t, (w,)| t.sym_norm_values(w, s),
                (Const(&w),),
            )
            .unwrap();
            let want = case.reference(fill, normalize);
            prop_assert_eq!(y.len(), want.len());
            prop_assert!(y.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-12));
            check_op(std::slice::from_ref(&w), seed, move |t, a| t.sym_norm_values(a[0], s))?;
            let s = narrow(s);
            check_op(std::slice::from_ref(&w), seed, move |t, a| t.sym_norm_values(a[0], s))?;
        }
    }

    /// `group_dot` against the block definition, and its rules.
    #[test]
    fn group_dot(n in 1..5usize, g in 1..4usize, c in 1..4usize, seed in any::<u64>()) {
        let x = ArrayD::from_shape_fn(vec![n, g * c], |i| ((i[0] * 7 + i[1] * 3) % 11) as f64 * 0.2 - 1.0);
        let a = ArrayD::from_shape_fn(vec![1, g, c], |i| ((i[1] * 5 + i[2]) % 7) as f64 * 0.3 - 0.9);
        let y = tensor::value(
            &mut TapeBuffers::new(),
            |t, (x, a)| t.group_dot(x, a, g),
            (Const(&x), Const(&a)),
        )
        .unwrap();
        for i in 0..n {
            for h in 0..g {
                let want: f64 = (0..c).map(|j| x[[i, h * c + j]] * a[[0, h, j]]).sum();
                prop_assert!((y[[i, h]] - want).abs() < 1e-12);
            }
        }
        check_op(&[x, a], seed, move |t, v| t.group_dot(v[0], v[1], g))?;
    }
}

#[test]
fn coordinate_list_errors_are_coded() {
    let v = Array2::<f64>::ones((2, 2));
    let x = Array2::<f64>::ones((3, 4));
    let run = |rows: &'static [usize], cols: &'static [usize], n: usize| {
        tensor::value(
            &mut TapeBuffers::new(),
            |t, (v, x)| t.coo_spmm(rows, cols, n, v, x),
            (Const(&v), Const(&x)),
        )
        .unwrap_err()
        .code()
    };
    assert_eq!(run(&[0], &[0, 1], 2), "SHADE-E0110");
    assert_eq!(run(&[0, 2], &[0, 1], 2), "SHADE-E0111");
    assert_eq!(run(&[0, 1], &[0, 3], 2), "SHADE-E0111");
    let e = tensor::value(
        &mut TapeBuffers::new(),
        |t, (x, a)| t.group_dot(x, a, 3),
        (Const(&x), Const(&Array1::<f64>::ones(4))),
    )
    .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0110");
    let w = Array1::<f64>::ones(2);
    let s = SymNorm {
        rows: &[0usize, 1],
        cols: &[1, 0],
        from: &[Some(0), Some(2)],
        fill: 1.0,
        entry: &[0, 1],
        num_entries: 2,
        num_nodes: 2,
        normalize: true,
    };
    let e = tensor::value(
        &mut TapeBuffers::new(),
        |t, (w,)| t.sym_norm_values(w, s),
        (Const(&w),),
    )
    .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0111");
}

/// `x ↦ x³` as a user rule.
struct Cube;

impl tensor::TensorRule<f64> for Cube {
    fn name(&self) -> &'static str {
        "cube"
    }
    fn forward(&self, x: &[ndarray::ArrayViewD<'_, f64>]) -> shade_autodiff::AdResult<ArrayD<f64>> {
        Ok(x[0].mapv(|v| v * v * v))
    }
    fn vjp(
        &self,
        x: &[ndarray::ArrayViewD<'_, f64>],
        _y: ndarray::ArrayViewD<'_, f64>,
        g: ndarray::ArrayViewD<'_, f64>,
        _input: usize,
        mut dx: tensor::RuleSlot<'_, f64>,
    ) -> shade_autodiff::AdResult<()> {
        ndarray::Zip::from(&mut dx.view_mut())
            .and(&g)
            .and(&x[0])
            .for_each(|d, &g, &x| *d += 3.0 * x * x * g);
        Ok(())
    }
    fn jvp(
        &self,
        x: &[ndarray::ArrayViewD<'_, f64>],
        _y: ndarray::ArrayViewD<'_, f64>,
        t: &[Option<ndarray::ArrayViewD<'_, f64>>],
        mut ty: tensor::RuleSlot<'_, f64>,
    ) -> shade_autodiff::AdResult<()> {
        if let Some(t) = &t[0] {
            ndarray::Zip::from(&mut ty.view_mut())
                .and(t)
                .and(&x[0])
                .for_each(|o, &t, &x| *o = 3.0 * x * x * t);
        }
        Ok(())
    }
}

#[test]
fn cross_entropy_matches_hand_computed_value() {
    let x = array![[1.0, 2.0, 0.5], [0.0, 0.0, 0.0], [3.0, -1.0, 2.0]];
    let labels = [1usize, 0, 2];
    let mut dx = Array2::zeros((3, 3));
    let mut bufs = TapeBuffers::new();
    let idx = [0usize, 2];
    let l = tensor::gradient(
        &mut bufs,
        |t, (x, y, i)| t.cross_entropy(x, y, Rows::Index(i)),
        (Duplicated(&x, &mut dx), Const(&labels[..]), Const(&idx[..])),
    )
    .unwrap();
    let lse = |r: &[f64]| r.iter().map(|v| v.exp()).sum::<f64>().ln();
    let want = ((lse(&[1.0, 2.0, 0.5]) - 2.0) + (lse(&[3.0, -1.0, 2.0]) - 2.0)) / 2.0;
    assert!((l - want).abs() < 1e-14);
    assert!(dx.row(1).iter().all(|&d| d == 0.0));
    assert!((dx.row(0).sum()).abs() < 1e-15);
}

#[test]
fn segment_ops_on_isolated_nodes_give_zero() {
    let x = array![[1.0, 5.0], [3.0, 4.0], [5.0, -6.0]];
    let idx = [0usize, 0, 3];
    let mut dx = Array2::zeros((3, 2));
    let mut bufs = TapeBuffers::new();
    let seed = Array2::from_elem((5, 2), 1.0);
    tensor::pullback(
        &mut bufs,
        |t, (x, i)| t.scatter_max(x, i, 5),
        (Duplicated(&x, &mut dx), Const(&idx[..])),
        &seed,
    )
    .unwrap();
    assert_eq!(dx, array![[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]);
    let y = tensor::value(
        &mut bufs,
        |t, (x, i)| t.scatter_mean(x, i, 5),
        (Const(&x), Const(&idx[..])),
    )
    .unwrap();
    assert_eq!(
        y,
        array![[2.0, 4.5], [0.0, 0.0], [0.0, 0.0], [5.0, -6.0], [0.0, 0.0]].into_dyn()
    );
    let s: ArrayD<f64> = tensor::value(
        &mut bufs,
        |t, (x, i)| t.segment_softmax(x, i, 5),
        (Const(&x), Const(&idx[..])),
    )
    .unwrap();
    assert!((s[[0, 0]] + s[[1, 0]] - 1.0).abs() < 1e-15);
    assert_eq!(s[[2, 0]], 1.0);
}

#[test]
fn dropout_is_identity_at_evaluation_and_scales_in_training() {
    let x = Array1::from_elem(10_000, 1.0);
    let mut bufs = TapeBuffers::new();
    let mut rng = StdRng::seed_from_u64(7);
    let y = tensor::value(
        &mut bufs,
        |t, (x,)| t.dropout(x, 0.5, &mut rng, false),
        (Const(&x),),
    )
    .unwrap();
    assert_eq!(y, x.clone().into_dyn());
    let y: ArrayD<f64> = tensor::value(
        &mut bufs,
        |t, (x,)| t.dropout(x, 0.25, &mut rng, true),
        (Const(&x),),
    )
    .unwrap();
    assert!(y.iter().all(|&v| v == 0.0 || (v - 4.0 / 3.0).abs() < 1e-15));
    let kept = y.iter().filter(|&&v| v != 0.0).count() as f64 / 10_000.0;
    assert!((kept - 0.75).abs() < 0.03, "kept fraction {kept}");
    let e = tensor::value(
        &mut bufs,
        |t, (x,)| t.dropout(x, 1.5, &mut rng, true),
        (Const(&x),),
    )
    .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0114");
}

#[test]
fn spmm_bias_shape_errors_are_coded_and_name_both_shapes() {
    let a = SparseMatrix::try_from_csr((2, 2), vec![0, 1, 2], vec![0, 1], vec![1.0, 2.0]).unwrap();
    let x = Array2::<f64>::zeros((2, 3));
    let mut bufs = TapeBuffers::new();
    // A bias of the wrong width, and features with the wrong number of rows.
    let wide = Array1::<f64>::zeros(4);
    let e = tensor::value(
        &mut bufs,
        |t, (x, b)| t.spmm_bias(&a, x, b),
        (Const(&x), Const(&wide)),
    )
    .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0110");
    let text = e.to_string();
    assert!(
        text.contains("spmm_bias") && text.contains("[2, 3]") && text.contains("[4]"),
        "{text}"
    );
    let tall = Array2::<f64>::zeros((5, 3));
    let bias = Array1::<f64>::zeros(3);
    let e = tensor::value(
        &mut bufs,
        |t, (x, b)| t.spmm_bias(&a, x, b),
        (Const(&tall), Const(&bias)),
    )
    .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0110");
    assert!(e.to_string().contains("[5, 3]"), "{e}");
}

#[test]
fn index_and_loss_errors_are_coded() {
    let x = Array2::<f64>::zeros((3, 2));
    let mut bufs = TapeBuffers::new();
    let bad = [0usize, 3];
    let e = tensor::value(
        &mut bufs,
        |t, (x, i)| t.index_select(x, i),
        (Const(&x), Const(&bad[..])),
    )
    .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0111");
    assert!(e.to_string().contains("index 3 at position 1"));
    let e = tensor::value(
        &mut bufs,
        |t, (x, i)| t.scatter_add(x, i, 4),
        (Const(&x), Const(&bad[..])),
    )
    .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0110");
    let labels = [0usize, 2, 1];
    let e = tensor::value(
        &mut bufs,
        |t, (x, y)| t.cross_entropy(x, y, Rows::All),
        (Const(&x), Const(&labels[..])),
    )
    .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0111");
    let none: [usize; 0] = [];
    let e = tensor::value(
        &mut bufs,
        |t, (x, y, i)| t.cross_entropy(x, y, Rows::Index(i)),
        (Const(&x), Const(&labels[..]), Const(&none[..])),
    )
    .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0114");
    let v = Array1::<f64>::zeros(3);
    let e = tensor::value(
        &mut bufs,
        |t, (v, y)| t.cross_entropy(v, y, Rows::All),
        (Const(&v), Const(&labels[..])),
    )
    .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0140");
    let a = SparseMatrix::new(sprs::CsMatI::<f64, u32, usize>::eye(4));
    let e = tensor::value(&mut bufs, |t, (x, a)| t.spmm(a, x), (Const(&x), Const(&a))).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`spmm` cannot combine shapes [4, 4] and [3, 2]"
    );
    let e = SparseMatrix::<f64>::try_from_csr((2, 2), vec![0, 1], vec![0], vec![1.0]).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0114");
}

#[test]
fn large_spmm_matches_dense_product_both_ways() {
    // Large enough for the row-parallel kernel path (work above the products' split
    // threshold 2^22, nonzeros well beyond the prefetch distance).
    // 40 distinct columns per row (329 is prime to 400): 96 000 nonzeros × 48.
    let (r, c, f) = (2400, 400, 48);
    let mut tri = sprs::TriMatI::<_, u32>::new((r, c));
    for i in 0..r {
        for q in 0..40usize {
            let k = i * 40 + q;
            tri.add_triplet(i, (i * 7919 + q * 329) % c, ((k % 13) as f64) * 0.1 - 0.6);
        }
    }
    assert!(tri.nnz() * f >= 1 << 22);
    let a = SparseMatrix::new(tri.to_csr());
    let x = Array2::from_shape_fn((c, f), |(i, j)| {
        ((i * 31 + j * 17) % 23) as f64 * 0.05 - 0.5
    });
    let g = Array2::from_shape_fn((r, f), |(i, j)| ((i * 13 + j * 5) % 19) as f64 * 0.1 - 0.9);
    let d = dense(&a);
    let mut out = Array2::zeros((r, f));
    a.mul_dense_into(x.view(), out.view_mut()).unwrap();
    assert!((&out - &d.dot(&x)).iter().all(|e| e.abs() < 1e-12));
    let mut back = Array2::zeros((c, f));
    a.transpose_mul_dense_into(g.view(), back.view_mut())
        .unwrap();
    assert!((&back - &d.t().dot(&g)).iter().all(|e| e.abs() < 1e-12));
    let e = a.mul_dense_into(g.view(), out.view_mut()).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0110");
}

#[test]
fn spmm_with_a_dense_operand_beyond_the_cache_matches_the_triplets() {
    // `x` is 20000 × 256 f64 (39 MiB), past the kernel's 1 MiB prefetch threshold: the
    // product takes the software-prefetch branch, row-parallel (20 000 distinct
    // positions, the pattern's period, × 256 = 5.1 M multiply-adds, above the products'
    // split threshold 2^22). The reference sums the triplets directly.
    let (r, c, f) = (500, 20_000, 256);
    let triplets: Vec<(usize, usize, f64)> = (0..30_000usize)
        .map(|k| {
            (
                (k * 7919) % r,
                (k * 104_729) % c,
                ((k % 13) as f64) * 0.1 - 0.6,
            )
        })
        .collect();
    let mut tri = sprs::TriMatI::<_, u32>::new((r, c));
    for &(i, j, v) in &triplets {
        tri.add_triplet(i, j, v);
    }
    let a = SparseMatrix::new(tri.to_csr());
    assert!(a.nnz() * f >= 1 << 22, "{} nonzeros", a.nnz());
    let x = Array2::from_shape_fn((c, f), |(i, j)| {
        ((i * 31 + j * 17) % 23) as f64 * 0.05 - 0.5
    });
    let mut want = Array2::<f64>::zeros((r, f));
    for &(i, j, v) in &triplets {
        for k in 0..f {
            want[[i, k]] += v * x[[j, k]];
        }
    }
    let mut out = Array2::zeros((r, f));
    a.mul_dense_into(x.view(), out.view_mut()).unwrap();
    assert!((&out - &want).iter().all(|e| e.abs() < 1e-12));
}
