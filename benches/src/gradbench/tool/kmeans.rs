//! The tool's `kmeans`: input `points` (n × d), `centroids` (k × d); functions `cost`
//! and `dir` (k × d). `cost` is each engine's own primal; `dir` (second order) runs on
//! the tape under both engines (see [`super::MODULES`]).

use serde_json::Value;
use shade_autodiff::scalar::{Dual, Tape, VarId};

use super::input::{field, finite, matrix, to_rows};
use super::{Engine, Run, pick};
use crate::gradbench::kmeans::{kmeans_cost, kmeans_cost_tape, newton_direction};

struct KmeansRun {
    dir: bool,
    engine: Engine,
    centroids: Vec<f64>,
    points: Vec<f64>,
    d: usize,
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
                &self.points,
                self.d,
                &mut self.tape,
                &mut self.ids,
                &mut self.out,
            )
        } else {
            self.cost = match self.engine {
                Engine::Tape => kmeans_cost_tape(&self.centroids, &self.points, self.d),
                Engine::Macro => kmeans_cost(&self.points, &self.centroids, self.d),
            };
            Ok(())
        }
    }
    fn output(&self) -> Value {
        if self.dir {
            to_rows(&self.out, self.d)
        } else {
            finite(self.cost)
        }
    }
}

/// Prepares `cost` or `dir`.
pub(super) fn prepare(
    function: &str,
    input: &Value,
    engine: Engine,
) -> Result<Box<dyn Run>, String> {
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
        engine,
        out: vec![0.0; centroids.len()],
        centroids,
        points,
        d,
        cost: 0.0,
        tape: Tape::new(),
        ids: Vec::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradbench::support::{assert_close, central_gradient, uniform};
    use serde_json::json;

    #[test]
    fn direction_is_the_gradient_over_the_hessian_diagonal_and_both_costs_agree() {
        let (n, k, d) = (40, 4, 3);
        let points = uniform(21, n * d);
        let centroids = points[(n - k) * d..].to_vec();
        let rows = |v: &[f64]| -> Vec<Vec<f64>> { v.chunks(d).map(<[f64]>::to_vec).collect() };
        let input = json!({"points": rows(&points), "centroids": rows(&centroids)});
        let run = |function: &str, engine| {
            let mut r = prepare(function, &input, engine).unwrap();
            r.run().unwrap();
            r.run().unwrap();
            r.output()
        };
        let dir: Vec<Vec<f64>> = serde_json::from_value(run("dir", Engine::Tape)).unwrap();
        // Away from ties the cost is a sum of quadratics: central differences are exact
        // up to rounding for the gradient and the (constant) second derivative.
        let cost = |c: &[f64]| kmeans_cost_tape(c, &points, d);
        let h = 1e-4;
        let g = central_gradient(cost, &centroids, h);
        let mut c = centroids.clone();
        let f0 = cost(&centroids);
        let want: Vec<f64> = (0..k * d)
            .map(|i| {
                c[i] = centroids[i] + h;
                let up = cost(&c);
                c[i] = centroids[i] - h;
                let down = cost(&c);
                c[i] = centroids[i];
                g[i] / ((up - 2.0 * f0 + down) / (h * h))
            })
            .collect();
        assert_close("kmeans dir", &dir.concat(), &want, 1e-5);
        assert_eq!(run("dir", Engine::Macro), run("dir", Engine::Tape));
        let costs = [Engine::Tape, Engine::Macro].map(|e| run("cost", e).as_f64().unwrap());
        assert_close("kmeans cost", &costs[..1], &[f0], 1e-14);
        assert_close("kmeans cost", &costs[1..], &[f0], 1e-14);
    }
}
