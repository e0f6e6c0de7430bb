//! A user project with `shade-interface` as its only dependency: the gradient of a
//! scalar function written once against `Real`, with two backends, the Jacobian of a
//! vector-valued one (no output length given), and the gradient of a tensor program
//! over an ndarray matrix.

// `Real`, `shade_fn!`, the tensor layer's `Tape` / `Var` and ndarray: all re-exported.
use shade_interface::ndarray::{Array2, array};
use shade_interface::tensor::{Tape, Var};
use shade_interface::{
    AutoFiniteDiff, AutoShade, Constant, InterfaceResult, Real, gradient, jacobian, shade_fn,
    tensor,
};

/// `sum_i (x_i - w_i)^2 + x_0 x_1`
fn loss<S: Real>(x: &[S], w: &[f64]) -> S {
    let sq: S = x.iter().zip(w).map(|(&xi, &wi)| (xi - wi).powi(2)).sum();
    sq + x[0] * x[1]
}

/// The gradient of `loss` at `x` with the native backend and with central differences.
fn scalar_gradients(x: &[f64], w: &[f64]) -> InterfaceResult<(Vec<f64>, Vec<f64>)> {
    let f = shade_fn!(loss(&[S], &[f64]));
    let native = gradient(f, &AutoShade::REVERSE, x, (Constant(w),))?;
    let fd = gradient(f, &AutoFiniteDiff::CENTRAL, x, (Constant(w),))?;
    Ok((native, fd))
}

/// `(x0 x1, sin x0, x1²)`: three outputs, their number never written down.
fn fields<S: Real>(x: &[S]) -> Vec<S> {
    vec![x[0] * x[1], x[0].sin(), x[1] * x[1]]
}

/// The Jacobian of `fields` (row-major, 3 × 2).
fn fields_jacobian(x: &[f64]) -> InterfaceResult<Vec<f64>> {
    jacobian(
        shade_fn!(fields(&[S]) -> Vec<S>),
        &AutoShade::FORWARD,
        x,
        (),
    )
}

/// The gradient of `sum(tanh(x · w))` with respect to `w`.
fn tensor_gradient(x: &Array2<f64>, w: &Array2<f64>) -> InterfaceResult<Array2<f64>> {
    let program = |t: &mut Tape<'_, f64>, (w, &(x,)): (Var, &(Var,))| {
        let h = t.matmul(x, w)?;
        let h = t.tanh(h)?;
        t.sum(h)
    };
    let g = tensor::gradient(program, &AutoShade::REVERSE, w, (Constant(x),))?;
    Ok(g.into_dimensionality()
        .expect("the gradient has the shape of w"))
}

fn main() -> InterfaceResult<()> {
    let (native, fd) = scalar_gradients(&[1.0, 2.0], &[0.5, 0.5])?;
    println!("gradient: {native:?} (finite differences: {fd:?})");
    println!("jacobian: {:?}", fields_jacobian(&[1.0, 2.0])?);
    let x = array![[1.0, -1.0], [0.5, 2.0]];
    let g = tensor_gradient(&x, &Array2::from_elem((2, 3), 0.1))?;
    println!("tensor gradient:\n{g}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use shade_interface::prepare_gradient;

    #[test]
    fn gradients_agree_with_the_analytic_ones() {
        // d/dx0 = 2 (x0 - w0) + x1 = 3, d/dx1 = 2 (x1 - w1) + x0 = 4.
        let (native, fd) = scalar_gradients(&[1.0, 2.0], &[0.5, 0.5]).unwrap();
        assert_eq!(native, [3.0, 4.0]);
        assert!(native.iter().zip(&fd).all(|(a, b)| (a - b).abs() < 1e-8));

        // d/dw_kj sum tanh(x w) = sum_i x_ik (1 - tanh^2((x w)_ij)).
        let x = array![[1.0, -1.0], [0.5, 2.0]];
        let w = array![[0.1, -0.2, 0.3], [0.4, 0.0, -0.5]];
        let g = tensor_gradient(&x, &w).unwrap();
        let h = x.dot(&w);
        for k in 0..2 {
            for j in 0..3 {
                let want: f64 = (0..2)
                    .map(|i| x[[i, k]] * (1.0 - h[[i, j]].tanh().powi(2)))
                    .sum();
                assert!((g[[k, j]] - want).abs() < 1e-12, "[{k}, {j}]");
            }
        }
    }

    #[test]
    fn the_jacobian_has_as_many_rows_as_the_function_returns() {
        let j = fields_jacobian(&[1.0, 2.0]).unwrap();
        assert_eq!(j, [2.0, 1.0, 1f64.cos(), 0.0, 0.0, 4.0]);
    }

    #[test]
    fn a_wrong_length_is_a_coded_error() {
        let f = shade_fn!(loss(&[S], &[f64]));
        let w = [0.5, 0.5];
        let mut prep =
            prepare_gradient(f, &AutoShade::REVERSE, &[1.0, 2.0], (Constant(&w),)).unwrap();
        let mut out = [0.0; 3];
        let e = prep
            .gradient_into(&[1.0, 2.0], (Constant(&w),), &mut out)
            .unwrap_err();
        assert_eq!(e.code(), "SHADE-E0201", "{e}");
        assert!(e.to_string().contains('3'), "{e}");
    }
}
