//! Greedy colourings of a sparsity pattern (natural order, as SparseMatrixColorings'
//! default), and the decompression each one allows.
//!
//! - [`distance1`]: items (columns, or rows) that share no entry get one colour, so the
//!   sum of a colour's unit vectors recovers each of its items' nonzeros from one
//!   product (column colouring of `J` for pushforwards, of `Jᵀ` for pullbacks).
//! - [`star`]: a star colouring of a symmetric pattern (a distance-1 colouring in which
//!   every path on four vertices uses at least three colours; Gebremedhin, Manne and
//!   Pothen, "What color is your Jacobian?", SIAM Review 2005). Every entry `(i, j)` is
//!   then read directly from the compressed products ([`star_source`]).

use shade_autodiff::scalar::IndexSet;

/// No colour (yet, or ever: an item with no nonzero needs none).
pub(crate) const NONE: u32 = u32::MAX;

/// The smallest colour not marked `stamp` in `forbidden`.
fn first_free(forbidden: &[usize], stamp: usize) -> u32 {
    (0..)
        .find(|&c| forbidden.get(c as usize) != Some(&stamp))
        .unwrap_or(0)
}

/// Marks colour `c` as forbidden for `stamp`.
fn forbid(forbidden: &mut Vec<usize>, c: u32, stamp: usize) {
    if c == NONE {
        return;
    }
    if forbidden.len() <= c as usize {
        forbidden.resize(c as usize + 1, usize::MAX);
    }
    forbidden[c as usize] = stamp;
}

/// The transpose of a pattern given by lines (`lines[i]`: the sorted entries of line
/// `i`), with `len` columns.
pub(crate) fn transpose(lines: &[IndexSet], len: usize) -> Vec<IndexSet> {
    let mut t = vec![IndexSet::new(); len];
    for (i, l) in lines.iter().enumerate() {
        for &j in l {
            t[j as usize].push(i as u32);
        }
    }
    t
}

/// Greedy distance-1 colouring of the items of a pattern: `entries[item]` lists the
/// entries (rows, for a column colouring) an item touches, `items[entry]` the items
/// touching an entry. Two items get different colours if they touch a common entry;
/// items that touch none get [`NONE`].
pub(crate) fn distance1(entries: &[IndexSet], items: &[IndexSet]) -> Vec<u32> {
    let mut colour = vec![NONE; entries.len()];
    let mut forbidden: Vec<usize> = Vec::new();
    for j in 0..entries.len() {
        if entries[j].is_empty() {
            continue;
        }
        for &r in &entries[j] {
            for &k in &items[r as usize] {
                forbid(&mut forbidden, colour[k as usize], j);
            }
        }
        colour[j] = first_free(&forbidden, j);
    }
    colour
}

/// Greedy star colouring of the symmetric pattern `adj` (rows of an `n × n` matrix; the
/// diagonal, if present, counts only as a nonzero to recover). Vertices of an empty row
/// get [`NONE`].
pub(crate) fn star(adj: &[IndexSet]) -> Vec<u32> {
    let n = adj.len();
    let mut colour = vec![NONE; n];
    let mut forbidden: Vec<usize> = Vec::new();
    // How often each colour occurs among the coloured neighbours of the vertex being
    // coloured (`seen[c] == v` marks a first occurrence, `twice[c] == v` a second).
    let (mut seen, mut twice): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
    let nb = |v: usize| adj[v].iter().map(|&w| w as usize).filter(move |&w| w != v);
    for v in 0..n {
        if adj[v].is_empty() {
            continue;
        }
        for w in nb(v) {
            let c = colour[w];
            if c == NONE {
                continue;
            }
            forbid(&mut forbidden, c, v);
            let c = c as usize;
            if seen.len() <= c {
                seen.resize(c + 1, usize::MAX);
                twice.resize(c + 1, usize::MAX);
            }
            if seen[c] == v {
                twice[c] = v;
            }
            seen[c] = v;
        }
        for w in nb(v) {
            let cw = colour[w];
            if cw == NONE {
                continue;
            }
            let repeated = twice[cw as usize] == v;
            for x in nb(w).filter(|&x| x != v) {
                let cx = colour[x];
                if cx == NONE {
                    continue;
                }
                // u - v - w - x with c(u) = c(w) (repeated), or v - w - x - y with
                // c(y) = c(w): colouring v like x would make a two-coloured path.
                if repeated || nb(x).any(|y| y != w && colour[y] == cw) {
                    forbid(&mut forbidden, cx, v);
                }
            }
        }
        colour[v] = first_free(&forbidden, v);
    }
    colour
}

