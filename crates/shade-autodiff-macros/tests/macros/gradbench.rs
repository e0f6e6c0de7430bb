//! GradBench's objectives (written once, in `benches/src/gradbench/`): the macro's
//! gradients equal the tape's to 1e-10 relative. The tape's versions below are the
//! same formulas written against `Real`.

#[path = "../../../../benches/src/gradbench/gmm.rs"]
#[allow(dead_code, unreachable_pub)]
mod gmm;
#[path = "../../../../benches/src/gradbench/kmeans.rs"]
#[allow(dead_code, unreachable_pub)]
mod kmeans;
#[path = "../../../../benches/src/gradbench/lse.rs"]
#[allow(dead_code, unreachable_pub)]
mod lse;
#[path = "../../../../benches/src/gradbench/lstm.rs"]
#[allow(dead_code, unreachable_pub)]
mod lstm;

use crate::check::close;
use shade_autodiff::scalar::{Real, gradient, shade_fn};

fn uniform(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn assert_close(name: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{name}: lengths");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(close(*g, *w, 1e-10), "{name}[{k}]: macro {g} vs tape {w}");
    }
}

/// GMM on the tape: `p = [alpha, mu, q, l]`, `dims = [d, k, m]`, `gamma` in `c[0]`.
fn gmm_tape<S: Real>(p: &[S], x: &[f64], dims: &[usize], c: &[f64]) -> S {
    let (d, k, m) = (dims[0], dims[1], dims[2] as i32);
    let n = x.len() / d;
    let ld = d * (d - 1) / 2;
    let (alpha, rest) = p.split_at(k);
    let (mu, rest) = rest.split_at(k * d);
    let (q, l) = rest.split_at(k * d);
    let mut slse = S::zero();
    let mut frob = S::zero();
    let mut sum_q = S::zero();
    for cc in 0..k {
        for j in 0..d {
            frob += q[cc * d + j].exp() * q[cc * d + j].exp();
            sum_q += q[cc * d + j];
        }
        for j in 0..ld {
            frob += l[cc * ld + j] * l[cc * ld + j];
        }
    }
    for i in 0..n {
        let mut beta = Vec::with_capacity(k);
        for cc in 0..k {
            // Q (x − μ) with Q's strictly lower part column by column.
            let xc: Vec<S> = (0..d).map(|j| -mu[cc * d + j] + x[i * d + j]).collect();
            let mut z: Vec<S> = (0..d).map(|r| q[cc * d + r].exp() * xc[r]).collect();
            let mut src = cc * ld;
            for j in 0..d {
                for r in j + 1..d {
                    z[r] += l[src] * xc[j];
                    src += 1;
                }
            }
            let sq: S = z.iter().map(|v| *v * *v).sum();
            let sqk: S = (0..d).map(|j| q[cc * d + j]).sum();
            beta.push(alpha[cc] + sqk - sq * 0.5);
        }
        slse += S::logsumexp(&beta);
    }
    let constant = gmm::gmm_constant(d, k, n, m, c[0]);
    slse - S::logsumexp(alpha) * n as f64 - frob * (c[0] * c[0] * 0.5)
        + sum_q * f64::from(m)
        + constant
}

#[test]
fn gmm_gradient_equals_the_tapes() {
    for &(d, k, n) in &[(2usize, 3usize, 5usize), (4, 5, 12)] {
        let mut p = gmm::GmmProblem::random(d, k, n, &mut uniform(7));
        p.m = 2;
        p.gamma = 0.7;
        let mut g = gmm::GmmGradient::zeros(&p);
        let y = p.gradient(&mut g);
        assert_eq!(y, p.objective());
        let params: Vec<f64> = [&p.alpha, &p.mu, &p.q, &p.l]
            .iter()
            .flat_map(|v| v.iter().copied())
            .collect();
        let f = shade_fn!(gmm_tape(&[S], &[f64], &[usize], &[f64]));
        let dims = [d, k, p.m as usize];
        let want = gradient(
            f,
            &params,
            (
                shade_autodiff::Const(&p.x[..]),
                shade_autodiff::Const(&dims[..]),
                shade_autodiff::Const(&[p.gamma][..]),
            ),
        )
        .unwrap();
        let got: Vec<f64> = [&g.alpha, &g.mu, &g.q, &g.l]
            .iter()
            .flat_map(|v| v.iter().copied())
            .collect();
        assert_close("gmm", &got, &want);
        let tape_value = gmm_tape(&params, &p.x, &dims, &[p.gamma]);
        assert!(close(y, tape_value, 1e-12), "gmm value {y} vs {tape_value}");
    }
}

fn lse_tape<S: Real>(x: &[S]) -> S {
    S::logsumexp(x)
}

