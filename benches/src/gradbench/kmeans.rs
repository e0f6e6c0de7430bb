//! GradBench `kmeans`: `f(P, C) = Σᵢ minⱼ |Cⱼ - Pᵢ|²` over `n` points and `k`
//! centroids in `d` dimensions (row-major), differentiated with respect to `C`; the
//! eval's `dir` is the Newton direction `J / diag(H)`.
//!
//! [`kmeans_cost`] is the compile-time form (its generated `d_kmeans_cost` is the
//! gradient `J`; `H` would need a derivative of that derivative, which the compile-time
//! engine does not take), [`kmeans_cost_tape`] the tape's, from which
//! [`newton_direction`] takes `J` and `diag(H)` by forward-over-reverse: one recording
//! over `Var<Dual<f64>>` with every input's tangent set to one, and one reverse sweep,
//! whose adjoints carry `J` (values) and `H · 1` (tangents). The Hessian is diagonal
//! here (each centroid coordinate only meets itself), so `H · 1` is its diagonal.

// Index loops are the form the compile-time engine differentiates.
#![allow(clippy::needless_range_loop)]

use shade_autodiff::autodiff_reverse;
use shade_autodiff::scalar::{Dual, Real, Tape, VarId};

/// The k-means cost. The compile-time form.
#[autodiff_reverse(d_kmeans_cost, Const, Duplicated, Const, Active)]
pub fn kmeans_cost(points: &[f64], centroids: &[f64], d: usize) -> f64 {
    let n = points.len() / d;
    let k = centroids.len() / d;
    let mut cost = 0.0;
    for i in 0..n {
        let mut closest = f64::INFINITY;
        for j in 0..k {
            let mut dist = 0.0;
            for c in 0..d {
                let e = centroids[j * d + c] - points[i * d + c];
                dist += e * e;
            }
            if dist < closest {
                closest = dist;
            }
        }
        cost += closest;
    }
    cost
}

/// [`kmeans_cost`] for any [`Real`]: the tape's form. The nearest centroid of each point
/// is chosen on values, and only the chosen distance enters the result: the derivative
/// of a minimum is that of its selected branch, so the other `k - 1` distances need not
/// be recorded.
pub fn kmeans_cost_tape<S: Real>(centroids: &[S], points: &[f64], d: usize) -> S {
    let k = centroids.len() / d;
    let mut scratch = vec![S::zero(); d];
    let mut cost = S::zero();
    for p in points.chunks_exact(d) {
        let (mut best, mut best_j) = (f64::INFINITY, 0);
        for j in 0..k {
            let mut acc = 0.0;
            for (c, &x) in centroids[j * d..(j + 1) * d].iter().zip(p) {
                let t = c.detach().value() - x;
                acc += t * t;
            }
            if acc < best {
                (best, best_j) = (acc, j);
            }
        }
        let c = &centroids[best_j * d..(best_j + 1) * d];
        for ((s, &ci), &pi) in scratch.iter_mut().zip(c).zip(p) {
            *s = ci - pi;
        }
        cost += S::sum_sq(&scratch);
    }
    cost
}

/// Writes `J / diag(H)` of the cost at `centroids` into `dir`, on a tape (and a buffer
/// of variable ids) kept across calls.
pub fn newton_direction(
    centroids: &[f64],
    points: &[f64],
    d: usize,
    tape: &mut Tape<Dual<f64>>,
    ids: &mut Vec<VarId>,
    dir: &mut [f64],
) -> Result<(), String> {
    tape.reset();
    ids.clear();
    let out = {
        let t = tape.trace();
        let xs: Vec<_> = centroids
            .iter()
            .map(|&c| t.var(Dual::new(c, 1.0)))
            .collect();
        ids.extend(xs.iter().filter_map(|x| x.id()));
        kmeans_cost_tape(&xs, points, d).id()
    };
    let Some(out) = out else {
        dir.fill(0.0);
        return Ok(());
    };
    let adj = tape
        .backward(out, Dual::new(1.0, 0.0))
        .map_err(|e| e.to_string())?;
    for (o, id) in dir.iter_mut().zip(ids.iter()) {
        let a = adj[id.index()];
        *o = a.v / a.d[0];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::support::{assert_close, uniform};
    use super::*;

    #[test]
    fn the_two_forms_agree() {
        let (n, k, d) = (40, 5, 3);
        let points = uniform(3, n * d);
        let c = uniform(4, k * d);
        let mut g = vec![0.0; c.len()];
        let y = d_kmeans_cost(&points, &c, &mut g, d, 1.0);
        assert_eq!(y, kmeans_cost(&points, &c, d));
        assert_close("value", &[y], &[kmeans_cost_tape(&c, &points, d)], 1e-12);
        fn cost<S: Real>(c: &[S], points: &[f64], d: &usize) -> S {
            kmeans_cost_tape(c, points, *d)
        }
        let want = shade_autodiff::scalar::gradient(
            shade_autodiff::scalar::shade_fn!(cost(&[S], &[f64], &usize)),
            &c,
            (
                shade_autodiff::Const(&points[..]),
                shade_autodiff::Const(&d),
            ),
        )
        .unwrap();
        assert_close("gradient", &g, &want, 1e-10);
    }

    #[test]
    fn cost_takes_the_nearest_centroid() {
        let points = [0.0, 1.0, 10.0];
        let want = 0.25 + 0.25 + 1.0;
        assert_eq!(kmeans_cost(&points, &[0.5, 9.0], 1), want);
        assert_eq!(kmeans_cost_tape(&[0.5, 9.0], &points, 1), want);
    }
}
