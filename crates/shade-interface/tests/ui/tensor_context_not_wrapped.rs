// A tensor program's sparse matrix passed bare (not as `Constant(&a)`): one error,
// our message.
use ndarray::Array2;
use shade_autodiff::tensor::{SparseMatrix, Tape, Var};
use shade_interface::{AutoShade, tensor};

fn main() {
    let a = SparseMatrix::new(sprs::CsMatI::<f64, u32, usize>::eye(2));
    let w = Array2::<f64>::zeros((2, 2));
    let _ = tensor::gradient(
        |t: &mut Tape<'_, f64>, (w, &(a,)): (Var, &(&SparseMatrix<f64>,))| {
            let h = t.spmm(a, w)?;
            t.sum(h)
        },
        &AutoShade::REVERSE,
        &w,
        (&a,),
    );
}
