//! Reading result files for a leaderboard: collect the paths, check each file against the
//! schema, drop excluded builds, and keep one measurement per (machine, test identity): the
//! newest. Optional extension fields (quality, serving, bytes per token) are read from the
//! raw JSON so that files without them, or with more, still load.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub use super::machine::{Machine, fingerprint, gpu_descriptions, hardware};
use super::plausible::{self, Flag};
use crate::record::tensor_mix::{self, TypeShare};
use crate::record::{RunInfo, RunRecord, Status, TestRecord};

/// Sort key of an RFC 3339 time: parsed instant first (so offsets compare right), the raw
/// text as a fallback for unparseable values, which sort first.
pub fn time_key(s: &str) -> (Option<i64>, String) {
    let t = chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .and_then(|d| d.timestamp_nanos_opt());
    (t, s.to_string())
}

/// Which of two measurements is newer: by test time, then by the run's start time.
pub fn newer(a_test: &str, a_run: &str, b_test: &str, b_run: &str) -> Ordering {
    time_key(a_test)
        .cmp(&time_key(b_test))
        .then_with(|| time_key(a_run).cmp(&time_key(b_run)))
}

/// Optional fields of a model from the agreed schema extensions.
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

/// Serving figures of a test (`tests[].serving`), when present.
#[derive(Debug, Clone, PartialEq)]
pub struct Serving {
    pub mode: String,
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

/// One result file as the page lists it under its machine.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// Index into `Board::machines`.
    pub machine: usize,
    pub file: PathBuf,
    pub started_at: String,
    /// 1, 5 and 15 minute load averages when the run started (absent in older files).
    pub load_average: Option<[f64; 3]>,
    pub command: String,
    pub n_tests: usize,
    /// The run's plausibility badges ("dirty", "busy", "fixture").
    pub badges: Vec<String>,
}

/// Everything the leaderboard shows, and what it left out.
#[derive(Debug, Clone, Default)]
pub struct Board {
    pub machines: Vec<Machine>,
    /// Measured tests, one per (machine, identity), sorted by machine, model, quant, test.
    pub entries: Vec<Entry>,
    /// Failed tests with no successful measurement of the same (machine, identity).
    pub failures: Vec<Entry>,
    pub files_read: usize,
    /// `file: reason`, one per invalid file.
    pub invalid: Vec<String>,
    /// `file: reason`, one per file dropped by --exclude-build / --exclude-tool-version.
    pub excluded: Vec<String>,
    /// Files dropped by --exclude-build, --exclude-tool-version or --strict.
    pub files_excluded: usize,
    /// `file: what`, one per flagged run or row that was kept (without --strict).
    pub warnings: Vec<String>,
    /// Older measurements replaced by a newer one of the same (machine, identity).
    pub superseded: usize,
    /// The files read (not excluded), by machine and start time.
    pub runs: Vec<RunSummary>,
    /// The KLD budget of the answers (`--kld-budget`); None: the default.
    pub kld_budget: Option<f64>,
}

impl Board {
    /// The KLD budget of the one-line answers, in nats.
    pub fn kld_budget(&self) -> f64 {
        self.kld_budget.unwrap_or(super::answer::DEFAULT_KLD_BUDGET)
    }
}

/// What to drop: results whose build or tool version contains any of these texts.
#[derive(Debug, Clone, Default)]
pub struct Exclude {
    pub build: Vec<String>,
    pub tool_version: Vec<String>,
    /// `--strict`: leave out flagged runs and rows (see `plausible`) instead of warning.
    pub strict: bool,
}

impl Exclude {
    /// Why the run is excluded, if it is.
    pub fn reason(&self, run: &RunInfo) -> Option<String> {
        let b = &run.llama_cpp;
        let build = [
            b.build_commit.as_deref(),
            Some(b.sys_crate_version.as_str()),
        ];
        for text in &self.build {
            if let Some(v) = build.iter().flatten().find(|v| v.contains(text.as_str())) {
                return Some(format!(
                    "llama.cpp build {v:?} matches --exclude-build {text:?}"
                ));
            }
        }
        let tool = [
            Some(run.tool.version.as_str()),
            run.tool.git_commit.as_deref(),
        ];
        for text in &self.tool_version {
            if let Some(v) = tool.iter().flatten().find(|v| v.contains(text.as_str())) {
                return Some(format!(
                    "tpsbench {v:?} matches --exclude-tool-version {text:?}"
                ));
            }
        }
        None
    }
}

