//! Building blocks shared by the layers: option and shape errors in the user's terms,
//! linear maps by parameter name, row normalisation, and the GRU and LSTM cells (composed from matmul,
//! sigmoid, tanh, mul and add).

use crate::ctx::Float;
use crate::error::{GnnError, GnnResult};
use crate::layer::Input;
use crate::params::ParamVars;
use shade_autodiff::tensor::{Tape, Var};

/// [`GnnError::InvalidSetting`] for an option of a layer: its name, its value and
/// what is allowed (the layer's path is added on the way out of the model).
pub(crate) fn bad_option(name: &str, value: impl std::fmt::Display, expected: &str) -> GnnError {
    GnnError::setting(name, value, expected)
}

/// [`GnnError::DataMismatch`] for a layer that needs edge features the call does not
/// have; `expected` says which (e.g. `` `[E, 4]` edge features (edge_dim = 4) ``).
pub(crate) fn no_edge_features(expected: String) -> GnnError {
    GnnError::DataMismatch {
        what: "edge features".into(),
        expected,
        found: "none (give them with `Inputs::with_edge_attr`)".into(),
    }
}

/// [`GnnError::InputShape`] unless the 2-D input `x` has `width` columns, the width
/// the layer's option `option` (e.g. `num_features`) sets.
pub(crate) fn check_width<T: crate::ctx::Float>(
    t: &Tape<'_, T>,
    what: &str,
    x: Var,
    width: usize,
    option: &str,
) -> GnnResult<()> {
    let shape = t.shape(x)?;
    if shape.len() == 2 && shape[1] == width {
        return Ok(());
    }
    let unit = if what == "input" {
        "features per node"
    } else {
        "columns"
    };
    Err(GnnError::InputShape {
        what: what.into(),
        found: match shape {
            [_, f] => format!("{f} {unit}"),
            s => format!("shape {s:?}"),
        },
        param: None,
        expected: format!("{option} = {width}"),
    })
}

/// [`GnnError::InputShape`] for an input of shape `shape` where the layer needs
/// `[nodes, F]`.
pub(crate) fn rows_per_node(shape: &[usize], nodes: usize) -> GnnError {
    GnnError::InputShape {
        what: "input".into(),
        found: match shape {
            [r, _] => format!("{r} rows"),
            s => format!("shape {s:?}"),
        },
        param: None,
        expected: format!("one row per node of the graph, [{nodes}, features]"),
    }
}

/// `x · Wᵀ (+ b)` with `W = p[{name}.weight]` and `b = p[{name}.bias]` when `bias`.
pub(crate) fn linear<'a, T: Float>(
    t: &mut Tape<'a, T>,
    x: Input<'a, T>,
    p: &ParamVars<'_>,
    name: &str,
    bias: bool,
) -> GnnResult<Var> {
    let p = p.scope(name);
    let y = x.linear(t, p.param("weight")?)?;
    if bias {
        Ok(t.add(y, p.get("bias")?)?)
    } else {
        Ok(y)
    }
}

/// Each row of the matrix `x` over its Euclidean norm, as PyG's `F.normalize`:
/// `x_i / max(‖x_i‖, 1e-12)`.
pub(crate) fn normalize_rows<T: Float>(t: &mut Tape<'_, T>, x: Var) -> GnnResult<Var> {
    let n = t.shape(x)?[0];
    let sq = t.mul(x, x)?;
    let s = t.sum_axis(sq, 1)?;
    let s = t.reshape(s, &[n, 1])?;
    let norm = t.sqrt(s)?;
    let norm = t.clamp(norm, T::cst(1e-12), T::infinity())?;
    Ok(t.div(x, norm)?)
}

