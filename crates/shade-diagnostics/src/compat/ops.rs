//! Tensor-layer operation × mode: every operation of the tape, differentiated in
//! reverse and forward mode on a small seeded case, against central differences.

use super::Cell;
use crate::gradcheck::{
    GradcheckOptions, TensorProgram, gradcheck_tensor, gradcheck_tensor_forward,
};
use ndarray::{ArrayD, IxDyn};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use shade_autodiff::AdResult;
use shade_autodiff::tensor::{Rows, SparseMatrix, SymNorm, Tape, Var};

/// Constants shared by the operation cases.
struct Consts {
    idx: Vec<usize>,
    seg: Vec<usize>,
    labels: Vec<usize>,
    mask: Vec<bool>,
    a: SparseMatrix<f64>,
    /// A GCN normalisation structure on 3 nodes: rows (destinations), columns
    /// (sources), the weight each pair carries (`None`: an added loop), its entry.
    norm: [Vec<usize>; 3],
    norm_from: Vec<Option<usize>>,
}

impl Consts {
    fn sym_norm(&self) -> SymNorm<'_> {
        SymNorm {
            rows: &self.norm[0],
            cols: &self.norm[1],
            from: &self.norm_from,
            fill: 1.0,
            entry: &self.norm[2],
            num_entries: 7,
            num_nodes: 3,
            normalize: true,
        }
    }
}

impl Consts {
    fn new() -> Self {
        // A 4 × 3 sparse matrix with 6 entries (rows = destinations).
        let a = SparseMatrix::try_from_csr(
            (4, 3),
            vec![0, 2, 3, 5, 6],
            vec![0, 2, 1, 0, 1, 2],
            vec![0.5, -1.0, 2.0, 1.5, 0.25, -0.75],
        )
        .expect("a valid CSR matrix");
        Consts {
            idx: vec![2, 0, 1, 2, 3],
            seg: vec![0, 1, 1, 2, 0],
            labels: vec![1, 0, 2, 1],
            mask: vec![true, false, true, true],
            a,
            // 0 -> 1, 1 -> 0, 1 -> 2, 2 -> 1, the loop 0 -> 0, added loops at 1 and 2.
            norm: [
                vec![1, 0, 2, 1, 0, 1, 2],
                vec![0, 1, 1, 2, 0, 1, 2],
                vec![2, 1, 5, 4, 0, 3, 6],
            ],
            norm_from: vec![Some(0), Some(1), Some(2), Some(3), Some(4), None, None],
        }
    }
}

type Body = for<'a> fn(&'a Consts, &mut Tape<'a, f64>, &[Var]) -> AdResult<Var>;

/// One operation case: parameter shapes, domain, and the program.
struct OpCase {
    name: &'static str,
    shapes: &'static [&'static [usize]],
    /// Draw the parameters from `[0.5, 2]` instead of `[-1, 1]`.
    positive: bool,
    body: Body,
}

struct Program<'c> {
    consts: &'c Consts,
    body: Body,
}

impl TensorProgram<f64> for Program<'_> {
    fn run<'a>(&'a self, tape: &mut Tape<'a, f64>, params: &[Var]) -> AdResult<Var> {
        (self.body)(self.consts, tape, params)
    }
}

/// `Σ y ⊙ r` with fixed pseudo-random weights `r` of `y`'s shape: a scalar whose
/// gradient exercises every output element differently.
fn wsum(t: &mut Tape<'_, f64>, y: Var) -> AdResult<Var> {
    let shape = t.shape(y)?.to_vec();
    let n: usize = shape.iter().product();
    let r = ArrayD::from_shape_vec(
        IxDyn(&shape),
        (0..n)
            .map(|i| 0.3 + ((i * 37 + 11) % 17) as f64 / 17.0)
            .collect(),
    )
    .expect("n elements");
    let r = t.constant(&r);
    let p = t.mul(y, r)?;
    t.sum(p)
}

macro_rules! case {
    ($name:literal, [$($s:expr),*], $pos:expr, |$c:ident, $t:ident, $p:ident| $body:expr) => {
        OpCase {
            name: $name,
            shapes: &[$(&$s),*],
            positive: $pos,
            body: {
                fn body<'a>($c: &'a Consts, $t: &mut Tape<'a, f64>, $p: &[Var]) -> AdResult<Var> {
                    let _ = &$c;
                    $body
                }
                body
            },
        }
    };
}

