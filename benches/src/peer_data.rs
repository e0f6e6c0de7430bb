//! Problem data that the shade benches and the Python peer scripts (`benches/peers/`)
//! generate identically: a counter-based hash (splitmix64's finaliser over
//! `seed · K₁ + (i + 1) · K₂`), so entry `i` does not depend on the order of generation
//! and numpy computes the same bits with vectorised `uint64` arithmetic
//! (`benches/peers/common.py` holds the Python twin; a test there and one here pin the
//! same values).

use shade_autodiff::tensor::SparseMatrix;

const K1: u64 = 0xD1B5_4A32_D192_ED03;
const K2: u64 = 0x9E37_79B9_7F4A_7C15;

/// The `i`-th 64-bit word of stream `seed`.
#[inline]
pub fn mix(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_mul(K1).wrapping_add((i + 1).wrapping_mul(K2));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Entry `i` of stream `seed` as an `f64` uniform in `[0, 1)` (53 bits).
#[inline]
pub fn unit_f64(seed: u64, i: u64) -> f64 {
    (mix(seed, i) >> 11) as f64 / (1u64 << 53) as f64
}

/// Entry `i` of stream `seed` as an `f32` uniform in `[-1, 1)` (24 bits, exact).
#[inline]
pub fn sym_f32(seed: u64, i: u64) -> f32 {
    (mix(seed, i) >> 40) as f32 / (1u32 << 23) as f32 - 1.0
}

/// A random directed graph with `edges` edges on `nodes` nodes: edge `k` goes from
/// `mix(seed, 2k) mod nodes` to `mix(seed, 2k + 1) mod nodes` (self-loops and repeated
/// edges are kept, as `torch.randint` would give them).
pub fn random_edges(nodes: usize, edges: usize, seed: u64) -> (Vec<u32>, Vec<u32>) {
    let n = nodes as u64;
    let src = (0..edges as u64)
        .map(|k| (mix(seed, 2 * k) % n) as u32)
        .collect();
    let dst = (0..edges as u64)
        .map(|k| (mix(seed, 2 * k + 1) % n) as u32)
        .collect();
    (src, dst)
}

/// The Erdős–Rényi directed graph of the policy model: edge `i → j` (`i ≠ j`) when
/// `unit_f64(seed, i · nodes + j) < p`, in row-major order.
pub fn bernoulli_edges(nodes: usize, p: f64, seed: u64) -> (Vec<u32>, Vec<u32>) {
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for i in 0..nodes {
        for j in 0..nodes {
            if i != j && unit_f64(seed, (i * nodes + j) as u64) < p {
                src.push(i as u32);
                dst.push(j as u32);
            }
        }
    }
    (src, dst)
}

/// A dense `rows × cols` row-major `f32` matrix with entries `sym_f32(seed, i)`.
pub fn dense_f32(rows: usize, cols: usize, seed: u64) -> Vec<f32> {
    (0..(rows * cols) as u64)
        .map(|i| sym_f32(seed, i))
        .collect()
}

/// A `rows × cols` CSR matrix with `per_row` draws per row: draw `k` (row
/// `k / per_row`) has column `mix(seed, k) mod cols` and value `sym_f32(seed + 1, k)`;
/// a column drawn twice in a row keeps its first draw's value.
pub fn csr(rows: usize, cols: usize, per_row: usize, seed: u64) -> SparseMatrix<f32> {
    let mut indptr = Vec::with_capacity(rows + 1);
    let mut indices = Vec::with_capacity(rows * per_row);
    let mut data = Vec::with_capacity(rows * per_row);
    indptr.push(0);
    let mut row: Vec<(usize, u64)> = Vec::with_capacity(per_row);
    for r in 0..rows {
        row.clear();
        let k0 = (r * per_row) as u64;
        row.extend((k0..k0 + per_row as u64).map(|k| ((mix(seed, k) % cols as u64) as usize, k)));
        row.sort_unstable();
        row.dedup_by_key(|e| e.0);
        for &(c, k) in &row {
            indices.push(c);
            data.push(sym_f32(seed + 1, k));
        }
        indptr.push(indices.len());
    }
    SparseMatrix::try_from_csr((rows, cols), indptr, indices, data)
        .expect("valid CSR by construction")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same values are asserted in `benches/peers/common.py`'s self-test.
    #[test]
    fn pinned_values_match_the_python_twin() {
        assert_eq!(mix(0, 0), 0xE220_A839_7B1D_CDAF);
        assert_eq!(mix(123, 456), 0x6BFC_2E5C_67FF_FA1B);
        assert_eq!(mix(7, 3) % 1000, 499);
        assert_eq!(sym_f32(1, 0), (mix(1, 0) >> 40) as f32 / 8_388_608.0 - 1.0);
        // Sizes and sums printed by the Python twin (`benches/peers/common.py`).
        let (s, d) = bernoulli_edges(100, 0.2, 1);
        let sum = |v: &[u32]| v.iter().map(|&x| u64::from(x)).sum::<u64>();
        assert_eq!((s.len(), sum(&s), sum(&d)), (2001, 99_730, 97_746));
        let a = csr(50, 20, 10, 3);
        let m = a.csr();
        assert_eq!(m.nnz(), 404);
        assert_eq!(m.indices().iter().map(|&c| c as usize).sum::<usize>(), 4012);
        assert_eq!(m.data()[0], -0.173_789_26);
        let total: f64 = m.data().iter().map(|&v| f64::from(v)).sum();
        assert!((total - -9.523_745_179_176_33).abs() < 1e-12);
        let (s, d) = random_edges(1000, 5000, 11);
        assert_eq!((sum(&s), sum(&d)), (2_471_017, 2_496_944));
        assert_eq!(dense_f32(3, 4, 12)[11], -0.837_822_8);
    }

    #[test]
    fn csr_rows_are_sorted_and_distinct() {
        let a = csr(50, 20, 10, 3);
        let m = a.csr();
        let (ip, ind) = (m.indptr().raw_storage().to_vec(), m.indices());
        for r in 0..50 {
            let row = &ind[ip[r]..ip[r + 1]];
            assert!(row.windows(2).all(|w| w[0] < w[1]));
            assert!(!row.is_empty() && row.len() <= 10);
        }
    }

    #[test]
    fn bernoulli_graph_has_about_p_of_the_pairs() {
        let (s, d) = bernoulli_edges(100, 0.2, 1);
        assert!((1800..2150).contains(&s.len()), "{}", s.len());
        assert!(s.iter().zip(&d).all(|(a, b)| a != b));
    }
}
