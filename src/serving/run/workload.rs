//! A serving group's requests: synthetic prompts, or a prompt or ShareGPT file's, tokenized
//! with the model's tokenizer (through its chat template when asked), with what the record
//! says of the file.

use super::*;

/// The requests of a request or arrival test: `n_requests` synthetic prompts, or the
/// prompt file's prompts in order (cycled), tokenized with the model's tokenizer (through its
/// chat template when asked).
pub(super) fn workload(
    sm: &dyn ServingModel,
    info: &crate::engine::ModelInfo,
    sc: &ServingConfig,
    prompts: Option<&PromptFile>,
    seed: u64,
) -> Result<(Vec<Request>, Option<DatasetInfo>), ServingError> {
    let n = sc.n_requests as usize;
    let Some(file) = prompts else {
        let mut tokens = TokenSource::new(seed, info);
        return Ok((parallel_requests(sc, n, false, &mut tokens), None));
    };
    let count = |t: &str| sm.tokenize(t, true, false).map(|v| v.len());
    let picked = crate::serving::dataset::serving_picks(file, n, seed, sc.n_gen, count)?;
    let mut reqs = Vec::with_capacity(n);
    for (i, n_gen) in picked {
        let p = &file.prompts[i];
        let text = if sc.chat_template {
            sm.apply_chat_template(&p.text)
                .map_err(|e| ServingError::Refused(format!("{}: {e}", file.name)))?
        } else {
            p.text.clone()
        };
        let prompt = sm.tokenize(&text, true, sc.chat_template)?;
        if prompt.is_empty() {
            let e = format!("{}: prompt {} has no tokens", file.name, i + 1);
            return Err(ServingError::Refused(e));
        }
        reqs.push(Request { prompt, n_gen });
    }
    let lengths: Vec<f64> = reqs.iter().map(|r| r.prompt.len() as f64).collect();
    Ok((reqs, Some(file.info(sc.chat_template, &lengths))))
}
