//! Broken programs caught by the proactive checks and by gradcheck (codes
//! `SHADE-E05xx`, `SHADE-W05xx`).

use super::harness::{Program, Seen};
use ndarray::{Array1, Array2, ArrayD, ArrayViewD, IxDyn};
use shade_autodiff::scalar::{Real, ScalarRule, shade_fn};
use shade_autodiff::tensor::{RuleSlot, Tape, TensorRule, Var};
use shade_autodiff::{AdResult, Duplicated};
use shade_diagnostics::gradcheck::{GradcheckOptions, gradcheck_tensor, gradgradcheck};
use shade_diagnostics::{
    check_finite, check_gcn_normalisation, check_graph_features, check_shadow_zeroed,
};
use shade_graph::{GcnNorm, Graph};

pub(crate) const PROGRAMS: &[(&str, Program)] = &[
    ("check_feature_rows", feature_rows),
    ("check_label_beyond_classes", label_beyond_classes),
    ("check_mask_length", mask_length),
    ("check_empty_train_mask", empty_train_mask),
    ("check_nan_feature", nan_feature),
    (
        "check_class_without_training_nodes",
        class_without_training_nodes,
    ),
    (
        "check_gcn_isolated_without_self_loops",
        gcn_isolated_without_self_loops,
    ),
    ("check_shadow_not_zeroed", shadow_not_zeroed),
    ("check_several_problems_at_once", several_problems_at_once),
    ("gradcheck_wrong_custom_rule", wrong_custom_rule),
    (
        "gradgradcheck_rule_not_twice_differentiable",
        rule_not_twice_differentiable,
    ),
];

fn path_graph(n: u32) -> Result<Graph, Seen> {
    let edges: Vec<(u32, u32)> = (0..n - 1).flat_map(|i| [(i, i + 1), (i + 1, i)]).collect();
    Ok(Graph::from_edges(n as usize, &edges)?)
}

fn feature_rows() -> Result<(), Seen> {
    let g = path_graph(6)?;
    let x = Array2::<f32>::zeros((5, 8));
    let labels = [0, 1, 0, 1, 0, 1];
    let mask = [true, true, false, false, false, false];
    check_graph_features(&g, &x, &labels, 2, &mask).into_result()?;
    Ok(())
}

fn label_beyond_classes() -> Result<(), Seen> {
    let g = path_graph(4)?;
    let x = Array2::<f64>::zeros((4, 3));
    // Labels read from a 1-based file: classes 1..=3 for 3 classes.
    let labels = [1, 2, 3, 3];
    let mask = [true; 4];
    check_graph_features(&g, &x, &labels, 3, &mask).into_result()?;
    Ok(())
}

fn mask_length() -> Result<(), Seen> {
    let g = path_graph(5)?;
    let x = Array2::<f32>::zeros((5, 2));
    let labels = [0, 1, 0, 1, 0];
    let mask = [true, true, false];
    check_graph_features(&g, &x, &labels, 2, &mask).into_result()?;
    Ok(())
}

fn empty_train_mask() -> Result<(), Seen> {
    let g = path_graph(4)?;
    let x = Array2::<f32>::zeros((4, 2));
    check_graph_features(&g, &x, &[0, 1, 0, 1], 2, &[false; 4]).into_result()?;
    Ok(())
}

fn nan_feature() -> Result<(), Seen> {
    let mut x = Array2::<f32>::ones((4, 3));
    x[[2, 1]] = f32::NAN;
    check_finite("features", &x).into_result()?;
    Ok(())
}

fn class_without_training_nodes() -> Result<(), Seen> {
    let g = path_graph(6)?;
    let x = Array2::<f32>::zeros((6, 2));
    let labels = [0, 0, 1, 1, 2, 2];
    // The first two nodes only: both of class 0.
    let mask = [true, true, false, false, false, false];
    let warnings = check_graph_features(&g, &x, &labels, 3, &mask);
    Err(warnings.into())
}

