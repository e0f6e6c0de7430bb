//! The tool's `llsq`: input `{"x": [m floats], "n": points}`; functions `primal` and
//! `gradient`.

use serde_json::Value;
use shade_autodiff::Const;

use super::input::{field, index, numbers};
use super::{Engine, GradientEval, Run, generated, on_tape, pick, show_list};
use crate::gradbench::llsq::{LlsqTape, d_llsq, llsq, llsq_tape};

/// Prepares `primal` or `gradient`.
pub(super) fn prepare(
    function: &str,
    input: &Value,
    engine: Engine,
) -> Result<Box<dyn Run>, String> {
    let gradient = pick("llsq", function, ["primal", "gradient"])?;
    let x = numbers(field(input, "x")?, "x")?;
    let n = index(field(input, "n")?, "n")?;
    if n < 2 {
        return Err(format!("`n` must be at least 2, found {n}"));
    }
    Ok(match engine {
        Engine::Tape => GradientEval::boxed(
            gradient,
            x,
            n,
            llsq_tape,
            on_tape(|tape, x, n, g| tape.gradient_into(&LlsqTape, x, (Const(n),), g)),
            show_list,
        ),
        Engine::Macro => GradientEval::boxed(
            gradient,
            x,
            n,
            |x, n| llsq(x, *n),
            generated(|x, n, g| {
                d_llsq(x, g, *n, 1.0);
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
        let x = uniform(41, 7);
        let input = json!({"x": x, "n": 33});
        let fd = central_gradient(|x| llsq(x, 33), &x, 1e-6);
        for engine in [Engine::Tape, Engine::Macro] {
            let mut r = prepare("gradient", &input, engine).unwrap();
            r.run().unwrap();
            r.run().unwrap();
            let g: Vec<f64> = serde_json::from_value(r.output()).unwrap();
            assert_close("llsq gradient", &g, &fd, 1e-7);
        }
        assert!(prepare("primal", &json!({"x": x, "n": 1}), Engine::Tape).is_err());
    }
}
