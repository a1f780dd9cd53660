//! The speculative objective's candidates: every configuration the limits kept (and
//! bisection left to race) decodes `[speculative]`'s prompts plain, and a `[speculative]`
//! target's configurations also with each of its drafter settings; a round is one pass
//! over the prompts, its figure the tokens generated per second of generation. A drafted
//! candidate decodes each prompt plain too, in the same round, which checks its output and
//! pairs its speedup within the round. Placement is decided on the plain configurations;
//! memory is checked again with each draft beside its target (`limits::expanded`).

use crate::config::speculative::{PLAIN, SpeculativeConfig};
use crate::config::tune::Tune;
use crate::plan::speculative::{SpecTest, tune_label};
use crate::plan::{Detail, PlannedTest, TestKind};
use crate::runner::prepare::Prepared;

/// The candidates of the configurations `space`: each once plain, and with the speculative
/// objective once per drafter setting of a `[speculative]` target.
pub(super) fn space(t: &Tune, prep: &Prepared, space: &[PlannedTest]) -> usize {
    if t.decode.is_none() {
        return space.len();
    }
    (space.iter())
        .map(|b| 1 + settings(prep, b.model).len())
        .sum()
}

/// With the speculative objective, the decoding candidates of the configurations in
/// `bench`, in their order (plain first, then each drafter setting); else `bench` as is.
pub(super) fn candidates(
    t: &Tune,
    config: &crate::config::Config,
    prep: &Prepared,
    bench: Vec<PlannedTest>,
) -> Vec<PlannedTest> {
    let (Some(_), Some(sc)) = (&t.decode, &config.speculative) else {
        return bench;
    };
    let seed = sc.seed.unwrap_or(config.settings.seed);
    let dataset = prep.spec_prompts.as_ref().map_or("", |p| p.sha256.as_str());
    let mut out = Vec::new();
    for b in &bench {
        out.push(candidate(b, &plain(sc, seed), "plain", dataset));
        for s in settings(prep, b.model) {
            let Detail::Speculative(spec) = &s.detail else {
                continue;
            };
            let mut spec = (**spec).clone();
            // The race's rounds are the test's: one at a time.
            spec.rounds = 1;
            out.push(candidate(b, &spec, &s.identity, dataset));
        }
    }
    out
}

/// Model `model`'s drafter settings: the plan's `[speculative]` tests of it.
fn settings(prep: &Prepared, model: usize) -> Vec<&PlannedTest> {
    (prep.plan.tests.iter())
        .filter(|x| x.model == model && matches!(x.detail, Detail::Speculative(_)))
        .collect()
}

/// Plain decoding of `[speculative]`'s prompts: no drafter.
fn plain(sc: &SpeculativeConfig, seed: u64) -> SpecTest {
    SpecTest {
        drafter: PLAIN,
        draft: None,
        draft_label: None,
        n_max: 0,
        n_min: 0,
        p_min: 0.0,
        draft_n_gpu_layers: -1,
        n_gen: sc.n_gen,
        n_prompts: sc.n_prompts,
        rounds: 1,
        seed,
        first_round: 0,
    }
}

/// Configuration `b` decoding as `s` says; `setting` names the drafter setting in the
/// identity (the `[speculative]` test's own identity, or "plain").
fn candidate(b: &PlannedTest, s: &SpecTest, setting: &str, dataset: &str) -> PlannedTest {
    let mut params = b.params.clone();
    params.n_prompt = 0;
    params.n_gen = s.n_gen;
    params.n_depth = 0;
    PlannedTest {
        model: b.model,
        id: super::measured_as(b, &tune_label(s)),
        params,
        kind: TestKind::Spec,
        identity: crate::util::hash::sha256_hex(format!(
            "{}\ntune decode\n{setting}\ndataset {dataset}\nn_gen {} prompts {} seed {}",
            b.identity, s.n_gen, s.n_prompts, s.seed
        )),
        detail: Detail::Speculative(Box::new(s.clone())),
    }
}

/// The test as round `round` (0-based) of the race runs it: a decoding candidate's sides
/// alternate which goes first by round, as a `[speculative]` test's rounds do.
pub(super) fn in_round(mut t: PlannedTest, round: usize) -> PlannedTest {
    if let Detail::Speculative(s) = &mut t.detail {
        s.first_round = round as u32;
    }
    t
}
