//! The measurement of serving tests: a group's context and workload (synthetic prompts or a
//! prompt file), made once per group and warmed up, then each test's repetitions and figures.
//! `kinds::serving` calls it for the runner.

use super::arrivals::ArrivalRun;
use super::bench::{self, Request};
use super::dataset::PromptFile;
use super::metrics::{self, Trace};
use super::sampling::Sampler;
use crate::config::serving::{Mode, ServingConfig};
use crate::engine::measure::TokenSource;
use crate::engine::{BatchParams, BatchSession, Engine, Model, ServingModel};
use crate::output::progress::Progress;
use crate::plan::serving::{ServingTest, parallel_n_ctx, slots_n_ctx};
use crate::record::serving::{DatasetInfo, Goodput, RepFigures, Serving};

mod record;
mod workload;
pub(crate) use record::{fill, summary_line};
use workload::workload;

/// A group's context and requests.
pub(crate) type Ready<'m> = (Box<dyn BatchSession + 'm>, Workload);

pub(crate) struct Workload {
    /// Requests of request and arrival tests (the same every repetition).
    requests: Vec<Request>,
    /// Boxed: a group's context is held in an enum beside a served group's.
    dataset: Option<Box<DatasetInfo>>,
    n_vocab: i32,
    bos: Option<i32>,
}

pub(crate) struct GroupRun<'a> {
    pub engine: &'a dyn Engine,
    pub sc: &'a ServingConfig,
    pub seed: u64,
    pub reps: u32,
    pub prompts: Option<&'a PromptFile>,
}

/// A measured test: its figures, per-repetition samples for `samples_ns`/`samples_ts`, and
/// the context size.
pub(crate) type Measured = (Serving, Vec<u64>, Vec<f64>, u32);

