//! Monte Carlo check of the statistics, on the Rust code itself: the intervals tables show,
//! every verdict path (compare, --baseline, library A/B) and adaptive stopping, under noise
//! at three levels, all lognormal: a repetition's rate is
//! μ · exp(σ_L·Z_launch + σ_C·Z_context + σ·Z_rep). A launch (one process, one stretch of
//! time) draws Z_launch once; each round is a fresh context in it and draws Z_context; each
//! repetition draws Z_rep. That is what a 2-core VM showed: rounds in one process agreed
//! within a few percent while separate launches differed by up to 18%.
//!
//! `sequential` (tests/it/monte_carlo/sequential.rs) checks auto rounds the same way.
//!
//! Fixed seeds; prints the table it checks (`cargo test --release --test it -- monte_carlo::
//! --nocapture`). Tolerances are three binomial standard errors above the nominal rate.

use std::path::Path;

use tpsbench::record::{RunRecord, TestRecord};
use tpsbench::report::compare::{Side, compare_sides, side_of_run};
use tpsbench::stats::analysis::{Covers, LevelInterval, StopPolicy, StopReason};
use tpsbench::stats::compare::{Settings, Verdict};
use tpsbench::util::rng::SplitMix64;

/// `rounds = "auto"`: false "established" over all looks, power, rounds used, and short
/// rounds against long ones.
mod sequential;

/// The answer's stability between launches (issue 44): how often two launches of one design
/// contradict each other.
mod stability;

/// The speculative speedup's interval (issue 45): coverage of the paired-by-round interval.
mod speculative;

/// Racing (issue 46): wrong picks, false claims and cost against fixed rounds.
mod race;

/// The goodput race (issue 46): false claims and picks with binomial goodput noise, and what
/// the rule for a round without a good request costs.
mod race_goodput;

const MU: f64 = 700.0;
/// Noise within a context: the 1.8% sd seen between repetitions of one process.
const SIGMA: f64 = 0.02;
/// Noise between fresh contexts of one process.
const SIGMA_C: f64 = 0.02;
const REPS: usize = 5;

struct Noise {
    rng: SplitMix64,
}

impl Noise {
    fn new(seed: u64) -> Noise {
        Noise {
            rng: SplitMix64(seed),
        }
    }

