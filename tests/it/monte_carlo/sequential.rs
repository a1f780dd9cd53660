//! `rounds = "auto"` on the Rust code: the runner's own look (`runner::auto::look`, which
//! judges the answer's comparisons with `stats::resolve` and `stats::pairs`) after every
//! round, on records built as the runner builds them, with the noise of the published
//! ladder (results/published/, 3 rounds of 3 repetitions): each round's rate of a test is
//! μ · exp(σ_S·Z_round + σ_C·Z_context) per repetition times exp(σ_R·Z_rep), where σ_S is the
//! swing a round shares across tests, σ_C a fresh context's own level, σ_R the repetitions'.
//!
//! Cells: identical variants called established over the whole sequence of looks (at most
//! 5%); the same with a fixed-n test repeated at every look (the optional-stopping trap, for
//! contrast); power and rounds used for true differences of 5%, 10% and 20%; and, for a fixed
//! time budget, which split into rounds × repetitions resolves soonest.

use super::*;
use tpsbench::stats::pairs::Design;

/// The published ladder's decode noise, per log rate.
#[derive(Debug, Clone, Copy)]
pub(super) struct Measured {
    /// Between repetitions of one round.
    pub(super) rep: f64,
    /// A fresh context's own level (not shared with the other tests of its round).
    pub(super) context: f64,
    /// A round's swing shared by every test of it.
    pub(super) shared: f64,
    /// The per-round sd of a paired log ratio, as measured.
    pub(super) pair: f64,
}

fn var(xs: &[f64]) -> f64 {
    let s = tpsbench::stats::stddev(xs);
    s * s
}

/// The variance of the median of `n` standard normal draws, by simulation.
fn median_variance(n: usize, noise: &mut Noise) -> f64 {
    let m: Vec<f64> = (0..20_000)
        .map(|_| {
            let xs: Vec<f64> = (0..n).map(|_| noise.z()).collect();
            tpsbench::stats::median(&xs)
        })
        .collect();
    var(&m)
}

/// Reads the noise off the published ladder's decode tests.
pub(super) fn published_noise() -> Measured {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/published");
    let mut tests: Vec<TestRecord> = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "json") {
            let r = tpsbench::record::results::read(&p).unwrap();
            if r.models.iter().any(|m| m.provenance.is_some()) {
                tests.extend(
                    r.tests
                        .into_iter()
                        .filter(|t| t.kind == tpsbench::plan::TestKind::Tg && t.rounds.len() >= 3),
                );
            }
        }
    }
    assert!(
        tests.len() >= 2,
        "the published ladder has decode tests with rounds"
    );
    let n_rounds = tests[0].rounds.len();
    let reps = tests[0].rounds[0].samples_ns.len();
    let logs = |t: &TestRecord| -> Vec<f64> { t.rounds.iter().map(|r| r.median_ts.ln()).collect() };
    let rep: Vec<f64> = tests
        .iter()
        .flat_map(|t| &t.rounds)
        .map(|r| {
            var(&r
                .samples_ns
                .iter()
                .map(|&ns| -(ns as f64).ln())
                .collect::<Vec<_>>())
        })
        .collect();
    let rep = tpsbench::stats::mean(&rep).sqrt();
    let mut pairs = Vec::new();
    for (i, a) in tests.iter().enumerate() {
        for b in &tests[i + 1..] {
            let d: Vec<f64> = logs(a)
                .iter()
                .zip(logs(b))
                .take(n_rounds)
                .map(|(x, y)| x - y)
                .collect();
            pairs.push(var(&d));
        }
    }
    let pair = tpsbench::stats::mean(&pairs).sqrt();
    let between = tpsbench::stats::mean(&tests.iter().map(|t| var(&logs(t))).collect::<Vec<_>>());
    let med = median_variance(reps, &mut Noise::new(99)) * rep * rep;
    let context = (pair * pair / 2.0 - med).max(0.0).sqrt();
    let shared = (between - pair * pair / 2.0).max(0.0).sqrt();
    Measured {
        rep,
        context,
        shared,
        pair,
    }
}

/// A plan of `ratios.len()` settings of one test (as two thread counts of one model): the
/// template's record cloned under distinct ids.
fn plan_records(run: &RunRecord, k: usize) -> RunRecord {
    let mut r = run.clone();
    let t = run.tests[0].clone();
    r.tests = (0..k)
        .map(|i| {
            let mut x = t.clone();
            x.id = format!("{}/v{i}", t.id);
            x
        })
        .collect();
    r.run.rounds_auto = Some(tpsbench::record::AutoRoundsRecord {
        max_rounds: 10,
        max_seconds: None,
        stopped: None,
        open: Vec::new(),
    });
    r
}

