//! Binning a program's accesses into 2 MiB virtual regions (per process), ranking them,
//! and the per-interval values behind the heat-over-time view.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::access::{AccessSpan, MemSample};
use crate::topology::smaps::Mapping;

/// The unit of `pages`: one 2 MiB-aligned stretch of virtual memory, the reach of one
/// x86/Arm huge page.
pub(super) const REGION_BYTES: u64 = 2 << 20;

/// The start of the region holding `addr`.
pub(super) fn region_of(addr: u64) -> u64 {
    addr & !(REGION_BYTES - 1)
}

/// One region and what was seen of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Region {
    pub pid: u32,
    /// The process's command name.
    pub process: String,
    pub start: u64,
    /// The mapping that covers most of the region: a file name, `[heap]`, `[stack]`, `anon`.
    pub mapping: String,
    /// Private anonymous memory (what `pages apply` can back with huge pages).
    pub anonymous: bool,
    /// The ranking signal summed over the run (its unit is the record's `signal`).
    pub value: f64,
    /// Share of all regions' value, percent, and the cumulative share down the ranking.
    pub share_pct: f64,
    pub cumulative_pct: f64,
    /// Precise samples in the region, and those whose access missed a TLB level.
    #[serde(default)]
    pub samples: u64,
    #[serde(default)]
    pub tlb_miss_samples: u64,
    /// Mean sampled latency (cycles) of the region's samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_weight: Option<f64>,
    /// Peak resident memory of the region, and of it in huge pages (THP or hugetlb), KiB.
    pub resident_kb: f64,
    pub huge_kb: f64,
    /// Of the huge-page memory, hugetlb pages (whose accesses smaps does not report).
    #[serde(default)]
    pub hugetlb_kb: f64,
    /// Huge-page memory of the region averaged over the run (each look at the mappings
    /// weighted by the interval it closed; 0 where the region was not mapped yet), KiB:
    /// what the program really ran with, where the peak may have lasted a moment.
    #[serde(default)]
    pub huge_mean_kb: f64,
}

/// Accumulates regions over a run.
#[derive(Debug, Default)]
pub(crate) struct RegionMap {
    regions: HashMap<(u32, u64), Acc>,
    /// The current interval's value per region, for the timeline.
    interval: HashMap<(u32, u64), f64>,
    timeline: Vec<HashMap<(u32, u64), f64>>,
    names: HashMap<u32, String>,
    /// The weight (seconds) of the next looks at the mappings, and the weight each
    /// process was looked at with in all.
    look_weight: Option<f64>,
    looked: HashMap<u32, f64>,
}

#[derive(Debug, Default, Clone)]
struct Acc {
    value: f64,
    samples: u64,
    tlb_miss_samples: u64,
    weight_sum: f64,
    weighted: u64,
    mapping: String,
    mapping_overlap: u64,
    anonymous: bool,
    resident_kb: f64,
    huge_kb: f64,
    hugetlb_kb: f64,
    /// Huge-page KiB × the weight of each look, summed.
    huge_weighted: f64,
}

impl Acc {
    /// The most translations the region can count in one interval: one per resident
    /// 4 KiB page, one per huge page.
    fn max_translations(&self) -> f64 {
        (self.resident_kb - self.huge_kb).max(0.0) / 4.0 + (self.huge_kb / 2048.0).ceil()
    }
}

impl RegionMap {
    pub(super) fn name_process(&mut self, pid: u32, name: String) {
        self.names.entry(pid).or_insert(name);
    }

    /// A span with an access level: its value is spread over the regions it overlaps, in
    /// proportion to the overlap.
    pub(super) fn add_span(&mut self, span: &AccessSpan) {
        if span.end <= span.start || span.value <= 0.0 {
            return;
        }
        let length = (span.end - span.start) as f64;
        let mut region = region_of(span.start);
        while region < span.end {
            let overlap = span.end.min(region + REGION_BYTES) - span.start.max(region);
            let value = span.value * overlap as f64 / length;
            self.add_value(span.pid, region, value);
            region += REGION_BYTES;
        }
    }

