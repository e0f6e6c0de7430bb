//! The tool's `particle`: input `{"w": w0}`; functions `ff`, `fr`, `rf`, `rr` (the
//! outer and inner modes), each returning the optimal control. Both engines run it on
//! the tape (see [`super::MODULES`]).

use serde_json::Value;

use super::input::{field, finite, number};
use super::{Engine, Run, unknown_function};
use crate::gradbench::optimise::Mode;
use crate::gradbench::particle::solve;

/// The two modes named by a function (`ff`, `fr`, `rf`, `rr`).
pub(super) fn modes(module: &str, function: &str) -> Result<(Mode, Mode), String> {
    let mut letters = function.chars().map(Mode::from_letter);
    match (letters.next(), letters.next(), letters.next()) {
        (Some(Some(o)), Some(Some(i)), None) => Ok((o, i)),
        _ => Err(unknown_function(
            module,
            function,
            &["ff", "fr", "rf", "rr"],
        )),
    }
}

struct ParticleRun {
    w0: f64,
    modes: (Mode, Mode),
    out: f64,
}

impl Run for ParticleRun {
    fn run(&mut self) -> Result<(), String> {
        self.out = solve(self.w0, self.modes.0, self.modes.1)?;
        Ok(())
    }
    fn output(&self) -> Value {
        finite(self.out)
    }
}

/// Prepares `ff`, `fr`, `rf` or `rr`.
pub(super) fn prepare(
    function: &str,
    input: &Value,
    _engine: Engine,
) -> Result<Box<dyn Run>, String> {
    Ok(Box::new(ParticleRun {
        modes: modes("particle", function)?,
        w0: number(field(input, "w")?, "w")?,
        out: 0.0,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_function_name_picks_its_modes() {
        assert_eq!(
            modes("particle", "fr").unwrap(),
            (Mode::Forward, Mode::Reverse)
        );
        assert!(
            modes("particle", "fx")
                .unwrap_err()
                .contains("ff, fr, rf, rr")
        );
        assert!(modes("particle", "rrr").is_err());
        let mut r = prepare("rf", &json!({"w": 0.0}), Engine::Tape).unwrap();
        r.run().unwrap();
        let w = r.output().as_f64().unwrap();
        assert!((w - 0.207_191_874_648_611_6).abs() < 1e-6, "{w}");
    }
}
