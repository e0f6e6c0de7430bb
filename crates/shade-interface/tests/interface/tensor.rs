//! Tensor programs through the interface: AutoShade (both modes) against finite
//! differences and against each other, at random points; sparse, dense and index
//! contexts; shape errors; reports.

use ndarray::{Array1, Array2, ArrayD, IxDyn};
use proptest::prelude::*;
use shade_autodiff::AdResult;
use shade_autodiff::tensor::{SparseMatrix, Tape, Var};
use shade_interface::{
    AutoFiniteDiff, AutoShade, Backend, Constant, PathKind, Support, support_table, tensor,
};
use sprs::TriMat;

/// A 4-node path graph with self loops, row-normalised.
fn adjacency() -> SparseMatrix<f64> {
    let mut t = TriMat::new((4, 4));
    for (i, j) in [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
        (1, 2),
        (2, 1),
        (2, 2),
        (2, 3),
        (3, 2),
        (3, 3),
    ] {
        t.add_triplet(i, j, 0.5);
    }
    SparseMatrix::new(t.to_csr())
}

/// `sum(tanh(A · (X · W))[rows])`: a GCN layer with a sparse, a dense and an index context.
///
/// The handles arrive behind a reference of the tape's lifetime `'t`, which tells the
/// compiler that the borrowed contexts (`'c`) outlive the tape.
#[allow(clippy::type_complexity)]
fn gcn<'t, 'c>(
    t: &mut Tape<'t, f64>,
    (w, &(a, x, rows)): (Var, &'t (&'c SparseMatrix<f64>, Var, &'c [usize])),
) -> AdResult<Var> {
    let h = t.matmul(x, w)?;
    let h = t.spmm(a, h)?;
    let h = t.tanh(h)?;
    let h = t.index_select(h, rows)?;
    t.sum(h)
}

/// `tanh(X · W)`: a matrix result.
fn layer(t: &mut Tape<'_, f64>, (w, &(x,)): (Var, &(Var,))) -> AdResult<Var> {
    let h = t.matmul(x, w)?;
    t.tanh(h)
}

fn features() -> Array2<f64> {
    Array2::from_shape_fn((4, 3), |(i, j)| ((i * 3 + j) as f64 * 0.37).sin())
}

fn close(a: impl IntoIterator<Item = f64>, b: impl IntoIterator<Item = f64>, tol: f64) -> bool {
    a.into_iter()
        .zip(b)
        .all(|(x, y)| (x - y).abs() <= tol * (1.0 + x.abs().max(y.abs())))
}

proptest! {
    #[test]
    fn gcn_gradient_matches_finite_differences(ws in prop::collection::vec(-1.0f64..1.0, 6)) {
        let (a, x, rows) = (adjacency(), features(), [0usize, 2, 3, 3]);
        let w = Array2::from_shape_vec((3, 2), ws).unwrap();
        let ctx = (Constant(&a), Constant(&x), Constant(&rows[..]));
        let mut prep = tensor::prepare_gradient(gcn, &AutoShade::REVERSE, &w, ctx).unwrap();
        let mut g = Array2::zeros((3, 2));
        let y = prep.value_and_gradient_into(&w, ctx, &mut g).unwrap();
        let g_fd = tensor::gradient(gcn, &AutoFiniteDiff::CENTRAL, &w, ctx).unwrap();
        prop_assert!(close(g.iter().copied(), g_fd.iter().copied(), 1e-7), "{g} vs {g_fd}");
        let g_fwd = tensor::gradient(gcn, &AutoShade::FORWARD, &w, ctx).unwrap();
        prop_assert_eq!(&g, &g_fwd);
        // The value is the program's.
        let mut fd = tensor::prepare_gradient(gcn, &AutoFiniteDiff::CENTRAL, &w, ctx).unwrap();
        let mut g2 = Array2::zeros((3, 2));
        prop_assert!((fd.value_and_gradient_into(&w, ctx, &mut g2).unwrap() - y).abs() < 1e-12);
    }

    #[test]
    fn jacobian_pullback_pushforward_agree(ws in prop::collection::vec(-1.0f64..1.0, 6), s in -1.0f64..1.0) {
        let x = features();
        let w = Array2::from_shape_vec((3, 2), ws).unwrap();
        let ctx = (Constant(&x),);
        let j_rev = tensor::jacobian(layer, &AutoShade::REVERSE, &w, ctx).unwrap();
        let j_fwd = tensor::jacobian(layer, &AutoShade::FORWARD, &w, ctx).unwrap();
        let j_fd = tensor::jacobian(layer, &AutoFiniteDiff::CENTRAL, &w, ctx).unwrap();
        prop_assert_eq!(j_rev.dim(), (8, 6));
        prop_assert!(close(j_rev.iter().copied(), j_fwd.iter().copied(), 1e-12));
        prop_assert!(close(j_rev.iter().copied(), j_fd.iter().copied(), 1e-7));
        // pullback = Jᵀ dy, pushforward = J dx.
        let dy = ArrayD::from_shape_fn(IxDyn(&[4, 2]), |i| (i[0] as f64 + s * i[1] as f64).cos());
        let dx = Array2::from_shape_fn((3, 2), |(i, j)| s + (i as f64) - 0.5 * j as f64);
        let dyf = Array1::from_iter(dy.iter().copied());
        let dxf = Array1::from_iter(dx.iter().copied());
        for b in [AutoShade::REVERSE, AutoShade::FORWARD] {
            let pb = tensor::pullback(layer, &b, &w, &dy, ctx).unwrap();
            prop_assert!(close(pb.iter().copied(), j_rev.t().dot(&dyf).iter().copied(), 1e-12));
            let (y, pf) = tensor::pushforward(layer, &b, &w, &dx, ctx).unwrap();
            prop_assert_eq!(y.shape(), &[4, 2]);
            prop_assert!(close(pf.iter().copied(), j_rev.dot(&dxf).iter().copied(), 1e-12));
        }
        let pb = tensor::pullback(layer, &AutoFiniteDiff::CENTRAL, &w, &dy, ctx).unwrap();
        prop_assert!(close(pb.iter().copied(), j_rev.t().dot(&dyf).iter().copied(), 1e-6));
        let (_, pf) = tensor::pushforward(layer, &AutoFiniteDiff::CENTRAL, &w, &dx, ctx).unwrap();
        prop_assert!(close(pf.iter().copied(), j_rev.dot(&dxf).iter().copied(), 1e-6));
    }
}

#[test]
fn shapes_are_checked_and_reported() {
    let x = features();
    let w = Array2::zeros((3, 2));
    let mut prep =
        tensor::prepare_pullback(layer, &AutoShade::REVERSE, &w, (Constant(&x),)).unwrap();
    assert_eq!(prep.output_shape(), &[4, 2]);
    let e = prep
        .pullback(
            &Array2::zeros((2, 2)),
            &ArrayD::zeros(IxDyn(&[4, 2])),
            (Constant(&x),),
        )
        .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0201");
    assert_eq!(
        e.to_string(),
        "`pullback`: x has shape [2, 2], but the operator was prepared for [3, 2]"
    );
    let e = prep
        .pullback(&w, &ArrayD::zeros(IxDyn(&[4])), (Constant(&x),))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "`pullback`: dy has shape [4], but the operator was prepared for [4, 2]"
    );
    // A gradient needs a scalar result: the core's code.
    let e = tensor::prepare_gradient(layer, &AutoShade::REVERSE, &w, (Constant(&x),)).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0104");
}

