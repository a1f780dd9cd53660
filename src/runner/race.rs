//! `tpsbench tune`: the sweep's configurations at the objective's test sizes raced for the
//! `[tune]` objective, one candidate each, in the steps docs/tune.md lists. Every round is a
//! round of its test in the result file and the verdicts are the run's `tune` record, so the
//! race can be replayed.

mod bisect;
mod goodput;
mod limits;
pub(crate) use limits::per_device;
mod load;
mod served;
mod speculative;

use std::time::{Duration, Instant};

use super::prepare;
use super::rounds::rotated;
use super::sweep::Sweep;
use super::{RunOptions, RunOutcome, RunnerError, target};
use crate::config::tune::Tune;
use crate::config::{Axes, Config};
use crate::engine::Engine;
use crate::output::progress::Progress;
use crate::plan::{Detail, PlannedTest};
use crate::record::tune::TuneRecord;
use crate::record::{RunInfo, Status};
use crate::stats::race::{self, Race};

/// The configuration with every sweep at the objective's test sizes: one test per
/// configuration, the one the race maximises.
pub fn at_objective(config: &Config, t: &Tune) -> Config {
    let mut c = config.clone();
    let set = |a: &mut Axes| {
        a.n_prompt = vec![t.objective.n_prompt];
        a.n_gen = vec![t.objective.n_gen];
        a.n_depth = vec![t.objective.n_depth];
    };
    c.models.iter_mut().for_each(|m| set(&mut m.axes));
    c.ladders.iter_mut().for_each(|l| set(&mut l.axes));
    // A goodput race's round is one pass of [serving]'s requests.
    if let (Some(_), Some(sc)) = (&t.goodput, c.serving.as_mut()) {
        sc.repetitions = 1;
    }
    // Rounds are the race's: one at a time.
    c.settings.rounds = 1;
    c.settings.auto_rounds = None;
    if !c.settings.repetitions_given {
        c.settings.repetitions = crate::config::AutoRounds::REPETITIONS;
    }
    c
}

/// The id of configuration `b` measured as `what` (a load, a decoding): the bench id is
/// `model/quant/<test>/<axes>`, and the test's part becomes `what`.
fn measured_as(b: &PlannedTest, what: &str) -> String {
    let test = b.params.name().replace(" @ ", "@");
    match b.id.split_once(&format!("/{test}")) {
        Some((head, tail)) => format!("{head}/{what}{tail}"),
        None => format!("{}/{what}", b.id),
    }
}

/// Runs the race `opts.config`'s `[tune]` asks for.
pub fn tune(
    engine: &dyn Engine,
    info: RunInfo,
    opts: &RunOptions,
    progress: &mut dyn Progress,
) -> Result<RunOutcome, RunnerError> {
    let Some(t) = opts.config.tune.clone() else {
        return Err(RunnerError::Refused(format!(
            "{}: no [tune] table: add one with an objective, e.g. [tune] objective = \"tg128\" (docs/tune.md)",
            opts.config.file.display()
        )));
    };
    let opts = RunOptions {
        config: at_objective(&opts.config, &t),
        power: false,
        ..opts.clone()
    };
    // The filters choose candidates only: the quality tests the KLD limit needs stay planned.
    let prep = prepare::prepare(&opts.config, &[], false)?;
    let (space, endpoints) = space(&opts, &prep, &t, &info.devices)?;
    let info = super::describe_plan(info, &prep.plan, &opts);
    // Before any file is written: a device limit on a device this build lacks is bad input.
    let memory = limits::Memory::new(&opts, &prep, &t, &info.devices)?;
    let (path, record) = target::open(info, opts.results_dir.as_deref(), None, false)?;
    // Every configuration plain, and with each drafter setting (the speculative objective).
    let total = speculative::space(&t, &prep, &space);
    // The progress counter's total: every candidate every round, the most the race runs.
    let slots = t.goodput.as_ref().map_or(1, |g| g.slots.len());
    let most = (total * slots + endpoints.len()) * t.max_rounds as usize;
    let mut sweep = Sweep::new(engine, &opts, &prep, record, path, (0, most))?;
    let mut rec = new_record(&t, total);
    let mut stages = Stages {
        engine,
        memory,
        t: &t,
    };
    let ran = stages.run(&mut sweep, space, endpoints, &mut rec, progress);
    let interrupted = match ran {
        Ok(interrupted) => interrupted,
        // Refused after the file was opened: the file keeps what was measured and why.
        Err(RunnerError::Refused(line)) if !rec.stopped.is_empty() => {
            sweep.record.run.tune = Some(rec);
            sweep.finish(false)?;
            return Err(RunnerError::Refused(line));
        }
        // Ctrl-C before the rounds: the file keeps what was measured, and says so.
        Err(RunnerError::Interrupted(what)) => {
            rec.stopped = format!("interrupted while {what}");
            true
        }
        Err(e) => return Err(e),
    };
    sweep.record.run.tune = Some(rec);
    Ok(sweep.finish(interrupted)?)
}

