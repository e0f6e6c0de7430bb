//! `LayerNorm` and `BatchNorm` (PyTorch's `nn.LayerNorm` over the feature axis, or
//! PyG's `LayerNorm(mode="graph")` over each graph of a batch, and `nn.BatchNorm1d`
//! over the node axis).

use super::blocks::{check_width, rows_per_node};
use crate::ctx::{Float, GraphCtx};
use crate::error::GnnResult;
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// `(x - mean) / sqrt(var + eps)` over `axis` of a 2-D value, as `[N, 1]` or `[1, F]`
/// statistics; returns the normalised value, the mean and the (biased) variance.
fn standardise<T: Float>(
    t: &mut Tape<'_, T>,
    x: Var,
    axis: usize,
    eps: f64,
) -> GnnResult<(Var, Var, Var)> {
    let s = t.shape(x)?.to_vec();
    let keep = if axis == 1 { [s[0], 1] } else { [1, s[1]] };
    let m = t.mean_axis(x, axis)?;
    let m = t.reshape(m, &keep)?;
    let xc = t.sub(x, m)?;
    let sq = t.mul(xc, xc)?;
    let v = t.mean_axis(sq, axis)?;
    let v = t.reshape(v, &keep)?;
    let e = t.scalar(T::cst(eps));
    let ve = t.add(v, e)?;
    let d = t.sqrt(ve)?;
    Ok((t.div(xc, d)?, m, v))
}

/// `y · weight + bias` with the layer's parameters when `on` (the layer's affine
/// option; a missing parameter is then [`GnnError::MissingParam`](crate::GnnError::MissingParam)), else `y`.
fn affine<T: Float>(t: &mut Tape<'_, T>, y: Var, p: &ParamVars<'_>, on: bool) -> GnnResult<Var> {
    if !on {
        return Ok(y);
    }
    let y = t.mul(y, p.get("weight")?)?;
    Ok(t.add(y, p.get("bias")?)?)
}

/// What [`LayerNorm`] normalises over (PyG's `mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LayerNormMode {
    /// Every row (node) over its `F` features: PyTorch's `nn.LayerNorm(F)`, PyG's
    /// `mode="node"` (the default here; no graph needed).
    #[default]
    Node,
    /// Every graph of the batch ([`GraphCtx::batch`](crate::GraphCtx::batch)) over all
    /// its nodes and features together: PyG's `mode="graph"` (PyG's default). Needs a
    /// graph.
    Graph,
}

/// Layer normalisation, then the per-feature affine `· weight + bias`.
///
/// - [`LayerNormMode::Node`] (default): every row `x_i` becomes
///   `(x_i - μ_i) / sqrt(σ²_i + ε)`, with `μ_i`, `σ²_i` the mean and biased variance of
///   its `F` features (PyTorch's `nn.LayerNorm`).
/// - [`LayerNormMode::Graph`]: every row of graph `g` becomes
///   `(x_i - μ_g) / sqrt(σ²_g + ε)`, with `μ_g`, `σ²_g` the mean and biased variance
///   of all `n_g · F` entries of the graph's rows (PyG's
///   `torch_geometric.nn.LayerNorm(mode="graph")` called with `batch`; `ε` is inside
///   the square root there too. PyG's call *without* `batch` divides by `σ + ε`
///   instead, which differs by `O(ε)`). A graph without nodes contributes nothing.
///   Reads the graph: without one the forward pass fails with
///   [`GnnError::NoGraph`](crate::GnnError::NoGraph) (`SHADE-E0409`).
///
/// Parameters `weight` (ones) and `bias` (zeros) of shape `[F]` when
/// `elementwise_affine` (default; PyG's `affine`); `eps = 1e-5`.
///
/// ```
/// use rand::{SeedableRng, rngs::StdRng};
/// use shade_gnn::{apply, Features, GraphCtx, Inputs, Layer};
/// use shade_gnn::layers::{LayerNorm, LayerNormMode};
/// let a = shade_graph::Graph::try_new(2, vec![0], vec![1])?;
/// let b = shade_graph::Graph::try_new(1, vec![], vec![])?;
/// let ctx = GraphCtx::<f64>::new(&shade_graph::Graph::batch(&[a, b])?);
/// let x = Features::dense(ndarray::array![[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]]);
/// let norm = LayerNorm::new(2).with_mode(LayerNormMode::Graph);
/// let mut rng = StdRng::seed_from_u64(0);
/// let (p, st) = Layer::<f64>::init(&norm, &mut rng);
/// let (y, _) = apply(&norm, &Inputs::new(&ctx, &x), &p, &st, false, &mut rng)?;
/// // Graph 0: mean 2.5, variance 1.25 over its four entries.
/// assert!((y[[0, 0]] + 1.5 / (1.25f64 + 1e-5).sqrt()).abs() < 1e-12);
/// // Graph 1: one node, mean 6, variance 1.
/// assert!((y[[2, 1]] - 1.0 / (1.0f64 + 1e-5).sqrt()).abs() < 1e-12);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerNorm {
    /// Feature width `F`.
    pub num_features: usize,
    /// Added to the variance.
    pub eps: f64,
    /// Learn `weight` and `bias` (PyTorch's `elementwise_affine`, PyG's `affine`).
    pub elementwise_affine: bool,
    /// Per node (default) or per graph.
    pub mode: LayerNormMode,
}

