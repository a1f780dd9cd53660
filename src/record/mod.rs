//! The result file: `schema_version` 3 (see [`SCHEMA_VERSION`]), one file per run. Field names follow llama-bench's
//! JSON output wherever llama-bench has the field, so its users can read ours unchanged.
//! See docs/schema.md for the meaning of each field.

use serde::{Deserialize, Serialize};

pub(crate) mod error;
pub(crate) mod facts;
pub mod journal;
mod quality;
pub use quality::{Percentiles, Quality};
pub(crate) mod machine;
pub mod redact;
pub mod results;
pub(crate) mod serving;
pub mod speculative;
pub(crate) mod tensor_mix;
pub mod text;
pub mod tune;
pub mod verify;

use crate::plan::TestParams;

pub use error::{Contradiction, Disagreement, RecordError};

/// 2: optional `stats`, `resources`, `serving`, `placement`, model `quality`/`provenance`
/// and run-level machine facts joined version 1's fields.
/// 3: every test carries its `kind`; a run records its `shard` and `plan_hash`. Versions 1
/// and 2 still read: `results::read` infers the kind of their tests.
pub const SCHEMA_VERSION: u32 = 3;

/// The shard of a plan a run measured (`tpsbench run --shard index/count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardInfo {
    pub index: usize,
    pub count: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub schema_version: u32,
    pub run: RunInfo,
    pub models: Vec<ModelRecord>,
    pub tests: Vec<TestRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
    /// `git describe`-style commit of the tpsbench build, when built from a git checkout.
    pub git_commit: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlamaBuild {
    /// Version of the `llama-cpp-sys-2` crate that vendors and builds llama.cpp.
    pub sys_crate_version: String,
    /// llama.cpp build number and commit, when the build knows them.
    pub build_number: Option<i64>,
    pub build_commit: Option<String>,
    /// `llama_print_system_info()`: the SIMD and backend features llama.cpp was built with.
    pub system_info: String,
    /// Compiled-in GPU backend feature of tpsbench: "cpu", "cuda", "vulkan" or "metal".
    pub gpu_backend: String,
    /// The cmake options llama.cpp was configured with (GGML_NATIVE, GGML_CUDA, CUDA archs).
    #[serde(default)]
    pub cmake_flags: String,
    /// SIMD features the CPU backend was compiled with, e.g. ["AVX2", "FMA"].
    #[serde(default)]
    pub cpu_features: Vec<String>,
    /// The llama.cpp library the process ran: linked in, or a shared libllama found at run
    /// time (`dynamic-link` builds), with its version stamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<crate::engine::linkage::Library>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemInfo {
    pub cpu_model: String,
    pub physical_cores: u32,
    pub logical_cores: u32,
    pub ram_bytes: u64,
    pub os: String,
    pub kernel: String,
    pub arch: String,
    pub hostname: String,
}

