//! The compile-time engine's tests, one binary: each subset row against the tape and
//! central differences in both modes (`subset`), the GradBench objectives
//! (`gradbench`), allocation (`alloc`), the generated API (`api`) and compile errors
//! with our own messages (`ui`).

// The rows exercise the subset's forms on purpose: index loops and `x = x * y`.
#![allow(clippy::needless_range_loop, clippy::assign_op_pattern)]

#[global_allocator]
static ALLOC: shade_test_support::alloc::CountingAlloc = shade_test_support::alloc::CountingAlloc;

mod alloc;
mod api;
mod check;
mod gradbench;
mod subset;
mod ui;