fn cases() -> Vec<OpCase> {
    vec![
        case!("neg", [[3, 2]], false, |_c, t, p| {
            let y = t.neg(p[0])?;
            wsum(t, y)
        }),
        case!("scale", [[3, 2]], false, |_c, t, p| {
            let y = t.scale(p[0], -1.5)?;
            wsum(t, y)
        }),
        case!("exp", [[3, 2]], false, |_c, t, p| {
            let y = t.exp(p[0])?;
            wsum(t, y)
        }),
        case!("ln", [[3, 2]], true, |_c, t, p| {
            let y = t.ln(p[0])?;
            wsum(t, y)
        }),
        case!("sqrt", [[3, 2]], true, |_c, t, p| {
            let y = t.sqrt(p[0])?;
            wsum(t, y)
        }),
        case!("powi", [[3, 2]], false, |_c, t, p| {
            let y = t.powi(p[0], 3)?;
            wsum(t, y)
        }),
        case!("abs", [[3, 2]], false, |_c, t, p| {
            let y = t.abs(p[0])?;
            wsum(t, y)
        }),
        case!("tanh", [[3, 2]], false, |_c, t, p| {
            let y = t.tanh(p[0])?;
            wsum(t, y)
        }),
        case!("sigmoid", [[3, 2]], false, |_c, t, p| {
            let y = t.sigmoid(p[0])?;
            wsum(t, y)
        }),
        case!("relu", [[3, 2]], false, |_c, t, p| {
            let y = t.relu(p[0])?;
            wsum(t, y)
        }),
        case!("leaky_relu", [[3, 2]], false, |_c, t, p| {
            let y = t.leaky_relu(p[0], 0.1)?;
            wsum(t, y)
        }),
        case!("elu", [[3, 2]], false, |_c, t, p| {
            let y = t.elu(p[0], 1.0)?;
            wsum(t, y)
        }),
        case!("gelu", [[3, 2]], false, |_c, t, p| {
            let y = t.gelu(p[0])?;
            wsum(t, y)
        }),
        case!("softplus", [[3, 2]], false, |_c, t, p| {
            let y = t.softplus(p[0])?;
            wsum(t, y)
        }),
        case!("clamp", [[3, 2]], false, |_c, t, p| {
            let y = t.clamp(p[0], -0.5, 0.5)?;
            wsum(t, y)
        }),
        case!("add", [[3, 2], [2]], false, |_c, t, p| {
            let y = t.add(p[0], p[1])?;
            wsum(t, y)
        }),
        case!("sub", [[3, 2], [3, 1]], false, |_c, t, p| {
            let y = t.sub(p[0], p[1])?;
            wsum(t, y)
        }),
        case!("mul", [[3, 2], [2]], false, |_c, t, p| {
            let y = t.mul(p[0], p[1])?;
            wsum(t, y)
        }),
        case!("div", [[3, 2], [3, 1]], true, |_c, t, p| {
            let y = t.div(p[0], p[1])?;
            wsum(t, y)
        }),
        case!("matmul", [[3, 4], [4, 2]], false, |_c, t, p| {
            let y = t.matmul(p[0], p[1])?;
            wsum(t, y)
        }),
        case!("transpose", [[3, 2]], false, |_c, t, p| {
            let y = t.transpose(p[0])?;
            wsum(t, y)
        }),
        case!("reshape", [[3, 2]], false, |_c, t, p| {
            let y = t.reshape(p[0], &[2, 3])?;
            wsum(t, y)
        }),
        case!("concat", [[3, 2], [1, 2]], false, |_c, t, p| {
            let y = t.concat(&[p[0], p[1]], 0)?;
            wsum(t, y)
        }),
        case!("narrow", [[4, 3]], false, |_c, t, p| {
            let y = t.narrow(p[0], 1, 1, 2)?;
            wsum(t, y)
        }),
        case!("stack", [[3, 2], [3, 2]], false, |_c, t, p| {
            let y = t.stack(&[p[0], p[1]], 1)?;
            wsum(t, y)
        }),
        case!("sum", [[3, 2]], false, |_c, t, p| {
            let y = t.sum_axis(p[0], 0)?;
            wsum(t, y)
        }),
        case!("mean", [[3, 2]], false, |_c, t, p| {
            let y = t.mean_axis(p[0], 1)?;
            wsum(t, y)
        }),
        case!("max", [[3, 4]], false, |_c, t, p| {
            let y = t.max_axis(p[0], 1)?;
            wsum(t, y)
        }),
        case!("min", [[3, 4]], false, |_c, t, p| {
            let y = t.min_axis(p[0], 0)?;
            wsum(t, y)
        }),
        case!("logsumexp", [[3, 4]], false, |_c, t, p| {
            let y = t.logsumexp(p[0], 1)?;
            wsum(t, y)
        }),
        case!("norm", [[3, 2]], false, |_c, t, p| t.norm(p[0])),
        case!("softmax", [[3, 4]], false, |_c, t, p| {
            let y = t.softmax(p[0], 1)?;
            wsum(t, y)
        }),
        case!("log_softmax", [[3, 4]], false, |_c, t, p| {
            let y = t.log_softmax(p[0], 1)?;
            wsum(t, y)
        }),
        case!("cross_entropy", [[4, 3]], false, |c, t, p| t.cross_entropy(
            p[0],
            &c.labels,
            Rows::Mask(&c.mask)
        )),
        case!("nll", [[4, 3]], false, |c, t, p| {
            let l = t.log_softmax(p[0], 1)?;
            t.nll(l, &c.labels, Rows::All)
        }),
        case!("mse", [[3, 2], [3, 2]], false, |_c, t, p| t.mse(p[0], p[1])),
        case!("bce_with_logits", [[3, 2], [3, 2]], false, |_c, t, p| t
            .bce_with_logits(p[0], p[1])),
        case!("index_select", [[4, 2]], false, |c, t, p| {
            let y = t.index_select(p[0], &c.idx)?;
            wsum(t, y)
        }),
        case!("scatter_add", [[5, 2]], false, |c, t, p| {
            let y = t.scatter_add(p[0], &c.seg, 3)?;
            wsum(t, y)
        }),
        case!("scatter_mean", [[5, 2]], false, |c, t, p| {
            let y = t.scatter_mean(p[0], &c.seg, 3)?;
            wsum(t, y)
        }),
        case!("scatter_max", [[5, 2]], false, |c, t, p| {
            let y = t.scatter_max(p[0], &c.seg, 3)?;
            wsum(t, y)
        }),
        case!("segment_softmax", [[5, 2]], false, |c, t, p| {
            let y = t.segment_softmax(p[0], &c.seg, 3)?;
            wsum(t, y)
        }),
        case!("spmm", [[3, 2]], false, |c, t, p| {
            let y = t.spmm(&c.a, p[0])?;
            wsum(t, y)
        }),
        case!("dense_spmm", [[2, 4]], false, |c, t, p| {
            let y = t.dense_spmm(p[0], &c.a)?;
            wsum(t, y)
        }),
        case!("spmm_values", [[6], [3, 2]], false, |c, t, p| {
            let y = t.spmm_values(&c.a, p[0], p[1])?;
            wsum(t, y)
        }),
        case!("coo_spmm", [[5, 2], [4, 4]], false, |c, t, p| {
            let y = t.coo_spmm(&c.seg, &c.idx, 3, p[0], p[1])?;
            wsum(t, y)
        }),
        case!("sym_norm_values", [[5]], true, |c, t, p| {
            let y = t.sym_norm_values(p[0], c.sym_norm())?;
            wsum(t, y)
        }),
        case!("group_dot", [[3, 4], [1, 2, 2]], false, |_c, t, p| {
            let y = t.group_dot(p[0], p[1], 2)?;
            wsum(t, y)
        }),
        case!("dropout", [[4, 3]], false, |_c, t, p| {
            let mut rng = StdRng::seed_from_u64(3);
            let y = t.dropout(p[0], 0.5, &mut rng, true)?;
            wsum(t, y)
        }),
    ]
}

