//! The sampling rules the experiment rooms share: when a measured point counts as
//! unstable (the latency ladder, MLP and TLB sweeps flag and re-measure by the same rule).

/// A point whose trials spread more than this (robust %, see `Summary::spread_pct`) is
/// measured again; if it still does, it is flagged unstable.
pub(crate) const UNSTABLE_SPREAD_PCT: f64 = 10.0;
