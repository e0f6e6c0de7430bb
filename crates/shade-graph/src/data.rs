//! Named data stores: node, edge and graph arrays kept beside the structure.
//!
//! Arrays are row-major with the item (node, edge, graph) on the first axis, e.g. node
//! features `[num_nodes, F]`. The graph validates the first dimension on insertion.

use std::collections::BTreeMap;

use ndarray::{ArrayD, Axis, IxDyn};

/// A dense array of one of the supported element types.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Array {
    /// Single precision (the usual feature type).
    F32(ArrayD<f32>),
    /// Double precision (tests, references).
    F64(ArrayD<f64>),
    /// Integers (labels, ids).
    I64(ArrayD<i64>),
}

macro_rules! each {
    ($self:expr, $a:ident => $body:expr) => {
        match $self {
            Array::F32($a) => $body,
            Array::F64($a) => $body,
            Array::I64($a) => $body,
        }
    };
}

macro_rules! map_same {
    ($self:expr, $a:ident => $body:expr) => {
        match $self {
            Array::F32($a) => Array::F32($body),
            Array::F64($a) => Array::F64($body),
            Array::I64($a) => Array::I64($body),
        }
    };
}

impl Array {
    /// The array's shape.
    pub fn shape(&self) -> &[usize] {
        each!(self, a => a.shape())
    }

    /// Name of the element type (`"f32"`, `"f64"`, `"i64"`).
    pub fn dtype(&self) -> &'static str {
        match self {
            Array::F32(_) => "f32",
            Array::F64(_) => "f64",
            Array::I64(_) => "i64",
        }
    }

    /// The `f32` array, if this is one.
    pub fn as_f32(&self) -> Option<&ArrayD<f32>> {
        match self {
            Array::F32(a) => Some(a),
            _ => None,
        }
    }

    /// The `f64` array, if this is one.
    pub fn as_f64(&self) -> Option<&ArrayD<f64>> {
        match self {
            Array::F64(a) => Some(a),
            _ => None,
        }
    }

    /// The `i64` array, if this is one.
    pub fn as_i64(&self) -> Option<&ArrayD<i64>> {
        match self {
            Array::I64(a) => Some(a),
            _ => None,
        }
    }

    /// Rows `idx` (first axis) in that order. Indices must be in range (checked by callers).
    /// A standard-layout array is gathered row by row as contiguous slices (the loaders'
    /// feature gather), any other layout through ndarray's `select`.
    pub(crate) fn select_rows(&self, idx: &[usize]) -> Array {
        map_same!(self, a => gather_rows(a, idx))
    }

    /// This array followed by `n` rows of zeros.
    pub(crate) fn append_zero_rows(&self, n: usize) -> Array {
        map_same!(self, a => {
            let mut shape = a.shape().to_vec();
            shape[0] = n;
            let z = ArrayD::zeros(IxDyn(&shape));
            ndarray::concatenate(Axis(0), &[a.view(), z.view()]).expect("same trailing shape")
        })
    }

    /// Rows grouped by `group` (`groups` groups), reduced with `reduce`. Used by coalesce.
    pub(crate) fn reduce_rows(
        &self,
        group: &[usize],
        groups: usize,
        reduce: crate::Reduce,
    ) -> Array {
        match self {
            Array::F32(a) => Array::F32(reduce_rows_f(a, group, groups, reduce)),
            Array::F64(a) => Array::F64(reduce_rows_f(a, group, groups, reduce)),
            Array::I64(a) => {
                let f = a.mapv(|v| v as f64);
                Array::I64(reduce_rows_f(&f, group, groups, reduce).mapv(|v| v as i64))
            }
        }
    }

    /// Same type and trailing shape (`shape[1..]`).
    pub(crate) fn compatible(&self, other: &Array) -> bool {
        self.dtype() == other.dtype() && self.shape()[1..] == other.shape()[1..]
    }

    /// Concatenation along the first axis; all parts must be [`compatible`](Self::compatible).
    pub(crate) fn concat(parts: &[&Array]) -> Array {
        match parts[0] {
            Array::F32(_) => Array::F32(cat(parts.iter().map(|p| p.as_f32().expect("same type")))),
            Array::F64(_) => Array::F64(cat(parts.iter().map(|p| p.as_f64().expect("same type")))),
            Array::I64(_) => Array::I64(cat(parts.iter().map(|p| p.as_i64().expect("same type")))),
        }
    }

    /// Rows `start..end`.
    pub(crate) fn slice_rows(&self, start: usize, end: usize) -> Array {
        map_same!(self, a => a.slice_axis(Axis(0), (start..end).into()).to_owned())
    }
}