fn params(case: &OpCase, seed: u64) -> Vec<ArrayD<f64>> {
    let mut rng = StdRng::seed_from_u64(seed);
    case.shapes
        .iter()
        .map(|s| {
            let n: usize = s.iter().product();
            let v = (0..n)
                .map(|_| {
                    if case.positive {
                        rng.random_range(0.5..2.0)
                    } else {
                        rng.random_range(-1.0..1.0)
                    }
                })
                .collect();
            ArrayD::from_shape_vec(IxDyn(s), v).expect("n elements")
        })
        .collect()
}

/// One row of the tensor-operation table: the operation, reverse and forward cells.
#[derive(Clone, Debug, PartialEq)]
pub struct OpRow {
    /// The tape method.
    pub op: &'static str,
    /// `tensor::gradient` against finite differences.
    pub reverse: Cell,
    /// `tensor::pushforward` against finite differences.
    pub forward: Cell,
}

/// Runs every tensor-layer operation in reverse and forward mode on a small random
/// case (`f64`, seeded) and compares with central differences.
pub fn tensor_op_table() -> Vec<OpRow> {
    let consts = Consts::new();
    let opts = GradcheckOptions::f64();
    cases()
        .iter()
        .enumerate()
        .map(|(k, case)| {
            let prog = Program {
                consts: &consts,
                body: case.body,
            };
            let ps = params(case, 100 + k as u64);
            OpRow {
                op: case.name,
                reverse: Cell::from_report(gradcheck_tensor(&prog, &ps, &opts)),
                forward: Cell::from_report(gradcheck_tensor_forward(&prog, &ps, &opts)),
            }
        })
        .collect()
}
