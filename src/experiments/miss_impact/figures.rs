//! The comparable figures of miss_impact (for compare, history and the Prometheus export).

use super::MissImpactResult;
use crate::view::figure::{Figure, Figures};

impl Figures for MissImpactResult {
    fn figures(&self) -> Vec<Figure> {
        Vec::new()
    }
}
