//! What a measuring run carries besides its results, shared by the experiments and the
//! report: progress shown on stderr (`progress`) and the typed quality warnings raised
//! while measuring (`warnings`). Nothing here imports an experiment or an exporter.

pub mod context;
pub mod progress;
pub mod warnings;
