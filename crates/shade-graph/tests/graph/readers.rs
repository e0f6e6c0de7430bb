//! Readers on the shared citation datasets, round trips, and never-panic fuzzing of
//! the npz and edge-list readers over random, truncated and flipped bytes.

use std::path::PathBuf;

use proptest::prelude::*;
use shade_graph::ndarray::{self, IxDyn};
use shade_graph::{
    Graph, LargestConnectedComponents, NpyArray, NpzOptions, edge_list_string, npy_bytes,
    npz_arrays_bytes, npz_bytes, parse_edge_list, parse_npy, parse_npz, parse_npz_arrays,
    read_edge_list, read_npy, read_npz, read_npz_arrays, write_edge_list, write_npz,
    write_npz_arrays_compressed, write_npz_compressed,
};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data")
        .join(name)
}

fn cora_bytes() -> Vec<u8> {
    std::fs::read(data("cora.npz")).expect("shared/data/cora.npz is present")
}

fn deflated_cora() -> &'static Vec<u8> {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| {
        let ds = parse_npz(&cora_bytes(), "cora.npz", NpzOptions::default()).unwrap();
        npz_bytes(&ds, true).unwrap()
    })
}

/// The largest connected component of the symmetrised CiteSeer graph: 2110 nodes and
/// 3668 undirected edges, the sizes of Shchur et al.'s Table 1 ("Pitfalls of Graph
/// Neural Network Evaluation", whose protocol keeps the largest component).
#[test]
fn citeseer_largest_component_has_the_published_size() {
    let ds = read_npz(data("citeseer.npz"), NpzOptions::undirected()).unwrap();
    let c = ds.graph.connected_components(shade_graph::Connection::Weak);
    let lcc = LargestConnectedComponents::new(1)
        .apply_dataset(&ds)
        .unwrap();
    eprintln!(
        "citeseer: {} components, largest {} nodes, {} edges",
        c.count,
        lcc.graph.num_nodes(),
        lcc.graph.num_edges()
    );
    assert_eq!(
        (lcc.graph.num_nodes(), lcc.graph.num_edges()),
        (2110, 2 * 3668)
    );
    assert_eq!(lcc.labels.len(), 2110);
    assert_eq!(lcc.features().rows(), 2110);
    // One component: the transform leaves it as it is.
    let again = LargestConnectedComponents::new(1)
        .apply_dataset(&lcc)
        .unwrap();
    assert_eq!(again, lcc);
}

#[test]
fn cora_has_the_published_counts() {
    let cora = read_npz(data("cora.npz"), NpzOptions::undirected()).unwrap();
    let g = &cora.graph;
    assert_eq!(g.num_nodes(), 2708);
    assert_eq!(g.num_edges(), 10556);
    assert_eq!(cora.num_features(), 1433);
    assert_eq!(cora.features().nnz(), 49216);
    assert_eq!(cora.num_classes, 7);
    assert!(g.is_bidirected() && !g.has_self_loops() && !g.has_multi_edges());
    assert_eq!(g.weights(), None);
    // Class sizes, computed independently from the raw arrays with Python.
    let mut counts = [0usize; 7];
    cora.labels.iter().for_each(|&l| counts[l] += 1);
    assert_eq!(counts, [298, 418, 818, 426, 217, 180, 351]);
    // As stored: 5429 directed citations, no self-loops.
    let raw = read_npz(data("cora.npz"), NpzOptions::default()).unwrap();
    assert_eq!(raw.graph.num_edges(), 5429);
    // The usual split.
    let s = cora.split(20, 500, 1000, 0).unwrap();
    assert_eq!((s.train.len(), s.val.len(), s.test.len()), (140, 500, 1000));
}

