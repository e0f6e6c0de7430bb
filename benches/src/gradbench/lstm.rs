//! GradBench's `lstm` eval (ADBench's LSTM): the loss of an `l`-layer LSTM with
//! diagonal weights predicting a bit sequence (`objective`), and its gradient with
//! respect to the main and extra parameters (`jacobian`), by reverse mode.

use serde_json::Value;
use shade_autodiff::Const;
use shade_autodiff::scalar::{Real, shade_fn};

use super::input::{field, matrix, matrix_with};
use super::{Engine, GradientEval, Run, pick, show_list};

/// The constants of an LSTM problem.
#[derive(Clone, Debug)]
pub struct LstmData {
    /// Layers.
    pub l: usize,
    /// Hidden size = bits per character.
    pub b: usize,
    /// Initial state: `2l × b` (row `2i` hidden, `2i + 1` cell of layer `i`).
    pub state: Vec<f64>,
    /// The sequence, `c × b`, one character's bits per row.
    pub sequence: Vec<f64>,
}

impl LstmData {
    /// Number of characters.
    pub fn c(&self) -> usize {
        self.sequence.len() / self.b
    }

    /// `8lb` main parameters followed by `3b` extra ones.
    pub fn num_params(&self) -> usize {
        8 * self.l * self.b + 3 * self.b
    }
}

fn sigmoid<S: Real>(x: S) -> S {
    ((-x).exp() + 1.0).recip()
}

/// The loss for `params = [main_params (2l × 4b) row-major, extra_params (3 × b)]`.
pub fn lstm_objective<S: Real>(params: &[S], data: &LstmData) -> S {
    let (l, b, c) = (data.l, data.b, data.c());
    let (main, extra) = params.split_at(8 * l * b);
    let (in_w, rest) = extra.split_at(b);
    let (out_w, out_b) = rest.split_at(b);
    // The caller's state is copied: it is not modified.
    let mut hidden: Vec<S> = Vec::with_capacity(l * b);
    let mut cell: Vec<S> = Vec::with_capacity(l * b);
    for layer in 0..l {
        let rows = &data.state[2 * layer * b..(2 * layer + 2) * b];
        hidden.extend(rows[..b].iter().map(|&v| S::cst(v)));
        cell.extend(rows[b..].iter().map(|&v| S::cst(v)));
    }
    let mut input: Vec<S> = vec![S::zero(); b];
    let mut ypred: Vec<S> = vec![S::zero(); b];
    let mut total = S::zero();
    for t in 0..c.saturating_sub(1) {
        let chars = &data.sequence[t * b..(t + 1) * b];
        for i in 0..b {
            input[i] = in_w[i] * chars[i];
        }
        for layer in 0..l {
            let w = &main[8 * b * layer..8 * b * (layer + 1)];
            let (weight, bias) = w.split_at(4 * b);
            for i in 0..b {
                let x = if layer == 0 {
                    input[i]
                } else {
                    hidden[(layer - 1) * b + i]
                };
                let h = hidden[layer * b + i];
                let forget = sigmoid(x * weight[i] + bias[i]);
                let ingate = sigmoid(h * weight[b + i] + bias[b + i]);
                let outgate = sigmoid(x * weight[2 * b + i] + bias[2 * b + i]);
                let change = (h * weight[3 * b + i] + bias[3 * b + i]).tanh();
                let cl = cell[layer * b + i] * forget + ingate * change;
                cell[layer * b + i] = cl;
                hidden[layer * b + i] = outgate * cl.tanh();
            }
        }
        let last = &hidden[(l - 1) * b..];
        let mut sum_exp = S::zero();
        for i in 0..b {
            ypred[i] = last[i] * out_w[i] + out_b[i];
            sum_exp += ypred[i].exp();
        }
        // ADBench's normalisation: ln(2 + Σ exp), no shift.
        let lse = (sum_exp + 2.0).ln();
        let gold = &data.sequence[(t + 1) * b..(t + 2) * b];
        for i in 0..b {
            // The targets are bits: a zero target adds nothing.
            if gold[i] != 0.0 {
                total += (ypred[i] - lse) * gold[i];
            }
        }
    }
    -total / ((c.saturating_sub(1) * b) as f64)
}

