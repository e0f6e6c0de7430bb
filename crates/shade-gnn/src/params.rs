//! Named, ordered stores of arrays (parameters and state) and the scoped views a
//! layer sees of them.
//!
//! A [`Store`] maps PyTorch-style dotted names (`conv1.lin.weight`, `conv1.bias`,
//! `bn.running_mean`) to arrays, in a fixed order: the order in which the model's
//! `init` produced them. [`Params`] and [`State`] are both stores; parameters enter a
//! differentiated program as `Duplicated` arguments (one tape handle each), the state
//! (running statistics and the like) is plain data that a forward call may update.
//!
//! Inside a forward call a layer sees its own entries only, by their local names:
//! [`ParamVars::get`]`("weight")` inside the layer named `conv1` finds `conv1.weight`.
//! Containers ([`Chain`](crate::layers::Chain)) narrow the view with
//! [`ParamVars::scope`] before calling a child; no string is allocated (a view keeps
//! its path as a chain of borrowed names, spelled out only when a message needs it).

use crate::error::{GnnError, GnnResult};
use ndarray::ArrayD;
use shade_autodiff::tensor::{Element, Var, on_line, zeros_on_line};

/// A named, ordered collection of arrays.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Store<T> {
    names: Vec<String>,
    values: Vec<ArrayD<T>>,
}

/// The trainable parameters of a model.
pub type Params<T> = Store<T>;

/// The non-trainable state of a model (e.g. BatchNorm running statistics).
pub type State<T> = Store<T>;

impl<T: Clone> Store<T> {
    /// An empty store.
    pub fn new() -> Self {
        Store {
            names: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Appends an entry (names should be unique; [`Store::get`] finds the first). The
    /// array is kept in standard (row-major) layout with its data on a 64-byte cache
    /// line (`shade_autodiff::tensor::on_line`: a weight read row by row by the sparse
    /// kernels loads each row from one line), copied if needed.
    pub fn push(&mut self, name: impl Into<String>, value: ArrayD<T>) {
        self.names.push(name.into());
        self.values.push(on_line(value));
    }

    /// Builder form of [`Store::push`].
    pub fn with(mut self, name: impl Into<String>, value: ArrayD<T>) -> Self {
        self.push(name, value);
        self
    }

    /// Appends every entry of `other` with `prefix.` in front of its name (no dot when
    /// `prefix` is empty).
    pub fn extend_prefixed(&mut self, prefix: &str, other: Store<T>) {
        for (n, v) in other.names.into_iter().zip(other.values) {
            let name = if prefix.is_empty() {
                n
            } else {
                format!("{prefix}.{n}")
            };
            self.push(name, v);
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Total number of scalars.
    pub fn num_scalars(&self) -> usize {
        self.values.iter().map(|v| v.len()).sum()
    }

    /// The entry called `name`.
    pub fn get(&self, name: &str) -> Option<&ArrayD<T>> {
        self.position(name).map(|i| &self.values[i])
    }

    /// The entry called `name`, mutably.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut ArrayD<T>> {
        self.position(name).map(move |i| &mut self.values[i])
    }

    /// Position of `name` in the order of the store.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// The names, in order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The arrays, in order.
    pub fn values(&self) -> &[ArrayD<T>] {
        &self.values
    }

    /// The arrays, in order, mutably (names and shapes stay as they are).
    pub fn values_mut(&mut self) -> &mut [ArrayD<T>] {
        &mut self.values
    }

    /// `(name, array)` pairs in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ArrayD<T>)> {
        self.names.iter().map(String::as_str).zip(&self.values)
    }

    /// The first name that appears twice, if any (a model whose layers share a name).
    pub fn first_duplicate(&self) -> Option<&str> {
        let mut seen = std::collections::HashSet::with_capacity(self.names.len());
        self.names
            .iter()
            .find(|n| !seen.insert(n.as_str()))
            .map(String::as_str)
    }

    /// Removes entry `i`, moving the last entry into its place.
    pub(crate) fn swap_remove(&mut self, i: usize) -> (String, ArrayD<T>) {
        (self.names.swap_remove(i), self.values.swap_remove(i))
    }

    /// A store with the same names and shapes, filled with zeros (on a line, as
    /// [`Store::push`] keeps them).
    pub fn zeros_like(&self) -> Store<T>
    where
        T: Element,
    {
        Store {
            names: self.names.clone(),
            values: self
                .values
                .iter()
                .map(|v| zeros_on_line(v.shape()))
                .collect(),
        }
    }

    /// Sets every array to zero.
    pub fn fill_zero(&mut self)
    where
        T: Element,
    {
        self.values.iter_mut().for_each(|v| v.fill(T::zero()));
    }

    /// Euclidean norm of all entries together.
    ///
    /// The squares of a contiguous array are summed in eight interleaved partial sums
    /// (element `i` into sum `i mod 8`, the sums then added pairwise): eight
    /// independent chains of adds the compiler vectorises, instead of one add per
    /// element waiting on the previous one (2 % of a Cora step). The norm can differ
    /// from the one-chain sum in its last bits.
    pub fn global_norm(&self) -> T
    where
        T: Element,
    {
        self.values
            .iter()
            .map(|v| match v.as_slice() {
                Some(s) => sum_of_squares(s),
                None => v.iter().map(|&x| x * x).sum::<T>(),
            })
            .sum::<T>()
            .sqrt()
    }

    /// Checks that `self` has exactly the names and shapes of `reference` (in any
    /// order) and reorders it to `reference`'s order.
    ///
    /// Errors: [`GnnError::MissingParam`], [`GnnError::UnexpectedParam`],
    /// [`GnnError::ParamShape`].
    pub fn conform_to<U>(mut self, reference: &Store<U>) -> GnnResult<Store<T>> {
        let mut out = Store::new();
        for (name, r) in reference.names.iter().zip(&reference.values) {
            let Some(i) = self.position(name) else {
                return Err(GnnError::MissingParam { name: name.clone() });
            };
            if self.values[i].shape() != r.shape() {
                return Err(GnnError::ParamShape {
                    name: name.clone(),
                    expected: r.shape().to_vec(),
                    found: self.values[i].shape().to_vec(),
                });
            }
            let n = self.names.swap_remove(i);
            let v = self.values.swap_remove(i);
            out.push(n, v);
        }
        if let Some(name) = self.names.into_iter().next() {
            return Err(GnnError::UnexpectedParam { name });
        }
        Ok(out)
    }
}

/// The contiguous range of `names` that start with `prefix.` after byte `skip`.
fn sub_range(names: &[String], skip: usize, prefix: &str) -> (usize, usize) {
    let matches = |n: &String| {
        n.get(skip..)
            .and_then(|r| r.strip_prefix(prefix))
            .is_some_and(|r| r.starts_with('.'))
    };
    match names.iter().position(matches) {
        None => (0, 0),
        Some(lo) => {
            let len = names[lo..].iter().take_while(|n| matches(n)).count();
            (lo, lo + len)
        }
    }
}

/// A scope's name and the scope it was narrowed from: the path of a view (`conv1`,
/// `conv1.lin`) kept on the stack, so that a message can name it without a string
/// being built on the happy path.
#[derive(Clone, Copy, Debug, Default)]
struct Link<'s> {
    parent: Option<&'s Link<'s>>,
    name: &'s str,
}

impl Link<'_> {
    /// The dotted path, e.g. `conv1.lin` (empty at the root).
    fn path(&self) -> String {
        let mut parts = Vec::new();
        let mut at = Some(self);
        while let Some(l) = at {
            if !l.name.is_empty() {
                parts.push(l.name);
            }
            at = l.parent;
        }
        parts.reverse();
        parts.join(".")
    }

