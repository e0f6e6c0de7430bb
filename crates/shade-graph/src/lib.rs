//! Graphs as constants: structure, node/edge/graph data, normalisation, transforms,
//! batching, sampling, generators and readers.
//!
//! This crate knows nothing about differentiation: everything it produces is a plain
//! array that a differentiated program reads as a constant.
