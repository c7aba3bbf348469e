//! Finding the TLB levels on a page-count curve: plateaus kept to the largest steps, each
//! level's knee (where half the loads miss it), the rise around the knee, and the miss
//! cost read a little past it.

use crate::stats::segment::{find_plateaus, Plateau, PlateauParams};

use super::{MISS_REFERENCE_RATIO, PAGE_WALK};

/// One level found from a curve by [`find_tlb_levels`].
#[derive(Debug, Clone, PartialEq)]
pub(super) struct FoundTlbLevel {
    /// "L1 DTLB", "L2 DTLB", … or [`PAGE_WALK`].
    pub name: String,
    /// What the TLB adds per access on the level's plateau, ns.
    pub tlb_ns: f64,
    /// Largest page count at or below the midpoint to the next plateau; None for the walk
    /// and for a last level whose end the sweep did not reach.
    pub entries: Option<u64>,
    /// Step from this plateau to the next, ns.
    pub miss_ns: Option<f64>,
    /// Page counts bracketing the knee: the last point at or below the midpoint and the
    /// next point measured (where refining helps).
    pub knee: Option<(u64, u64)>,
    /// The rise around the knee: the last page count before the curve first passes a
    /// quarter of the way from the plateau to the miss cost, and the first past the knee
    /// at three quarters. A sharp knee spans one step of the ladder; a TLB whose
    /// replacement is not LRU, or a shared one, rises over a range, and the knee can land
    /// anywhere in it from run to run.
    pub transition: Option<(u64, u64)>,
    /// The miss cost with the knee at either end of the transition, ns (lower, higher).
    pub miss_range: Option<(f64, f64)>,
    /// First and last page count of the plateau.
    pub first_pages: u64,
    pub last_pages: u64,
}

/// Finds the TLB levels of a curve: `tlb_ns[i]` is what the TLB adds per access with
/// `pages[i]` pages (ascending), `usable[i]` false for unstable points (they take no part
/// in finding plateaus, but do in placing knees), `hit_ns` the latency of an L1d hit
/// (the curve segmented is `hit_ns + tlb_ns`, see the module documentation),
/// `tlb_levels` the number of TLB levels expected, and `extra` more (pages, tlb_ns)
/// points (refinements) that take part only in placing knees.
///
/// The first `tlb_levels` plateaus are the TLB levels, what follows is the page walk. A
/// level ends at its knee: the largest page count E whose value is at or below the
/// midpoint between the level's plateau and the miss cost, scanning down from where the
/// next plateau starts. The miss cost is read on the curve at
/// [`MISS_REFERENCE_RATIO`] × E (median of the points within a quarter octave of it,
/// clamped between the two plateaus), not from the next plateau's median: a walk's cost
/// keeps rising as the page tables outgrow the caches, and the walk right past the knee
/// is what half the loads pay there. E is found by iterating from the plateau's last
/// point upwards (a larger E reads a larger miss cost, so this converges to the first
/// fixed point). The walk's figure is that miss cost too (its plateau median where no
/// knee was found).
pub(super) fn find_tlb_levels(
    pages: &[u64],
    tlb_ns: &[f64],
    usable: &[bool],
    hit_ns: f64,
    tlb_levels: usize,
    extra: &[(u64, f64)],
) -> Vec<FoundTlbLevel> {
    let hit_ns = if hit_ns > 0.0 { hit_ns } else { 1.0 };
    let y: Vec<f64> = tlb_ns.iter().map(|&t| hit_ns + t.max(0.0)).collect();
    let plateaus = keep_largest_steps(
        find_plateaus(&y, usable, PlateauParams::default()),
        tlb_levels,
    );
    let kept = plateaus.len().min(tlb_levels + 1);
    let mut all: Vec<(u64, f64)> = pages
        .iter()
        .zip(&y)
        .map(|(&p, &v)| (p, v))
        .chain(extra.iter().map(|&(p, t)| (p, hit_ns + t.max(0.0))))
        .collect();
    all.sort_by_key(|&(p, _)| p);

    let mut levels: Vec<FoundTlbLevel> = Vec::with_capacity(kept);
    let mut walk_reference = None;
    for (k, plateau) in plateaus.iter().take(kept).enumerate() {
        let is_walk = k == tlb_levels;
        let next = plateaus.get(k + 1).filter(|_| !is_walk);
        let mut found = FoundTlbLevel {
            name: if is_walk {
                PAGE_WALK.to_string()
            } else {
                format!("L{} DTLB", k + 1)
            },
            tlb_ns: plateau.value - hit_ns,
            entries: None,
            miss_ns: None,
            knee: None,
            transition: None,
            miss_range: None,
            first_pages: pages[plateau.first],
            last_pages: pages[plateau.last],
        };
        if is_walk {
            if let Some(reference) = walk_reference {
                found.tlb_ns = reference - hit_ns;
            }
        }
        if let Some(next) = next {
            walk_reference = Some(read_knee(&mut found, (plateau, next), pages, &all));
        }
        levels.push(found);
    }
    levels
}

