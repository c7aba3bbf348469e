//! The arithmetic of weighted interleave, without a machine: weight ratios (local:far)
//! and their parsing, the candidates a run measures (with the firmware's bandwidth ratio
//! and refinements near the best), which node each page of a buffer goes to for a given
//! set of weights (as the kernel's MPOL_WEIGHTED_INTERLEAVE deals them: `w` pages of a
//! node in a row, then the next node), the recommendation from the measured bandwidths,
//! and the command lines that would apply it.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::UsageError;
use crate::experiments::params::{invalid, parse_list};

/// The kernel's largest weight (`weighted_interleave/nodeN` takes 1…255).
pub(crate) const MAX_WEIGHT: u32 = 255;

/// The ratios measured by default: local DRAM alone, then ever more of the far node.
pub(crate) const DEFAULT_RATIOS: [(u32, u32); 7] =
    [(1, 0), (8, 1), (4, 1), (3, 1), (2, 1), (1, 1), (1, 2)];

/// Largest term of a ratio made from a measured or quoted figure (the firmware's
/// bandwidths, a point between two measured ratios): weights stay readable.
const MAX_TERM: u32 = 16;

/// A weight ratio: the local node's weight, then each far node's. Kept in lowest terms,
/// so 4:2 and 2:1 are the same ratio; 1:0 is local memory alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ratio {
    pub local: u32,
    pub far: u32,
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Ratio {
    /// The ratio in lowest terms; None for 0:0 or a term above [`MAX_WEIGHT`].
    pub fn new(local: u32, far: u32) -> Option<Ratio> {
        if (local == 0 && far == 0) || local > MAX_WEIGHT || far > MAX_WEIGHT {
            return None;
        }
        let g = gcd(local, far);
        Some(Ratio {
            local: local / g,
            far: far / g,
        })
    }

    /// Local memory alone.
    pub const LOCAL: Ratio = Ratio { local: 1, far: 0 };

    /// "4:1" (also "4/1"), each term 0…255, not both 0.
    pub fn parse(text: &str) -> Result<Ratio, UsageError> {
        let expected = "a ratio of weights LOCAL:FAR, each 0 to 255 and not both 0 (e.g. 4:1)";
        let (local, far) = text
            .split_once([':', '/'])
            .ok_or_else(|| invalid("--ratios", text, expected))?;
        let term = |t: &str| t.trim().parse::<u32>().ok();
        match (term(local), term(far)) {
            (Some(local), Some(far)) => {
                Ratio::new(local, far).ok_or_else(|| invalid("--ratios", text, expected))
            }
            _ => Err(invalid("--ratios", text, expected)),
        }
    }

    /// The weights of a mix's nodes: the local node's first, then each far node's.
    pub fn weights(self, nodes: usize) -> Vec<u32> {
        let mut weights = vec![self.far; nodes.max(1)];
        weights[0] = self.local;
        weights
    }

    /// The share of pages on the local node in a mix with `far_nodes` far nodes.
    pub(crate) fn local_share(self, far_nodes: usize) -> f64 {
        let total = self.local + self.far * far_nodes as u32;
        f64::from(self.local) / f64::from(total.max(1))
    }

    /// The ratio in lowest terms with both terms at most `max_term` whose local share
    /// (with one far node) is nearest `share` (0…1).
    pub(crate) fn nearest_share(share: f64, max_term: u32) -> Ratio {
        let share = share.clamp(0.0, 1.0);
        let mut best = Ratio::LOCAL;
        let mut best_error = f64::INFINITY;
        for local in 0..=max_term {
            for far in 0..=max_term {
                let Some(ratio) = Ratio::new(local, far) else {
                    continue;
                };
                let error = (ratio.local_share(1) - share).abs();
                // Strictly better only: the first (smallest terms) of equals wins.
                if error < best_error - 1e-12 {
                    best = ratio;
                    best_error = error;
                }
            }
        }
        best
    }
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.local, self.far)
    }
}

/// `--ratios`: a comma-separated list of ratios (repeats dropped).
pub(crate) fn parse_ratios(text: &str) -> Result<Vec<Ratio>, UsageError> {
    parse_list(text, Ratio::parse)
}