/// `x · Wᵀ + b_x + h · Uᵀ + b_h` split into `k` column chunks of width `c`.
fn gates<T: Float>(
    t: &mut Tape<'_, T>,
    x: Var,
    h: Var,
    p: &ParamVars<'_>,
    names: [&str; 4],
    (k, c): (usize, usize),
    bias: bool,
) -> GnnResult<(Vec<Var>, Vec<Var>)> {
    let mut gi = Input::Dense(x).linear(t, p.param(names[0])?)?;
    let mut gh = Input::Dense(h).linear(t, p.param(names[1])?)?;
    if bias {
        gi = t.add(gi, p.get(names[2])?)?;
        gh = t.add(gh, p.get(names[3])?)?;
    }
    let mut a = Vec::with_capacity(k);
    let mut b = Vec::with_capacity(k);
    for q in 0..k {
        a.push(t.narrow(gi, 1, q * c, c)?);
        b.push(t.narrow(gh, 1, q * c, c)?);
    }
    Ok((a, b))
}

/// PyTorch's `GRUCell` (gate order r, z, n): parameters `weight_ih [3C, in]`,
/// `weight_hh [3C, C]` and, with `bias` (PyTorch's `GRUCell(bias=...)`), `bias_ih [3C]`,
/// `bias_hh [3C]` in `p`; returns the new `h`.
pub(crate) fn gru_cell<T: Float>(
    t: &mut Tape<'_, T>,
    x: Var,
    h: Var,
    p: &ParamVars<'_>,
    c: usize,
    bias: bool,
) -> GnnResult<Var> {
    let (gi, gh) = gates(
        t,
        x,
        h,
        p,
        ["weight_ih", "weight_hh", "bias_ih", "bias_hh"],
        (3, c),
        bias,
    )?;
    let r = t.add(gi[0], gh[0])?;
    let r = t.sigmoid(r)?;
    let z = t.add(gi[1], gh[1])?;
    let z = t.sigmoid(z)?;
    let rn = t.mul(r, gh[2])?;
    let n = t.add(gi[2], rn)?;
    let n = t.tanh(n)?;
    // h' = (1 - z) n + z h = n + z (h - n)
    let d = t.sub(h, n)?;
    let zd = t.mul(z, d)?;
    Ok(t.add(n, zd)?)
}

/// PyTorch's `LSTM` layer 0 for one step (gate order i, f, g, o): parameters
/// `weight_ih_l0 [4C, in]`, `weight_hh_l0 [4C, C]`, `bias_ih_l0`, `bias_hh_l0` `[4C]`;
/// returns the new `(h, c)`.
pub(crate) fn lstm_cell<T: Float>(
    t: &mut Tape<'_, T>,
    x: Var,
    (h, cell): (Var, Var),
    p: &ParamVars<'_>,
    c: usize,
) -> GnnResult<(Var, Var)> {
    let (gi, gh) = gates(
        t,
        x,
        h,
        p,
        ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"],
        (4, c),
        true,
    )?;
    let mut g = Vec::with_capacity(4);
    for q in 0..4 {
        g.push(t.add(gi[q], gh[q])?);
    }
    let i = t.sigmoid(g[0])?;
    let f = t.sigmoid(g[1])?;
    let gg = t.tanh(g[2])?;
    let o = t.sigmoid(g[3])?;
    let fc = t.mul(f, cell)?;
    let ig = t.mul(i, gg)?;
    let cell = t.add(fc, ig)?;
    let tc = t.tanh(cell)?;
    let h = t.mul(o, tc)?;
    Ok((h, cell))
}

/// Dense helpers for the reference computations of the layer tests.
#[cfg(test)]
pub(crate) mod reference {
    use crate::params::Params;
    use ndarray::{Array1, Array2, Ix1, Ix2};

    /// A 2-D parameter.
    pub(crate) fn m(p: &Params<f64>, name: &str) -> Array2<f64> {
        p.get(name)
            .unwrap_or_else(|| panic!("parameter {name}"))
            .clone()
            .into_dimensionality::<Ix2>()
            .unwrap()
    }

