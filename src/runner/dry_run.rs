//! `--dry-run`: the plan by model and rounds, the files to write first with the disk they
//! need, each model's memory per device (tune's estimate) and the wall time, from earlier
//! results of this build on this machine where they hold the test, else from the machine's
//! bandwidth and FLOP/s. No model is loaded; every run records the same estimate.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::error::RunnerError;
use super::prepare::{self, Prepared, Scope};
use crate::config::Config;
use crate::config::quant_types::QuantType;
use crate::engine::DeviceInfo;
use crate::ladder::cache::{free_bytes, size_bound};
use crate::machine::Ceilings;
use crate::plan::{Detail, ModelSource, PlannedTest, TestKind};
use crate::record::{RunInfo, Status};
use crate::util::units::format_size;

/// What earlier runs of this build on this machine measured: seconds per repetition by
/// test identity, and the best prefill FLOP/s.
#[derive(Default)]
pub struct Earlier {
    per_rep: BTreeMap<String, f64>,
    flops: Option<f64>,
}

impl Earlier {
    /// The newest result files in `dir` (at most 20) of the machine and build of `info`.
    pub fn read(dir: &Path, info: &RunInfo) -> Earlier {
        let mut files = crate::record::results::json_files(dir).unwrap_or_default();
        // A huge file (a long sweep's) would cost the start more than it tells.
        files.retain(|p| std::fs::metadata(p).is_ok_and(|m| m.len() < 16 << 20));
        let mut e = Earlier::default();
        let runs = files.iter().rev().take(20);
        for r in runs.filter_map(|f| crate::record::results::read(f).ok()) {
            let (a, b) = (&r.run, info);
            let same = a.system.hostname == b.system.hostname
                && a.system.cpu_model == b.system.cpu_model
                && a.tool.version == b.tool.version
                && a.llama_cpp.build_commit == b.llama_cpp.build_commit
                && a.llama_cpp.gpu_backend == b.llama_cpp.gpu_backend;
            for t in r.tests.iter().filter(|t| same && t.status == Status::Ok) {
                if let Some(ns) = t.avg_ns {
                    e.per_rep
                        .entry(t.identity.clone())
                        .or_insert(ns as f64 * 1e-9);
                }
                if let (TestKind::Pp, Some(ts), Some(n)) = (t.kind, t.avg_ts, t.model_n_params) {
                    e.flops = Some(e.flops.unwrap_or(0.0).max(ts * 2.0 * n as f64));
                }
            }
        }
        e
    }
}

/// What the estimate needs of a model: its file (or the bound of one to write), the bytes a
/// decoded token reads, its parameters and layers.
struct Size {
    file: u64,
    per_token: f64,
    n_params: f64,
    n_layer: u64,
    /// Not on disk yet: the file is written first, this big at most.
    to_write: Option<PathBuf>,
}

/// Model `mi` of the plan, as far as it can be known without loading it.
fn size_of(config: &Config, prep: &Prepared, mi: usize) -> Option<Size> {
    let path = PathBuf::from(&prep.models[mi].path);
    if let Ok(h) = crate::gguf::reader::read_header(&path) {
        let s = crate::machine::shape_of(&h)?;
        return Some(Size {
            file: h.file_size,
            per_token: s.weight_bytes_per_token(),
            n_params: s.n_params as f64,
            n_layer: s.n_layer,
            to_write: None,
        });
    }
    let (quant, n_elements) = match prep.plan.models[mi].source {
        ModelSource::Variant { ladder, quant, .. } => {
            (quant, prep.bases[ladder].as_ref().ok()?.n_elements)
        }
        // A file variant's header read above; none is a missing file.
        ModelSource::LadderFile { .. } => return None,
        ModelSource::File(_) => {
            let spec = config.models.get(mi)?.synth.as_ref()?;
            let shape = crate::gguf::presets::shape(&spec.preset)?;
            (QuantType::parse(&spec.quant).ok()?, shape.n_params())
        }
    };
    // The bytes a token reads: the type's bits per weight, about (its digit and a scale).
    let digit = quant.name.chars().nth(1).and_then(|c| c.to_digit(10));
    let bits = match quant.name {
        "F32" => 32.0,
        "F16" | "BF16" => 16.0,
        _ => digit.map_or(8.5, |d| f64::from(d) + 0.5),
    };
    Some(Size {
        file: size_bound(quant, n_elements),
        per_token: n_elements as f64 * bits / 8.0,
        n_params: n_elements as f64,
        n_layer: 0,
        to_write: Some(path),
    })
}