/// The ratio of two bandwidths as weights (local:far), in small terms: the firmware's
/// suggestion where the HMAT quotes both (the kernel's `auto` mode derives its weights
/// the same way). None when either is unknown or zero.
pub(crate) fn bandwidth_ratio(local_mb_s: Option<u64>, far_mb_s: Option<u64>) -> Option<Ratio> {
    let (local, far) = (local_mb_s? as f64, far_mb_s? as f64);
    if local <= 0.0 || far <= 0.0 {
        return None;
    }
    Some(Ratio::nearest_share(local / (local + far), MAX_TERM))
}

/// The ratios a mix is measured at: local memory alone first, then `given` (and the
/// firmware's ratio when known) from the most local share to the least, each once.
pub fn candidates(given: &[Ratio], firmware: Option<Ratio>, far_nodes: usize) -> Vec<Ratio> {
    let mut all = vec![Ratio::LOCAL];
    for ratio in given.iter().copied().chain(firmware) {
        if !all.contains(&ratio) {
            all.push(ratio);
        }
    }
    all[1..].sort_by(|a, b| {
        b.local_share(far_nodes)
            .total_cmp(&a.local_share(far_nodes))
    });
    all
}

/// Up to two more ratios around the best measured one: halfway (in local share) to each
/// neighbour, in small terms, where that is a ratio not measured yet. `measured` holds
/// (ratio, bandwidth) pairs.
pub(crate) fn refinements(measured: &[(Ratio, f64)], far_nodes: usize) -> Vec<Ratio> {
    let mut sorted: Vec<(Ratio, f64)> = measured
        .iter()
        .copied()
        .filter(|(_, bw)| bw.is_finite())
        .collect();
    sorted.sort_by(|a, b| {
        b.0.local_share(far_nodes)
            .total_cmp(&a.0.local_share(far_nodes))
    });
    let Some(best) = (0..sorted.len()).max_by(|&a, &b| sorted[a].1.total_cmp(&sorted[b].1)) else {
        return Vec::new();
    };
    let share = |i: usize| sorted[i].0.local_share(far_nodes);
    let mut more = Vec::new();
    let neighbours = [
        best.checked_sub(1),
        Some(best + 1).filter(|&i| i < sorted.len()),
    ];
    for neighbour in neighbours.into_iter().flatten() {
        let middle = (share(best) + share(neighbour)) / 2.0;
        // The share with one far node that gives `middle` with `far_nodes` of them.
        let one_far = if far_nodes <= 1 {
            middle
        } else {
            let per_far = (1.0 - middle) / far_nodes as f64;
            middle / (middle + per_far)
        };
        let ratio = Ratio::nearest_share(one_far, MAX_TERM);
        if !sorted.iter().any(|(r, _)| *r == ratio) && !more.contains(&ratio) {
            more.push(ratio);
        }
    }
    more
}

/// The index (into the mix's nodes) of the node page `k` goes to under `weights`: the
/// pages are dealt in rounds of sum(weights), `weights[i]` pages in a row to node i.
pub(crate) fn node_of_page(k: usize, weights: &[u32]) -> usize {
    let total: usize = weights.iter().map(|&w| w as usize).sum();
    if total == 0 {
        return 0;
    }
    let mut position = k % total;
    for (i, &w) in weights.iter().enumerate() {
        if position < w as usize {
            return i;
        }
        position -= w as usize;
    }
    0
}

/// One measured point, as the recommendation reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    pub ratio: Ratio,
    /// Median over the trials, GB/s.
    pub median: f64,
    /// Robust spread of the trials (1.4826·MAD/median), %.
    pub spread_pct: f64,
}

/// The weights to recommend, from the measured points.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// The ratio with the highest median bandwidth.
    pub best: Ratio,
    pub best_gb_per_s: f64,
    /// Local memory alone (1:0).
    pub local_gb_per_s: f64,
    /// (best / local − 1) × 100: the median over the confirmation's pairs where it ran.
    pub gain_pct: f64,
    /// Twice the larger spread of the two, or local alone's drift between its
    /// measurements where larger: a gain below it is within noise.
    pub noise_pct: f64,
    pub within_noise: bool,
}