impl GroupRun<'_> {
    /// Builds the workload, sizes and makes the context, and warms it up.
    pub(crate) fn prepare<'m>(
        &self,
        model: &'m dyn Model,
        t: &ServingTest,
    ) -> Result<Ready<'m>, String> {
        let sm: &dyn ServingModel = model
            .serving()
            .ok_or("this engine cannot run serving tests")?;
        let info = model.info();
        let sc = self.sc;
        let (requests, dataset) = match t.mode {
            Mode::Parallel => (Vec::new(), None),
            _ => workload(sm, info, sc, self.prompts, self.seed)?,
        };
        let longest = requests
            .iter()
            .map(|r| r.prompt.len() as u32 + r.n_gen)
            .max()
            .unwrap_or(sc.n_prompt + sc.n_gen);
        let n_ctx = match t.mode {
            Mode::Parallel => parallel_n_ctx(sc, t.n_seq_max, t.shared),
            _ => slots_n_ctx(longest, t.n_seq_max),
        };
        if info.n_ctx_train > 0 && longest > info.n_ctx_train {
            return Err(format!(
                "a request needs {longest} tokens of context but the model was trained for {}",
                info.n_ctx_train
            ));
        }
        let params = BatchParams {
            base: t.params.clone(),
            n_ctx,
            n_seq_max: t.n_seq_max,
            kv_unified: sc.kv_unified,
        };
        let mut session = sm.batch_session(&params)?;
        let room = if sc.kv_unified {
            n_ctx
        } else {
            n_ctx / t.n_seq_max.max(1)
        };
        bench::warmup(session.as_mut(), info.n_vocab, self.seed, room)?;
        let work = Workload {
            requests,
            dataset: dataset.map(Box::new),
            n_vocab: info.n_vocab,
            bos: info.bos,
        };
        Ok((session, work))
    }

    fn samplers(&self, n: usize, rep: u32) -> Vec<Sampler> {
        (0..n)
            .map(|j| {
                let s = self.seed ^ (u64::from(rep) << 32) ^ (j as u64 + 1);
                Sampler::new(self.sc.temperature as f32, s)
            })
            .collect()
    }

    /// Measures test `t` on the group's context: its repetitions, then its record.
    pub(crate) fn measure(
        &mut self,
        session: &mut dyn BatchSession,
        work: &Workload,
        t: &ServingTest,
        progress: &mut dyn Progress,
    ) -> Result<Measured, String> {
        // Parallel tests draw fresh prompts every repetition, from one stream per test.
        let mut tokens = TokenSource::new(self.seed, &work.token_info());
        // The goodput search is its own series of runs: one pass. At a fixed rate (a tune
        // race's round) each repetition is one run at that load.
        let reps = if t.mode == Mode::Goodput && t.rate.is_none() {
            1
        } else {
            self.reps
        };
        let mut g = Gathered::default();
        for rep in 0..reps {
            progress.repetition(rep, reps);
            match t.mode {
                Mode::Parallel => self.parallel_rep(session, t, rep, &mut tokens, &mut g)?,
                Mode::Request => self.request_rep(session, work, t, rep, &mut g)?,
                Mode::Goodput if t.rate.is_some() => {
                    self.goodput_at_rate(session, work, t, rep, progress, &mut g)?
                }
                Mode::Goodput => self.goodput_rep(session, work, t, rep, progress, &mut g)?,
                Mode::Arrival => self.arrival_rep(session, work, t, rep, &mut g)?,
            }
        }
        Ok(self.finish(t, work, reps, g, session.n_ctx()))
    }

    /// One repetition of a parallel test: `n_parallel` requests decoded together. Their
    /// prompts are drawn before the timed run.
    fn parallel_rep(
        &self,
        session: &mut dyn BatchSession,
        t: &ServingTest,
        rep: u32,
        tokens: &mut TokenSource,
        g: &mut Gathered,
    ) -> Result<(), String> {
        let sc = self.sc;
        let b = t.n_parallel as usize;
        let reqs = parallel_requests(sc, b, t.shared, tokens);
        let mut samplers = self.samplers(b, rep);
        let r = bench::run_together(
            session,
            self.engine,
            &reqs,
            t.shared,
            sc.kv_unified,
            t.params.n_batch as usize,
            &mut samplers,
        )?;
        g.together(&r.phases);
        let tg = u64::from(sc.n_gen - 1);
        let pp = u64::from(sc.n_prompt);
        g.n_kv = Some(metrics::n_kv(pp, tg, b as u64, t.shared, sc.kv_unified));
        g.traces
            .extend(r.traces.into_iter().map(|x| (rep, r.start_ns, x)));
        Ok(())
    }

    /// One repetition of a request test: the workload's requests one at a time, each a run
    /// of its own; the repetition's phases are their sums, and its traces are on the clock
    /// of its first request.
    fn request_rep(
        &self,
        session: &mut dyn BatchSession,
        work: &Workload,
        t: &ServingTest,
        rep: u32,
        g: &mut Gathered,
    ) -> Result<(), String> {
        let mut sum = metrics::Phases::default();
        let mut start = None;
        for (k, q) in work.requests.iter().enumerate() {
            let mut samplers = self.samplers(1, rep ^ ((k as u32) << 16));
            let r = bench::run_together(
                session,
                self.engine,
                std::slice::from_ref(q),
                false,
                self.sc.kv_unified,
                t.params.n_batch as usize,
                &mut samplers,
            )?;
            let start = *start.get_or_insert(r.start_ns);
            add_phases(&mut sum, &r.phases);
            g.traces
                .extend(r.traces.into_iter().map(|x| (rep, start, x)));
        }
        g.together(&sum);
        let longest = work
            .requests
            .iter()
            .map(|r| r.prompt.len() as u64 + u64::from(r.n_gen) - 1);
        g.n_kv = longest.max();
        Ok(())
    }

    /// The one pass of a goodput test: the search, with the figures of the run it picked.
    fn goodput_rep(
        &self,
        session: &mut dyn BatchSession,
        work: &Workload,
        t: &ServingTest,
        rep: u32,
        progress: &mut dyn Progress,
        g: &mut Gathered,
    ) -> Result<(), String> {
        let (r, found) = self.goodput(session, work, t, progress)?;
        let n_pp = r.traces.iter().map(|q| u64::from(q.n_prompt)).sum();
        g.arrival(rep, r, n_pp);
        g.goodput = Some(found);
        Ok(())
    }

    /// One repetition of a goodput test at its fixed rate: an arrival run, whose sample is
    /// its goodput (requests meeting the SLO per second, vLLM's `bench serve --goodput`)
    /// rather than its output rate; its step joins the test's goodput record.
    fn goodput_at_rate(
        &self,
        session: &mut dyn BatchSession,
        work: &Workload,
        t: &ServingTest,
        rep: u32,
        progress: &mut dyn Progress,
        g: &mut Gathered,
    ) -> Result<(), String> {
        let slo = (self.sc.slo.as_ref()).ok_or("the goodput test needs [serving] slo")?;
        self.arrival_rep(session, work, t, rep, g)?;
        let n = work.requests.len();
        let (t_ns, start) = (g.samples_ns[g.samples_ns.len() - 1], g.traces.len() - n);
        let samples: Vec<_> = (g.traces[start..].iter())
            .map(|(_, s, x)| x.sample(0, *s))
            .collect();
        let st = super::goodput::step(t.rate.unwrap_or(1.0), &samples, t_ns as f64 / 1e9, slo);
        progress.note(&super::goodput::step_line(&t.id, &st));
        super::goodput::join_step(&mut g.samples_ts, &mut g.goodput, st, slo);
        Ok(())
    }

    /// One repetition of an arrival test: the workload's requests arriving as a Poisson
    /// process at the test's rate (seeded anew each repetition), served with continuous
    /// batching in `n_parallel` slots.
    fn arrival_rep(
        &self,
        session: &mut dyn BatchSession,
        work: &Workload,
        t: &ServingTest,
        rep: u32,
        g: &mut Gathered,
    ) -> Result<(), String> {
        let rate = t.rate.unwrap_or(1.0);
        let n = work.requests.len();
        let offsets = metrics::poisson_offsets(n, rate, self.seed.wrapping_add(u64::from(rep)));
        let mut samplers = self.samplers(n, rep);
        let r = super::arrivals::run_arrivals(
            session,
            self.engine,
            &work.requests,
            &offsets,
            t.n_parallel,
            t.params.n_batch as usize,
            &mut samplers,
        )?;
        let n_pp = work.requests.iter().map(|q| q.prompt.len() as u64).sum();
        g.arrival(rep, r, n_pp);
        Ok(())
    }

    /// The test's record from what its repetitions gathered; `n_ctx` is the context's.
    fn finish(
        &self,
        t: &ServingTest,
        work: &Workload,
        reps: u32,
        g: Gathered,
        n_ctx: u32,
    ) -> Measured {
        let n_requests = match t.mode {
            Mode::Parallel => t.n_parallel,
            Mode::Goodput => g.traces.len() as u32,
            _ => work.requests.len() as u32,
        };
        let counts = Counts {
            n_requests,
            n_pp: g.n_pp,
            n_out: g.n_out,
            n_kv: g.n_kv,
        };
        let dataset = work.dataset.as_deref().cloned();
        let mut serving = assemble(
            t, self.sc, self.seed, reps, dataset, g.figs, &g.traces, counts,
        );
        serving.goodput = g.goodput;
        (serving, g.samples_ns, g.samples_ts, n_ctx)
    }
}