/// Seconds of one round of test `t`: its warm-up and repetitions, from an earlier result
/// of the same test, else from the rates the machine allows; a quality pass, its evaluation
/// tokens at the prefill rate; a test of another kind counts 30 s (not estimated). None: an
/// offloaded test on a device of unknown bandwidth, with no earlier result to go by.
fn test_seconds(
    t: &PlannedTest,
    size: Option<&Size>,
    c: &Ceilings,
    e: &Earlier,
    config: &Config,
) -> Option<f64> {
    let quality = match t.detail {
        Detail::Quality { ladder } => config.ladders.get(ladder).map(|l| &l.eval),
        _ => None,
    };
    let Some(s) = size.filter(|_| quality.is_some() || matches!(t.detail, Detail::Bench)) else {
        return Some(30.0);
    };
    let p = &t.params;
    let bw = c
        .for_test(p.n_gpu_layers, s.n_layer)
        .map_or(20e9, |(g, _)| g * 1e9);
    let offloaded = c.gpu_build && p.n_gpu_layers != 0;
    let measured = e.per_rep.get(&t.identity).copied();
    // No rate is assumed for a device not in the bandwidth table: llvmpipe, a CPU that calls
    // itself a GPU, decoded 40 times slower than the CPU it ran on.
    let known = if quality.is_some() { e.flops } else { measured };
    if offloaded && c.device.is_none() && known.is_none() {
        return None;
    }
    // Without an earlier prefill: 30 GFLOP/s per core, or 50 FLOP per byte/s of a GPU.
    let cores = f64::from(crate::util::system::physical_cores());
    let flops = e
        .flops
        .unwrap_or(if offloaded { bw * 50.0 } else { cores * 30e9 });
    if let Some(q) = quality {
        return Some(f64::from(q.n_ctx * q.n_chunks) * 2.0 * s.n_params / flops);
    }
    let prefill = f64::from(p.n_depth) * 2.0 * s.n_params / flops;
    // Decode at 60% of the bandwidth roofline.
    let timed = measured.unwrap_or_else(|| {
        f64::from(p.n_prompt) * 2.0 * s.n_params / flops
            + f64::from(p.n_gen) * s.per_token / (0.6 * bw)
    });
    // A warm-up decodes the whole prompt but one generated token (`PreparedTest::new`).
    let st = &config.settings;
    let warm = match (p.n_prompt, p.n_gen) {
        (0, n) if n > 0 => 1.0 / f64::from(n),
        _ => 1.0,
    };
    Some((f64::from(st.repetitions) + warm * f64::from(st.warmup)) * (timed + prefill))
}

/// The estimated wall time of a plan, in seconds.
pub struct Estimate {
    pub secs: f64,
    /// With auto rounds, the most their budget allows.
    pub most: f64,
    /// The tests left out of both: offloaded to a device of unknown speed.
    pub unknown: usize,
}