/// The candidates the filters keep (the llama-bench tests at the objective's sizes) and
/// the served endpoints that race beside them, checked before any file is written.
fn space(
    opts: &RunOptions,
    prep: &prepare::Prepared,
    t: &Tune,
    devices: &[crate::record::DeviceInfo],
) -> Result<(Vec<PlannedTest>, Vec<PlannedTest>), RunnerError> {
    let space: Vec<PlannedTest> = (prep.plan.tests.iter())
        .filter(|x| matches!(x.detail, Detail::Bench))
        .cloned()
        .collect();
    let space = crate::plan::filter(space, &opts.filters);
    // The goodput objective races served entries over HTTP too (`race/served.rs`).
    let (space, endpoints) = served::split(&opts.config, &prep.plan, space, &opts.filters)?;
    if space.is_empty() && endpoints.is_empty() {
        return Err(RunnerError::Refused(format!(
            "{}: objective {}: the space has no model file to measure it on (served models race only under objective \"goodput\", or the filters keep none)",
            opts.config.file.display(),
            t.objective_name()
        )));
    }
    prepare::check_models(&prep.models, &space)?;
    // Served models answer (or their llama-server can be started) before any file is written.
    let http = space.iter().chain(&endpoints).map(|c| c.model);
    let http: std::collections::BTreeSet<usize> = http
        .filter(|&m| served::reach(&opts.config, m) != served::Reach::InProcess)
        .collect();
    if t.goodput.is_some() {
        super::served_ready(&opts.config, http, devices)?;
    }
    Ok((space, endpoints))
}

struct Stages<'a> {
    engine: &'a dyn Engine,
    /// The memory limits, which hold the run's options and plan.
    memory: limits::Memory<'a>,
    t: &'a Tune,
}

impl Stages<'_> {
    /// The limits, bisection, the drafters and the race, into `rec`; true when Ctrl-C
    /// stopped the race. A race refused after the file was opened sets `rec.stopped`.
    fn run(
        &mut self,
        sweep: &mut Sweep,
        space: Vec<PlannedTest>,
        endpoints: Vec<PlannedTest>,
        rec: &mut TuneRecord,
        progress: &mut dyn Progress,
    ) -> Result<bool, RunnerError> {
        let (opts, prep, t) = (self.memory.opts, self.memory.prep, self.t);
        let candidates = limits::apply(
            self.engine,
            sweep,
            &mut self.memory,
            t,
            space,
            rec,
            progress,
        )?;
        let candidates = goodput::serving(t, &opts.config, candidates, endpoints, rec);
        // A goodput candidate's slots each hold a context: memory again, for all of them.
        let candidates = limits::expanded(&mut self.memory, t, candidates, &mut rec.excluded);
        if candidates.is_empty() {
            // The file keeps what was measured (the quality tests) and what each limit excluded.
            return Err(refused(rec, empty_space_line(&opts.config, t, rec)));
        }
        // Monotone placement axes: bisected for their boundary, which races with its neighbour.
        let candidates = bisect::plan(sweep, &mut self.memory, t, candidates, rec, progress)?;
        if candidates.is_empty() {
            return Err(refused(rec, bisect::nothing_loads(opts, t)));
        }
        if t.limits.max_load_seconds.is_none() {
            rec.loads = load::distinct(load::measure(self.engine, opts, prep, &candidates));
        }
        // The placements that race, each decoding plain and drafted (speculative objective).
        let candidates = speculative::candidates(t, &opts.config, prep, candidates);
        // A drafted candidate holds its draft model too: memory again, with both.
        let candidates = limits::expanded(&mut self.memory, t, candidates, &mut rec.excluded);
        let interrupted = run_race(sweep, t, &candidates, rec, opts, progress)?;
        latency_limits(t, &sweep.record, rec);
        Ok(interrupted)
    }
}

/// Marks `rec` refused with `line`, the error the race then returns.
fn refused(rec: &mut TuneRecord, line: String) -> RunnerError {
    rec.stopped = format!("refused: {line}");
    RunnerError::Refused(line)
}

/// The record of a race not yet run: the question and the space.
fn new_record(t: &Tune, space: usize) -> TuneRecord {
    let s = race::Settings::new(t.max_rounds as usize);
    TuneRecord {
        objective: t.objective_name(),
        space,
        alpha: s.alpha,
        indifference: s.indifference,
        max_rounds: t.max_rounds,
        max_seconds: t.max_seconds,
        looks: race::looks(t.max_rounds as usize),
        ..Default::default()
    }
}

