//! quality tests of ladder variants: KLD, perplexity ratio and same-top-p against the
//! ladder's reference variant, as llama-perplexity `--kl-divergence` defines them. The
//! reference pass is made once per ladder, at its first quality test (building the
//! reference variant when missing), and kept while the ladder's tests run.

use std::path::Path;

use super::error::KindError;
use crate::config::Config;
use crate::config::ladder::RefSpec;
use crate::ladder::Reporter;
use crate::ladder::cache::BaseInfo;
use crate::ladder::error::LadderError;
use crate::ladder::quality::{self, Extras, Reference};
use crate::plan::ModelSource;
use crate::record::{ModelRecord, Status, TestRecord};

/// The reference pass of the ladder whose quality tests are running.
pub type Cache = Option<(usize, Reference)>;

/// Measures the quality of variant `quant` of ladder `li` (its file and record in `mrec`)
/// into `rec` and `mrec`; returns the progress line.
pub fn run(
    config: &Config,
    bases: &[Result<BaseInfo, LadderError>],
    cache: &mut Cache,
    (li, source): (usize, &ModelSource),
    mrec: &mut ModelRecord,
    rec: &mut TestRecord,
    rep: &Reporter,
) -> String {
    let n_threads = rec.params.n_threads;
    let x = match measure(config, bases, cache, (li, source), mrec, n_threads, rep) {
        Ok(x) => x,
        Err(e) => {
            rec.fail(e.to_string());
            return format!("FAILED: {e}");
        }
    };
    mrec.quality.clone_from(&x.quality);
    mrec.bytes_per_token = x.bytes_per_token;
    mrec.ref_tokens_per_token = x.ref_tokens_per_token;
    rec.quality = x.quality.clone().map(Box::new);
    rec.status = Status::Ok;
    rec.error = None;
    x.quality.map_or(String::new(), |q| {
        format!(
            "KLD {:.5} ± {:.5}, ln(PPL ratio) {:.4}, same top p {:.2} %",
            q.kld_mean,
            q.kld_mean_uncertainty,
            q.ln_ppl_ratio,
            100.0 * q.same_top_p
        )
    })
}

fn measure(
    config: &Config,
    bases: &[Result<BaseInfo, LadderError>],
    cache: &mut Cache,
    (li, source): (usize, &ModelSource),
    mrec: &ModelRecord,
    n_threads: u32,
    rep: &Reporter,
) -> Result<Extras, KindError> {
    if let Some(e) = &mrec.error {
        return Err(KindError::Refused(e.clone()));
    }
    let l = &config.ladders[li];
    let base = (bases[li].as_ref()).map_err(|e| KindError::Refused(e.to_string()))?;
    if cache.as_ref().map(|c| c.0) != Some(li) {
        *cache = None;
        // A reference file is read where it lies; a reference type is built first.
        let ref_path = match (l.reference, &l.reference_logits) {
            (_, Some(_)) => Default::default(),
            (RefSpec::File(i), None) => l.files[i].path.clone(),
            (RefSpec::Type(t), None) => {
                let tag = format!("[quantize] {}", l.variant_name(t));
                crate::ladder::build_variant(base, l, t, None, n_threads, &tag, rep)?
            }
        };
        *cache = Some((li, quality::reference(l, &ref_path, n_threads, rep)?));
    }
    let r = &cache.as_ref().expect("reference made above").1;
    let is_reference = match (source, l.reference) {
        (ModelSource::Variant { quant, recipe, .. }, RefSpec::Type(t)) => {
            *quant == t && recipe.is_none()
        }
        (ModelSource::LadderFile { file, .. }, RefSpec::File(i)) => *file == i,
        _ => false,
    };
    if is_reference && l.reference_logits.is_none() {
        return Ok(r.own.clone());
    }
    let path = Path::new(&mrec.path);
    Ok(quality::variant(l, r, &mrec.name, path, n_threads, rep)?)
}
