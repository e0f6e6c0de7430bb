//! Broken programs against the AD core (codes `SHADE-E01xx`).

use super::harness::{Program, Seen};
use ndarray::{Array1, Array2, array};
use shade_autodiff::scalar::{self, Real, shade_fn};
use shade_autodiff::tensor::{self, Rows, TapeBuffers, Var};
use shade_autodiff::{Active, Const, Duplicated, Reverse};
use shade_diagnostics::detect_anomaly;

pub(crate) const PROGRAMS: &[(&str, Program)] = &[
    ("ad_scalar_shadow_too_short", scalar_shadow_too_short),
    ("ad_tensor_shadow_transposed", tensor_shadow_transposed),
    ("ad_gradient_of_a_matrix", gradient_of_a_matrix),
    ("ad_matmul_inner_dimensions", matmul_inner_dimensions),
    ("ad_gather_index_out_of_range", gather_index_out_of_range),
    ("ad_softmax_axis_out_of_range", softmax_axis_out_of_range),
    (
        "ad_handle_kept_from_another_call",
        handle_kept_from_another_call,
    ),
    ("ad_dropout_probability", dropout_probability),
    ("ad_hessian_buffer_length", hessian_buffer_length),
    ("ad_cross_entropy_of_a_vector", cross_entropy_of_a_vector),
    ("ad_anomaly_ln_of_negative", anomaly_ln_of_negative),
    (
        "ad_anomaly_sqrt_at_zero_backward",
        anomaly_sqrt_at_zero_backward,
    ),
    ("ad_labels_beyond_classes", labels_beyond_classes),
    (
        "ad_function_indexes_past_outputs",
        function_indexes_past_outputs,
    ),
];

fn sum_sq<S: Real>(x: &[S]) -> S {
    x.iter().map(|&v| v * v).sum()
}

fn scalar_shadow_too_short() -> Result<(), Seen> {
    let x = [1.0, 2.0, 3.0];
    let mut dx = [0.0; 2];
    scalar::autodiff(
        Reverse,
        shade_fn!(sum_sq(&[S])),
        Active(1.0),
        (Duplicated(&x[..], &mut dx[..]),),
    )?;
    Ok(())
}

fn tensor_shadow_transposed() -> Result<(), Seen> {
    let w = Array2::<f64>::zeros((3, 4));
    let x = Array2::<f64>::ones((2, 3));
    let mut dw = Array2::<f64>::zeros((4, 3));
    let mut bufs = TapeBuffers::new();
    tensor::gradient(
        &mut bufs,
        |t, (w, x)| {
            let h = t.matmul(x, w)?;
            t.sum(h)
        },
        (Duplicated(&w, &mut dw), Const(&x)),
    )?;
    Ok(())
}

fn gradient_of_a_matrix() -> Result<(), Seen> {
    let w = Array2::<f64>::zeros((3, 4));
    let x = Array2::<f64>::ones((2, 3));
    let mut dw = Array2::<f64>::zeros((3, 4));
    let mut bufs = TapeBuffers::new();
    tensor::gradient(
        &mut bufs,
        |t, (w, x)| t.matmul(x, w),
        (Duplicated(&w, &mut dw), Const(&x)),
    )?;
    Ok(())
}

fn matmul_inner_dimensions() -> Result<(), Seen> {
    let x = Array2::<f32>::zeros((5, 3));
    let w = Array2::<f32>::zeros((4, 2));
    let mut bufs = TapeBuffers::new();
    tensor::value(
        &mut bufs,
        |t, (x, w)| t.matmul(x, w),
        (Const(&x), Const(&w)),
    )?;
    Ok(())
}

fn gather_index_out_of_range() -> Result<(), Seen> {
    let x = Array2::<f64>::ones((3, 2));
    let idx = [0usize, 1, 5];
    let mut bufs = TapeBuffers::new();
    tensor::value(
        &mut bufs,
        |t, (x, idx)| t.index_select(x, idx),
        (Const(&x), Const(&idx[..])),
    )?;
    Ok(())
}

