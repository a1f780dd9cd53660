//! `TestRecord.speculative`. The raw part (each round's plain and speculative tokens and
//! times, the counts per draft position) is what readers recompute the derived part from:
//! [`Speculative::derive`].

use crate::config::speculative::Drafter;
use crate::engine::speculative::Generation;
pub use crate::engine::speculative::Position;
use serde::{Deserialize, Serialize};

/// One round: every prompt generated plain and speculative once, in the order `plain_first`
/// says (it alternates by round, so a drift within a round does not favour one side).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpecRound {
    pub plain_first: bool,
    /// Summed over the prompts.
    pub plain_tokens: u64,
    pub plain_ns: u64,
    pub spec_tokens: u64,
    pub spec_ns: u64,
}

impl SpecRound {
    pub fn plain_ts(&self) -> f64 {
        rate(self.plain_tokens, self.plain_ns)
    }
    pub fn spec_ts(&self) -> f64 {
        rate(self.spec_tokens, self.spec_ns)
    }
}

fn rate(tokens: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        tokens as f64 * 1e9 / ns as f64
    }
}

/// Speculative over plain decode rate: the geometric mean of the rounds' ratios, with a
/// Student t interval on their logs (paired by round; not between launches).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Speedup {
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
    pub level: f64,
    pub n_rounds: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpecPrompts {
    /// The file's name.
    pub dataset: String,
    pub sha256: String,
    /// "sharegpt" (sampled as vLLM samples it) or "prompts" (a prompt file, in order).
    pub format: String,
    pub seed: u64,
    /// Per round; the tokens in all.
    pub n_prompts: u32,
    pub prompt_tokens: u64,
    pub gen_tokens: u64,
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Speculative {
    pub drafter: Drafter,
    /// A ladder type of the target's ladder, or a file name.
    pub draft: Option<String>,
    pub draft_sha256: Option<String>,
    pub draft_max: u32,
    pub draft_min: u32,
    pub p_min: f64,
    pub draft_n_gpu_layers: i32,
    /// Bytes the drafter held: the draft model's weights and its context's state (draft-mtp:
    /// the target's MTP layers' weights and the MTP context's state).
    pub draft_bytes: u64,
    pub prompts: SpecPrompts,
    /// Raw, in the order they ran; the counts below are summed over every round.
    pub rounds: Vec<SpecRound>,
    pub n_steps: u64,
    /// Steps that verified a non-empty draft.
    pub n_drafts: u64,
    pub n_drafted: u64,
    pub n_accepted: u64,
    pub n_restores: u64,
    pub by_position: Vec<Position>,
    pub draft_s: f64,
    pub verify_s: f64,
    /// Generations whose tokens differed from plain decoding's (greedy: there should be
    /// none), and generations compared.
    pub mismatches: u32,
    pub compared: u32,
    /// Derived: recomputed by readers from the raw part (`derive`).
    pub plain_ts: f64,
    pub spec_ts: f64,
    pub speedup: Option<Speedup>,
    pub acceptance_rate: Option<f64>,
    /// 1 + accepted / drafts (vLLM's mean acceptance length).
    pub acceptance_length: Option<f64>,
    /// Why the figures mean less than they seem (random weights: acceptance means nothing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Speculative {
    /// A record of `drafter` with these rounds and nothing drafted yet, its figures derived:
    /// what the kind fills in, and what the tests and the Monte Carlo start from.
    pub fn of_rounds(drafter: Drafter, prompts: SpecPrompts, rounds: Vec<SpecRound>) -> Self {
        let mut s = Speculative {
            drafter,
            prompts,
            rounds,
            draft_n_gpu_layers: -1,
            ..Default::default()
        };
        s.derive();
        s
    }

    /// Adds `next`, a later round of the same test measured on its own (a tune's race runs
    /// one round at a time); the figures are derived again.
    pub fn join(&mut self, next: Speculative) {
        self.rounds.extend(next.rounds);
        self.n_steps += next.n_steps;
        self.n_drafts += next.n_drafts;
        self.n_drafted += next.n_drafted;
        self.n_accepted += next.n_accepted;
        self.n_restores += next.n_restores;
        self.add_positions(&next.by_position);
        self.draft_s += next.draft_s;
        self.verify_s += next.verify_s;
        self.mismatches += next.mismatches;
        self.compared += next.compared;
        self.draft_bytes = self.draft_bytes.max(next.draft_bytes);
        for n in next.notes {
            if !self.notes.contains(&n) {
                self.notes.push(n);
            }
        }
        self.derive();
    }

    /// Adds one prompt's drafted generation `g` beside its plain one (its times aside).
    pub fn add(&mut self, plain: &Generation, g: &Generation) {
        self.compared += 1;
        // llama.cpp's drafters may draft past the last token asked for (as
        // llama-speculative-simple's do), so the longer output runs on: the outputs must
        // agree as far as both go.
        let n = plain.tokens.len().min(g.tokens.len());
        self.mismatches += u32::from(plain.tokens[..n] != g.tokens[..n]);
        self.n_steps += g.n_steps;
        self.n_drafts += g.n_drafts;
        self.n_drafted += g.n_drafted;
        self.n_accepted += g.n_accepted;
        self.n_restores += g.n_restores;
        self.add_positions(&g.by_position);
    }

    fn add_positions(&mut self, by_position: &[Position]) {
        if self.by_position.len() < by_position.len() {
            self.by_position
                .resize(by_position.len(), Position::default());
        }
        for (p, q) in self.by_position.iter_mut().zip(by_position) {
            p.drafted += q.drafted;
            p.accepted += q.accepted;
        }
    }

    /// A tune's candidate without a drafter.
    pub fn is_plain(&self) -> bool {
        self.drafter == Drafter::Plain
    }

    /// The test's rate per round: of the decoding it names, drafted or (a plain candidate)
    /// plain. What its `samples_ts` hold.
    pub fn rates(&self) -> Vec<f64> {
        let plain = self.is_plain();
        (self.rounds.iter())
            .map(|r| if plain { r.plain_ts() } else { r.spec_ts() })
            .collect()
    }

    pub fn identical(&self) -> bool {
        self.mismatches == 0 && self.compared > 0
    }

    pub fn derive(&mut self) {
        let mean = |f: &dyn Fn(&SpecRound) -> f64| {
            let v: Vec<f64> = self.rounds.iter().map(f).filter(|x| *x > 0.0).collect();
            let geomean = crate::stats::log_mean(&v).exp();
            if v.is_empty() { 0.0 } else { geomean }
        };
        self.plain_ts = mean(&|r| r.plain_ts());
        self.spec_ts = mean(&|r| r.spec_ts());
        let ratios: Vec<f64> = (self.rounds.iter())
            .filter(|r| r.plain_ts() > 0.0 && r.spec_ts() > 0.0)
            .map(|r| r.spec_ts() / r.plain_ts())
            .collect();
        self.speedup = speedup(&ratios);
        self.acceptance_rate =
            (self.n_drafted > 0).then(|| self.n_accepted as f64 / self.n_drafted as f64);
        self.acceptance_length =
            (self.n_drafts > 0).then(|| 1.0 + self.n_accepted as f64 / self.n_drafts as f64);
    }

    /// Whether the stored derived figures are those of the raw ones (to a relative 1e-9).
    pub fn consistent(&self) -> bool {
        let mut d = self.clone();
        d.derive();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-300);
        let figures = |s: &Speculative| {
            let sp = s.speedup;
            let (plain, spec) = (Some(s.plain_ts), Some(s.spec_ts));
            let (rate, length) = (s.acceptance_rate, s.acceptance_length);
            let (ratio, lo, hi) = (sp.map(|x| x.ratio), sp.map(|x| x.lo), sp.map(|x| x.hi));
            [plain, spec, rate, length, ratio, lo, hi]
        };
        let counts_ok = self.n_accepted <= self.n_drafted
            && self.by_position.iter().all(|p| p.accepted <= p.drafted);
        counts_ok
            && (figures(&d).into_iter().zip(figures(self))).all(|ab| match ab {
                (Some(a), Some(b)) => close(a, b),
                (a, b) => a.is_none() && b.is_none(),
            })
    }
}

