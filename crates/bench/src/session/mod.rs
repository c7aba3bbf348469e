//! What a measuring run carries besides its results, shared by the experiments and the
//! report: progress shown on stderr (`progress`), the typed quality warnings raised
//! while measuring (`warnings`) and the machine's load during each experiment
//! (`conditions`). Nothing here imports an experiment or an exporter.

pub mod conditions;
pub mod context;
pub mod progress;
pub mod warnings;
