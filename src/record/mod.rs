//! The result file, one per run. Field names follow llama-bench's JSON output wherever
//! llama-bench has the field, so its users can read ours unchanged; docs/schema.md says what
//! each field means.

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
use crate::stats::analysis::{self, Covers, LevelInterval, StopReason};
use crate::util::is_default as is_zero;

pub use error::{Contradiction, Disagreement, RecordError};

/// Versions 1 and 2 still read: `results::read` infers the kind of their tests.
pub const SCHEMA_VERSION: u32 = 3;

pub use crate::plan::Shard as ShardInfo;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub schema_version: u32,
    pub run: RunInfo,
    pub models: Vec<ModelRecord>,
    pub tests: Vec<TestRecord>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
    pub git_commit: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LlamaBuild {
    pub sys_crate_version: String,
    pub build_number: Option<i64>,
    pub build_commit: Option<String>,
    /// `llama_print_system_info()`.
    pub system_info: String,
    /// "cpu", "cuda", "vulkan" or "metal".
    pub gpu_backend: String,
    #[serde(default)]
    pub cmake_flags: String,
    #[serde(default)]
    pub cpu_features: Vec<String>,
    /// Linked in, or a shared libllama found at run time, with its version stamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<crate::engine::linkage::Library>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub tool: ToolInfo,
    pub llama_cpp: LlamaBuild,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// Absent in a file of a run still going or interrupted.
    #[serialize_always]
    pub finished_at: Option<String>,
    pub system: SystemInfo,
    pub devices: Vec<DeviceInfo>,
    pub backends: String,
    pub config_file: String,
    pub seed: u64,
    pub warmup: u32,
    pub repetitions: u32,
    /// 1 in files written before rounds existed.
    #[serde(default = "one_round", skip_serializing_if = "is_one_round")]
    pub rounds: u32,
    pub rounds_auto: Option<AutoRoundsRecord>,
    pub command: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<crate::machine::nvml::GpuFacts>,
    pub host_bandwidth: Option<crate::machine::bandwidth::Bandwidth>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumed_at: Vec<String>,
    pub shard: Option<ShardInfo>,
    /// Over the whole plan (before sharding and resuming) and the measurement settings.
    pub plan_hash: Option<String>,
    pub plan_settings: Option<String>,
    /// Before sharding: what a refused `--resume` or `merge` names as the first difference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan_ids: Vec<String>,
    /// When the run started: timed figures from a busy machine are not worth comparing.
    pub load_average: Option<[f64; 3]>,
    pub published: Option<redact::Published>,
    pub tune: Option<tune::TuneRecord>,
    /// Seconds, as `--dry-run` estimates them.
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
    pub name: String,
    pub path: String,
    pub model_filename: String,
    pub file_size: u64,
    pub sha256: String,
    pub architecture: Option<String>,
    /// `general.file_type` as a label.
    pub quantization: Option<String>,
    pub model_type: Option<String>,
    pub model_size: Option<u64>,
    pub model_n_params: Option<u64>,
    pub error: Option<String>,
    /// `model_size · 8 / model_n_params`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits_per_weight: Option<f64>,
    /// What the file really holds, which can differ from `quantization` (`tensor_mix`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tensor_types: Vec<tensor_mix::TypeShare>,
    /// The model whatever its quantization: the leaderboard groups by it rather than by the
    /// name typed in models.toml.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<Quality>,
    /// Output bytes/s = `avg_ts × bytes_per_token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_token: Option<f64>,
    /// Reference tokens/s = `avg_ts × ref_tokens_per_token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ref_tokens_per_token: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The file itself for a synthetic model.
    pub base_file: String,
    pub base_sha256: String,
    #[serde(rename = "type")]
    pub quant_type: String,
    pub base_type: String,
    /// The variant carries the base's error plus its own.
    pub requantized: bool,
    /// Random weights: speed only, never quality figures.
    pub synthetic: bool,
    pub preset: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipe: Option<RecipeRecord>,
    /// A file given as it is (a download), not built here: `type` is its tensor mix and
    /// `base_*` name the ladder's base it is compared within.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub given: bool,
}

