//! Which variants of one run are established apart, paired by round ([`compare::compare`]'s
//! t test on the log ratios of round medians): round i of every variant shares that stretch
//! of time. Overlap of the own 95% intervals ignores the pairing and calls most real
//! differences ties.
//!
//! Holm's step-down method holds the whole family at `alpha`. With rounds added until
//! resolved, every look would inflate the error (optional stopping), so the sequential design
//! runs look k at alpha / looks: by the union bound, at most alpha over all looks and pairs
//! (tests/it/monte_carlo.rs).

use super::compare::{Comparison, Measured, Settings, compare, p_beyond};
use super::student::t_two_sided_p;

/// The first look of a sequential design: with 2 rounds the paired t test has 1 degree of
/// freedom, and at the small per-look levels of a sequential design it can establish
/// nothing, so a look there would only spend alpha.
pub const FIRST_LOOK: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Design {
    /// A fixed number of rounds, judged once at the end.
    Fixed,
    /// Rounds added one at a time up to `max_rounds`, looked at after each from
    /// [`FIRST_LOOK`] on; alpha spent equally over those looks.
    Sequential { max_rounds: usize },
}

impl Design {
    pub fn looks(&self) -> usize {
        match *self {
            Design::Fixed => 1,
            Design::Sequential { max_rounds } => (max_rounds + 1).saturating_sub(FIRST_LOOK).max(1),
        }
    }

    /// The design of `rounds = "auto"` with at most `max_rounds` rounds.
    pub fn sequential(max_rounds: u32) -> Design {
        Design::Sequential {
            max_rounds: max_rounds as usize,
        }
    }

