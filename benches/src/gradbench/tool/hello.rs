//! The tool's `hello`: the input is a number; functions `square` and `double`.

use serde_json::Value;
use shade_autodiff::scalar::Tape;

use super::input::{finite, number};
use super::{Engine, Run, pick};
use crate::gradbench::hello::{SquareTape, d_square, square, square_tape};

struct Hello {
    double: bool,
    engine: Engine,
    x: f64,
    out: f64,
    tape: Tape,
    g: [f64; 1],
}

impl Run for Hello {
    fn run(&mut self) -> Result<(), String> {
        self.out = match (self.engine, self.double) {
            (Engine::Tape, false) => square_tape(&[self.x]),
            (Engine::Tape, true) => {
                self.tape
                    .gradient_into(&SquareTape, &[self.x], (), &mut self.g)
                    .map_err(|e| e.to_string())?;
                self.g[0]
            }
            (Engine::Macro, false) => square(self.x),
            (Engine::Macro, true) => d_square(self.x, 1.0).1,
        };
        Ok(())
    }
    fn output(&self) -> Value {
        finite(self.out)
    }
}

/// Prepares `square` or `double`.
pub(super) fn prepare(
    function: &str,
    input: &Value,
    engine: Engine,
) -> Result<Box<dyn Run>, String> {
    let double = pick("hello", function, ["square", "double"])?;
    Ok(Box::new(Hello {
        double,
        engine,
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
    fn double_is_the_derivative_of_square_with_both_engines() {
        for engine in [Engine::Tape, Engine::Macro] {
            let mut r = prepare("double", &json!(1.5), engine).unwrap();
            r.run().unwrap();
            assert_eq!(r.output(), json!(3.0));
            let mut r = prepare("square", &json!(1.5), engine).unwrap();
            r.run().unwrap();
            assert_eq!(r.output(), json!(2.25));
        }
    }
}
