//! The comparable figures of rob (for compare, history and the Prometheus export).

use super::RobResult;
use crate::view::figure::{Figure, Figures};

impl Figures for RobResult {
    fn figures(&self) -> Vec<Figure> {
        Vec::new()
    }
}
