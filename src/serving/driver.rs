//! One driver for every serving test, in process or over HTTP: the repetitions, the goodput
//! search and a fixed-rate goodput round, and the record. What differs between the two is
//! how a batch of requests is served, behind [`Transport`].

use super::error::ServingError;
use super::goodput;
use super::http::tokens::Counted;
use super::metrics::{self, Trace};
use crate::config::serving::{Mode, ServingConfig, Slo};
use crate::output::progress::Progress;
use crate::plan::serving::ServingTest;
use crate::record::serving::{Goodput, GoodputStep, RepFigures, ServedDrafts, Serving};

pub(crate) trait Transport {
    /// One repetition of a parallel test: `n_parallel` requests of fresh prompts together.
    fn parallel(&mut self, t: &ServingTest, rep: u32) -> Result<Rep, ServingError>;
    /// One repetition of a request test: the workload's requests one after another.
    fn requests(&mut self, t: &ServingTest, rep: u32) -> Result<Rep, ServingError>;
    /// `n` of the workload's requests (cycled) arriving as a Poisson process at `rate`.
    fn arrivals(
        &mut self,
        t: &ServingTest,
        rate: f64,
        n: usize,
        rep: u32,
    ) -> Result<Rep, ServingError>;
    /// Completes the record with what only this transport knows; returns the context size.
    fn finish(&self, s: &mut Serving, g: &Gathered) -> u32;
}

pub(crate) struct Rep {
    pub figs: RepFigures,
    /// The repetition's sample: T_TG where it has phases, else its whole time; and its rate.
    pub sample_ns: u64,
    pub sample_ts: f64,
    /// Its requests' traces, on the clock that starts at `start_ns`.
    pub traces: Vec<Trace>,
    pub start_ns: u64,
    pub n_pp: u64,
    pub n_out: u64,
    pub n_kv: Option<u64>,
    pub tally: Tally,
}

/// What a server says of its answers: how many came up short, how their tokens were counted
/// (the least exact way of any), and its drafter's counters.
#[derive(Default)]
pub(crate) struct Tally {
    pub short: u32,
    pub counted: Counted,
    pub drafts: ServedDrafts,
}

impl Tally {
    pub(crate) fn join(&mut self, b: &Tally) {
        self.short += b.short;
        self.counted = self.counted.max(b.counted);
        let (a, b) = (&mut self.drafts, &b.drafts);
        // Saturating: the counts are a server's.
        a.answers = a.answers.saturating_add(b.answers);
        a.answers_counted = a.answers_counted.saturating_add(b.answers_counted);
        a.drafted = a.drafted.saturating_add(b.drafted);
        a.accepted = a.accepted.saturating_add(b.accepted);
    }
}

/// What a test's repetitions gather, in run order; the token counts are the last
/// repetition's (the same every repetition).
#[derive(Default)]
pub(crate) struct Gathered {
    pub figs: Vec<RepFigures>,
    pub traces: Vec<(u32, u64, Trace)>,
    pub samples_ns: Vec<u64>,
    pub samples_ts: Vec<f64>,
    pub n_pp: u64,
    pub n_out: u64,
    pub n_kv: Option<u64>,
    /// The requests of the last repetition.
    pub n_last: u32,
    pub goodput: Option<Goodput>,
    pub tally: Tally,
}

impl Gathered {
    fn add(&mut self, rep: u32, r: Rep) {
        self.samples_ns.push(r.sample_ns);
        self.samples_ts.push(r.sample_ts);
        (self.n_pp, self.n_out, self.n_kv) = (r.n_pp, r.n_out, r.n_kv);
        self.n_last = r.traces.len() as u32;
        self.tally.join(&r.tally);
        self.figs.push(r.figs);
        let s = r.start_ns;
        self.traces
            .extend(r.traces.into_iter().map(|x| (rep, s, x)));
    }
}

/// The sampling seed of request `j` of repetition `rep`, in process and over HTTP alike.
pub(crate) fn request_seed(seed: u64, rep: u32, j: usize) -> u64 {
    seed ^ (u64::from(rep) << 32) ^ (j as u64 + 1)
}

/// A measured test: its record, per-repetition samples for `samples_ns`/`samples_ts`, and
/// the context size.
pub(crate) type Measured = (Serving, Vec<u64>, Vec<f64>, u32);

pub(crate) fn measure(
    tr: &mut dyn Transport,
    sc: &ServingConfig,
    (seed, reps): (u64, u32),
    t: &ServingTest,
    progress: &mut dyn Progress,
) -> Result<Measured, ServingError> {
    // The goodput search is its own series of runs: one pass. At a fixed rate (a tune
    // race's round) each repetition is one run at that load.
    let reps = if t.mode == Mode::Goodput && t.rate.is_none() {
        1
    } else {
        reps
    };
    let slo = || sc.slo.as_ref().ok_or(ServingError::NoSlo);
    let mut g = Gathered::default();
    for rep in 0..reps {
        progress.repetition(rep, reps);
        match (t.mode, t.rate) {
            (Mode::Parallel, _) => g.add(rep, tr.parallel(t, rep)?),
            (Mode::Request, _) => g.add(rep, tr.requests(t, rep)?),
            (Mode::Arrival, rate) => {
                let r = tr.arrivals(t, rate.unwrap_or(1.0), sc.n_requests as usize, rep)?;
                g.add(rep, r);
            }
            // Each repetition is an arrival run whose sample is its goodput (requests
            // meeting the SLO per second, vLLM's `bench serve --goodput`).
            (Mode::Goodput, Some(rate)) => {
                let slo = slo()?;
                let r = tr.arrivals(t, rate, sc.n_requests as usize, rep)?;
                let st = step(&r, rate, slo, &t.id, progress);
                g.add(rep, r);
                goodput::join_step(&mut g.samples_ts, &mut g.goodput, st, slo);
            }
            (Mode::Goodput, None) => {
                let (r, found) = search(tr, sc, slo()?, t, progress)?;
                g.add(rep, r);
                g.goodput = Some(found);
            }
        }
    }
    let n_requests = match t.mode {
        Mode::Goodput => g.traces.len() as u32,
        _ => g.n_last,
    };
    let mut s = assemble(t, sc, seed, reps, n_requests, &g);
    let n_ctx = tr.finish(&mut s, &g);
    Ok((s, g.samples_ns, g.samples_ts, n_ctx))
}