    /// The full name of the local `name`.
    fn full(&self, name: &str) -> String {
        let p = self.path();
        if p.is_empty() {
            name.to_string()
        } else {
            format!("{p}.{name}")
        }
    }
}

/// A parameter's tape handle with its full name, the weight argument of
/// [`Input::linear`](crate::Input::linear) (whose shape errors name it). A bare
/// [`Var`] converts into one without a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param<'s> {
    /// The handle.
    pub var: Var,
    /// The full name in the store, e.g. `conv1.lin.weight`.
    pub name: Option<&'s str>,
}

impl From<Var> for Param<'_> {
    fn from(var: Var) -> Self {
        Param { var, name: None }
    }
}

/// A layer's view of its parameters as tape handles, looked up by local name.
#[derive(Clone, Copy, Debug)]
pub struct ParamVars<'s> {
    names: &'s [String],
    vars: &'s [Var],
    skip: usize,
    link: Link<'s>,
}

impl<'s> ParamVars<'s> {
    /// A view of the whole store: `names[i]` is the name of `vars[i]`.
    ///
    /// # Panics
    /// If the lengths differ (a programming error of the caller).
    #[track_caller]
    pub fn new(names: &'s [String], vars: &'s [Var]) -> Self {
        assert_eq!(names.len(), vars.len(), "one tape handle per parameter");
        ParamVars {
            names,
            vars,
            skip: 0,
            link: Link::default(),
        }
    }

