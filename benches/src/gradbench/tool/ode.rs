//! The tool's `ode`: input `{"x": [n floats], "s": steps}`; functions `primal` (n
//! floats) and `gradient` (of the last component, n floats).

use serde_json::Value;
use shade_autodiff::Const;
use shade_autodiff::scalar::Tape;

use super::input::{field, index, numbers, to_list};
use super::{Engine, Run, pick};
use crate::gradbench::ode::{OdeLastTape, ode, ode_gradient, ode_tape};

struct OdeRun {
    gradient: bool,
    engine: Engine,
    x: Vec<f64>,
    s: usize,
    out: Vec<f64>,
    y: Vec<f64>,
    dy: Vec<f64>,
    tape: Tape,
}

impl Run for OdeRun {
    fn run(&mut self) -> Result<(), String> {
        match (self.engine, self.gradient) {
            (Engine::Tape, false) => ode_tape(&mut self.out, &self.x, self.s),
            (Engine::Tape, true) => self
                .tape
                .gradient_into(&OdeLastTape, &self.x, (Const(&self.s),), &mut self.out)
                .map_err(|e| e.to_string())?,
            (Engine::Macro, false) => ode(&self.x, self.s, &mut self.out),
            (Engine::Macro, true) => {
                ode_gradient(&self.x, self.s, &mut self.y, &mut self.dy, &mut self.out)
            }
        }
        Ok(())
    }
    fn output(&self) -> Value {
        to_list(&self.out)
    }
}

/// Prepares `primal` or `gradient`.
pub(super) fn prepare(
    function: &str,
    input: &Value,
    engine: Engine,
) -> Result<Box<dyn Run>, String> {
    let gradient = pick("ode", function, ["primal", "gradient"])?;
    let x = numbers(field(input, "x")?, "x")?;
    let s = index(field(input, "s")?, "s")?;
    if x.is_empty() || s == 0 {
        return Err(format!(
            "`x` must not be empty and `s` positive, found {} and {s}",
            x.len()
        ));
    }
    let n = x.len();
    Ok(Box::new(OdeRun {
        gradient,
        engine,
        out: vec![0.0; n],
        y: vec![0.0; n],
        dy: vec![0.0; n],
        x,
        s,
        tape: Tape::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradbench::ode::ode_last_tape;
    use crate::gradbench::support::{assert_close, central_gradient, uniform};
    use serde_json::json;

    #[test]
    fn gradient_matches_central_differences_with_both_engines() {
        // Values of order one (the eval's n ≥ 1000 makes the last component tiny).
        let x: Vec<f64> = uniform(31, 6).iter().map(|u| 0.5 + u).collect();
        for s in [1, 3] {
            let fd = central_gradient(|x| ode_last_tape(x, &s), &x, 1e-6);
            for engine in [Engine::Tape, Engine::Macro] {
                let input = json!({"x": x, "s": s});
                let mut r = prepare("gradient", &input, engine).unwrap();
                r.run().unwrap();
                r.run().unwrap();
                let g: Vec<f64> = serde_json::from_value(r.output()).unwrap();
                assert_close("ode gradient", &g, &fd, 1e-8);
                let mut p = prepare("primal", &input, engine).unwrap();
                p.run().unwrap();
                let y: Vec<f64> = serde_json::from_value(p.output()).unwrap();
                assert!((y[5] - ode_last_tape(&x, &s)).abs() < 1e-12);
            }
        }
    }
}
