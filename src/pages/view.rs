//! (view: next)
