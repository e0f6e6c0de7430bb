//! The integration tests of shade-gnn, one module per area, in one test binary
//! (one link instead of one per file; `cargo test -p shade-gnn --test gnn`).

mod citeseer;
mod cora;
mod distributed;
#[cfg(feature = "mpi")]
mod distributed_mpi;
mod minibatch;
mod no_panic;
mod save_load;
mod sparse_input;
mod trust;
mod users_model;