/// Finds the knee between `plateau` and the `next` one (on the points of the curve and the
/// extra ones, `all`) and sets the level's entries, knee, transition and miss cost from it;
/// the miss reference read there, which the walk's figure takes.
fn read_knee(
    found: &mut FoundTlbLevel,
    (plateau, next): (&Plateau, &Plateau),
    pages: &[u64],
    all: &[(u64, f64)],
) -> f64 {
    let window: Vec<(u64, f64)> = (all.iter().copied())
        .filter(|&(p, _)| p >= pages[plateau.first] && p < pages[next.first])
        .collect();
    let reference_at = |entries: u64| -> f64 {
        value_near(all, entries as f64 * MISS_REFERENCE_RATIO)
            .clamp(plateau.value, next.value.max(plateau.value))
    };
    let mut entries = pages[plateau.last];
    for _ in 0..16 {
        let midpoint = (plateau.value + reference_at(entries)) / 2.0;
        let moved = (window.iter())
            .rposition(|&(_, v)| v <= midpoint)
            .map_or(entries, |at| window[at].0);
        if moved == entries {
            break;
        }
        entries = moved;
    }
    let above = (all.iter())
        .find(|&&(p, _)| p > entries)
        .map_or(pages[next.first], |&(p, _)| p);
    let reference = reference_at(entries);
    let rise = reference - plateau.value;
    let leaves = (window.iter())
        .position(|&(_, v)| v > plateau.value + rise / 4.0)
        .map_or(entries, |at| window[at.saturating_sub(1)].0)
        .min(entries);
    let arrives = (all.iter())
        .find(|&&(p, v)| p > entries && v >= plateau.value + rise * 3.0 / 4.0)
        .map_or(above, |&(p, _)| p)
        .max(above);
    found.entries = Some(entries);
    found.knee = Some((entries, above));
    found.transition = Some((leaves, arrives));
    let (a, b) = (
        reference_at(leaves) - plateau.value,
        reference_at(arrives) - plateau.value,
    );
    found.miss_range = Some((a.min(b), a.max(b)));
    found.miss_ns = Some(rise);
    reference
}

