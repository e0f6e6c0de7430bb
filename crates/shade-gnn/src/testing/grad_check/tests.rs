//! Tests of the layer gradient check: probe layers with right and wrong rules, kinks,
//! and outputs whose shape changes within the step.

use super::*;
use crate::layer::{Env, Input};
use crate::params::{ParamVars, StateScope};
use ndarray::{ArrayViewD, Axis};
use shade_autodiff::AdResult;
use shade_autodiff::tensor::{RuleSlot, Tape, TensorRule};

/// `x²` elementwise, or `relu(x)`, or `x²` with a rule that forgets the factor 2; or
/// `x ⊙ w` with a `[3]` parameter `w` broadcast over the rows, on the input or (when
/// `on_edges`) on the edge features, with a rule whose adjoint is doubled in one
/// entry of `w` (`wrong_w`) or of the scaled array (`wrong_x`); or `x²` (rightly
/// or wrongly) of the rows whose first entry exceeds `threshold`, so that the
/// output's shape changes where a row crosses it (as a pooling by score does).
#[derive(Clone, Copy)]
enum Probe {
    Square,
    Keep {
        threshold: f64,
        wrong: bool,
    },
    Relu,
    WrongSquare,
    Scale {
        on_edges: bool,
        wrong_w: Option<usize>,
        wrong_x: Option<usize>,
    },
}

struct HalfSquareRule;

