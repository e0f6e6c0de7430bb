//! [`SecondOrder`](crate::SecondOrder) backends for `hessian` and `hvp`.
