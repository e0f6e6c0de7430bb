//! Garbage node ids and counts are refused before anything is allocated for them,
//! and a sampler fan-out of 0 is refused instead of an empty subgraph.

use shade_graph::{Graph, NeighborSampler, parse_edge_list};

/// `-1` and `-2` written as `u32`: once a 4-billion-node graph whose first use
/// aborted the process on allocation.
#[test]
fn garbage_ids_written_unsigned_are_refused_with_a_hint() {
    let minus_one = -1i32 as u32;
    let e = Graph::try_new(3, vec![0, minus_one], vec![1, 2]).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0302");
    assert_eq!(
        e.to_string(),
        "`src` holds node index 4294967295 at position 1, but the graph has 3 nodes \
         (as a 32-bit signed number it is -1: a negative id written unsigned?)"
    );
    // The node count taken from the ids (max + 1), as a user's loader computes it.
    let minus_two = -2i32 as u32;
    let n = minus_two as usize + 1;
    let e = Graph::try_new(n, vec![0, minus_two], vec![1, 0]).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0307");
    assert!(e.to_string().contains("cannot be allocated"), "{e}");
    // The same through the edge-list reader, which infers the count from the ids.
    let e = parse_edge_list(b"0 1\n4294967294 0\n", "edges.txt", None).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0307");
    let e = parse_edge_list(b"0 1\n-1 0\n", "edges.txt", None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`edges.txt` line 2: \"-1\" is a negative node index (node ids count from 0)"
    );
    // Other constructors that take a count.
    assert_eq!(Graph::empty(usize::MAX).unwrap_err().code(), "SHADE-E0305");
    let g = Graph::from_edges(2, &[(0, 1)]).unwrap();
    assert_eq!(
        g.add_nodes(u32::MAX as usize - 2).unwrap_err().code(),
        "SHADE-E0307"
    );
}

#[test]
fn a_fanout_of_zero_is_refused() {
    let g = Graph::from_edges(4, &[(0, 1), (1, 2), (2, 3), (3, 0)]).unwrap();
    let e = NeighborSampler::new(vec![5, 0])
        .sample(&g, &[0], 0)
        .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0320");
    assert_eq!(
        e.to_string(),
        "`num_neighbors` = 0 at hop 1 is invalid: a positive fan-out, or -1 for all neighbours (a fan-out of 0 samples no edge)"
    );
    // All neighbours: usize::MAX.
    let s = NeighborSampler::new(vec![usize::MAX])
        .sample(&g, &[0], 0)
        .unwrap();
    assert_eq!(s.graph.num_edges(), 1);
}
