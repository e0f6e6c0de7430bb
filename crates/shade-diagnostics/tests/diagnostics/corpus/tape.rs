//! Broken tape programs: numbers read out of a tracked value while recording (the
//! silently cut gradient, now refused with its line), custom rules whose adjoints
//! have the wrong shape, and array operations used with the wrong shapes or indices.

use super::harness::{Program, Seen};
use ndarray::{Array1, Array2, ArrayD, ArrayViewD, Axis, array};
use shade_autodiff::scalar::{self, Real, shade_fn};
use shade_autodiff::tensor::{self, Rows, RuleSlot, SparseMatrix, TapeBuffers, TensorRule};
use shade_autodiff::{AdResult, Const, Duplicated};

pub(crate) const PROGRAMS: &[(&str, Program)] = &[
    (
        "tape_edge_weights_from_tracked_values",
        edge_weights_from_tracked_values,
    ),
    (
        "tape_normaliser_read_as_numbers",
        normaliser_read_as_numbers,
    ),
    (
        "tape_value_read_in_forward_mode",
        value_read_in_forward_mode,
    ),
    ("tape_scalar_value_as_step_size", scalar_value_as_step_size),
    ("tape_scalar_to_f64_in_loss", scalar_to_f64_in_loss),
    ("tape_scalar_read_in_hvp", scalar_read_in_hvp),
    ("tape_scalar_read_in_jacobian", scalar_read_in_jacobian),
    ("tape_rule_adjoint_not_summed", rule_adjoint_not_summed),
    (
        "tape_rule_adjoint_of_the_output",
        rule_adjoint_of_the_output,
    ),
    ("tape_rule_tangent_shape", rule_tangent_shape),
    ("tape_reshape_element_count", reshape_element_count),
    ("tape_concat_widths", concat_widths),
    ("tape_narrow_past_the_end", narrow_past_the_end),
    ("tape_stack_shapes", stack_shapes),
    (
        "tape_scatter_index_beyond_nodes",
        scatter_index_beyond_nodes,
    ),
    ("tape_segment_softmax_segments", segment_softmax_segments),
    ("tape_spmm_wrong_side", spmm_wrong_side),
    ("tape_clamp_bounds_swapped", clamp_bounds_swapped),
    ("tape_mse_of_transposed_target", mse_of_transposed_target),
    ("tape_cross_entropy_mask_length", cross_entropy_mask_length),
    ("tape_csr_unsorted_columns", csr_unsorted_columns),
    ("tape_shadow_of_a_row", shadow_of_a_row),
];

/// Edge weights computed in user code from a tracked parameter and fed back as
/// constants: the founding story's pattern (the gradient was silently all zero).
fn edge_weights_from_tracked_values() -> Result<(), Seen> {
    let theta = array![0.2, -0.5, 1.0];
    let x = array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]];
    let mut dtheta = Array1::zeros(3);
    let mut bufs = TapeBuffers::new();
    tensor::gradient(
        &mut bufs,
        |t, (theta, x)| {
            let w = t.sigmoid(theta)?;
            let weights = t.value(w)?.to_owned().insert_axis(Axis(1));
            let w = t.constant(&weights);
            let h = t.mul(x, w)?;
            t.sum(h)
        },
        (Duplicated(&theta, &mut dtheta), Const(&x)),
    )?;
    Ok(())
}

/// A softmax written by hand whose normaliser was read out as a number.
fn normaliser_read_as_numbers() -> Result<(), Seen> {
    let z = array![1.0, 2.0, 3.0];
    let mut dz = Array1::zeros(3);
    let mut bufs = TapeBuffers::new();
    tensor::gradient(
        &mut bufs,
        |t, (z,)| {
            let e = t.exp(z)?;
            let s = t.sum(e)?;
            let total: f64 = t.value(s)?.sum();
            let p = t.scale(e, 1.0 / total)?;
            let l = t.ln(p)?;
            t.sum(l)
        },
        (Duplicated(&z, &mut dz),),
    )?;
    Ok(())
}

fn value_read_in_forward_mode() -> Result<(), Seen> {
    let x = array![0.5, 1.5];
    let mut tx = array![1.0, 0.0];
    let mut bufs = TapeBuffers::new();
    tensor::pushforward(
        &mut bufs,
        |t, (x,)| {
            let y = t.tanh(x)?;
            let m = t.value(y)?.iter().copied().fold(0.0, f64::max);
            t.scale(y, m)
        },
        (Duplicated(&x, &mut tx),),
    )?;
    Ok(())
}