/// The best ratio and its gain over local memory alone; None without a local point.
/// `pairs` are (local, best) medians measured in turn after the first pass: the gain
/// counts only where every pair gains more than the noise, which also takes in how far
/// local alone drifted between its measurements (so one lucky trial recommends nothing).
pub(crate) fn recommend(points: &[Measured], pairs: &[(f64, f64)]) -> Option<Recommendation> {
    let local = points
        .iter()
        .find(|p| p.ratio == Ratio::LOCAL && p.median.is_finite())?;
    let best = points
        .iter()
        .filter(|p| p.median.is_finite())
        .max_by(|a, b| a.median.total_cmp(&b.median))?;
    let gains: Vec<f64> = (pairs.iter()).map(|(l, b)| (b / l - 1.0) * 100.0).collect();
    let locals = pairs.iter().map(|p| p.0).chain([local.median]);
    let drift = locals.clone().fold(f64::MIN, f64::max) - locals.fold(f64::MAX, f64::min);
    let noise_pct = (2.0 * best.spread_pct.max(local.spread_pct)).max(drift / local.median * 100.0);
    let gain_pct = match gains.len() {
        0 => (best.median / local.median - 1.0) * 100.0,
        _ => crate::stats::summary::median(&gains),
    };
    Some(Recommendation {
        best: best.ratio,
        best_gb_per_s: best.median,
        local_gb_per_s: local.median,
        gain_pct,
        noise_pct,
        within_noise: best.ratio == Ratio::LOCAL
            || gains.is_empty()
            || gains.iter().any(|&g| g <= noise_pct),
    })
}