#[test]
fn reports_name_the_core_entry_point() {
    let (a, x, rows) = (adjacency(), features(), [1usize]);
    let w = Array2::zeros((3, 2));
    let ctx = (Constant(&a), Constant(&x), Constant(&rows[..]));
    let p = tensor::prepare_gradient(gcn, &AutoShade::REVERSE, &w, ctx).unwrap();
    assert_eq!(p.explain().path, PathKind::Native);
    assert!(
        p.explain()
            .detail
            .contains("tensor::gradient(bufs, program, (Duplicated(x, g), Const(..)))")
    );
    assert_eq!(p.explain().contexts.len(), 3);
    let p = tensor::prepare_gradient(gcn, &AutoFiniteDiff::CENTRAL, &w, ctx).unwrap();
    assert_eq!(p.explain().path, PathKind::Generic);
}

#[test]
fn tensor_column_of_the_support_table_matches_what_runs() {
    let x = features();
    let w = Array2::from_elem((3, 2), 0.2);
    let ctx = (Constant(&x),);
    let mut ran = std::collections::BTreeSet::new();
    fn sum_layer<'t>(t: &mut Tape<'t, f64>, h: (Var, &'t (Var,))) -> AdResult<Var> {
        let y = layer(t, h)?;
        t.sum(y)
    }
    for b in [AutoShade::REVERSE, AutoShade::FORWARD] {
        tensor::gradient(sum_layer, &b, &w, ctx).unwrap();
        tensor::jacobian(layer, &b, &w, ctx).unwrap();
        ran.insert(b.name());
    }
    for b in [AutoFiniteDiff::CENTRAL, AutoFiniteDiff::FORWARD] {
        tensor::gradient(sum_layer, &b, &w, ctx).unwrap();
        tensor::jacobian(layer, &b, &w, ctx).unwrap();
        ran.insert(b.name());
    }
    let claimed: std::collections::BTreeSet<String> = support_table()
        .into_iter()
        .filter(|(_, row)| *row.last().unwrap() != Support::No)
        .map(|(name, _)| name)
        .collect();
    assert_eq!(claimed, ran);
}