pub use crate::engine::DeviceInfo;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub tool: ToolInfo,
    pub llama_cpp: LlamaBuild,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// Set when the run ends; absent in a file of a run still going or interrupted.
    pub finished_at: Option<String>,
    pub system: SystemInfo,
    pub devices: Vec<DeviceInfo>,
    /// Distinct backend names of the devices (llama-bench's `backends`).
    pub backends: String,
    pub config_file: String,
    /// Seed of the random prompt tokens.
    pub seed: u64,
    pub warmup: u32,
    pub repetitions: u32,
    /// Rounds of each llama-bench-style test (`[sweep] rounds`, `--rounds`): 1 in files
    /// written before rounds existed, and for llama-bench's methodology.
    #[serde(default = "one_round", skip_serializing_if = "is_one_round")]
    pub rounds: u32,
    /// `rounds = "auto"`: the budget, and why the rounds stopped (absent for fixed rounds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds_auto: Option<AutoRoundsRecord>,
    pub command: Vec<String>,
    /// GPUs as NVIDIA's NVML reports them (empty without an NVIDIA driver).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<crate::machine::nvml::GpuFacts>,
    /// Host memory bandwidth from the built-in probe, when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_bandwidth: Option<crate::machine::bandwidth::Bandwidth>,
    /// RFC 3339 times at which an interrupted run was resumed (`--resume`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumed_at: Vec<String>,
    /// The shard of the plan this file holds, when run with `--shard`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// SHA-256 over the whole plan (before sharding and resuming) and the measurement
    /// settings: files with equal hashes come from the same sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_hash: Option<String>,
    /// The measurement settings the plan was made with (`plan::build::settings_line`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_settings: Option<String>,
    /// The ids of the plan's tests (before sharding): what a refused `--resume` or `merge`
    /// names as the first difference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan_ids: Vec<String>,
    /// The 1, 5 and 15 minute load averages (/proc/loadavg) when the run started: how busy
    /// the machine was. Timed figures from a busy machine are not worth comparing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_average: Option<[f64; 3]>,
    /// Set by `tpsbench publish`: the file's absolute paths were cut to file names and its
    /// host name replaced by this label (unless kept on purpose).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<redact::Published>,
    /// `tpsbench tune`: its race (the rounds are in the tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tune: Option<tune::TuneRecord>,
    /// The wall time the plan was estimated to take before it ran (what `--dry-run`
    /// prints), in seconds: beside `started_at` and `finished_at`, how good the estimate was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_seconds: Option<f64>,
}

fn one_round() -> u32 {
    1
}

fn is_one_round(r: &u32) -> bool {
    *r == 1
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelRecord {
    /// The name given in models.toml.
    pub name: String,
    pub path: String,
    pub model_filename: String,
    /// Bytes on disk.
    pub file_size: u64,
    pub sha256: String,
    /// `general.architecture`, e.g. "llama".
    pub architecture: Option<String>,
    /// `general.file_type` as a label, e.g. "Q4_1".
    pub quantization: Option<String>,
    /// llama.cpp's description (llama-bench's `model_type`); absent if loading failed.
    pub model_type: Option<String>,
    /// Bytes of weights as llama.cpp counts them (llama-bench's `model_size`).
    pub model_size: Option<u64>,
    pub model_n_params: Option<u64>,
    /// Why the model could not be inspected or loaded.
    pub error: Option<String>,
    /// `model_size · 8 / model_n_params`: bits per weight as llama.cpp counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits_per_weight: Option<f64>,
    /// The file's tensor types by share of parameters, largest first, from its GGUF header:
    /// what it really holds, which can differ from `quantization` (llama.cpp's K-quant
    /// fallback on rows not a multiple of 256 wide).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tensor_types: Vec<tensor_mix::TypeShare>,
    /// The model whatever its quantization: 16 hex digits of the SHA-256 of its architecture,
    /// tensor names and shapes and vocabulary. Files of one model share it; the leaderboard
    /// groups by it rather than by the name typed in models.toml.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// Where the file came from: a ladder variant or a synthetic model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// Output quality against the ladder's reference variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<Quality>,
    /// Bytes of the evaluation text per token of this model's tokenizer: output bytes/s =
    /// `avg_ts × bytes_per_token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_token: Option<f64>,
    /// Tokens of the configured reference tokenizer (tokenizer.json) per token of this
    /// model: reference tokens/s = `avg_ts × ref_tokens_per_token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ref_tokens_per_token: Option<f64>,
}

/// Where a model file came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The file the variant was quantized from (the file itself for a synthetic model).
    pub base_file: String,
    pub base_sha256: String,
    /// The variant's type, e.g. `Q4_K_M`.
    #[serde(rename = "type")]
    pub quant_type: String,
    /// The base file's type, e.g. `Q4_1`.
    pub base_type: String,
    /// The base was already quantized: the variant carries the base's error plus its own.
    pub requantized: bool,
    /// Random weights (`tpsbench synth`): speed only, never quality figures.
    pub synthetic: bool,
    /// The synthetic shape preset, e.g. `llama-3-8b`.
    pub preset: Option<String>,
    /// How a ladder variant was built beyond its type (llama-quantize's options).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipe: Option<RecipeRecord>,
    /// A file given as it is (a download), not built here: `type` is its tensor mix and
    /// `base_*` name the ladder's base it is compared within.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub given: bool,
}

