//! The comparable figures of latency (for compare, history and the Prometheus export).

use super::LatencyResult;
use crate::view::figure::{Figure, Figures};

impl Figures for LatencyResult {
    fn figures(&self) -> Vec<Figure> {
        Vec::new()
    }
}
