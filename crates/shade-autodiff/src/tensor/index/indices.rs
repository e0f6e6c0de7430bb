//! The index arrays of the index operations: [`IndexType`] (`u32`, a graph's own edge
//! lists, or `usize`), the one check of an array against its bound, and the arrays an
//! operation's record keeps ([`Indices`], and [`Pairs`] for a coordinate list),
//! matched once per call so that every kernel runs monomorphised over one index type.

use crate::error::{AdError, AdResult};

mod sealed {
    /// Seals [`IndexType`](super::IndexType): its implementations are `u32` and `usize`.
    pub trait Sealed: Copy {
        /// The index array as a record keeps it, borrowed for the tape's lifetime.
        fn borrowed(idx: &[Self]) -> Indices<'_>;
        /// Two index arrays of this type (rows and columns of a coordinate list) as a
        /// record keeps them.
        fn pairs<'a>(rows: &'a [Self], cols: &'a [Self]) -> Pairs<'a>;
    }

    impl Sealed for u32 {
        fn borrowed(idx: &[u32]) -> Indices<'_> {
            Indices::U32(idx)
        }
        fn pairs<'a>(rows: &'a [u32], cols: &'a [u32]) -> Pairs<'a> {
            Pairs::U32(rows, cols)
        }
    }

    impl Sealed for usize {
        fn borrowed(idx: &[usize]) -> Indices<'_> {
            Indices::Usize(idx)
        }
        fn pairs<'a>(rows: &'a [usize], cols: &'a [usize]) -> Pairs<'a> {
            Pairs::Usize(rows, cols)
        }
    }

    /// The index array of an indexing operation: borrowed for the tape's lifetime (of
    /// either [`IndexType`](super::IndexType)), or owned by the record (index sets
    /// computed inside the program). Public in this private module only so that
    /// [`Sealed`] may name it; unnameable outside the crate.
    #[derive(Debug)]
    pub enum Indices<'a> {
        /// `usize` indices, borrowed.
        Usize(&'a [usize]),
        /// `u32` indices, borrowed.
        U32(&'a [u32]),
        /// `usize` indices the record owns.
        Owned(Vec<usize>),
    }

    /// The rows and columns of a coordinate list, borrowed, both of one index type
    /// (as [`Indices`], public here only so that [`Sealed`] may name it).
    #[derive(Clone, Copy, Debug)]
    pub enum Pairs<'a> {
        /// `usize` rows and columns.
        Usize(&'a [usize], &'a [usize]),
        /// `u32` rows and columns.
        U32(&'a [u32], &'a [u32]),
    }
}

pub(crate) use sealed::{Indices, Pairs};

/// The element type of an index array taken by the tensor layer's index operations
/// ([`Tape::index_select`](super::super::Tape::index_select), the scatters,
/// [`Tape::segment_softmax`](super::super::Tape::segment_softmax),
/// [`Tape::coo_spmm`](super::super::Tape::coo_spmm),
/// [`SymNorm`](super::super::SymNorm)'s pairs): `usize`, or `u32`, the width of a
/// graph's edge lists (shade-graph's `Graph::edge_index`), taken as they are, without
/// a conversion copy.
///
/// Sealed: implemented for `u32` and `usize` only. The kernels are generic over it
/// (one copy per type), so a `u32` array costs no conversion inside the loops but the
/// zero extension of each index.
#[diagnostic::on_unimplemented(
    message = "index arrays of the tensor layer hold `u32` or `usize`, not `{Self}`",
    label = "an index array of `{Self}`",
    note = "an untyped literal such as `&[0, 2]` is `i32`: write `&[0usize, 2]` or `&[0u32, 2]`"
)]
pub trait IndexType: sealed::Sealed + Copy + Send + Sync + std::fmt::Debug + 'static {
    /// The index as a `usize` (lossless: the implementations are `u32` and `usize`, and
    /// `usize` has at least 32 bits on every target the crate builds for).
    fn ix(self) -> usize;
}

// `u32 as usize` is lossless only where `usize` has 32 bits or more.
const _: () = assert!(usize::BITS >= u32::BITS);

impl IndexType for u32 {
    #[inline(always)]
    fn ix(self) -> usize {
        self as usize
    }
}

