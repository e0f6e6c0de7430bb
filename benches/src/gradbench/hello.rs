//! GradBench's `hello` eval: `square(x) = x²` and `double(x)`, its derivative `2x`,
//! computed by reverse mode.

use serde_json::Value;
use shade_autodiff::scalar::{Real, Tape, shade_fn};

use super::input::{finite, number};
use super::{Engine, Run, pick};

/// `x²`, the eval's one objective (its argument is a one-element slice).
pub fn square<S: Real>(x: &[S]) -> S {
    x[0] * x[0]
}

shade_fn!(Square = square(&[S]));

struct Hello {
    double: bool,
    x: f64,
    out: f64,
    tape: Tape,
    g: [f64; 1],
}

impl Run for Hello {
    fn run(&mut self) -> Result<(), String> {
        self.out = if self.double {
            self.tape
                .gradient_into(&Square, &[self.x], (), &mut self.g)
                .map_err(|e| e.to_string())?;
            self.g[0]
        } else {
            square(&[self.x])
        };
        Ok(())
    }
    fn output(&self) -> Value {
        finite(self.out)
    }
}

/// Prepares `square` or `double`; the input is a number.
pub fn prepare(function: &str, input: &Value, engine: Engine) -> Result<Box<dyn Run>, String> {
    let Engine::Tape = engine;
    let double = pick("hello", function, ["square", "double"])?;
    Ok(Box::new(Hello {
        double,
        x: number(input, "input")?,
        out: 0.0,
        tape: Tape::new(),
        g: [0.0],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn double_is_the_derivative_of_square() {
        let mut r = prepare("double", &json!(1.5), Engine::Tape).unwrap();
        r.run().unwrap();
        assert_eq!(r.output(), json!(3.0));
        let mut r = prepare("square", &json!(1.5), Engine::Tape).unwrap();
        r.run().unwrap();
        assert_eq!(r.output(), json!(2.25));
    }
}
