//! The page-local chase order's default window, shared by the latency ladder (its
//! `--window-pages` flag) and latency under load (which has no such flag and follows the
//! ladder's default, so the two idle ends agree).

/// Pages (4 KiB) per window of the page-local order, as the flag's text: 64 fits every
/// first-level DTLB memscope knows of; it is also multichase's default locality.
pub(crate) const DEFAULT_WINDOW_PAGES: &str = "64";
