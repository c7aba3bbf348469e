//! The comparable figures of files (for compare, history and the Prometheus export).

use super::FilesResult;
use crate::view::figure::{Figure, Figures};

impl Figures for FilesResult {
    fn figures(&self) -> Vec<Figure> {
        Vec::new()
    }
}
