//! The comparable figures of memscope stat (for compare, history and the Prometheus export).

use super::StatResult;
use crate::view::figure::{Figure, Figures};

impl Figures for StatResult {
    fn figures(&self) -> Vec<Figure> {
        Vec::new()
    }
}
