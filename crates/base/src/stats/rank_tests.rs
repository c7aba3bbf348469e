//! Rank tests for "did this change the run time?": Mann–Whitney U for two independent
//! samples and the Wilcoxon signed-rank test for paired ones (each pair measured side by
//! side, as the runs of one block). Both are exact (the null distribution counted) for
//! small samples without ties and use the normal approximation with tie and continuity
//! correction otherwise.

use statrs::function::erf::erfc;

/// A Mann–Whitney U test of two independent samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct MannWhitney {
    /// U of the first sample: the pairs (x from a, y from b) with x > y, ties counting ½.
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// The two-sided Mann–Whitney U test: exact (the null distribution of U counted) for
/// small samples without ties, statrs' normal approximation with tie and continuity
/// correction otherwise. (statrs 0.19's own exact path returns p = 1 for two samples that
/// do not overlap at all, so it is not used.) `None` with fewer than 2 values on a side.
pub(crate) fn mann_whitney_u(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    use statrs::stats_tests::mannwhitneyu::{mannwhitneyu, MannWhitneyUMethod};
    use statrs::stats_tests::Alternative;
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let u: f64 = a
        .iter()
        .map(|x| {
            b.iter()
                .map(|y| match x.total_cmp(y) {
                    std::cmp::Ordering::Greater => 1.0,
                    std::cmp::Ordering::Equal => 0.5,
                    std::cmp::Ordering::Less => 0.0,
                })
                .sum::<f64>()
        })
        .sum();
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    let ties = all.windows(2).any(|w| w[0] == w[1]);
    if ties || a.len() + b.len() > 40 {
        let p = mannwhitneyu(
            a,
            b,
            MannWhitneyUMethod::AsymptoticInclContinuityCorrection,
            Alternative::TwoSided,
        )
        .ok()
        .map(|(_, p)| p)?;
        return Some(MannWhitney { u, p });
    }
    let smaller = (u as usize).min(a.len() * b.len() - u as usize);
    let counts = u_distribution(a.len(), b.len());
    let total: f64 = counts.iter().sum();
    let tail: f64 = counts[..=smaller].iter().sum();
    Some(MannWhitney {
        u,
        p: (2.0 * tail / total).min(1.0),
    })
}

/// How many orderings of n1 + n2 distinct values give each U (0 ..= n1·n2): the
/// recurrence f(n1, n2, u) = f(n1 − 1, n2, u − n2) + f(n1, n2 − 1, u).
pub(crate) fn u_distribution(n1: usize, n2: usize) -> Vec<f64> {
    // table[j] = distribution for (i, j) as i grows.
    let mut table: Vec<Vec<f64>> = (0..=n2).map(|_| vec![1.0]).collect();
    for i in 1..=n1 {
        let mut next: Vec<Vec<f64>> = vec![vec![1.0]];
        for j in 1..=n2 {
            let mut d = vec![0.0; i * j + 1];
            for (u, c) in table[j].iter().enumerate() {
                d[u + j] += c; // the largest value is one of the i: it beats all j
            }
            for (u, c) in next[j - 1].iter().enumerate() {
                d[u] += c; // the largest value is one of the j
            }
            next.push(d);
        }
        table = next;
    }
    table.pop().expect("n2 + 1 rows")
}