impl Workload {
    /// The model facts synthetic prompts are drawn with: its vocabulary and BOS.
    fn token_info(&self) -> crate::engine::ModelInfo {
        crate::engine::ModelInfo {
            description: String::new(),
            size: 0,
            n_params: 0,
            n_vocab: self.n_vocab,
            bos: self.bos,
            n_ctx_train: 0,
        }
    }
}

/// What a test's repetitions gather, in run order: each one's figures and sample (time and
/// rate), its requests' traces with their repetition and clock start, and the token counts
/// (the same every repetition: the last one's stay).
#[derive(Default)]
struct Gathered {
    figs: Vec<RepFigures>,
    traces: Vec<(u32, u64, Trace)>,
    samples_ns: Vec<u64>,
    samples_ts: Vec<f64>,
    n_pp: u64,
    n_out: u64,
    n_kv: Option<u64>,
    goodput: Option<Goodput>,
}

impl Gathered {
    /// A repetition of requests decoded together (or one after another, summed): its
    /// sample is T_TG and S_TG, as llama-batched-bench reports.
    fn together(&mut self, p: &metrics::Phases) {
        let f = p.figures();
        self.samples_ns.push(p.t_tg_ns);
        self.samples_ts.push(f.aggregate_ts.unwrap_or(0.0));
        (self.n_pp, self.n_out) = (p.n_pp, p.n_out);
        self.figs.push(f);
    }

    /// An arrival run as a repetition of `n_pp` prompt tokens: its sample is its whole time
    /// and output rate (arrivals have no phases), its traces on its own clock.
    fn arrival(&mut self, rep: u32, r: ArrivalRun, n_pp: u64) {
        let f = r.figures();
        self.samples_ns.push(r.t_ns);
        self.samples_ts.push(f.output_ts);
        self.n_pp = n_pp;
        self.n_out = r.n_out;
        self.figs.push(f);
        self.traces
            .extend(r.traces.into_iter().map(|x| (rep, r.start_ns, x)));
    }
}