/// One round's repetitions of every variant: the round's shared swing, each context's level.
fn one_round(noise: &mut Noise, m: &Measured, ratios: &[f64], reps: usize) -> Vec<Vec<f64>> {
    let swing = (m.shared * noise.z()).exp();
    ratios
        .iter()
        .map(|r| {
            let level = MU * r * swing * (m.context * noise.z()).exp();
            (0..reps)
                .map(|_| level * (m.rep * noise.z()).exp())
                .collect()
        })
        .collect()
}

/// How an auto run is set up: repetitions per round, the most rounds, and the design the
/// look judges with.
#[derive(Clone, Copy)]
struct Setup {
    reps: usize,
    max_rounds: usize,
    design: Design,
}

/// How one auto run ended.
struct Outcome {
    /// Some comparison was called established although its variants are identical.
    false_established: bool,
    /// Every comparison established (the answer resolved).
    resolved: bool,
    /// Rounds taken.
    rounds: usize,
}

/// One auto run: rounds added, the runner's look after each from the third, until nothing is
/// open or `max_rounds`. `design` is what the look judges with; `identical`: which pairs of
/// variants are the same speed.
fn auto_run(
    noise: &mut Noise,
    m: &Measured,
    base: &RunRecord,
    ratios: &[f64],
    setup: Setup,
) -> Outcome {
    let Setup {
        reps,
        max_rounds,
        design,
    } = setup;
    let mut rec = plan_records(base, ratios.len());
    let mut rounds: Vec<Vec<Vec<f64>>> = vec![Vec::new(); ratios.len()];
    let mut ever_false = false;
    for n in 1..=max_rounds {
        for (i, r) in one_round(noise, m, ratios, reps).into_iter().enumerate() {
            rounds[i].push(r);
        }
        if n < tpsbench::stats::pairs::FIRST_LOOK {
            continue;
        }
        for (i, t) in rec.tests.iter_mut().enumerate() {
            let id = t.id.clone();
            *t = record_direct(&base.tests[0], &rounds[i]);
            t.id = id;
        }
        let looked = tpsbench::runner::auto::look(&rec, design);
        // An identical pair called established: its names both belong to identical variants
        // and it is absent from the open list although the answer needs it.
        let established = established_pairs(&rec, design);
        if established
            .iter()
            .any(|&(a, b)| (ratios[a] - ratios[b]).abs() < 1e-12)
        {
            ever_false = true;
        }
        if looked.total > 0 && looked.open.is_empty() {
            return Outcome {
                false_established: ever_false,
                resolved: true,
                rounds: n,
            };
        }
    }
    Outcome {
        false_established: ever_false,
        resolved: false,
        rounds: max_rounds,
    }
}

/// The pairs the look established (indices of the variants), through the same resolution.
fn established_pairs(rec: &RunRecord, design: Design) -> Vec<(usize, usize)> {
    use tpsbench::stats::resolve::{Choice, resolve};
    use tpsbench::stats::ties::Figure;
    let choices: Vec<Choice> = rec
        .tests
        .iter()
        .map(|t| {
            let r = t.round_medians();
            Choice {
                speed: Figure::point(tpsbench::stats::mean(&r)),
                rounds: r,
                error: None,
            }
        })
        .collect();
    let res = resolve(
        &choices,
        0.05,
        Some(design),
        0.05,
        &tpsbench::stats::compare::NoiseFloor::assumed(),
    );
    res.pairs
        .iter()
        .filter(|p| p.established != 0)
        .map(|p| (p.a, p.b))
        .collect()
}

fn cell(
    m: &Measured,
    base: &RunRecord,
    ratios: &[f64],
    setup: Setup,
    trials: usize,
    seed: u64,
) -> (f64, f64, f64) {
    let mut noise = Noise::new(seed);
    let (mut fals, mut res, mut rounds) = (0usize, 0usize, 0usize);
    for _ in 0..trials {
        let o = auto_run(&mut noise, m, base, ratios, setup);
        fals += usize::from(o.false_established);
        res += usize::from(o.resolved);
        rounds += o.rounds;
    }
    let t = trials as f64;
    (fals as f64 / t, res as f64 / t, rounds as f64 / t)
}

