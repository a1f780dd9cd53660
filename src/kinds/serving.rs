//! request, parallel and arrival tests (the `[serving]` table): the tests of one group share
//! a context, made and warmed up once (`serving::run::GroupRun`), as llama-batched-bench makes
//! one context for its whole -npl list.

use crate::config::Config;
use crate::engine::{Engine, Model};
use crate::output::progress::Progress;
use crate::plan::serving::ServingTest;
use crate::record::TestRecord;
use crate::serving::dataset::PromptFile;
use crate::serving::run::{GroupRun, Ready, fill, summary_line};

/// The context a group's tests share, or why it could not be made.
pub struct Group<'m> {
    ready: Result<Ready<'m>, String>,
}

fn group_run<'a>(
    engine: &'a dyn Engine,
    config: &'a Config,
    prompts: Option<&'a PromptFile>,
) -> GroupRun<'a> {
    let sc = config
        .serving
        .as_ref()
        .expect("serving tests come from a [serving] table");
    GroupRun {
        engine,
        sc,
        seed: sc.seed.unwrap_or(config.settings.seed),
        reps: sc.repetitions,
        prompts,
    }
}

/// Makes the context of the group that `first` opens.
pub fn open<'m>(
    engine: &dyn Engine,
    config: &Config,
    prompts: Option<&PromptFile>,
    model: Result<&'m dyn Model, String>,
    first: &ServingTest,
) -> Group<'m> {
    let gr = group_run(engine, config, prompts);
    Group {
        ready: model.and_then(|m| gr.prepare(m, first)),
    }
}

/// Measures one test of the group into `rec`; returns the progress line.
pub fn run(
    engine: &dyn Engine,
    config: &Config,
    prompts: Option<&PromptFile>,
    group: &mut Group,
    t: &ServingTest,
    rec: &mut TestRecord,
    progress: &mut dyn Progress,
) -> String {
    let mut gr = group_run(engine, config, prompts);
    rec.warmup = 1;
    rec.seed = gr.seed;
    rec.placement = group.ready.as_ref().ok().and_then(|(s, _)| s.placement());
    let result = match &mut group.ready {
        Ok((session, work)) => gr.measure(session.as_mut(), work, t, progress),
        Err(e) => Err(e.clone()),
    };
    match result {
        Ok((serving, samples_ns, samples_ts, n_ctx)) => {
            let line = summary_line(&serving);
            fill(rec, serving, samples_ns, samples_ts, n_ctx);
            line
        }
        Err(e) => {
            rec.fail(e.clone());
            format!("FAILED: {e}")
        }
    }
}