/// Merges plateaus so that at most `steps` steps remain, the TLBs' ends: data-cache
/// effects add smaller steps of their own (see the rule below); a TLB's end is a large
/// step. A merged plateau keeps the value of its first
/// part (the level proper) and spans all of its parts.
fn keep_largest_steps(plateaus: Vec<Plateau>, steps: usize) -> Vec<Plateau> {
    if plateaus.len() <= steps + 1 {
        return plateaus;
    }
    if steps == 0 {
        return plateaus.into_iter().take(1).collect();
    }
    // The first step is the first TLB's end. A later step is the next TLB's end unless the
    // step right after it is more than twice as large: then it was a data-cache effect
    // inside the level, and the larger step is the TLB's end. (Past the last TLB the walk
    // itself climbs in steps as the page tables outgrow the caches; those come after.)
    let ratios: Vec<f64> = plateaus
        .windows(2)
        .map(|w| w[1].value / w[0].value)
        .collect();
    let mut boundaries = vec![0];
    for i in 1..ratios.len() {
        if boundaries.len() == steps {
            break;
        }
        let next = ratios.get(i + 1).copied().unwrap_or(0.0);
        if ratios[i] >= 0.5 * next {
            boundaries.push(i);
        }
    }
    boundaries.sort_unstable();
    let mut merged = Vec::with_capacity(steps + 1);
    let mut start = 0;
    for end in boundaries
        .into_iter()
        .chain(std::iter::once(plateaus.len() - 1))
    {
        let group = &plateaus[start..=end];
        merged.push(Plateau {
            first: group[0].first,
            last: group[group.len() - 1].last,
            value: group[0].value,
            points: group.iter().map(|p| p.points).sum(),
        });
        start = end + 1;
    }
    merged
}