    /// One precise sample; with `misses_only`, only samples that missed a TLB level add to
    /// the ranking value (all are counted).
    pub(super) fn add_sample(&mut self, sample: &MemSample, misses_only: bool) {
        let key = (sample.pid, region_of(sample.addr));
        let missed = sample.event_is_tlb_miss || sample.tlb.missed_a_level();
        let acc = self.regions.entry(key).or_default();
        acc.samples += 1;
        if missed {
            acc.tlb_miss_samples += 1;
        }
        if sample.weight > 0 {
            acc.weight_sum += sample.weight as f64;
            acc.weighted += 1;
        }
        if missed || !misses_only {
            self.add_value(key.0, key.1, 1.0);
        }
    }

    fn add_value(&mut self, pid: u32, region: u64, value: f64) {
        self.regions.entry((pid, region)).or_default().value += value;
        *self.interval.entry((pid, region)).or_default() += value;
    }

    /// A snapshot of the process's mappings: names the regions and keeps each one's peak
    /// resident and huge-page memory.
    pub(super) fn observe_mappings(&mut self, pid: u32, mappings: &[Mapping]) {
        let mut resident: HashMap<u64, (f64, f64, f64)> = HashMap::new();
        for m in mappings {
            let size = (m.end - m.start).max(1) as f64;
            let mut region = region_of(m.start);
            while region < m.end {
                let overlap = m.end.min(region + REGION_BYTES) - m.start.max(region);
                let part = overlap as f64 / size;
                let r = resident.entry(region).or_default();
                // smaps leaves hugetlb pages out of Rss.
                r.0 += (m.rss_kb + m.hugetlb_kb) as f64 * part;
                r.1 += (m.anon_huge_kb + m.hugetlb_kb) as f64 * part;
                r.2 += m.hugetlb_kb as f64 * part;
                let acc = self.regions.entry((pid, region)).or_default();
                if overlap > acc.mapping_overlap {
                    acc.mapping_overlap = overlap;
                    acc.mapping = m.label();
                    acc.anonymous = m.is_anonymous();
                }
                region += REGION_BYTES;
            }
        }
        let weight = self.look_weight.unwrap_or(1.0);
        *self.looked.entry(pid).or_default() += weight;
        for (region, (rss, huge, hugetlb)) in resident {
            let acc = self.regions.entry((pid, region)).or_default();
            acc.resident_kb = acc.resident_kb.max(rss);
            acc.huge_kb = acc.huge_kb.max(huge);
            acc.hugetlb_kb = acc.hugetlb_kb.max(hugetlb);
            acc.huge_weighted += huge * weight;
        }
    }

    /// The weight of the next looks at the mappings: the length of the interval they
    /// close, so that the mean huge-page memory is a mean over time when intervals differ.
    pub(super) fn weigh_looks(&mut self, interval: std::time::Duration) {
        self.look_weight = Some(interval.as_secs_f64());
    }

    /// The regions the last closed interval counted: (value in it, the most it can
    /// count), hottest first.
    pub(super) fn last_interval_fill(&self) -> Vec<(f64, f64)> {
        let Some(last) = self.timeline.last() else {
            return Vec::new();
        };
        let mut fill: Vec<(f64, f64)> = last
            .iter()
            .filter_map(|(key, &v)| Some((v, self.regions.get(key)?.max_translations())))
            .collect();
        fill.sort_by(|a, b| b.0.total_cmp(&a.0));
        fill
    }

    /// Drops the values counted so far (and the timeline), keeping what is known of the
    /// mappings: the counts made at an interval that was too long are left out of the
    /// ranking when the interval is shortened.
    pub(super) fn restart_counts(&mut self) {
        for acc in self.regions.values_mut() {
            acc.value = 0.0;
        }
        self.interval.clear();
        self.timeline.clear();
    }

    /// Closes the current interval of the timeline.
    pub(super) fn end_interval(&mut self) {
        self.timeline.push(std::mem::take(&mut self.interval));
    }

    pub fn intervals(&self) -> usize {
        self.timeline.len()
    }