fn damped<S: Real>(x: &[S]) -> S {
    // A step size taken from the current value, meant as a constant but not said so.
    let step = 1.0 / (1.0 + x[0].value().abs());
    x.iter().map(|&v| v * v).sum::<S>() * step
}

fn scalar_value_as_step_size() -> Result<(), Seen> {
    scalar::gradient(shade_fn!(damped(&[S])), &[1.0, 2.0], ())?;
    Ok(())
}

fn weighted<S: Real>(x: &[S]) -> S {
    let w = x[1].to_f64().unwrap_or(1.0);
    x[0] * x[0] * w
}

fn scalar_to_f64_in_loss() -> Result<(), Seen> {
    scalar::gradient(shade_fn!(weighted(&[S])), &[1.0, 2.0], ())?;
    Ok(())
}

fn scalar_read_in_hvp() -> Result<(), Seen> {
    scalar::hvp(shade_fn!(damped(&[S])), &[1.0, 2.0], &[1.0, 0.0], ())?;
    Ok(())
}

fn clipped_in<S: Real>(y: &mut [S], x: &[S]) {
    for (yi, &xi) in y.iter_mut().zip(x) {
        let c = xi.value().clamp(-1.0, 1.0);
        *yi = xi * c;
    }
}

fn scalar_read_in_jacobian() -> Result<(), Seen> {
    let (mut y, mut j) = (vec![0.0; 2], vec![0.0; 4]);
    scalar::Tape::new().jacobian_reverse_into(
        &shade_fn!(clipped_in(&mut [S], &[S])),
        &[0.5, 2.0],
        (),
        &mut y,
        &mut j,
    )?;
    Ok(())
}

/// `y = x + b` with `b` broadcast over the rows of `x`.
struct AddBias {
    sum_back: bool,
}

