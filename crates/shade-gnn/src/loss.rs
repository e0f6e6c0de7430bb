//! Losses for [`single_train_step`](crate::train::single_train_step) and metrics.
//!
//! A loss is any `for<'a> Fn(&mut Tape<'a, T>, Var, &'a D) -> AdResult<Var>`: it
//! receives the model's output handle and the targets `D`, and returns a scalar. The
//! ready-made ones cover node classification on a set of nodes ([`NodeTargets`]:
//! cross-entropy on logits, NLL on log-probabilities) and dense targets
//! ([`DenseTargets`]: MSE, BCE with logits).

use crate::ctx::Float;
use ndarray::{ArrayD, Axis};
use shade_autodiff::AdResult;
use shade_autodiff::tensor::{Rows, Tape, Var};

/// Class labels of every node and the nodes the loss is taken over (e.g. the
/// training nodes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeTargets {
    /// Class of every node.
    pub labels: Vec<usize>,
    /// The nodes in the loss.
    pub nodes: Vec<usize>,
}

impl NodeTargets {
    /// Labels and the node set (`u32` ids as shade-graph's splits hold them).
    pub fn new(labels: &[usize], nodes: &[u32]) -> Self {
        NodeTargets {
            labels: labels.to_vec(),
            nodes: nodes.iter().map(|&v| v as usize).collect(),
        }
    }
}

/// Dense regression or binary targets of the output's shape.
#[derive(Clone, Debug, PartialEq)]
pub struct DenseTargets<T>(pub ArrayD<T>);

/// Mean cross-entropy of the logits `[N, C]` over the target nodes.
pub fn cross_entropy<'a, T: Float>(
    t: &mut Tape<'a, T>,
    logits: Var,
    y: &'a NodeTargets,
) -> AdResult<Var> {
    t.cross_entropy(logits, &y.labels, Rows::Index(&y.nodes))
}

/// Mean negative log-likelihood of log-probabilities `[N, C]` over the target nodes.
pub fn nll<'a, T: Float>(t: &mut Tape<'a, T>, logp: Var, y: &'a NodeTargets) -> AdResult<Var> {
    t.nll(logp, &y.labels, Rows::Index(&y.nodes))
}

/// Mean squared error against dense targets.
pub fn mse<'a, T: Float>(t: &mut Tape<'a, T>, out: Var, y: &'a DenseTargets<T>) -> AdResult<Var> {
    let y = t.constant(&y.0);
    t.mse(out, y)
}

/// Mean binary cross-entropy of logits against dense targets in `[0, 1]`.
pub fn bce_with_logits<'a, T: Float>(
    t: &mut Tape<'a, T>,
    logits: Var,
    y: &'a DenseTargets<T>,
) -> AdResult<Var> {
    let y = t.constant(&y.0);
    t.bce_with_logits(logits, y)
}

/// Fraction of `nodes` whose arg-max over the row of `scores` (`[N, C]`) equals the
/// label (0 for an empty set). Ties go to the first class.
pub fn accuracy<T: Float>(scores: &ArrayD<T>, labels: &[usize], nodes: &[usize]) -> f64 {
    if nodes.is_empty() || scores.ndim() != 2 {
        return 0.0;
    }
    let hits = nodes
        .iter()
        .filter(|&&v| {
            let row = scores.index_axis(Axis(0), v);
            let mut best = 0;
            for (c, &s) in row.iter().enumerate() {
                if s > row[best] {
                    best = c;
                }
            }
            labels.get(v) == Some(&best)
        })
        .count();
    hits as f64 / nodes.len() as f64
}

/// Area under the ROC curve of `scores` for binary `labels` (the probability that a
/// random positive scores above a random negative; ties count half). `NaN` without
/// both classes.
pub fn roc_auc(scores: &[f64], labels: &[bool]) -> f64 {
    let mut idx: Vec<usize> = (0..scores.len().min(labels.len())).collect();
    idx.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    // Average ranks (1-based) over ties.
    let mut rank = vec![0.0; idx.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && scores[idx[j + 1]] == scores[idx[i]] {
            j += 1;
        }
        let r = (i + j) as f64 / 2.0 + 1.0;
        idx[i..=j].iter().for_each(|&k| rank[k] = r);
        i = j + 1;
    }
    let pos = labels.iter().take(idx.len()).filter(|&&l| l).count() as f64;
    let neg = idx.len() as f64 - pos;
    let sum: f64 = (0..idx.len()).filter(|&k| labels[k]).map(|k| rank[k]).sum();
    (sum - pos * (pos + 1.0) / 2.0) / (pos * neg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_by_hand() {
        let s = ndarray::array![[0.1, 0.9], [0.8, 0.2], [0.5, 0.5]].into_dyn();
        assert_eq!(accuracy(&s, &[1, 1, 0], &[0, 1, 2]), 2.0 / 3.0);
        assert_eq!(accuracy(&s, &[1, 1, 0], &[]), 0.0);
        assert_eq!(
            roc_auc(&[0.1, 0.4, 0.35, 0.8], &[false, false, true, true]),
            0.75
        );
        assert_eq!(roc_auc(&[0.5, 0.5], &[false, true]), 0.5);
    }
}