    /// The regions that were touched (value > 0) or hold memory, ranked by value (ties by
    /// address), with shares.
    pub fn ranked(&self) -> Vec<Region> {
        let total: f64 = self.regions.values().map(|a| a.value).sum();
        let mut out: Vec<Region> = self
            .regions
            .iter()
            .filter(|(_, a)| a.value > 0.0 || a.resident_kb > 0.0)
            .map(|(&(pid, start), a)| Region {
                pid,
                process: self.names.get(&pid).cloned().unwrap_or_default(),
                start,
                mapping: if a.mapping.is_empty() {
                    "unmapped".to_string()
                } else {
                    a.mapping.clone()
                },
                anonymous: a.anonymous,
                value: a.value,
                share_pct: 0.0,
                cumulative_pct: 0.0,
                samples: a.samples,
                tlb_miss_samples: a.tlb_miss_samples,
                mean_weight: (a.weighted > 0).then(|| a.weight_sum / a.weighted as f64),
                resident_kb: a.resident_kb,
                huge_kb: a.huge_kb,
                hugetlb_kb: a.hugetlb_kb,
                huge_mean_kb: match self.looked.get(&pid) {
                    Some(&w) if w > 0.0 => a.huge_weighted / w,
                    _ => 0.0,
                },
            })
            .collect();
        out.sort_by(|a, b| {
            b.value
                .total_cmp(&a.value)
                .then(a.pid.cmp(&b.pid))
                .then(a.start.cmp(&b.start))
        });
        let mut cumulative = 0.0;
        for r in &mut out {
            r.share_pct = if total > 0.0 {
                100.0 * r.value / total
            } else {
                0.0
            };
            cumulative += r.share_pct;
            r.cumulative_pct = cumulative.min(100.0);
        }
        out
    }

    /// Values per interval of the given regions (rows in the order given).
    pub(super) fn timeline(&self, regions: &[(u32, u64)]) -> Vec<Vec<f64>> {
        regions
            .iter()
            .map(|key| {
                self.timeline
                    .iter()
                    .map(|interval| interval.get(key).copied().unwrap_or(0.0))
                    .collect()
            })
            .collect()
    }
}

