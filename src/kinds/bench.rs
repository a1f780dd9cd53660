//! pp, tg and pg tests: llama-bench's loop (`measure::PreparedTest`) on a fresh context per
//! test, repeated as the settings' stopping rule says, with the machine monitored around it.

use std::sync::Arc;

use crate::config::RunSettings;
use crate::engine::measure::{PreparedTest, TokenSource};
use crate::engine::placement;
use crate::engine::{Engine, Model};
use crate::kinds::error::KindError;
use crate::machine::Monitor;
use crate::machine::roofline::Shape;
use crate::output::progress::Progress;
use crate::plan::TestParams;
use crate::record::text::TextSource;
use crate::record::{ModelRecord, TestRecord};
use crate::serving::dataset::PromptFile;
use crate::stats::analysis::StopReason;

/// What a pp, tg or pg test is measured with: the model, its record and header shape, and
/// the `[sweep]` text file.
pub struct Bench<'a> {
    pub engine: &'a dyn Engine,
    pub model: &'a dyn Model,
    pub settings: RunSettings,
    pub shape: Option<Shape>,
    pub mrec: &'a ModelRecord,
    pub text: Option<&'a PromptFile>,
}

/// Measures one test into `rec`: samples, statistics, placement and resources.
pub fn run(b: Bench, monitor: &mut Monitor, rec: &mut TestRecord, progress: &mut dyn Progress) {
    let active = monitor.begin();
    let result = measure(&b, &rec.params, progress);
    rec.placement = b.model.placement(&rec.params);
    if let Some(p) = rec.placement.as_mut() {
        p.mismatch = placement::mismatches(&placement::Asked::of(&rec.params), p);
    }
    rec.not_honoured = b.model.knob_notes(&rec.params);
    match result {
        Ok((samples, stop, source)) => {
            rec.set_measurement(samples, stop, b.settings.ci_target);
            rec.text = source.map(Box::new);
        }
        Err(e) => rec.fail(e.to_string()),
    }
    // Model facts from llama.cpp beat the header's where both exist.
    let shape = b.shape.map(|mut s| {
        s.weight_bytes = b.mrec.model_size.unwrap_or(s.weight_bytes);
        s.n_params = b.mrec.model_n_params.unwrap_or(s.n_params);
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

/// What a test decodes: llama-bench's random ids seeded by `seed`, or for a `tokens =
/// "text"` test the stream of `text` (tokenized with `model`'s tokenizer, long enough for
/// about 32 repetitions before it wraps) from a start the seed picks, with what the record
/// says of it.
pub fn token_source(
    model: &dyn Model,
    params: &TestParams,
    seed: u64,
    text: Option<&PromptFile>,
) -> Result<(TokenSource, Option<TextSource>), KindError> {
    if params.tokens.is_random() {
        return Ok((TokenSource::new(seed, model.info()), None));
    }
    let refused = |s: &str| KindError::Refused(s.into());
    let file = text
        .ok_or_else(|| refused("a tokens = \"text\" test needs the [sweep] text file, not read"))?;
    let sm = model
        .serving()
        .ok_or_else(|| refused("this engine has no tokenizer for the text"))?;
    let per_rep = params.n_tokens() as usize;
    let min_tokens = (params.n_depth as usize)
        .saturating_add(per_rep.saturating_mul(32))
        .max(4096);
    let stream = crate::serving::dataset::text_stream(file, seed, min_tokens, |t| {
        sm.tokenize(t, false, false)
    })?;
    let len = stream.len();
    let start = (seed % len.max(1) as u64) as usize;
    let source = TokenSource::text(Arc::from(stream), start, model.info()).ok_or_else(|| {
        KindError::Refused(format!("{}: the text tokenizes to nothing", file.name))
    })?;
    let info = TextSource {
        name: file.name.clone(),
        sha256: file.sha256.clone(),
        format: file.sharegpt.then(|| "sharegpt".to_string()),
        stream_tokens: len as u64,
        start: start as u64,
        note: file.note.clone(),
    };
    Ok((source, Some(info)))
}

/// Measures one test on a fresh context, repeating as the settings' stopping rule says.
fn measure(
    b: &Bench,
    params: &TestParams,
    progress: &mut dyn Progress,
) -> Result<(Vec<u64>, StopReason, Option<TextSource>), KindError> {
    let (model, settings) = (b.model, b.settings);
    if params.n_ctx() > model.info().n_ctx_train && model.info().n_ctx_train > 0 {
        return Err(KindError::Refused(format!(
            "the test needs a context of {} tokens but the model was trained for {}",
            params.n_ctx(),
            model.info().n_ctx_train
        )));
    }
    let (tokens, source) = token_source(model, params, settings.seed, b.text)?;
    let session = model.session(params)?;
    let mut test = PreparedTest::new(session, params, tokens, settings.warmup)?;
    let policy = settings.policy();
    let mut samples = Vec::with_capacity(policy.min_repetitions as usize);
    loop {
        progress.repetition(
            samples.len() as u32,
            policy.min_repetitions.max(samples.len() as u32 + 1),
        );
        samples.push(test.repetition(b.engine)?);
        let rates = crate::stats::rates_per_second(params.n_tokens(), &samples);
        let elapsed = samples.iter().sum::<u64>() as f64 * 1e-9;
        if let Some(reason) = policy.should_stop(&rates, elapsed, settings.seed) {
            return Ok((samples, reason, source));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Axes, PromptTokens};
    use crate::engine::tests::mock::MockEngine;
    use crate::engine::{Engine, LoadParams};
    use crate::serving::dataset::Prompt;
    use std::path::Path;

    fn file() -> PromptFile {
        PromptFile {
            name: "p.txt".into(),
            sha256: "ab".repeat(32),
            prompts: ["alpha beta gamma", "delta epsilon"]
                .iter()
                .map(|t| Prompt {
                    text: t.to_string(),
                    max_tokens: None,
                    reply: None,
                })
                .collect(),
            sharegpt: false,
            note: None,
        }
    }

    fn tg(tokens: PromptTokens) -> TestParams {
        let mut a = Axes::llama_bench_defaults(2);
        a.n_prompt = vec![0];
        a.n_gen = vec![8];
        a.tokens = vec![tokens];
        crate::plan::expand_axes(&a).remove(0)
    }

    #[test]
    fn a_text_test_reads_the_files_tokens_from_the_seeds_start_and_says_so() {
        let e = MockEngine::new(1_000, 10_000);
        let m = e.load(Path::new("mock"), &LoadParams::default()).unwrap();
        let sm = m.serving().unwrap();
        // The file's stream, whole (it is shorter than any test asks): cycled from the start.
        let whole: Vec<i32> = ["alpha beta gamma\n\n", "delta epsilon\n\n"]
            .iter()
            .flat_map(|t| sm.tokenize(t, false, false).unwrap())
            .collect();
        let (mut src, info) =
            token_source(m.as_ref(), &tg(PromptTokens::Text), 7, Some(&file())).unwrap();
        let info = info.unwrap();
        assert_eq!(info.stream_tokens, 5);
        assert_eq!(info.start, 7 % 5);
        assert_eq!(
            (info.name.as_str(), info.format.as_deref()),
            ("p.txt", None)
        );
        let got: Vec<i32> = (0..7).map(|_| src.random()).collect();
        let want: Vec<i32> = (2..9).map(|i| whole[i % 5]).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_random_test_ignores_the_text_and_a_text_test_without_it_is_refused() {
        let e = MockEngine::new(1_000, 10_000);
        let m = e.load(Path::new("mock"), &LoadParams::default()).unwrap();
        let (mut a, info) =
            token_source(m.as_ref(), &tg(PromptTokens::Random), 7, Some(&file())).unwrap();
        assert!(info.is_none());
        let mut b = TokenSource::new(7, m.info());
        assert_eq!(a.prompt(16), b.prompt(16), "llama-bench's ids, as before");
        let err = token_source(m.as_ref(), &tg(PromptTokens::Text), 7, None).err();
        assert!(err.unwrap().to_string().contains("text file"));
    }
}