#[test]
fn lse_gradient_equals_the_tapes() {
    let x: Vec<f64> = (0..50)
        .map(|i| ((i * 37) % 11) as f64 * 0.3 - 1.0)
        .collect();
    let mut g = vec![0.0; x.len()];
    let y = lse::d_lse(&x, &mut g, 1.0);
    assert!(close(y, lse_tape(&x), 1e-14));
    let want = gradient(shade_fn!(lse_tape(&[S])), &x, ()).unwrap();
    assert_close("lse", &g, &want);
}

fn kmeans_tape<S: Real>(c: &[S], points: &[f64], dims: &[usize]) -> S {
    let d = dims[0];
    let (n, k) = (points.len() / d, c.len() / d);
    let mut cost = S::zero();
    for i in 0..n {
        let mut best: Option<S> = None;
        for j in 0..k {
            let mut dist = S::zero();
            for e in 0..d {
                let v = c[j * d + e] - points[i * d + e];
                dist += v * v;
            }
            if best.is_none_or(|b| dist < b) {
                best = Some(dist);
            }
        }
        cost += best.expect("k > 0");
    }
    cost
}

#[test]
fn kmeans_gradient_equals_the_tapes() {
    let mut next = uniform(3);
    let (n, k, d) = (40, 5, 3);
    let points: Vec<f64> = (0..n * d).map(|_| next()).collect();
    let c: Vec<f64> = (0..k * d).map(|_| next()).collect();
    let mut g = vec![0.0; c.len()];
    let y = kmeans::d_kmeans_cost(&points, &c, &mut g, d, 1.0);
    assert!(close(y, kmeans::kmeans_cost(&points, &c, d), 0.0));
    let want = gradient(
        shade_fn!(kmeans_tape(&[S], &[f64], &[usize])),
        &c,
        (
            shade_autodiff::Const(&points[..]),
            shade_autodiff::Const(&[d][..]),
        ),
    )
    .unwrap();
    assert_close("kmeans", &g, &want);
}

/// LSTM on the tape: `p = [main, extra]`.
fn lstm_tape<S: Real>(p: &[S], state: &[f64], seq: &[f64], dims: &[usize]) -> S {
    let (l, b) = (dims[0], 14);
    let (main, extra) = p.split_at(2 * l * 4 * b);
    let c = seq.len() / b;
    let mut hs: Vec<S> = vec![S::zero(); (l + 1) * b];
    let mut cs: Vec<S> = vec![S::zero(); l * b];
    for layer in 0..l {
        for i in 0..b {
            hs[(layer + 1) * b + i] = S::cst(state[2 * layer * b + i]);
            cs[layer * b + i] = S::cst(state[(2 * layer + 1) * b + i]);
        }
    }
    let sig = |z: S| (S::cst(1.0) + (-z).exp()).recip();
    let mut total = S::zero();
    for t in 0..c - 1 {
        for i in 0..b {
            hs[i] = extra[i] * seq[t * b + i];
        }
        for layer in 0..l {
            let w = 8 * b * layer;
            for i in 0..b {
                let (x, h) = (hs[layer * b + i], hs[(layer + 1) * b + i]);
                let forget = sig(x * main[w + i] + main[w + 4 * b + i]);
                let ingate = sig(h * main[w + b + i] + main[w + 5 * b + i]);
                let outgate = sig(x * main[w + 2 * b + i] + main[w + 6 * b + i]);
                let change = (h * main[w + 3 * b + i] + main[w + 7 * b + i]).tanh();
                cs[layer * b + i] = cs[layer * b + i] * forget + ingate * change;
                hs[(layer + 1) * b + i] = outgate * cs[layer * b + i].tanh();
            }
        }
        let ypred: Vec<S> = (0..b)
            .map(|i| hs[l * b + i] * extra[b + i] + extra[2 * b + i])
            .collect();
        let sum: S = ypred.iter().map(|y| y.exp()).sum();
        let lse = (sum + 2.0).ln();
        for i in 0..b {
            total += (ypred[i] - lse) * seq[(t + 1) * b + i];
        }
    }
    -total / ((c - 1) * b) as f64
}

#[test]
fn lstm_gradient_equals_the_tapes() {
    let (l, c) = (2, 6);
    let (main, extra, state, seq) = lstm::lstm_problem(l, c, &mut uniform(5));
    let (mut dm, mut de) = (vec![0.0; main.len()], vec![0.0; extra.len()]);
    let y = lstm::d_lstm_objective(&main, &mut dm, &extra, &mut de, &state, &seq, l, 1.0);
    assert_eq!(y, lstm::lstm_objective(&main, &extra, &state, &seq, l));
    let p: Vec<f64> = main.iter().chain(&extra).copied().collect();
    let f = shade_fn!(lstm_tape(&[S], &[f64], &[f64], &[usize]));
    let want = gradient(
        f,
        &p,
        (
            shade_autodiff::Const(&state[..]),
            shade_autodiff::Const(&seq[..]),
            shade_autodiff::Const(&[l][..]),
        ),
    )
    .unwrap();
    let got: Vec<f64> = dm.iter().chain(&de).copied().collect();
    assert_close("lstm", &got, &want);
}