impl IndexType for usize {
    #[inline(always)]
    fn ix(self) -> usize {
        self
    }
}

/// Checks every entry of `idx` against `bound`: the first one that is not smaller is
/// [`AdError::IndexOutOfRange`] with its position, its value and the bound.
pub(crate) fn check_indices<I: IndexType>(
    op: &'static str,
    idx: &[I],
    bound: usize,
) -> AdResult<()> {
    match idx.iter().position(|&i| i.ix() >= bound) {
        Some(position) => Err(AdError::IndexOutOfRange {
            op,
            position,
            index: idx[position].ix(),
            bound,
        }),
        None => Ok(()),
    }
}

/// Checks a count the caller passes (segments, rows, nodes, entries) before anything is
/// allocated for it: `count` rows of `row` elements (at least one) of `T`, or of the
/// `usize` arg-max entries a scatter keeps, must fit in one allocation (`isize::MAX`
/// bytes); otherwise [`AdError::InvalidArgument`], not a capacity-overflow panic.
pub(crate) fn check_count<T>(
    op: &'static str,
    what: &'static str,
    count: usize,
    row: usize,
) -> AdResult<()> {
    let width = std::mem::size_of::<T>().max(std::mem::size_of::<usize>());
    let bytes = count
        .checked_mul(row.max(1))
        .and_then(|e| e.checked_mul(width));
    if bytes.is_none_or(|b| b > isize::MAX as usize) {
        return Err(AdError::InvalidArgument {
            op,
            what: format!(
                "{count} {what} of {row} elements each do not fit in memory (more than isize::MAX bytes): pass the number actually indexed"
            ),
        });
    }
    Ok(())
}

impl<'a> Indices<'a> {
    /// `idx`, borrowed.
    pub(crate) fn of<I: IndexType>(idx: &'a [I]) -> Self {
        I::borrowed(idx)
    }
}

/// Evaluates `$body` with `$idx` bound to the index slice of `$indices` (an
/// [`Indices`] or a reference to one), one expansion per index type: the match runs
/// once, and the generic kernels called in `$body` are monomorphised for each type.
macro_rules! with_indices {
    ($indices:expr, |$idx:ident| $body:expr) => {
        match $indices {
            $crate::tensor::index::indices::Indices::Usize($idx) => {
                let $idx: &[usize] = $idx;
                $body
            }
            $crate::tensor::index::indices::Indices::U32($idx) => {
                let $idx: &[u32] = $idx;
                $body
            }
            $crate::tensor::index::indices::Indices::Owned(v) => {
                let $idx: &[usize] = v.as_slice();
                $body
            }
        }
    };
}
pub(crate) use with_indices;

/// [`with_indices`] for a [`Pairs`]: `$body` with `$rows` and `$cols` bound to its
/// two slices, one expansion per index type.
macro_rules! with_pairs {
    ($pairs:expr, |$rows:ident, $cols:ident| $body:expr) => {
        match $pairs {
            $crate::tensor::index::indices::Pairs::Usize($rows, $cols) => {
                let ($rows, $cols): (&[usize], &[usize]) = ($rows, $cols);
                $body
            }
            $crate::tensor::index::indices::Pairs::U32($rows, $cols) => {
                let ($rows, $cols): (&[u32], &[u32]) = ($rows, $cols);
                $body
            }
        }
    };
}
pub(crate) use with_pairs;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_index_types_give_the_same_coded_error() {
        let wide = [0usize, 2, 7, 9];
        let narrow = [0u32, 2, 7, 9];
        let a = check_indices("op", &wide, 7).unwrap_err();
        let b = check_indices("op", &narrow, 7).unwrap_err();
        assert_eq!(a, b);
        assert_eq!(a.code(), "SHADE-E0111");
        assert!(
            matches!(
                a,
                AdError::IndexOutOfRange {
                    position: 2,
                    index: 7,
                    bound: 7,
                    ..
                }
            ),
            "{a:?}"
        );
        check_indices("op", &narrow, 10).unwrap();
        check_indices::<u32>("op", &[], 0).unwrap();
        assert!(matches!(Indices::of(&narrow[..]), Indices::U32(s) if s.len() == 4));
        assert!(matches!(Indices::of(&wide[..]), Indices::Usize(_)));
    }
}
