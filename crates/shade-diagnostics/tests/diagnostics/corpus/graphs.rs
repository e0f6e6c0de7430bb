//! Broken graph programs written from what users do when they load their own data:
//! ids from a signed or 1-based source, node counts taken from garbage ids, edge
//! arrays of different lengths, batches, subgraphs, samplers and splits asked for
//! what the graph cannot give, and edge-list files with the usual slips.

use super::harness::{Program, Seen};
use ndarray::{Array2, array};
use shade_graph::{
    Graph, NeighborSampler, knn_graph, negative_edges, parse_edge_list, radius_graph,
    random_edge_split, split_per_class, stochastic_block_model,
};

pub(crate) const PROGRAMS: &[(&str, Program)] = &[
    (
        "graphs_minus_one_written_unsigned",
        minus_one_written_unsigned,
    ),
    (
        "graphs_node_count_from_garbage_id",
        node_count_from_garbage_id,
    ),
    ("graphs_node_count_four_billion", node_count_four_billion),
    (
        "graphs_one_based_ids_from_pandas",
        one_based_ids_from_pandas,
    ),
    ("graphs_dst_array_short", dst_array_short),
    ("graphs_weights_of_another_graph", weights_of_another_graph),
    ("graphs_infinite_weight", infinite_weight),
    ("graphs_self_loop_fill_nan", self_loop_fill_nan),
    (
        "graphs_add_edges_to_missing_node",
        add_edges_to_missing_node,
    ),
    ("graphs_add_edges_weight_count", add_edges_weight_count),
    (
        "graphs_subgraph_of_missing_nodes",
        subgraph_of_missing_nodes,
    ),
    ("graphs_k_hop_seed_out_of_range", k_hop_seed_out_of_range),
    (
        "graphs_remove_nodes_out_of_range",
        remove_nodes_out_of_range,
    ),
    ("graphs_edge_subgraph_id", edge_subgraph_id),
    ("graphs_indicator_unsorted", indicator_unsorted),
    ("graphs_indicator_beyond_graphs", indicator_beyond_graphs),
    ("graphs_indicator_length", indicator_length),
    ("graphs_sampler_fanout_zero", sampler_fanout_zero),
    (
        "graphs_sampler_seed_beyond_graph",
        sampler_seed_beyond_graph,
    ),
    (
        "graphs_neighbors_of_missing_node",
        neighbors_of_missing_node,
    ),
    ("graphs_negative_edges_too_many", negative_edges_too_many),
    ("graphs_edge_split_fractions", edge_split_fractions),
    (
        "graphs_edge_split_negative_fraction",
        edge_split_negative_fraction,
    ),
    (
        "graphs_split_labels_beyond_classes",
        split_labels_beyond_classes,
    ),
    ("graphs_sbm_probability_matrix", sbm_probability_matrix),
    ("graphs_knn_nan_point", knn_nan_point),
    ("graphs_radius_negative", radius_negative),
    ("graphs_edge_data_rows", edge_data_rows),
    ("graphs_sparse_features_rows", sparse_features_rows),
    ("graphs_edge_list_negative_id", edge_list_negative_id),
    ("graphs_edge_list_garbage_id", edge_list_garbage_id),
    ("graphs_edge_list_mixed_weights", edge_list_mixed_weights),
    ("graphs_edge_list_four_columns", edge_list_four_columns),
    ("graphs_edge_list_nan_weight", edge_list_nan_weight),
    ("graphs_edge_list_header_count", edge_list_header_count),
    (
        "graphs_edge_list_header_too_small",
        edge_list_header_too_small,
    ),
    ("graphs_edge_list_not_utf8", edge_list_not_utf8),
    ("graphs_edge_list_missing_file", edge_list_missing_file),
];

/// Ids read as `i32` with `-1` for "no neighbour", cast to `u32`.
fn minus_one_written_unsigned() -> Result<(), Seen> {
    let raw: [i32; 4] = [0, 1, 2, -1];
    let src: Vec<u32> = raw.iter().map(|&v| v as u32).collect();
    Graph::try_new(3, src, vec![1, 2, 0, 0])?;
    Ok(())
}