#[test]
fn auto_rounds_never_call_identical_variants_established_more_than_alpha_over_all_looks() {
    let m = published_noise();
    println!(
        "published ladder, decode: per-round paired log-ratio sd {:.1}%; repetitions {:.1}%, \
         context {:.1}%, shared round swing {:.1}%",
        100.0 * m.pair,
        100.0 * m.rep,
        100.0 * m.context,
        100.0 * m.shared
    );
    let base = template();
    let trials = 1500;
    let max = 10;
    let seq = Design::Sequential { max_rounds: max };
    println!(
        "| variants (all identical) | design | false \"established\", any look | rounds used |"
    );
    println!("|---|---|---:|---:|");
    for k in [2usize, 4] {
        let ratios = vec![1.0; k];
        let (f, _, r) = cell(
            &m,
            &base,
            &ratios,
            Setup {
                reps: 3,
                max_rounds: max,
                design: seq,
            },
            trials,
            11 + k as u64,
        );
        println!(
            "| {k} | sequential, alpha/{} per look | {f:.3} | {r:.1} |",
            seq.looks()
        );
        assert!(f <= ceiling(0.05, trials), "{k} identical variants: {f}");
        // The trap: a fixed-n test at every look.
        let (naive, _, _) = cell(
            &m,
            &base,
            &ratios,
            Setup {
                reps: 3,
                max_rounds: max,
                design: Design::Fixed,
            },
            trials,
            21 + k as u64,
        );
        println!("| {k} | fixed-n t test at each look (not valid) | {naive:.3} | |");
        assert!(
            naive > f,
            "repeating a fixed-n test inflates: {naive} vs {f}"
        );
    }
}

#[test]
fn auto_rounds_power_and_rounds_used_at_the_published_noise() {
    let m = published_noise();
    let base = template();
    let trials = 800;
    let max = 10;
    let seq = Design::Sequential { max_rounds: max };
    println!(
        "two settings, per-round paired sd {:.1}%, at most {max} rounds of {} repetition(s)",
        100.0 * m.pair,
        AUTO_REPETITIONS
    );
    println!("| true difference | resolved (established) by round {max} | mean rounds |");
    println!("|---:|---:|---:|");
    let mut last = 0.0;
    for (i, d) in [0.05, 0.10, 0.20].into_iter().enumerate() {
        let (f, p, r) = cell(
            &m,
            &base,
            &[1.0, 1.0 + d],
            Setup {
                reps: AUTO_REPETITIONS,
                max_rounds: max,
                design: seq,
            },
            trials,
            31 + i as u64,
        );
        println!("| {:.0}% | {p:.3} | {r:.1} |", 100.0 * d);
        assert_eq!(f, 0.0, "no identical pair here");
        assert!(p >= last, "power grows with the difference");
        if d >= 0.2 {
            assert!(r < max as f64, "a clear difference stops early: {r}");
        }
        last = p;
    }
}

/// The repetitions per round `rounds = "auto"` uses by default (config `AUTO_REPETITIONS`).
const AUTO_REPETITIONS: usize = tpsbench::config::AutoRounds::REPETITIONS as usize;

#[test]
fn short_rounds_resolve_sooner_than_long_ones_in_the_same_time() {
    // A fixed budget per test in repetition times: each round also costs its warmup pass
    // (one repetition's time) and a fresh context and model load (about 0.3 of one).
    let m = published_noise();
    let base = template();
    let trials = 600;
    let budget = 30.0;
    let cost = |reps: usize| reps as f64 + 1.0 + 0.3;
    println!("budget {budget} repetition-times per test; a round costs reps + 1 warmup + 0.3");
    println!("| reps per round | rounds in budget | resolved, 10% | resolved, 20% |");
    println!("|---:|---:|---:|---:|");
    let mut power = Vec::new();
    for (i, reps) in [1usize, 2, 3, 5].into_iter().enumerate() {
        let max = (budget / cost(reps)).floor() as usize;
        let seq = Design::Sequential { max_rounds: max };
        let (_, p10, _) = cell(
            &m,
            &base,
            &[1.0, 1.1],
            Setup {
                reps,
                max_rounds: max,
                design: seq,
            },
            trials,
            41 + i as u64,
        );
        let (_, p20, _) = cell(
            &m,
            &base,
            &[1.0, 1.2],
            Setup {
                reps,
                max_rounds: max,
                design: seq,
            },
            trials,
            51 + i as u64,
        );
        println!("| {reps} | {max} | {p10:.3} | {p20:.3} |");
        power.push((reps, p10 + p20));
    }
    // The default for auto is the split that resolves most within the budget (within noise).
    let best = power.iter().map(|p| p.1).fold(0.0, f64::max);
    let default = power.iter().find(|p| p.0 == AUTO_REPETITIONS).unwrap().1;
    let se = 2.0 * (0.25 / trials as f64).sqrt();
    assert!(
        default >= best - 3.0 * se,
        "the auto default ({AUTO_REPETITIONS} per round) resolves {default:.3}, the best {best:.3}"
    );
}
