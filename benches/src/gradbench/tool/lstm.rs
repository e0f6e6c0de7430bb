//! The tool's `lstm`: input `main_params` (2l × 4b), `extra_params` (3 × b), `state`
//! (2l × b), `sequence` (c × b); functions `objective` and `jacobian` (the gradient
//! with respect to the main then the extra parameters, flattened row after row).

use serde_json::Value;
use shade_autodiff::Const;

use super::input::{field, matrix, matrix_with};
use super::{Engine, GradientEval, Run, generated, on_tape, pick, show_list};
use crate::gradbench::lstm::{LstmTape, d_lstm_objective, lstm_objective, lstm_objective_tape};

/// The constants of one problem.
struct LstmData {
    l: usize,
    state: Vec<f64>,
    seq: Vec<f64>,
}

/// Reads the input into the data and the parameters `[main, extra]`.
fn parse(input: &Value) -> Result<(LstmData, Vec<f64>), String> {
    let (rows, cols, mut params) = matrix(field(input, "main_params")?, "main_params")?;
    if rows == 0 || rows % 2 != 0 || cols == 0 || cols % 4 != 0 {
        return Err(format!(
            "`main_params` must have 2l rows of 4b entries, found {rows} rows of {cols}"
        ));
    }
    let (l, b) = (rows / 2, cols / 4);
    let (er, extra) = matrix_with(field(input, "extra_params")?, "extra_params", b)?;
    let (sr, state) = matrix_with(field(input, "state")?, "state", b)?;
    let (cr, seq) = matrix_with(field(input, "sequence")?, "sequence", b)?;
    if er != 3 || sr != 2 * l || cr < 2 {
        return Err(format!(
            "`extra_params` must have 3 rows, `state` 2l = {} and `sequence` at least two; \
             found {er}, {sr}, {cr}",
            2 * l
        ));
    }
    params.extend(extra);
    Ok((LstmData { l, state, seq }, params))
}

/// Prepares `objective` or `jacobian`.
pub(super) fn prepare(
    function: &str,
    input: &Value,
    engine: Engine,
) -> Result<Box<dyn Run>, String> {
    let jacobian = pick("lstm", function, ["objective", "jacobian"])?;
    let (data, params) = parse(input)?;
    Ok(match engine {
        Engine::Tape => GradientEval::boxed(
            jacobian,
            params,
            data,
            |p, c| lstm_objective_tape(p, &c.state, &c.seq, &c.l),
            on_tape(|tape, p, c, g| {
                tape.gradient_into(
                    &LstmTape,
                    p,
                    (Const(&c.state[..]), Const(&c.seq[..]), Const(&c.l)),
                    g,
                )
            }),
            show_list,
        ),
        Engine::Macro => GradientEval::boxed(
            jacobian,
            params,
            data,
            |p, c| {
                let (main, extra) = p.split_at(8 * c.l * (c.state.len() / (2 * c.l)));
                lstm_objective(main, extra, &c.state, &c.seq, c.l)
            },
            generated(|p, c, g| {
                let split = 8 * c.l * (c.state.len() / (2 * c.l));
                let (main, extra) = p.split_at(split);
                let (dm, de) = g.split_at_mut(split);
                d_lstm_objective(main, dm, extra, de, &c.state, &c.seq, c.l, 1.0);
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
    fn jacobian_matches_central_differences_with_both_engines() {
        let (l, b, c) = (2, 3, 6);
        let rows = |v: &[f64], cols: usize| -> Vec<Vec<f64>> {
            v.chunks(cols).map(<[f64]>::to_vec).collect()
        };
        let bits: Vec<f64> = uniform(3, c * b)
            .iter()
            .map(|u| (u * 2.0).floor())
            .collect();
        let params = uniform(5, 8 * l * b + 3 * b);
        let input = json!({
            "main_params": rows(&params[..8 * l * b], 4 * b),
            "extra_params": rows(&params[8 * l * b..], b),
            "state": rows(&uniform(4, 2 * l * b), b),
            "sequence": rows(&bits, b),
        });
        let (data, p) = parse(&input).unwrap();
        assert_eq!(p, params);
        let fd = central_gradient(
            |p| lstm_objective_tape(p, &data.state, &data.seq, &data.l),
            &p,
            1e-6,
        );
        for engine in [Engine::Tape, Engine::Macro] {
            let mut r = prepare("jacobian", &input, engine).unwrap();
            r.run().unwrap();
            r.run().unwrap();
            let g: Vec<f64> = serde_json::from_value(r.output()).unwrap();
            assert_close("lstm jacobian", &g, &fd, 1e-7);
        }
        let e = prepare(
            "objective",
            &json!({"main_params": [[1, 2, 3]]}),
            Engine::Tape,
        )
        .err()
        .unwrap();
        assert!(e.contains("2l rows of 4b"), "{e}");
    }
}