/// The node count taken as the largest id plus one, with a garbage `-2` among them.
fn node_count_from_garbage_id() -> Result<(), Seen> {
    let raw: [i32; 3] = [0, 1, -2];
    let ids: Vec<u32> = raw.iter().map(|&v| v as u32).collect();
    let n = ids.iter().copied().max().unwrap_or(0) as usize + 1;
    Graph::try_new(n, ids.clone(), vec![1, 0, 1])?;
    Ok(())
}

fn node_count_four_billion() -> Result<(), Seen> {
    Graph::empty(1 << 32)?;
    Ok(())
}

/// Ids from a 1-based table: node 4 of a 4-node graph.
fn one_based_ids_from_pandas() -> Result<(), Seen> {
    Graph::try_new(4, vec![1, 2, 3], vec![2, 3, 4])?;
    Ok(())
}

fn dst_array_short() -> Result<(), Seen> {
    Graph::try_new(4, vec![0, 1, 2, 3], vec![1, 2, 3])?;
    Ok(())
}

fn weights_of_another_graph() -> Result<(), Seen> {
    Graph::from_edges(3, &[(0, 1), (1, 2)])?.with_weights(vec![1.0, 0.5, 0.25])?;
    Ok(())
}

fn infinite_weight() -> Result<(), Seen> {
    // A distance turned into a weight as 1 / d, with d = 0 for a duplicate point.
    let d = [0.5, 0.0];
    let w = d.iter().map(|&d| 1.0 / d).collect();
    Graph::from_edges(3, &[(0, 1), (1, 2)])?.with_weights(w)?;
    Ok(())
}

fn self_loop_fill_nan() -> Result<(), Seen> {
    Graph::from_edges(3, &[(0, 1), (1, 2)])?.add_self_loops(f64::NAN)?;
    Ok(())
}

fn add_edges_to_missing_node() -> Result<(), Seen> {
    Graph::from_edges(3, &[(0, 1)])?.add_edges(&[1, 2], &[2, 3], None)?;
    Ok(())
}

fn add_edges_weight_count() -> Result<(), Seen> {
    Graph::from_edges(3, &[(0, 1)])?.add_edges(&[1, 2], &[2, 0], Some(&[1.0]))?;
    Ok(())
}

fn subgraph_of_missing_nodes() -> Result<(), Seen> {
    Graph::from_edges(4, &[(0, 1), (1, 2), (2, 3)])?.induced_subgraph(&[0, 2, 4])?;
    Ok(())
}

fn k_hop_seed_out_of_range() -> Result<(), Seen> {
    Graph::from_edges(4, &[(0, 1), (1, 2), (2, 3)])?.k_hop_subgraph(&[7], 2)?;
    Ok(())
}

fn remove_nodes_out_of_range() -> Result<(), Seen> {
    Graph::from_edges(4, &[(0, 1), (1, 2), (2, 3)])?.remove_nodes(&[3, 4])?;
    Ok(())
}

fn edge_subgraph_id() -> Result<(), Seen> {
    Graph::from_edges(4, &[(0, 1), (1, 2), (2, 3)])?.edge_subgraph(&[0, 3])?;
    Ok(())
}

/// Graphs of a batch whose nodes are interleaved.
fn indicator_unsorted() -> Result<(), Seen> {
    Graph::from_edges(4, &[(0, 2), (1, 3)])?.with_graph_indicator(&[0, 1, 0, 1], 2)?;
    Ok(())
}

/// Graph ids counted from 1.
fn indicator_beyond_graphs() -> Result<(), Seen> {
    Graph::from_edges(4, &[(0, 1), (2, 3)])?.with_graph_indicator(&[1, 1, 2, 2], 2)?;
    Ok(())
}

fn indicator_length() -> Result<(), Seen> {
    Graph::from_edges(4, &[(0, 1), (2, 3)])?.with_graph_indicator(&[0, 0, 1], 2)?;
    Ok(())
}

/// Fan-outs for three hops, the last one meant as "none" (it drew nothing at all).
fn sampler_fanout_zero() -> Result<(), Seen> {
    let g = Graph::from_edges(4, &[(0, 1), (1, 2), (2, 3), (3, 0)])?;
    NeighborSampler::new(vec![10, 5, 0]).sample(&g, &[0, 1], 0)?;
    Ok(())
}

fn sampler_seed_beyond_graph() -> Result<(), Seen> {
    let g = Graph::from_edges(4, &[(0, 1), (1, 2), (2, 3), (3, 0)])?;
    NeighborSampler::new(vec![2]).sample(&g, &[0, 4], 0)?;
    Ok(())
}