/// A variant's recipe: its importance matrix and its overrides.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecipeRecord {
    pub name: String,
    pub imatrix_sha256: Option<String>,
    /// The calibration text: the file name, or the dataset a given imatrix file names.
    pub imatrix_text: Option<String>,
    pub imatrix_text_sha256: Option<String>,
    /// llama-quantize's options (`attn_v=Q6_K`, `pure`, `template=<file>`...).
    pub overrides: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    #[default]
    Failed,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TestRecord {
    pub id: String,
    /// Equal across runs and machines for the same model file and test: leaderboards
    /// deduplicate on (machine, identity).
    pub identity: String,
    pub model: String,
    /// llama-bench's test name: `pp512`, `tg128`, `pp512 @ d1024`.
    pub test: String,
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
    /// n_prompt + n_gen + n_depth.
    pub n_ctx: u32,
    pub seed: u64,
    pub warmup: u32,
    /// RFC 3339.
    pub test_time: String,
    /// Of the repetitions: times in ns, rates in tokens/s (sample standard deviations).
    pub avg_ns: Option<u64>,
    pub stddev_ns: Option<u64>,
    pub avg_ts: Option<f64>,
    pub stddev_ts: Option<f64>,
    pub median_ts: Option<f64>,
    /// In run order.
    pub samples_ns: Vec<u64>,
    pub samples_ts: Vec<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<analysis::TestStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<crate::machine::Resources>,
    /// Boxed: most tests have none, and inline it made every test record 2.8 KB instead of
    /// 1.4 KB, in a sweep that holds them all in memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serving: Option<Box<serving::Serving>>,
    /// Boxed, as `serving`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculative: Option<Box<speculative::Speculative>>,
    /// What `n_gpu_layers` and `no_kv_offload` actually achieved (llama.cpp's load log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<crate::engine::placement::Placement>,
    /// The parameters this build did not honour, one line each: the figures were measured
    /// without them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_honoured: Vec<String>,
    /// Also in the model's record, where the ladder table and the leaderboard read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<Box<Quality>>,
    /// Absent for one round. The top-level samples are every round's repetitions in run
    /// order; `stats.interval` is then the interval between rounds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<RoundRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<Box<text::TextSource>>,
}

/// How `rounds = "auto"` ran: its budget and how it ended. The answer's ties of such a run
/// are judged with the sequential design its `max_rounds` planned (`stats::pairs`).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoRoundsRecord {
    pub max_rounds: u32,
    pub max_seconds: Option<f64>,
    pub stopped: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open: Vec<String>,
}

/// One round of a test: a fresh context (a fresh process under `--isolate`), its
/// repetitions, and the interval within it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord {
    pub test_time: String,
    pub samples_ns: Vec<u64>,
    /// What the interval between rounds and the verdicts across rounds are computed from.
    pub median_ts: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<LevelInterval>,
}

pub use crate::plan::build::test_identity;

/// The kind of a test in a version 1 or 2 file (which did not record it), from its JSON:
/// serving tests by their mode, quality tests by their name, the rest by their sizes.
pub(crate) fn infer_kind(test: &serde_json::Value) -> crate::plan::TestKind {
    use crate::plan::TestKind;
    let mode = test.pointer("/serving/mode").and_then(|m| m.as_str());
    if let Some(k) = mode.and_then(TestKind::of_serving_mode) {
        return k;
    }
    if test.get("test").and_then(|t| t.as_str()) == Some("quality") {
        return TestKind::Quality;
    }
    let n = |k: &str| test.get(k).and_then(|x| x.as_u64()).unwrap_or(0) as u32;
    TestKind::of_sizes(n("n_prompt"), n("n_gen"))
}

impl RunRecord {
    pub fn model_of(&self, t: &TestRecord) -> Option<&ModelRecord> {
        self.models.iter().find(|m| m.name == t.model)
    }
}

impl TestRecord {
    pub fn set_measurement(
        &mut self,
        samples_ns: Vec<u64>,
        stop: StopReason,
        ci_target: Option<f64>,
    ) {
        self.set_samples(samples_ns);
        let stats = analysis::analyse(&self.samples_ts, stop, ci_target, self.seed);
        self.stats = Some(stats);
    }

    /// Fills the figures from raw llama-bench repetitions (`n_tokens` each).
    pub fn set_samples(&mut self, samples_ns: Vec<u64>) {
        let ts = crate::stats::rates_per_second(self.params.n_tokens(), &samples_ns);
        self.set_rates(samples_ns, ts);
    }

    /// Fills the figures from raw times and rates: mean, deviation and median of the rates
    /// (llama-bench's `avg_ts` is the mean of the rates), mean and deviation of the times;
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
        let stop = self
            .stats
            .as_ref()
            .map_or(StopReason::Fixed, |s| s.stop_reason);
        if self.kind.is_llama_bench() {
            self.set_samples(samples);
        } else {
            // A serving test's rates are not n_tokens / time (goodput counts requests): each
            // round's are kept as measured, and a goodput step joins the round's others.
            let rates = [self.samples_ts.as_slice(), &next.samples_ts].concat();
            if let (Some(a), Some(b)) = (self.speculative.as_mut(), next.speculative) {
                a.join(*b);
            }
            let step = next.serving.and_then(|s| s.goodput).map(|g| g.steps);
            if let (Some(g), Some(steps)) =
                (self.serving.as_mut().and_then(|s| s.goodput.as_mut()), step)
            {
                g.steps.extend(steps);
            }
            self.set_rates(samples, rates);
        }
        let medians = self.round_medians();
        let (ts, seed) = (&self.samples_ts, self.seed);
        let stats = analysis::analyse_rounds(ts, &medians, stop, ci_target, seed);
        self.stats = Some(stats);
    }

    fn as_round(&self) -> RoundRecord {
        RoundRecord {
            test_time: self.test_time.clone(),
            samples_ns: self.samples_ns.clone(),
            median_ts: self.median_ts.unwrap_or(0.0),
            interval: LevelInterval::of(Covers::WithinLaunch, &self.samples_ts),
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
