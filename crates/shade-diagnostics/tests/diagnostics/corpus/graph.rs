//! Broken programs against the graph crate (codes `SHADE-E03xx`).

use super::harness::{Program, Seen};
use ndarray::Array2;
use shade_graph::{
    Dataset, Graph, NpzOptions, erdos_renyi, npz_bytes, parse_edge_list, parse_npz, rand_graph,
    read_npz, split_per_class,
};

pub(crate) const PROGRAMS: &[(&str, Program)] = &[
    ("graph_src_dst_lengths", src_dst_lengths),
    ("graph_edge_to_missing_node", edge_to_missing_node),
    ("graph_remove_missing_edge", remove_missing_edge),
    ("graph_batch_index", batch_index),
    ("graph_too_many_nodes", too_many_nodes),
    ("graph_nan_edge_weight", nan_edge_weight),
    ("graph_node_data_rows", node_data_rows),
    ("graph_batch_feature_widths", batch_feature_widths),
    ("graph_edge_across_batch", edge_across_batch),
    ("graph_probability_above_one", probability_above_one),
    ("graph_split_more_than_class", split_more_than_class),
    ("graph_npz_missing_file", npz_missing_file),
    ("graph_npz_truncated", npz_truncated),
    ("graph_npz_bzip2", npz_bzip2),
    ("graph_npz_without_labels", npz_without_labels),
    ("graph_edge_list_word", edge_list_word),
];

fn src_dst_lengths() -> Result<(), Seen> {
    Graph::try_new(3, vec![0, 1, 2], vec![1, 2])?;
    Ok(())
}

fn edge_to_missing_node() -> Result<(), Seen> {
    // Node ids from a 1-based file: the last node is 3 in a 3-node graph.
    Graph::from_edges(3, &[(0, 1), (1, 2), (2, 3)])?;
    Ok(())
}

fn remove_missing_edge() -> Result<(), Seen> {
    let g = Graph::from_edges(3, &[(0, 1), (1, 2)])?;
    g.remove_edges(&[0, 7])?;
    Ok(())
}

fn batch_index() -> Result<(), Seen> {
    let a = Graph::from_edges(2, &[(0, 1)])?;
    let b = Graph::from_edges(3, &[(1, 2)])?;
    let batch = Graph::batch(&[a, b])?;
    batch.get_graph(2)?;
    Ok(())
}

fn too_many_nodes() -> Result<(), Seen> {
    rand_graph(5_000_000_000, 10, 0)?;
    Ok(())
}

fn nan_edge_weight() -> Result<(), Seen> {
    Graph::from_edges(3, &[(0, 1), (1, 2)])?.with_weights(vec![0.5, f64::NAN])?;
    Ok(())
}

fn node_data_rows() -> Result<(), Seen> {
    let mut g = Graph::from_edges(4, &[(0, 1), (2, 3)])?;
    g.set_node_data("x", Array2::<f32>::zeros((5, 16)).into_dyn())?;
    Ok(())
}

fn batch_feature_widths() -> Result<(), Seen> {
    let a = Graph::from_edges(2, &[(0, 1)])?
        .with_node_data("x", Array2::<f32>::zeros((2, 4)).into_dyn())?;
    let b = Graph::from_edges(2, &[(1, 0)])?
        .with_node_data("x", Array2::<f32>::zeros((2, 5)).into_dyn())?;
    Graph::batch(&[a, b])?;
    Ok(())
}

fn edge_across_batch() -> Result<(), Seen> {
    Graph::from_edges(4, &[(0, 1), (1, 2)])?.with_graph_indicator(&[0, 0, 1, 1], 2)?;
    Ok(())
}

fn probability_above_one() -> Result<(), Seen> {
    erdos_renyi(100, 1.5, false, 0)?;
    Ok(())
}

fn split_more_than_class() -> Result<(), Seen> {
    let labels: Vec<usize> = (0..20).map(|i| i % 2).collect();
    split_per_class(&labels, 2, 20, 0, 0, 0)?;
    Ok(())
}

fn npz_missing_file() -> Result<(), Seen> {
    read_npz("data/no-such-dataset.npz", NpzOptions::undirected())?;
    Ok(())
}

/// A small valid archive, as `np.savez` would write it.
fn tiny_npz() -> Result<Vec<u8>, Seen> {
    let mut graph = Graph::from_edges(3, &[(0, 1), (1, 2)])?;
    graph.set_sparse_node_features(sprs::CsMat::<f32>::eye(3))?;
    let ds = Dataset {
        graph,
        labels: vec![0, 1, 0],
        num_classes: 2,
    };
    Ok(npz_bytes(&ds, false)?)
}

fn npz_truncated() -> Result<(), Seen> {
    let bytes = tiny_npz()?;
    parse_npz(
        &bytes[..bytes.len() / 2],
        "cora.npz",
        NpzOptions::undirected(),
    )?;
    Ok(())
}

fn npz_bzip2() -> Result<(), Seen> {
    // The same archive as if written with bzip2 compression (method 12).
    let mut bytes = tiny_npz()?;
    let mut i = 0;
    while i + 12 <= bytes.len() {
        if bytes[i..i + 4] == *b"PK\x01\x02" {
            bytes[i + 10] = 12;
        }
        i += 1;
    }
    parse_npz(&bytes, "cora.npz", NpzOptions::undirected())?;
    Ok(())
}

fn npz_without_labels() -> Result<(), Seen> {
    // An archive whose label array was saved under another name.
    let mut bytes = tiny_npz()?;
    let from = b"labels.npy";
    let mut i = 0;
    while i + from.len() <= bytes.len() {
        if &bytes[i..i + from.len()] == from {
            bytes[i..i + from.len()].copy_from_slice(b"targets.np");
        }
        i += 1;
    }
    parse_npz(&bytes, "cora.npz", NpzOptions::undirected())?;
    Ok(())
}

fn edge_list_word() -> Result<(), Seen> {
    parse_edge_list(b"# citations\n0 1\n1 two\n", "edges.txt", None)?;
    Ok(())
}