/// None with fewer than 2 rounds.
fn speedup(ratios: &[f64]) -> Option<Speedup> {
    let ci = crate::stats::student::log_t_interval(ratios, 0.95)?;
    Some(Speedup {
        ratio: crate::stats::log_mean(ratios).exp(),
        lo: ci.lo,
        hi: ci.hi,
        level: 0.95,
        n_rounds: ratios.len() as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(rounds: &[(u64, u64, u64, u64)]) -> Speculative {
        let prompts = SpecPrompts {
            dataset: "p.txt".into(),
            sha256: "00".into(),
            format: "prompts".into(),
            seed: 1,
            n_prompts: 1,
            prompt_tokens: 10,
            gen_tokens: 10,
        };
        let rounds = rounds
            .iter()
            .enumerate()
            .map(|(i, &(pt, pn, st, sn))| SpecRound {
                plain_first: i % 2 == 0,
                plain_tokens: pt,
                plain_ns: pn,
                spec_tokens: st,
                spec_ns: sn,
            })
            .collect();
        let mut s = Speculative::of_rounds(Drafter::DraftSimple, prompts, rounds);
        (s.n_steps, s.n_drafts, s.n_drafted, s.n_accepted, s.compared) = (10, 8, 32, 16, 3);
        s.by_position = vec![Position {
            drafted: 8,
            accepted: 6,
        }];
        s.derive();
        s
    }

    #[test]
    fn the_speedup_is_paired_by_round_and_acceptance_follows_vllm() {
        // Both sides slow down together in round 2: the ratio stays 2 and the interval is
        // a point, as pairing by round should make it.
        let s = rec(&[
            (100, 1_000_000_000, 100, 500_000_000),
            (100, 2_000_000_000, 100, 1_000_000_000),
        ]);
        let sp = s.speedup.unwrap();
        assert!((sp.ratio - 2.0).abs() < 1e-12);
        assert!((sp.lo - 2.0).abs() < 1e-9 && (sp.hi - 2.0).abs() < 1e-9);
        assert_eq!(s.acceptance_rate, Some(0.5));
        assert_eq!(s.acceptance_length, Some(3.0));
        assert!(s.consistent());
    }

    #[test]
    fn rounds_measured_one_at_a_time_join_into_the_record_of_all_of_them() {
        let all = rec(&[(100, 10, 150, 10), (90, 10, 160, 10), (110, 10, 140, 10)]);
        let mut joined = rec(&[(100, 10, 150, 10)]);
        for r in [(90, 10, 160, 10), (110, 10, 140, 10)] {
            joined.join(rec(&[r]));
        }
        // Each one-round record numbers its round 0 (a tune sets `first_round`): the sides'
        // order aside, the rounds are the same.
        let sides = |s: &Speculative| -> Vec<(u64, u64, u64, u64)> {
            (s.rounds.iter())
                .map(|r| (r.plain_tokens, r.plain_ns, r.spec_tokens, r.spec_ns))
                .collect()
        };
        assert_eq!(sides(&joined), sides(&all));
        assert_eq!(joined.speedup, all.speedup);
        assert_eq!((joined.n_drafted, joined.n_accepted), (96, 48));
        assert_eq!(joined.by_position[0].drafted, 24);
        assert_eq!(joined.plain_ts, all.plain_ts);
        assert!(joined.consistent());
    }

    #[test]
    fn a_drafted_generation_adds_its_counts_and_is_compared_as_far_as_both_outputs_go() {
        let mut s = rec(&[(100, 10, 150, 10)]);
        let plain = Generation {
            tokens: vec![1, 2, 3],
            ..Default::default()
        };
        // Drafted past the tokens asked for: the same as far as plain decoding went.
        let longer = Generation {
            tokens: vec![1, 2, 3, 4],
            n_steps: 2,
            n_drafted: 4,
            n_accepted: 3,
            by_position: vec![
                Position {
                    drafted: 2,
                    accepted: 2,
                },
                Position {
                    drafted: 2,
                    accepted: 1,
                },
            ],
            ..Default::default()
        };
        s.add(&plain, &longer);
        assert_eq!((s.compared, s.mismatches), (4, 0));
        assert_eq!((s.n_steps, s.n_drafted, s.n_accepted), (12, 36, 19));
        let drafted: Vec<(u64, u64)> = (s.by_position.iter())
            .map(|p| (p.drafted, p.accepted))
            .collect();
        assert_eq!(drafted, [(10, 8), (2, 1)]);
        let other = Generation {
            tokens: vec![1, 9],
            ..Default::default()
        };
        s.add(&plain, &other);
        assert_eq!((s.compared, s.mismatches), (5, 1));
    }

    #[test]
    fn a_tampered_figure_is_not_consistent_with_the_raw_ones() {
        let mut s = rec(&[
            (100, 1_000_000_000, 150, 1_000_000_000),
            (100, 1_000_000_000, 140, 1_000_000_000),
        ]);
        assert!(s.consistent());
        s.speedup.as_mut().unwrap().ratio *= 1.01;
        assert!(!s.consistent());
        let mut s = rec(&[(100, 1_000_000_000, 150, 1_000_000_000)]);
        assert!(s.speedup.is_none(), "one round has no interval");
        s.n_accepted = 40;
        assert!(!s.consistent(), "more accepted than drafted");
    }
}
