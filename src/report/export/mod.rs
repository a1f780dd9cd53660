//! Exporters: a run into the bytes of one format, with no I/O, so they are tested on fixed
//! records and reused for files and stdout alike.

pub(crate) mod csv;
mod depth;
mod json;
pub mod llama_bench_row;
mod markdown;
pub(crate) mod serving;

use crate::record::RunRecord;

/// The formats `--output` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// A llama-bench-style Markdown table.
    Md,
    /// The whole result document (the schema in docs/schema.md).
    Json,
    /// One test record per line.
    Jsonl,
    /// One row per test, llama-bench's column names.
    Csv,
    /// llama-bench's `-o json`: an array of rows that llama.cpp's compare-llama-bench.py reads.
    LlamaBenchJson,
    /// llama-bench's `-o jsonl`: one such row per line.
    LlamaBenchJsonl,
}

impl Format {
    pub(crate) fn render(self, run: &RunRecord) -> Vec<u8> {
        match self {
            Format::Md => markdown::render(run),
            Format::Json => crate::record::results::to_json_bytes(run),
            Format::Jsonl => json::lines(&run.tests),
            Format::Csv => csv::render(run),
            Format::LlamaBenchJson => {
                crate::record::results::to_json_bytes(&llama_bench_row::rows(run))
            }
            Format::LlamaBenchJsonl => json::lines(llama_bench_row::rows(run)),
        }
    }

    /// A note for stderr naming what this format leaves out of `run`: llama-bench's formats
    /// hold its own kinds of test only (pp, tg, pg).
    pub(crate) fn skipped(self, run: &RunRecord) -> Option<String> {
        let format = match self {
            Format::LlamaBenchJson => "llama-bench-json",
            Format::LlamaBenchJsonl => "llama-bench-jsonl",
            _ => return None,
        };
        let others: Vec<_> = (run.tests.iter())
            .filter(|t| !t.kind.is_llama_bench())
            .collect();
        if others.is_empty() {
            return None;
        }
        let kinds = crate::util::sorted_unique(others.iter().map(|t| t.kind.as_str()));
        Some(format!(
            "{format}: left out {} tests of kind {} (llama-bench has only pp, tg and pg tests)",
            others.len(),
            kinds.join(", ")
        ))
    }
}

/// Snapshots of every format on the fixed fixture run: a change in any output shows up as
/// a reviewed diff (`cargo insta review`), never silently.
#[cfg(test)]
mod snapshot_tests {
    use super::*;

    fn render(f: Format) -> String {
        String::from_utf8(f.render(&fixtures::run())).unwrap()
    }

    #[test]
    fn markdown_snapshot() {
        insta::assert_snapshot!(render(Format::Md));
    }

    #[test]
    fn json_snapshot() {
        insta::assert_snapshot!(render(Format::Json));
    }

    #[test]
    fn jsonl_snapshot() {
        insta::assert_snapshot!(render(Format::Jsonl));
    }

    #[test]
    fn csv_snapshot() {
        insta::assert_snapshot!(render(Format::Csv));
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    use crate::plan::TestParams;
    use crate::record::*;

    /// A run of two CPU tests of one model: a measured pp512 and a failed tg128.
    pub fn run() -> RunRecord {
        RunRecord {
            schema_version: SCHEMA_VERSION,
            run: run_info(),
            models: vec![],
            tests: test_records(),
        }
    }

    /// The measured test and the failed one.
    fn test_records() -> Vec<TestRecord> {
        let params = TestParams {
            n_prompt: 512,
            n_gen: 0,
            n_depth: 0,
            n_batch: 2048,
            n_ubatch: 512,
            n_gpu_layers: 99,
            n_threads: 2,
            flash_attn: -1,
            type_k: "f16".into(),
            type_v: "f16".into(),
            split_mode: Default::default(),
            main_gpu: 0,
            no_kv_offload: false,
            tokens: Default::default(),
            knobs: Default::default(),
        };
        let mut ok = TestRecord {
            id: "m/Q4_1/pp512".into(),
            identity: "0".repeat(64),
            model: "m".into(),
            test: "pp512".into(),
            kind: crate::plan::TestKind::Pp,
            status: Status::Ok,
            error: None,
            model_filename: "m.gguf".into(),
            model_type: Some("llama ?B Q4_1".into()),
            model_size: Some(96 * 1024 * 1024),
            model_n_params: Some(134_515_008),
            backends: "CPU".into(),
            n_ctx: 512,
            params: params.clone(),
            seed: 42,
            warmup: 1,
            test_time: "2026-11-30T00:00:00Z".into(),
            avg_ns: None,
            stddev_ns: None,
            avg_ts: None,
            stddev_ts: None,
            median_ts: None,
            samples_ns: vec![],
            samples_ts: vec![],
            stats: None,
            resources: None,
            serving: None,
            speculative: None,
            placement: None,
            not_honoured: Vec::new(),
            quality: None,
            rounds: Vec::new(),
            text: None,
        };
        ok.set_samples(vec![1_000_000_000, 1_024_000_000]);
        let mut failed = ok.clone();
        failed.id = "m/Q4_1/tg128".into();
        failed.test = "tg128".into();
        failed.kind = crate::plan::TestKind::Tg;
        failed.params.n_prompt = 0;
        failed.params.n_gen = 128;
        failed.samples_ns.clear();
        failed.samples_ts.clear();
        failed.avg_ts = None;
        failed.fail("failed to create context, \"oom\"");
        vec![ok, failed]
    }

    /// The run's metadata: a 2-core CPU machine, one round of two repetitions.
    fn run_info() -> RunInfo {
        RunInfo {
            tool: ToolInfo {
                name: "tpsbench".into(),
                version: "0.1.0".into(),
                git_commit: None,
            },
            llama_cpp: LlamaBuild {
                sys_crate_version: "0.1.161".into(),
                build_number: None,
                build_commit: None,
                system_info: "CPU : AVX2 = 1".into(),
                gpu_backend: "cpu".into(),
                cmake_flags: String::new(),
                cpu_features: vec![],
                library: None,
            },
            started_at: "2026-11-30T00:00:00Z".into(),
            finished_at: None,
            system: SystemInfo {
                cpu_model: "cpu".into(),
                physical_cores: 2,
                logical_cores: 2,
                ram_bytes: 1 << 30,
                os: "Linux".into(),
                kernel: "6".into(),
                arch: "x86_64".into(),
                hostname: "h".into(),
            },
            devices: vec![],
            backends: "CPU".into(),
            config_file: "models.toml".into(),
            seed: 42,
            warmup: 1,
            repetitions: 2,
            rounds: 1,
            rounds_auto: None,
            command: vec![],
            gpus: vec![],
            host_bandwidth: None,
            resumed_at: vec![],
            shard: None,
            plan_hash: None,
            plan_settings: None,
            plan_ids: vec![],
            load_average: None,
            published: None,
            tune: None,
            estimated_seconds: None,
        }
    }
}
