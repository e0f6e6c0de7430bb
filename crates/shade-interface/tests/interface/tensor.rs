//! Tensor programs through the interface: AutoShade (both modes) against finite
//! differences and against each other, at random points; sparse, dense and index
//! contexts; shape errors; reports.

use ndarray::{Array1, Array2, ArrayD, IxDyn};
use proptest::prelude::*;
use shade_autodiff::AdResult;
use shade_autodiff::tensor::{Element, SparseMatrix, Tape, Var};
use shade_interface::{
    AutoFiniteDiff, AutoShade, Backend, Constant, PathKind, Support, support_table, tensor,
};
use sprs::TriMatI;

/// A 4-node path graph with self loops, row-normalised.
fn adjacency() -> SparseMatrix<f64> {
    let mut t = TriMatI::<_, u32>::new((4, 4));
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

/// `sum(tanh(X · W + b))` for parameters `(W, b)`, at either precision.
fn affine_loss<'t, T: Element>(
    t: &mut Tape<'t, T>,
    ((w, b), &(x,)): ((Var, Var), &'t (Var,)),
) -> AdResult<Var> {
    let h = t.matmul(x, w)?;
    let h = t.add(h, b)?;
    let h = t.tanh(h)?;
    t.sum(h)
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

/// Runs `$body` with `$b` bound to each mode of `AutoShade` (two types).
macro_rules! both_modes {
    ($b:ident => $body:block) => {{
        {
            let $b = AutoShade::REVERSE;
            $body
        }
        {
            let $b = AutoShade::FORWARD;
            $body
        }
    }};
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
        // Forward mode really runs forward (one pushforward per entry of w).
        let g_fwd = tensor::gradient(gcn, &AutoShade::FORWARD, &w, ctx).unwrap();
        prop_assert!(close(g.iter().copied(), g_fwd.iter().copied(), 1e-12), "{g} vs {g_fwd}");
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
        both_modes!(b => {
            let pb = tensor::pullback(layer, &b, &w, &dy, ctx).unwrap();
            prop_assert!(close(pb.iter().copied(), j_rev.t().dot(&dyf).iter().copied(), 1e-12));
            let (y, pf) = tensor::pushforward(layer, &b, &w, &dx, ctx).unwrap();
            prop_assert_eq!(y.shape(), &[4, 2]);
            prop_assert!(close(pf.iter().copied(), j_rev.dot(&dxf).iter().copied(), 1e-12));
        });
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
    both_modes!(b => {
        tensor::gradient(sum_layer, &b, &w, ctx).unwrap();
        tensor::jacobian(layer, &b, &w, ctx).unwrap();
        ran.insert(b.name());
    });
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

/// Issue 14 (class 5): a closure that the core's `tensor::gradient` accepts, with
/// contexts that borrow a sparse matrix and an index slice, goes through the
/// interface's `tensor::gradient` too, written in the call or bound with `let` through
/// `tensor::program` (bound with `let` alone, it failed with a bare "lifetime may not
/// live long enough": each elided lifetime of a closure's annotation is its own).
#[test]
fn closure_with_borrowed_sparse_and_index_contexts_infers() {
    let (a, x, rows) = (adjacency(), features(), vec![0usize, 2, 3]);
    let w = Array2::from_elem((3, 2), 0.3);
    // The core accepts the closure.
    let mut dw = Array2::zeros((3, 2));
    let mut bufs = shade_autodiff::tensor::TapeBuffers::new();
    shade_autodiff::tensor::gradient(
        &mut bufs,
        |t, (w, a, x, rows)| {
            let h = t.matmul(x, w)?;
            let h = t.spmm(a, h)?;
            let h = t.index_select(h, rows)?;
            t.sum(h)
        },
        (
            shade_autodiff::Duplicated(&w, &mut dw),
            shade_autodiff::Const(&a),
            shade_autodiff::Const(&x),
            shade_autodiff::Const(&rows[..]),
        ),
    )
    .unwrap();
    // So does the interface, with the same closure body written in the call ...
    let ctx = (Constant(&a), Constant(&x), Constant(&rows[..]));
    let g = tensor::gradient(
        |t, (w, &(a, x, rows))| {
            let h = t.matmul(x, w)?;
            let h = t.spmm(a, h)?;
            let h = t.index_select(h, rows)?;
            t.sum(h)
        },
        &AutoShade::REVERSE,
        &w,
        ctx,
    )
    .unwrap();
    assert_eq!(g, dw);
    // ... or bound with `let`, annotated as in the docs, and used by two backends.
    let program = tensor::program(
        |t: &mut Tape<'_, f64>, (w, &(a, x, rows)): (Var, &(&SparseMatrix<f64>, Var, &[usize]))| {
            let h = t.matmul(x, w)?;
            let h = t.spmm(a, h)?;
            let h = t.index_select(h, rows)?;
            t.sum(h)
        },
    );
    let mut prep = tensor::prepare_gradient(program, &AutoShade::REVERSE, &w, ctx).unwrap();
    assert_eq!(prep.gradient(&w, ctx).unwrap(), dw);
    let g_fd = tensor::gradient(program, &AutoFiniteDiff::CENTRAL, &w, ctx).unwrap();
    assert!(
        close(g_fd.iter().copied(), dw.iter().copied(), 1e-7),
        "{g_fd} vs {dw}"
    );
}

/// A graph of the user's own type, borrowed as one context: its sparse matrix and index
/// list are kept by the tape.
struct MyGraph {
    adj: SparseMatrix<f64>,
    readout: Vec<usize>,
}

#[test]
fn any_borrowed_value_is_a_context() {
    let graph = MyGraph {
        adj: adjacency(),
        readout: vec![3, 1],
    };
    let (x, w) = (features(), Array2::from_elem((3, 2), -0.2));
    let loss = tensor::program(
        |t: &mut Tape<'_, f64>, (w, &(g, x)): (Var, &(&MyGraph, Var))| {
            let h = t.matmul(x, w)?;
            let h = t.spmm(&g.adj, h)?;
            let h = t.tanh(h)?;
            let h = t.index_select(h, &g.readout)?;
            t.sum(h)
        },
    );
    let ctx = (Constant(&graph), Constant(&x));
    let g = tensor::gradient(loss, &AutoShade::REVERSE, &w, ctx).unwrap();
    let g_fd = tensor::gradient(loss, &AutoFiniteDiff::CENTRAL, &w, ctx).unwrap();
    assert!(
        close(g.iter().copied(), g_fd.iter().copied(), 1e-7),
        "{g} vs {g_fd}"
    );
    assert!(g.iter().any(|v| v.abs() > 1e-3));
}

/// `sum(tanh(x · w0) · w1) + sum(b)`, the parameters as one store.
fn mlp<'t>(t: &mut Tape<'t, f64>, (p, &(x,)): (Vec<Var>, &'t (Var,))) -> AdResult<Var> {
    let h = t.matmul(x, p[0])?;
    let h = t.tanh(h)?;
    let h = t.matmul(h, p[1])?;
    let s = t.sum(h)?;
    let b = t.sum(p[2])?;
    t.add(s, b)
}

fn store(seed: f64) -> Vec<Array2<f64>> {
    vec![
        Array2::from_shape_fn((3, 4), |(i, j)| (seed + (i * 4 + j) as f64 * 0.3).sin()),
        Array2::from_shape_fn((4, 2), |(i, j)| (seed - (i * 2 + j) as f64 * 0.7).cos()),
        Array2::from_elem((1, 2), seed),
    ]
}

proptest! {
    #[test]
    fn a_parameter_store_is_one_argument(seed in -1.0f64..1.0) {
        let (x, params) = (features(), store(seed));
        let ctx = (Constant(&x),);
        let g = tensor::gradient(mlp, &AutoShade::REVERSE, &params[..], ctx).unwrap();
        let g_fwd = tensor::gradient(mlp, &AutoShade::FORWARD, &params, ctx).unwrap();
        let g_fd = tensor::gradient(mlp, &AutoFiniteDiff::CENTRAL, &params[..], ctx).unwrap();
        prop_assert_eq!(g.len(), 3);
        for ((a, b), c) in g.iter().zip(&g_fwd).zip(&g_fd) {
            prop_assert_eq!(a.dim(), c.dim());
            prop_assert!(close(a.iter().copied(), b.iter().copied(), 1e-12));
            prop_assert!(close(a.iter().copied(), c.iter().copied(), 1e-7), "{a} vs {c}");
        }
        // The bias enters as a sum: its gradient is one.
        prop_assert!(g[2].iter().all(|&v| (v - 1.0).abs() < 1e-12));
        // The Jacobian's columns are the store's entries, array by array.
        let j = tensor::jacobian(mlp, &AutoShade::REVERSE, &params[..], ctx).unwrap();
        prop_assert_eq!(j.dim(), (1, 12 + 8 + 2));
        let flat: Vec<f64> = g.iter().flat_map(|a| a.iter().copied()).collect();
        prop_assert!(close(j.iter().copied(), flat.iter().copied(), 1e-12));
    }

    #[test]
    fn tuples_of_arrays_and_f32_programs(seed in -1.0f64..1.0) {
        let x = features();
        let (w, b) = (store(seed).swap_remove(0), Array1::from_elem(4, seed));
        let ctx = (Constant(&x),);
        let affine = tensor::program(affine_loss::<f64>);
        let wb = (w.clone(), b.clone());
        let (v, (gw, gb)) = tensor::value_and_gradient(affine, &AutoShade::REVERSE, &wb, ctx).unwrap();
        let (_, (fw, fb)) = tensor::value_and_gradient(affine, &AutoFiniteDiff::CENTRAL, &wb, ctx).unwrap();
        prop_assert!(close(gw.iter().copied(), fw.iter().copied(), 1e-7));
        prop_assert!(close(gb.iter().copied(), fb.iter().copied(), 1e-7));
        // The same program over f32: the f64 gradient to f32 precision, against f32
        // finite differences (their step scaled to f32).
        let (x32, w32, b32) = (x.mapv(|v| v as f32), w.mapv(|v| v as f32), b.mapv(|v| v as f32));
        let ctx32 = (Constant(&x32),);
        let affine32 = tensor::program(affine_loss::<f32>);
        let wb32 = (w32, b32);
        let (v32, (gw32, _)) = tensor::value_and_gradient(affine32, &AutoShade::REVERSE, &wb32, ctx32).unwrap();
        prop_assert!((f64::from(v32) - v).abs() < 1e-4 * (1.0 + v.abs()));
        prop_assert!(close(gw32.iter().map(|&v| f64::from(v)), gw.iter().copied(), 1e-4));
        let (_, (fw32, _)) = tensor::value_and_gradient(affine32, &AutoFiniteDiff::CENTRAL, &wb32, ctx32).unwrap();
        prop_assert!(close(fw32.iter().map(|&v| f64::from(v)), gw.iter().copied(), 1e-2));
    }
}

#[test]
fn forward_mode_gradients_run_forward_and_say_so() {
    let (x, w) = (features(), Array2::from_elem((3, 2), 0.2));
    let ctx = (Constant(&x),);
    fn sum_layer<'t>(t: &mut Tape<'t, f64>, h: (Var, &'t (Var,))) -> AdResult<Var> {
        let y = layer(t, h)?;
        t.sum(y)
    }
    let fwd = tensor::prepare_gradient(sum_layer, &AutoShade::FORWARD, &w, ctx).unwrap();
    let r = fwd.explain();
    assert_eq!((r.path, r.calls), (PathKind::Native, 6));
    assert!(
        r.detail.contains("forward mode, `tensor::pushforward_into"),
        "{r}"
    );
    let rev = tensor::prepare_gradient(sum_layer, &AutoShade::REVERSE, &w, ctx).unwrap();
    assert_eq!(rev.explain().calls, 1);
    assert!(rev.explain().detail.contains("`tensor::gradient("));
}

#[test]
fn a_workspace_takes_a_new_program_every_call() {
    let (x, params) = (features(), store(0.3));
    let mut grads = store(0.0);
    let mut work = tensor::Workspace::new();
    for step in 0..3 {
        let k = step as f64;
        // A closure that borrows the step's data (the store and `k`) and is made anew.
        let v = work
            .value_and_gradient_into(
                |t, (p, c)| {
                    let y = mlp(t, (p, c))?;
                    t.scale(y, k)
                },
                &AutoShade::REVERSE,
                &params[..],
                (Constant(&x),),
                &mut grads[..],
            )
            .unwrap();
        let (v1, g1) =
            tensor::value_and_gradient(mlp, &AutoShade::REVERSE, &params[..], (Constant(&x),))
                .unwrap();
        assert!((v - k * v1).abs() < 1e-12);
        for (a, b) in grads.iter().zip(&g1) {
            assert!(close(a.iter().copied(), b.iter().map(|v| k * v), 1e-12));
        }
    }
    assert_eq!(work.explain().unwrap().operator, "gradient");
    // A store whose shapes do not match its gradient: the interface's code.
    let mut short = store(0.0);
    short.pop();
    let e = work
        .value_and_gradient_into(
            mlp,
            &AutoShade::REVERSE,
            &params[..],
            (Constant(&x),),
            &mut short[..],
        )
        .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0201");
    assert_eq!(
        e.to_string(),
        "`gradient`: gradient has shape [2], but the operator was prepared for [3]"
    );
}