/// The TTFT/ITL limits of a ppN or tgN objective, on the rounds the race measured: which
/// raced candidates' quantile broke them (`record::tune::breaks`, which `verify` reruns).
fn latency_limits(t: &Tune, run: &crate::record::RunRecord, rec: &mut TuneRecord) {
    let l = t.limits.latency;
    if !l.any() {
        return;
    }
    let mut s = crate::record::tune::TuneSlo {
        max_ttft_ms: l.max_ttft_ms,
        max_itl_ms: l.max_itl_ms,
        quantile: l.quantile,
        ..Default::default()
    };
    s.broke = crate::record::tune::breaks(&s, &rec.candidates, &run.tests);
    rec.slo = Some(s);
}

/// "models.toml: objective tg128: the limits leave nothing to race: max_kld excluded 3 (…);
/// memory excluded 2 (…)".
fn empty_space_line(config: &Config, t: &Tune, rec: &TuneRecord) -> String {
    let parts: Vec<String> = (rec.excluded_by_limit().into_iter())
        .map(|(l, n, mut distinct)| {
            let more = if distinct.len() > 3 { "; ..." } else { "" };
            distinct.truncate(3);
            format!("{l} excluded {n} ({}{more})", distinct.join("; "))
        })
        .collect();
    format!(
        "{}: objective {}: the limits leave nothing to race among {} candidate{}: {}",
        config.file.display(),
        t.objective_name(),
        rec.space,
        if rec.space == 1 { "" } else { "s" },
        parts.join("; ")
    )
}

/// Round after round over the survivors until `stats::race`, the budget or Ctrl-C (true)
/// stops it.
fn run_race(
    sweep: &mut Sweep,
    t: &Tune,
    candidates: &[PlannedTest],
    rec: &mut TuneRecord,
    opts: &RunOptions,
    progress: &mut dyn Progress,
) -> Result<bool, RunnerError> {
    let mut r = Race::new(candidates.len(), race::Settings::new(t.max_rounds as usize));
    rec.level = r.level();
    // A probed candidate's first round was its probe: the race's rounds follow it.
    let skip = bisect::probe_rounds(&rec.bisections, candidates);
    let begun = Instant::now();
    let mut last = Duration::ZERO;
    let mut interrupted = false;
    let mut round = 0usize;
    while r.stop().is_none() {
        let elapsed = begun.elapsed();
        let over = |max| super::auto::past_budget("max_seconds", max, elapsed, last, round);
        if let Some(why) = t.max_seconds.filter(|_| round > 0).and_then(over) {
            r.end(why);
            break;
        }
        let alive = r.survivors();
        if !opts.quiet {
            progress.note(&format!(
                "tune: round {}/{} of {} candidates",
                round + 1,
                t.max_rounds,
                alive.len()
            ));
        }
        let due: Vec<PlannedTest> = (alive.iter())
            .map(|&i| speculative::in_round(candidates[i].clone(), round))
            .collect();
        let t0 = Instant::now();
        interrupted = sweep.measure_all(&rotated(&due, round), progress)?;
        last = t0.elapsed();
        if round == 0 {
            rec.first_round_seconds = last.as_secs_f64();
        }
        if interrupted {
            r.end("interrupted".into());
            break;
        }
        round += 1;
        let values: Vec<(usize, Option<f64>)> = alive
            .iter()
            .map(|&i| (i, round_value(sweep, &candidates[i], skip[i] + round)))
            .collect();
        r.add_round(&values);
    }
    rec.seconds = begun.elapsed().as_secs_f64();
    conclude(&r, candidates, rec);
    for (c, s) in rec.candidates.iter_mut().zip(skip) {
        c.probe_rounds = s;
    }
    if !opts.quiet {
        eprintln!("tune: {}", rec.stopped);
    }
    Ok(interrupted)
}

/// The candidate's round median in its test's round `round` (1-based), if it has one.
fn round_value(sweep: &Sweep, t: &PlannedTest, round: usize) -> Option<f64> {
    let rec = &sweep.record.tests[*sweep.index.get(&t.id)?];
    let m = rec.round_medians();
    (rec.status == Status::Ok && m.len() == round).then(|| m[round - 1])
}

fn conclude(r: &Race, candidates: &[PlannedTest], rec: &mut TuneRecord) {
    rec.stopped = r
        .stop()
        .map_or_else(|| "not started".into(), |s| s.describe());
    rec.rounds = r.rounds_done();
    rec.tests_run = r.cost();
    let ids: Vec<String> = candidates.iter().map(|c| c.id.clone()).collect();
    (rec.candidates, rec.winner) = crate::record::tune::verdicts(r, &ids);
}

#[cfg(test)]
mod tests;
