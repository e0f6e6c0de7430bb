//! GradBench's `kmeans` eval: the k-means cost (`cost`) and one Newton step direction
//! `J / diag(H)` with respect to the centroids (`dir`), by forward-over-reverse mode:
//! one recording over `Var<Dual<f64>>` with every input's tangent set to one, and one
//! reverse sweep, whose adjoints carry the gradient `J` (values) and `H · 1` (tangents).
//! The Hessian is diagonal here (each centroid coordinate only meets itself), so
//! `H · 1` is its diagonal.
//!
//! The nearest centroid of each point is chosen on values, and only the chosen distance
//! enters the result: the derivative of a minimum is that of its selected branch, so
//! the other `k - 1` distances need not be recorded.

use serde_json::Value;
use shade_autodiff::scalar::{Dual, Real, Tape, VarId};

use super::input::{field, finite, matrix, to_rows};
use super::{Engine, Run, pick};

/// Points and dimensions.
#[derive(Clone, Debug)]
pub struct KmeansData {
    /// Dimension.
    pub d: usize,
    /// Points, `n × d` row-major.
    pub points: Vec<f64>,
}

fn dist2<S: Real>(c: &[S], p: &[f64], scratch: &mut [S]) -> S {
    for ((s, &ci), &pi) in scratch.iter_mut().zip(c).zip(p) {
        *s = ci - pi;
    }
    S::sum_sq(scratch)
}

/// `Σ_points min_j ‖p - c_j‖²` for `centroids` (`k × d` row-major).
pub fn kmeans_cost<S: Real>(centroids: &[S], data: &KmeansData) -> S {
    let d = data.d;
    let k = centroids.len() / d;
    let mut scratch = vec![S::zero(); d];
    let mut cost = S::zero();
    for p in data.points.chunks_exact(d) {
        let (mut best, mut best_j) = (f64::INFINITY, 0);
        for j in 0..k {
            let mut acc = 0.0;
            for (c, &x) in centroids[j * d..(j + 1) * d].iter().zip(p) {
                let t = c.value() - x;
                acc += t * t;
            }
            if acc < best {
                (best, best_j) = (acc, j);
            }
        }
        cost += dist2(&centroids[best_j * d..(best_j + 1) * d], p, &mut scratch);
    }
    cost
}

/// Writes `J / diag(H)` of the cost into `dir`.
pub fn newton_direction(
    centroids: &[f64],
    data: &KmeansData,
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
        kmeans_cost(&xs, data).id()
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

struct KmeansRun {
    dir: bool,
    centroids: Vec<f64>,
    data: KmeansData,
    cost: f64,
    out: Vec<f64>,
    tape: Tape<Dual<f64>>,
    ids: Vec<VarId>,
}

impl Run for KmeansRun {
    fn run(&mut self) -> Result<(), String> {
        if self.dir {
            newton_direction(
                &self.centroids,
                &self.data,
                &mut self.tape,
                &mut self.ids,
                &mut self.out,
            )
        } else {
            self.cost = kmeans_cost(&self.centroids, &self.data);
            Ok(())
        }
    }
    fn output(&self) -> Value {
        if self.dir {
            to_rows(&self.out, self.data.d)
        } else {
            finite(self.cost)
        }
    }
}

/// Prepares `cost` or `dir`.
pub fn prepare(function: &str, input: &Value, engine: Engine) -> Result<Box<dyn Run>, String> {
    let Engine::Tape = engine;
    let dir = pick("kmeans", function, ["cost", "dir"])?;
    let (_, d, points) = matrix(field(input, "points")?, "points")?;
    let (k, dc, centroids) = matrix(field(input, "centroids")?, "centroids")?;
    if d == 0 || dc != d || k == 0 {
        return Err(format!(
            "`points` and `centroids` must be non-empty with the same width, found {d} and {dc}"
        ));
    }
    Ok(Box::new(KmeansRun {
        dir,
        out: vec![0.0; centroids.len()],
        centroids,
        data: KmeansData { d, points },
        cost: 0.0,
        tape: Tape::new(),
        ids: Vec::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradbench::testing::{assert_close, central_gradient, uniform};

    #[test]
    fn direction_is_the_gradient_over_the_hessian_diagonal() {
        let (n, k, d) = (40, 4, 3);
        let points = uniform(21, n * d);
        let centroids = points[(n - k) * d..].to_vec();
        let data = KmeansData { d, points };
        let mut dir = vec![0.0; k * d];
        newton_direction(
            &centroids,
            &data,
            &mut Tape::new(),
            &mut Vec::new(),
            &mut dir,
        )
        .unwrap();
        // Away from ties the cost is a sum of quadratics: central differences are exact
        // up to rounding for the gradient and the (constant) second derivative.
        let h = 1e-4;
        let g = central_gradient(|c| kmeans_cost(c, &data), &centroids, h);
        let mut hd = vec![0.0; k * d];
        let mut c = centroids.clone();
        let f0 = kmeans_cost(&centroids, &data);
        for i in 0..k * d {
            c[i] = centroids[i] + h;
            let up = kmeans_cost(&c, &data);
            c[i] = centroids[i] - h;
            let down = kmeans_cost(&c, &data);
            c[i] = centroids[i];
            hd[i] = (up - 2.0 * f0 + down) / (h * h);
        }
        let want: Vec<f64> = g.iter().zip(&hd).map(|(g, h)| g / h).collect();
        assert_close("kmeans dir", &dir, &want, 1e-5);
    }

    #[test]
    fn cost_takes_the_nearest_centroid() {
        let data = KmeansData {
            d: 1,
            points: vec![0.0, 1.0, 10.0],
        };
        assert_eq!(kmeans_cost(&[0.5, 9.0], &data), 0.25 + 0.25 + 1.0);
    }
}