#[test]
fn citeseer_has_the_counts_numpy_gives() {
    // Reference values computed with Python from the raw arrays: 4715 stored entries
    // (124 self-loops), 9196 symmetric entries with loops, 9072 without, 48 isolated
    // nodes once loops are gone.
    let raw = read_npz(data("citeseer.npz"), NpzOptions::default()).unwrap();
    assert_eq!(raw.graph.num_edges(), 4715);
    assert_eq!(
        raw.graph
            .src()
            .iter()
            .zip(raw.graph.dst())
            .filter(|(s, d)| s == d)
            .count(),
        124
    );
    let with_loops = read_npz(
        data("citeseer.npz"),
        NpzOptions {
            undirected: true,
            remove_self_loops: false,
        },
    )
    .unwrap();
    assert_eq!(with_loops.graph.num_edges(), 9196);
    let cs = read_npz(data("citeseer.npz"), NpzOptions::undirected()).unwrap();
    let g = &cs.graph;
    assert_eq!((g.num_nodes(), g.num_edges()), (3312, 9072));
    assert_eq!(
        (cs.num_features(), cs.features().nnz(), cs.num_classes),
        (3703, 105165, 6)
    );
    assert_eq!(g.in_degree().iter().filter(|&&d| d == 0).count(), 48);
    // Isolated nodes get zero rows in the GCN operator apart from their self-loop.
    let a = g.gcn_adjacency::<f64>();
    let v = g.in_degree().iter().position(|&d| d == 0).unwrap();
    assert_eq!(a.outer_view(v).unwrap().nnz(), 1);
    assert_eq!(a.get(v, v), Some(&1.0));
}

