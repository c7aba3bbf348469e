//! The comparable figures of stride (for compare, history and the Prometheus export).

use super::StrideResult;
use crate::view::figure::{Figure, Figures};

impl Figures for StrideResult {
    fn figures(&self) -> Vec<Figure> {
        Vec::new()
    }
}
