//! GradBench `kmeans`: `f(P, C) = Σᵢ minⱼ |Cⱼ - Pᵢ|²` over `n` points and `k`
//! centroids in `d` dimensions (row-major), differentiated with respect to `C`.

// Index loops are the form the compile-time engine differentiates.
#![allow(clippy::needless_range_loop)]

use shade_autodiff::autodiff_reverse;

/// The k-means cost.
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