impl LayerNorm {
    /// PyTorch's defaults (`eps = 1e-5`, affine, [`LayerNormMode::Node`]).
    pub fn new(num_features: usize) -> Self {
        LayerNorm {
            num_features,
            eps: 1e-5,
            elementwise_affine: true,
            mode: LayerNormMode::Node,
        }
    }

    /// Sets the normalisation mode (PyG's `mode`).
    pub fn with_mode(mut self, mode: LayerNormMode) -> Self {
        self.mode = mode;
        self
    }
}

/// PyG's graph-mode statistics: per graph of the batch, the mean and biased variance
/// of all its entries (count clamped to 1, so an empty graph has zeros), gathered
/// back to its rows; returns `(x - μ_g) / sqrt(σ²_g + ε)`.
fn standardise_graph<'a, T: Float>(
    t: &mut Tape<'a, T>,
    ctx: &'a GraphCtx<T>,
    x: Var,
    eps: f64,
) -> GnnResult<Var> {
    let s = t.shape(x)?.to_vec();
    if s.len() != 2 || s[0] != ctx.num_nodes() {
        return Err(rows_per_node(&s, ctx.num_nodes()));
    }
    let f = s[1] as f64;
    let batch = ctx.batch();
    let g = ctx.num_graphs();
    let inv = t.constant(
        &ctx.graph_sizes()
            .mapv(|c| T::one() / (c.max(T::one()) * T::cst(f))),
    );
    let per_graph = |t: &mut Tape<'a, T>, v: Var| -> GnnResult<Var> {
        let sum = t.scatter_add(v, batch, g)?;
        let sum = t.sum_axis(sum, 1)?;
        let sum = t.reshape(sum, &[g, 1])?;
        Ok(t.mul(sum, inv)?)
    };
    let m = per_graph(t, x)?;
    let mr = t.index_select(m, batch)?;
    let xc = t.sub(x, mr)?;
    let sq = t.mul(xc, xc)?;
    let v = per_graph(t, sq)?;
    let e = t.scalar(T::cst(eps));
    let ve = t.add(v, e)?;
    let d = t.sqrt(ve)?;
    let dr = t.index_select(d, batch)?;
    Ok(t.div(xc, dr)?)
}

impl<T: Float> Layer<T> for LayerNorm {
    fn name(&self) -> &'static str {
        "LayerNorm"
    }
    fn init(&self, _rng: &mut StdRng) -> (Params<T>, State<T>) {
        let f = self.num_features;
        let p = if self.elementwise_affine {
            Params::new()
                .with("weight", init::ones(&[f]))
                .with("bias", init::zeros(&[f]))
        } else {
            Params::new()
        };
        (p, State::new())
    }
    fn forward<'a>(
        &self,
        t: &mut Tape<'a, T>,
        env: &mut Env<'a, '_, T>,
        x: Input<'a, T>,
        p: ParamVars<'_>,
        _st: StateScope<'_, T>,
    ) -> GnnResult<Var> {
        let y = match self.mode {
            LayerNormMode::Node => {
                let x = x.dense(t)?;
                check_width(t, "input", x, self.num_features, "num_features")?;
                standardise(t, x, 1, self.eps)?.0
            }
            LayerNormMode::Graph => {
                let g = env.graph("LayerNorm")?;
                let x = x.dense(t)?;
                check_width(t, "input", x, self.num_features, "num_features")?;
                standardise_graph(t, g, x, self.eps)?
            }
        };
        affine(t, y, &p, self.elementwise_affine)
    }
    fn is_graph_layer(&self) -> bool {
        self.mode == LayerNormMode::Graph
    }
}