impl TensorRule<f64> for AddBias {
    fn name(&self) -> &'static str {
        "add_bias"
    }
    fn forward(&self, x: &[ArrayViewD<'_, f64>]) -> AdResult<ArrayD<f64>> {
        Ok(&x[0] + &x[1])
    }
    fn vjp(
        &self,
        _x: &[ArrayViewD<'_, f64>],
        _y: ArrayViewD<'_, f64>,
        g: ArrayViewD<'_, f64>,
        input: usize,
        mut dx: RuleSlot<'_, f64>,
    ) -> AdResult<()> {
        if input == 1 && self.sum_back {
            // Summed over the wrong axis: [2] instead of [3].
            dx.add(&g.sum_axis(Axis(1)))
        } else {
            dx.add(&g)
        }
    }
    fn jvp(
        &self,
        _x: &[ArrayViewD<'_, f64>],
        _y: ArrayViewD<'_, f64>,
        t: &[Option<ArrayViewD<'_, f64>>],
        mut ty: RuleSlot<'_, f64>,
    ) -> AdResult<()> {
        match (&t[0], &t[1]) {
            (_, Some(b)) => ty.assign(b),
            (Some(a), None) => ty.assign(a),
            (None, None) => Ok(()),
        }
    }
}

fn bias_gradient(sum_back: bool) -> Result<(), Seen> {
    let x = Array2::from_elem((2, 3), 1.0);
    let b = array![0.1, 0.2, 0.3];
    let mut db = Array1::zeros(3);
    let mut bufs = TapeBuffers::new();
    tensor::gradient(
        &mut bufs,
        |t, (x, b)| {
            let y = t.custom(AddBias { sum_back }, &[x, b])?;
            t.sum(y)
        },
        (Const(&x), Duplicated(&b, &mut db)),
    )?;
    Ok(())
}

fn rule_adjoint_not_summed() -> Result<(), Seen> {
    bias_gradient(true)
}

fn rule_adjoint_of_the_output() -> Result<(), Seen> {
    bias_gradient(false)
}

fn rule_tangent_shape() -> Result<(), Seen> {
    let x = Array2::from_elem((2, 3), 1.0);
    let b = array![0.1, 0.2, 0.3];
    let mut tb = Array1::ones(3);
    let mut bufs = TapeBuffers::new();
    tensor::pushforward(
        &mut bufs,
        |t, (x, b)| t.custom(AddBias { sum_back: false }, &[x, b]),
        (Const(&x), Duplicated(&b, &mut tb)),
    )?;
    Ok(())
}

fn reshape_element_count() -> Result<(), Seen> {
    let x = Array2::<f64>::zeros((4, 6));
    tensor::value(
        &mut TapeBuffers::new(),
        |t, (x,)| t.reshape(x, &[5, 5]),
        (Const(&x),),
    )?;
    Ok(())
}

/// Skip connection: features and hidden state concatenated along the wrong axis.
fn concat_widths() -> Result<(), Seen> {
    let x = Array2::<f64>::zeros((4, 3));
    let h = Array2::<f64>::zeros((4, 8));
    tensor::value(
        &mut TapeBuffers::new(),
        |t, (x, h)| t.concat(&[x, h], 0),
        (Const(&x), Const(&h)),
    )?;
    Ok(())
}

fn narrow_past_the_end() -> Result<(), Seen> {
    let x = Array2::<f64>::zeros((4, 8));
    tensor::value(
        &mut TapeBuffers::new(),
        |t, (x,)| t.narrow(x, 1, 6, 4),
        (Const(&x),),
    )?;
    Ok(())
}

fn stack_shapes() -> Result<(), Seen> {
    let a = Array1::<f64>::zeros(3);
    let b = Array1::<f64>::zeros(4);
    tensor::value(
        &mut TapeBuffers::new(),
        |t, (a, b)| t.stack(&[a, b], 0),
        (Const(&a), Const(&b)),
    )?;
    Ok(())
}

/// Messages scattered to their destinations, with the node count of another graph.
fn scatter_index_beyond_nodes() -> Result<(), Seen> {
    let msg = Array2::<f64>::ones((4, 2));
    let dst = [0usize, 1, 2, 5];
    tensor::value(
        &mut TapeBuffers::new(),
        |t, (m, d)| t.scatter_add(m, d, 4),
        (Const(&msg), Const(&dst[..])),
    )?;
    Ok(())
}

fn segment_softmax_segments() -> Result<(), Seen> {
    let scores = Array1::<f64>::zeros(5);
    let seg = [0usize, 0, 1, 1];
    tensor::value(
        &mut TapeBuffers::new(),
        |t, (s, g)| t.segment_softmax(s, g, 2),
        (Const(&scores), Const(&seg[..])),
    )?;
    Ok(())
}

/// `X · A` where `A · X` was meant: the 5-node adjacency against 3 features.
fn spmm_wrong_side() -> Result<(), Seen> {
    let a = SparseMatrix::new(sprs::CsMatI::<f64, u32, usize>::eye(5));
    let x = Array2::<f64>::zeros((3, 5)).reversed_axes().reversed_axes();
    tensor::value(
        &mut TapeBuffers::new(),
        |t, (x,)| t.spmm(&a, x),
        (Const(&x),),
    )?;
    Ok(())
}

fn clamp_bounds_swapped() -> Result<(), Seen> {
    let x = array![0.5, 2.0];
    tensor::value(
        &mut TapeBuffers::new(),
        |t, (x,)| t.clamp(x, 1.0, -1.0),
        (Const(&x),),
    )?;
    Ok(())
}

fn mse_of_transposed_target() -> Result<(), Seen> {
    let y = Array2::<f64>::zeros((4, 2));
    let target = Array2::<f64>::zeros((2, 4));
    tensor::value(
        &mut TapeBuffers::new(),
        |t, (y, target)| t.mse(y, target),
        (Const(&y), Const(&target)),
    )?;
    Ok(())
}

fn cross_entropy_mask_length() -> Result<(), Seen> {
    let logits = Array2::<f64>::zeros((4, 3));
    let labels = [0usize, 1, 2, 1];
    let mask = [true, false, true];
    tensor::value(
        &mut TapeBuffers::new(),
        |t, (z, y)| t.cross_entropy(z, y, Rows::Mask(&mask)),
        (Const(&logits), Const(&labels[..])),
    )?;
    Ok(())
}

/// CSR arrays written by hand with a row's columns out of order.
fn csr_unsorted_columns() -> Result<(), Seen> {
    SparseMatrix::<f64>::try_from_csr((2, 3), vec![0, 2, 3], vec![2, 0, 1], vec![1.0, 2.0, 3.0])?;
    Ok(())
}

/// A shadow made for one row of the parameter matrix.
fn shadow_of_a_row() -> Result<(), Seen> {
    let w = Array2::<f64>::ones((3, 4)).into_dyn();
    let mut dw = Array1::<f64>::zeros(4).into_dyn();
    tensor::gradient(
        &mut TapeBuffers::new(),
        |t, (w,)| t.sum(w),
        (Duplicated(&w, &mut dw),),
    )?;
    Ok(())
}
