//! pp, tg and pg tests: llama-bench's loop (`measure::PreparedTest`) on a fresh context per
//! test, repeated as the settings' stopping rule says, with the machine monitored around it.

use crate::config::RunSettings;
use crate::engine::measure::PreparedTest;
use crate::engine::placement;
use crate::engine::{Engine, Model};
use crate::machine::Monitor;
use crate::machine::roofline::Shape;
use crate::output::progress::Progress;
use crate::plan::TestParams;
use crate::record::{ModelRecord, TestRecord};
use crate::stats::analysis::StopReason;

/// Measures one test into `rec`: samples, statistics, placement and resources.
#[allow(clippy::too_many_arguments)]
pub fn run(
    engine: &dyn Engine,
    model: &dyn Model,
    settings: RunSettings,
    monitor: &mut Monitor,
    shape: Option<Shape>,
    mrec: &ModelRecord,
    rec: &mut TestRecord,
    progress: &mut dyn Progress,
) {
    let active = monitor.begin();
    let result = measure(engine, model, &rec.params, settings, progress);
    rec.placement = model.placement(&rec.params);
    if let Some(p) = rec.placement.as_mut() {
        p.mismatch = placement::mismatches(&placement::Asked::of(&rec.params), p);
    }
    rec.not_honoured = model.knob_notes(&rec.params);
    match result {
        Ok((samples, stop)) => rec.set_measurement(samples, stop, settings.ci_target),
        Err(e) => rec.fail(e),
    }
    // Model facts from llama.cpp beat the header's where both exist.
    let shape = shape.map(|mut s| {
        s.weight_bytes = mrec.model_size.unwrap_or(s.weight_bytes);
        s.n_params = mrec.model_n_params.unwrap_or(s.n_params);
        s
    });
    let timed_tokens = rec.params.n_tokens() * rec.samples_ns.len() as u64;
    rec.resources = Some(monitor.end(
        active,
        &rec.params,
        shape.as_ref(),
        rec.placement.as_ref(),
        rec.median_ts,
        timed_tokens,
    ));
}

/// Measures one test on a fresh context, repeating as the settings' stopping rule says.
pub fn measure(
    engine: &dyn Engine,
    model: &dyn Model,
    params: &TestParams,
    settings: RunSettings,
    progress: &mut dyn Progress,
) -> Result<(Vec<u64>, StopReason), String> {
    if params.n_ctx() > model.info().n_ctx_train && model.info().n_ctx_train > 0 {
        return Err(format!(
            "the test needs a context of {} tokens but the model was trained for {}",
            params.n_ctx(),
            model.info().n_ctx_train
        ));
    }
    let session = model.session(params)?;
    let mut test = PreparedTest::new(
        session,
        params,
        model.info(),
        settings.seed,
        settings.warmup,
    )?;
    let policy = settings.policy();
    let mut samples = Vec::with_capacity(policy.min_repetitions as usize);
    let mut rates = Vec::with_capacity(policy.min_repetitions as usize);
    loop {
        progress.repetition(
            samples.len() as u32,
            policy.min_repetitions.max(samples.len() as u32 + 1),
        );
        let ns = test.repetition(engine)?;
        samples.push(ns);
        rates.push(params.n_tokens() as f64 * 1e9 / ns.max(1) as f64);
        let elapsed = samples.iter().sum::<u64>() as f64 * 1e-9;
        if let Some(reason) = policy.should_stop(&rates, elapsed, settings.seed) {
            return Ok((samples, reason));
        }
    }
}