    fn uniform(&mut self) -> f64 {
        ((self.rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// A standard normal draw (Box–Muller).
    fn z(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// One launch's repetitions (t/s) around `mu`, the launch's own level drawn first.
    fn launch(&mut self, mu: f64, sigma_l: f64, n: usize) -> (f64, Vec<f64>) {
        let level = mu * (sigma_l * self.z()).exp();
        let reps = (0..n).map(|_| level * (SIGMA * self.z()).exp()).collect();
        (level, reps)
    }
}

/// A pp512 record template, made by the real runner on llama.cpp with a tiny model.
fn template() -> RunRecord {
    use tpsbench::engine::llama::LlamaEngine;
    use tpsbench::output::progress::NoProgress;
    use tpsbench::runner::{RunOptions, run, run_info};
    let dir = tempfile::tempdir().unwrap();
    let gguf = dir.path().join("tiny.gguf");
    let mut f = std::fs::File::create(&gguf).unwrap();
    tpsbench::gguf::writer::write_gguf(&mut f, &tpsbench::gguf::tiny::document(1)).unwrap();
    let toml =
        "[sweep]\nn_prompt=512\nn_gen=0\nrepetitions=5\n[[model]]\nname='m'\npath='tiny.gguf'\n";
    let cfg_path = dir.path().join("models.toml");
    std::fs::write(&cfg_path, toml).unwrap();
    let cfg = tpsbench::config::load(&cfg_path, 2).unwrap();
    let info = run_info(&cfg, vec![], String::new(), vec![]);
    let e = LlamaEngine::new(false).unwrap();
    run(&e, info, &RunOptions::new(cfg, None), &mut NoProgress)
        .unwrap()
        .record
}

/// A record of one test whose rounds had these repetitions (t/s), built as the runner
/// builds it: the first round measured, each later one added with `add_round`.
fn record(t: &TestRecord, rounds: &[Vec<f64>]) -> TestRecord {
    let n = t.params.n_tokens() as f64;
    let ns = |reps: &Vec<f64>| -> Vec<u64> { reps.iter().map(|r| (n * 1e9 / r) as u64).collect() };
    let mut rec = t.clone();
    rec.set_measurement(ns(&rounds[0]), StopReason::Fixed, None);
    for r in &rounds[1..] {
        let mut next = t.clone();
        next.set_measurement(ns(r), StopReason::Fixed, None);
        rec.add_round(next, None);
    }
    rec
}

/// The same record put together directly (no statistics recomputed): what the verdict code
/// reads, for the cells that need many trials. `record` is the runner's path.
fn record_direct(t: &TestRecord, rounds: &[Vec<f64>]) -> TestRecord {
    let n = t.params.n_tokens() as f64;
    let ns = |reps: &Vec<f64>| -> Vec<u64> { reps.iter().map(|r| (n * 1e9 / r) as u64).collect() };
    let mut rec = t.clone();
    rec.set_samples(rounds.iter().flat_map(ns).collect());
    if rounds.len() >= 2 {
        rec.rounds = rounds
            .iter()
            .map(|r| tpsbench::record::RoundRecord {
                test_time: String::new(),
                samples_ns: ns(r),
                median_ts: tpsbench::stats::median(r),
                interval: None,
            })
            .collect();
    }
    rec
}

fn side(run: &RunRecord, t: TestRecord) -> Side {
    let mut r = run.clone();
    r.tests = vec![t];
    side_of_run(&r)
}

/// One launch of `n_rounds` rounds (fresh contexts) × repetitions: the launch's level
/// drawn once with σ_L, each round's with σ_C around it.
fn rounds(noise: &mut Noise, mu: f64, sigma_l: f64, n_rounds: usize) -> Vec<Vec<f64>> {
    let level = mu * (sigma_l * noise.z()).exp();
    (0..n_rounds)
        .map(|_| noise.launch(level, SIGMA_C, REPS).1)
        .collect()
}

/// Two tests measured in one launch, rounds interleaved: they share the launch's level,
/// and `ratio` is B's true speed over A's.
fn one_run(
    noise: &mut Noise,
    sigma_l: f64,
    n: usize,
    ratio: f64,
) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let level = MU * (sigma_l * noise.z()).exp();
    let a = (0..n)
        .map(|_| noise.launch(level, SIGMA_C, REPS).1)
        .collect();
    let b = (0..n)
        .map(|_| noise.launch(level * ratio, SIGMA_C, REPS).1)
        .collect();
    (a, b)
}

/// The verdict of A against B through `tpsbench compare`'s code: from two separate runs, or
/// (`same_run`) two tests of one run.
fn verdict(run: &RunRecord, a: &[Vec<f64>], b: &[Vec<f64>], same_run: bool) -> (Verdict, bool) {
    verdict_with(run, a, b, same_run, &Settings::default())
}

fn verdict_with(
    run: &RunRecord,
    a: &[Vec<f64>],
    b: &[Vec<f64>],
    same_run: bool,
    settings: &Settings,
) -> (Verdict, bool) {
    let t = &run.tests[0];
    let (mut sa, mut sb) = (
        side(run, record_direct(t, a)),
        side(run, record_direct(t, b)),
    );
    if same_run {
        sa.launch = sb.launch.clone();
    } else {
        // Two runs: different start times.
        sb.launch = Some("a later launch".into());
    }
    let report = compare_sides(&sa, &sb, &[], settings);
    let regression = !report.regressions(0.05).is_empty();
    (report.rows[0].comparison.verdict, regression)
}

fn changed(v: Verdict) -> bool {
    matches!(v, Verdict::Faster | Verdict::Slower)
}

/// The most a rate measured over `trials` may exceed `nominal` by: three standard errors.
fn ceiling(nominal: f64, trials: usize) -> f64 {
    nominal + 3.0 * (nominal * (1.0 - nominal) / trials as f64).sqrt()
}

#[test]
fn intervals_cover_at_their_stated_level_for_what_they_say_they_cover() {
    let mut noise = Noise::new(1);
    let trials = 2000;
    println!("coverage (nominal 95%), σ = {SIGMA}, σ_C = {SIGMA_C}, {trials} trials per cell");
    println!(
        "| n | σ_L | within one launch: its level | its μ | between n rounds of one launch: its level | between n rounds in fresh processes (--isolate): μ | bootstrap median, n reps: its level |"
    );
    println!("|--:|--:|--:|--:|--:|--:|--:|");
    for n in [3usize, 4, 5, 6, 10, 20] {
        for sigma_l in [0.0, 0.05] {
            let (mut level_hit, mut mu_hit, mut rounds_hit, mut procs_hit, mut boot) =
                (0, 0, 0, 0, 0);
            for i in 0..trials {
                let (level, reps) = noise.launch(MU, sigma_l, n);
                let w = LevelInterval::of(Covers::WithinLaunch, &reps).unwrap();
                level_hit += (w.lo..=w.hi).contains(&level) as usize;
                mu_hit += (w.lo..=w.hi).contains(&MU) as usize;
                // Rounds in one process: fresh contexts around the launch's level.
                let launch_level = MU * (sigma_l * noise.z()).exp();
                let medians: Vec<f64> = (0..n)
                    .map(|_| tpsbench::stats::median(&noise.launch(launch_level, SIGMA_C, REPS).1))
                    .collect();
                let r = LevelInterval::of(Covers::BetweenRounds, &medians).unwrap();
                rounds_hit += (r.lo..=r.hi).contains(&launch_level) as usize;
                // Rounds as fresh processes: each draws its own launch level.
                let medians: Vec<f64> = (0..n)
                    .map(|_| tpsbench::stats::median(&rounds(&mut noise, MU, sigma_l, 1)[0]))
                    .collect();
                let p = LevelInterval::of(Covers::BetweenRounds, &medians).unwrap();
                procs_hit += (p.lo..=p.hi).contains(&MU) as usize;
                if i < 300 {
                    let ci = tpsbench::stats::bootstrap::median_ci(&reps, i as u64);
                    boot += ci.contains(level) as usize;
                }
            }
            let f = |k: usize, of: usize| k as f64 / of as f64;
            println!(
                "| {n} | {sigma_l} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
                f(level_hit, trials),
                f(mu_hit, trials),
                f(rounds_hit, trials),
                f(procs_hit, trials),
                f(boot, 300)
            );
            // Each interval holds its level for what it says it covers.
            assert!(f(level_hit, trials) >= 0.93, "within one launch, n {n}");
            assert!(
                f(rounds_hit, trials) >= 0.93,
                "rounds of one launch, n {n}, σ_L {sigma_l}"
            );
            assert!(
                f(procs_hit, trials) >= 0.93,
                "rounds as processes, n {n}, σ_L {sigma_l}"
            );
            if sigma_l == 0.0 {
                assert!(f(mu_hit, trials) >= 0.93, "within at σ_L = 0, n {n}");
            }
        }
    }
}

#[test]
fn no_verdict_path_calls_identical_code_changed_more_often_than_alpha() {
    let run = template();
    let trials = 1000;
    let cap = ceiling(0.05, trials);
    println!("false positives on identical code (nominal ≤ 5%, ceiling {cap:.3}), {trials} trials");
    println!("| path | σ_L | faster/slower | gate fails (5%) |");
    println!("|---|--:|--:|--:|");
    for sigma_l in [0.0, 0.02, 0.05] {
        let mut noise = Noise::new(2 + (sigma_l * 1000.0) as u64);
        type Draw = fn(&mut Noise, f64) -> (Vec<Vec<f64>>, Vec<Vec<f64>>, bool);
        let paths: [(&str, Draw); 4] = [
            ("one run, two tests, 3 rounds (paired)", |n, l| {
                let (a, b) = one_run(n, l, 3, 1.0);
                (a, b, true)
            }),
            ("two runs, 3 rounds each (floor)", |n, l| {
                (rounds(n, MU, l, 3), rounds(n, MU, l, 3), false)
            }),
            ("two runs, 5 vs 3 rounds (floor)", |n, l| {
                (rounds(n, MU, l, 5), rounds(n, MU, l, 3), false)
            }),
            ("two runs, 1 round each (floor)", |n, l| {
                (rounds(n, MU, l, 1), rounds(n, MU, l, 1), false)
            }),
        ];
        for (name, draw) in paths {
            let (mut fp, mut gate) = (0, 0);
            for _ in 0..trials {
                let (a, b, same) = draw(&mut noise, sigma_l);
                let (v, g) = verdict(&run, &a, &b, same);
                fp += changed(v) as usize;
                gate += g as usize;
            }
            let (r, g) = (fp as f64 / trials as f64, gate as f64 / trials as f64);
            println!("| {name} | {sigma_l} | {r:.3} | {g:.3} |");
            assert!(r <= cap, "{name} at σ_L {sigma_l}: {r}");
            assert!(g <= cap, "{name} gate at σ_L {sigma_l}: {g}");
        }
    }
}

#[test]
fn run_baseline_judges_this_run_against_the_saved_one_at_alpha() {
    // `run --baseline`: the saved file read back by name, this run's record beside it.
    let run = template();
    let dir = tempfile::tempdir().unwrap();
    let trials = 300;
    let mut noise = Noise::new(3);
    let mut fp = 0;
    for i in 0..trials {
        let t = &run.tests[0];
        let mut base = run.clone();
        base.tests = vec![record(t, &rounds(&mut noise, MU, 0.05, 3))];
        let name = format!("b{i}");
        tpsbench::report::compare::save_baseline(&base, &name, dir.path()).unwrap();
        let saved = tpsbench::report::compare::load_side(&name, dir.path()).unwrap();
        let mut this = run.clone();
        this.run.started_at = format!("a later launch {i}");
        this.tests = vec![record(t, &rounds(&mut noise, MU, 0.05, 3))];
        let this = side_of_run(&this);
        let settings = tpsbench::report::compare::baseline_settings(&this);
        let r = compare_sides(&saved, &this, &[], &settings);
        fp += changed(r.rows[0].comparison.verdict) as usize;
    }
    let rate = fp as f64 / trials as f64;
    println!("--baseline, 3 rounds each, σ_L 0.05 (floor assumed 7%): false positives {rate:.3}");
    assert!(rate <= ceiling(0.05, trials), "{rate}");
}

/// Stands in for the child processes of `run --library`: each call is one launch of the
/// plan on a build, all builds identical.
struct Launches<'a> {
    template: &'a RunRecord,
    noise: Noise,
    sigma_l: f64,
}

impl tpsbench::report::library_ab::Launcher for Launches<'_> {
    fn run(
        &mut self,
        _lib: &Path,
        _args: &[String],
    ) -> Result<RunRecord, tpsbench::runner::RunnerError> {
        let mut r = self.template.clone();
        let launch = rounds(&mut self.noise, MU, self.sigma_l, 1);
        r.tests = vec![record(&r.tests[0], &launch)];
        Ok(r)
    }
}

#[test]
fn library_ab_on_identical_builds_is_significant_at_most_at_alpha() {
    let run = template();
    let trials = 400;
    let cap = ceiling(0.05, trials);
    for sigma_l in [0.0, 0.02, 0.05] {
        let mut l = Launches {
            template: &run,
            noise: Noise::new(4 + (sigma_l * 1000.0) as u64),
            sigma_l,
        };
        let libs = vec![Path::new("a").to_path_buf(), Path::new("b").to_path_buf()];
        let mut fp = 0;
        for _ in 0..trials {
            let recs =
                tpsbench::report::library_ab::run_rounds(&libs, 3, &[], None, &mut l, &mut |_| {})
                    .unwrap();
            assert_eq!(recs[0].tests[0].rounds.len(), 3, "a round per launch");
            let a = side_of_run(&recs[0]);
            let b = side_of_run(&recs[1]);
            let r = compare_sides(&a, &b, &[], &Settings::default());
            fp += changed(r.rows[0].comparison.verdict) as usize;
        }
        let rate = fp as f64 / trials as f64;
        println!("library A/B, 3 rounds, σ_L {sigma_l}: false positives {rate:.3}");
        assert!(rate <= cap, "σ_L {sigma_l}: {rate}");
    }
}

#[test]
fn real_changes_are_found_and_never_read_as_no_change() {
    let run = template();
    let trials = 400;
    println!(
        "power (slower, the right direction), {trials} trials; and 'no change' on a real change"
    );
    println!(
        "| true change | rounds | σ_L | one run, paired | two runs, floor = σ_L measured | read as no change |"
    );
    println!("|--:|--:|--:|--:|--:|--:|");
    let mut noise = Noise::new(5);
    for change in [0.05, 0.10] {
        for n in [3, 5, 10] {
            for sigma_l in [0.02, 0.05] {
                let measured = Settings {
                    floor: tpsbench::stats::compare::NoiseFloor {
                        sd: sigma_l,
                        source: tpsbench::stats::compare::FloorSource::Given,
                    },
                    ..Default::default()
                };
                let (mut paired, mut separate, mut none) = (0, 0, 0);
                for _ in 0..trials {
                    let (a, b) = one_run(&mut noise, sigma_l, n, 1.0 - change);
                    let (v, _) = verdict(&run, &a, &b, true);
                    paired += (v == Verdict::Slower) as usize;
                    none += (v == Verdict::NoChange) as usize;
                    let a = rounds(&mut noise, MU, sigma_l, n);
                    let b = rounds(&mut noise, MU * (1.0 - change), sigma_l, n);
                    let (v, _) = verdict_with(&run, &a, &b, false, &measured);
                    separate += (v == Verdict::Slower) as usize;
                    none += (v == Verdict::NoChange) as usize;
                }
                let f = |k: usize| k as f64 / trials as f64;
                let z = none as f64 / (2 * trials) as f64;
                println!(
                    "| {change} | {n} | {sigma_l} | {:.3} | {:.3} | {z:.3} |",
                    f(paired),
                    f(separate)
                );
                assert!(
                    z <= ceiling(0.05, 2 * trials),
                    "{change} read as no change: {z}"
                );
                if change == 0.10 && n >= 5 {
                    assert!(
                        f(paired) >= 0.8,
                        "paired power at 10%, {n} rounds: {}",
                        f(paired)
                    );
                }
            }
        }
    }
}

#[test]
fn an_adaptive_stop_leaves_an_interval_that_still_covers() {
    // ±1.5% with 3% noise: a stop on precision is unlikely early, the case where stopping
    // at the first lucky look under-covers.
    let policy = StopPolicy {
        min_repetitions: 3,
        ci_target: Some(0.015),
        max_repetitions: 200,
        max_seconds: f64::INFINITY,
    };
    let mut noise = Noise::new(6);
    let (mut stops, mut covered) = (0, 0);
    for _ in 0..2000 {
        let mut rates = Vec::new();
        loop {
            rates.push(MU * (0.03 * noise.z()).exp());
            match policy.should_stop(&rates, 0.0, 0) {
                None => continue,
                Some(StopReason::Precision) => {
                    stops += 1;
                    let ci = tpsbench::stats::order::median_ci_95(&rates).unwrap();
                    covered += ci.contains(MU) as usize;
                }
                Some(_) => {}
            }
            break;
        }
    }
    let cov = covered as f64 / stops as f64;
    println!("adaptive stop (two looks), ±1.5% target, 3% noise: {stops} stops, coverage {cov:.3}");
    assert!(stops > 1000, "{stops}");
    assert!(cov >= 0.94, "coverage at the stop {cov}");
}

/// The served/in-process ratio (`serving::ratio`, Welch on the log scale): within one run,
/// requests of the two sides scatter independently (lognormal, with different spreads and
/// counts), and the 95% interval covers the true ratio of their centres at its level.
#[test]
fn the_served_against_in_process_ratio_covers_at_its_stated_level() {
    let mut noise = Noise::new(29);
    let trials = 2000;
    println!("| n served | n in-process | σ served | σ in-process | coverage |");
    println!("|--:|--:|--:|--:|--:|");
    for (na, nb, sa, sb) in [
        (3, 3, 0.05, 0.05),
        (4, 8, 0.10, 0.30),
        (8, 8, 0.30, 0.10),
        (24, 24, 0.20, 0.20),
        (2, 6, 0.05, 0.20),
    ] {
        let truth = 0.8;
        let mut hit = 0;
        for _ in 0..trials {
            let in_process: Vec<f64> = (0..nb).map(|_| 100.0 * (sb * noise.z()).exp()).collect();
            let served: Vec<f64> = (0..na)
                .map(|_| 100.0 * truth * (sa * noise.z()).exp())
                .collect();
            let (_, ci) =
                tpsbench::stats::student::welch_log_ratio(&in_process, &served, 0.95).unwrap();
            hit += ci.contains(truth) as usize;
        }
        let cov = hit as f64 / trials as f64;
        println!("| {na} | {nb} | {sa} | {sb} | {cov:.3} |");
        // Welch's interval is approximate: within 2.5 points of 95% (3 binomial SE ≈ 1.5).
        assert!(
            (0.925..=0.975).contains(&cov),
            "{na}/{nb} σ {sa}/{sb}: {cov}"
        );
    }
}

#[test]
fn a_ladder_beside_its_base_model_s_own_run_calls_identical_rows_established_at_most_at_alpha() {
    // The leaderboard's table: 4 identical variants interleaved in one run (5 rounds, each
    // round's swing of 15% shared by all four, 2% of their own), beside an identical base row
    // from another run (3 rounds, its own swings). `resolve_runs` judges the run's pairs paired
    // (one Holm family) and the base row's pairs against the noise floor between launches
    // (another): over the whole table, "established" on identical rows at most 5% of the time.
    use tpsbench::stats::compare::{Method, NoiseFloor};
    use tpsbench::stats::pairs::Design;
    use tpsbench::stats::resolve::{Choice, Rule, Run, resolve_runs};
    use tpsbench::stats::ties::Figure;
    let choice = |rounds: Vec<f64>| {
        let i = LevelInterval::of(Covers::BetweenRounds, &rounds).unwrap();
        Choice {
            speed: Figure {
                value: tpsbench::stats::mean(&rounds),
                lo: i.lo,
                hi: i.hi,
            },
            rounds,
            error: None,
        }
    };
    let ladder = Some(Run {
        id: 0,
        design: Design::Fixed,
    });
    let base = Some(Run {
        id: 1,
        design: Design::Fixed,
    });
    let runs = [ladder, ladder, ladder, ladder, base];
    let trials = 2000;
    let mut noise = Noise::new(0x5eed_0036);
    let (mut paired, mut across, mut any) = (0usize, 0usize, 0usize);
    for _ in 0..trials {
        let swings: Vec<f64> = (0..5).map(|_| (0.15 * noise.z()).exp()).collect();
        let mut cs: Vec<Choice> = (0..4)
            .map(|_| {
                choice(
                    swings
                        .iter()
                        .map(|s| MU * s * (SIGMA * noise.z()).exp())
                        .collect(),
                )
            })
            .collect();
        cs.push(choice(
            (0..3)
                .map(|_| MU * (0.15 * noise.z()).exp() * (SIGMA * noise.z()).exp())
                .collect(),
        ));
        let r = resolve_runs(&cs, &runs, 0.05, 0.05, &NoiseFloor::assumed());
        assert!(
            matches!(
                r.rule,
                Rule::Mixed {
                    family: 6,
                    apart: 1,
                    ..
                }
            ),
            "{:?}",
            r.rule
        );
        let by = |m: Method| {
            r.pairs
                .iter()
                .any(|v| v.comparison.method == m && v.established != 0)
        };
        let (p, a) = (by(Method::PairedRounds), by(Method::NoiseFloor));
        paired += usize::from(p);
        across += usize::from(a);
        any += usize::from(p || a);
    }
    let t = trials as f64;
    let (p, a, all) = (paired as f64 / t, across as f64 / t, any as f64 / t);
    println!(
        "identical rows, a 4-variant run beside another run's row: false \"established\" \
         within the run (paired, Holm over 6 at 5% · 6/10) {p:.3}, across runs (against the floor, Holm over 4 at 5% · 4/10) {a:.3}, \
         anywhere in the table {all:.3} ({trials} trials)"
    );
    assert!(all <= ceiling(0.05, trials), "{all}");
}
