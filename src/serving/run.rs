//! The measurement of serving tests: a group's context and workload (synthetic prompts or a
//! prompt file), made once per group and warmed up, then each test's repetitions and figures.
//! `kinds::serving` calls it for the runner.

use super::bench::{self, Request, TogetherRun};
use super::dataset::PromptFile;
use super::driver::{self, Gathered, Measured, Rep, Tally, Transport};
use super::error::ServingError;
use super::http::Vocab;
use super::metrics::{self, Trace};
use super::sampling::Sampler;
use crate::config::serving::{Mode, ServingConfig};
use crate::engine::measure::TokenSource;
use crate::engine::{BatchParams, BatchSession, Engine, Model, ServingModel};
use crate::output::progress::Progress;
use crate::plan::serving::{ServingTest, parallel_n_ctx, slots_n_ctx};
use crate::record::serving::{DatasetInfo, Serving};

mod workload;
use workload::workload;

pub(crate) type Ready<'m> = (Box<dyn BatchSession + 'm>, Workload);

pub(crate) struct Workload {
    /// Requests of request and arrival tests (the same every repetition).
    requests: Vec<Request>,
    /// Boxed: a group's context is held in an enum beside a served group's.
    dataset: Option<Box<DatasetInfo>>,
    vocab: Vocab,
}

pub(crate) struct GroupRun<'a> {
    pub engine: &'a dyn Engine,
    pub sc: &'a ServingConfig,
    pub seed: u64,
    pub reps: u32,
    pub prompts: Option<&'a PromptFile>,
}

impl GroupRun<'_> {
    pub(crate) fn prepare<'m>(
        &self,
        model: &'m dyn Model,
        t: &ServingTest,
    ) -> Result<Ready<'m>, ServingError> {
        let sm: &dyn ServingModel = model.serving().ok_or(ServingError::NoServing)?;
        let info = model.info();
        let sc = self.sc;
        let (requests, dataset) = match t.mode {
            Mode::Parallel => (Vec::new(), None),
            _ => workload(sm, info, sc, self.prompts, self.seed)?,
        };
        let longest = (requests.iter())
            .map(|r| r.prompt.len() as u32 + r.n_gen)
            .max();
        let longest = longest.unwrap_or(sc.n_prompt + sc.n_gen);
        let n_ctx = match t.mode {
            Mode::Parallel => parallel_n_ctx(sc, t.n_seq_max, t.shared),
            _ => slots_n_ctx(longest, t.n_seq_max),
        };
        if info.n_ctx_train > 0 && longest > info.n_ctx_train {
            return Err(ServingError::TooLong {
                need: longest,
                trained: info.n_ctx_train,
            });
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
            vocab: Vocab {
                n_vocab: info.n_vocab,
                bos: info.bos,
            },
        };
        Ok((session, work))
    }

    fn samplers(&self, n: usize, rep: u32) -> Vec<Sampler> {
        let t = self.sc.temperature as f32;
        Vec::from_iter((0..n).map(|j| Sampler::new(t, driver::request_seed(self.seed, rep, j))))
    }

    pub(crate) fn measure(
        &self,
        session: &mut dyn BatchSession,
        work: &Workload,
        t: &ServingTest,
        progress: &mut dyn Progress,
    ) -> Result<Measured, ServingError> {
        let mut tr = InProcess {
            gr: self,
            session,
            work,
            // Parallel tests draw fresh prompts every repetition, from one stream per test.
            tokens: work.vocab.tokens(self.seed),
        };
        driver::measure(&mut tr, self.sc, (self.seed, self.reps), t, progress)
    }
}

struct InProcess<'a, 's> {
    gr: &'a GroupRun<'a>,
    session: &'a mut (dyn BatchSession + 's),
    work: &'a Workload,
    tokens: TokenSource,
}

impl InProcess<'_, '_> {
    fn together(
        &mut self,
        t: &ServingTest,
        reqs: &[Request],
        shared: bool,
        samplers: &mut [Sampler],
    ) -> Result<TogetherRun, ServingError> {
        let gr = self.gr;
        bench::run_together(
            self.session,
            gr.engine,
            reqs,
            shared,
            gr.sc.kv_unified,
            t.params.n_batch as usize,
            samplers,
        )
    }
}

