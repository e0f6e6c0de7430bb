//! Losses for [`single_train_step`](crate::train::single_train_step) and metrics.
//!
//! A loss is any `for<'a> Fn(&mut Tape<'a, T>, Var, &'a D) -> AdResult<Var>`: it
//! receives the model's output handle and the targets `D`, and returns a scalar. The
//! ready-made ones cover node classification on a set of nodes ([`NodeTargets`]:
//! cross-entropy on logits, NLL on log-probabilities) and dense targets
//! ([`DenseTargets`]: MSE, BCE with logits).

use crate::ctx::Float;
use crate::error::{GnnError, GnnResult};
use ndarray::{ArrayD, Axis};
use shade_autodiff::tensor::{Rows, Tape, Var};
use shade_autodiff::{AdError, AdResult};

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

/// Checks node targets against an output `[N, C]` in the user's terms (a target node
/// without a row or a label, a label not below `C`), before the tape's loss, whose
/// index errors speak of positions in its arrays.
fn check_targets<T: Float>(
    t: &Tape<'_, T>,
    out: Var,
    y: &NodeTargets,
    op: &'static str,
) -> AdResult<()> {
    let &[n, c] = t.shape(out)? else {
        return Ok(()); // the tape's loss names the rank
    };
    let bad = |what: String| Err(AdError::InvalidArgument { op, what });
    for (k, &v) in y.nodes.iter().enumerate() {
        if v >= n {
            return bad(format!(
                "target node {v} (entry {k} of `nodes`) has no row in the output's {n} rows (one per node)"
            ));
        }
        match y.labels.get(v) {
            None => {
                return bad(format!(
                    "target node {v} has no label (`labels` has {} entries, one per node)",
                    y.labels.len()
                ));
            }
            Some(&l) if l >= c => {
                return bad(format!(
                    "label {l} of node {v} is not below the output's {c} classes (labels count from 0 to {})",
                    c.saturating_sub(1)
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Mean cross-entropy of the logits `[N, C]` over the target nodes.
///
/// Errors (`SHADE-E0114`) name a target node without a row or a label, or a label
/// not below `C`, in those terms.
pub fn cross_entropy<'a, T: Float>(
    t: &mut Tape<'a, T>,
    logits: Var,
    y: &'a NodeTargets,
) -> AdResult<Var> {
    check_targets(t, logits, y, "cross_entropy")?;
    t.cross_entropy(logits, &y.labels, Rows::Index(&y.nodes))
}

/// Mean negative log-likelihood of log-probabilities `[N, C]` over the target nodes
/// (errors as [`cross_entropy`]'s).
pub fn nll<'a, T: Float>(t: &mut Tape<'a, T>, logp: Var, y: &'a NodeTargets) -> AdResult<Var> {
    check_targets(t, logp, y, "nll")?;
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
///
/// Errors with [`GnnError::DataMismatch`] when `scores` is not 2-D or a node id has no
/// row in `scores` or no label.
pub fn accuracy<T: Float>(scores: &ArrayD<T>, labels: &[usize], nodes: &[usize]) -> GnnResult<f64> {
    if scores.ndim() != 2 {
        return Err(GnnError::DataMismatch {
            what: "accuracy: the scores' shape".into(),
            expected: "a 2-D [nodes, classes] array".into(),
            found: format!("{:?}", scores.shape()),
        });
    }
    let rows = scores.shape()[0].min(labels.len());
    if let Some(&v) = nodes.iter().find(|&&v| v >= rows) {
        return Err(GnnError::DataMismatch {
            what: "accuracy: a node id".into(),
            expected: format!(
                "below {rows} ({} score rows, {} labels)",
                scores.shape()[0],
                labels.len()
            ),
            found: v.to_string(),
        });
    }
    if nodes.is_empty() {
        return Ok(0.0);
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
            labels[v] == best
        })
        .count();
    Ok(hits as f64 / nodes.len() as f64)
}

/// Area under the ROC curve of `scores` for binary `labels` (the probability that a
/// random positive scores above a random negative; ties count half).
///
/// Errors with [`GnnError::DataMismatch`] when the lengths differ or `labels` lacks
/// one of the two classes (the area is then undefined, as scikit-learn says too).
pub fn roc_auc(scores: &[f64], labels: &[bool]) -> GnnResult<f64> {
    if scores.len() != labels.len() {
        return Err(GnnError::DataMismatch {
            what: "roc_auc: the number of labels".into(),
            expected: format!("{} (one per score)", scores.len()),
            found: labels.len().to_string(),
        });
    }
    let pos = labels.iter().filter(|&&l| l).count();
    if pos == 0 || pos == labels.len() {
        return Err(GnnError::DataMismatch {
            what: "roc_auc: the labels".into(),
            expected: "both classes (the area is undefined otherwise)".into(),
            found: format!("{pos} positive of {}", labels.len()),
        });
    }
    let mut idx: Vec<usize> = (0..scores.len()).collect();
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
    let (pos, neg) = (pos as f64, (labels.len() - pos) as f64);
    let sum: f64 = (0..idx.len()).filter(|&k| labels[k]).map(|k| rank[k]).sum();
    Ok((sum - pos * (pos + 1.0) / 2.0) / (pos * neg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_by_hand() {
        let s = ndarray::array![[0.1, 0.9], [0.8, 0.2], [0.5, 0.5]].into_dyn();
        assert_eq!(accuracy(&s, &[1, 1, 0], &[0, 1, 2]).unwrap(), 2.0 / 3.0);
        assert_eq!(accuracy(&s, &[1, 1, 0], &[]).unwrap(), 0.0);
        assert_eq!(
            roc_auc(&[0.1, 0.4, 0.35, 0.8], &[false, false, true, true]).unwrap(),
            0.75
        );
        assert_eq!(roc_auc(&[0.5, 0.5], &[false, true]).unwrap(), 0.5);
    }

    #[test]
    fn bad_metric_inputs_are_coded_errors() {
        let s = ndarray::array![[0.1, 0.9], [0.8, 0.2]].into_dyn();
        let code = |r: GnnResult<f64>| r.unwrap_err().code();
        assert_eq!(code(accuracy(&s, &[1, 1], &[0, 2])), "SHADE-E0405");
        assert_eq!(code(accuracy(&s, &[1], &[1])), "SHADE-E0405");
        assert_eq!(
            code(accuracy(
                &s.clone().into_shape_with_order(4).unwrap().into_dyn(),
                &[1],
                &[0]
            )),
            "SHADE-E0405"
        );
        assert_eq!(code(roc_auc(&[0.1, 0.2], &[true])), "SHADE-E0405");
        assert_eq!(code(roc_auc(&[0.1, 0.2], &[true, true])), "SHADE-E0405");
    }
}
