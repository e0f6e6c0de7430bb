//! Scratch timing (not committed).
fn main() {
    let g = shade_graph::rand_graph(1_000_000, 10_000_000, 0).unwrap();
    let (s, d) = (g.src().to_vec(), g.dst().to_vec());
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let g = shade_graph::Graph::try_new(1_000_000, s.clone(), d.clone()).unwrap();
        let t1 = t.elapsed();
        g.csr_by_dst();
        let t2 = t.elapsed();
        g.gcn_adjacency::<f32>();
        let t3 = t.elapsed();
        println!("new {:?} csr {:?} gcn {:?}", t1, t2 - t1, t3 - t2);
    }
}
