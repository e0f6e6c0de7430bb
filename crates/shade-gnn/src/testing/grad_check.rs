//! The gradient check of a layer ([`GradCheck`]): the native gradient of
//! `sum(layer(x) ⊙ R)` against central finite differences in `f64`.
//!
//! Cheap per case, as JAX's `check_grads`: the directional derivative `⟨∇f, v⟩` is
//! compared with `(f(p + h v) − f(p − h v)) / 2h` along two random directions `v`, one
//! dense over every checked coordinate and one over a single block (a parameter, the
//! input or the edge features) drawn at random; four extra forward passes, whatever the
//! number of coordinates. Only when a direction disagrees, or crosses a kink exactly at
//! the point, is every coordinate checked on its own, as before: that check decides,
//! names the worst coordinate and counts the kinks against the allowed fraction.

use crate::ctx::{GraphArena, GraphCtx};
use crate::layer::{Features, Inputs, Layer, forward_model, model_args};
use crate::params::{Params, State};
use ndarray::{Array2, ArrayD, Dimension, IxDyn};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use shade_autodiff::tensor::{self, TapeBuffers, Var};
use shade_graph::Graph;
use std::cell::{Cell, OnceCell};

use super::random_features;

/// Settings of a gradient check; [`GradCheck::run`] performs it.
#[derive(Clone, Debug)]
pub struct GradCheck<'g> {
    /// The graph (none for plain layers).
    pub graph: Option<&'g Graph>,
    /// The input features.
    pub x: Array2<f64>,
    /// Edge features (constants), if the layer reads them.
    pub edge_attr: Option<ArrayD<f64>>,
    /// Seed of the parameters and the weighting `R` (the random directions are drawn
    /// from it and the data).
    pub seed: u64,
    /// Finite-difference step.
    pub h: f64,
    /// Tolerance: `|g - fd| <= atol + rtol · max(|g|, |fd|)`, for a directional
    /// derivative as for one coordinate.
    pub rtol: f64,
    /// See `rtol`.
    pub atol: f64,
    /// Also check the gradient with respect to the input.
    pub check_input: bool,
    /// Also check the gradient with respect to the edge features, when there are
    /// some (they enter as tracked values; layers that read them are differentiable
    /// in them).
    pub check_edge_attr: bool,
    /// Training mode (dropout and BatchNorm with a fixed random stream).
    pub training: bool,
    /// The largest fraction of coordinates that may sit exactly on a kink (one-sided
    /// slopes that stay apart as the step shrinks: a relu at 0, a max with a tie).
    /// Such coordinates have no derivative to compare with and are not judged; past
    /// this fraction the check fails as meaningless. `0.0` demands a smooth point.
    /// (A random direction that crosses a kink at the point sends the check to every
    /// coordinate, where this fraction is counted.)
    pub max_kink_fraction: f64,
}

impl<'g> GradCheck<'g> {
    /// Defaults: seed 0, `h = 1e-6`, `rtol = 1e-5`, `atol = 1e-6`, input and edge
    /// features checked, evaluation mode, at most half the coordinates on a kink.
    pub fn new(graph: Option<&'g Graph>, x: &Array2<f64>) -> Self {
        GradCheck {
            graph,
            x: x.clone(),
            edge_attr: None,
            seed: 0,
            h: 1e-6,
            rtol: 1e-5,
            atol: 1e-6,
            check_input: true,
            check_edge_attr: true,
            training: false,
            max_kink_fraction: 0.5,
        }
    }

    /// With `width` columns of edge features, one row per edge of the graph, drawn
    /// with [`random_features`] (seed 7).
    pub fn with_edge_features(mut self, width: usize) -> Self {
        let ne = self.graph.map_or(0, Graph::num_edges);
        self.edge_attr = Some(random_features(ne, width, 7).into_dyn());
        self
    }

    /// In training mode (or evaluation mode) with a fixed random stream.
    pub fn in_training(mut self, training: bool) -> Self {
        self.training = training;
        self
    }

