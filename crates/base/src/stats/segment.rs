//! Structure from data: where a measured curve is flat and where it steps.
//!
//! `piecewise_constant` finds the optimal segmentation of a sequence into constant pieces,
//! minimising Σ|y − median(segment)| + penalty × (number of segments) by dynamic
//! programming over all segment boundaries (exact, O(n³ log n), fine for the ~100 points
//! of a sweep). Absolute deviations from the median, rather than squared deviations from
//! the mean, keep one disturbed point from pulling a whole segment.
//!
//! `find_plateaus` runs it on log(value) — so a 20 % step counts the same at 1 ns and at
//! 100 ns — keeps the segments long enough to be a level, merges neighbours that differ
//! by less than a merge ratio, and places each plateau's edges on the last point still
//! within tolerance of its level. Points flagged unusable (unstable) take no part in
//! placing edges.

/// A constant piece `start..end` (end exclusive) of a sequence, at `level` (its median).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Segment {
    pub start: usize,
    pub end: usize,
    pub level: f64,
}

impl Segment {
    pub fn len(&self) -> usize {
        self.end - self.start
    }
}

fn l1_cost(values: &[f64]) -> (f64, f64) {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = super::summary::median_of_sorted(&sorted);
    (values.iter().map(|v| (v - median).abs()).sum(), median)
}

/// Optimal piecewise-constant segmentation of `y` under an absolute-deviation cost with
/// `penalty` per segment. Returns segments covering 0..y.len() in order.
pub(crate) fn piecewise_constant(y: &[f64], penalty: f64) -> Vec<Segment> {
    let n = y.len();
    if n == 0 {
        return Vec::new();
    }
    // best[j]: minimal cost of segmenting y[..j]; from[j]: start of its last segment.
    let mut best = vec![f64::INFINITY; n + 1];
    let mut from = vec![0usize; n + 1];
    best[0] = 0.0;
    for end in 1..=n {
        for start in 0..end {
            let (cost, _) = l1_cost(&y[start..end]);
            let total = best[start] + cost + penalty;
            if total < best[end] {
                best[end] = total;
                from[end] = start;
            }
        }
    }
    let mut segments = Vec::new();
    let mut end = n;
    while end > 0 {
        let start = from[end];
        let (_, level) = l1_cost(&y[start..end]);
        segments.push(Segment { start, end, level });
        end = start;
    }
    segments.reverse();
    segments
}

/// Robust scale of point-to-point noise: 1.4826 × median |Δy| / √2 (steps between
/// plateaus are few, so the median difference reflects the noise within them).
pub(crate) fn noise_scale(y: &[f64]) -> f64 {
    if y.len() < 3 {
        return 0.0;
    }
    let diffs: Vec<f64> = y.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    super::summary::MAD_TO_SIGMA * super::summary::median(&diffs) / std::f64::consts::SQRT_2
}

/// Tuning of `find_plateaus`.
#[derive(Debug, Clone, Copy)]
pub struct PlateauParams {
    /// A plateau has at least this many usable points (shorter segments are transitions).
    pub min_points: usize,
    /// Neighbouring plateaus closer than this ratio (0.15 = 15 %) are one level.
    pub merge_ratio: f64,
    /// A point belongs to a plateau's edge while within this ratio of its level.
    pub edge_tolerance: f64,
    /// Lower bound of the segmentation penalty, in log units per segment.
    pub min_penalty: f64,
}

impl Default for PlateauParams {
    fn default() -> Self {
        PlateauParams {
            min_points: 3,
            merge_ratio: 0.15,
            edge_tolerance: 0.20,
            min_penalty: 0.4,
        }
    }
}

/// A flat stretch of the curve: points `first..=last` (indices into the input) at `value`
/// (median of its usable points, in the input's units).
#[derive(Debug, Clone, PartialEq)]
pub struct Plateau {
    pub first: usize,
    pub last: usize,
    pub value: f64,
    pub points: usize,
}

