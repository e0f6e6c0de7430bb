//! Building a 1M-node, 10M-edge random graph with its CSR by destination and its GCN
//! normalised adjacency (`D^-1/2 (A + I) D^-1/2`, f32), against the floor of one pass
//! over the edge arrays (an in-degree count). Peak memory is measured separately on
//! one untimed build (VmHWM after resetting it) and printed.
//!
//! Work: the inputs are 10M × (2 × u32) = 80 MB; the build sorts them twice by counting
//! (CSR) and writes a 10M + 1M entry CSR matrix (`u32` indices + f32 values ≈ 88 MB).

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use shade_graph::{Graph, rand_graph};
use std::hint::black_box;

const NODES: usize = 1_000_000;
const EDGES: usize = 10_000_000;

fn status_kib(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn build(src: Vec<u32>, dst: Vec<u32>) -> Graph {
    let g = Graph::try_new(NODES, src, dst).expect("valid edges");
    black_box(g.csr_by_dst());
    black_box(g.gcn_adjacency::<f32>());
    g
}

fn report_peak_memory(src: &[u32], dst: &[u32]) {
    let before = status_kib("VmRSS:").unwrap_or(0);
    // Writing 5 to clear_refs resets the peak-RSS counter (Linux >= 4.0).
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let t = std::time::Instant::now();
    let g = build(src.to_vec(), dst.to_vec());
    let elapsed = t.elapsed();
    let peak = status_kib("VmHWM:").unwrap_or(0);
    let mib = |k: u64| k as f64 / 1024.0;
    println!(
        "graph_build: {NODES} nodes, {EDGES} edges, one build {:.2} s; RSS before {:.0} MiB (inputs held), peak {:.0} MiB{}, i.e. {:.0} MiB above; gcn nnz {}",
        elapsed.as_secs_f64(),
        mib(before),
        mib(peak),
        if reset {
            ""
        } else {
            " (peak not reset: includes setup)"
        },
        mib(peak.saturating_sub(before)),
        g.gcn_adjacency::<f32>().nnz()
    );
}

fn graph_build(c: &mut Criterion) {
    let g = rand_graph(NODES, EDGES, 0).expect("valid sizes");
    let (src, dst) = (g.src().to_vec(), g.dst().to_vec());
    drop(g);
    report_peak_memory(&src, &dst);
    let mut group = c.benchmark_group("graph_build");
    group.sample_size(10);
    group.throughput(Throughput::Elements(EDGES as u64));
    group.bench_function("csr+gcn-norm", |b| {
        b.iter_batched(
            || (src.clone(), dst.clone()),
            |(s, d)| build(s, d),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("floor-degree-count", |b| {
        b.iter(|| {
            let mut deg = vec![0u32; NODES];
            for &v in black_box(&dst) {
                deg[v as usize] += 1;
            }
            black_box(deg)
        })
    });
    group.finish();
}

criterion_group!(benches, graph_build);
criterion_main!(benches);
