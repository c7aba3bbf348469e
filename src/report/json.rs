//! JSON exporter: the whole report as one pretty-printed document (see docs/DESIGN.md,
//! "Output contract").

use super::Report;

pub fn serialize(report: &Report) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(report).expect("the report model always serialises");
    bytes.push(b'\n');
    bytes
}