/// The estimated wall time of `tests`.
pub fn estimate(
    config: &Config,
    prep: &Prepared,
    tests: &[PlannedTest],
    c: &Ceilings,
    e: &Earlier,
) -> Estimate {
    let st = &config.settings;
    let sizes = Vec::from_iter((0..prep.models.len()).map(|i| size_of(config, prep, i)));
    // The start (engine, ceilings, result file), and each file to write at 50 MB/s a core.
    let cores = f64::from(crate::util::system::physical_cores());
    let written = sizes.iter().flatten().filter(|s| s.to_write.is_some());
    let mut once = 2.0 + written.map(|s| s.file as f64 / (50e6 * cores)).sum::<f64>();
    let (mut round, mut unknown) = (0.0, 0);
    for t in tests {
        let Some(s) = test_seconds(t, sizes[t.model].as_ref(), c, e, config) else {
            unknown += 1;
            continue;
        };
        // A fresh context for each test: 0.1 s.
        let s = 0.1 + s;
        if super::rounds::rounds_apply(t) {
            round += s
        } else {
            once += s
        }
    }
    // A load per model-level setting and round: the file from the page cache at 3 GB/s.
    let loads: BTreeSet<_> = tests.iter().filter_map(PlannedTest::load_key).collect();
    round += loads
        .iter()
        .map(|(m, _, _)| 0.5 + sizes[*m].as_ref().map_or(0.0, |s| s.file as f64 / 3e9))
        .sum::<f64>();
    let (secs, most) = span(once, round, st.rounds, st.auto_rounds);
    Estimate {
        secs,
        most,
        unknown,
    }
}

/// The run's seconds, and at most, from its one-off part and one round's: auto rounds run
/// two at least (fewer pair nothing) and begin none after `max_seconds`.
fn span(once: f64, round: f64, rounds: u32, auto: Option<crate::config::AutoRounds>) -> (f64, f64) {
    let all = once + round * f64::from(rounds.max(1));
    match auto {
        Some(a) => {
            let budget = a.max_seconds.map_or(f64::MAX, |m| once + m + round);
            let most = all.min(budget.max(once + 2.0 * round));
            ((once + 2.0 * round).min(most), most)
        }
        None => (all, all),
    }
}

/// The dry run's text: the plan, the files, the memory and the estimate.
pub fn show(
    config: &Config,
    filters: &[String],
    shard: Option<crate::plan::Shard>,
    info: &RunInfo,
    c: &Ceilings,
    results: &Path,
) -> Result<String, RunnerError> {
    let prep = prepare::prepare(config, filters, true)?;
    let tests = prepare::part(&prep.plan, Scope::All, shard);
    if tests.is_empty() {
        return Err(RunnerError::NoMatch {
            filters: filters.to_vec(),
        });
    }
    let st = &config.settings;
    let mut out = String::new();
    let rounds = match st.auto_rounds {
        Some(a) => format!(
            "auto: until the answer is established, 2 to {} rounds{}",
            a.max_rounds,
            a.max_seconds
                .map_or(String::new(), |s| format!(", none begun after {s:.0} s"))
        ),
        None => format!("{}", st.rounds.max(1)),
    };
    let _ = writeln!(
        out,
        "plan of {}: {} tests; rounds of the pp/tg tests: {rounds}; {} warm-up + {} repetitions each",
        config.file.display(),
        tests.len(),
        st.warmup,
        st.repetitions
    );
    let mut to_write: Vec<(PathBuf, u64)> = Vec::new();
    for mi in 0..prep.plan.models.len() {
        let mine: Vec<&PlannedTest> = tests.iter().filter(|t| t.model == mi).collect();
        if !mine.is_empty() {
            let size = size_of(config, &prep, mi);
            out.push_str(&model_lines(&prep, mi, &mine, size.as_ref(), &info.devices));
            to_write.extend(size.and_then(|s| Some((s.to_write?, s.file))));
        }
    }
    if !to_write.is_empty() {
        let total: u64 = to_write.iter().map(|(_, b)| b).sum();
        let _ = writeln!(
            out,
            "\nfiles to write first ({} at most):",
            format_size(total)
        );
        for (p, b) in &to_write {
            let free = free_bytes(p).map_or("free space unknown".into(), |f| {
                format!("{} free there", format_size(f))
            });
            let _ = writeln!(
                out,
                "  {} (at most {}; {free})",
                p.display(),
                format_size(*b)
            );
        }
    }
    for missing in prepare::not_fetched_datasets(config) {
        let _ = writeln!(out, "\nto fetch first: {missing}");
    }
    let e = Earlier::read(results, info);
    out.push_str(&estimate_line(
        &e,
        results,
        &estimate(config, &prep, &tests, c, &e),
    ));
    Ok(out)
}