    /// Compares the native gradient with central differences: along two random
    /// directions, then, if one of them disagrees or crosses a kink at the point,
    /// coordinate by coordinate. `Err` names the worst coordinate.
    pub fn run<L: Layer<f64> + ?Sized>(&self, layer: &L) -> Result<(), String> {
        let obj = Objective::new(self, layer)?;
        for dir in obj.directions() {
            if !matches!(self.along(&obj, &dir)?, Along::Agrees) {
                return self.every_coordinate(&obj);
            }
        }
        Ok(())
    }

    /// Whether a gradient `g` and a difference `fd` agree within the tolerance.
    fn close(&self, g: f64, fd: f64) -> bool {
        (g - fd).abs() <= self.atol + self.rtol * g.abs().max(fd.abs())
    }

    /// The directional derivative along `dir` against the central difference.
    fn along<L: Layer<f64> + ?Sized>(
        &self,
        obj: &Objective<'_, L>,
        dir: &Direction,
    ) -> Result<Along, String> {
        let g: f64 = dir
            .parts
            .iter()
            .map(|(b, v)| (obj.gradient(*b) * v).sum())
            .sum();
        let shift = Shift::Along(&dir.parts);
        let central = |h: f64| -> Result<f64, Halt> {
            Ok((obj.moved(shift, h)? - obj.moved(shift, -h)?) / (2.0 * h))
        };
        if central(self.h)
            .relevant()?
            .is_some_and(|fd| self.close(g, fd))
        {
            return Ok(Along::Agrees);
        }
        Ok(
            match self.judge_mismatch(g, &central, &|d| obj.moved(shift, d))? {
                Mismatch::KinkNearby => Along::Agrees,
                Mismatch::KinkHere => Along::Kink,
                Mismatch::Wrong(_) => Along::Disagrees,
            },
        )
    }

    /// Every coordinate against its own central difference; `Err` names the worst one.
    fn every_coordinate<L: Layer<f64> + ?Sized>(
        &self,
        obj: &Objective<'_, L>,
    ) -> Result<(), String> {
        let name = obj.layer.name();
        let mut worst: Option<(f64, String)> = None;
        let mut kinks = 0usize;
        let mut total = 0usize;
        for (b, grad) in &obj.grads {
            let slice = grad.as_slice().expect("standard layout");
            total += slice.len();
            for (j, &g) in slice.iter().enumerate() {
                let c = Shift::Coord(*b, j);
                let central = |h: f64| -> Result<f64, Halt> {
                    Ok((obj.moved(c, h)? - obj.moved(c, -h)?) / (2.0 * h))
                };
                let fd = central(self.h).relevant()?;
                if fd.is_some_and(|fd| self.close(g, fd)) {
                    continue;
                }
                match self.judge_mismatch(g, &central, &|d| obj.moved(c, d))? {
                    Mismatch::KinkNearby => {}
                    Mismatch::KinkHere => kinks += 1,
                    Mismatch::Wrong(detail) => {
                        // Without a difference at `h` (the output's shape changed within
                        // it), the entry is judged at the smaller steps: rank it first.
                        let excess = fd.map_or(f64::INFINITY, |fd| {
                            (g - fd).abs() / (self.atol + self.rtol * g.abs().max(fd.abs()))
                        });
                        if worst.as_ref().is_none_or(|w| excess > w.0) {
                            let what = obj.label(*b);
                            let fd = fd.map_or_else(
                                || format!("none at step {} (the output's shape changes)", self.h),
                                |fd| fd.to_string(),
                            );
                            worst = Some((
                                excess,
                                format!(
                                    "{name}: gradient of {what}[{j}] is {g}, finite differences \
                                     give {fd}{detail}"
                                ),
                            ));
                        }
                    }
                }
            }
        }
        // A point where most coordinates sit on a kink would test little.
        if worst.is_none() && kinks as f64 > self.max_kink_fraction * total as f64 {
            return Err(format!(
                "{name}: {kinks} of {total} coordinates sit on a kink (a relu or max \
                 switching exactly here), more than the allowed fraction {}; check at \
                 other inputs",
                self.max_kink_fraction
            ));
        }
        match worst {
            None => Ok(()),
            Some((_, message)) => Err(message),
        }
    }
}