/// Where entry `(i, j)` of a symmetric matrix is in the compressed products `B = H S`
/// of a star colouring (`B[r, c]` is entry `r` of the product with colour `c`'s seed):
/// `(row, colour)`. The diagonal is `B[i, c(i)]`; off the diagonal, `B[i, c(j)]` if `j`
/// is the only neighbour of `i` with colour `c(j)`, else `B[j, c(i)]` (the star
/// property guarantees one of the two).
pub(crate) fn star_source(i: usize, j: usize, colour: &[u32], row_i: &IndexSet) -> (usize, u32) {
    if i == j {
        return (i, colour[i]);
    }
    let cj = colour[j];
    let alone = row_i
        .iter()
        .filter(|&&k| k as usize != i && colour[k as usize] == cj)
        .count()
        == 1;
    if alone { (i, cj) } else { (j, colour[i]) }
}

/// The number of colours of a colouring (items without one not counted).
pub(crate) fn count(colour: &[u32]) -> usize {
    colour
        .iter()
        .filter(|&&c| c != NONE)
        .map(|&c| c as usize + 1)
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(rows: &[&[u32]]) -> Vec<IndexSet> {
        rows.iter().map(|r| IndexSet::from_slice(r)).collect()
    }

    /// A colouring is a star colouring: proper, and no path on four vertices is
    /// two-coloured.
    fn is_star(adj: &[IndexSet], colour: &[u32]) -> bool {
        let n = adj.len();
        let nb = |v: usize| adj[v].iter().map(|&w| w as usize).filter(move |&w| w != v);
        for v in 0..n {
            if nb(v).any(|w| colour[w] == colour[v]) {
                return false;
            }
            for w in nb(v) {
                for x in nb(w).filter(|&x| x != v) {
                    for y in nb(x).filter(|&y| y != w && y != v) {
                        if colour[v] == colour[x] && colour[w] == colour[y] {
                            return false;
                        }
                    }
                }
            }
        }
        true
    }

    #[test]
    fn a_tridiagonal_pattern_has_three_column_colours_and_three_star_colours() {
        let n = 12;
        let rows: Vec<IndexSet> = (0..n)
            .map(|i| ((i.max(1) - 1)..(i + 2).min(n)).map(|j| j as u32).collect())
            .collect();
        let cols = transpose(&rows, n);
        let c = distance1(&cols, &rows);
        assert_eq!(c.iter().max(), Some(&2));
        let s = star(&rows);
        assert_eq!(s.iter().max(), Some(&2));
        assert!(is_star(&rows, &s));
    }

    #[test]
    fn star_colourings_of_random_symmetric_patterns_are_star_colourings() {
        // A fixed pseudo-random generator: patterns of varied density.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for trial in 0..40 {
            let n = 5 + trial % 17;
            let mut adj = vec![IndexSet::new(); n];
            for i in 0..n {
                adj[i].push(i as u32);
                for j in i + 1..n {
                    if next() % 7 < (trial % 4) as u64 + 1 {
                        adj[i].push(j as u32);
                        adj[j].push(i as u32);
                    }
                }
            }
            for r in &mut adj {
                r.sort_unstable();
            }
            let s = star(&adj);
            assert!(is_star(&adj, &s), "trial {trial}: {s:?}");
            // Every entry is recoverable.
            for i in 0..n {
                for &j in &adj[i] {
                    let (r, c) = star_source(i, j as usize, &s, &adj[i]);
                    let row = &adj[r];
                    let other = if r == i { j as usize } else { i };
                    let hits = row.iter().filter(|&&k| s[k as usize] == c).count();
                    assert_eq!(
                        hits, 1,
                        "trial {trial}: ({i}, {j}) from ({r}, {c}), {other}"
                    );
                }
            }
        }
    }

    #[test]
    fn rows_that_share_a_column_differ() {
        let rows = sets(&[&[0, 1], &[1], &[2], &[0, 2]]);
        let cols = transpose(&rows, 3);
        let c = distance1(&rows, &cols);
        assert_ne!(c[0], c[1]);
        assert_ne!(c[0], c[3]);
        assert_ne!(c[2], c[3]);
    }
}