/// The top `n` regions that huge pages can back, merged into address ranges per
/// process (adjacent regions join): what `pages apply` hands to the preload library.
pub(super) fn ranges_of(regions: &[Region]) -> Vec<(u64, u64)> {
    let mut by_start: BTreeMap<u64, u64> = BTreeMap::new();
    for r in regions {
        by_start.insert(r.start, r.start + REGION_BYTES);
    }
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (start, end) in by_start {
        match out.last_mut() {
            Some(last) if last.1 == start => last.1 = end,
            _ => out.push((start, end)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pages::access::TlbOutcome;

    const MB2: u64 = REGION_BYTES;

    fn sample(addr: u64, tlb: TlbOutcome) -> MemSample {
        MemSample {
            pid: 7,
            tid: 7,
            addr,
            weight: 100,
            tlb,
            time_ns: 0,
            event_is_tlb_miss: false,
        }
    }

    #[test]
    fn samples_are_binned_per_2mib_region_and_ranked() {
        let mut map = RegionMap::default();
        for i in 0..10 {
            map.add_sample(&sample(5 * MB2 + i * 4096, TlbOutcome::Miss), true);
        }
        map.add_sample(&sample(5 * MB2 + MB2 - 1, TlbOutcome::L1Hit), true);
        for i in 0..3 {
            map.add_sample(&sample(9 * MB2 + i, TlbOutcome::L2Hit), true);
        }
        let ranked = map.ranked();
        assert_eq!(ranked[0].start, 5 * MB2);
        assert_eq!(ranked[0].value, 10.0);
        assert_eq!(ranked[0].samples, 11);
        assert_eq!(ranked[0].tlb_miss_samples, 10);
        assert_eq!(ranked[1].start, 9 * MB2);
        assert!((ranked[0].share_pct - 100.0 * 10.0 / 13.0).abs() < 1e-9);
        assert!((ranked[1].cumulative_pct - 100.0).abs() < 1e-9);
    }

    #[test]
    fn spans_are_split_by_overlap() {
        let mut map = RegionMap::default();
        map.add_span(&AccessSpan {
            pid: 1,
            start: MB2 + MB2 / 2,
            end: 3 * MB2,
            value: 30.0,
        });
        let ranked = map.ranked();
        assert_eq!(ranked.len(), 2);
        assert_eq!(ranked[0].start, 2 * MB2);
        assert!((ranked[0].value - 20.0).abs() < 1e-9);
        assert!((ranked[1].value - 10.0).abs() < 1e-9);
    }

    #[test]
    fn mappings_name_regions_and_timeline_keeps_intervals() {
        let mut map = RegionMap::default();
        let heap = Mapping {
            start: 4 * MB2,
            end: 6 * MB2,
            perms: "rw-p".into(),
            path: "[heap]".into(),
            rss_kb: 4096,
            anon_huge_kb: 2048,
            ..Mapping::default()
        };
        map.observe_mappings(1, &[heap]);
        map.add_span(&AccessSpan {
            pid: 1,
            start: 4 * MB2,
            end: 5 * MB2,
            value: 2.0,
        });
        map.end_interval();
        map.add_span(&AccessSpan {
            pid: 1,
            start: 4 * MB2,
            end: 5 * MB2,
            value: 3.0,
        });
        map.end_interval();
        let ranked = map.ranked();
        assert_eq!(ranked[0].mapping, "[heap]");
        assert!(ranked[0].anonymous);
        assert_eq!(ranked[0].resident_kb, 2048.0);
        assert_eq!(ranked[0].huge_kb, 1024.0);
        assert_eq!(map.timeline(&[(1, 4 * MB2)]), vec![vec![2.0, 3.0]]);
    }

    #[test]
    fn the_huge_page_share_is_weighted_by_time_not_the_peak() {
        let mut map = RegionMap::default();
        let region = |huge_kb| Mapping {
            start: 4 * MB2,
            end: 5 * MB2,
            perms: "rw-p".into(),
            rss_kb: 2048,
            anon_huge_kb: huge_kb,
            ..Mapping::default()
        };
        // 4 KiB pages for 0.9 s, a huge page in the last 0.1 s: a peak of 2 MiB, a tenth
        // of the run.
        map.weigh_looks(std::time::Duration::from_millis(300));
        for _ in 0..3 {
            map.observe_mappings(1, &[region(0)]);
        }
        map.weigh_looks(std::time::Duration::from_millis(100));
        map.observe_mappings(1, &[region(2048)]);
        let r = &map.ranked()[0];
        assert_eq!(r.huge_kb, 2048.0);
        assert!((r.huge_mean_kb - 204.8).abs() < 1e-9, "{}", r.huge_mean_kb);
    }

    #[test]
    fn the_last_interval_tells_how_full_the_hottest_regions_are() {
        let mut map = RegionMap::default();
        let anon = |start| Mapping {
            start,
            end: start + MB2,
            perms: "rw-p".into(),
            rss_kb: 2048,
            ..Mapping::default()
        };
        map.observe_mappings(1, &[anon(4 * MB2), anon(6 * MB2)]);
        map.add_span(&AccessSpan {
            pid: 1,
            start: 4 * MB2,
            end: 5 * MB2,
            value: 512.0,
        });
        map.add_span(&AccessSpan {
            pid: 1,
            start: 6 * MB2,
            end: 7 * MB2,
            value: 100.0,
        });
        map.end_interval();
        assert_eq!(
            map.last_interval_fill(),
            vec![(512.0, 512.0), (100.0, 512.0)]
        );
        map.restart_counts();
        assert!(map.last_interval_fill().is_empty());
        assert_eq!(map.intervals(), 0);
        assert!(map
            .ranked()
            .iter()
            .all(|r| r.value == 0.0 && r.resident_kb > 0.0));
    }

    #[test]
    fn adjacent_regions_merge_into_ranges() {
        let region = |start| Region {
            pid: 1,
            process: String::new(),
            start,
            mapping: String::new(),
            anonymous: true,
            value: 1.0,
            share_pct: 0.0,
            cumulative_pct: 0.0,
            samples: 0,
            tlb_miss_samples: 0,
            mean_weight: None,
            resident_kb: 0.0,
            huge_kb: 0.0,
            hugetlb_kb: 0.0,
            huge_mean_kb: 0.0,
        };
        let ranges = ranges_of(&[
            region(4 * MB2),
            region(2 * MB2),
            region(3 * MB2),
            region(9 * MB2),
        ]);
        assert_eq!(ranges, vec![(2 * MB2, 5 * MB2), (9 * MB2, 10 * MB2)]);
    }
}