    pub fn look_alpha(&self, alpha: f64) -> f64 {
        alpha / self.looks() as f64
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct PairVerdict {
    pub a: usize,
    pub b: usize,
    /// B over A with all the rounds both have (the interval at the family's per-look level
    /// divided by the family's size: simultaneous, Bonferroni).
    pub comparison: Comparison,
    /// +1: B established faster than A; -1: established slower; 0: not established (a tie).
    pub established: i8,
    pub at_rounds: Option<usize>,
}

fn measured(r: &[f64]) -> Measured {
    Measured {
        round_medians: r.to_vec(),
        repetitions: Vec::new(),
    }
}

fn paired(a: &[f64], b: &[f64], alpha: f64) -> Comparison {
    let s = Settings {
        alpha,
        interleaved: true,
        ..Default::default()
    };
    compare(&measured(a), &measured(b), &s)
}

/// Holm's step-down over p-values: which are rejected at family level `alpha`.
pub(crate) fn holm(p: &[f64], alpha: f64) -> Vec<bool> {
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let m = p.len();
    let mut out = vec![false; m];
    for (rank, &i) in order.iter().enumerate() {
        if p[i] <= alpha / (m - rank) as f64 {
            out[i] = true;
        } else {
            break;
        }
    }
    out
}

/// The p-value of "the two sides differ by more than `margin`" (a ratio: 0.02 = 2%), paired by
/// round: the t statistic of the mean log ratio's distance beyond ln(1 + margin), two-sided
/// (conservative at the boundary of a one-sided null); 1 when the mean lies within the
/// margin. With margin 0 it is the paired t test's own p.
fn margin_p(a: &[f64], b: &[f64], margin: f64) -> f64 {
    let ln = |x: &f64| x.max(f64::MIN_POSITIVE).ln();
    let diffs: Vec<f64> = b.iter().zip(a).map(|(y, x)| ln(y) - ln(x)).collect();
    let n = diffs.len();
    if n < 2 {
        return 1.0;
    }
    let se = super::stddev(&diffs) / (n as f64).sqrt();
    let df = (n - 1) as f64;
    p_beyond(super::mean(&diffs), se, margin, |t| t_two_sided_p(t, df))
}

/// Judges `pairs` (indices into `rounds`, round medians in round order) at family level
/// `alpha` under `design`: established when they differ by more than `margin` (a ratio), never
/// with fewer than 2 rounds.
pub(crate) fn judge(
    rounds: &[Vec<f64>],
    pairs: &[(usize, usize)],
    alpha: f64,
    design: Design,
    margin: f64,
) -> Vec<PairVerdict> {
    let m = pairs.len().max(1) as f64;
    let per_look = design.look_alpha(alpha);
    let mut out: Vec<PairVerdict> = pairs
        .iter()
        .map(|&(a, b)| PairVerdict {
            a,
            b,
            comparison: paired(&rounds[a], &rounds[b], per_look / m),
            established: 0,
            at_rounds: None,
        })
        .collect();
    let most = pairs
        .iter()
        .map(|&(a, b)| rounds[a].len().min(rounds[b].len()))
        .max()
        .unwrap_or(0);
    let looks: Vec<usize> = match design {
        Design::Fixed => vec![most],
        Design::Sequential { max_rounds } => (FIRST_LOOK..=most.min(max_rounds)).collect(),
    };
    for n in looks {
        // At each look the whole family, with each pair's first n rounds (pairs whose sides
        // lack them are not looked at: p = 1).
        let looked: Vec<Option<(Comparison, f64)>> = pairs
            .iter()
            .map(|&(a, b)| {
                let (ra, rb) = (&rounds[a], &rounds[b]);
                let k = match design {
                    Design::Fixed => ra.len().min(rb.len()),
                    Design::Sequential { .. } => n,
                };
                (k >= 2 && ra.len() >= k && rb.len() >= k).then(|| {
                    (
                        paired(&ra[..k], &rb[..k], per_look),
                        margin_p(&ra[..k], &rb[..k], margin),
                    )
                })
            })
            .collect();
        let p: Vec<f64> = looked
            .iter()
            .map(|c| c.as_ref().map_or(1.0, |c| c.1))
            .collect();
        for (i, rejected) in holm(&p, per_look).into_iter().enumerate() {
            if rejected && out[i].established == 0 {
                let (c, _) = looked[i].as_ref().expect("a rejected pair was tested");
                out[i].established = if c.speedup > 1.0 { 1 } else { -1 };
                out[i].at_rounds = Some(c.rounds.0);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::ties::Figure;

    /// Round medians `level · swing_i` for the rounds' shared swings.
    fn side(level: f64, swings: &[f64]) -> Vec<f64> {
        swings.iter().map(|s| level * s).collect()
    }

    #[test]
    fn a_shared_round_swing_of_15_percent_hides_a_10_percent_difference_only_unpaired() {
        // Each round moves both variants by up to 15%; B is 10% faster in every round, with
        // a little noise of its own.
        let swings = [1.0, 1.15, 0.87, 1.08, 0.92];
        let a = side(100.0, &swings);
        let jitter = [1.004, 0.997, 1.002, 0.998, 1.001];
        let b: Vec<f64> = side(110.0, &swings)
            .iter()
            .zip(jitter)
            .map(|(x, j)| x * j)
            .collect();
        let v = judge(&[a.clone(), b.clone()], &[(0, 1)], 0.05, Design::Fixed, 0.0);
        assert_eq!(v[0].established, 1, "{v:?}");
        // Not paired: each variant's own 95% interval between rounds overlaps the other's.
        let own = |r: &[f64]| {
            let i = crate::stats::analysis::LevelInterval::of(
                crate::stats::analysis::Covers::BetweenRounds,
                r,
            )
            .unwrap();
            Figure {
                value: crate::stats::mean(r),
                lo: i.lo,
                hi: i.hi,
            }
        };
        assert!(own(&a).ties(&own(&b)), "{:?} {:?}", own(&a), own(&b));
    }

    #[test]
    fn an_a_a_pair_is_never_established() {
        // Identical variants, the same in every round but for small independent noise.
        let swings = [1.0, 1.1, 0.9, 1.05, 0.95, 1.02];
        let a = side(100.0, &swings);
        let b: Vec<f64> = a
            .iter()
            .zip([1.01, 0.99, 1.005, 0.995, 1.0, 1.002])
            .map(|(x, j)| x * j)
            .collect();
        for design in [Design::Fixed, Design::Sequential { max_rounds: 6 }] {
            let v = judge(
                &[a.clone(), b.clone()],
                &[(0, 1), (1, 0)],
                0.05,
                design,
                0.0,
            );
            assert!(v.iter().all(|p| p.established == 0), "{design:?} {v:?}");
        }
    }

    #[test]
    fn holm_steps_down_and_stops_at_the_first_failure() {
        assert_eq!(holm(&[0.01, 0.04, 0.03], 0.05), vec![true, false, false]);
        assert_eq!(holm(&[0.01, 0.02, 0.04], 0.05), vec![true, true, true]);
        assert_eq!(holm(&[0.2, 0.01], 0.05), vec![false, true]);
    }

    #[test]
    fn the_sequential_design_spends_alpha_over_its_looks() {
        assert_eq!(Design::Fixed.looks(), 1);
        assert_eq!(Design::Sequential { max_rounds: 10 }.looks(), 8);
        assert_eq!(Design::Sequential { max_rounds: 2 }.looks(), 1);
        // A clear 20% difference is established at an early look and says when.
        let swings = [1.0, 1.03, 0.98, 1.01, 0.99];
        let a = side(100.0, &swings);
        let b: Vec<f64> = side(120.0, &swings)
            .iter()
            .zip([1.01, 0.99, 1.0, 1.005, 0.995])
            .map(|(x, j)| x * j)
            .collect();
        let v = judge(
            &[a, b],
            &[(0, 1)],
            0.05,
            Design::Sequential { max_rounds: 10 },
            0.0,
        );
        assert_eq!(v[0].established, 1);
        assert_eq!(v[0].at_rounds, Some(3));
    }

    #[test]
    fn a_margin_establishes_only_differences_beyond_it() {
        // B is 3% faster in every round, with a little noise: established at margin 0, not
        // beyond a 5% margin; 20% faster is established beyond 2% too.
        let swings = [1.0, 1.1, 0.9, 1.05, 0.95, 1.02, 0.98, 1.01];
        let jitter = [1.004, 0.997, 1.002, 0.998, 1.001, 0.999, 1.003, 0.996];
        let a = side(100.0, &swings);
        let b = |ratio: f64| -> Vec<f64> {
            side(100.0 * ratio, &swings)
                .iter()
                .zip(jitter)
                .map(|(x, j)| x * j)
                .collect()
        };
        let v = |b: Vec<f64>, margin: f64| {
            judge(&[a.clone(), b], &[(0, 1)], 0.05, Design::Fixed, margin)[0].established
        };
        assert_eq!(v(b(1.03), 0.0), 1);
        assert_eq!(v(b(1.03), 0.05), 0);
        assert_eq!(v(b(1.2), 0.02), 1);
        assert_eq!(v(b(1.0 / 1.2), 0.02), -1);
        assert_eq!(
            margin_p(&a, &b(1.03), 0.05),
            1.0,
            "within the margin: p = 1"
        );
    }
}