/// The files to read: files as given, directories searched recursively for `*.json`
/// (sorted, so the result does not depend on directory order).
pub fn collect_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out).map_err(|e| format!("{}: {e}", p.display()))?;
        } else if p.exists() {
            out.push(p.clone());
        } else {
            return Err(format!("{}: no such file or directory", p.display()));
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out)?;
        } else if p.extension().is_some_and(|e| e == "json") {
            out.push(p);
        }
    }
    Ok(())
}

/// Reads one file: the checked record and the raw JSON (for the optional fields).
pub fn read_file(path: &Path) -> Result<(RunRecord, Value), String> {
    let record = crate::record::verify::read(path)?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let raw = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((record, raw))
}

/// Builds the board from already-read files (pure: no I/O).
pub fn board(files: Vec<(PathBuf, RunRecord, Value)>, exclude: &Exclude) -> Board {
    let mut b = Board {
        files_read: files.len(),
        ..Board::default()
    };
    // (machine key, identity) → entry; ok and failed kept apart.
    let mut ok: BTreeMap<(String, String), Entry> = BTreeMap::new();
    let mut failed: BTreeMap<(String, String), Entry> = BTreeMap::new();
    let mut machines: BTreeMap<String, (Machine, String, RunInfo)> = BTreeMap::new();
    let mut bandwidths: BTreeMap<String, (String, f64, Option<u64>)> = BTreeMap::new();
    let mut runs: Vec<(String, RunSummary)> = Vec::new();
    for (path, rec, raw) in files {
        if let Some(why) = exclude.reason(&rec.run) {
            b.excluded.push(format!("{}: {why}", path.display()));
            b.files_excluded += 1;
            continue;
        }
        let run_flags = plausible::run_flags(&rec.run);
        if !run_flags.is_empty() {
            let what = details(&run_flags);
            if exclude.strict {
                b.excluded
                    .push(format!("{}: left out by --strict: {what}", path.display()));
                b.files_excluded += 1;
                continue;
            }
            b.warnings.push(format!("{}: {what}", path.display()));
        }
        let m = Machine::of(&rec.run);
        runs.push((m.key.clone(), summary(&path, &rec)));
        // The newest run of a machine describes it.
        match machines.get(&m.key) {
            Some((_, started, _)) if newer(started, "", &rec.run.started_at, "").is_ge() => {}
            _ => {
                machines.insert(
                    m.key.clone(),
                    (m.clone(), rec.run.started_at.clone(), rec.run.clone()),
                );
            }
        }
        // The newest measured host bandwidth of the machine, in case its newest run has none.
        if let Some(g) = m.bandwidth_gbs {
            match bandwidths.get(&m.key) {
                Some((started, _, _)) if newer(started, "", &rec.run.started_at, "").is_ge() => {}
                _ => {
                    bandwidths.insert(m.key.clone(), (rec.run.started_at.clone(), g, m.llc_bytes));
                }
            }
        }
        for (i, t) in rec.tests.iter().enumerate() {
            // A quality test has no rate: its figures are the model's (models[].quality).
            if t.kind == crate::plan::TestKind::Quality && t.status == Status::Ok {
                continue;
            }
            let model = rec.models.iter().position(|x| x.name == t.model);
            let quant = model
                .and_then(|k| rec.models[k].quantization.clone())
                .or_else(|| t.id.split('/').nth(1).map(str::to_string))
                .unwrap_or_else(|| "?".into());
            let measured = t.status == Status::Ok && t.avg_ts.is_some();
            let row_flags = if measured {
                let raw_model = model.map_or(&Value::Null, |k| &raw["models"][k]);
                plausible::entry_flags(t, raw_model)
            } else {
                vec![]
            };
            if !row_flags.is_empty() {
                let what = details(&row_flags);
                if exclude.strict {
                    b.excluded.push(format!(
                        "{}: {}: left out by --strict: {what}",
                        path.display(),
                        t.id
                    ));
                    continue;
                }
                b.warnings
                    .push(format!("{}: {}: {what}", path.display(), t.id));
            }
            let mut entry = Entry {
                machine: 0,
                quant,
                test: t.clone(),
                run_started_at: rec.run.started_at.clone(),
                file: path.clone(),
                model: model
                    .map(|k| model_extras(&raw["models"][k]))
                    .unwrap_or_default(),
                serving: serving(&raw["tests"][i]["serving"]),
                badges: model
                    .map(|k| badges(&raw["models"][k]["provenance"]))
                    .unwrap_or_default(),
                flags: vec![],
                roofline_estimate: None,
                auto_max_rounds: rec.run.rounds_auto.as_ref().map(|a| a.max_rounds),
            };
            entry.flags = run_flags.iter().cloned().chain(row_flags).collect();
            let key = (m.key.clone(), t.identity.clone());
            let map = if measured { &mut ok } else { &mut failed };
            match map.get_mut(&key) {
                Some(old) if measured && old.test.test_time == entry.test.test_time => {
                    // The same measurement read twice (a copied file, a merged file beside
                    // its shards): the newer run's copy is kept, the other named.
                    let dropped = if is_newer(old, &entry) {
                        entry
                    } else {
                        std::mem::replace(old, entry)
                    };
                    let what = format!(
                        "duplicate of {} in {} (same machine, test and test time)",
                        t.id,
                        old.file.display()
                    );
                    let line = format!("{}: {}: ", dropped.file.display(), t.id);
                    if exclude.strict {
                        b.excluded
                            .push(format!("{line}left out by --strict: {what}"));
                    } else {
                        b.warnings.push(format!("{line}{what}"));
                        let also = Flag::Duplicate(format!("also in {}", dropped.file.display()));
                        old.flags.push(also);
                    }
                }
                Some(old) if is_newer(old, &entry) => b.superseded += 1,
                Some(_) => {
                    b.superseded += 1;
                    map.insert(key, entry);
                }
                None => {
                    map.insert(key, entry);
                }
            }
        }
    }
    b.machines = machines
        .into_values()
        .map(|(mut m, _, run)| match bandwidths.get(&m.key) {
            Some(&(_, g, llc)) if m.bandwidth_gbs.is_none() => {
                m.bandwidth_gbs = Some(g);
                m.llc_bytes = llc;
                m.with_facts(&run)
            }
            _ => m,
        })
        .collect();
    b.machines.sort_by_key(|m| m.label());
    let index = |key: &str| b.machines.iter().position(|m| m.key == key).unwrap_or(0);
    let mut entries: Vec<Entry> = Vec::new();
    for ((mk, _), mut e) in ok.iter().map(|(k, e)| (k.clone(), e.clone())) {
        e.machine = index(&mk);
        // A decode without a recorded roofline, on a machine whose host bandwidth is known:
        // the lower bound from the weights' size flags a rate the memory cannot deliver.
        if let Some(pct) = roofline_estimate(&e, &b.machines[e.machine]) {
            e.roofline_estimate = Some(pct);
            if pct >= 100.0 {
                let bw = b.machines[e.machine].bandwidth_gbs.unwrap_or(0.0);
                let what = format!(
                    "decode at {pct:.0}% or more of its bandwidth roofline (estimated from the \
                     weights' size and the machine's measured {bw:.1} GB/s; the file records \
                     none): implausible"
                );
                let line = format!("{}: {}: ", e.file.display(), e.test.id);
                if exclude.strict {
                    b.excluded
                        .push(format!("{line}left out by --strict: {what}"));
                    continue;
                }
                b.warnings.push(format!("{line}{what}"));
                e.flags.push(Flag::Roofline(what));
            }
        }
        entries.push(e);
    }
    let mut failures: Vec<Entry> = Vec::new();
    for ((mk, id), mut e) in failed {
        if !ok.contains_key(&(mk.clone(), id)) {
            e.machine = index(&mk);
            failures.push(e);
        }
    }
    entries.sort_by(order);
    failures.sort_by(order);
    b.runs = runs
        .into_iter()
        .map(|(mk, r)| RunSummary {
            machine: index(&mk),
            ..r
        })
        .collect();
    b.runs.sort_by(|x, y| {
        (x.machine, time_key(&x.started_at), &x.file).cmp(&(
            y.machine,
            time_key(&y.started_at),
            &y.file,
        ))
    });
    b.entries = entries;
    b.failures = failures;
    b
}