/// A variant's recipe: its importance matrix and its overrides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecipeRecord {
    /// The variant's name in the ladder, e.g. `Q4_K_M-imat`.
    pub name: String,
    /// SHA-256 of the imatrix file (as written, when computed here).
    pub imatrix_sha256: Option<String>,
    /// The calibration text: the file name, or the dataset a given imatrix file names.
    pub imatrix_text: Option<String>,
    /// SHA-256 of the calibration text, when the imatrix was computed here.
    pub imatrix_text_sha256: Option<String>,
    /// llama-quantize's options: `attn_v=Q6_K`, `output=Q6_K`, `token_embd=Q4_K`, `pure`,
    /// `template=<file>` (with the template's tensor types as further patterns).
    pub overrides: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestRecord {
    /// Unique id in the run, e.g. `SmolLM2-135M/Q4_1/pp512`.
    pub id: String,
    /// Stable identity of what was measured: SHA-256 of the model file's SHA-256 and the
    /// test configuration. Equal across runs and machines for the same model and test;
    /// leaderboards deduplicate on (machine, identity).
    pub identity: String,
    /// The model's name in models.toml.
    pub model: String,
    /// llama-bench's test name: `pp512`, `tg128`, `pp512 @ d1024`.
    pub test: String,
    /// What the test measures; exporters and the leaderboard choose by it.
    pub kind: crate::plan::TestKind,
    pub status: Status,
    pub error: Option<String>,
    pub model_filename: String,
    pub model_type: Option<String>,
    pub model_size: Option<u64>,
    pub model_n_params: Option<u64>,
    pub backends: String,
    #[serde(flatten)]
    pub params: TestParams,
    /// The context size used: n_prompt + n_gen + n_depth.
    pub n_ctx: u32,
    pub seed: u64,
    pub warmup: u32,
    /// RFC 3339 time the test started.
    pub test_time: String,
    /// Mean and sample standard deviation of the repetition times, in ns.
    pub avg_ns: Option<u64>,
    pub stddev_ns: Option<u64>,
    /// Mean and sample standard deviation of the per-repetition tokens/s.
    pub avg_ts: Option<f64>,
    pub stddev_ts: Option<f64>,
    /// Median of the per-repetition tokens/s.
    pub median_ts: Option<f64>,
    /// Raw repetition times and rates, in run order.
    pub samples_ns: Vec<u64>,
    pub samples_ts: Vec<f64>,
    /// Confidence intervals, outliers, steadiness and why repetition stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<crate::stats::analysis::TestStats>,
    /// Memory, energy and roofline figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<crate::machine::Resources>,
    /// Serving-test figures (TTFT, inter-token latency, per-request and aggregate rates);
    /// absent for llama-bench-style tests. See docs/schema.md, "serving".
    /// Boxed: most tests have none, and inline it made every test record 2.8 KB instead of
    /// 1.4 KB, in a sweep that holds them all in memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serving: Option<Box<serving::Serving>>,
    /// Speculative-test figures: the drafter, the speedup over plain decoding paired by
    /// round, acceptance by position. Boxed, as `serving`: most tests have none, and a long
    /// sweep holds every record. See docs/schema.md, "speculative".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculative: Option<Box<speculative::Speculative>>,
    /// Where llama.cpp put the layers, KV cache and compute buffers (from its load log):
    /// what `n_gpu_layers` and `no_kv_offload` actually achieved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<crate::engine::placement::Placement>,
    /// The test parameters (of `config::knobs`' table) this build did not honour, one line
    /// each naming the parameter and why: the figures were measured without them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_honoured: Vec<String>,
    /// Quality tests: KLD and perplexity against the ladder's reference variant (also in
    /// the model's record, where the ladder table and the leaderboard read it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<Box<Quality>>,
    /// Each round of a test run with `rounds` of 2 or more, in the order they ran; absent
    /// for one round (llama-bench's methodology). The top-level samples are every round's
    /// repetitions in run order; `stats.interval` is then the interval between rounds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<RoundRecord>,
    /// The text a `tokens = "text"` test decoded; absent for llama-bench's random ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<Box<text::TextSource>>,
}