/// Two-sided Wilcoxon signed-rank p-value of paired differences (zeros dropped); `None`
/// with fewer than two non-zero differences.
pub fn signed_rank(differences: &[f64]) -> Option<f64> {
    let mut d: Vec<f64> = differences
        .iter()
        .copied()
        .filter(|v| v.is_finite() && *v != 0.0)
        .collect();
    let n = d.len();
    if n < 2 {
        return None;
    }
    d.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
    // Average ranks of |d| (ties share their mean rank).
    let mut ranks = vec![0.0; n];
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && d[j + 1].abs() == d[i].abs() {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        ranks[i..=j].fill(rank);
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    let w_plus: f64 = d
        .iter()
        .zip(&ranks)
        .filter(|(v, _)| **v > 0.0)
        .map(|(_, r)| r)
        .sum();
    let total = (n * (n + 1)) as f64 / 2.0;
    let w = w_plus.min(total - w_plus);
    if tie_term == 0.0 && n <= 40 {
        let counts = rank_sum_distribution(n);
        let all: f64 = counts.iter().sum();
        let tail: f64 = counts[..=(w as usize)].iter().sum();
        return Some((2.0 * tail / all).min(1.0));
    }
    let mean = total / 2.0;
    let var = (n * (n + 1) * (2 * n + 1)) as f64 / 24.0 - tie_term / 48.0;
    let z = ((mean - w) - 0.5).max(0.0) / var.sqrt();
    Some(erfc(z / std::f64::consts::SQRT_2).min(1.0))
}

/// How many subsets of the ranks 1..=n sum to each total (0 ..= n(n+1)/2).
pub(crate) fn rank_sum_distribution(n: usize) -> Vec<f64> {
    let mut counts = vec![0.0; n * (n + 1) / 2 + 1];
    counts[0] = 1.0;
    for rank in 1..=n {
        for total in (rank..counts.len()).rev() {
            counts[total] += counts[total - rank];
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two-sided Mann–Whitney U p-value (see `mann_whitney_u`).
    fn mann_whitney(a: &[f64], b: &[f64]) -> Option<f64> {
        mann_whitney_u(a, b).map(|t| t.p)
    }

    #[test]
    fn exact_mann_whitney_matches_the_u_distribution() {
        // 6 against 6 with no overlap: one ordering of C(12, 6) = 924 in each tail.
        let a = [2.0, 2.01, 2.02, 2.03, 2.04, 2.05];
        let b = [1.5, 1.51, 1.52, 1.53, 1.54, 1.55];
        let p = mann_whitney(&a, &b).unwrap();
        assert!((p - 2.0 / 924.0).abs() < 1e-12, "{p}");
        assert_eq!(mann_whitney(&b, &a), Some(p));
        // 3 against 3: the distribution of U is 1 1 2 3 3 3 3 2 1 1 (sum 20).
        assert_eq!(
            u_distribution(3, 3),
            vec![1.0, 1.0, 2.0, 3.0, 3.0, 3.0, 3.0, 2.0, 1.0, 1.0]
        );
        assert_eq!(u_distribution(2, 1), vec![1.0, 1.0, 1.0]);
        let same = [1.0, 1.1, 0.9, 1.05, 0.95];
        let p = mann_whitney(&same, &[1.02, 0.97, 1.08, 0.93, 1.01]).unwrap();
        assert!(p > 0.05, "{p}");
        assert!(mann_whitney(&same, &[1.0]).is_none());
    }

    #[test]
    fn mann_whitney_gives_the_textbook_u_and_p() {
        // 5 against 4: U = 17 for the first sample (3 for the second), exact two-sided
        // p = 14/126 = 0.111, as the tables of the U distribution give.
        let t = mann_whitney_u(&[19.0, 22.0, 16.0, 29.0, 24.0], &[20.0, 11.0, 17.0, 12.0]);
        let t = t.unwrap();
        assert_eq!(t.u, 17.0);
        assert!((t.p - 14.0 / 126.0).abs() < 1e-12, "{}", t.p);
        // 7 against 8: U = 12, p = 0.0721 (every split of the 15 ranks enumerated).
        let t = mann_whitney_u(
            &[1.1, 2.3, 3.2, 4.5, 5.1, 6.7, 7.2],
            &[2.0, 3.9, 5.5, 8.1, 8.8, 9.4, 9.9, 10.2],
        )
        .unwrap();
        assert_eq!(t.u, 12.0);
        assert!((t.p - 0.0721056721).abs() < 1e-9, "{}", t.p);
        // Ties: U counts them as halves, and p comes from the normal approximation.
        let t = mann_whitney_u(&[1.0, 2.0, 2.0, 3.0], &[2.0, 4.0, 5.0, 6.0]).unwrap();
        assert_eq!(t.u, 2.0);
        assert!(t.p > 0.05 && t.p < 1.0, "{}", t.p);
    }

    #[test]
    fn signed_rank_is_exact_for_small_samples() {
        // All 7 differences of one sign: 1 of 2^7 = 128 sign patterns in each tail.
        let d = [0.1, 0.2, 0.15, 0.3, 0.05, 0.12, 0.22];
        let p = signed_rank(&d).unwrap();
        assert!((p - 2.0 / 128.0).abs() < 1e-12, "{p}");
        let negated: Vec<f64> = d.iter().map(|v| -v).collect();
        assert_eq!(signed_rank(&negated), Some(p));
        // Ranks 1..=3: subset sums 0 1 2 3 3 4 5 6 → counts 1 1 1 2 1 1 1.
        assert_eq!(
            rank_sum_distribution(3),
            vec![1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 1.0]
        );
        // Mixed signs: not a change.
        assert!(signed_rank(&[0.1, -0.12, 0.05, -0.07, 0.02, -0.03]).unwrap() > 0.05);
        assert!(signed_rank(&[0.0, 0.1]).is_none());
        // Ties take the normal approximation and stay a probability.
        let tied = signed_rank(&[0.1, 0.1, 0.1, 0.2, 0.2, -0.1]).unwrap();
        assert!(tied > 0.0 && tied <= 1.0, "{tied}");
    }
}