    /// A 1-D parameter.
    pub(crate) fn v(p: &Params<f64>, name: &str) -> Array1<f64> {
        p.get(name)
            .unwrap_or_else(|| panic!("parameter {name}"))
            .clone()
            .into_dimensionality::<Ix1>()
            .unwrap()
    }

    /// A 3-D parameter.
    pub(crate) fn t3(p: &Params<f64>, name: &str) -> ndarray::Array3<f64> {
        p.get(name)
            .unwrap_or_else(|| panic!("parameter {name}"))
            .clone()
            .into_dimensionality::<ndarray::Ix3>()
            .unwrap()
    }

    /// `1 / (1 + e^-x)`.
    pub(crate) fn sigmoid(x: f64) -> f64 {
        1.0 / (1.0 + (-x).exp())
    }

    /// `x · Wᵀ + b` row by row with plain loops.
    pub(crate) fn affine(x: &Array2<f64>, w: &Array2<f64>, b: Option<&Array1<f64>>) -> Array2<f64> {
        let (n, o) = (x.nrows(), w.nrows());
        Array2::from_shape_fn((n, o), |(i, k)| {
            (0..x.ncols()).map(|c| x[[i, c]] * w[[k, c]]).sum::<f64>() + b.map_or(0.0, |b| b[k])
        })
    }

    /// The edges `(src, dst, weight)` of a graph.
    pub(crate) fn edge_list(g: &shade_graph::Graph) -> Vec<(usize, usize, f64)> {
        (0..g.num_edges())
            .map(|e| (g.src()[e] as usize, g.dst()[e] as usize, g.weight(e)))
            .collect()
    }

    /// The edges `(src, dst)` an attention layer attends over, with their edge
    /// features: as given, or (with `add_self_loops`) existing loops dropped and one
    /// loop per node appended whose features come from the remaining edges into the
    /// node by `fill` (none: zeros), as PyG's `remove_self_loops` + `add_self_loops`.
    pub(crate) fn attention_edge_list(
        g: &shade_graph::Graph,
        e: Option<&Array2<f64>>,
        add_self_loops: bool,
        fill: crate::layers::FillValue,
    ) -> (Vec<(usize, usize)>, Option<Array2<f64>>) {
        use crate::layers::FillValue;
        let all = edge_list(g);
        let keep: Vec<usize> = (0..all.len())
            .filter(|&k| !add_self_loops || all[k].0 != all[k].1)
            .collect();
        let mut edges: Vec<(usize, usize)> = keep.iter().map(|&k| (all[k].0, all[k].1)).collect();
        let n = g.num_nodes();
        if add_self_loops {
            edges.extend((0..n).map(|v| (v, v)));
        }
        let attrs = e.map(|e| {
            let d = e.ncols();
            let mut rows: Vec<Vec<f64>> = keep.iter().map(|&k| e.row(k).to_vec()).collect();
            if add_self_loops {
                for v in 0..n {
                    let into: Vec<&Vec<f64>> = keep
                        .iter()
                        .zip(&rows)
                        .filter(|(k, _)| all[**k].1 == v)
                        .map(|(_, r)| r)
                        .collect();
                    let col = |c: usize| into.iter().map(move |r| r[c]);
                    let row: Vec<f64> = (0..d)
                        .map(|c| match fill {
                            FillValue::Const(x) => x,
                            _ if into.is_empty() => 0.0,
                            FillValue::Add => col(c).sum(),
                            FillValue::Mean => col(c).sum::<f64>() / into.len() as f64,
                            FillValue::Max => col(c).fold(f64::NEG_INFINITY, f64::max),
                            FillValue::Min => col(c).fold(f64::INFINITY, f64::min),
                        })
                        .collect();
                    rows.push(row);
                }
            }
            Array2::from_shape_fn((rows.len(), d), |(i, c)| rows[i][c])
        });
        (edges, attrs)
    }

