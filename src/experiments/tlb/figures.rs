//! The comparable figures of tlb (for compare, history and the Prometheus export).

use super::TlbResult;
use crate::view::figure::{Figure, Figures};

impl Figures for TlbResult {
    fn figures(&self) -> Vec<Figure> {
        Vec::new()
    }
}