/// % of the bandwidth roofline a decode row at least reaches, estimated when its file
/// records no roofline: t/s × the weights' size / the machine's host read bandwidth (the KV
/// cache would only add bytes). Only for CPU machines (no GPU) and models larger than the
/// last-level cache, where the host's DRAM bandwidth is the ceiling.
pub fn roofline_estimate(e: &Entry, m: &Machine) -> Option<f64> {
    let has_roofline = e.test.resources.as_ref().and_then(|r| r.roofline.as_ref());
    if e.test.kind != crate::plan::TestKind::Tg || e.serving.is_some() || has_roofline.is_some() {
        return None;
    }
    if !m.gpus.is_empty() {
        return None;
    }
    let size = e.test.model_size?;
    if size <= m.llc_bytes? {
        return None;
    }
    let bytes_per_s = m.bandwidth_gbs? * 1e9;
    Some(e.test.avg_ts? * size as f64 / bytes_per_s * 100.0)
}

/// True when `old` is at least as new as `new` (ties keep the first seen).
fn is_newer(old: &Entry, new: &Entry) -> bool {
    newer(
        &old.test.test_time,
        &old.run_started_at,
        &new.test.test_time,
        &new.run_started_at,
    )
    .is_ge()
}

/// Board order: machine, model, quant, then as the plan runs (threads, depth, prefill before
/// decode, sizes).
fn order(a: &Entry, b: &Entry) -> Ordering {
    let key = |e: &Entry| {
        let p = &e.test.params;
        (
            e.machine,
            e.test.model.clone(),
            e.quant.clone(),
            p.n_threads,
            p.n_depth,
            p.n_prompt == 0,
            p.n_prompt,
            p.n_gen,
            e.test.id.clone(),
        )
    };
    key(a).cmp(&key(b))
}