/// How `rounds = "auto"` ran: its budget and how it ended. The answer's ties of such a run
/// are judged with the sequential design its `max_rounds` planned (`stats::pairs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoRoundsRecord {
    pub max_rounds: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_seconds: Option<f64>,
    /// "resolved after 4 rounds", "budget spent: ..." (absent while the run goes on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// The comparisons still open when the rounds stopped ("Q4_K_M vs Q8_0 tg128").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open: Vec<String>,
}

/// One round of a test: a fresh context (a fresh process under `--isolate`), its
/// repetitions, and the interval within it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord {
    /// RFC 3339 time the round of this test started.
    pub test_time: String,
    pub samples_ns: Vec<u64>,
    /// Median of this round's per-repetition tokens/s: what the interval between rounds
    /// and the verdicts across rounds are computed from.
    pub median_ts: f64,
    /// The 95% interval within this round (t on the log scale of its repetitions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<crate::stats::analysis::LevelInterval>,
}

pub use crate::plan::build::test_identity;

/// The kind of a test in a version 1 or 2 file (which did not record it), from its JSON:
/// serving tests by their mode, quality tests by their name, the rest by their sizes.
pub(crate) fn infer_kind(test: &serde_json::Value) -> crate::plan::TestKind {
    use crate::plan::TestKind;
    if let Some(mode) = test.pointer("/serving/mode").and_then(|m| m.as_str()) {
        if let Some(k) = TestKind::of_serving_mode(mode) {
            return k;
        }
    }
    if test.get("test").and_then(|t| t.as_str()) == Some("quality") {
        return TestKind::Quality;
    }
    let n = |k: &str| test.get(k).and_then(|x| x.as_u64()).unwrap_or(0) as u32;
    TestKind::of_sizes(n("n_prompt"), n("n_gen"))
}

impl TestRecord {
    /// Fills the figures and the analysis from raw samples.
    pub fn set_measurement(
        &mut self,
        samples_ns: Vec<u64>,
        stop: crate::stats::analysis::StopReason,
        ci_target: Option<f64>,
    ) {
        self.set_samples(samples_ns);
        self.stats = Some(crate::stats::analysis::analyse(
            &self.samples_ts,
            stop,
            ci_target,
            self.seed,
        ));
    }

    /// Fills the figures from raw samples.
    pub fn set_samples(&mut self, samples_ns: Vec<u64>) {
        let s = crate::stats::summarize(self.params.n_tokens(), &samples_ns);
        self.samples_ts = crate::stats::rates_per_second(self.params.n_tokens(), &samples_ns);
        self.samples_ns = samples_ns;
        self.avg_ns = Some(s.avg_ns.round() as u64);
        self.stddev_ns = Some(s.stddev_ns.round() as u64);
        self.avg_ts = Some(s.avg_ts);
        self.stddev_ts = Some(s.stddev_ts);
        self.median_ts = Some(s.median_ts);
        self.status = Status::Ok;
        self.error = None;
    }

    /// Fills the rate figures of a test whose samples are not llama-bench repetitions
    /// (serving, speculative): mean, deviation and median of `samples_ts`, mean of the times;
    /// the status is Ok.
    pub fn set_rates(&mut self, samples_ns: Vec<u64>, samples_ts: Vec<f64>) {
        let ns: Vec<f64> = samples_ns.iter().map(|&x| x as f64).collect();
        self.avg_ns = Some(crate::stats::mean(&ns).round() as u64);
        self.stddev_ns = Some(crate::stats::stddev(&ns).round() as u64);
        self.avg_ts = Some(crate::stats::mean(&samples_ts));
        self.stddev_ts = Some(crate::stats::stddev(&samples_ts));
        self.median_ts = Some(crate::stats::median(&samples_ts));
        self.samples_ns = samples_ns;
        self.samples_ts = samples_ts;
        self.status = Status::Ok;
        self.error = None;
    }

