//! GradBench `lstm` (ADBench's LSTM with diagonal weights): `l` layers of hidden size
//! `b` run over a sequence of `c` one-hot-ish characters; the loss is the mean
//! log-likelihood of each next character.
//!
//! Layouts (flattened rows): `main` has `2l` rows of `4b` (layer `i`: weights
//! forget, ingate, outgate, change, then the biases in the same order), `extra` 3 rows
//! of `b` (input weight, output weight, output bias), `state` `2l` rows of `b` (layer
//! `i`: hidden, then cell), `seq` `c` rows of `b`.

// Index loops are the form the compile-time engine differentiates.
#![allow(clippy::needless_range_loop)]

use shade_autodiff::autodiff_reverse;

/// The loss `−Σₜ Σᵢ seq[t+1][i] · (ŷₜ[i] − ln(Σⱼ exp ŷₜ[j] + 2)) / ((c − 1) b)`.
#[autodiff_reverse(d_lstm_objective, Duplicated, Duplicated, Const, Const, Const, Active)]
pub fn lstm_objective(main: &[f64], extra: &[f64], state: &[f64], seq: &[f64], l: usize) -> f64 {
    let b = extra.len() / 3;
    let c = seq.len() / b;
    // hs: the input of layer 0, then each layer's hidden state; cs: the cells.
    let mut hs = vec![0.0; (l + 1) * b];
    let mut cs = vec![0.0; l * b];
    let mut ypred = vec![0.0; b];
    for layer in 0..l {
        for i in 0..b {
            hs[(layer + 1) * b + i] = state[2 * layer * b + i];
            cs[layer * b + i] = state[(2 * layer + 1) * b + i];
        }
    }
    let mut total = 0.0;
    for t in 0..c - 1 {
        for i in 0..b {
            hs[i] = seq[t * b + i] * extra[i];
        }
        for layer in 0..l {
            let w = 8 * b * layer;
            for i in 0..b {
                let x = hs[layer * b + i];
                let h = hs[(layer + 1) * b + i];
                let forget = 1.0 / (1.0 + (-(x * main[w + i] + main[w + 4 * b + i])).exp());
                let ingate = 1.0 / (1.0 + (-(h * main[w + b + i] + main[w + 5 * b + i])).exp());
                let outgate =
                    1.0 / (1.0 + (-(x * main[w + 2 * b + i] + main[w + 6 * b + i])).exp());
                let change = (h * main[w + 3 * b + i] + main[w + 7 * b + i]).tanh();
                cs[layer * b + i] = cs[layer * b + i] * forget + ingate * change;
                hs[(layer + 1) * b + i] = outgate * cs[layer * b + i].tanh();
            }
        }
        let mut sum = 0.0;
        for i in 0..b {
            ypred[i] = hs[l * b + i] * extra[b + i] + extra[2 * b + i];
            sum += ypred[i].exp();
        }
        let lse = (sum + 2.0).ln();
        for i in 0..b {
            total += seq[(t + 1) * b + i] * (ypred[i] - lse);
        }
    }
    -total / ((c - 1) * b) as f64
}

/// The inputs of one LSTM problem.
pub type LstmInput = (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>);

/// A random LSTM problem `(main, extra, state, seq)` for `l` layers, `c` characters of
/// `b = 14` bits (one bit set per character, as GradBench's text), from `next`
/// (uniform in `[0, 1)`).
pub fn lstm_problem(l: usize, c: usize, next: &mut impl FnMut() -> f64) -> LstmInput {
    let b = 14;
    let mut vec = |n: usize| -> Vec<f64> { (0..n).map(|_| 2.0 * next() - 1.0).collect() };
    let main = vec(2 * l * 4 * b);
    let extra = vec(3 * b);
    let state = vec(2 * l * b);
    let mut seq = vec![0.0; c * b];
    for t in 0..c {
        let k = (next() * b as f64) as usize % b;
        seq[t * b + k] = 1.0;
    }
    (main, extra, state, seq)
}
