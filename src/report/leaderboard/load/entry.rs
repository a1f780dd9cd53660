//! One measurement as the board shows it (`Entry`), the views of its model and serving
//! figures, and what every part of the page asks of an entry.

use std::path::PathBuf;

use super::plausible::Flag;
use crate::plan::TestKind;
use crate::record::serving::{Ratio, Serving as ServingRecord, Transport};
use crate::record::tensor_mix::{self, TypeShare};
use crate::record::{ModelRecord, TestRecord};
pub(crate) use crate::report::group_by;
use crate::report::leaderboard::charts::svg::Tags;

/// The fields of a model (`models[k]`) the page shows beside its rows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelExtras {
    pub kld_mean: Option<f64>,
    pub kld_uncertainty: Option<f64>,
    /// The 99.9th percentile of KLD over tokens: the rare large failures a mean hides.
    pub kld_p999: Option<f64>,
    /// `models[].identity`: files of one model share it, whatever their names.
    pub identity: Option<String>,
    pub quality_reference: Option<String>,
    pub bytes_per_token: Option<f64>,
    pub bits_per_weight: Option<f64>,
    pub architecture: Option<String>,
    pub tensor_types: Vec<TypeShare>,
}

impl From<&ModelRecord> for ModelExtras {
    fn from(m: &ModelRecord) -> Self {
        let q = m.quality.as_ref();
        ModelExtras {
            kld_mean: q.map(|q| q.kld_mean),
            kld_uncertainty: q.map(|q| q.kld_mean_uncertainty),
            kld_p999: q.and_then(|q| q.kld_percentiles).map(|p| p.p99_9),
            identity: m.identity.clone(),
            quality_reference: q.map(|q| q.reference.clone()),
            bytes_per_token: m.bytes_per_token,
            bits_per_weight: m.bits_per_weight,
            architecture: m.architecture.clone(),
            tensor_types: m.tensor_types.clone(),
        }
    }
}

/// "synthetic" (random weights) and "requantized" (quantized from a quantized file).
pub fn badges(m: &ModelRecord) -> Vec<String> {
    let Some(p) = &m.provenance else {
        return vec![];
    };
    [(p.synthetic, "synthetic"), (p.requantized, "requantized")]
        .iter()
        .filter(|x| x.0)
        .map(|x| x.1.to_string())
        .collect()
}

#[derive(Debug, Clone, PartialEq)]
pub struct Serving {
    pub mode: crate::config::serving::Mode,
    pub n_parallel: u64,
    pub per_request_ts: f64,
    pub aggregate_ts: f64,
    pub shared_prompt: bool,
    pub arrival_rate: Option<f64>,
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p90_ms: Option<f64>,
    /// "http" for a served test; None in process.
    pub transport: Option<String>,
    /// The server of a served test, in a few words: its build, or the model it served.
    pub server: Option<String>,
    /// Served / in-process (ratio, lo, hi) of TTFT, per-request and aggregate t/s.
    pub vs_in_process: [Option<(f64, f64, f64)>; 3],
    /// Goodput: the highest rate within the SLO, good requests/s there, the lowest failed.
    pub goodput: Option<(Option<f64>, Option<f64>, Option<f64>)>,
}

impl Serving {
    /// None without per-request and aggregate rates (nothing to show).
    pub fn of(s: &ServingRecord) -> Option<Serving> {
        let ratio = |r: &Option<Ratio>| r.as_ref().map(|r| (r.ratio, r.lo, r.hi));
        let vs = s.vs_in_process.as_ref();
        Some(Serving {
            mode: s.mode,
            n_parallel: u64::from(s.n_parallel),
            per_request_ts: s.per_request_ts?,
            aggregate_ts: s.aggregate_ts?,
            shared_prompt: s.shared_prompt,
            arrival_rate: s.arrival_rate,
            ttft_p50_ms: Some(s.ttft_ms.p50),
            ttft_p90_ms: Some(s.ttft_ms.p90),
            transport: match s.transport {
                Transport::InProcess => None,
                Transport::Http => Some("http".to_string()),
            },
            server: s
                .server
                .as_ref()
                .map(|v| v.build.clone().unwrap_or_else(|| v.served_model.clone())),
            vs_in_process: [
                vs.and_then(|v| ratio(&v.ttft)),
                vs.and_then(|v| ratio(&v.per_request_ts)),
                vs.and_then(|v| ratio(&v.aggregate_ts)),
            ],
            goodput: s
                .goodput
                .as_ref()
                .map(|g| (g.max_rate, g.goodput, g.failed_rate)),
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub machine: usize,
    pub quant: String,
    pub test: TestRecord,
    pub run_started_at: String,
    pub file: PathBuf,
    pub model: ModelExtras,
    pub serving: Option<Serving>,
    /// Shown beside the model wherever it appears (see `badges`).
    pub badges: Vec<String>,
    pub flags: Vec<Flag>,
    /// % of the roofline a decode without a recorded one at least reaches.
    pub roofline_estimate: Option<f64>,
    /// The run's `rounds = "auto"` budget: its ties are judged sequentially.
    pub auto_max_rounds: Option<u32>,
}

impl Entry {
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
        Some(
            p.buffers
                .iter()
                .filter(|b| b.kind == "model" && b.name.ends_with("_REPACK"))
                .map(|b| b.bytes)
                .sum(),
        )
    }
}

/// llama-bench-style speed tests (pp, tg, pg), not serving or quality.
pub fn is_speed(e: &Entry) -> bool {
    matches!(e.test.kind, TestKind::Pp | TestKind::Tg | TestKind::Pg) && e.serving.is_none()
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