fn softmax_axis_out_of_range() -> Result<(), Seen> {
    let logits = Array2::<f64>::zeros((4, 3));
    let mut bufs = TapeBuffers::new();
    tensor::value(&mut bufs, |t, (z,)| t.softmax(z, 2), (Const(&logits),))?;
    Ok(())
}

fn handle_kept_from_another_call() -> Result<(), Seen> {
    let x = array![1.0, 2.0];
    let mut bufs = TapeBuffers::new();
    let mut saved: Option<Var> = None;
    tensor::value(
        &mut bufs,
        |_t, (x,)| {
            saved = Some(x);
            Ok(x)
        },
        (Const(&x),),
    )?;
    let old = saved.expect("set by the first call");
    tensor::value(&mut bufs, |t, (_x,)| t.exp(old), (Const(&x),))?;
    Ok(())
}

fn dropout_probability() -> Result<(), Seen> {
    use rand::SeedableRng;
    let h = Array2::<f32>::ones((4, 8));
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    let mut bufs = TapeBuffers::new();
    tensor::value(
        &mut bufs,
        |t, (h,)| t.dropout(h, 1.5, &mut rng, true),
        (Const(&h),),
    )?;
    Ok(())
}

fn hessian_buffer_length() -> Result<(), Seen> {
    let mut h = vec![0.0; 3];
    let mut tape = scalar::Tape::new();
    tape.hessian_into(&shade_fn!(sum_sq(&[S])), &[1.0, 2.0], (), &mut h)?;
    Ok(())
}

fn cross_entropy_of_a_vector() -> Result<(), Seen> {
    let logits = Array1::<f64>::zeros(4);
    let labels = [0usize, 1, 1, 0];
    let mut bufs = TapeBuffers::new();
    tensor::value(
        &mut bufs,
        |t, (z, y)| t.cross_entropy(z, y, Rows::All),
        (Const(&logits), Const(&labels[..])),
    )?;
    Ok(())
}

fn labels_beyond_classes() -> Result<(), Seen> {
    let logits = Array2::<f64>::zeros((3, 2));
    let labels = [0usize, 1, 2];
    let mut bufs = TapeBuffers::new();
    tensor::value(
        &mut bufs,
        |t, (z, y)| t.cross_entropy(z, y, Rows::All),
        (Const(&logits), Const(&labels[..])),
    )?;
    Ok(())
}

fn anomaly_ln_of_negative() -> Result<(), Seen> {
    let x = array![0.5, -1.0, 2.0];
    let w = array![1.0, 1.0, 1.0];
    let mut dw = Array1::zeros(3);
    let mut bufs = TapeBuffers::new();
    detect_anomaly(&mut bufs, |bufs| {
        tensor::gradient(
            bufs,
            |t, (w, x)| {
                let p = t.mul(w, x)?;
                let l = t.ln(p)?;
                t.sum(l)
            },
            (Duplicated(&w, &mut dw), Const(&x)),
        )
    })?;
    Ok(())
}

fn anomaly_sqrt_at_zero_backward() -> Result<(), Seen> {
    // The Euclidean norm of a row that happens to be zero.
    let x = array![[3.0, 4.0], [0.0, 0.0]];
    let mut dx = Array2::zeros((2, 2));
    let mut bufs = TapeBuffers::new();
    detect_anomaly(&mut bufs, |bufs| {
        tensor::gradient(
            bufs,
            |t, (x,)| {
                let sq = t.mul(x, x)?;
                let s = t.sum_axis(sq, 1)?;
                let n = t.sqrt(s)?;
                t.sum(n)
            },
            (Duplicated(&x, &mut dx),),
        )
    })?;
    Ok(())
}

/// Writes three outputs.
fn three<S: Real>(y: &mut [S], x: &[S]) {
    y[0] = x[0];
    y[1] = x[1];
    y[2] = x[0] * x[1];
}

fn function_indexes_past_outputs() -> Result<(), Seen> {
    // Called with a buffer of two outputs: `y[2]` is out of bounds; the panic becomes
    // the error.
    let mut y = [0.0; 2];
    scalar::jacobian_reverse_inplace(shade_fn!(three(&mut [S], &[S])), &mut y, &[1.0, 2.0], ())?;
    Ok(())
}
