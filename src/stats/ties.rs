//! Rankings that show ties as ties. Two figures are ordered only when their intervals do
//! not overlap; otherwise the difference is not established, and neither ranks above the
//! other. A Pareto front built this way is a set: every variant that no other variant is
//! established to beat.

/// An estimate with its interval (for a figure without one, all three are equal).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Figure {
    pub fn point(value: f64) -> Figure {
        Figure {
            value,
            lo: value,
            hi: value,
        }
    }

    /// `value ± half`.
    pub fn around(value: f64, half: f64) -> Figure {
        Figure {
            value,
            lo: value - half.abs(),
            hi: value + half.abs(),
        }
    }

    /// `value` with interval `i` widened to hold it (a mean can fall outside a bootstrap's
    /// or a log-scale interval); a point without one.
    pub fn widened(value: f64, i: Option<&super::analysis::LevelInterval>) -> Figure {
        i.map_or(Figure::point(value), |i| Figure {
            value,
            lo: i.lo.min(value),
            hi: i.hi.max(value),
        })
    }

    /// The intervals of `self` and `other` are apart and `self` lies above.
    pub fn established_above(&self, other: &Figure) -> bool {
        self.lo > other.hi
    }

    /// Neither is established above the other.
    pub fn ties(&self, other: &Figure) -> bool {
        !self.established_above(other) && !other.established_above(self)
    }
}

/// [`pareto_front_by`] with intervals apart as the speed comparison.
pub(crate) fn pareto_front(points: &[(Figure, Figure)]) -> Vec<bool> {
    pareto_front_by(points, &|j, i| points[j].0.established_above(&points[i].0))
}

/// Whether each point is on the Pareto front of speed (larger better) against error (smaller
/// better): a point leaves only when another is at least as good on both estimates, better
/// on one, and established better on one (`speed_above(j, i)`: point j's speed is established
/// above point i's), so points that only noise keeps off stay. A tie does not count as "at
/// least as good": ties do not chain.
pub(crate) fn pareto_front_by(
    points: &[(Figure, Figure)],
    speed_above: &dyn Fn(usize, usize) -> bool,
) -> Vec<bool> {
    let beats = |j: usize, i: usize| {
        let ((sj, ej), (si, ei)) = (&points[j], &points[i]);
        let at_least = sj.value >= si.value && ej.value <= ei.value;
        let better = sj.value > si.value || ej.value < ei.value;
        let established = speed_above(j, i) || ei.established_above(ej);
        at_least && better && established
    };
    (0..points.len())
        .map(|i| !(0..points.len()).any(|j| j != i && beats(j, i)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_intervals_tie_and_apart_ones_order() {
        let a = Figure::around(230.3, 5.3);
        let b = Figure::around(227.9, 6.7);
        assert!(a.ties(&b));
        let c = Figure::around(200.0, 5.0);
        assert!(a.established_above(&c) && !c.established_above(&a));
    }

    #[test]
    fn a_speed_tie_keeps_both_on_the_front_unless_the_error_separates_them() {
        // Same error (tied), speeds tied: both stay.
        let kld = Figure::around(0.03, 0.002);
        let pts = [
            (Figure::around(230.3, 5.3), kld),
            (Figure::around(227.9, 6.7), kld),
        ];
        assert_eq!(pareto_front(&pts), vec![true, true]);
        // A trade-off whose speed side is a tie: both stay, and the tie is for the table to
        // name; nothing is ranked on the noise.
        let pts = [
            (Figure::around(230.3, 5.3), Figure::around(0.05, 0.002)),
            (Figure::around(227.9, 6.7), Figure::around(0.03, 0.002)),
        ];
        assert_eq!(pareto_front(&pts), vec![true, true]);
        // Beaten on both estimates and established on one: off.
        let pts = [
            (Figure::around(220.0, 5.3), Figure::around(0.05, 0.002)),
            (Figure::around(227.9, 6.7), Figure::around(0.03, 0.002)),
        ];
        assert_eq!(pareto_front(&pts), vec![false, true]);
        // Beaten on both estimates, established on neither: a tie, both stay.
        let pts = [
            (Figure::around(226.0, 5.3), Figure::around(0.031, 0.002)),
            (Figure::around(227.9, 6.7), Figure::around(0.030, 0.002)),
        ];
        assert_eq!(pareto_front(&pts), vec![true, true]);
        // Established faster and established worse: a trade-off, both stay.
        let pts = [
            (Figure::around(300.0, 5.0), Figure::around(0.05, 0.002)),
            (Figure::around(227.9, 6.7), Figure::around(0.03, 0.002)),
        ];
        assert_eq!(pareto_front(&pts), vec![true, true]);
    }

    #[test]
    fn ties_do_not_chain_into_knocking_out_an_established_faster_variant() {
        // The published ladder: F16 exact and slow, Q8_0 a speed tie with both F16 and Q6_K,
        // Q6_K established faster than F16. Q6_K stays on the front.
        let pts = [
            (
                Figure {
                    value: 84.1,
                    lo: 75.9,
                    hi: 92.2,
                },
                Figure::point(0.0),
            ),
            (
                Figure {
                    value: 116.2,
                    lo: 89.6,
                    hi: 149.8,
                },
                Figure::around(0.00147, 0.0002),
            ),
            (
                Figure {
                    value: 133.1,
                    lo: 127.8,
                    hi: 138.7,
                },
                Figure::around(0.00282, 0.0004),
            ),
        ];
        assert_eq!(pareto_front(&pts), vec![true, true, true]);
    }

    #[test]
    fn points_without_intervals_are_the_plain_pareto_front() {
        let p = |s: f64, e: f64| (Figure::point(s), Figure::point(e));
        assert_eq!(
            pareto_front(&[p(10.0, 1.0), p(9.0, 2.0), p(8.0, 0.5)]),
            vec![true, false, true]
        );
    }
}
