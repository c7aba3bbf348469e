//! JSON exporter: the whole report as one pretty-printed document (see docs/DESIGN.md,
//! "Output contract").

use super::Report;

pub fn serialize(report: &Report) -> Vec<u8> {
    to_bytes(report)
}

/// Any of memscope's documents (a report, a comparison, a history listing), pretty-printed
/// with a final newline.
pub fn to_bytes<T: serde::Serialize>(document: &T) -> Vec<u8> {
    let mut bytes =
        serde_json::to_vec_pretty(document).expect("memscope's documents always serialise");
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Settings;
    use crate::topology::Machine;

    #[test]
    fn counters_round_trip_and_are_left_out_when_not_asked_for() {
        let mut report = Report::new(Machine::default(), Settings::default());
        report.experiments.latency =
            Some(crate::experiments::latency::samples::latency_counted(false));
        let text = String::from_utf8(serialize(&report)).unwrap();
        assert!(!text.contains("\"counters\""), "{text}");

        report.experiments.latency =
            Some(crate::experiments::latency::samples::latency_counted(true));
        report.experiments.stride = Some(crate::experiments::stride::samples::stride_counted(true));
        let mut tlb = crate::experiments::tlb::samples::tlb();
        tlb.rows[0].counters = Some(crate::counters::samples::access_counts(0.5));
        report.experiments.tlb = Some(tlb);
        let back: Report = serde_json::from_slice(&serialize(&report)).unwrap();
        let (sent, got) = (&report.experiments, &back.experiments);
        let latency = |e: &crate::report::Experiments| {
            let l = e.latency.as_ref().unwrap();
            let random = l.random_points.as_ref().unwrap();
            (l.points.iter().chain(random))
                .map(|p| p.counters.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(latency(sent), latency(got));
        let stride = |e: &crate::report::Experiments| {
            let rows = &e.stride.as_ref().unwrap().rows;
            rows.iter().map(|r| r.counters.clone()).collect::<Vec<_>>()
        };
        assert_eq!(stride(sent), stride(got));
        let tlb = |e: &crate::report::Experiments| {
            let rows = &e.tlb.as_ref().unwrap().rows;
            rows.iter().map(|r| r.counters.clone()).collect::<Vec<_>>()
        };
        assert_eq!(tlb(sent), tlb(got));
        let value: serde_json::Value = serde_json::from_slice(&serialize(&report)).unwrap();
        let l2 = &value["experiments"]["latency"]["points"][0]["counters"]["levels"][1];
        assert_eq!(l2["level"], "l2");
        assert!(l2["per_access"].is_null());
        assert_eq!(l2["not_supported"], "not supported: no generic L2 event");
    }
}