/// The goodput step of an arrival run at `rate`, noted as test `id`'s progress.
fn step(r: &Rep, rate: f64, slo: &Slo, id: &str, progress: &mut dyn Progress) -> GoodputStep {
    let samples: Vec<_> = r.traces.iter().map(|x| x.sample(0, r.start_ns)).collect();
    let st = goodput::step(rate, &samples, r.sample_ns as f64 / 1e9, slo);
    progress.note(&goodput::step_line(id, &st));
    st
}

/// The goodput search: arrival runs of `[serving] goodput`'s n_requests at the rates the
/// search picks. Returns the run at the highest rate that met the SLOs (else the last one)
/// and the search.
fn search(
    tr: &mut dyn Transport,
    sc: &ServingConfig,
    slo: &Slo,
    t: &ServingTest,
    progress: &mut dyn Progress,
) -> Result<(Rep, Goodput), ServingError> {
    let gs = &sc.goodput;
    let began = std::time::Instant::now();
    let mut runs = Vec::new();
    let g = goodput::search(
        gs,
        slo,
        |rate| {
            let r = tr.arrivals(t, rate, gs.n_requests as usize, 0)?;
            let st = step(&r, rate, slo, &t.id, progress);
            runs.push((rate, r));
            Ok::<_, ServingError>(st)
        },
        || began.elapsed().as_secs_f64(),
    )?;
    let pick = g.max_rate.or(g.steps.last().map(|s| s.rate));
    let i = runs
        .iter()
        .position(|(r, _)| Some(*r) == pick)
        .unwrap_or(runs.len() - 1);
    Ok((runs.swap_remove(i).1, g))
}

fn assemble(
    t: &ServingTest,
    sc: &ServingConfig,
    seed: u64,
    reps: u32,
    n_requests: u32,
    g: &Gathered,
) -> Serving {
    let lat = metrics::latencies(g.traces.iter().map(|x| &x.2));
    let mean = |f: fn(&RepFigures) -> Option<f64>| metrics::mean_of(g.figs.iter().map(f));
    let output_ts = mean(|f| Some(f.output_ts)).unwrap_or(0.0);
    let t_ms = mean(|f| Some(f.t_ms)).unwrap_or(0.0);
    let overhead_ms = mean(|f| Some(f.overhead_ms)).unwrap_or(0.0);
    let idle_ms = mean(|f| f.idle_ms);
    let busy_ms = t_ms - idle_ms.unwrap_or(0.0);
    let meets_targets = sc
        .targets
        .as_ref()
        .map(|tg| metrics::meets(tg, &lat.ttft_ms, &lat.tpot_ms));
    Serving {
        mode: t.mode,
        transport: Default::default(),
        server: None,
        token_counts: None,
        short_requests: 0,
        vs_in_process: None,
        goodput: g.goodput.clone(),
        drafts: None,
        n_parallel: t.n_parallel,
        n_seq_max: t.n_seq_max,
        kv_unified: sc.kv_unified,
        shared_prompt: t.shared,
        arrival_rate: t.rate,
        n_requests,
        repetitions: reps,
        temperature: sc.temperature,
        sampling_seed: seed,
        n_prompt_tokens: g.n_pp,
        n_output_tokens: g.n_out,
        n_kv: g.n_kv,
        ttft_ms: lat.ttft_ms,
        itl_ms: lat.itl_ms,
        e2e_ms: lat.e2e_ms,
        tpot_ms: lat.tpot_ms,
        queue_ms: (t.mode == Mode::Arrival && t.transport.is_in_process()).then_some(lat.queue_ms),
        per_request_ts: lat.per_request_ts,
        aggregate_pp_ts: mean(|f| f.aggregate_pp_ts),
        aggregate_ts: mean(|f| f.aggregate_ts),
        total_ts: mean(|f| f.total_ts),
        output_ts,
        t_pp_ms: mean(|f| f.t_pp_ms),
        t_tg_ms: mean(|f| f.t_tg_ms),
        t_ms,
        overhead_ms,
        overhead_fraction: if busy_ms > 0.0 {
            overhead_ms / busy_ms
        } else {
            0.0
        },
        idle_ms,
        dataset: None,
        targets: sc.targets.clone(),
        meets_targets,
        price_per_hour: sc.price_per_hour,
        cost_per_mtok: sc
            .price_per_hour
            .and_then(|p| metrics::cost_per_mtok(p, output_ts)),
        reps: g.figs.clone(),
        requests: g.traces.iter().map(|(r, s, x)| x.sample(*r, *s)).collect(),
    }
}
