//! Graph neural networks on shade's AD core: message passing, layers, parameters and
//! state, optimisers, losses and training.

pub mod report;