    /// A reference case: the graph, the node features and the edge features (if any).
    pub(crate) type Case<'c> = (
        &'c shade_graph::Graph,
        &'c Array2<f64>,
        Option<&'c Array2<f64>>,
    );

    /// Attention aggregation from its definition with plain loops: for every node `i`
    /// and head `k < h`, `α` is the softmax of `score(id, i, j, k)` over the edges
    /// `id = (j, i)` into `i`, and the output row gets `α · value(id, j, k, q)` in
    /// column `k·c + q` (`concat`) or its mean over the heads in column `q`.
    pub(crate) fn attention(
        n: usize,
        edges: &[(usize, usize)],
        (h, c, concat): (usize, usize, bool),
        score: impl Fn(usize, usize, usize, usize) -> f64,
        value: impl Fn(usize, usize, usize, usize) -> f64,
    ) -> Array2<f64> {
        let mut out = Array2::zeros((n, if concat { h * c } else { c }));
        for i in 0..n {
            let inc: Vec<(usize, usize)> = edges
                .iter()
                .enumerate()
                .filter(|(_, e)| e.1 == i)
                .map(|(id, e)| (id, e.0))
                .collect();
            for k in 0..h {
                let z: f64 = inc.iter().map(|&(id, j)| score(id, i, j, k).exp()).sum();
                for &(id, j) in &inc {
                    let a = score(id, i, j, k).exp() / z;
                    for q in 0..c {
                        let v = a * value(id, j, k, q);
                        if concat {
                            out[[i, k * c + q]] += v;
                        } else {
                            out[[i, q]] += v / h as f64;
                        }
                    }
                }
            }
        }
        out
    }

    /// The output of GATConv and GATv2Conv from their definition: [`attention`] over
    /// `edges` with `score` and, as the messages, the source rows of `values`
    /// (`[N, H·C]`), then the skip connection `x · resᵀ` (with `residual`) and the
    /// parameter `bias` (when present), in PyG's order.
    pub(crate) fn gat_output(
        (x, p): (&Array2<f64>, &Params<f64>),
        o: &crate::layers::AttentionOptions,
        (c, edges): (usize, &[(usize, usize)]),
        score: impl Fn(usize, usize, usize, usize) -> f64,
        values: &Array2<f64>,
    ) -> Array2<f64> {
        let value = |_id: usize, j: usize, k: usize, q: usize| values[[j, k * c + q]];
        let mut out = attention(x.nrows(), edges, (o.heads, c, o.concat), score, value);
        if o.residual {
            out += &affine(x, &m(p, "res.weight"), None);
        }
        if p.get("bias").is_some() {
            out += &v(p, "bias");
        }
        out
    }

    /// Runs `conv` (parameters drawn from seed 5, the listed biases set to non-zero
    /// values so that they are checked too) on `g` with features `x` and edge
    /// features `e`, and compares the output with `reference(params)` to 1e-12.
    pub(crate) fn check_against<L: crate::Layer<f64>>(
        conv: &L,
        (g, x, e): Case<'_>,
        biases: &[&str],
        reference: impl Fn(&Params<f64>) -> Array2<f64>,
    ) {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let (mut p, st) = conv.init(&mut rng);
        for name in biases {
            p.get_mut(name)
                .unwrap_or_else(|| panic!("parameter {name}"))
                .iter_mut()
                .enumerate()
                .for_each(|(i, v)| *v = 0.1 * i as f64 - 0.2);
        }
        let ctx = crate::GraphCtx::<f64>::new(g);
        let f = crate::Features::dense(x.clone());
        let ed = e.map(|e| e.clone().into_dyn());
        let mut inputs = crate::Inputs::new(&ctx, &f);
        if let Some(ed) = &ed {
            inputs = inputs.with_edge_attr(ed);
        }
        let (y, _) = crate::apply(conv, &inputs, &p, &st, false, &mut rng).unwrap();
        let y = y.into_dimensionality::<Ix2>().unwrap();
        crate::testing::assert_close(&y, &reference(&p), 1e-12);
    }

    /// One GRU step from the definition (gate order r, z, n) with parameters under
    /// `pre`.
    pub(crate) fn gru(p: &Params<f64>, pre: &str, x: &Array2<f64>, h: &Array2<f64>) -> Array2<f64> {
        let gi = affine(
            x,
            &m(p, &format!("{pre}weight_ih")),
            Some(&v(p, &format!("{pre}bias_ih"))),
        );
        let gh = affine(
            h,
            &m(p, &format!("{pre}weight_hh")),
            Some(&v(p, &format!("{pre}bias_hh"))),
        );
        let c = h.ncols();
        Array2::from_shape_fn(h.dim(), |(i, k)| {
            let r = sigmoid(gi[[i, k]] + gh[[i, k]]);
            let z = sigmoid(gi[[i, c + k]] + gh[[i, c + k]]);
            let n = (gi[[i, 2 * c + k]] + r * gh[[i, 2 * c + k]]).tanh();
            (1.0 - z) * n + z * h[[i, k]]
        })
    }

    /// One LSTM step from the definition (gate order i, f, g, o) with parameters under
    /// `pre`; returns `(h, c)`.
    pub(crate) fn lstm(
        p: &Params<f64>,
        pre: &str,
        x: &Array2<f64>,
        h: &Array2<f64>,
        cell: &Array2<f64>,
    ) -> (Array2<f64>, Array2<f64>) {
        let gi = affine(
            x,
            &m(p, &format!("{pre}weight_ih_l0")),
            Some(&v(p, &format!("{pre}bias_ih_l0"))),
        );
        let gh = affine(
            h,
            &m(p, &format!("{pre}weight_hh_l0")),
            Some(&v(p, &format!("{pre}bias_hh_l0"))),
        );
        let c = h.ncols();
        let g = &gi + &gh;
        let mut hn = Array2::zeros(h.dim());
        let mut cn = Array2::zeros(h.dim());
        for i in 0..h.nrows() {
            for k in 0..c {
                let ig = sigmoid(g[[i, k]]);
                let fg = sigmoid(g[[i, c + k]]);
                let gg = g[[i, 2 * c + k]].tanh();
                let og = sigmoid(g[[i, 3 * c + k]]);
                cn[[i, k]] = fg * cell[[i, k]] + ig * gg;
                hn[[i, k]] = og * cn[[i, k]].tanh();
            }
        }
        (hn, cn)
    }
}