/// "CPU 72.0 MiB, CUDA0 4.50 GiB": what the model's largest test holds per device, from the
/// file's tensor table; why not, where it cannot be said before the file exists.
fn memory(path: &str, tests: &[&PlannedTest], devices: &[DeviceInfo]) -> String {
    // The sweep's tests, where the model has them: a quality pass is sized like them.
    let widest = (tests.iter())
        .filter(|t| matches!(t.detail, Detail::Bench))
        .max_by_key(|t| t.params.n_ctx())
        .or_else(|| tests.iter().max_by_key(|t| t.params.n_ctx()));
    let Some(t) = widest else {
        return String::new();
    };
    match super::race::per_device(Path::new(path), &t.params, devices) {
        Some(shares) => {
            let v: Vec<String> = shares
                .iter()
                .map(|d| format!("{} {}", d.name, format_size(d.total())))
                .collect();
            let placed = crate::config::knobs::placement_of(&t.params);
            let placed = if placed.is_empty() {
                placed
            } else {
                format!(", {placed}")
            };
            let ctx = t.params.n_ctx();
            format!(
                "{} (weights and KV cache at {ctx} tokens{placed})",
                v.join(", ")
            )
        }
        None => {
            "not estimated (the file is not readable yet, or the placement is not estimated)".into()
        }
    }
}

/// `--dry-run` of `run`, `tune` and `bench`: the configuration at `file`, planned and shown.
/// A `[tune]` table's race is planned as auto rounds within its budget.
pub fn of_file(
    file: &Path,
    filters: &[String],
    shard: Option<crate::plan::Shard>,
    results: &Path,
) -> Result<String, RunnerError> {
    let mut config = crate::config::load(file, crate::util::system::physical_cores())?;
    if let Some(t) = &config.tune {
        config.settings.rounds = t.max_rounds;
        config.settings.auto_rounds = Some(crate::config::AutoRounds {
            max_rounds: t.max_rounds,
            max_seconds: t.max_seconds,
            budget_given: true,
        });
    }
    let llama = crate::engine::llama::system_info();
    let mut info = super::run_info(&config, Vec::new(), llama, crate::engine::llama::devices());
    let c = crate::record::machine::roofline_bandwidth(&mut info, false, false);
    show(&config, filters, shard, &info, &c, results)
}

/// A model of the plan: its file, its tests, and its memory per device (or why not).
fn model_lines(
    prep: &Prepared,
    mi: usize,
    mine: &[&PlannedTest],
    size: Option<&Size>,
    devices: &[DeviceInfo],
) -> String {
    let name = &prep.plan.models[mi].name;
    let file = match size {
        Some(s) if s.to_write.is_some() => format!("to write, at most {}", format_size(s.file)),
        Some(s) => format_size(s.file),
        None => "size unknown".into(),
    };
    let names: Vec<&str> = mine
        .iter()
        .map(|t| t.id.strip_prefix(&format!("{name}/")).unwrap_or(&t.id))
        .collect();
    let last = match (&prep.models[mi].error, size) {
        (Some(e), None) => format!("cannot be read: {e}"),
        _ => format!("memory: {}", memory(&prep.models[mi].path, mine, devices)),
    };
    format!(
        "\nmodel {name} ({file}): {} tests\n  {}\n  {last}\n",
        mine.len(),
        names.join(", ")
    )
}

