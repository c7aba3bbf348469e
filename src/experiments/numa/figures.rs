//! The comparable figures of numa (for compare, history and the Prometheus export).

use super::NumaResult;
use crate::view::figure::{Figure, Figures};

impl Figures for NumaResult {
    fn figures(&self) -> Vec<Figure> {
        Vec::new()
    }
}
