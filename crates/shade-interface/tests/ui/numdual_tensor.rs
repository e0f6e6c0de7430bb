// A scalar-only backend asked for a tensor program: a compile error with our own
// message naming the backends that can.
use ndarray::Array2;
use shade_autodiff::tensor::{Tape, Var};
use shade_interface::{AutoNumDual, tensor};

fn main() {
    let w = Array2::<f64>::zeros((2, 2));
    let _ = tensor::gradient(|t: &mut Tape<'_, f64>, (w, _): (Var, &())| t.sum(w), &AutoNumDual, &w, ());
}