/// The requests of one parallel repetition: `b` of n_prompt tokens, with one prompt drawn
/// for all (`shared`) or one drawn for each.
fn parallel_requests(
    sc: &ServingConfig,
    b: usize,
    shared: bool,
    tokens: &mut TokenSource,
) -> Vec<Request> {
    if shared {
        let p = tokens.prompt(sc.n_prompt as usize);
        vec![
            Request {
                prompt: p,
                n_gen: sc.n_gen
            };
            b
        ]
    } else {
        (0..b)
            .map(|_| Request {
                prompt: tokens.prompt(sc.n_prompt as usize),
                n_gen: sc.n_gen,
            })
            .collect()
    }
}

/// Adds one request's phases to a request test's sums.
fn add_phases(sum: &mut metrics::Phases, p: &metrics::Phases) {
    sum.t_pp_ns += p.t_pp_ns;
    sum.t_tg_ns += p.t_tg_ns;
    sum.t_ns += p.t_ns;
    sum.n_pp += p.n_pp;
    sum.n_tg += p.n_tg;
    sum.n_out += p.n_out;
    sum.engine_ns += p.engine_ns;
}

impl GroupRun<'_> {
    /// The goodput search in-process: arrival runs of `[serving] goodput`'s n_requests
    /// (the workload's requests, cycled) at the rates the search picks. Returns the run at
    /// the highest rate that met the SLOs (else the last one) and the search.
    fn goodput(
        &self,
        session: &mut dyn BatchSession,
        work: &Workload,
        t: &ServingTest,
        progress: &mut dyn Progress,
    ) -> Result<(ArrivalRun, Goodput), String> {
        let sc = self.sc;
        let slo = sc
            .slo
            .as_ref()
            .ok_or("the goodput test needs [serving] slo")?;
        let gs = &sc.goodput;
        let n = gs.n_requests as usize;
        let reqs: Vec<Request> = (0..n)
            .map(|k| work.requests[k % work.requests.len().max(1)].clone())
            .collect();
        let began = std::time::Instant::now();
        let mut runs = Vec::new();
        let g = super::goodput::search(
            gs,
            slo,
            |rate| {
                let offsets = metrics::poisson_offsets(n, rate, self.seed);
                let mut samplers = self.samplers(n, 0);
                let r = super::arrivals::run_arrivals(
                    session,
                    self.engine,
                    &reqs,
                    &offsets,
                    t.n_parallel,
                    t.params.n_batch as usize,
                    &mut samplers,
                )?;
                let samples: Vec<_> = r.traces.iter().map(|x| x.sample(0, r.start_ns)).collect();
                let st = super::goodput::step(rate, &samples, r.t_ns as f64 / 1e9, slo);
                progress.note(&super::goodput::step_line(&t.id, &st));
                runs.push((rate, r));
                Ok(st)
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
}

/// A test's request and token counts, for [`assemble`].
pub(crate) struct Counts {
    pub n_requests: u32,
    /// Prompt tokens and generated tokens per repetition.
    pub n_pp: u64,
    pub n_out: u64,
    pub n_kv: Option<u64>,
}

/// A test's record from its repetitions' figures and its requests' traces (in-process and
/// served alike).
#[allow(clippy::too_many_arguments)]
pub(crate) fn assemble(
    t: &ServingTest,
    sc: &ServingConfig,
    seed: u64,
    reps: u32,
    dataset: Option<DatasetInfo>,
    figs: Vec<RepFigures>,
    traces: &[(u32, u64, Trace)],
    c: Counts,
) -> Serving {
    let Counts {
        n_requests,
        n_pp,
        n_out,
        n_kv,
    } = c;
    let lat = metrics::latencies(traces.iter().map(|x| &x.2));
    let mean = |f: fn(&RepFigures) -> Option<f64>| metrics::mean_of(figs.iter().map(f));
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
        mode: t.mode.name().into(),
        transport: Default::default(),
        server: None,
        token_counts: None,
        short_requests: 0,
        vs_in_process: None,
        goodput: None,
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
        n_prompt_tokens: n_pp,
        n_output_tokens: n_out,
        n_kv,
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
        dataset,
        targets: sc.targets.clone(),
        meets_targets,
        price_per_hour: sc.price_per_hour,
        cost_per_mtok: sc
            .price_per_hour
            .and_then(|p| metrics::cost_per_mtok(p, output_ts)),
        reps: figs,
        requests: traces.iter().map(|(r, s, x)| x.sample(*r, *s)).collect(),
    }
}

#[cfg(test)]
mod tests;
