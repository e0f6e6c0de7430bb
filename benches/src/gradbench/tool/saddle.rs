//! The tool's `saddle`: input `{"start": [2 floats]}`; functions `ff`, `fr`, `rf`, `rr`
//! (the outer and inner modes), each returning `[x₁, x₂, y₁, y₂]`. Both engines run it
//! on the tape (see [`super::MODULES`]).

use serde_json::Value;

use super::input::{field, numbers, to_list};
use super::particle::modes;
use super::{Engine, Run};
use crate::gradbench::optimise::Mode;
use crate::gradbench::saddle::solve;

struct SaddleRun {
    start: [f64; 2],
    modes: (Mode, Mode),
    out: [f64; 4],
}

impl Run for SaddleRun {
    fn run(&mut self) -> Result<(), String> {
        self.out = solve(self.start, self.modes.0, self.modes.1)?;
        Ok(())
    }
    fn output(&self) -> Value {
        to_list(&self.out)
    }
}

/// Prepares `ff`, `fr`, `rf` or `rr`.
pub(super) fn prepare(
    function: &str,
    input: &Value,
    _engine: Engine,
) -> Result<Box<dyn Run>, String> {
    let start = numbers(field(input, "start")?, "start")?;
    let [a, b] = start[..] else {
        return Err(format!(
            "`start` must have 2 entries, found {}",
            start.len()
        ));
    };
    Ok(Box::new(SaddleRun {
        modes: modes("saddle", function)?,
        start: [a, b],
        out: [0.0; 4],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_input_needs_two_starting_coordinates() {
        let e = prepare("ff", &json!({"start": [1.0]}), Engine::Tape)
            .err()
            .unwrap();
        assert!(e.contains("2 entries"), "{e}");
        let mut r = prepare("rr", &json!({"start": [1.0, 1.0]}), Engine::Tape).unwrap();
        r.run().unwrap();
        let p: Vec<f64> = serde_json::from_value(r.output()).unwrap();
        assert!(
            p.iter()
                .all(|v| (v - 8.246_324_826_140_356e-6).abs() < 1e-9),
            "{p:?}"
        );
    }
}