/// Batch normalisation over the nodes (rows) of a `[N, F]` value, as PyTorch's
/// `BatchNorm1d` (PyG's `BatchNorm` wraps it): `(x - μ) / sqrt(σ² + ε) · weight + bias`
/// per feature.
///
/// - With `track_running_stats` (default): in training, the batch's mean and biased
///   variance normalise the input and update the state `running_mean` (zeros) /
///   `running_var` (ones; updated with the unbiased variance) with `momentum`; at
///   evaluation the running statistics are used.
/// - Without (`track_running_stats = false`): there is no state, and the batch
///   statistics are used in training *and* evaluation (PyTorch's behaviour).
///
/// Parameters `weight` (ones), `bias` (zeros) of shape `[F]` when `affine` (default);
/// `eps = 1e-5`, `momentum = 0.1`.
///
/// ```
/// use rand::{SeedableRng, rngs::StdRng};
/// use shade_gnn::{apply, Features, Inputs, Layer};
/// use shade_gnn::layers::BatchNorm;
/// let bn = BatchNorm::new(1).with_track_running_stats(false);
/// let mut rng = StdRng::seed_from_u64(0);
/// let (p, st) = Layer::<f64>::init(&bn, &mut rng);
/// assert!(st.is_empty());
/// let x = Features::dense(ndarray::array![[1.0], [3.0]]);
/// // Evaluation mode still normalises with the batch's statistics (mean 2, variance 1).
/// let (y, _) = apply(&bn, &Inputs::without_graph(&x), &p, &st, false, &mut rng)?;
/// assert!((y[[1, 0]] - 1.0 / (1.0f64 + 1e-5).sqrt()).abs() < 1e-12);
/// # Ok::<(), shade_gnn::GnnError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BatchNorm {
    /// Feature width `F`.
    pub num_features: usize,
    /// Added to the variance.
    pub eps: f64,
    /// Weight of the new batch in the running statistics.
    pub momentum: f64,
    /// Learn `weight` and `bias`.
    pub affine: bool,
    /// Keep running statistics for evaluation (PyTorch's `track_running_stats`).
    pub track_running_stats: bool,
}

impl BatchNorm {
    /// PyTorch's defaults (`eps = 1e-5`, `momentum = 0.1`, affine, running statistics).
    pub fn new(num_features: usize) -> Self {
        BatchNorm {
            num_features,
            eps: 1e-5,
            momentum: 0.1,
            affine: true,
            track_running_stats: true,
        }
    }

    /// Sets `track_running_stats`: `false` drops the state and normalises with the
    /// batch statistics in evaluation too.
    pub fn with_track_running_stats(mut self, on: bool) -> Self {
        self.track_running_stats = on;
        self
    }
}