impl Transport for InProcess<'_, '_> {
    /// The prompts are drawn before the timed run; the sample is T_TG and S_TG, as
    /// llama-batched-bench reports.
    fn parallel(&mut self, t: &ServingTest, rep: u32) -> Result<Rep, ServingError> {
        let sc = self.gr.sc;
        let b = t.n_parallel as usize;
        let reqs = parallel_requests(sc, b, t.shared, &mut self.tokens);
        let mut samplers = self.gr.samplers(b, rep);
        let r = self.together(t, &reqs, t.shared, &mut samplers)?;
        let (tg, pp) = (u64::from(sc.n_gen - 1), u64::from(sc.n_prompt));
        let n_kv = metrics::n_kv(pp, tg, b as u64, t.shared, sc.kv_unified);
        Ok(together(&r.phases, r.traces, r.start_ns, Some(n_kv)))
    }

    /// Each request a run of its own; the repetition's phases are their sums, and its traces
    /// are on the clock of its first request.
    fn requests(&mut self, t: &ServingTest, rep: u32) -> Result<Rep, ServingError> {
        let mut sum = metrics::Phases::default();
        let (mut start, mut traces) = (None, Vec::new());
        let work = self.work;
        for (k, q) in work.requests.iter().enumerate() {
            let mut samplers = self.gr.samplers(1, rep ^ ((k as u32) << 16));
            let r = self.together(t, std::slice::from_ref(q), false, &mut samplers)?;
            start.get_or_insert(r.start_ns);
            sum.add(&r.phases);
            traces.extend(r.traces);
        }
        let longest = (work.requests.iter())
            .map(|r| r.prompt.len() as u64 + u64::from(r.n_gen) - 1)
            .max();
        Ok(together(&sum, traces, start.unwrap_or(0), longest))
    }

    /// Seeded anew each repetition, served with continuous batching in `n_parallel` slots;
    /// the sample is the whole time and output rate (arrivals have no phases).
    fn arrivals(
        &mut self,
        t: &ServingTest,
        rate: f64,
        n: usize,
        rep: u32,
    ) -> Result<Rep, ServingError> {
        let gr = self.gr;
        let all = &self.work.requests;
        let reqs: Vec<Request> = (0..n).map(|k| all[k % all.len().max(1)].clone()).collect();
        let offsets = metrics::poisson_offsets(n, rate, gr.seed.wrapping_add(u64::from(rep)));
        let mut samplers = gr.samplers(n, rep);
        let r = super::arrivals::run_arrivals(
            self.session,
            gr.engine,
            &reqs,
            &offsets,
            t.n_parallel,
            t.params.n_batch as usize,
            &mut samplers,
        )?;
        let figs = metrics::arrival_figures(r.t_ns, r.n_out, r.n_decoded, r.engine_ns, r.idle_ns);
        Ok(Rep {
            sample_ns: r.t_ns,
            sample_ts: figs.output_ts,
            figs,
            traces: r.traces,
            start_ns: r.start_ns,
            n_pp: reqs.iter().map(|q| q.prompt.len() as u64).sum(),
            n_out: r.n_out,
            n_kv: None,
            tally: Tally::default(),
        })
    }

    fn finish(&self, s: &mut Serving, _: &Gathered) -> u32 {
        s.dataset = self.work.dataset.as_deref().cloned();
        self.session.n_ctx()
    }
}

/// A repetition of requests decoded together (or one after another, summed).
fn together(p: &metrics::Phases, traces: Vec<Trace>, start_ns: u64, n_kv: Option<u64>) -> Rep {
    let figs = p.figures();
    Rep {
        sample_ns: p.t_tg_ns,
        sample_ts: figs.aggregate_ts.unwrap_or(0.0),
        figs,
        traces,
        start_ns,
        n_pp: p.n_pp,
        n_out: p.n_out,
        n_kv,
        tally: Tally::default(),
    }
}

/// `b` synthetic requests of n_prompt tokens (a parallel repetition's, or a workload's), with
/// one prompt drawn for all (`shared`) or one drawn for each.
fn parallel_requests(
    sc: &ServingConfig,
    b: usize,
    shared: bool,
    tokens: &mut TokenSource,
) -> Vec<Request> {
    let mut draw = || Request {
        prompt: tokens.prompt(sc.n_prompt as usize),
        n_gen: sc.n_gen,
    };
    if shared {
        vec![draw(); b]
    } else {
        (0..b).map(|_| draw()).collect()
    }
}

#[cfg(test)]
mod tests;
