//! GradBench `lstm` (ADBench's LSTM with diagonal weights): `l` layers of hidden size
//! `b` run over a sequence of `c` one-hot-ish characters; the loss is the mean
//! log-likelihood of each next character.
//!
//! Layouts (flattened rows): `main` has `2l` rows of `4b` (layer `i`: weights
//! forget, ingate, outgate, change, then the biases in the same order), `extra` 3 rows
//! of `b` (input weight, output weight, output bias), `state` `2l` rows of `b` (layer
//! `i`: hidden, then cell), `seq` `c` rows of `b`.

//!
//! Two forms of the same loss: [`lstm_objective`] for the compile-time engine and
//! [`lstm_objective_tape`] for the tape, generic over [`Real`] with the parameters in
//! one slice `[main, extra]`.

// Index loops are the form the compile-time engine differentiates.
#![allow(clippy::needless_range_loop)]

use shade_autodiff::autodiff_reverse;
use shade_autodiff::scalar::{Real, shade_fn};

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

fn sigmoid<S: Real>(x: S) -> S {
    ((-x).exp() + 1.0).recip()
}

/// [`lstm_objective`] for any [`Real`]: the tape's form, for `params = [main, extra]`.
pub fn lstm_objective_tape<S: Real>(params: &[S], state: &[f64], seq: &[f64], l: &usize) -> S {
    let l = *l;
    let b = params.len() / (8 * l + 3);
    let c = seq.len() / b;
    let (main, extra) = params.split_at(8 * l * b);
    let (in_w, rest) = extra.split_at(b);
    let (out_w, out_b) = rest.split_at(b);
    // The caller's state is copied: it is not modified.
    let mut hidden: Vec<S> = Vec::with_capacity(l * b);
    let mut cell: Vec<S> = Vec::with_capacity(l * b);
    for layer in 0..l {
        let rows = &state[2 * layer * b..(2 * layer + 2) * b];
        hidden.extend(rows[..b].iter().map(|&v| S::cst(v)));
        cell.extend(rows[b..].iter().map(|&v| S::cst(v)));
    }
    let mut input: Vec<S> = vec![S::zero(); b];
    let mut ypred: Vec<S> = vec![S::zero(); b];
    let mut total = S::zero();
    for t in 0..c.saturating_sub(1) {
        let chars = &seq[t * b..(t + 1) * b];
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
        let gold = &seq[(t + 1) * b..(t + 2) * b];
        for i in 0..b {
            // The targets are bits: a zero target adds nothing (and records nothing).
            if gold[i] != 0.0 {
                total += (ypred[i] - lse) * gold[i];
            }
        }
    }
    -total / ((c.saturating_sub(1) * b) as f64)
}

shade_fn!(pub(crate) LstmTape = lstm_objective_tape(&[S], &[f64], &[f64], &usize));

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

#[cfg(test)]
mod tests {
    use super::super::support::{Lcg, assert_close};
    use super::*;
    use shade_autodiff::Const;
    use shade_autodiff::scalar::Tape;

    #[test]
    fn the_two_forms_agree() {
        let mut r = Lcg::new(5);
        for (l, c) in [(1, 2), (2, 6)] {
            let (main, extra, state, seq) = lstm_problem(l, c, &mut || r.next_f64());
            let (mut dm, mut de) = (vec![0.0; main.len()], vec![0.0; extra.len()]);
            let y = d_lstm_objective(&main, &mut dm, &extra, &mut de, &state, &seq, l, 1.0);
            assert_eq!(y, lstm_objective(&main, &extra, &state, &seq, l));
            let p: Vec<f64> = main.iter().chain(&extra).copied().collect();
            let tape_y = lstm_objective_tape(&p, &state, &seq, &l);
            assert_close("value", &[y], &[tape_y], 1e-12);
            let mut want = vec![0.0; p.len()];
            Tape::new()
                .gradient_into(
                    &LstmTape,
                    &p,
                    (Const(&state[..]), Const(&seq[..]), Const(&l)),
                    &mut want,
                )
                .unwrap();
            assert_close("gradient", &[dm, de].concat(), &want, 1e-10);
        }
    }

    #[test]
    fn one_layer_one_step_matches_the_formulas() {
        // l = 1, b = 14, c = 2: one prediction of the second character from the first;
        // only the first bit of each character is set, so lane 0 carries the target.
        let b = 14;
        let main: Vec<f64> = (0..8 * b).map(|i| 0.1 + 0.01 * i as f64).collect();
        let extra: Vec<f64> = (0..3 * b).map(|i| 0.9 - 0.02 * i as f64).collect();
        let state: Vec<f64> = (0..2 * b).map(|i| 0.25 + 0.01 * i as f64).collect();
        let mut seq = vec![0.0; 2 * b];
        seq[0] = 1.0;
        seq[b] = 1.0;
        let sig = |x: f64| 1.0 / (1.0 + (-x).exp());
        let mut ypred = vec![0.0; b];
        for i in 0..b {
            let x = seq[i] * extra[i];
            let (h, c) = (state[i], state[b + i]);
            let w = |g: usize| main[g * b + i];
            let bias = |g: usize| main[4 * b + g * b + i];
            let cell =
                c * sig(x * w(0) + bias(0)) + sig(h * w(1) + bias(1)) * (h * w(3) + bias(3)).tanh();
            let hid = sig(x * w(2) + bias(2)) * cell.tanh();
            ypred[i] = hid * extra[b + i] + extra[2 * b + i];
        }
        let lse = (ypred.iter().map(|y| y.exp()).sum::<f64>() + 2.0).ln();
        let want = -(ypred[0] - lse) / b as f64;
        let p: Vec<f64> = main.iter().chain(&extra).copied().collect();
        for got in [
            lstm_objective(&main, &extra, &state, &seq, 1),
            lstm_objective_tape(&p, &state, &seq, &1),
        ] {
            assert!((got - want).abs() < 1e-14, "{got} vs {want}");
        }
    }
}