    /// The handle of the entry with local name `name`.
    ///
    /// Errors with [`GnnError::MissingParam`] naming the full name when it is absent.
    pub fn get(&self, name: &str) -> GnnResult<Var> {
        self.param(name).map(|p| p.var)
    }

    /// The entry with local name `name` as a named handle (for
    /// [`Input::linear`](crate::Input::linear), whose shape errors then name it).
    ///
    /// Errors with [`GnnError::MissingParam`] naming the full name when it is absent.
    pub fn param(&self, name: &str) -> GnnResult<Param<'s>> {
        match self.position(name) {
            Some(i) => Ok(Param {
                var: self.vars[i],
                name: Some(self.names[i].as_str()),
            }),
            None => Err(GnnError::MissingParam {
                name: self.link.full(name),
            }),
        }
    }

    fn position(&self, name: &str) -> Option<usize> {
        let skip = self.skip;
        self.names.iter().position(|n| n.get(skip..) == Some(name))
    }

    /// The handle of `name`, or `None` (for optional parameters such as a bias).
    pub fn opt(&self, name: &str) -> Option<Var> {
        self.position(name).map(|i| self.vars[i])
    }

    /// The view of a child called `prefix` (entries `prefix.*`, names relative to it).
    pub fn scope<'p>(&'p self, prefix: &'p str) -> ParamVars<'p> {
        let (lo, hi) = sub_range(self.names, self.skip, prefix);
        ParamVars {
            names: &self.names[lo..hi],
            vars: &self.vars[lo..hi],
            skip: self.skip + prefix.len() + 1,
            link: Link {
                parent: Some(&self.link),
                name: prefix,
            },
        }
    }

    /// The view's path in the model, e.g. `conv1` or `conv1.nn` (empty for the whole
    /// store): what messages call the layer that reads it.
    pub fn path(&self) -> String {
        self.link.path()
    }

    /// Number of entries in view.
    pub fn len(&self) -> usize {
        self.vars.len()
    }

    /// Whether no entry is in view.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }
}

/// A layer's view of its state entries, by local name; a forward call may overwrite
/// them (e.g. BatchNorm's running statistics in training).
#[derive(Debug)]
pub struct StateScope<'s, T> {
    names: &'s [String],
    values: &'s mut [ArrayD<T>],
    skip: usize,
    link: Link<'s>,
}

impl<'s, T> StateScope<'s, T> {
    /// A view of the whole store.
    pub fn new(store: &'s mut Store<T>) -> Self {
        StateScope {
            names: &store.names,
            values: &mut store.values,
            skip: 0,
            link: Link::default(),
        }
    }

    fn pos(&self, name: &str) -> GnnResult<usize> {
        let skip = self.skip;
        self.names
            .iter()
            .position(|n| n.get(skip..) == Some(name))
            .ok_or_else(|| GnnError::MissingParam {
                name: self.link.full(name),
            })
    }

    /// The entry with local name `name`.
    ///
    /// Errors with [`GnnError::MissingParam`] naming the full name when it is absent.
    pub fn get(&self, name: &str) -> GnnResult<&ArrayD<T>> {
        let i = self.pos(name)?;
        Ok(&self.values[i])
    }

    /// The entry with local name `name`, mutably.
    ///
    /// Errors with [`GnnError::MissingParam`] naming the full name when it is absent.
    pub fn get_mut(&mut self, name: &str) -> GnnResult<&mut ArrayD<T>> {
        let i = self.pos(name)?;
        Ok(&mut self.values[i])
    }

    /// The view of a child called `prefix`.
    pub fn scope<'p>(&'p mut self, prefix: &'p str) -> StateScope<'p, T> {
        let (lo, hi) = sub_range(self.names, self.skip, prefix);
        StateScope {
            names: &self.names[lo..hi],
            values: &mut self.values[lo..hi],
            skip: self.skip + prefix.len() + 1,
            link: Link {
                parent: Some(&self.link),
                name: prefix,
            },
        }
    }
}

