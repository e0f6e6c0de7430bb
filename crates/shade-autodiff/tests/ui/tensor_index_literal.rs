// An untyped index literal is `i32`: one error, our message and the fix.
use ndarray::array;
use shade_autodiff::Const;
use shade_autodiff::tensor::{self, TapeBuffers};

fn main() {
    let x = array![[1.0, 2.0], [3.0, 4.0]];
    let mut bufs = TapeBuffers::new();
    let _ = tensor::value(
        &mut bufs,
        |t, (x,)| t.index_select(x, &[1, 0, 1]),
        (Const(&x),),
    );
}