/// A block of coordinates: a parameter (by position), the input or the edge features.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Block {
    Param(usize),
    Input,
    Edge,
}

/// A direction of the check: one array per block it moves (the others stay).
struct Direction {
    parts: Vec<(Block, ArrayD<f64>)>,
}

/// Where a finite difference moves the point: one coordinate of a block, or along a
/// direction.
#[derive(Clone, Copy)]
enum Shift<'d> {
    Coord(Block, usize),
    Along(&'d [(Block, ArrayD<f64>)]),
}

/// What the check along one direction found.
#[derive(Debug, PartialEq)]
enum Along {
    /// The directional derivative agrees (perhaps only at smaller steps: a kink within
    /// the step).
    Agrees,
    /// The direction crosses a kink at the point itself: no derivative to compare.
    Kink,
    /// It disagrees at every step, and the one-sided slopes do not tell a kink.
    Disagrees,
}

/// Where a gradient pass writes: the parameters', the features' and (when checked)
/// the edge features' shadows.
type Shadows<'s> = (
    &'s mut Params<f64>,
    &'s mut ArrayD<f64>,
    Option<&'s mut ArrayD<f64>>,
);

/// The loss `sum(layer(x) ⊙ R)` of a check at its point, its native gradient per
/// checked block, and the loss at moved points.
struct Objective<'o, L: ?Sized> {
    layer: &'o L,
    ctx: Option<GraphCtx<f64>>,
    state: State<f64>,
    names: Vec<String>,
    r: Weighting,
    run_seed: u64,
    training: bool,
    params: Params<f64>,
    x: ArrayD<f64>,
    e: Option<ArrayD<f64>>,
    /// The native gradient of each checked block: the parameters in order, then the
    /// input and the edge features if checked.
    grads: Vec<(Block, ArrayD<f64>)>,
    /// Seeds the random directions: the check's seed and the data, so that every case
    /// of a property test gets its own directions, reproducibly.
    direction_seed: u64,
    /// Loss evaluations so far (the gradient pass included).
    evaluations: Cell<usize>,
}

impl<'o, L: Layer<f64> + ?Sized> Objective<'o, L> {
    fn new(check: &GradCheck<'_>, layer: &'o L) -> Result<Self, String> {
        let mut rng = StdRng::seed_from_u64(check.seed);
        let (params, state) = layer.init(&mut rng);
        let ctx = check.graph.map(GraphCtx::<f64>::new);
        let run_seed = check.seed.wrapping_add(17);
        let r_seed = rng.random();
        let words = check
            .x
            .iter()
            .chain(check.edge_attr.iter().flatten())
            .map(|v| v.to_bits());
        let graph = check.graph.into_iter().flat_map(|g| {
            let n = g.num_nodes() as u64;
            std::iter::once(n).chain(g.src().iter().chain(g.dst()).map(|&i| u64::from(i)))
        });
        let mut obj = Objective {
            layer,
            ctx,
            state,
            names: params.names().to_vec(),
            r: Weighting {
                seed: r_seed,
                r: OnceCell::new(),
                reshaped: Cell::new(false),
            },
            run_seed,
            training: check.training,
            x: check.x.clone().into_dyn(),
            e: check.edge_attr.clone(),
            grads: Vec::new(),
            direction_seed: fnv1a(check.seed, words.chain(graph)),
            evaluations: Cell::new(0),
            params,
        };
        let mut gp = obj.params.zeros_like();
        let mut gx = ArrayD::zeros(obj.x.raw_dim());
        let mut ge = obj.e.as_ref().map(|e| ArrayD::zeros(e.raw_dim()));
        let ge_slot = ge.as_mut().filter(|_| check.check_edge_attr);
        obj.loss(
            &obj.params,
            &obj.x,
            obj.e.as_ref(),
            Some((&mut gp, &mut gx, ge_slot)),
        )?;
        let mut grads: Vec<(Block, ArrayD<f64>)> = gp
            .values()
            .iter()
            .enumerate()
            .map(|(k, g)| (Block::Param(k), g.as_standard_layout().into_owned()))
            .collect();
        if check.check_input {
            grads.push((Block::Input, gx));
        }
        if let Some(ge) = ge.filter(|_| check.check_edge_attr) {
            grads.push((Block::Edge, ge));
        }
        obj.grads = grads;
        Ok(obj)
    }