#[test]
fn npz_and_edge_list_round_trip_through_files() {
    let cora = read_npz(data("cora.npz"), NpzOptions::default()).unwrap();
    let dir = std::env::temp_dir().join(format!("shade-graph-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("cora-copy.npz");
    write_npz(&p, &cora).unwrap();
    let back = read_npz(&p, NpzOptions::default()).unwrap();
    // The file's rows are not sorted; the writer sorts them, so compare as matrices.
    assert_eq!(back.graph.adjacency::<f32>(), cora.graph.adjacency::<f32>());
    assert_eq!(
        (back.features(), &back.labels),
        (cora.features(), &cora.labels)
    );
    write_npz(&p, &back).unwrap();
    assert_eq!(read_npz(&p, NpzOptions::default()).unwrap(), back);
    let c = dir.join("cora-compressed.npz");
    write_npz_compressed(&c, &back).unwrap();
    assert!(std::fs::metadata(&c).unwrap().len() < std::fs::metadata(&p).unwrap().len() / 3);
    assert_eq!(read_npz(&c, NpzOptions::default()).unwrap(), back);
    let e = dir.join("cora.edges");
    let g = cora.graph.clone().with_weights(vec![0.25; 5429]).unwrap();
    let mut g = g.add_nodes(3).unwrap(); // isolated nodes survive through the header
    g.set_sparse_node_features(sprs::CsMat::zero((2711, 1)))
        .unwrap();
    write_edge_list(&e, &g).unwrap();
    let back = read_edge_list(&e, None).unwrap();
    assert_eq!(back.num_nodes(), 2711);
    assert_eq!(back.edge_index(), g.edge_index());
    assert_eq!(back.weights(), g.weights());
    std::fs::remove_dir_all(&dir).unwrap();
    let e = read_npz(dir.join("missing.npz"), NpzOptions::default()).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0330");
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The arrays `tests/fixtures/make_numpy_fixtures.py` gives numpy, recomputed: element
/// `n` of a `(2, 3, 4)` array holds `(n - 12) * s` (signed), `n * s` (unsigned),
/// `(n - 12) / 8` (floats), `n % 3 == 0` (bool).
fn expected(dtype: &str) -> NpyArray {
    let n = || (0..24i64).collect::<Vec<_>>();
    fn arr<T>(v: Vec<T>) -> NpyArray
    where
        NpyArray: From<ndarray::ArrayD<T>>,
    {
        NpyArray::from(ndarray::ArrayD::from_shape_vec(IxDyn(&[2, 3, 4]), v).unwrap())
    }
    let signed = |s: i64| n().into_iter().map(move |n| (n - 12) * s);
    let unsigned = |s: u64| (0..24u64).map(move |n| n * s);
    match dtype {
        "f4" => arr(n().iter().map(|&n| (n - 12) as f32 / 8.0).collect()),
        "f8" => arr(n().iter().map(|&n| (n - 12) as f64 / 8.0).collect()),
        "i1" => arr(signed(10).map(|v| v as i8).collect()),
        "i2" => arr(signed(1000).map(|v| v as i16).collect()),
        "i4" => arr(signed(100_000_000).map(|v| v as i32).collect()),
        "i8" => arr(signed(100_000_000_000_000_000).collect()),
        "u1" => arr(unsigned(10).map(|v| v as u8).collect()),
        "u2" => arr(unsigned(2000).map(|v| v as u16).collect()),
        "u4" => arr(unsigned(150_000_000).map(|v| v as u32).collect()),
        "u8" => arr(unsigned(700_000_000_000_000_000).collect()),
        _ => arr(n().iter().map(|&n| n % 3 == 0).collect()),
    }
}

/// Files written by numpy (`np.savez`, `np.savez_compressed`, `np.save`) read back with
/// their values, dtypes, shapes and memory order; shade's own bytes of the same arrays
/// read back equal (and, checked once with numpy by the same script, `np.load` reads
/// them: see the script's header).
#[test]
fn files_written_by_numpy_read_back() {
    let dtypes = [
        "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "b1",
    ];
    let stored = read_npz_arrays(fixture("numpy_stored.npz")).unwrap();
    let deflated = read_npz_arrays(fixture("numpy_deflated.npz")).unwrap();
    assert_eq!(stored, deflated);
    for dt in dtypes {
        let want = expected(dt);
        let c = stored.get(&format!("c_{dt}")).unwrap();
        let f = stored.get(&format!("f_{dt}")).unwrap();
        assert_eq!((c, f), (&want, &want), "{dt}");
        let f64s = f.clone();
        if let NpyArray::F64(a) = f64s {
            assert!(!a.is_standard_layout() && a.t().is_standard_layout());
        }
    }
    let scalar = stored.array::<f64, ndarray::Ix0>("scalar").unwrap();
    assert_eq!(scalar.into_scalar(), 2.5);
    assert_eq!(stored.get("empty").unwrap().shape(), &[0, 3]);
    let big = stored.array::<i32, ndarray::Ix1>("big_endian").unwrap();
    assert_eq!(big.to_vec(), [0, 1, 2, 3, 4]);
    assert_eq!(
        stored.skipped(),
        [("names".to_string(), "dtype \"<U2\"".to_string())]
    );
    assert_eq!(stored.len(), 2 * dtypes.len() + 3);
    let m = read_npy(fixture("numpy_matrix.npy")).unwrap();
    let m = m.into_array::<f32, ndarray::Ix2>().unwrap();
    assert_eq!(m, ndarray::array![[0.0, 0.25, 0.5], [0.75, 1.0, 1.25]]);
    assert!(m.t().is_standard_layout());

    // shade writes what it read; numpy's stored members and shade's agree byte for byte
    // (same header layout and padding), and the round trip is exact.
    let ours = npz_arrays_bytes(&stored, false).unwrap();
    assert_eq!(
        parse_npz_arrays(&ours, "ours.npz").unwrap().len(),
        stored.len()
    );
    let raw = std::fs::read(fixture("numpy_matrix.npy")).unwrap();
    assert_eq!(npy_bytes(&NpyArray::from(m)), raw);
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("shade_written.npz");
    write_npz_arrays_compressed(&out, &stored).unwrap();
    assert_eq!(read_npz_arrays(&out).unwrap().iter().count(), stored.len());
}

#[test]
fn npy_and_npz_array_errors_are_coded() {
    let e = read_npy(fixture("missing.npy")).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0330");
    let raw = std::fs::read(fixture("numpy_matrix.npy")).unwrap();
    let e = parse_npy(&raw[..raw.len() - 4], "m.npy").unwrap_err();
    assert_eq!(e.code(), "SHADE-E0331");
    assert_eq!(
        e.to_string(),
        "`m.npy`: shape [2, 3] of <f4 needs 24 bytes, but 20 are present"
    );
    let stored = read_npz_arrays(fixture("numpy_stored.npz")).unwrap();
    let e = stored.array::<f32, ndarray::Ix2>("c_f4").unwrap_err();
    assert_eq!(e.code(), "SHADE-E0335");
    assert!(
        e.to_string().ends_with(
            "array `c_f4` is a float32 array of shape [2, 3, 4], but a rank-2 array was asked for"
        ),
        "{e}"
    );
    let e = stored.get("names").unwrap_err();
    assert_eq!(e.code(), "SHADE-E0332");
    // The citation-graph reader refuses an archive of other arrays with the missing name.
    let e = read_npz(fixture("numpy_stored.npz"), NpzOptions::default()).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0333");
    assert!(e.to_string().ends_with("has no array `adj_shape`"), "{e}");
}

#[test]
fn edge_list_errors_are_coded() {
    let check = |text: &str, code: &str, part: &str| {
        let e = parse_edge_list(text.as_bytes(), "g.txt", None).unwrap_err();
        assert_eq!(e.code(), code, "{e}");
        assert!(e.to_string().contains(part), "{e} lacks {part}");
    };
    check("0 1\n1 x\n", "SHADE-E0334", "line 2");
    check("0 1 nan\n", "SHADE-E0334", "weight NaN is not finite");
    check("0 1 1.0\n1 2\n", "SHADE-E0334", "some edges");
    check("0 99999999999\n", "SHADE-E0305", "99999999999");
    check("1 2 3 4\n", "SHADE-E0334", "2 or 3 fields");
    let e = parse_edge_list(b"0 5\n", "g.txt", Some(3)).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0334");
    assert_eq!(
        e.to_string(),
        "`g.txt` line 1: dst node 5 is not below the node count 3 (the `num_nodes` given)"
    );
    let g = parse_edge_list(b"% comment\n0,1\n\n2\t0 # trailing\n", "g.txt", None).unwrap();
    assert_eq!(g, Graph::try_new(3, vec![0, 2], vec![1, 0]).unwrap());
    assert_eq!(edge_list_string(&g), "# nodes 3\n0 1\n2 0\n");
}

proptest! {
    // `cargo xtask fuzz --cases N` raises this through PROPTEST_CASES.
    #![proptest_config(shade_test_support::strategies::cases(64))]

    #[test]
    fn npz_reader_never_panics_on_random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        let e = parse_npz(&bytes, "r.npz", NpzOptions::default()).unwrap_err();
        prop_assert!(e.code().starts_with("SHADE-E03"));
        // The same bytes behind a valid end-of-directory record.
        let mut b = bytes.clone();
        b.extend_from_slice(&[0x50, 0x4B, 0x05, 0x06, 0, 0, 0, 0, 1, 0, 1, 0, 46, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        prop_assert!(parse_npz(&b, "r.npz", NpzOptions::default()).is_err());
    }

    #[test]
    fn npz_reader_never_panics_on_truncated_or_flipped_cora(cut in any::<prop::sample::Index>(), flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 0..4)) {
        let mut b = cora_bytes();
        let keep = cut.index(b.len());
        let flipped = !flips.is_empty();
        for (at, x) in flips {
            let i = at.index(b.len());
            b[i] ^= x;
        }
        if !flipped {
            b.truncate(keep);
        }
        match parse_npz(&b, "cora.npz", NpzOptions::default()) {
            Err(e) => prop_assert!(e.code().starts_with("SHADE-E03")),
            // A flip in a name or padding byte may leave the data intact.
            Ok(ds) => prop_assert_eq!(ds.graph.num_nodes(), 2708),
        }
    }

    #[test]
    fn npz_reader_never_panics_on_corrupt_deflated_cora(flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4), cut in any::<prop::sample::Index>(), truncate in any::<bool>()) {
        let mut b = deflated_cora().clone();
        if truncate {
            b.truncate(cut.index(b.len()));
        } else {
            for (at, x) in flips {
                let i = at.index(b.len());
                b[i] ^= x;
            }
        }
        if let Err(e) = parse_npz(&b, "cora.npz", NpzOptions::default()) {
            prop_assert!(e.code().starts_with("SHADE-E03"));
        }
    }

    #[test]
    fn edge_list_reader_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..300), text in "[0-9 ,#%.\\-\\n\\tenaif]{0,200}") {
        for b in [&bytes[..], text.as_bytes()] {
            if let Err(e) = parse_edge_list(b, "f.txt", None) {
                prop_assert!(e.code().starts_with("SHADE-E03"));
            }
        }
    }
}

#[test]
fn written_cora_bytes_read_back_identically() {
    let cora = parse_npz(&cora_bytes(), "cora.npz", NpzOptions::undirected()).unwrap();
    let back = parse_npz(
        &npz_bytes(&cora, false).unwrap(),
        "copy.npz",
        NpzOptions::default(),
    )
    .unwrap();
    assert_eq!(back.graph.num_edges(), 10556);
    assert_eq!(
        back.graph.to_undirected(shade_graph::Reduce::Max),
        cora.graph
    );
    assert_eq!(back.labels, cora.labels);
}