/// `Σ x²` over `s` in eight interleaved partial sums, added pairwise at the end.
fn sum_of_squares<T: Element>(s: &[T]) -> T {
    let mut acc = [T::zero(); 8];
    let mut chunks = s.chunks_exact(8);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += x * x;
        }
    }
    for (a, &x) in acc.iter_mut().zip(chunks.remainder()) {
        *a += x * x;
    }
    let [a0, a1, a2, a3, a4, a5, a6, a7] = acc;
    ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{ArrayD, IxDyn};

    fn arr(n: usize) -> ArrayD<f64> {
        ArrayD::zeros(IxDyn(&[n]))
    }

    #[test]
    fn scopes_find_local_names() {
        let mut s = Store::new();
        s.push("conv1.lin.weight", arr(1));
        s.push("conv1.bias", arr(2));
        s.push("conv10.bias", arr(3));
        s.push("dense.weight", arr(4));
        let names = s.names().to_vec();
        // Stand-in handles: any four distinct values from a tape.
        let mut bufs = shade_autodiff::tensor::TapeBuffers::<f64>::new();
        let vals = [arr(1), arr(2), arr(3), arr(4)];
        shade_autodiff::tensor::value(
            &mut bufs,
            |t, vs: Vec<Var>| {
                let p = ParamVars::new(&names, &vs);
                let c1 = p.scope("conv1");
                assert_eq!(c1.len(), 2);
                assert_eq!(c1.get("bias").unwrap(), vs[1]);
                assert_eq!(c1.scope("lin").get("weight").unwrap(), vs[0]);
                assert!(c1.opt("weight").is_none());
                assert_eq!(p.scope("conv10").get("bias").unwrap(), vs[2]);
                assert_eq!(p.scope("dense").get("weight").unwrap(), vs[3]);
                assert!(p.scope("conv").is_empty());
                let e = p.scope("conv1").get("nope").unwrap_err();
                assert_eq!(e.code(), "SHADE-E0401");
                assert!(e.to_string().contains("`conv1.nope`"), "{e}");
                // The name is whole even when nothing of the scope is in the store.
                let e = p.scope("conv2").scope("lin").get("weight").unwrap_err();
                assert!(e.to_string().contains("`conv2.lin.weight`"), "{e}");
                assert_eq!(p.scope("conv2").scope("lin").path(), "conv2.lin");
                assert_eq!(c1.param("bias").unwrap().name, Some("conv1.bias"));
                t.sum(vs[0])
            },
            vals.iter().map(shade_autodiff::Const).collect::<Vec<_>>(),
        )
        .unwrap();
    }

    #[test]
    fn conform_reorders_and_reports() {
        let r = Store::new().with("a", arr(1)).with("b", arr(2));
        let s = Store::new().with("b", arr(2)).with("a", arr(1));
        assert_eq!(s.conform_to(&r).unwrap().names(), r.names());
        let bad = Store::new().with("a", arr(1)).with("b", arr(3));
        assert_eq!(bad.conform_to(&r).unwrap_err().code(), "SHADE-E0402");
        let miss = Store::new().with("a", arr(1));
        assert_eq!(miss.conform_to(&r).unwrap_err().code(), "SHADE-E0401");
        let extra = Store::new()
            .with("a", arr(1))
            .with("b", arr(2))
            .with("c", arr(1));
        assert_eq!(extra.conform_to(&r).unwrap_err().code(), "SHADE-E0403");
    }

    #[test]
    fn state_scope_writes_through() {
        let mut s = Store::new()
            .with("bn.running_mean", arr(2))
            .with("bn.running_var", arr(2));
        {
            let mut v = StateScope::new(&mut s);
            let mut bn = v.scope("bn");
            bn.get_mut("running_var").unwrap().fill(1.0);
            assert_eq!(bn.get("running_mean").unwrap().sum(), 0.0);
        }
        assert_eq!(s.get("bn.running_var").unwrap().sum(), 2.0);
    }

    /// The norm of contiguous arrays of every length around the eight partial sums
    /// (and of a non-contiguous one) agrees with the sum taken in `f64`; non-finite
    /// entries give a non-finite norm.
    #[test]
    fn global_norm_matches_the_definition() {
        for n in [0usize, 1, 7, 8, 9, 15, 16, 17, 100, 1001] {
            let a = ArrayD::from_shape_fn(vec![n], |i| (i[0] as f32 * 0.37).sin() * 3.0);
            let b = ndarray::Array2::from_shape_fn((3, 5), |(i, j)| i as f32 - j as f32 * 0.5)
                .reversed_axes()
                .into_dyn();
            let want: f64 = a
                .iter()
                .chain(b.iter())
                .map(|&x| f64::from(x) * f64::from(x))
                .sum::<f64>()
                .sqrt();
            let s = Store::new().with("a", a).with("b", b);
            let got = f64::from(s.global_norm());
            assert!(
                (got - want).abs() <= 1e-5 * want.max(1.0),
                "n = {n}: {got} vs {want}"
            );
        }
        let mut a = ArrayD::<f32>::zeros(vec![20]);
        a[[13]] = f32::NAN;
        assert!(Store::new().with("a", a).global_norm().is_nan());
        let mut a = ArrayD::<f32>::zeros(vec![20]);
        a[[19]] = f32::INFINITY;
        assert!(Store::new().with("a", a).global_norm().is_infinite());
    }
}
