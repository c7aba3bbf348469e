//! The comparable figures of mlp (for compare, history and the Prometheus export).

use super::MlpResult;
use crate::view::figure::{Figure, Figures};

impl Figures for MlpResult {
    fn figures(&self) -> Vec<Figure> {
        Vec::new()
    }
}
