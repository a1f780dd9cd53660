//! A goodput test at one fixed rate over HTTP: a `tune` race's round against a server
//! (issue 46), as `serving::run` measures it in process. Each repetition is an arrival run
//! at the test's rate; its sample is its goodput (requests meeting `[serving] slo` per
//! second of the run, vLLM's `bench serve --goodput`) rather than its output rate, and its
//! step joins the test's goodput record, which a reader recounts (`record::tune`).

use super::{Batch, Gathered, HttpRun};
use crate::output::progress::Progress;
use crate::plan::serving::ServingTest;
use crate::record::serving::GoodputStep;

impl HttpRun<'_> {
    /// Repetition `rep` of `t` at its rate: the run and its step.
    pub(super) fn goodput_at_rate(
        &self,
        t: &ServingTest,
        rep: u32,
        progress: &mut dyn Progress,
    ) -> Result<(Batch, GoodputStep), String> {
        let slo = (self.sc.slo.as_ref()).ok_or("the goodput test needs [serving] slo")?;
        let rate = t.rate.unwrap_or(1.0);
        let b = self.arrivals(rate, self.sc.n_requests as usize, rep)?;
        let samples: Vec<_> = b.traces.iter().map(|x| x.sample(0, 0)).collect();
        let st = crate::serving::goodput::step(rate, &samples, b.t_ns as f64 / 1e9, slo);
        progress.note(&crate::serving::goodput::step_line(&t.id, &st));
        Ok((b, st))
    }
}

impl Gathered {
    /// The step of the repetition just added joins the test's figures.
    pub(super) fn goodput_step(&mut self, st: GoodputStep, slo: &crate::config::serving::Slo) {
        crate::serving::goodput::join_step(&mut self.samples_ts, &mut self.goodput, st, slo);
    }
}
