// An array passed without its activity: one error, our message.
use ndarray::array;
use shade_autodiff::tensor::{self, TapeBuffers};

fn main() {
    let x = array![1.0, 2.0];
    let mut bufs = TapeBuffers::new();
    let _ = tensor::value(&mut bufs, |t, (x,)| t.sum(x), (&x,));
}