    /// The loss at parameters `p`, features `x` and edge features `e`; with `g`, its
    /// gradient into the parameter, feature and (if any) edge-feature shadows.
    fn loss(
        &self,
        p: &Params<f64>,
        x: &ArrayD<f64>,
        e: Option<&ArrayD<f64>>,
        g: Option<Shadows<'_>>,
    ) -> Result<f64, String> {
        self.evaluations.set(self.evaluations.get() + 1);
        let feats = Features::Dense(x.clone().into());
        let arena = GraphArena::new();
        let inputs = Inputs {
            graph: self.ctx.as_ref(),
            x: &feats,
            edge_attr: e,
            arena: Some(&arena),
        };
        let mut st = self.state.clone();
        let mut run_rng = StdRng::seed_from_u64(self.run_seed);
        let mut bufs = TapeBuffers::new();
        let (grads, dx, de) = match g {
            Some((gp, gx, ge)) => (Some(gp), Some(gx), ge),
            None => (None, None, None),
        };
        let want = grads.is_some();
        let args = model_args(p, grads, &inputs, dx, de);
        weighted_loss(
            &mut bufs,
            self.layer,
            &self.names,
            &inputs,
            &mut st,
            self.training,
            &mut run_rng,
            &self.r,
            args,
            want,
        )
        .map_err(|e| format!("{}: {e}", self.layer.name()))
    }

    /// The loss with the point moved by `d` along `shift`; [`Halt::Reshaped`] when the
    /// output's shape there differs from the point's.
    fn moved(&self, shift: Shift<'_>, d: f64) -> Result<f64, Halt> {
        let mut p = self.params.clone();
        let mut x = self.x.clone();
        let mut e = self.e.clone();
        match shift {
            Shift::Coord(b, j) => {
                slot(b, &mut p, &mut x, &mut e)
                    .as_slice_mut()
                    .expect("standard layout")[j] += d;
            }
            Shift::Along(parts) => {
                for (b, v) in parts {
                    slot(*b, &mut p, &mut x, &mut e).scaled_add(d, v);
                }
            }
        }
        let loss = self.loss(&p, &x, e.as_ref(), None);
        // Checked whatever the evaluation gave: a shape that broadcasts against `R`
        // gives a number, and one that does not an error; neither compares.
        if self.r.reshaped.take() {
            return Err(Halt::Reshaped);
        }
        Ok(loss?)
    }

    /// The native gradient of block `b`.
    fn gradient(&self, b: Block) -> &ArrayD<f64> {
        let found = self.grads.iter().find(|(c, _)| *c == b);
        &found.expect("directions move only checked blocks").1
    }

    /// The name of block `b` in messages.
    fn label(&self, b: Block) -> &str {
        match b {
            Block::Param(k) => &self.params.names()[k],
            Block::Input => "input",
            Block::Edge => "edge_attr",
        }
    }

    /// The two random directions: Gaussian over every checked coordinate, and over one
    /// block drawn at random. Each block's part is scaled by `1 / sqrt(len)`, so that a
    /// block counts about as much as another whatever its size (a two-entry bias next
    /// to a hundred input features), and an error in one entry of a small block is not
    /// drowned by the tolerance of a large one.
    fn directions(&self) -> Vec<Direction> {
        let mut rng = StdRng::seed_from_u64(self.direction_seed);
        let blocks: Vec<&(Block, ArrayD<f64>)> =
            self.grads.iter().filter(|(_, g)| !g.is_empty()).collect();
        if blocks.is_empty() {
            return Vec::new();
        }
        let dense = Direction {
            parts: blocks
                .iter()
                .map(|(b, g)| (*b, gaussian(g.raw_dim(), &mut rng)))
                .collect(),
        };
        let (b, g) = blocks[rng.random_range(0..blocks.len())];
        let single = Direction {
            parts: vec![(*b, gaussian(g.raw_dim(), &mut rng))],
        };
        vec![dense, single]
    }
}