fn model_extras(m: &Value) -> ModelExtras {
    ModelExtras {
        kld_mean: m["quality"]["kld_mean"].as_f64(),
        kld_uncertainty: m["quality"]["kld_mean_uncertainty"].as_f64(),
        quality_reference: m["quality"]["reference"].as_str().map(str::to_string),
        bytes_per_token: m["bytes_per_token"].as_f64(),
        bits_per_weight: m["bits_per_weight"].as_f64(),
        architecture: m["architecture"].as_str().map(str::to_string),
        tensor_types: serde_json::from_value(m["tensor_types"].clone()).unwrap_or_default(),
    }
}

/// The flags' details, joined into one line.
fn details(flags: &[Flag]) -> String {
    flags
        .iter()
        .map(Flag::detail)
        .collect::<Vec<_>>()
        .join("; ")
}

fn serving(s: &Value) -> Option<Serving> {
    Some(Serving {
        mode: s["mode"].as_str().unwrap_or("").to_string(),
        n_parallel: s["n_parallel"].as_u64().unwrap_or(1),
        per_request_ts: s["per_request_ts"].as_f64()?,
        aggregate_ts: s["aggregate_ts"].as_f64()?,
        shared_prompt: s["shared_prompt"].as_bool().unwrap_or(false),
        arrival_rate: s["arrival_rate"].as_f64(),
        ttft_p50_ms: s["ttft_ms"]["p50"].as_f64(),
        ttft_p90_ms: s["ttft_ms"]["p90"].as_f64(),
        transport: s["transport"]
            .as_str()
            .filter(|t| *t != "in_process")
            .map(str::to_string),
        server: s["server"]["build"]
            .as_str()
            .or(s["server"]["served_model"].as_str())
            .map(str::to_string),
        vs_in_process: ["ttft", "per_request_ts", "aggregate_ts"].map(|k| {
            let r = &s["vs_in_process"][k];
            Some((r["ratio"].as_f64()?, r["lo"].as_f64()?, r["hi"].as_f64()?))
        }),
        goodput: s["goodput"].as_object().map(|g| {
            let f = |k: &str| g.get(k).and_then(Value::as_f64);
            (f("max_rate"), f("goodput"), f("failed_rate"))
        }),
    })
}

/// The badges of a model from its provenance.
fn badges(p: &Value) -> Vec<String> {
    let mut v = Vec::new();
    if p["synthetic"].as_bool() == Some(true) {
        v.push("synthetic".to_string());
    }
    if p["requantized"].as_bool() == Some(true) {
        v.push("requantized".to_string());
    }
    v
}

fn summary(path: &Path, rec: &RunRecord) -> RunSummary {
    RunSummary {
        machine: 0,
        file: path.to_path_buf(),
        started_at: rec.run.started_at.clone(),
        load_average: rec.run.load_average,
        command: rec.run.command.join(" "),
        n_tests: rec.tests.len(),
        badges: {
            let mut v: Vec<String> = plausible::run_flags(&rec.run)
                .iter()
                .map(|f| f.badge().to_string())
                .collect();
            v.dedup();
            v
        },
    }
}

#[cfg(test)]
mod tests;