/// The curve's value near page count `at`: the median of the points within a quarter
/// octave of it, or the value interpolated on log2(pages) between its neighbours when no
/// point is that close (the end values beyond either end).
fn value_near(points: &[(u64, f64)], at: f64) -> f64 {
    let near: Vec<f64> = points
        .iter()
        .filter(|&&(p, _)| ((p as f64) / at).log2().abs() <= 0.25)
        .map(|&(_, v)| v)
        .collect();
    if !near.is_empty() {
        return crate::stats::summary::median(&near);
    }
    match points.iter().position(|&(p, _)| p as f64 >= at) {
        None => points.last().map_or(f64::NAN, |p| p.1),
        Some(0) => points[0].1,
        Some(i) => {
            let ((p0, v0), (p1, v1)) = (points[i - 1], points[i]);
            let t = (at.log2() - (p0 as f64).log2()) / ((p1 as f64).log2() - (p0 as f64).log2());
            v0 + t * (v1 - v0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::shared::sizing::sweep_sizes;
    use crate::experiments::tlb::{between, MIN_PAGES, REFINED_WIDTH, REFINE_POINTS};
    use crate::kernels::permutation::SplitMix64;

    #[test]
    fn a_small_data_cache_step_does_not_take_a_tlb_level() {
        // 2 MiB pages on this VM: L1 DTLB to ~53 pages, L2 hits at +2 ns, a data-cache rise
        // from 256 pages on, the L2 DTLB knee near 2048 (a large step).
        let pages: Vec<u64> = vec![
            4, 8, 16, 32, 45, 53, 64, 76, 128, 181, 253, 304, 431, 512, 724, 1024, 1448, 2048,
            2435, 2896, 3444, 4096,
        ];
        let tlb_ns = [
            0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.4, 2.1, 2.1, 2.2, 2.2, 2.7, 4.3, 4.7, 4.7, 4.8, 4.9,
            5.0, 26.3, 32.6, 35.6, 40.2,
        ];
        let usable = vec![true; pages.len()];
        let levels = find_tlb_levels(&pages, &tlb_ns, &usable, 1.1, 2, &[]);
        assert_eq!(levels.len(), 3, "{levels:?}");
        let l2 = levels[1].entries.expect("an L2 knee");
        assert!((1448..=2435).contains(&l2), "{levels:?}");
    }
    #[test]
    fn a_gradual_rise_gives_a_wide_transition_and_a_sharp_knee_a_narrow_one() {
        // 4 KiB pages on this VM: the L1 DTLB curve climbs from 64 to 128 pages (the
        // refinements between 64 and 91 included, one an outlier at 90); the knee lands
        // anywhere in the rise from run to run.
        let hit = 1.73;
        let ladder: [(u64, f64); 14] = [
            (4, 1.73),
            (6, 1.74),
            (8, 1.73),
            (11, 1.74),
            (16, 1.74),
            (23, 1.74),
            (32, 1.76),
            (45, 1.79),
            (64, 2.07),
            (91, 3.08),
            (128, 4.09),
            (181, 4.13),
            (256, 4.19),
            (362, 4.36),
        ];
        let refined: Vec<(u64, f64)> = [
            (66, 2.05),
            (68, 2.11),
            (69, 2.12),
            (71, 2.25),
            (73, 2.26),
            (75, 2.41),
            (77, 2.37),
            (79, 2.52),
            (82, 2.59),
            (84, 2.63),
            (86, 2.77),
            (89, 2.88),
            (90, 1.83),
        ]
        .iter()
        .map(|&(p, t)| (p, t - hit))
        .collect();
        let pages: Vec<u64> = ladder.iter().map(|l| l.0).collect();
        let tlb_ns: Vec<f64> = ladder.iter().map(|l| l.1 - hit).collect();
        let usable = vec![true; pages.len()];
        let levels = find_tlb_levels(&pages, &tlb_ns, &usable, hit, 1, &refined);
        let (lo, hi) = levels[0].transition.expect("a transition");
        let entries = levels[0].entries.unwrap();
        assert!(lo <= entries && entries < hi, "{levels:?}");
        assert!(lo <= 75 && hi >= 128, "{levels:?}");

        let sharp: Vec<f64> = pages
            .iter()
            .map(|&p| if p <= 64 { 0.0 } else { 2.4 })
            .collect();
        let levels = find_tlb_levels(&pages, &sharp, &usable, hit, 1, &[]);
        assert_eq!(levels[0].transition, Some((64, 91)), "{levels:?}");
    }

    /// A 4 KiB curve measured on a 2-vCPU Zen 4 KVM guest: pages and tlb_ns, the sweep at 4
    /// points per octave and the refinements around both knees. L1 DTLB misses cost
    /// 1.9 ns up to a sharp knee at 72 pages; L2 DTLB misses start before 2500 pages and
    /// reach all loads by ~3500 (CPUID: 3072 entries); the walk costs 16 ns and rises as
    /// the page tables leave the caches (nested paging: 200+ ns past 128 MiB).
    const MEASURED_VM_PAGES: [u64; 96] = [
        4, 5, 6, 7, 8, 10, 11, 13, 16, 19, 23, 27, 32, 38, 45, 54, 64, 65, 66, 67, 68, 69, 70, 71,
        72, 73, 74, 75, 76, 91, 108, 128, 152, 181, 215, 256, 304, 362, 431, 512, 609, 724, 861,
        1024, 1218, 1448, 1722, 2048, 2435, 2468, 2501, 2534, 2568, 2603, 2638, 2673, 2709, 2746,
        2782, 2820, 2858, 2896, 2935, 2974, 3014, 3055, 3096, 3137, 3179, 3222, 3265, 3309, 3353,
        3398, 3444, 4096, 4871, 5793, 6889, 8192, 9742, 11585, 13777, 16384, 19484, 23170, 27554,
        32768, 38968, 46341, 55109, 65536, 77936, 92682, 110218, 131072,
    ];
    const MEASURED_VM_TLB_NS: [f64; 96] = [
        -0.00, 0.00, -0.00, -0.01, -0.00, -0.00, 0.01, -0.00, 0.01, 0.00, 0.00, -0.01, 0.00, -0.00,
        0.00, 0.00, 0.00, 0.00, 0.00, 0.01, -0.00, 0.00, 0.01, 0.00, 0.00, 1.89, 1.90, 1.91, 1.92,
        1.92, 1.92, 1.90, 1.91, 1.92, 1.91, 1.73, 3.00, 1.92, 1.92, 1.87, 2.13, 2.22, 2.58, 2.18,
        2.18, 2.17, 2.19, 2.20, 3.28, 3.89, 4.67, 5.43, 5.72, 5.92, 6.02, 5.85, 6.62, 7.24, 7.54,
        7.91, 8.23, 8.76, 9.19, 9.48, 10.01, 10.10, 10.74, 10.99, 11.57, 11.89, 12.04, 12.16,
        12.93, 13.22, 13.47, 16.09, 17.53, 22.06, 24.16, 28.95, 32.28, 32.99, 33.59, 34.49, 34.81,
        35.62, 51.06, 212.47, 151.71, 232.29, 237.04, 245.92, 258.88, 247.55, 251.67, 194.82,
    ];

    type Points = Vec<(u64, f64)>;

    /// Splits (pages, tlb_ns) points into the sweep of `max` pages at `per_octave` and the
    /// rest (refinements).
    fn split(
        points: &[(u64, f64)],
        max: u64,
        per_octave: u32,
    ) -> (Vec<u64>, Vec<f64>, Vec<(u64, f64)>) {
        let sweep = sweep_sizes(MIN_PAGES, max, per_octave, 1);
        let (coarse, extra): (Points, Points) = points.iter().partition(|(p, _)| sweep.contains(p));
        assert_eq!(
            coarse.len(),
            sweep.len(),
            "every sweep point is in the data"
        );
        (
            coarse.iter().map(|c| c.0).collect(),
            coarse.iter().map(|c| c.1).collect(),
            extra,
        )
    }

    fn names(levels: &[FoundTlbLevel]) -> Vec<&str> {
        levels.iter().map(|l| l.name.as_str()).collect()
    }

    /// A clean curve: sharp knees at `l1` and `l2` pages, 1.9 ns per L1 miss, a walk of
    /// `walk` ns that rises by `rise` ns per octave past the L2 knee.
    fn synthetic(pages: &[u64], l1: u64, l2: u64, walk: f64, rise: f64) -> Vec<f64> {
        pages
            .iter()
            .map(|&p| match p {
                p if p <= l1 => 0.0,
                p if p <= l2 => 1.9,
                p => walk + rise * (p as f64 / l2 as f64).log2(),
            })
            .collect()
    }

    #[test]
    fn knees_of_a_clean_curve_are_where_they_were_put() {
        let pages = sweep_sizes(MIN_PAGES, 1 << 17, 4, 1);
        let tlb = synthetic(&pages, 72, 3072, 20.0, 8.0);
        let usable = vec![true; pages.len()];
        // On the sweep alone a knee is the last sweep point before it.
        let coarse = find_tlb_levels(&pages, &tlb, &usable, 1.1, 2, &[]);
        assert_eq!(
            names(&coarse),
            ["L1 DTLB", "L2 DTLB", PAGE_WALK],
            "{coarse:?}"
        );
        let found: Vec<_> = coarse.iter().map(|l| (l.entries, l.knee)).collect();
        let l1_l2 = [(Some(64), Some((64, 76))), (Some(2896), Some((2896, 3444)))];
        assert_eq!(found[..2], l1_l2);
        assert_eq!(coarse[2].entries, None);
        // Refinements between the bracketing points place them exactly.
        let extra: Vec<(u64, f64)> = (65..76)
            .chain(2897..3444)
            .map(|p| (p, synthetic(&[p], 72, 3072, 20.0, 8.0)[0]))
            .collect();
        let fine = find_tlb_levels(&pages, &tlb, &usable, 1.1, 2, &extra);
        assert_eq!(fine[0].entries, Some(72));
        assert_eq!(fine[1].entries, Some(3072));
        assert!((fine[0].miss_ns.unwrap() - 1.9).abs() < 1e-9, "{fine:?}");
        assert!(fine[0].tlb_ns.abs() < 1e-9);
        assert!((fine[1].tlb_ns - 1.9).abs() < 1e-9);
        // The L2 miss is the walk right past the knee (1.5 × 3072 pages: 20 + 8 × 0.58 ns,
        // read as the median of the nearby points), not the median of the rising walk.
        let miss = fine[1].miss_ns.unwrap();
        assert!((20.0..26.0).contains(&(miss + 1.9)), "{miss}");
        assert!((fine[2].tlb_ns - (1.9 + miss)).abs() < 1e-9);
    }

    #[test]
    fn knees_survive_noise() {
        let pages = sweep_sizes(MIN_PAGES, 1 << 17, 4, 1);
        for seed in 0..20 {
            let mut rng = SplitMix64::new(seed);
            let mut noisy =
                |v: f64| (1.1 + v) * (1.0 + 0.04 * (rng.below(2001) as f64 / 1000.0 - 1.0)) - 1.1;
            let tlb: Vec<f64> = synthetic(&pages, 72, 3072, 20.0, 8.0)
                .into_iter()
                .map(&mut noisy)
                .collect();
            let extra: Vec<(u64, f64)> = between(2896, 3444, REFINE_POINTS)
                .into_iter()
                .chain(65..76)
                .map(|p| (p, noisy(synthetic(&[p], 72, 3072, 20.0, 8.0)[0])))
                .collect();
            let levels = find_tlb_levels(&pages, &tlb, &vec![true; pages.len()], 1.1, 2, &extra);
            assert_eq!(
                names(&levels),
                ["L1 DTLB", "L2 DTLB", PAGE_WALK],
                "seed {seed}: {levels:?}"
            );
            assert_eq!(levels[0].entries, Some(72), "seed {seed}");
            let l2 = levels[1].entries.unwrap() as f64;
            assert!((l2 / 3072.0 - 1.0).abs() < 0.03, "seed {seed}: {l2}");
        }
    }

    #[test]
    fn levels_of_a_measured_vm_curve() {
        let curve: Points = MEASURED_VM_PAGES
            .into_iter()
            .zip(MEASURED_VM_TLB_NS)
            .collect();
        let (pages, tlb, extra) = split(&curve, 1 << 17, 4);
        let levels = find_tlb_levels(&pages, &tlb, &vec![true; pages.len()], 1.08, 2, &extra);
        assert_eq!(
            names(&levels),
            ["L1 DTLB", "L2 DTLB", PAGE_WALK],
            "{levels:?}"
        );
        assert_eq!(levels[0].entries, Some(72));
        assert!((levels[0].miss_ns.unwrap() - 1.9).abs() < 0.1, "{levels:?}");
        // CPUID says 3072; the data say about half the loads miss by ~2900.
        let l2 = levels[1].entries.unwrap();
        assert!((2800..=3100).contains(&l2), "{levels:?}");
        assert!((levels[1].tlb_ns - 1.9).abs() < 0.4, "{levels:?}");
        let walk = levels[2].tlb_ns;
        assert!((14.0..20.0).contains(&walk), "{levels:?}");
        // The knee is bracketed closely enough to need no more refining.
        let (lo, hi) = levels[1].knee.unwrap();
        assert!(
            ((hi - lo) as f64) <= lo as f64 * REFINED_WIDTH,
            "{levels:?}"
        );
    }

    #[test]
    fn a_sweep_that_stops_inside_the_last_tlb_finds_no_walk() {
        // The quick huge-page curve: up to 256 pages, 2 points per octave.
        let pages = sweep_sizes(MIN_PAGES, 256, 2, 1);
        let tlb = synthetic(&pages, 72, 3072, 20.0, 8.0);
        let levels = find_tlb_levels(&pages, &tlb, &vec![true; pages.len()], 1.1, 2, &[]);
        assert_eq!(names(&levels), ["L1 DTLB", "L2 DTLB"], "{levels:?}");
        assert_eq!(levels[0].entries, Some(64));
        assert_eq!(levels[1].entries, None);
        assert_eq!(levels[1].miss_ns, None);
        // Too few points for any plateau: nothing, rather than a guess.
        assert!(find_tlb_levels(&[4, 8], &[0.0, 0.0], &[true, true], 1.1, 2, &[]).is_empty());
    }

    #[test]
    fn value_near_takes_nearby_points_or_interpolates() {
        let points = [(100u64, 1.0), (200, 2.0), (400, 4.0)];
        assert_eq!(value_near(&points, 200.0), 2.0);
        // 282.8 is half an octave from both neighbours: interpolated on log2(pages).
        assert!((value_near(&points, 200.0 * 2f64.sqrt()) - 3.0).abs() < 1e-9);
        assert_eq!(value_near(&points, 10_000.0), 4.0);
        assert_eq!(value_near(&points, 1.0), 1.0);
    }
}