/// Rows `idx` of `a`: one slice copy per row when `a` is in standard layout.
fn gather_rows<T: Copy>(a: &ArrayD<T>, idx: &[usize]) -> ArrayD<T> {
    let Some(data) = a.as_slice() else {
        return a.select(Axis(0), idx);
    };
    let width: usize = a.shape()[1..].iter().product();
    let mut out = Vec::with_capacity(idx.len() * width);
    for &r in idx {
        out.extend_from_slice(&data[r * width..(r + 1) * width]);
    }
    let mut shape = a.shape().to_vec();
    shape[0] = idx.len();
    ArrayD::from_shape_vec(IxDyn(&shape), out).expect("rows × width elements")
}

fn cat<'a, T: Clone + 'a>(parts: impl Iterator<Item = &'a ArrayD<T>>) -> ArrayD<T> {
    let views: Vec<_> = parts.map(|p| p.view()).collect();
    ndarray::concatenate(Axis(0), &views).expect("same trailing shape")
}

fn reduce_rows_f<T>(
    a: &ArrayD<T>,
    group: &[usize],
    groups: usize,
    reduce: crate::Reduce,
) -> ArrayD<T>
where
    T: num_traits::Float + 'static,
{
    let mut shape = a.shape().to_vec();
    shape[0] = groups;
    let init = match reduce {
        crate::Reduce::Max => T::neg_infinity(),
        _ => T::zero(),
    };
    let mut out = ArrayD::from_elem(IxDyn(&shape), init);
    let mut count = vec![0usize; groups];
    for (row, &g) in a.axis_iter(Axis(0)).zip(group) {
        count[g] += 1;
        let mut o = out.index_axis_mut(Axis(0), g);
        match reduce {
            crate::Reduce::Max => o.zip_mut_with(&row, |x, &y| *x = x.max(y)),
            _ => o.zip_mut_with(&row, |x, &y| *x = *x + y),
        }
    }
    if reduce == crate::Reduce::Mean {
        for (g, mut o) in out.axis_iter_mut(Axis(0)).enumerate() {
            let c = T::from(count[g].max(1)).expect("count fits a float");
            o.mapv_inplace(|x| x / c);
        }
    }
    out
}

impl From<ArrayD<f32>> for Array {
    fn from(a: ArrayD<f32>) -> Self {
        Array::F32(a)
    }
}
impl From<ArrayD<f64>> for Array {
    fn from(a: ArrayD<f64>) -> Self {
        Array::F64(a)
    }
}
impl From<ArrayD<i64>> for Array {
    fn from(a: ArrayD<i64>) -> Self {
        Array::I64(a)
    }
}
impl From<ndarray::Array2<f32>> for Array {
    fn from(a: ndarray::Array2<f32>) -> Self {
        Array::F32(a.into_dyn())
    }
}
impl From<ndarray::Array2<f64>> for Array {
    fn from(a: ndarray::Array2<f64>) -> Self {
        Array::F64(a.into_dyn())
    }
}
impl From<ndarray::Array1<f32>> for Array {
    fn from(a: ndarray::Array1<f32>) -> Self {
        Array::F32(a.into_dyn())
    }
}
impl From<ndarray::Array1<f64>> for Array {
    fn from(a: ndarray::Array1<f64>) -> Self {
        Array::F64(a.into_dyn())
    }
}
impl From<ndarray::Array1<i64>> for Array {
    fn from(a: ndarray::Array1<i64>) -> Self {
        Array::I64(a.into_dyn())
    }
}

/// Named arrays of one kind (node, edge or graph data), in name order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DataStore {
    arrays: BTreeMap<String, Array>,
}

impl DataStore {
    /// The array called `name`.
    pub fn get(&self, name: &str) -> Option<&Array> {
        self.arrays.get(name)
    }

    /// Names and arrays, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Array)> {
        self.arrays.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Names, in name order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.arrays.keys().map(String::as_str)
    }

    /// Number of arrays.
    pub fn len(&self) -> usize {
        self.arrays.len()
    }

    /// Whether there are no arrays.
    pub fn is_empty(&self) -> bool {
        self.arrays.is_empty()
    }

    pub(crate) fn insert_unchecked(&mut self, name: String, a: Array) {
        self.arrays.insert(name, a);
    }

    pub(crate) fn remove(&mut self, name: &str) -> Option<Array> {
        self.arrays.remove(name)
    }

    /// Every array with `f` applied.
    pub(crate) fn map(&self, mut f: impl FnMut(&Array) -> Array) -> DataStore {
        DataStore {
            arrays: self.arrays.iter().map(|(k, v)| (k.clone(), f(v))).collect(),
        }
    }
}
