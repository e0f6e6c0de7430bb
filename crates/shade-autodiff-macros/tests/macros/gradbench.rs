//! GradBench's objectives (written once, in `benches/src/gradbench/`), compiled here so
//! that the compile-time engine's own test run checks them: each module holds the
//! compile-time form next to the tape's form of the same formula, and its tests assert
//! that the generated gradients equal the tape's (to 1e-10 relative) and the values
//! agree. The tests live in the modules, so `cargo test -p shade-benches` runs them too;
//! `support` is the helpers they share (a generator, GradBench's closeness measure).

#[path = "../../../../benches/src/gradbench/ba.rs"]
#[allow(dead_code, unreachable_pub)]
mod ba;
#[path = "../../../../benches/src/gradbench/gmm.rs"]
#[allow(dead_code, unreachable_pub)]
mod gmm;
#[path = "../../../../benches/src/gradbench/ht.rs"]
#[allow(dead_code, unreachable_pub)]
mod ht;
#[path = "../../../../benches/src/gradbench/kmeans.rs"]
#[allow(dead_code, unreachable_pub)]
mod kmeans;
#[path = "../../../../benches/src/gradbench/lse.rs"]
#[allow(dead_code, unreachable_pub)]
mod lse;
#[path = "../../../../benches/src/gradbench/lstm.rs"]
#[allow(dead_code, unreachable_pub)]
mod lstm;
#[path = "../../../../benches/src/gradbench/support.rs"]
#[allow(dead_code, unreachable_pub)]
mod support;
