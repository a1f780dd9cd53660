//! One measurement as the board shows it (`Entry`), the views of its model and serving
//! figures, and what every part of the page asks of an entry.

use std::path::PathBuf;

use super::plausible::Flag;
use crate::plan::TestKind;
use crate::record::{ModelRecord, Quality, TestRecord, serving::Serving, tensor_mix};
pub(crate) use crate::report::group_by;
use crate::report::leaderboard::charts::svg::Tags;

/// "synthetic" (random weights) and "requantized" (quantized from a quantized file).
pub fn badges(m: &ModelRecord) -> Vec<String> {
    m.provenance
        .iter()
        .flat_map(|p| [(p.synthetic, "synthetic"), (p.requantized, "requantized")])
        .filter(|x| x.0)
        .map(|x| x.1.to_string())
        .collect()
}

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub machine: usize,
    pub quant: String,
    pub test: TestRecord,
    pub run_started_at: String,
    pub file: PathBuf,
    /// Its model (`models[k]`); a default one when the file has none.
    pub model: ModelRecord,
    /// Shown beside the model wherever it appears (see `badges`).
    pub badges: Vec<String>,
    pub flags: Vec<Flag>,
    /// % of the roofline a decode without a recorded one at least reaches.
    pub roofline_estimate: Option<f64>,
    /// The run's `rounds = "auto"` budget: its ties are judged sequentially.
    pub auto_max_rounds: Option<u32>,
}

impl Entry {
    /// Its serving figures, when it has per-request and aggregate rates to show.
    pub fn serving(&self) -> Option<&Serving> {
        (self.test.serving.as_deref())
            .filter(|s| s.per_request_ts.is_some() && s.aggregate_ts.is_some())
    }

    pub fn quality(&self) -> Option<&Quality> {
        self.model.quality.as_ref()
    }

    pub fn bytes_per_s(&self) -> Option<f64> {
        Some(self.test.avg_ts? * self.model.bytes_per_token?)
    }

    /// The quantization as the file really is: `Q4_K_M (mostly Q5_0)`.
    pub fn quant_label(&self) -> String {
        tensor_mix::label(&self.quant, &self.model.tensor_types)
    }

    /// Bytes of weights llama.cpp repacked for the CPU (`CPU_REPACK`); None: not recorded.
    pub fn repacked_bytes(&self) -> Option<u64> {
        let p = self.test.placement.as_ref()?;
        let repack = p
            .buffers
            .iter()
            .filter(|b| b.kind == "model" && b.name.ends_with("_REPACK"));
        Some(repack.map(|b| b.bytes).sum())
    }
}

/// llama-bench-style speed tests (pp, tg, pg), not serving or quality.
pub fn is_speed(e: &Entry) -> bool {
    matches!(e.test.kind, TestKind::Pp | TestKind::Tg | TestKind::Pg) && e.serving().is_none()
}

pub fn plain_d0(e: &Entry, kind: TestKind) -> bool {
    is_speed(e) && e.test.kind == kind && e.test.params.n_depth == 0
}

pub fn kind_rank(k: TestKind) -> u8 {
    let order = [TestKind::Pp, TestKind::Tg, TestKind::Pg];
    order.iter().position(|x| *x == k).unwrap_or(3) as u8
}

pub fn kind_word(k: TestKind) -> &'static str {
    match k {
        TestKind::Pp => "prefill",
        TestKind::Tg => "decode",
        _ => "prefill + decode",
    }
}

pub fn ts(e: &Entry) -> f64 {
    e.test.avg_ts.unwrap_or(0.0)
}

/// The fastest entry per key, in first-seen order (ties: the first).
pub fn fastest_by<'a, K: PartialEq>(
    es: impl IntoIterator<Item = &'a Entry>,
    key: impl Fn(&Entry) -> K,
) -> Vec<&'a Entry> {
    let mut best: Vec<(K, &Entry)> = Vec::new();
    for e in es {
        let k = key(e);
        match best.iter_mut().find(|(x, _)| *x == k) {
            Some((_, b)) if ts(e) > ts(b) => *b = e,
            Some(_) => {}
            None => best.push((k, e)),
        }
    }
    best.into_iter().map(|(_, e)| e).collect()
}

/// A model name without its quantization suffix: `SmolLM2-135M-Q4_K_M` → `SmolLM2-135M`.
pub fn base_name(model: &str, quant: &str) -> String {
    let (m, q) = (model.to_lowercase(), quant.to_lowercase());
    if !q.is_empty() && m.len() > q.len() + 1 && m.ends_with(&q) {
        let cut = model.len() - quant.len();
        if model[..cut].ends_with(['-', '.', '_']) {
            return model[..cut - 1].to_string();
        }
    }
    model.to_string()
}

/// The model by identity: name without quantization, and architecture ("SmolLM2-135M
/// (llama)"); never its parameter count alone.
pub fn identity(e: &Entry) -> String {
    let name = base_name(&e.test.model, &e.quant);
    match &e.model.architecture {
        Some(a) => format!("{name} ({a})"),
        None => name,
    }
}

/// What the page's filters select an entry's rows and marks by.
pub fn tags_of(e: &Entry) -> Tags {
    Tags::of([
        ("model", &identity(e)),
        ("machine", &e.machine.to_string()),
        ("backend", &e.test.backends),
        ("quant", &e.quant),
    ])
}