/// Finds the plateaus of a positive curve (e.g. latency vs size), in order along the curve.
/// `usable[i]` false excludes point i (unstable, or not positive) from the fit and edges.
pub fn find_plateaus(values: &[f64], usable: &[bool], params: PlateauParams) -> Vec<Plateau> {
    let index: Vec<usize> = (0..values.len())
        .filter(|&i| {
            usable.get(i).copied().unwrap_or(true) && values[i] > 0.0 && values[i].is_finite()
        })
        .collect();
    if index.len() < params.min_points.max(1) {
        return Vec::new();
    }
    let y: Vec<f64> = index.iter().map(|&i| values[i].ln()).collect();
    let penalty = params.min_penalty.max(4.0 * noise_scale(&y));
    let segments = piecewise_constant(&y, penalty);

    // Runs of the usable-point sequence that form levels: long segments, merged when close.
    let merge = (1.0 + params.merge_ratio).ln();
    let mut runs: Vec<(usize, usize)> = Vec::new(); // start..end in `y`
    for segment in segments.iter().filter(|s| s.len() >= params.min_points) {
        if let Some(last) = runs.last_mut() {
            let previous = level_of(&y[last.0..last.1]);
            // Close levels are one level; a later level *below* the previous one cannot be a
            // slower memory level, so it is noise on the previous one.
            if (segment.level - previous).abs() < merge || segment.level < previous {
                last.1 = segment.end;
                continue;
            }
        }
        runs.push((segment.start, segment.end));
    }

    let tolerance = (1.0 + params.edge_tolerance).ln();
    let mut plateaus: Vec<Plateau> = Vec::with_capacity(runs.len());
    for (k, &(start, end)) in runs.iter().enumerate() {
        let level = level_of(&y[start..end]);
        let within = |j: usize| (y[j] - level).abs() <= tolerance;
        // Upper edge: the last point before the next level that is still within tolerance.
        let limit = runs.get(k + 1).map_or(y.len(), |next| next.0);
        let mut last = end - 1;
        for j in end..limit {
            if within(j) {
                last = j;
            }
        }
        while last > start && !within(last) {
            last -= 1;
        }
        // Lower edge: extend back over transition points that already sit at this level.
        let floor = plateaus.last().map_or(0, |p: &Plateau| {
            index.iter().position(|&i| i == p.last).map_or(0, |j| j + 1)
        });
        let mut first = start;
        while first > floor && within(first - 1) {
            first -= 1;
        }
        let members: Vec<f64> = (first..=last).map(|j| values[index[j]]).collect();
        plateaus.push(Plateau {
            first: index[first],
            last: index[last],
            value: super::summary::median(&members),
            points: members.len(),
        });
    }
    plateaus
}

