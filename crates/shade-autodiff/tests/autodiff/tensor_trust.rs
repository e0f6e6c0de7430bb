//! What the tensor tape refuses instead of a silently wrong derivative: numbers read
//! out of a tracked value while recording (`SHADE-E0115`, unless detached), and a
//! custom rule's adjoint or tangent of the wrong shape (`SHADE-E0116`, not a panic
//! inside ndarray).

use ndarray::{Array1, Array2, ArrayD, ArrayViewD, array};
use shade_autodiff::tensor::{self, RuleSlot, TapeBuffers, TensorRule};
use shade_autodiff::{AdError, AdResult, Const, Duplicated};

/// Edge weights transformed in user code from a tracked value, then fed back as a
/// constant: the founding failure (a zero gradient, finite differences disagreeing),
/// refused with the line of the read.
#[test]
fn reading_a_tracked_value_while_recording_is_refused_with_its_line() {
    let w = array![0.5, -1.0, 2.0];
    let x = array![1.0, 2.0, 3.0];
    let mut dw = Array1::zeros(3);
    let line = line!() + 5;
    let e = tensor::gradient(
        &mut TapeBuffers::new(),
        |t, (w, x)| {
            let e = t.exp(w)?;
            let numbers = t.value(e)?.to_owned();
            let c = t.constant(&numbers);
            let p = t.mul(c, x)?;
            t.sum(p)
        },
        (Duplicated(&w, &mut dw), Const(&x)),
    )
    .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0115");
    let AdError::TrackedValueRead { location, mode, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!((location.line(), *mode), (line, "reverse mode"));
    assert!(e.to_string().contains("shape [3]"), "{e}");
    // Nothing was accumulated into the shadow: the call failed before its sweep.
    assert_eq!(dw, Array1::<f64>::zeros(3));
    // Forward mode refuses the read too (its tangent would be cut the same way).
    let mut tw = Array1::ones(3);
    let e = tensor::pushforward(
        &mut TapeBuffers::new(),
        |t, (w,)| {
            let _ = t.value(w)?;
            Ok(w)
        },
        (Duplicated(&w, &mut tw),),
    )
    .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0115");
}

#[test]
fn constants_detached_values_and_evaluations_can_be_read() {
    let w = array![0.5, -1.0, 2.0];
    let x = array![1.0, 2.0, 3.0];
    let mut dw = Array1::zeros(3);
    // d/dw Σ w · stop_gradient(max(w)) · x = max(w) · x.
    let y = tensor::gradient(
        &mut TapeBuffers::new(),
        |t, (w, x)| {
            let m = t.value(x)?.sum(); // a constant: free to read
            assert_eq!(m, 6.0);
            let d = t.detach(w)?;
            assert!(!t.is_tracked(d)?);
            let largest = t.value(d)?.fold(f64::MIN, |a, &b| a.max(b));
            let p = t.mul(w, x)?;
            let s = t.sum(p)?;
            t.scale(s, largest)
        },
        (Duplicated(&w, &mut dw), Const(&x)),
    )
    .unwrap();
    assert_eq!(y, 2.0 * (0.5 - 2.0 + 6.0));
    assert_eq!(dw, array![2.0, 4.0, 6.0]);
    // A detached value passes no gradient: d/dw Σ detach(w) = 0.
    dw.fill(0.0);
    tensor::gradient(
        &mut TapeBuffers::new(),
        |t, (w,)| {
            let d = t.detach(w)?;
            let s = t.sum(d)?;
            let z = t.sum(w)?;
            let z = t.scale(z, 0.0)?;
            t.add(s, z)
        },
        (Duplicated(&w, &mut dw),),
    )
    .unwrap();
    assert_eq!(dw, Array1::<f64>::zeros(3));
    // An evaluation tracks nothing: every value can be read.
    let v = tensor::value(
        &mut TapeBuffers::new(),
        |t, (w,)| {
            let e = t.exp(w)?;
            let n = t.value(e)?.len();
            t.scale(e, n as f64)
        },
        (Duplicated(&w, &mut dw),),
    )
    .unwrap();
    assert_eq!(v.len(), 3);
}

/// `y = x + b`, `b` broadcast over the rows of `x`; the reverse rule forgets to sum
/// the adjoint of `b` back over the rows (or, with `good`, does).
struct AddBias {
    good: bool,
}

impl TensorRule<f64> for AddBias {
    fn name(&self) -> &'static str {
        "add_bias"
    }
    fn forward(&self, x: &[ArrayViewD<'_, f64>]) -> AdResult<ArrayD<f64>> {
        Ok(&x[0] + &x[1])
    }
    fn vjp(
        &self,
        _x: &[ArrayViewD<'_, f64>],
        _y: ArrayViewD<'_, f64>,
        g: ArrayViewD<'_, f64>,
        input: usize,
        mut dx: RuleSlot<'_, f64>,
    ) -> AdResult<()> {
        if input == 1 && self.good {
            dx.add(&g.sum_axis(ndarray::Axis(0)))
        } else {
            dx.add(&g)
        }
    }
    fn jvp(
        &self,
        _x: &[ArrayViewD<'_, f64>],
        _y: ArrayViewD<'_, f64>,
        t: &[Option<ArrayViewD<'_, f64>>],
        mut ty: RuleSlot<'_, f64>,
    ) -> AdResult<()> {
        // Wrong unless both tangents are given: the bias's tangent alone is [3].
        match (&t[0], &t[1], self.good) {
            (Some(a), Some(b), _) => ty.assign(&(a + b)),
            (None, Some(b), false) => ty.assign(b),
            (None, Some(b), true) => ty.assign(&b.broadcast(ty.shape()).expect("rows").to_owned()),
            (Some(a), None, _) => ty.assign(a),
            (None, None, _) => Ok(()),
        }
    }
}

#[test]
fn a_custom_rule_with_a_wrongly_shaped_adjoint_is_a_coded_error_naming_it() {
    let x = Array2::from_elem((2, 3), 1.0);
    let b = array![0.1, 0.2, 0.3];
    let mut db = Array1::zeros(3);
    let run = |good: bool, db: &mut Array1<f64>| {
        tensor::gradient(
            &mut TapeBuffers::new(),
            |t, (x, b)| {
                let y = t.custom(AddBias { good }, &[x, b])?;
                t.sum(y)
            },
            (Const(&x), Duplicated(&b, db)),
        )
    };
    let e = run(false, &mut db).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0116");
    assert_eq!(
        e.to_string(),
        "custom rule `add_bias` gave the adjoint of input 1 of shape [2, 3], but that array has shape [3]"
    );
    // The right rule: d/db Σ (x + b) = 2 per entry (two rows).
    db.fill(0.0);
    assert!((run(true, &mut db).unwrap() - 7.2).abs() < 1e-12);
    assert_eq!(db, array![2.0, 2.0, 2.0]);
    // Forward mode: a tangent of the bias's shape for a [2, 3] output.
    let mut tb = Array1::ones(3);
    let e = tensor::pushforward(
        &mut TapeBuffers::new(),
        |t, (x, b)| t.custom(AddBias { good: false }, &[x, b]),
        (Const(&x), Duplicated(&b, &mut tb)),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "custom rule `add_bias` gave the tangent of its output of shape [3], but that array has shape [2, 3]"
    );
    let (_, ty) = tensor::pushforward(
        &mut TapeBuffers::new(),
        |t, (x, b)| t.custom(AddBias { good: true }, &[x, b]),
        (Const(&x), Duplicated(&b, &mut tb)),
    )
    .unwrap();
    assert_eq!(ty, Array2::from_elem((2, 3), 1.0).into_dyn());
}
