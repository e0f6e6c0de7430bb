//! Seeded train/validation/test node splits.

use rand::{SeedableRng, rngs::StdRng, seq::SliceRandom};

use crate::error::{GraphError, GraphResult};

/// Node ids of a train/validation/test split (each ascending, pairwise disjoint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSplit {
    /// Training nodes.
    pub train: Vec<u32>,
    /// Validation nodes.
    pub val: Vec<u32>,
    /// Test nodes.
    pub test: Vec<u32>,
}

impl NodeSplit {
    /// Boolean masks `(train, val, test)` over `num_nodes` nodes.
    pub fn masks(&self, num_nodes: usize) -> (Vec<bool>, Vec<bool>, Vec<bool>) {
        let mask = |ids: &[u32]| {
            let mut m = vec![false; num_nodes];
            ids.iter()
                .filter(|&&v| (v as usize) < num_nodes)
                .for_each(|&v| m[v as usize] = true);
            m
        };
        (mask(&self.train), mask(&self.val), mask(&self.test))
    }
}

/// The nodes of each class, checking the labels (`SHADE-E0320` for one `>= num_classes`).
fn nodes_by_class(labels: &[usize], num_classes: usize) -> GraphResult<Vec<Vec<u32>>> {
    if let Some(p) = labels.iter().position(|&l| l >= num_classes) {
        return Err(GraphError::param(
            "labels",
            format!("{} at node {p}", labels[p]),
            &format!("class ids below num_classes = {num_classes}"),
        ));
    }
    let mut by_class: Vec<Vec<u32>> = vec![Vec::new(); num_classes];
    for (v, &l) in labels.iter().enumerate() {
        by_class[l].push(v as u32);
    }
    Ok(by_class)
}

/// PyG Planetoid's "random" protocol: `per_class` random training nodes of every
/// class, then `num_val` validation and `num_test` test nodes drawn at random from the
/// rest, all seeded. `SHADE-E0321` if a class has fewer than `per_class` nodes or the
/// rest is smaller than `num_val + num_test`; `SHADE-E0320` for a label
/// `>= num_classes`.
pub fn split_per_class(
    labels: &[usize],
    num_classes: usize,
    per_class: usize,
    num_val: usize,
    num_test: usize,
    seed: u64,
) -> GraphResult<NodeSplit> {
    let mut by_class = nodes_by_class(labels, num_classes)?;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut in_train = vec![false; labels.len()];
    let mut train = Vec::with_capacity(per_class * num_classes);
    for (c, nodes) in by_class.iter_mut().enumerate() {
        if nodes.len() < per_class {
            return Err(GraphError::NotEnough {
                what: format!("training nodes of class {c}"),
                requested: per_class,
                available: nodes.len(),
            });
        }
        nodes.shuffle(&mut rng);
        for &v in &nodes[..per_class] {
            in_train[v as usize] = true;
            train.push(v);
        }
    }
    let mut rest: Vec<u32> = (0..labels.len() as u32)
        .filter(|&v| !in_train[v as usize])
        .collect();
    if rest.len() < num_val + num_test {
        return Err(GraphError::NotEnough {
            what: "validation + test nodes".into(),
            requested: num_val + num_test,
            available: rest.len(),
        });
    }
    rest.shuffle(&mut rng);
    let mut val = rest[..num_val].to_vec();
    let mut test = rest[num_val..num_val + num_test].to_vec();
    train.sort_unstable();
    val.sort_unstable();
    test.sort_unstable();
    Ok(NodeSplit { train, val, test })
}

/// Shchur et al.'s protocol ("Pitfalls of Graph Neural Network Evaluation", 2018, as
/// their `get_train_val_test_split`): `train_per_class` random training nodes and
/// `val_per_class` random validation nodes of every class, every other node for
/// testing, seeded. `SHADE-E0321` if a class has fewer than `train_per_class +
/// val_per_class` nodes; `SHADE-E0320` for a label `>= num_classes`.
pub fn split_per_class_rest(
    labels: &[usize],
    num_classes: usize,
    train_per_class: usize,
    val_per_class: usize,
    seed: u64,
) -> GraphResult<NodeSplit> {
    let mut by_class = nodes_by_class(labels, num_classes)?;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut role = vec![2u8; labels.len()];
    for (c, nodes) in by_class.iter_mut().enumerate() {
        let want = train_per_class + val_per_class;
        if nodes.len() < want {
            return Err(GraphError::NotEnough {
                what: format!("training + validation nodes of class {c}"),
                requested: want,
                available: nodes.len(),
            });
        }
        nodes.shuffle(&mut rng);
        nodes[..train_per_class]
            .iter()
            .for_each(|&v| role[v as usize] = 0);
        nodes[train_per_class..want]
            .iter()
            .for_each(|&v| role[v as usize] = 1);
    }
    let of = |r: u8| -> Vec<u32> {
        (0..labels.len() as u32)
            .filter(|&v| role[v as usize] == r)
            .collect()
    };
    Ok(NodeSplit {
        train: of(0),
        val: of(1),
        test: of(2),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_class_counts_disjoint_and_seeded() {
        let labels: Vec<usize> = (0..100).map(|i| i % 3).collect();
        let s = split_per_class(&labels, 3, 5, 20, 30, 7).unwrap();
        assert_eq!((s.train.len(), s.val.len(), s.test.len()), (15, 20, 30));
        for c in 0..3 {
            assert_eq!(
                s.train.iter().filter(|&&v| labels[v as usize] == c).count(),
                5
            );
        }
        let (a, b, c) = s.masks(100);
        assert!((0..100).all(|i| u8::from(a[i]) + u8::from(b[i]) + u8::from(c[i]) <= 1));
        assert_eq!(s, split_per_class(&labels, 3, 5, 20, 30, 7).unwrap());
        assert_ne!(s, split_per_class(&labels, 3, 5, 20, 30, 8).unwrap());
        let e = split_per_class(&labels, 3, 40, 0, 0, 0).unwrap_err();
        assert_eq!(e.code(), "SHADE-E0321");
        assert_eq!(
            split_per_class(&labels, 3, 5, 80, 10, 0)
                .unwrap_err()
                .code(),
            "SHADE-E0321"
        );
        assert_eq!(
            split_per_class(&labels, 2, 5, 8, 10, 0).unwrap_err().code(),
            "SHADE-E0320"
        );
    }

    #[test]
    fn the_rest_protocol_takes_per_class_validation_and_tests_the_rest() {
        let labels: Vec<usize> = (0..100).map(|i| i % 4).collect();
        let s = split_per_class_rest(&labels, 4, 5, 3, 1).unwrap();
        assert_eq!((s.train.len(), s.val.len(), s.test.len()), (20, 12, 68));
        for c in 0..4 {
            let count = |ids: &[u32]| ids.iter().filter(|&&v| labels[v as usize] == c).count();
            assert_eq!((count(&s.train), count(&s.val)), (5, 3));
        }
        let (a, b, c) = s.masks(100);
        assert!((0..100).all(|i| u8::from(a[i]) + u8::from(b[i]) + u8::from(c[i]) == 1));
        assert_eq!(s, split_per_class_rest(&labels, 4, 5, 3, 1).unwrap());
        assert_eq!(
            split_per_class_rest(&labels, 4, 20, 10, 0)
                .unwrap_err()
                .code(),
            "SHADE-E0321"
        );
    }
}