fn estimate_line(e: &Earlier, results: &Path, est: &Estimate) -> String {
    let from = match (e.per_rep.is_empty(), e.flops.is_some()) {
        (false, _) => format!(
            "earlier results of this build on this machine ({}) where they hold the test",
            results.display()
        ),
        (true, true) => {
            "the prefill FLOP/s of earlier results of this build, and the memory bandwidth".into()
        }
        (true, false) => {
            "the memory bandwidth and an assumed FLOP/s: no earlier result of this build here"
                .into()
        }
    };
    let show =
        |s: f64| crate::output::progress::format_duration(std::time::Duration::from_secs_f64(s));
    let time = match (est.unknown, est.most > est.secs * 1.01) {
        (0, true) => format!("{} to {}", show(est.secs), show(est.most)),
        (0, false) => show(est.secs),
        (_, _) => format!("at least {}", show(est.secs)),
    };
    let rest = match est.unknown {
        0 => String::new(),
        n => format!(
            "; {n} tests are not estimated: they offload to a device whose bandwidth tpsbench \
             does not know, and no earlier result of this build here holds them (after one \
             run, a dry run estimates them from its result)"
        ),
    };
    format!("\nestimated wall time: {time} (from {from}){rest}; nothing was loaded\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AutoRounds;
    use crate::config::knobs::TestParams;

    #[test]
    fn an_offloaded_test_on_a_device_of_unknown_bandwidth_is_not_estimated_until_it_has_run() {
        let src =
            "[sweep]\nn_prompt = 0\nn_gen = 128\n[[model]]\nname = \"m\"\npath = \"m.gguf\"\n";
        let config = crate::config::parse(Path::new("models.toml"), src, 2).unwrap();
        let params = |n_gpu_layers| TestParams {
            n_gpu_layers,
            n_gen: 128,
            ..TestParams::default()
        };
        let mut t = PlannedTest::bench(0, "m/tg128".into(), params(99));
        t.identity = "tg128-on-m".into();
        let size = Size {
            file: 100 << 20,
            per_token: 100e6,
            n_params: 135e6,
            n_layer: 30,
            to_write: None,
        };
        let mut c = Ceilings {
            gpu_build: true,
            host: Some((20.0, "probe".into())),
            ..Ceilings::default()
        };
        let mut e = Earlier::default();
        let seconds = |t: &PlannedTest, c: &Ceilings, e: &Earlier| {
            test_seconds(t, Some(&size), c, e, &config)
        };
        // llvmpipe: a GPU build, every layer offloaded, no bandwidth for the device.
        assert_eq!(seconds(&t, &c, &e), None);
        // The same test kept on the host, or on a device in the table, has a rate.
        assert!(seconds(&PlannedTest::bench(0, "h".into(), params(0)), &c, &e).is_some());
        c.device = Some((3350.0, "table: H100".into()));
        assert!(seconds(&t, &c, &e).is_some());
        // After one run, its own result is the rate.
        c.device = None;
        e.per_rep.insert(t.identity.clone(), 2.0);
        let got = seconds(&t, &c, &e).unwrap();
        let reps = f64::from(config.settings.repetitions);
        assert!(got >= 2.0 * reps && got <= 2.0 * (reps + 1.0), "{got}");
    }

    #[test]
    fn auto_rounds_are_estimated_at_two_rounds_at_least_whatever_their_budget() {
        let auto = |max_seconds| AutoRounds {
            max_rounds: 20,
            max_seconds: Some(max_seconds),
            budget_given: true,
        };
        // A round of 1000 s against a budget of 180 s: the run still makes two.
        assert_eq!(span(100.0, 1000.0, 20, Some(auto(180.0))), (2100.0, 2100.0));
        // A budget of five rounds: two expected, six at most (the last begins inside it).
        assert_eq!(span(0.0, 10.0, 20, Some(auto(50.0))), (20.0, 60.0));
        assert_eq!(span(5.0, 10.0, 3, None), (35.0, 35.0));
    }
}
