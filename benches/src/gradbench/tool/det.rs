//! The tool's `det`: input `{"A": [ell² floats, row-major], "ell": ell}`; functions
//! `primal` and `gradient`.

use serde_json::Value;
use shade_autodiff::Const;

use super::input::{field, index, numbers};
use super::{Engine, GradientEval, Run, generated, on_tape, pick, show_list};
use crate::gradbench::det::{DetTape, MAX_ELL, d_determinant, determinant, determinant_tape};

/// Prepares `primal` or `gradient`.
pub(super) fn prepare(
    function: &str,
    input: &Value,
    engine: Engine,
) -> Result<Box<dyn Run>, String> {
    let gradient = pick("det", function, ["primal", "gradient"])?;
    let a = numbers(field(input, "A")?, "A")?;
    let ell = index(field(input, "ell")?, "ell")?;
    if ell == 0 || ell > MAX_ELL || a.len() != ell * ell {
        return Err(format!(
            "`A` must hold ell² entries for 1 ≤ ell ≤ {MAX_ELL}, found {} for ell = {ell}",
            a.len()
        ));
    }
    Ok(match engine {
        Engine::Tape => GradientEval::boxed(
            gradient,
            a,
            ell,
            determinant_tape,
            on_tape(|tape, a, ell, g| tape.gradient_into(&DetTape, a, (Const(ell),), g)),
            show_list,
        ),
        Engine::Macro => GradientEval::boxed(
            gradient,
            a,
            ell,
            |a, ell| determinant(a, *ell),
            generated(|a, ell, g| {
                d_determinant(a, g, *ell, 1.0);
            }),
            show_list,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradbench::support::{assert_close, central_gradient, uniform};
    use serde_json::json;

    #[test]
    fn gradient_matches_central_differences_with_both_engines() {
        for ell in [1usize, 2, 4, 6] {
            let a = uniform(50 + ell as u64, ell * ell);
            let input = json!({"A": a, "ell": ell});
            // The determinant is linear in each entry: central differences are exact up
            // to rounding.
            let fd = central_gradient(|x| determinant_tape(x, &ell), &a, 1e-5);
            for engine in [Engine::Tape, Engine::Macro] {
                let mut r = prepare("gradient", &input, engine).unwrap();
                r.run().unwrap();
                r.run().unwrap();
                let g: Vec<f64> = serde_json::from_value(r.output()).unwrap();
                assert_close("det gradient", &g, &fd, 1e-9);
            }
        }
        let e = prepare("primal", &json!({"A": [1.0, 2.0], "ell": 2}), Engine::Macro)
            .err()
            .unwrap();
        assert!(e.contains("ell²"), "{e}");
    }
}
