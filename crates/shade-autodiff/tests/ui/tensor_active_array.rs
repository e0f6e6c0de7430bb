// `Active` is for by-value scalars; a tensor program's array takes `Duplicated`.
use ndarray::array;
use shade_autodiff::Active;
use shade_autodiff::tensor::{self, TapeBuffers};

fn main() {
    let x = array![1.0, 2.0];
    let mut bufs = TapeBuffers::new();
    let _ = tensor::gradient(&mut bufs, |t, (x,)| t.sum(x), (Active(&x),));
}