fn neighbors_of_missing_node() -> Result<(), Seen> {
    let g = Graph::from_edges(3, &[(0, 1), (1, 2)])?;
    g.in_neighbors(3)?;
    Ok(())
}

/// More non-edges than a small dense graph has.
fn negative_edges_too_many() -> Result<(), Seen> {
    let g = Graph::from_edges(3, &[(0, 1), (1, 0), (1, 2), (2, 1)])?;
    negative_edges(&g, 10, 0)?;
    Ok(())
}

fn edge_split_fractions() -> Result<(), Seen> {
    let g = Graph::from_edges(4, &[(0, 1), (1, 2), (2, 3), (3, 0)])?;
    random_edge_split(&g, 0.6, 0.6, false, 0)?;
    Ok(())
}

fn edge_split_negative_fraction() -> Result<(), Seen> {
    let g = Graph::from_edges(4, &[(0, 1), (1, 2), (2, 3), (3, 0)])?;
    random_edge_split(&g, -0.1, 0.2, false, 0)?;
    Ok(())
}

fn split_labels_beyond_classes() -> Result<(), Seen> {
    let labels = [0, 1, 2, 3, 1, 2];
    split_per_class(&labels, 3, 1, 1, 1, 0)?;
    Ok(())
}

fn sbm_probability_matrix() -> Result<(), Seen> {
    stochastic_block_model(&[10, 10, 10], &[vec![0.5, 0.1], vec![0.1, 0.5]], 0)?;
    Ok(())
}

fn knn_nan_point() -> Result<(), Seen> {
    let points = array![[0.0, 0.0], [1.0, f64::NAN], [2.0, 1.0]];
    knn_graph(points.view(), 1, false)?;
    Ok(())
}

fn radius_negative() -> Result<(), Seen> {
    let points = Array2::<f64>::zeros((3, 2));
    radius_graph(points.view(), -1.0, false, None)?;
    Ok(())
}

fn edge_data_rows() -> Result<(), Seen> {
    let mut g = Graph::from_edges(3, &[(0, 1), (1, 2)])?;
    g.set_edge_data("attr", Array2::<f32>::zeros((3, 4)).into_dyn())?;
    Ok(())
}

fn sparse_features_rows() -> Result<(), Seen> {
    let mut g = Graph::from_edges(3, &[(0, 1), (1, 2)])?;
    g.set_sparse_node_features(sprs::CsMat::<f32>::eye(4))?;
    Ok(())
}

fn edge_list_negative_id() -> Result<(), Seen> {
    parse_edge_list(b"0 1\n1 2\n2 -1\n", "edges.txt", None)?;
    Ok(())
}

/// An id printed by a C program as `(unsigned)-2`: the node count would be 4 billion.
fn edge_list_garbage_id() -> Result<(), Seen> {
    parse_edge_list(b"0 1\n1 4294967294\n", "edges.txt", None)?;
    Ok(())
}

fn edge_list_mixed_weights() -> Result<(), Seen> {
    parse_edge_list(b"0 1 0.5\n1 2\n", "weighted.tsv", None)?;
    Ok(())
}

/// A CSV export with a timestamp column.
fn edge_list_four_columns() -> Result<(), Seen> {
    parse_edge_list(b"0,1,1.0,2024-01-01\n", "export.csv", None)?;
    Ok(())
}

fn edge_list_nan_weight() -> Result<(), Seen> {
    parse_edge_list(b"0 1 0.5\n1 2 nan\n", "weighted.tsv", None)?;
    Ok(())
}

fn edge_list_header_count() -> Result<(), Seen> {
    parse_edge_list(b"# nodes many\n0 1\n", "edges.txt", None)?;
    Ok(())
}

fn edge_list_header_too_small() -> Result<(), Seen> {
    parse_edge_list(b"# nodes 2\n0 1\n1 2\n", "edges.txt", None)?;
    Ok(())
}

/// A Latin-1 file with a comment in it.
fn edge_list_not_utf8() -> Result<(), Seen> {
    parse_edge_list(b"# r\xe9seau\n0 1\n", "edges.txt", None)?;
    Ok(())
}

fn edge_list_missing_file() -> Result<(), Seen> {
    shade_graph::read_edge_list("data/no-such-edges.txt", None)?;
    Ok(())
}