impl<T: Float> Layer<T> for BatchNorm {
    fn name(&self) -> &'static str {
        "BatchNorm"
    }
    fn init(&self, _rng: &mut StdRng) -> (Params<T>, State<T>) {
        let f = self.num_features;
        let p = if self.affine {
            Params::new()
                .with("weight", init::ones(&[f]))
                .with("bias", init::zeros(&[f]))
        } else {
            Params::new()
        };
        let s = if self.track_running_stats {
            State::new()
                .with("running_mean", init::zeros(&[f]))
                .with("running_var", init::ones(&[f]))
        } else {
            State::new()
        };
        (p, s)
    }
    fn forward<'a>(
        &self,
        t: &mut Tape<'a, T>,
        env: &mut Env<'a, '_, T>,
        x: Input<'a, T>,
        p: ParamVars<'_>,
        mut st: StateScope<'_, T>,
    ) -> GnnResult<Var> {
        let x = x.dense(t)?;
        check_width(t, "input", x, self.num_features, "num_features")?;
        let y = if !self.track_running_stats {
            standardise(t, x, 0, self.eps)?.0
        } else if env.training {
            let (y, m, v) = standardise(t, x, 0, self.eps)?;
            let n = t.shape(x)?[0] as f64;
            let unbias = if n > 1.0 { n / (n - 1.0) } else { 1.0 };
            let mom = T::cst(self.momentum);
            let keep = T::one() - mom;
            // Running statistics are not differentiated (PyTorch updates them under
            // `no_grad`): the batch statistics are detached before they are read.
            let (m, v) = (t.detach(m)?, t.detach(v)?);
            let mv: Vec<T> = t.value(m)?.iter().copied().collect();
            let vv: Vec<T> = t.value(v)?.iter().copied().collect();
            let rm = st.get_mut("running_mean")?;
            rm.iter_mut()
                .zip(&mv)
                .for_each(|(r, &b)| *r = keep * *r + mom * b);
            let rv = st.get_mut("running_var")?;
            rv.iter_mut()
                .zip(&vv)
                .for_each(|(r, &b)| *r = keep * *r + mom * b * T::cst(unbias));
            y
        } else {
            let rm = t.constant(st.get("running_mean")?);
            let rv = st
                .get("running_var")?
                .mapv(|v| (v + T::cst(self.eps)).sqrt());
            let rs = t.constant(&rv);
            let xc = t.sub(x, rm)?;
            t.div(xc, rs)?
        };
        affine(t, y, &p, self.affine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{
        GradCheck, arb_graph, arb_graph_and_features, assert_close, check_layer_gradient,
        eval_output, proptest_config, random_features, random_graph,
    };
    use crate::{Features, Inputs, apply};
    use ndarray::{Array2, Axis, Ix2};
    use proptest::prelude::*;
    use rand::SeedableRng;
    use shade_autodiff::Const;
    use shade_autodiff::tensor::{self, TapeBuffers};
    use shade_graph::Graph;

    fn affine_params(f: usize) -> Params<f64> {
        Params::new()
            .with(
                "weight",
                ndarray::Array1::from_shape_fn(f, |i| 1.0 + 0.5 * i as f64).into_dyn(),
            )
            .with(
                "bias",
                ndarray::Array1::from_shape_fn(f, |i| 0.1 * i as f64).into_dyn(),
            )
    }

    #[test]
    fn layer_norm_matches_definition() {
        let x = random_features(4, 3, 1);
        let p = affine_params(3);
        let f = Features::dense(x.clone());
        let y = eval_output(&LayerNorm::new(3), &Inputs::without_graph(&f), &p);
        let mut r = Array2::zeros((4, 3));
        for i in 0..4 {
            let m = x.row(i).sum() / 3.0;
            let v = x.row(i).iter().map(|a| (a - m) * (a - m)).sum::<f64>() / 3.0;
            for c in 0..3 {
                r[[i, c]] =
                    (x[[i, c]] - m) / (v + 1e-5).sqrt() * (1.0 + 0.5 * c as f64) + 0.1 * c as f64;
            }
        }
        assert_close(&y.into_dimensionality::<Ix2>().unwrap(), &r, 1e-12);
    }

    #[test]
    fn batch_norm_training_eval_and_running_stats() {
        let x = random_features(5, 2, 2);
        let bn = BatchNorm::new(2);
        let p = affine_params(2);
        let (_, st0) = Layer::<f64>::init(&bn, &mut StdRng::seed_from_u64(0));
        let f = Features::dense(x.clone());
        let inputs = Inputs::without_graph(&f);
        let (y, st1) = apply(&bn, &inputs, &p, &st0, true, &mut StdRng::seed_from_u64(0)).unwrap();
        let m = x.mean_axis(Axis(0)).unwrap();
        let v = x.var_axis(Axis(0), 0.0);
        let vu = x.var_axis(Axis(0), 1.0);
        let mut r = Array2::zeros((5, 2));
        for i in 0..5 {
            for c in 0..2 {
                r[[i, c]] = (x[[i, c]] - m[c]) / (v[c] + 1e-5).sqrt() * (1.0 + 0.5 * c as f64)
                    + 0.1 * c as f64;
            }
        }
        assert_close(&y.into_dimensionality::<Ix2>().unwrap(), &r, 1e-12);
        for c in 0..2 {
            assert!((st1.get("running_mean").unwrap()[c] - 0.1 * m[c]).abs() < 1e-15);
            assert!((st1.get("running_var").unwrap()[c] - (0.9 + 0.1 * vu[c])).abs() < 1e-15);
        }
        // The input state is not modified; evaluation uses the running statistics.
        assert_eq!(st0.get("running_var").unwrap()[0], 1.0);
        let (ye, st2) =
            apply(&bn, &inputs, &p, &st1, false, &mut StdRng::seed_from_u64(0)).unwrap();
        assert_eq!(st2, st1);
        let rm = st1.get("running_mean").unwrap();
        let rv = st1.get("running_var").unwrap();
        let e = (x[[3, 1]] - rm[1]) / (rv[1] + 1e-5).sqrt() * 1.5 + 0.1;
        assert!((ye[[3, 1]] - e).abs() < 1e-12);
    }

    /// Batch statistics per feature with plain loops, then the test affine.
    fn batch_stats_reference(x: &Array2<f64>, eps: f64) -> Array2<f64> {
        let (n, f) = x.dim();
        let mut y = Array2::zeros((n, f));
        for c in 0..f {
            let mut m = 0.0;
            for i in 0..n {
                m += x[[i, c]];
            }
            m /= n as f64;
            let mut v = 0.0;
            for i in 0..n {
                v += (x[[i, c]] - m) * (x[[i, c]] - m);
            }
            v /= n as f64;
            for i in 0..n {
                y[[i, c]] =
                    (x[[i, c]] - m) / (v + eps).sqrt() * (1.0 + 0.5 * c as f64) + 0.1 * c as f64;
            }
        }
        y
    }

    #[test]
    fn batch_norm_without_running_stats_uses_batch_statistics() {
        let x = random_features(6, 3, 11);
        let bn = BatchNorm {
            eps: 0.25,
            ..BatchNorm::new(3).with_track_running_stats(false)
        };
        let (p0, st0) = Layer::<f64>::init(&bn, &mut StdRng::seed_from_u64(0));
        assert!(st0.is_empty());
        assert_eq!(p0.len(), 2);
        let p = affine_params(3);
        let f = Features::dense(x.clone());
        let inputs = Inputs::without_graph(&f);
        let r = batch_stats_reference(&x, 0.25);
        for training in [true, false] {
            let (y, st) = apply(
                &bn,
                &inputs,
                &p,
                &st0,
                training,
                &mut StdRng::seed_from_u64(0),
            )
            .unwrap();
            assert!(st.is_empty());
            assert_close(&y.into_dimensionality::<Ix2>().unwrap(), &r, 1e-12);
        }
        // The default keeps tracking: evaluation from the fresh state is `x / sqrt(1 + ε)`.
        let tracked = BatchNorm {
            eps: 0.25,
            ..BatchNorm::new(3)
        };
        let (_, st) = Layer::<f64>::init(&tracked, &mut StdRng::seed_from_u64(0));
        let (y, _) = apply(
            &tracked,
            &inputs,
            &p,
            &st,
            false,
            &mut StdRng::seed_from_u64(0),
        )
        .unwrap();
        let e = x[[2, 1]] / 1.25f64.sqrt() * 1.5 + 0.1;
        assert!((y[[2, 1]] - e).abs() < 1e-12);
        // A tracking BatchNorm given a state without running statistics: coded error.
        let err = apply(
            &tracked,
            &inputs,
            &p,
            &st0,
            false,
            &mut StdRng::seed_from_u64(0),
        )
        .unwrap_err();
        assert_eq!(err.code(), "SHADE-E0401", "{err}");
        assert_eq!(
            err.to_string(),
            "BatchNorm: parameter `running_mean` is missing from the store"
        );
        // Affine parameters of the wrong width: named as the parameter they are.
        let err = apply(
            &bn,
            &inputs,
            &affine_params(2),
            &st0,
            false,
            &mut StdRng::seed_from_u64(0),
        )
        .unwrap_err();
        assert_eq!(err.code(), "SHADE-E0402", "{err}");
        assert_eq!(
            err.to_string(),
            "parameter `weight` has shape [2], but the model needs [3]"
        );
    }

    /// Graph mode written from PyG's definition with plain loops.
    fn graph_mode_reference(g: &Graph, x: &Array2<f64>, affine: bool, eps: f64) -> Array2<f64> {
        let (n, f) = x.dim();
        let batch: Vec<usize> = g.graph_indicator().iter().map(|&b| b as usize).collect();
        let mut y = Array2::zeros((n, f));
        for k in 0..g.num_graphs() {
            let rows: Vec<usize> = (0..n).filter(|&i| batch[i] == k).collect();
            if rows.is_empty() {
                continue;
            }
            let cnt = (rows.len() * f) as f64;
            let mut m = 0.0;
            for &i in &rows {
                for c in 0..f {
                    m += x[[i, c]];
                }
            }
            m /= cnt;
            let mut v = 0.0;
            for &i in &rows {
                for c in 0..f {
                    v += (x[[i, c]] - m) * (x[[i, c]] - m);
                }
            }
            v /= cnt;
            for &i in &rows {
                for c in 0..f {
                    let z = (x[[i, c]] - m) / (v + eps).sqrt();
                    y[[i, c]] = if affine {
                        z * (1.0 + 0.5 * c as f64) + 0.1 * c as f64
                    } else {
                        z
                    };
                }
            }
        }
        y
    }

    fn run_graph_mode(ln: &LayerNorm, g: &Graph, x: &Array2<f64>, p: &Params<f64>) -> Array2<f64> {
        let ctx = GraphCtx::<f64>::new(g);
        let f = Features::dense(x.clone());
        let y = eval_output(ln, &Inputs::new(&ctx, &f), p);
        y.into_dimensionality::<Ix2>().unwrap()
    }

    /// Three graphs of sizes 4, 1 (a single node) and 5.
    fn batch_of_three() -> (Graph, Array2<f64>) {
        let a = random_graph(3, 5, 1);
        let b = Graph::new(1, vec![], vec![]);
        let c = random_graph(4, 6, 2);
        let g = Graph::batch(&[a, b, c]).unwrap();
        let x = random_features(g.num_nodes(), 3, 4);
        (g, x)
    }

    #[test]
    fn layer_norm_graph_mode_matches_definition() {
        let (g, x) = batch_of_three();
        assert_eq!(g.num_graphs(), 3);
        let ln = LayerNorm::new(3).with_mode(LayerNormMode::Graph);
        let y = run_graph_mode(&ln, &g, &x, &affine_params(3));
        assert_close(&y, &graph_mode_reference(&g, &x, true, 1e-5), 1e-12);
        // Without the affine, a larger eps (it sits inside the square root).
        let ln = LayerNorm {
            elementwise_affine: false,
            eps: 0.5,
            ..ln
        };
        let y = run_graph_mode(&ln, &g, &x, &Params::new());
        assert_close(&y, &graph_mode_reference(&g, &x, false, 0.5), 1e-12);
        // One graph: the whole input is normalised together, unlike node mode.
        let one = random_graph(4, 6, 5);
        let x1 = random_features(one.num_nodes(), 3, 6);
        let y = run_graph_mode(&ln, &one, &x1, &Params::new());
        let all = x1.iter().copied().collect::<Vec<_>>();
        let m = all.iter().sum::<f64>() / all.len() as f64;
        let v = all.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / all.len() as f64;
        assert!((y[[2, 1]] - (x1[[2, 1]] - m) / (v + 0.5).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn layer_norm_graph_mode_empty_graph_is_finite() {
        let a = random_graph(2, 3, 7);
        let c = random_graph(3, 4, 8);
        let g = Graph::batch(&[a, Graph::new(0, vec![], vec![]), c]).unwrap();
        assert_eq!(g.num_graphs(), 3);
        let x = random_features(g.num_nodes(), 2, 9);
        let ln = LayerNorm::new(2).with_mode(LayerNormMode::Graph);
        let y = run_graph_mode(&ln, &g, &x, &affine_params(2));
        assert!(y.iter().all(|v| v.is_finite()));
        assert_close(&y, &graph_mode_reference(&g, &x, true, 1e-5), 1e-12);
        // Gradients (parameters and input) stay finite and match finite differences.
        GradCheck::new(Some(&g), &x).run(&ln).unwrap();
    }

    #[test]
    fn layer_norm_modes_graph_use_and_errors() {
        let node = LayerNorm::new(2);
        let graph = node.with_mode(LayerNormMode::Graph);
        assert_eq!(LayerNormMode::default(), LayerNormMode::Node);
        assert!(!Layer::<f64>::is_graph_layer(&node));
        assert!(Layer::<f64>::is_graph_layer(&graph));
        let x = random_features(3, 2, 1);
        let f = Features::dense(x);
        let p = affine_params(2);
        let e = apply(
            &graph,
            &Inputs::without_graph(&f),
            &p,
            &State::new(),
            false,
            &mut StdRng::seed_from_u64(0),
        )
        .unwrap_err();
        assert_eq!(e.code(), "SHADE-E0409", "{e}");
        assert_eq!(
            e.to_string(),
            "LayerNorm: the layer reads the graph, but the call has no graph"
        );
        // Rows that are not the graph's nodes: a shape error, not a panic.
        let ctx = GraphCtx::<f64>::new(&random_graph(4, 3, 2));
        let mut rng = StdRng::seed_from_u64(0);
        let (pp, st) = Layer::<f64>::init(&graph, &mut rng);
        let carry = crate::ErrorCarry::new();
        let r = tensor::value(
            &mut TapeBuffers::new(),
            |t, h: Vec<Var>| {
                let mut st = st.clone();
                let mut env = Env {
                    graph: Some(&ctx),
                    edge_attr: None,
                    training: false,
                    rng: &mut rng,
                    arena: None,
                };
                let names = pp.names();
                let r = graph.forward(
                    t,
                    &mut env,
                    Input::Dense(h[2]),
                    ParamVars::new(names, &h[..2]),
                    StateScope::new(&mut st),
                );
                carry.lift(r)
            },
            vec![
                Const(pp.get("weight").unwrap()),
                Const(pp.get("bias").unwrap()),
                Const(&random_features(3, 2, 1).into_dyn()),
            ],
        )
        .unwrap_err();
        let r = carry.land::<()>(Err(r)).unwrap_err();
        assert_eq!(r.code(), "SHADE-E0410", "{r}");
        assert_eq!(
            r.to_string(),
            "input has 3 rows but the layer expects one row per node of the graph, [5, features]"
        );
    }

    /// One to three graphs from [`arb_graph`] batched with a single-node graph.
    fn arb_norm_batch(f: usize) -> impl Strategy<Value = (Graph, Array2<f64>)> {
        (
            proptest::collection::vec(arb_graph(4, 5), 1..=3),
            any::<u64>(),
        )
            .prop_map(move |(mut gs, seed)| {
                let at = (seed % (gs.len() as u64 + 1)) as usize;
                gs.insert(at, Graph::new(1, vec![], vec![]));
                let g = Graph::batch(&gs).expect("graphs");
                let x = random_features(g.num_nodes(), f, seed);
                (g, x)
            })
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn graph_mode_gradients_and_output((g, x) in arb_norm_batch(3)) {
            let ln = LayerNorm::new(3).with_mode(LayerNormMode::Graph);
            let y = run_graph_mode(&ln, &g, &x, &affine_params(3));
            let r = graph_mode_reference(&g, &x, true, 1e-5);
            prop_assert!(y.iter().zip(&r).all(|(a, b)| (a - b).abs() <= 1e-10 * (1.0 + b.abs())));
            GradCheck::new(Some(&g), &x).run(&ln).map_err(TestCaseError::fail)?;
        }

        #[test]
        fn gradients_match_finite_differences((_g, x) in arb_graph_and_features(5, 2, 3)) {
            prop_assume!(x.nrows() >= 2);
            check_layer_gradient(&LayerNorm::new(3), None, &x).map_err(TestCaseError::fail)?;
            check_layer_gradient(&BatchNorm::new(3), None, &x).map_err(TestCaseError::fail)?;
            let mut c = GradCheck::new(None, &x);
            c.training = true;
            c.run(&BatchNorm::new(3)).map_err(TestCaseError::fail)?;
            let untracked = BatchNorm::new(3).with_track_running_stats(false);
            c.run(&untracked).map_err(TestCaseError::fail)?;
            c.training = false;
            c.run(&untracked).map_err(TestCaseError::fail)?;
        }
    }
}
