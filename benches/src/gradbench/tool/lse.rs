//! The tool's `lse`: input `{"x": [n floats]}`, functions `primal` and `gradient`.

use serde_json::Value;

use super::input::{field, numbers};
use super::{Engine, GradientEval, Run, generated, on_tape, pick, show_list};
use crate::gradbench::lse::{LseTape, d_lse, lse, lse_tape};

/// Prepares `primal` or `gradient`.
pub(super) fn prepare(
    function: &str,
    input: &Value,
    engine: Engine,
) -> Result<Box<dyn Run>, String> {
    let gradient = pick("lse", function, ["primal", "gradient"])?;
    let x = numbers(field(input, "x")?, "x")?;
    if x.is_empty() {
        return Err("`x` must not be empty".into());
    }
    Ok(match engine {
        Engine::Tape => GradientEval::boxed(
            gradient,
            x,
            (),
            |x, ()| lse_tape(x),
            on_tape(|tape, x, (), g| tape.gradient_into(&LseTape, x, (), g)),
            show_list,
        ),
        Engine::Macro => GradientEval::boxed(
            gradient,
            x,
            (),
            |x, ()| lse(x),
            generated(|x, (), g| {
                d_lse(x, g, 1.0);
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
        let x: Vec<f64> = uniform(1, 40).iter().map(|u| 20.0 * u - 10.0).collect();
        let fd = central_gradient(lse, &x, 1e-6);
        for engine in [Engine::Tape, Engine::Macro] {
            let mut r = prepare("gradient", &json!({ "x": x }), engine).unwrap();
            r.run().unwrap();
            // A second run must not accumulate into the first one's result.
            r.run().unwrap();
            let g: Vec<f64> = serde_json::from_value(r.output()).unwrap();
            assert_close("lse gradient", &g, &fd, 1e-7);
            assert!((g.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
    }
}