/// The array of block `b` among the parameters `p`, the features `x` and the edge
/// features `e`.
fn slot<'s>(
    b: Block,
    p: &'s mut Params<f64>,
    x: &'s mut ArrayD<f64>,
    e: &'s mut Option<ArrayD<f64>>,
) -> &'s mut ArrayD<f64> {
    match b {
        Block::Param(k) => &mut p.values_mut()[k],
        Block::Input => x,
        Block::Edge => e
            .as_mut()
            .expect("edge coordinates only with edge features"),
    }
}

/// Standard normal entries (Box–Muller) of the given shape, scaled by `1 / sqrt(len)`.
fn gaussian(shape: IxDyn, rng: &mut StdRng) -> ArrayD<f64> {
    let scale = 1.0 / (shape.size().max(1) as f64).sqrt();
    ArrayD::from_shape_simple_fn(shape, || {
        let u = 1.0 - rng.random::<f64>(); // in (0, 1]: the logarithm is finite
        let w = rng.random::<f64>();
        scale * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * w).cos()
    })
}

/// FNV-1a over the bytes of `words`, started from `seed`.
fn fnv1a(seed: u64, words: impl Iterator<Item = u64>) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325 ^ seed;
    for w in words {
        for byte in w.to_le_bytes() {
            h ^= u64::from(byte);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// What a gradient that disagrees with the central difference turned out to be.
enum Mismatch {
    /// A kink (a relu or max switching) lies within the step of the point: smaller
    /// steps agree with the gradient.
    KinkNearby,
    /// A kink at the point itself: the one-sided slopes stay apart as the step
    /// shrinks. The function has no derivative in this direction, and what AD returns
    /// is a convention (`relu'(0) = 0` in every unit at once), which need not even lie
    /// between the one-sided slopes when several units switch together; the
    /// coordinate is not judged (and [`GradCheck::run`] fails when most are like it).
    KinkHere,
    /// A wrong gradient; the text adds the one-sided slopes to the message.
    Wrong(String),
}

impl GradCheck<'_> {
    /// Tells a kink from a wrong gradient once `g` disagrees with the central
    /// difference at step `h`. `central(s)` is the central difference at step `s`,
    /// `moved(d)` the loss moved by `d` (along a coordinate or a direction).
    ///
    /// A smooth function's central differences converge to its derivative as the step
    /// shrinks, and its one-sided slopes converge to each other; so where a
    /// smaller-step difference disagrees too and the slopes converge, the gradient is
    /// wrong. A jump in the function (say, a random mask that changed between
    /// evaluations) makes the slopes grow like `1 / step`, which is also judged wrong.
    ///
    /// A layer whose output's shape depends on its input (a pooling that keeps the
    /// nodes scoring above a threshold) jumps where a node crosses it; a step that
    /// changes the shape is a discontinuity within the step, like a kink: smaller steps
    /// decide, and when even the smallest changes the shape the point is on it.
    fn judge_mismatch(
        &self,
        g: f64,
        central: &dyn Fn(f64) -> Result<f64, Halt>,
        moved: &dyn Fn(f64) -> Result<f64, Halt>,
    ) -> Result<Mismatch, String> {
        let tol = |a: f64, b: f64| self.atol + self.rtol * a.abs().max(b.abs());
        // Steps well below `h` but far enough above rounding (the losses are O(1)).
        let steps = [self.h / 16.0, self.h / 256.0];
        for s in steps {
            if let Some(fd) = central(s).relevant()?
                && (g - fd).abs() <= tol(g, fd)
            {
                return Ok(Mismatch::KinkNearby);
            }
        }
        let f0 = moved(0.0).relevant()?.ok_or_else(|| {
            "the output's shape at the point differs from its shape at the gradient pass"
                .to_string()
        })?;
        let slopes = |s: f64| -> Result<Option<(f64, f64)>, String> {
            let (Some(minus), Some(plus)) = (moved(-s).relevant()?, moved(s).relevant()?) else {
                return Ok(None);
            };
            Ok(Some(((f0 - minus) / s, (plus - f0) / s)))
        };
        let (Some((left, right)), Some((left2, right2))) = (slopes(steps[0])?, slopes(steps[1])?)
        else {
            return Ok(Mismatch::KinkHere);
        };
        // A kink here: the slopes differ, and by the same amount at both steps (a smooth
        // function's gap shrinks with the step).
        let gap = (right - left).abs();
        let kink = gap > tol(left, right)
            && ((right2 - left2).abs() - gap).abs() <= tol(gap, gap) + 0.5 * gap;
        if kink {
            return Ok(Mismatch::KinkHere);
        }
        Ok(Mismatch::Wrong(format!(
            " (one-sided slopes {left} and {right} at step {})",
            steps[0]
        )))
    }
}

/// The fixed random weighting `R` of a layer's output, uniform in `[-1, 1)`: drawn from
/// `seed` at the first evaluation, once the output's shape is known (which saves a
/// forward pass to learn it).
struct Weighting {
    seed: u64,
    r: OnceCell<ArrayD<f64>>,
    /// Set when an evaluation's output had another shape than the first's.
    reshaped: Cell<bool>,
}

impl Weighting {
    /// `R`, drawn for `shape` if not yet drawn; a different `shape` later sets
    /// `reshaped` (and the product with `R` fails or broadcasts: not compared).
    fn get(&self, shape: &[usize]) -> &ArrayD<f64> {
        let r = self.r.get_or_init(|| {
            let mut rng = StdRng::seed_from_u64(self.seed);
            ArrayD::from_shape_simple_fn(IxDyn(shape), || rng.random::<f64>() * 2.0 - 1.0)
        });
        if r.shape() != shape {
            self.reshaped.set(true);
        }
        r
    }
}

/// Why a moved loss has no value to compare.
enum Halt {
    /// The output's shape changed (a discontinuity within the step).
    Reshaped,
    /// The evaluation failed; the message says why.
    Failed(String),
}

impl From<String> for Halt {
    fn from(e: String) -> Self {
        Halt::Failed(e)
    }
}

/// A moved loss as a value, `None` for a changed shape, or the failure.
trait Relevant {
    /// `Ok(Some(v))`, `Ok(None)` for [`Halt::Reshaped`], `Err` for a failure.
    fn relevant(self) -> Result<Option<f64>, String>;
}

impl Relevant for Result<f64, Halt> {
    fn relevant(self) -> Result<Option<f64>, String> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(Halt::Reshaped) => Ok(None),
            Err(Halt::Failed(e)) => Err(e),
        }
    }
}