fn level_of(y: &[f64]) -> f64 {
    super::summary::median(y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segmentation_recovers_clean_steps() {
        let y: Vec<f64> = [vec![1.0; 10], vec![5.0; 8], vec![2.0; 12]].concat();
        let segments = piecewise_constant(&y, 0.5);
        let bounds: Vec<(usize, usize)> = segments.iter().map(|s| (s.start, s.end)).collect();
        assert_eq!(bounds, vec![(0, 10), (10, 18), (18, 30)]);
        assert_eq!(segments[1].level, 5.0);
    }

    #[test]
    fn a_large_penalty_gives_one_segment() {
        let y: Vec<f64> = [vec![1.0; 5], vec![1.1; 5]].concat();
        assert_eq!(piecewise_constant(&y, 10.0).len(), 1);
        assert!(piecewise_constant(&[], 1.0).is_empty());
    }

    /// A latency-like curve: 4 points per octave from 4 KiB to 256 MiB, levels ending at
    /// 32 KiB, 1 MiB and 32 MiB, and a two-point transition into DRAM. (Ramps within a
    /// level, which real curves have, are merged by the level naming in `experiments`.)
    fn synthetic_ladder(noise: f64, outliers: &[usize], seed: u64) -> (Vec<f64>, Vec<f64>) {
        // A Weyl sequence through a multiplicative hash: uniform enough for jitter.
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            (state ^ (state >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9) >> 11
        };
        let mut sizes = Vec::new();
        let mut ns = Vec::new();
        let mut k = 0;
        loop {
            let log2 = 12.0 + k as f64 / 4.0;
            if log2 > 28.0 + 1e-9 {
                break;
            }
            let clean = if log2 <= 15.0 {
                1.1
            } else if log2 <= 20.0 {
                3.9
            } else if log2 <= 25.0 {
                12.0
            } else if log2 < 25.75 {
                30.0 + (log2 - 25.0) * 60.0
            } else {
                100.0
            };
            let jitter = 1.0 + noise * ((next() % 2001) as f64 / 1000.0 - 1.0);
            let mut value = clean * jitter;
            if outliers.contains(&k) {
                value *= 3.0;
            }
            sizes.push(log2);
            ns.push(value);
            k += 1;
        }
        (sizes, ns)
    }

    fn edge_log2(sizes: &[f64], plateau: &Plateau) -> f64 {
        sizes[plateau.last]
    }

    #[test]
    fn plateaus_of_a_clean_ladder_end_at_the_cache_sizes() {
        let (sizes, ns) = synthetic_ladder(0.0, &[], 1);
        let plateaus = find_plateaus(&ns, &vec![true; ns.len()], PlateauParams::default());
        assert_eq!(plateaus.len(), 4, "{plateaus:?}");
        assert_eq!(edge_log2(&sizes, &plateaus[0]), 15.0);
        assert_eq!(edge_log2(&sizes, &plateaus[1]), 20.0);
        assert!((plateaus[0].value - 1.1).abs() < 1e-9);
        assert!((plateaus[3].value - 100.0).abs() < 1e-9);
    }

    #[test]
    fn plateaus_survive_noise_and_outliers() {
        for seed in 0..10 {
            // 5 % noise, and three single-point outliers at 3x inside L1, L2 and DRAM.
            let (sizes, ns) = synthetic_ladder(0.05, &[5, 27, 62], seed);
            let plateaus = find_plateaus(&ns, &vec![true; ns.len()], PlateauParams::default());
            assert_eq!(plateaus.len(), 4, "seed {seed}: {plateaus:?}");
            let l1_end = edge_log2(&sizes, &plateaus[0]);
            let l2_end = edge_log2(&sizes, &plateaus[1]);
            assert!(
                (l1_end - 15.0).abs() <= 0.25,
                "seed {seed}: L1 ends at 2^{l1_end}"
            );
            assert!(
                (l2_end - 20.0).abs() <= 0.25,
                "seed {seed}: L2 ends at 2^{l2_end}"
            );
            assert!((plateaus[0].value / 1.1 - 1.0).abs() < 0.05);
            assert!((plateaus[1].value / 3.9 - 1.0).abs() < 0.05);
            assert!((plateaus[3].value / 100.0 - 1.0).abs() < 0.05);
            for pair in plateaus.windows(2) {
                assert!(pair[0].value < pair[1].value);
            }
        }
    }

    #[test]
    fn unusable_points_are_ignored() {
        let (sizes, mut ns) = synthetic_ladder(0.0, &[], 3);
        let mut usable = vec![true; ns.len()];
        // Wild values at two flagged points must not create a level or move an edge.
        ns[20] = 500.0;
        ns[40] = 0.2;
        usable[20] = false;
        usable[40] = false;
        let plateaus = find_plateaus(&ns, &usable, PlateauParams::default());
        assert_eq!(plateaus.len(), 4, "{plateaus:?}");
        assert_eq!(edge_log2(&sizes, &plateaus[1]), 20.0);
    }

    #[test]
    fn a_flat_curve_is_one_plateau_and_too_few_points_are_none() {
        let flat = vec![2.0; 20];
        let plateaus = find_plateaus(&flat, &[true; 20], PlateauParams::default());
        assert_eq!(plateaus.len(), 1);
        assert_eq!((plateaus[0].first, plateaus[0].last), (0, 19));
        assert!(find_plateaus(&[1.0, 2.0], &[true, true], PlateauParams::default()).is_empty());
    }
}