/// Test-only dense operators written from PyG's definitions.
#[cfg(test)]
pub(crate) mod dense_ops {
    use super::reference::edge_list;
    use ndarray::Array2;

    /// PyG's `gcn_norm` as a dense `[N, N]` operator (rows = destination): non-loop
    /// edges, then one self-loop per node when `add_self_loops` (an existing loop keeps
    /// its weight, the last one wins), degrees = weighted in-degrees.
    pub(crate) fn gcn(g: &shade_graph::Graph, add_self_loops: bool) -> Array2<f64> {
        let n = g.num_nodes();
        let mut entries: Vec<(usize, usize, f64)> = Vec::new();
        if add_self_loops {
            let mut loop_w = vec![1.0; n];
            for (s, d, w) in edge_list(g) {
                if s == d {
                    loop_w[s] = w;
                } else {
                    entries.push((s, d, w));
                }
            }
            entries.extend((0..n).map(|v| (v, v, loop_w[v])));
        } else {
            entries = edge_list(g);
        }
        let mut deg = vec![0.0; n];
        for &(_, d, w) in &entries {
            deg[d] += w;
        }
        let is = |d: f64| if d == 0.0 { 0.0 } else { 1.0 / d.sqrt() };
        let mut a = Array2::zeros((n, n));
        for (s, d, w) in entries {
            a[[d, s]] += is(deg[s]) * w * is(deg[d]);
        }
        a
    }
}
