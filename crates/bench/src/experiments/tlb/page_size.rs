//! One page size's TLB curve: measured with its SAXPY and MLP rows, the knees to refine,
//! and the curve turned into the result's rows and levels.

use super::*;

/// One page size's curve in `arena`, with its SAXPY rows and MLP row (labelled with the
/// page size where it is not 4 KiB).
pub(super) fn measure_page_size(
    run: &Run,
    arena: &Arena,
    max_pages: u64,
    dense: &mut Dense,
) -> (Curve, Vec<SaxpyTlbRow>, Option<MlpByPageSize>) {
    let (config, timer, progress) = (run.config, run.sampler.timer, run.progress);
    let page = arena.obtained().page_bytes;
    let curve = measure_curve(run, arena, page, max_pages, dense);
    let label = match page == PagePolicy::Base.page_bytes() {
        true => String::new(),
        false => format!(", {} pages", Bytes(page)),
    };
    let saxpy = saxpy_rows(config, arena, page, &label, timer, progress);
    let mlp = mlp_row(config, arena, page, timer, run.machine, progress);
    (curve, saxpy, mlp)
}

/// The curve's points as rows; the unstable ones named in `unstable`.
pub(super) fn rows_of(
    curve: &Curve,
    to_cycles: impl Fn(f64) -> f64,
    rows: &mut Vec<TlbRow>,
    unstable: &mut Vec<String>,
) {
    for point in &curve.points {
        if point.unstable {
            unstable.push(format!(
                "{} pages of {}",
                point.pages,
                Bytes(curve.page_bytes)
            ));
        }
        rows.push(TlbRow {
            page_bytes: curve.page_bytes,
            pages: point.pages,
            ns: point.ns,
            cycles: to_cycles(point.ns),
            dense_ns: point.dense_ns,
            tlb_ns: point.ns - point.dense_ns,
            spread_pct: point.spread_pct,
            counters: point.counters.clone(),
        });
    }
}

/// The curve's levels beside what CPUID reports, with a warning where a knee is far from
/// it or the page walk did not stand out.
pub(super) fn levels_of(
    curve: &Curve,
    machine: &Machine,
    to_cycles: impl Fn(f64) -> f64,
    levels: &mut Vec<TlbLevel>,
    warnings: &mut Vec<WarningKind>,
) {
    let cpuid = cpuid_levels(machine, curve.page_bytes);
    for (k, found) in curve.levels.iter().enumerate() {
        let cpuid_entries = if found.name == PAGE_WALK {
            None
        } else {
            cpuid.get(k).map(|&(_, e)| e)
        };
        if let (Some(measured), Some(reported)) = (found.entries, cpuid_entries) {
            let ratio = measured as f64 / f64::from(reported);
            if (ratio - 1.0).abs() > CPUID_MISMATCH {
                warnings.push(WarningKind::LevelMismatch(format!(
                    "{} with {} pages: the knee is at {measured} pages but CPUID reports \
                     {reported} entries; part of the TLB may be shared (SMT sibling, \
                     another guest) or indexed unevenly",
                    found.name,
                    Bytes(curve.page_bytes)
                )));
            }
        }
        levels.push(TlbLevel {
            page_bytes: curve.page_bytes,
            name: found.name.clone(),
            entries: found.entries,
            reach_bytes: found.entries.map(|e| e * curve.page_bytes),
            miss_ns: found.miss_ns,
            miss_cycles: found.miss_ns.map(&to_cycles),
            cpuid_entries,
            tlb_ns: found.tlb_ns,
            transition_pages: found.transition,
            miss_ns_range: found.miss_range,
        });
    }
    if curve.walk_expected && !curve.levels.iter().any(|l| l.name == PAGE_WALK) {
        warnings.push(WarningKind::LevelMismatch(format!(
            "the {} curve went past every TLB CPUID reports ({} pages) but only {} \
             level(s) stood out from the noise; the page walk may be merged with the last",
            Bytes(curve.page_bytes),
            curve.points.last().map_or(0, |p| p.pages),
            curve.levels.len()
        )));
    }
}

/// The page counts to measure between the brackets of knees still wider than
/// `REFINED_WIDTH`, less those measured already.
pub(super) fn knees_to_refine(levels: &[FoundTlbLevel], measured: &[Point]) -> Vec<u64> {
    (levels.iter())
        .filter_map(|l| l.knee)
        .filter(|&(lo, hi)| (hi - lo) as f64 > (lo as f64 * REFINED_WIDTH).max(1.0))
        .flat_map(|(lo, hi)| between(lo, hi, REFINE_POINTS))
        .filter(|p| !measured.iter().any(|e| e.pages == *p))
        .collect()
}