shade_fn!(Lstm = lstm_objective(&[S], &LstmData));

/// Reads the input into the data and the parameter vector.
pub fn parse(input: &Value) -> Result<(LstmData, Vec<f64>), String> {
    let (rows, cols, mut params) = matrix(field(input, "main_params")?, "main_params")?;
    if rows == 0 || rows % 2 != 0 || cols == 0 || cols % 4 != 0 {
        return Err(format!(
            "`main_params` must have 2l rows of 4b entries, found {rows} rows of {cols}"
        ));
    }
    let (l, b) = (rows / 2, cols / 4);
    let (er, extra) = matrix_with(field(input, "extra_params")?, "extra_params", b)?;
    let (sr, state) = matrix_with(field(input, "state")?, "state", b)?;
    let (cr, sequence) = matrix_with(field(input, "sequence")?, "sequence", b)?;
    if er != 3 || sr != 2 * l || cr == 0 {
        return Err(format!(
            "`extra_params` must have 3 rows, `state` 2l = {} and `sequence` at least one; \
             found {er}, {sr}, {cr}",
            2 * l
        ));
    }
    params.extend(extra);
    Ok((
        LstmData {
            l,
            b,
            state,
            sequence,
        },
        params,
    ))
}

/// Prepares `objective` or `jacobian`.
pub fn prepare(function: &str, input: &Value, engine: Engine) -> Result<Box<dyn Run>, String> {
    let Engine::Tape = engine;
    let jacobian = pick("lstm", function, ["objective", "jacobian"])?;
    let (data, params) = parse(input)?;
    Ok(GradientEval::boxed(
        jacobian,
        params,
        data,
        lstm_objective,
        |tape, p, data, g| tape.gradient_into(&Lstm, p, (Const(data),), g),
        show_list,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradbench::testing::{assert_close, central_gradient, uniform};
    use serde_json::json;
    use shade_autodiff::scalar::Tape;

    #[test]
    fn gradient_matches_central_differences() {
        let (l, b, c) = (2, 3, 6);
        let bits: Vec<f64> = uniform(3, c * b)
            .iter()
            .map(|u| (u * 2.0).floor())
            .collect();
        let data = LstmData {
            l,
            b,
            state: uniform(4, 2 * l * b),
            sequence: bits,
        };
        let params = uniform(5, data.num_params());
        let mut g = vec![0.0; params.len()];
        Tape::new()
            .gradient_into(&Lstm, &params, (Const(&data),), &mut g)
            .unwrap();
        let fd = central_gradient(|p| lstm_objective(p, &data), &params, 1e-6);
        assert_close("lstm gradient", &g, &fd, 1e-7);
    }

    #[test]
    fn one_layer_one_step_matches_the_formulas() {
        // l = 1, b = 1, c = 2: one prediction of the second bit from the first.
        let p = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.1, 1.2];
        let input = json!({
            "main_params": [[p[0], p[1], p[2], p[3]], [p[4], p[5], p[6], p[7]]],
            "extra_params": [[p[8]], [p[9]], [p[10]]],
            "state": [[0.25], [0.5]],
            "sequence": [[1.0], [1.0]],
        });
        let (data, params) = parse(&input).unwrap();
        let s = |x: f64| 1.0 / (1.0 + (-x).exp());
        let x = 1.0 * p[8];
        let (h, c) = (0.25, 0.5);
        let cell = c * s(x * p[0] + p[4]) + s(h * p[1] + p[5]) * (h * p[3] + p[7]).tanh();
        let hid = s(x * p[2] + p[6]) * cell.tanh();
        let y = hid * p[9] + p[10];
        let want = -(y - (y.exp() + 2.0).ln());
        assert!((lstm_objective(&params, &data) - want).abs() < 1e-14);
    }
}
