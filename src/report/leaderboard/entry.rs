//! One measurement as the board shows it (`Entry`), with the typed views of its model
//! (`ModelExtras`) and serving figures (`Serving`) built from the result file's records,
//! and the small questions every part of the page asks of an entry: what kind of test it
//! is, its rate, the model it measured. Charts, tables and answers read entries only
//! through these, so no two of them need each other.

use std::path::PathBuf;

use super::plausible::Flag;
use super::svg::Tags;
use crate::plan::TestKind;
use crate::record::serving::{Ratio, Serving as ServingRecord, Transport};
use crate::record::tensor_mix::{self, TypeShare};
use crate::record::{ModelRecord, TestRecord};

/// The fields of a model (`models[k]`) the page shows beside its rows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelExtras {
    pub kld_mean: Option<f64>,
    /// The standard error of `kld_mean`.
    pub kld_uncertainty: Option<f64>,
    pub quality_reference: Option<String>,
    pub bytes_per_token: Option<f64>,
    pub bits_per_weight: Option<f64>,
    /// `models[].architecture` (llama.cpp's `general.architecture`): with the name, the
    /// model's identity.
    pub architecture: Option<String>,
    /// `models[].tensor_types`: the file's tensor types by share of parameters.
    pub tensor_types: Vec<TypeShare>,
}

impl From<&ModelRecord> for ModelExtras {
    fn from(m: &ModelRecord) -> Self {
        let q = m.quality.as_ref();
        ModelExtras {
            kld_mean: q.map(|q| q.kld_mean),
            kld_uncertainty: q.map(|q| q.kld_mean_uncertainty),
            quality_reference: q.map(|q| q.reference.clone()),
            bytes_per_token: m.bytes_per_token,
            bits_per_weight: m.bits_per_weight,
            architecture: m.architecture.clone(),
            tensor_types: m.tensor_types.clone(),
        }
    }
}

/// The badges of a model from its provenance: "synthetic" (random weights) and
/// "requantized" (quantized from an already quantized file).
pub fn badges(m: &ModelRecord) -> Vec<String> {
    let Some(p) = &m.provenance else {
        return vec![];
    };
    let mut v = Vec::new();
    if p.synthetic {
        v.push("synthetic".to_string());
    }
    if p.requantized {
        v.push("requantized".to_string());
    }
    v
}

/// Serving figures of a test (`tests[].serving`), as the page shows them.
#[derive(Debug, Clone, PartialEq)]
pub struct Serving {
    pub mode: crate::config::serving::Mode,
    pub n_parallel: u64,
    pub per_request_ts: f64,
    pub aggregate_ts: f64,
    /// One prompt prefilled once and copied to every sequence (batched-bench -pps).
    pub shared_prompt: bool,
    /// Requests per second of an arrival test.
    pub arrival_rate: Option<f64>,
    /// Time to first token, median and 90th percentile over every request, ms.
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p90_ms: Option<f64>,
    /// `serving.transport`: "http" for a served test; None in process.
    pub transport: Option<String>,
    /// The server of a served test, in a few words: its build, or the model it served.
    pub server: Option<String>,
    /// `serving.vs_in_process`: served / in-process ratios (ratio, lo, hi) of TTFT,
    /// per-request and aggregate t/s.
    pub vs_in_process: [Option<(f64, f64, f64)>; 3],
    /// `serving.goodput` of a goodput test: the highest arrival rate that met the SLO and the
    /// good requests per second there (both None when even the lowest rate did not), and
    /// the lowest rate that failed.
    pub goodput: Option<(Option<f64>, Option<f64>, Option<f64>)>,
}

impl Serving {
    /// The view of a test's serving record; None when it has no per-request or aggregate
    /// rate (nothing to show in a serving row).
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

/// One measurement on the board.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Index into `Board::machines`.
    pub machine: usize,
    pub quant: String,
    pub test: TestRecord,
    pub run_started_at: String,
    pub file: PathBuf,
    pub model: ModelExtras,
    pub serving: Option<Serving>,
    /// "synthetic" (random weights) and "requantized" (quantized from an already quantized
    /// file): shown beside the model wherever it appears.
    pub badges: Vec<String>,
    /// Plausibility flags (see `plausible`): the run's and the row's own.
    pub flags: Vec<Flag>,
    /// Decode without a recorded roofline: the % of the roofline it at least reaches
    /// (`roofline_estimate`).
    pub roofline_estimate: Option<f64>,
    /// The run's `rounds = "auto"` budget (`max_rounds`): its ties are judged with the
    /// sequential design that budget planned (`stats::pairs`).
    pub auto_max_rounds: Option<u32>,
}

impl Entry {
    /// Output bytes per second (t/s × bytes per token), when the model has bytes per token.
    pub fn bytes_per_s(&self) -> Option<f64> {
        Some(self.test.avg_ts? * self.model.bytes_per_token?)
    }

    /// The quantization as the file really is: `Q4_K_M (mostly Q5_0)` when most of its
    /// parameters are another type than its name says (`models[].tensor_types`).
    pub fn quant_label(&self) -> String {
        tensor_mix::label(&self.quant, &self.model.tensor_types)
    }

    /// Bytes of weights llama.cpp repacked for the CPU (`CPU_REPACK` and the like, from the
    /// load log): None when the test records no placement.
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

/// llama-bench-style speed tests (pp, tg, pg), as opposed to serving and quality tests.
pub fn is_speed(e: &Entry) -> bool {
    matches!(e.test.kind, TestKind::Pp | TestKind::Tg | TestKind::Pg) && e.serving.is_none()
}

/// Speed tests of one kind at depth 0.
pub fn plain_d0(e: &Entry, kind: TestKind) -> bool {
    is_speed(e) && e.test.kind == kind && e.test.params.n_depth == 0
}

/// Sort order of kinds: prefill, decode, both, then the others.
pub fn kind_rank(k: TestKind) -> u8 {
    match k {
        TestKind::Pp => 0,
        TestKind::Tg => 1,
        TestKind::Pg => 2,
        _ => 3,
    }
}

/// "prefill", "decode", "prefill + decode".
pub fn kind_word(k: TestKind) -> &'static str {
    match k {
        TestKind::Pp => "prefill",
        TestKind::Tg => "decode",
        _ => "prefill + decode",
    }
}

/// The entry's mean tokens per second (0 when not measured).
pub fn ts(e: &Entry) -> f64 {
    e.test.avg_ts.unwrap_or(0.0)
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

/// The model an entry measured, by identity: its name without the quantization suffix and
/// its architecture ("SmolLM2-135M (llama)"), never its parameter count alone (different
/// models of one size are different models).
pub fn identity(e: &Entry) -> String {
    let name = base_name(&e.test.model, &e.quant);
    match &e.model.architecture {
        Some(a) => format!("{name} ({a})"),
        None => name,
    }
}

/// What the page's filters select an entry's marks by: the same values as its table rows'
/// (`table::RowMeta::of`).
pub fn tags_of(e: &Entry) -> Tags {
    let mut t = Tags::default();
    t.add("model", &identity(e));
    t.add("machine", &e.machine.to_string());
    t.add("backend", &e.test.backends);
    t.add("quant", &e.quant);
    t
}
