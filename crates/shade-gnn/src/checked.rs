//! [`Checked`]: a value with a record that it was found finite, so that constant
//! inputs (e.g. Cora's 15.5 MB of dense features) are checked once, not on every
//! training step. Every mutable access clears the record: data that may have changed
//! is checked again.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

/// A value (the array of [`Features`](crate::Features)) and whether it was found
/// finite since it last changed.
///
/// Read it through `Deref` (`x.shape()`, `&*x`); a mutable access (`DerefMut`,
/// e.g. `x[[0, 0]] = v` or `x.view_mut()`) clears the record, so the next
/// [`Inputs::validate`](crate::Inputs::validate) checks the values again.
///
/// ```
/// use ndarray::array;
/// use shade_gnn::{Features, Inputs};
///
/// let mut x = Features::dense(array![[1.0f64, 2.0]]);
/// assert!(Inputs::without_graph(&x).validate().is_ok()); // checked, then recorded
/// if let Features::Dense(a) = &mut x {
///     a[[0, 1]] = f64::NAN; // clears the record
/// }
/// let e = Inputs::without_graph(&x).validate().unwrap_err();
/// assert_eq!(e.code(), "SHADE-E0413");
/// ```
#[derive(Debug, Default)]
pub struct Checked<V> {
    value: V,
    finite: AtomicBool,
}

impl<V> Checked<V> {
    /// `value`, not yet checked.
    pub fn new(value: V) -> Self {
        Checked {
            value,
            finite: AtomicBool::new(false),
        }
    }

    /// The value.
    pub fn into_inner(self) -> V {
        self.value
    }

    /// Whether the value was found finite since it last changed.
    pub fn is_checked(&self) -> bool {
        self.finite.load(Ordering::Acquire)
    }

    /// `check(value)` unless it passed since the value last changed; a pass is
    /// recorded (a failure is not, so it is reported again).
    pub(crate) fn check_once<E>(&self, check: impl FnOnce(&V) -> Result<(), E>) -> Result<(), E> {
        if self.is_checked() {
            return Ok(());
        }
        check(&self.value)?;
        // The value cannot change while `&self` is held, so the pass stands until the
        // next `&mut` access (which clears it).
        self.finite.store(true, Ordering::Release);
        Ok(())
    }
}

impl<V> From<V> for Checked<V> {
    fn from(value: V) -> Self {
        Checked::new(value)
    }
}

impl<V: Clone> Clone for Checked<V> {
    /// The same value, with the same record (the copy holds the same numbers).
    fn clone(&self) -> Self {
        Checked {
            value: self.value.clone(),
            finite: AtomicBool::new(self.is_checked()),
        }
    }
}

impl<V> Deref for Checked<V> {
    type Target = V;
    fn deref(&self) -> &V {
        &self.value
    }
}

impl<V> DerefMut for Checked<V> {
    /// The value for writing: clears the record.
    fn deref_mut(&mut self) -> &mut V {
        *self.finite.get_mut() = false;
        &mut self.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_is_kept_until_a_mutable_access() {
        let mut c = Checked::new(vec![1.0f32, 2.0]);
        let mut calls = 0;
        let mut check = |v: &Vec<f32>| {
            calls += 1;
            if v.iter().all(|x| x.is_finite()) {
                Ok(())
            } else {
                Err(())
            }
        };
        assert_eq!(c.check_once(&mut check), Ok(()));
        assert_eq!(c.check_once(&mut check), Ok(()));
        assert!(c.is_checked());
        let _ = c.len(); // a read keeps it
        assert!(c.is_checked());
        c[0] = f32::NAN;
        assert!(!c.is_checked());
        assert_eq!(c.check_once(&mut check), Err(()));
        assert_eq!(c.check_once(&mut check), Err(()));
        assert_eq!(
            calls, 3,
            "checked once while unchanged, again after a change"
        );
        let d = Checked::new(vec![0.0f32]);
        assert_eq!(d.check_once(|_| Ok::<(), ()>(())), Ok(()));
        assert!(d.clone().is_checked());
        assert!(!Checked::new(1).is_checked());
        assert_eq!(Checked::from(3).into_inner(), 3);
    }
}
