//! The comparable figures of bandwidth (for compare, history and the Prometheus export).

use super::BandwidthResult;
use crate::view::figure::{Figure, Figures};

impl Figures for BandwidthResult {
    fn figures(&self) -> Vec<Figure> {
        Vec::new()
    }
}
