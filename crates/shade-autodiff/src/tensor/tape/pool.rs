//! The tape's buffer pool ([`Pool`]): released buffers handed out again by size class,
//! trimmed at the end of each call to what that call used.

use super::Element;
use crate::tensor::line::{line_offset, pad, wrap_from};
use ndarray::ArrayD;

/// Released buffers, handed out again by best fit within a size class.
///
/// Two rules bound what the pool holds (a 1M-node graph's hidden layer is 256 MB a
/// buffer, so a loose pool costs gigabytes):
/// - a request of `len` elements takes only a buffer of capacity `len ..= 2 len` (at
///   least 32): a large buffer never serves a small request, where it would sit idle
///   while the large request that follows allocates again;
/// - [`Pool::trim`], at the end of each call, keeps only the buffers that call handed
///   out (by allocation address): at rest the pool holds what one call of the program
///   needs, never buffers that entered from outside (custom-rule outputs) or that no
///   request of the last call fitted.
#[derive(Debug, Default)]
pub(crate) struct Pool<T> {
    elems: FreeList<T>,
    idx: FreeList<usize>,
}

/// Free buffers of one element type and the addresses handed out since the last trim.
#[derive(Debug)]
struct FreeList<X> {
    free: Vec<Vec<X>>,
    /// Allocation addresses of the buffers handed out since the last [`Pool::trim`].
    used: Vec<usize>,
}

impl<X> Default for FreeList<X> {
    fn default() -> Self {
        FreeList {
            free: Vec::new(),
            used: Vec::new(),
        }
    }
}

/// The largest capacity a request of `len` elements takes from the pool.
fn class_max(len: usize) -> usize {
    len.max(16).saturating_mul(2)
}

impl<X> FreeList<X> {
    /// The smallest free buffer of `len`'s class, emptied, or a new one of exactly
    /// `len`.
    fn take(&mut self, len: usize) -> Vec<X> {
        let mut v = self.take_as_is(len);
        v.clear();
        v
    }

    /// [`FreeList::take`] without emptying the buffer: it keeps what it held (at most
    /// its capacity, so possibly more or fewer than `len` elements).
    fn take_as_is(&mut self, len: usize) -> Vec<X> {
        let hi = class_max(len);
        let mut best: Option<(usize, usize)> = None;
        for (i, v) in self.free.iter().enumerate() {
            let c = v.capacity();
            if c >= len && c <= hi && best.is_none_or(|(_, bc)| c < bc) {
                best = Some((i, c));
            }
        }
        let v = match best {
            Some((i, _)) => self.free.swap_remove(i),
            None => Vec::with_capacity(len),
        };
        if v.capacity() > 0 {
            self.used.push(v.as_ptr() as usize);
        }
        v
    }

    fn give(&mut self, v: Vec<X>) {
        if v.capacity() > 0 {
            self.free.push(v);
        }
    }

    /// Drops the free buffers not handed out since the last trim.
    fn trim(&mut self) {
        let used = &mut self.used;
        used.sort_unstable();
        self.free
            .retain(|v| used.binary_search(&(v.as_ptr() as usize)).is_ok());
        used.clear();
    }

    fn bytes(&self) -> usize {
        self.free
            .iter()
            .map(|v| v.capacity() * std::mem::size_of::<X>())
            .sum()
    }
}

impl<T: Element> Pool<T> {
    /// A buffer for an array of `n` elements and the offset at which its data starts
    /// on a 64-byte line (`tensor::line`); what `v` holds before `off` is unspecified.
    /// Without `keep`, `v.len() == off` with room for `n` more; with `keep`,
    /// `v.len() == off + n` and the elements are what a recycled buffer held (zeros
    /// where it held nothing), as [`Pool::overwritten`] promises.
    fn take_line(&mut self, n: usize, keep: bool) -> (Vec<T>, usize) {
        let mut v = self.elems.take_as_is(n + pad::<T>());
        let off = line_offset(&v);
        let len = if keep { off + n } else { off };
        v.truncate(len);
        v.resize(len, T::zero());
        (v, off)
    }

    /// An empty vector with room for `len` elements.
    pub(crate) fn vec(&mut self, len: usize) -> Vec<T> {
        self.elems.take(len)
    }

    /// An empty index vector with room for `len` entries.
    pub(crate) fn idx(&mut self, len: usize) -> Vec<usize> {
        self.idx.take(len)
    }

    /// A zero-filled array of the given shape.
    pub(crate) fn zeros(&mut self, shape: &[usize]) -> ArrayD<T> {
        let n: usize = shape.iter().product();
        let (mut v, off) = self.take_line(n, false);
        v.resize(off + n, T::zero());
        wrap_from(shape, v, off)
    }

    /// An array of the given shape with unspecified contents (what a recycled buffer
    /// held, zeros where it held nothing): for kernels that write every element before
    /// they read any, so that the buffer is not zero-filled first.
    pub(crate) fn overwritten(&mut self, shape: &[usize]) -> ArrayD<T> {
        let n: usize = shape.iter().product();
        let (v, off) = self.take_line(n, true);
        wrap_from(shape, v, off)
    }

    /// A vector of `n` elements with unspecified contents, as [`Pool::overwritten`].
    pub(crate) fn overwritten_vec(&mut self, n: usize) -> Vec<T> {
        let mut v = self.elems.take_as_is(n);
        v.truncate(n);
        v.resize(n, T::zero());
        v
    }

    /// An array of the given shape filled from an iterator of exactly its length.
    pub(crate) fn collect(&mut self, shape: &[usize], it: impl Iterator<Item = T>) -> ArrayD<T> {
        let n: usize = shape.iter().product();
        let (mut v, off) = self.take_line(n, false);
        v.extend(it.take(n));
        debug_assert_eq!(v.len(), off + n);
        v.resize(off + n, T::zero());
        wrap_from(shape, v, off)
    }

    /// Returns an array's buffer to the pool.
    pub(crate) fn give(&mut self, a: ArrayD<T>) {
        let (v, _) = a.into_raw_vec_and_offset();
        self.give_vec(v);
    }

    /// Returns a vector to the pool.
    pub(crate) fn give_vec(&mut self, v: Vec<T>) {
        self.elems.give(v);
    }

    /// Returns an index vector to the pool.
    pub(crate) fn give_idx(&mut self, v: Vec<usize>) {
        self.idx.give(v);
    }
}

impl<T> Pool<T> {
    /// Ends one call: keeps the buffers this call handed out, drops the others (see
    /// [`Pool`]).
    pub(crate) fn trim(&mut self) {
        self.elems.trim();
        self.idx.trim();
    }

    /// Number of buffers held.
    pub(crate) fn len(&self) -> usize {
        self.elems.free.len() + self.idx.free.len()
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.elems.bytes() + self.idx.bytes()
    }
}
