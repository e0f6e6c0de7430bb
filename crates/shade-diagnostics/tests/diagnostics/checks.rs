//! Proactive checks and the anomaly wrapper: no false alarms on sound inputs, the
//! expected codes on unsound ones, rendering and the result forms.

use ndarray::{Array1, Array2, array};
use shade_autodiff::Duplicated;
use shade_autodiff::tensor::{self, TapeBuffers};
use shade_diagnostics::check::Findings;
use shade_diagnostics::{
    Diagnostic, Severity, check_finite, check_gcn_normalisation, check_graph_features,
    check_shadow_zeroed, detect_anomaly,
};
use shade_graph::{GcnNorm, Graph, csbm, split_per_class};

#[test]
fn a_sound_setup_has_no_findings() {
    let ds = csbm(60, 3, 5, 4.0, 1.0, 7).unwrap();
    let split = split_per_class(&ds.labels, 3, 5, 10, 10, 0).unwrap();
    let (train, _, _) = split.masks(60);
    let f = check_graph_features(&ds.graph, &ds.features, &ds.labels, 3, &train);
    assert!(f.is_clean(), "{f}");
    assert_eq!(f.render(), "no problems found\n");
    assert!(check_gcn_normalisation(&ds.graph, GcnNorm::default()).is_clean());
    assert!(check_finite("features", &ds.features).is_clean());
    assert!(check_shadow_zeroed("dw", &Array2::<f64>::zeros((3, 3))).is_clean());
}

#[test]
fn isolated_nodes_are_fine_with_self_loops() {
    let g = Graph::from_edges(4, &[(0, 1)]).unwrap();
    assert!(check_gcn_normalisation(&g, GcnNorm::default()).is_clean());
    let f = check_gcn_normalisation(
        &g,
        GcnNorm {
            add_self_loops: false,
            ..GcnNorm::default()
        },
    );
    // Node 0 has no incoming edge either (the edge is 0 -> 1).
    assert_eq!(f.codes(), ["SHADE-W0501"]);
    assert!(f.warnings[0].message.starts_with("3 of 4 nodes"));
    assert!(f.warnings[0].notes[0].ends_with("[0, 2, 3]"));
    assert!(f.is_ok());
}

#[test]
fn findings_separate_errors_from_warnings() {
    let g = Graph::from_edges(3, &[(0, 1), (1, 2)]).unwrap();
    let x = Array2::<f32>::zeros((3, 2));
    // Class 1 never appears in training: a warning only.
    let f = check_graph_features(&g, &x, &[0, 1, 0], 2, &[true, false, true]);
    assert_eq!((f.errors.len(), f.warnings.len()), (0, 1));
    assert_eq!(f.warnings[0].severity, Severity::Warning);
    let warnings = f.into_result().unwrap();
    assert_eq!(warnings[0].code, "SHADE-W0503");
    // Two errors: the first comes back with a count of the others.
    let f = check_graph_features(&g, &x, &[0, 9, 9], 2, &[false; 3]);
    assert_eq!(f.codes(), ["SHADE-E0503", "SHADE-E0505"]);
    let e = f.into_result().unwrap_err();
    assert_eq!(e.code, "SHADE-E0503");
    assert_eq!(
        e.notes.last().unwrap(),
        "1 more error found by the same check"
    );
    // Locations point at the caller.
    assert!(e.location.unwrap().file().ends_with("checks.rs"));
}

#[test]
fn non_finite_positions_are_row_major() {
    let mut x = Array2::<f64>::zeros((3, 4));
    x[[1, 2]] = f64::NEG_INFINITY;
    x[[2, 0]] = f64::NAN;
    let f = check_finite("x", &x);
    assert_eq!(
        f.errors[0].message,
        "`x` holds the non-finite value -inf at [1, 2]"
    );
    assert_eq!(f.errors[0].notes, ["2 non-finite values in all"]);
}

#[test]
fn detect_anomaly_passes_results_through_and_restores_the_flag() {
    let x = array![1.0, 4.0];
    let mut dx = Array1::zeros(2);
    let mut bufs = TapeBuffers::new();
    let y = detect_anomaly(&mut bufs, |b| {
        tensor::gradient(
            b,
            |t, (x,)| {
                let s = t.sqrt(x)?;
                t.sum(s)
            },
            (Duplicated(&x, &mut dx),),
        )
    })
    .unwrap();
    assert_eq!(y, 3.0);
    assert_eq!(dx, array![0.5, 0.25]);
    assert!(!bufs.anomaly());
    // Errors other than anomalies get the caller's location.
    let e = detect_anomaly(&mut bufs, |b| {
        tensor::gradient(b, |t, (x,)| t.exp(x), (Duplicated(&x, &mut dx),))
    })
    .unwrap_err();
    assert_eq!(e.code, "SHADE-E0104");
    assert!(e.location.unwrap().file().ends_with("checks.rs"));
}

#[test]
fn findings_render_with_a_summary() {
    let mut f = Findings::new();
    f.push(Diagnostic::error(
        "SHADE-E0505",
        "the training mask selects no node",
    ));
    f.push(Diagnostic::warning(
        "SHADE-W0503",
        "1 of 2 classes have no training node: [1]",
    ));
    let text = f.render();
    assert!(text.starts_with("error[SHADE-E0505]: the training mask selects no node\n"));
    assert!(text.contains("\nwarning[SHADE-W0503]: "));
    assert!(text.ends_with("1 error and 1 warning found\n"));
}