fn gcn_isolated_without_self_loops() -> Result<(), Seen> {
    let g = Graph::from_edges(5, &[(0, 1), (1, 0), (1, 2), (2, 1)])?;
    let opts = GcnNorm {
        add_self_loops: false,
        ..GcnNorm::default()
    };
    Err(check_gcn_normalisation(&g, opts).into())
}

fn shadow_not_zeroed() -> Result<(), Seen> {
    // The second training step reuses the first step's gradient buffer.
    let w = Array1::from(vec![0.5, -0.5, 1.0]);
    let mut dw = Array1::zeros(3);
    let mut bufs = shade_autodiff::tensor::TapeBuffers::new();
    let step = |t: &mut Tape<'_, f64>, (w,): (Var,)| {
        let s = t.mul(w, w)?;
        t.sum(s)
    };
    shade_autodiff::tensor::gradient(&mut bufs, step, (Duplicated(&w, &mut dw),))?;
    Err(check_shadow_zeroed("dw", &dw).into())
}

fn several_problems_at_once() -> Result<(), Seen> {
    let g = path_graph(4)?;
    let mut x = Array2::<f64>::zeros((3, 2));
    x[[0, 0]] = f64::INFINITY;
    let f = check_graph_features(&g, &x, &[0, 5, 1], 2, &[false; 4]);
    Err(f.into())
}

/// `x ↦ x³` with a reverse rule that forgets the factor 3.
struct Cube;

impl TensorRule<f64> for Cube {
    fn name(&self) -> &'static str {
        "cube"
    }
    fn forward(&self, x: &[ArrayViewD<'_, f64>]) -> AdResult<ArrayD<f64>> {
        Ok(x[0].mapv(|v| v * v * v))
    }
    fn vjp(
        &self,
        x: &[ArrayViewD<'_, f64>],
        _y: ArrayViewD<'_, f64>,
        g: ArrayViewD<'_, f64>,
        _input: usize,
        mut dx: RuleSlot<'_, f64>,
    ) -> AdResult<()> {
        dx.add(&(&g * &x[0].mapv(|v| v * v)))
    }
    fn jvp(
        &self,
        x: &[ArrayViewD<'_, f64>],
        _y: ArrayViewD<'_, f64>,
        t: &[Option<ArrayViewD<'_, f64>>],
        mut ty: RuleSlot<'_, f64>,
    ) -> AdResult<()> {
        match &t[0] {
            Some(t) => ty.assign(&(t * &x[0].mapv(|v| 3.0 * v * v))),
            None => Ok(()),
        }
    }
}

fn wrong_custom_rule() -> Result<(), Seen> {
    let w = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![0.5, -1.0, 1.5, 2.0]).expect("4 values");
    let model = |t: &mut Tape<'_, f64>, p: &[Var]| {
        let c = t.custom(Cube, &[p[0]])?;
        t.sum(c)
    };
    gradcheck_tensor(&model, &[w], &GradcheckOptions::f64())?.into_result()?;
    Ok(())
}

/// `x ↦ x³` whose reverse rule computes `3x²` from the plain value: right first
/// derivatives, but nothing for a second differentiation to follow.
struct CubeByValue;

impl ScalarRule<1> for CubeByValue {
    fn primal<S: Real>(&self, [x]: [S; 1]) -> S {
        x * x * x
    }
    fn forward<S: Real>(&self, [x]: [S; 1], _y: S, [dx]: [S; 1]) -> S {
        dx * x * x * 3.0
    }
    fn reverse<S: Real>(&self, [x]: [S; 1], _y: S, dy: S) -> [S; 1] {
        let v = x.value();
        [dy * (3.0 * v * v)]
    }
}

fn cube_sum<S: Real>(x: &[S]) -> S {
    x.iter().map(|&v| S::custom(&CubeByValue, [v])).sum()
}

fn rule_not_twice_differentiable() -> Result<(), Seen> {
    gradgradcheck(
        shade_fn!(cube_sum(&[S])),
        &[0.5, -1.0],
        (),
        &GradcheckOptions::f64(),
    )?
    .into_result()?;
    Ok(())
}
