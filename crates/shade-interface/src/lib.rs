//! One differentiation API over many backends, in the spirit of Julia's
//! DifferentiationInterface: backend markers, the eight operators, preparation and
//! contexts. Given the native marker it calls `shade-autodiff` directly.