/// The lines that would apply `ratio` for a program on `cpu_node` with memory over
/// `nodes` (the local node first): the weights written to sysfs under `dir` (auto mode
/// turned off first where the kernel has the file `auto_file`), then the numactl command.
/// Printed for the user, never run: the weights are the whole system's.
pub(crate) fn apply_lines(
    ratio: Ratio,
    nodes: &[usize],
    dir: &str,
    auto_file: Option<&str>,
) -> Vec<String> {
    let Some((&local, far)) = nodes.split_first() else {
        return Vec::new();
    };
    let far_list = crate::topology::cpu::format_cpu_list(far);
    if ratio.far == 0 {
        return vec![format!(
            "numactl --cpunodebind={local} --membind={local} COMMAND   # local memory alone"
        )];
    }
    if ratio.local == 0 {
        return vec![format!(
            "numactl --cpunodebind={local} --membind={far_list} COMMAND   # far memory alone"
        )];
    }
    let mut lines = Vec::new();
    if let Some(auto) = auto_file {
        lines.push(format!("echo false > {dir}/{auto}"));
    }
    for (i, &node) in nodes.iter().enumerate() {
        let weight = if i == 0 { ratio.local } else { ratio.far };
        lines.push(format!("echo {weight} > {dir}/node{node}"));
    }
    let mut all = nodes.to_vec();
    all.sort_unstable();
    lines.push(format!(
        "numactl --cpunodebind={local} --weighted-interleave={} COMMAND   # numactl 2.0.19+",
        crate::topology::cpu::format_cpu_list(&all)
    ));
    lines.push(format!(
        "memscope advise --weights {}:{} --only placement -- COMMAND   # what they buy a \
         program: written for its run, then set back",
        ratio.local, ratio.far
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many of `pages` pages each node gets under `weights`.
    fn pages_per_node(pages: usize, weights: &[u32]) -> Vec<usize> {
        let total: usize = weights.iter().map(|&w| w as usize).sum();
        // No weight at all deals every page to the first node, as `node_of_page` does.
        let (rounds, rest) = pages
            .checked_div(total)
            .map_or((0, 0), |rounds| (rounds, pages % total));
        let mut before = 0;
        let mut counts = Vec::with_capacity(weights.len());
        for (i, &w) in weights.iter().enumerate() {
            let w = w as usize;
            let mut count = rounds * w + rest.saturating_sub(before).min(w);
            if total == 0 && i == 0 {
                count = pages;
            }
            counts.push(count);
            before += w;
        }
        counts
    }

    fn r(local: u32, far: u32) -> Ratio {
        Ratio::new(local, far).unwrap()
    }

    #[test]
    fn ratios_are_kept_in_lowest_terms_and_parsed_with_clear_errors() {
        assert_eq!(r(4, 2), r(2, 1));
        assert_eq!(r(0, 5), r(0, 1));
        assert_eq!(Ratio::parse(" 8:1 ").unwrap(), r(8, 1));
        assert_eq!(Ratio::parse("3/1").unwrap(), r(3, 1));
        for bad in ["0:0", "4", "a:1", "1:-1", "256:1", "1:2:3", ""] {
            let error = Ratio::parse(bad).unwrap_err().to_string();
            assert!(
                error.contains(&format!("'{bad}' for --ratios")) && error.contains("LOCAL:FAR"),
                "{bad}: {error}"
            );
        }
        assert_eq!(
            parse_ratios("4:1, 8:2,1:1").unwrap(),
            vec![r(4, 1), r(1, 1)]
        );
        assert!(parse_ratios("4:1,x").is_err());
        assert_eq!(r(3, 1).to_string(), "3:1");
        assert_eq!(r(3, 1).weights(3), vec![3, 1, 1]);
    }

    #[test]
    fn shares_and_the_nearest_small_ratio() {
        assert_eq!(r(3, 1).local_share(1), 0.75);
        assert_eq!(r(2, 1).local_share(2), 0.5);
        assert_eq!(Ratio::LOCAL.local_share(4), 1.0);
        assert_eq!(Ratio::nearest_share(0.75, 16), r(3, 1));
        assert_eq!(Ratio::nearest_share(1.0, 16), Ratio::LOCAL);
        assert_eq!(Ratio::nearest_share(0.5, 16), r(1, 1));
        // DRAM 300 GB/s, CXL 64 GB/s: 300/364 ≈ 0.824, nearest 14:3 (0.8235).
        assert_eq!(bandwidth_ratio(Some(300_000), Some(64_000)), Some(r(14, 3)));
        assert_eq!(bandwidth_ratio(Some(100_000), Some(50_000)), Some(r(2, 1)));
        assert_eq!(bandwidth_ratio(None, Some(1)), None);
        assert_eq!(bandwidth_ratio(Some(1), Some(0)), None);
    }

    #[test]
    fn candidates_start_local_then_fall_in_local_share_without_repeats() {
        let given: Vec<Ratio> = DEFAULT_RATIOS.iter().map(|&(l, f)| r(l, f)).collect();
        let all = candidates(&given, Some(r(2, 1)), 1);
        let text: Vec<String> = all.iter().map(Ratio::to_string).collect();
        assert_eq!(text, ["1:0", "8:1", "4:1", "3:1", "2:1", "1:1", "1:2"]);
        let all = candidates(&[r(1, 1), r(4, 1)], Some(r(14, 3)), 1);
        let text: Vec<String> = all.iter().map(Ratio::to_string).collect();
        assert_eq!(text, ["1:0", "14:3", "4:1", "1:1"]);
    }

    #[test]
    fn refinements_fall_between_the_best_and_its_neighbours() {
        let measured = [
            (r(1, 0), 100.0),
            (r(4, 1), 120.0),
            (r(2, 1), 130.0),
            (r(1, 1), 110.0),
        ];
        // 2:1 is best (share 0.667); halfway to 4:1 (0.8) is 0.733 → 11:4; to 1:1 is
        // 0.583 → 7:5.
        let more = refinements(&measured, 1);
        assert_eq!(more, vec![r(11, 4), r(7, 5)]);
        for ratio in &more {
            assert!(!measured.iter().any(|(m, _)| m == ratio));
        }
        // The best at an end has one neighbour.
        assert_eq!(refinements(&measured[..1], 1), vec![]);
        assert_eq!(
            refinements(&[(r(1, 0), 100.0), (r(1, 1), 90.0)], 1),
            vec![r(3, 1)]
        );
    }

    #[test]
    fn pages_are_dealt_in_runs_of_their_weight_and_counted_exactly() {
        let weights = [3, 1];
        let nodes: Vec<usize> = (0..8).map(|k| node_of_page(k, &weights)).collect();
        assert_eq!(nodes, [0, 0, 0, 1, 0, 0, 0, 1]);
        for (ratio, far_nodes) in [(r(8, 1), 1), (r(4, 1), 1), (r(1, 2), 1), (r(3, 2), 3)] {
            let weights = ratio.weights(far_nodes + 1);
            for pages in [0, 1, 7, 100, 4096, 65_537] {
                let counts = pages_per_node(pages, &weights);
                let mut dealt = vec![0; weights.len()];
                for k in 0..pages {
                    dealt[node_of_page(k, &weights)] += 1;
                }
                assert_eq!(counts, dealt, "{ratio} over {pages}");
                assert_eq!(counts.iter().sum::<usize>(), pages);
            }
        }
        // 65536 pages at 8:1: 7281 rounds of 9 and 7 left over, all local.
        assert_eq!(pages_per_node(65_536, &[8, 1]), vec![58_255, 7_281]);
        assert_eq!(pages_per_node(10, &[1, 0]), vec![10, 0]);
        assert_eq!(pages_per_node(10, &[0, 1]), vec![0, 10]);
    }

    #[test]
    fn the_recommendation_names_the_best_its_gain_and_whether_it_is_noise() {
        let point = |ratio, median, spread_pct| Measured {
            ratio,
            median,
            spread_pct,
        };
        let points = [
            point(Ratio::LOCAL, 100.0, 1.0),
            point(r(4, 1), 118.0, 1.5),
            point(r(2, 1), 125.0, 2.0),
            point(r(1, 1), 90.0, 1.0),
        ];
        // Every pair gains beyond the noise: recommended, at the pairs' median gain.
        let pairs = [(100.0, 124.0), (101.0, 126.0), (99.0, 125.0)];
        let rec = recommend(&points, &pairs).unwrap();
        assert_eq!(rec.best, r(2, 1));
        assert!((rec.gain_pct - 24.75).abs() < 0.01, "{}", rec.gain_pct);
        assert_eq!(rec.noise_pct, 4.0);
        assert!(!rec.within_noise);
        // Without a confirmation, or with a pair inside local alone's drift: nothing.
        assert!(recommend(&points, &[]).unwrap().within_noise);
        let drifting = [(100.0, 124.0), (80.0, 84.0), (100.0, 125.0)];
        let rec = recommend(&points, &drifting).unwrap();
        assert!(rec.within_noise && rec.noise_pct >= 20.0, "{rec:?}");

        let close = [point(Ratio::LOCAL, 100.0, 3.0), point(r(8, 1), 104.0, 1.0)];
        let rec = recommend(&close, &[(100.0, 104.0)]).unwrap();
        assert_eq!(rec.best, r(8, 1));
        assert!(rec.within_noise, "4 % is within twice a 3 % spread");

        let local_best = [point(Ratio::LOCAL, 100.0, 1.0), point(r(1, 1), 60.0, 1.0)];
        let rec = recommend(&local_best, &[]).unwrap();
        assert_eq!(
            (rec.best, rec.gain_pct, rec.within_noise),
            (Ratio::LOCAL, 0.0, true)
        );
        assert_eq!(recommend(&points[1..], &[]), None, "no local point");
        assert_eq!(recommend(&[point(Ratio::LOCAL, f64::NAN, 0.0)], &[]), None);
    }

    #[test]
    fn the_apply_lines_turn_auto_off_set_each_weight_and_run_numactl() {
        let dir = "/sys/kernel/mm/mempolicy/weighted_interleave";
        let lines = apply_lines(r(3, 1), &[0, 2], dir, Some("auto"));
        assert_eq!(
            lines,
            [
                format!("echo false > {dir}/auto"),
                format!("echo 3 > {dir}/node0"),
                format!("echo 1 > {dir}/node2"),
                "numactl --cpunodebind=0 --weighted-interleave=0,2 COMMAND   # numactl 2.0.19+"
                    .to_string(),
                "memscope advise --weights 3:1 --only placement -- COMMAND   # what they buy \
                 a program: written for its run, then set back"
                    .to_string(),
            ]
        );
        // No auto file (6.9 to 6.15); the local node need not be the lowest.
        let lines = apply_lines(r(5, 2), &[1, 0, 3], dir, None);
        assert_eq!(lines[0], format!("echo 5 > {dir}/node1"));
        assert_eq!(lines[2], format!("echo 2 > {dir}/node3"));
        assert_eq!(
            lines[3],
            "numactl --cpunodebind=1 --weighted-interleave=0-1,3 COMMAND   # numactl 2.0.19+"
        );
        let local = apply_lines(Ratio::LOCAL, &[0, 2], dir, Some("auto"));
        assert_eq!(local.len(), 1);
        assert!(local[0].contains("--membind=0 ") && !local[0].contains("echo"));
        assert!(apply_lines(r(0, 1), &[0, 2], dir, None)[0].contains("--membind=2 "));
        assert!(apply_lines(r(1, 1), &[], dir, None).is_empty());
    }
}
