//! The comparable figures of memscope sweep (for compare, history and the Prometheus export).

use super::SweepResult;
use crate::view::figure::{Figure, Figures};

impl Figures for SweepResult {
    fn figures(&self) -> Vec<Figure> {
        Vec::new()
    }
}