impl TensorRule<f64> for HalfSquareRule {
    fn name(&self) -> &'static str {
        "wrong_square"
    }
    fn forward(&self, x: &[ArrayViewD<'_, f64>]) -> AdResult<ArrayD<f64>> {
        Ok(x[0].mapv(|v| v * v))
    }
    fn vjp(
        &self,
        x: &[ArrayViewD<'_, f64>],
        _y: ArrayViewD<'_, f64>,
        g: ArrayViewD<'_, f64>,
        _input: usize,
        mut dx: RuleSlot<'_, f64>,
    ) -> AdResult<()> {
        dx.add(&(&g * &x[0]))
    }
    fn jvp(
        &self,
        x: &[ArrayViewD<'_, f64>],
        _y: ArrayViewD<'_, f64>,
        t: &[Option<ArrayViewD<'_, f64>>],
        mut ty: RuleSlot<'_, f64>,
    ) -> AdResult<()> {
        match &t[0] {
            Some(t) => ty.assign(&(t * &x[0])),
            None => Ok(()),
        }
    }
}

/// `x ⊙ w` (`[n, f]` by `[f]`), its adjoints doubled in entry `wrong_x` of `x`'s or
/// `wrong_w` of `w`'s.
struct ScaleRule {
    wrong_x: Option<usize>,
    wrong_w: Option<usize>,
}

impl TensorRule<f64> for ScaleRule {
    fn name(&self) -> &'static str {
        "scale"
    }
    fn forward(&self, x: &[ArrayViewD<'_, f64>]) -> AdResult<ArrayD<f64>> {
        Ok(&x[0] * &x[1])
    }
    fn vjp(
        &self,
        x: &[ArrayViewD<'_, f64>],
        _y: ArrayViewD<'_, f64>,
        g: ArrayViewD<'_, f64>,
        input: usize,
        mut dx: RuleSlot<'_, f64>,
    ) -> AdResult<()> {
        let (mut d, wrong) = match input {
            0 => (&g * &x[1], self.wrong_x),
            _ => ((&g * &x[0]).sum_axis(Axis(0)), self.wrong_w),
        };
        if let Some(v) = wrong.and_then(|k| d.as_slice_mut()?.get_mut(k)) {
            *v *= 2.0;
        }
        dx.add(&d)
    }
    fn jvp(
        &self,
        x: &[ArrayViewD<'_, f64>],
        y: ArrayViewD<'_, f64>,
        t: &[Option<ArrayViewD<'_, f64>>],
        mut ty: RuleSlot<'_, f64>,
    ) -> AdResult<()> {
        let mut d = ArrayD::zeros(y.raw_dim());
        if let Some(t) = &t[0] {
            d += &(t * &x[1]);
        }
        if let Some(t) = &t[1] {
            d += &(&x[0] * t);
        }
        ty.assign(&d)
    }
}

impl Layer<f64> for Probe {
    fn name(&self) -> &'static str {
        "Probe"
    }
    fn init(&self, rng: &mut StdRng) -> (Params<f64>, State<f64>) {
        let p = match self {
            Probe::Scale { .. } => Params::new().with(
                "w",
                ArrayD::from_shape_simple_fn(IxDyn(&[3]), || 0.5 + rng.random::<f64>()),
            ),
            _ => Params::new(),
        };
        (p, State::new())
    }
    fn forward<'a>(
        &self,
        t: &mut Tape<'a, f64>,
        env: &mut Env<'a, '_, f64>,
        x: Input<'a, f64>,
        p: ParamVars<'_>,
        _st: StateScope<'_, f64>,
    ) -> crate::GnnResult<Var> {
        let x = x.dense(t)?;
        Ok(match *self {
            Probe::Square => t.mul(x, x)?,
            Probe::Keep { threshold, wrong } => {
                let rows: Vec<usize> = {
                    let d = t.detach(x)?;
                    let v = t.value(d)?;
                    (0..v.shape()[0])
                        .filter(|&i| v[[i, 0]] > threshold)
                        .collect()
                };
                let kept = t.index_select_owned(x, rows)?;
                if wrong {
                    t.custom(HalfSquareRule, &[kept])?
                } else {
                    t.mul(kept, kept)?
                }
            }
            Probe::Relu => t.relu(x)?,
            Probe::WrongSquare => t.custom(HalfSquareRule, &[x])?,
            Probe::Scale {
                on_edges,
                wrong_w,
                wrong_x,
            } => {
                let target = match env.edge_attr {
                    Some(e) if on_edges => e,
                    _ => x,
                };
                let w = p.get("w")?;
                t.custom(ScaleRule { wrong_x, wrong_w }, &[target, w])?
            }
        })
    }
}

/// The check of a `Probe::Scale` from `seed`: 6 × 3 input features, 9 × 3 edge
/// features, so 3 + 18 + 27 coordinates in three blocks.
fn scale_check(seed: u64) -> GradCheck<'static> {
    GradCheck {
        seed,
        edge_attr: Some(random_features(9, 3, seed + 1000).into_dyn()),
        ..GradCheck::new(None, &random_features(6, 3, seed))
    }
}

fn scale(on_edges: bool, wrong_w: Option<usize>, wrong_x: Option<usize>) -> Probe {
    Probe::Scale {
        on_edges,
        wrong_w,
        wrong_x,
    }
}

#[test]
fn a_wrong_rule_fails_the_check_and_a_right_one_passes() {
    let x = random_features(4, 3, 1);
    let strict = GradCheck {
        max_kink_fraction: 0.0,
        ..GradCheck::new(None, &x)
    };
    strict.run(&Probe::Square).unwrap();
    strict.run(&Probe::Relu).unwrap();
    let err = strict.run(&Probe::WrongSquare).unwrap_err();
    assert!(err.starts_with("Probe: gradient of input["), "{err}");
    assert!(err.contains("one-sided slopes"), "{err}");
    // The dense direction alone sees it.
    let obj = Objective::new(&strict, &Probe::WrongSquare).unwrap();
    assert_eq!(
        strict.along(&obj, &obj.directions()[0]),
        Ok(Along::Disagrees)
    );
}

/// One wrong entry among 48 coordinates (of a parameter, of the input, of the edge
/// features): the dense random direction alone sees it at every one of 100 seeds
/// (its part in that entry would have to be almost exactly 0 to miss it), and the
/// check then names the entry as the per-coordinate check always did.
#[test]
fn an_error_in_one_coordinate_is_caught_by_the_dense_direction() {
    for (probe, name) in [
        (scale(false, Some(1), None), "w[1]"),
        (scale(false, None, Some(7)), "input[7]"),
        (scale(true, None, Some(11)), "edge_attr[11]"),
        (scale(true, Some(2), None), "w[2]"),
    ] {
        for seed in 0..100 {
            let check = scale_check(seed);
            let obj = Objective::new(&check, &probe).unwrap();
            let dense = &obj.directions()[0];
            assert_eq!(dense.parts.len(), 3);
            assert_eq!(
                check.along(&obj, dense),
                Ok(Along::Disagrees),
                "{name}, seed {seed}"
            );
            let err = check.run(&probe).unwrap_err();
            let want = format!("Probe: gradient of {name} is ");
            assert!(err.starts_with(&want), "seed {seed}: {err}");
            assert!(err.contains("one-sided slopes"), "{err}");
        }
    }
    // Edge features that are not checked are not judged.
    let unchecked = GradCheck {
        check_edge_attr: false,
        ..scale_check(0)
    };
    unchecked.run(&scale(true, None, Some(11))).unwrap();
    unchecked.run(&scale(true, Some(2), None)).unwrap_err();
}

/// A right rule agrees along both directions at every seed, in four extra
/// evaluations (the per-coordinate check is never reached).
#[test]
fn a_right_rule_agrees_along_both_directions_in_four_evaluations() {
    for on_edges in [false, true] {
        let probe = scale(on_edges, None, None);
        for seed in 0..100 {
            let check = scale_check(seed);
            let obj = Objective::new(&check, &probe).unwrap();
            let dirs = obj.directions();
            assert_eq!(dirs.len(), 2);
            for dir in &dirs {
                assert_eq!(check.along(&obj, dir), Ok(Along::Agrees), "seed {seed}");
            }
            // The gradient pass, then a central difference per direction.
            assert_eq!(obj.evaluations.get(), 1 + 2 * 2);
            check.run(&probe).unwrap();
        }
    }
}

/// Directions differ between data (every case of a property test draws its own)
/// and repeat for the same data.
#[test]
fn directions_follow_the_data() {
    let probe = scale(false, None, None);
    let dense = |check: &GradCheck<'_>| {
        let obj = Objective::new(check, &probe).unwrap();
        obj.directions().swap_remove(0).parts
    };
    assert_eq!(dense(&scale_check(3)), dense(&scale_check(3)));
    let mut other = scale_check(3);
    other.x[[0, 0]] += 1e-3;
    assert_ne!(dense(&scale_check(3)), dense(&other));
}

/// `check_array_gradient`: a right gradient in the four evaluations of the two
/// directions; one wrong entry among 40 is caught and named.
#[test]
fn an_array_gradient_is_checked_along_directions_then_per_entry() {
    let calls = std::cell::Cell::new(0);
    let f = |x: &ArrayD<f64>| {
        calls.set(calls.get() + 1);
        x.mapv(f64::sin).sum()
    };
    for seed in 0..50 {
        let x = random_features(8, 5, seed).into_dyn();
        calls.set(0);
        check_array_gradient(&x, &x.mapv(f64::cos), f).unwrap();
        assert_eq!(calls.get(), 4);
        let mut wrong = x.mapv(f64::cos);
        wrong[[5, 2]] *= 2.0;
        calls.set(0);
        let err = check_array_gradient(&x, &wrong, f).unwrap_err();
        assert!(err.starts_with("entry 27: "), "seed {seed}: {err}");
        assert!(calls.get() > 4);
    }
}

#[test]
fn a_shape_that_changes_within_the_step_is_a_discontinuity_not_an_error() {
    // Row 1's first entry sits 1e-7 above the threshold: a step of 1e-6 along it
    // (or along a dense direction) drops the row, and the output has 3 rows, not 4.
    let mut x = random_features(4, 3, 5);
    for i in 0..4 {
        x[[i, 0]] = [0.9, 0.5 + 1e-7, 0.8, 0.7][i];
    }
    let keep = |wrong| Probe::Keep {
        threshold: 0.5,
        wrong,
    };
    let check = GradCheck::new(None, &x);
    let right = keep(false);
    let obj = Objective::new(&check, &right).unwrap();
    assert!(matches!(
        obj.moved(Shift::Coord(Block::Input, 3), -1e-6),
        Err(Halt::Reshaped)
    ));
    check.run(&keep(false)).unwrap();
    // The changing shape hides no wrong rule.
    let err = check.run(&keep(true)).unwrap_err();
    assert!(err.contains("gradient of input["), "{err}");
    // Exactly on the threshold's edge, even the smallest step changes the shape:
    // that coordinate is not judged, and it is one of twelve.
    x[[1, 0]] = 0.5 + 1e-12;
    GradCheck::new(None, &x).run(&keep(false)).unwrap();
}

#[test]
fn kinks_are_skipped_only_up_to_the_allowed_fraction() {
    // Four of twelve inputs exactly at relu's kink.
    let mut x = random_features(4, 3, 2);
    x.row_mut(1).fill(0.0);
    x[[3, 0]] = 0.0;
    GradCheck::new(None, &x).run(&Probe::Relu).unwrap();
    // The dense direction crosses the kinks, so every coordinate is checked.
    let check = GradCheck::new(None, &x);
    let obj = Objective::new(&check, &Probe::Relu).unwrap();
    assert_eq!(check.along(&obj, &obj.directions()[0]), Ok(Along::Kink));
    let strict = GradCheck {
        max_kink_fraction: 0.25,
        ..GradCheck::new(None, &x)
    };
    let err = strict.run(&Probe::Relu).unwrap_err();
    assert!(err.contains("4 of 12 coordinates sit on a kink"), "{err}");
    // A kink does not hide a wrong rule elsewhere.
    let err = GradCheck::new(None, &x)
        .run(&Probe::WrongSquare)
        .unwrap_err();
    assert!(err.contains("gradient of input["), "{err}");
}
