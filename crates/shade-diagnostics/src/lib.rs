//! Every failure becomes a clear, coded, actionable message: the error catalogue,
//! rendering, gradcheck, anomaly mode, proactive checks and the compatibility matrix.
