//! The integration tests of shade-gnn, one module per area, in one test binary
//! (one link instead of one per file; `cargo test -p shade-gnn --test gnn`).

mod citeseer;
mod cora;
mod save_load;
mod sparse_input;
mod users_model;