/// `sum(layer(x) ⊙ r)` and, when `grad`, its gradient into the shadows of `args`.
#[allow(clippy::too_many_arguments)]
fn weighted_loss<'a, L: Layer<f64> + ?Sized>(
    bufs: &'a mut TapeBuffers<f64>,
    layer: &L,
    names: &[String],
    inputs: &Inputs<'a, f64>,
    st: &mut State<f64>,
    training: bool,
    rng: &mut StdRng,
    r: &'a Weighting,
    args: Vec<crate::Arg<'a, f64>>,
    grad: bool,
) -> crate::GnnResult<f64> {
    let carry = crate::ErrorCarry::new();
    let program = |t: &mut tensor::Tape<'a, f64>, h: Vec<Var>| {
        let y = carry.lift(forward_model(
            t, layer, names, &h, inputs, st, training, rng,
        ))?;
        let r = r.get(t.shape(y)?);
        let rv = t.constant(r);
        let m = t.mul(y, rv)?;
        t.sum(m)
    };
    carry.land(if grad {
        tensor::gradient(bufs, program, args)
    } else {
        tensor::value(bufs, program, args).map(|v| v.iter().next().copied().unwrap_or(0.0))
    })
}

/// The gradient `grad` of a smooth scalar function `f` at `x` against central
/// differences (`h = 1e-6`, `|g − fd| ≤ 1e-6 + 1e-5 · |fd|`): along two random
/// Gaussian directions (seeded from `x`), and only when one of them disagrees entry by
/// entry, which decides. `Err` names the first entry that disagrees.
///
/// An entry within `h` of a kink (a relu or a max switching: the one-sided differences
/// disagree) passes when its gradient is one of the one-sided slopes, the derivative
/// on one side of the kink; a layer's gradient is checked with [`GradCheck`], which
/// also counts such entries.
///
/// ```
/// use ndarray::{ArrayD, IxDyn};
/// use shade_gnn::testing::check_array_gradient;
///
/// let x = ArrayD::from_shape_vec(IxDyn(&[3]), vec![0.5, -1.0, 2.0]).unwrap();
/// let f = |x: &ArrayD<f64>| x.mapv(|v| v * v).sum();
/// check_array_gradient(&x, &x.mapv(|v| 2.0 * v), f).unwrap();
/// let err = check_array_gradient(&x, &x, f).unwrap_err();
/// assert!(err.starts_with("entry 0: gradient 0.5, finite differences give 1"), "{err}");
/// ```
pub fn check_array_gradient(
    x: &ArrayD<f64>,
    grad: &ArrayD<f64>,
    f: impl Fn(&ArrayD<f64>) -> f64,
) -> Result<(), String> {
    let h = 1e-6;
    let close = |g: f64, fd: f64| (g - fd).abs() <= 1e-6 + 1e-5 * fd.abs();
    let central = |v: &ArrayD<f64>| {
        let (mut plus, mut minus) = (x.clone(), x.clone());
        plus.scaled_add(h, v);
        minus.scaled_add(-h, v);
        (f(&plus) - f(&minus)) / (2.0 * h)
    };
    let mut rng = StdRng::seed_from_u64(fnv1a(0, x.iter().map(|v| v.to_bits())));
    let agrees = (0..2).all(|_| {
        let v = gaussian(x.raw_dim(), &mut rng);
        close((grad * &v).sum(), central(&v))
    });
    if agrees {
        return Ok(());
    }
    let grad = grad.as_standard_layout();
    let grad = grad.as_slice().expect("standard layout");
    for (j, &g) in grad.iter().enumerate() {
        let mut v = ArrayD::zeros(x.raw_dim());
        v.as_slice_mut().expect("standard layout")[j] = 1.0;
        let fd = central(&v);
        if !close(g, fd) && !one_sided_at_a_kink(g, x, &v, h, &f) {
            return Err(format!(
                "entry {j}: gradient {g}, finite differences give {fd}"
            ));
        }
    }
    Ok(())
}

/// Whether `f` has a kink within `h` of `x` along `v` (its one-sided differences
/// disagree beyond their `O(h)` error) and `g` is one of the one-sided slopes.
fn one_sided_at_a_kink(
    g: f64,
    x: &ArrayD<f64>,
    v: &ArrayD<f64>,
    h: f64,
    f: &impl Fn(&ArrayD<f64>) -> f64,
) -> bool {
    let (mut plus, mut minus) = (x.clone(), x.clone());
    plus.scaled_add(h, v);
    minus.scaled_add(-h, v);
    let f0 = f(x);
    let (right, left) = ((f(&plus) - f0) / h, (f0 - f(&minus)) / h);
    let loose = |a: f64, b: f64| (a - b).abs() <= 1e-4 + 1e-3 * b.abs();
    !loose(right, left) && (loose(g, right) || loose(g, left))
}

/// [`GradCheck::new`]`(graph, x).run(layer)`.
pub fn check_layer_gradient<L: Layer<f64> + ?Sized>(
    layer: &L,
    graph: Option<&Graph>,
    x: &Array2<f64>,
) -> Result<(), String> {
    GradCheck::new(graph, x).run(layer)
}

#[cfg(test)]
mod tests;