    /// How many rounds the record holds: 0 before any measurement (or after a failure,
    /// which is final), else the rounds listed, and 1 for a one-round record.
    pub fn rounds_done(&self) -> usize {
        if self.status != Status::Ok {
            return 0;
        }
        self.rounds.len().max(1)
    }

    /// The per-round medians a verdict across rounds uses: one per round, or the test's
    /// median alone for a one-round record.
    pub fn round_medians(&self) -> Vec<f64> {
        if self.rounds.len() >= 2 {
            self.rounds.iter().map(|r| r.median_ts).collect()
        } else {
            self.median_ts.into_iter().collect()
        }
    }

    /// Adds `next`, a later round of this same test, measured on its own: its repetitions
    /// join the samples, and the statistics are recomputed with the interval between rounds.
    /// A failed round fails the test (with the round named); a failed test stays failed.
    pub fn add_round(&mut self, next: TestRecord, ci_target: Option<f64>) {
        if self.status != Status::Ok {
            return;
        }
        if next.status != Status::Ok {
            let why = next.error.unwrap_or_else(|| "no error recorded".into());
            self.fail(format!("round {} failed: {why}", self.rounds_done() + 1));
            return;
        }
        if self.rounds.is_empty() {
            self.rounds.push(self.as_round());
        }
        self.rounds.push(next.as_round());
        let samples: Vec<u64> = self
            .rounds
            .iter()
            .flat_map(|r| r.samples_ns.iter().copied())
            .collect();
        let stop = self.stats.as_ref().map(|s| s.stop_reason);
        let stop = stop.unwrap_or(crate::stats::analysis::StopReason::Fixed);
        if self.kind.is_llama_bench() {
            self.set_samples(samples);
        } else {
            // A serving test's rates are not n_tokens / time (goodput counts requests): each
            // round's are kept as measured, and a goodput step joins the round's others.
            let rates = [self.samples_ts.as_slice(), &next.samples_ts].concat();
            if let (Some(a), Some(b)) = (self.speculative.as_mut(), next.speculative) {
                a.join(*b);
            }
            let step = (next.serving.and_then(|s| s.goodput)).map(|g| g.steps);
            if let (Some(g), Some(steps)) =
                (self.serving.as_mut().and_then(|s| s.goodput.as_mut()), step)
            {
                g.steps.extend(steps);
            }
            self.set_rates(samples, rates);
        }
        let medians: Vec<f64> = self.rounds.iter().map(|r| r.median_ts).collect();
        self.stats = Some(crate::stats::analysis::analyse_rounds(
            &self.samples_ts,
            &medians,
            stop,
            ci_target,
            self.seed,
        ));
    }

    /// This record's own measurement as one round.
    fn as_round(&self) -> RoundRecord {
        RoundRecord {
            test_time: self.test_time.clone(),
            samples_ns: self.samples_ns.clone(),
            median_ts: self.median_ts.unwrap_or(0.0),
            interval: crate::stats::analysis::LevelInterval::of(
                crate::stats::analysis::Covers::WithinLaunch,
                &self.samples_ts,
            ),
        }
    }

    pub fn fail(&mut self, error: impl Into<String>) {
        self.status = Status::Failed;
        self.error = Some(error.into());
    }
}

#[cfg(test)]
mod testdata;
#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Axes;
    use crate::plan::expand_axes;

    /// A sweep holds every test's record in memory: a serving test's figures,
    /// which most tests lack, stay boxed rather than widen them all.
    #[test]
    fn a_test_record_stays_small_in_memory() {
        let size = std::mem::size_of::<TestRecord>();
        assert!(size <= 1536, "{size} bytes");
    }

    #[test]
    fn identity_is_stable_and_changes_with_model_or_configuration() {
        let p = expand_axes(&Axes::llama_bench_defaults(2));
        let a = test_identity("abc", &p[0]);
        assert_eq!(a, test_identity("abc", &p[0].clone()));
        assert_eq!(a.len(), 64);
        assert_ne!(a, test_identity("abd", &p[0]));
        assert_ne!(a, test_identity("abc", &p[1]));
    }
}
