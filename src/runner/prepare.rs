//! Before the first test: read what the plan depends on (model headers, sizes and hashes,
//! the ladders' bases, the prompt file), build the plan, and keep the part this process runs
//! (scope, shard, model, resume).

use std::path::Path;

use super::error::RunnerError;
use crate::config::Config;
use crate::gguf::reader;
use crate::ladder::cache::{BaseInfo, inspect_base, variant_path};
use crate::ladder::error::LadderError;
use crate::plan::build::{Facts, LadderFacts, ModelFacts};
use crate::plan::{self, ModelSource, Plan, PlannedTest};
use crate::record::{ModelRecord, RunRecord};
use crate::serving::dataset::{self, PromptFile};
use crate::util::system;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Scope {
    /// Everything the configuration defines.
    #[default]
    All,
    /// The ladders' variants only (`tpsbench ladder`).
    Ladders,
}

/// The plan and what was read to make it.
pub struct Prepared {
    pub plan: Plan,
    /// One record per model of the plan; a variant's is completed when it is built.
    pub models: Vec<ModelRecord>,
    /// Per ladder: its base, or why it cannot be read.
    pub bases: Vec<Result<BaseInfo, LadderError>>,
    pub prompts: Option<PromptFile>,
    /// The `[speculative]` dataset (ShareGPT or a prompt file), read once for every test.
    pub spec_prompts: Option<PromptFile>,
    /// The `[sweep] text` file of `tokens = "text"` tests, read once for every test.
    pub text: Option<PromptFile>,
}

/// Reads the files and builds the plan (filters applied). A prompt file that is missing or
/// malformed is bad input, reported before the sweep starts; `planning`: for a plan that runs
/// nothing (a dry run), where a dataset `scripts/setup` fetches that is not there yet is left
/// out ([`not_fetched_datasets`] names it).
pub fn prepare(
    config: &Config,
    filters: &[String],
    planning: bool,
) -> Result<Prepared, RunnerError> {
    let mut models: Vec<ModelRecord> = config
        .models
        .iter()
        .map(|m| match &m.path {
            Some(p) => inspect_model(&m.name, p),
            // A served-only entry: no file to read, and no in-process test.
            None => empty_model(&m.name, Path::new("")),
        })
        .collect();
    let bases = Vec::from_iter(config.ladders.iter().map(|l| inspect_base(&l.base)));
    let files = ladder_files(config, &bases)?;
    let prompts = match config.serving.as_ref().and_then(|s| s.dataset.as_ref()) {
        Some(p) if !config.models.is_empty() => dataset_of(p, planning)?,
        _ => None,
    };
    let noted = |pf: Option<PromptFile>| {
        if let Some((name, Some(n))) = pf.as_ref().map(|p| (&p.name, &p.note)) {
            eprintln!("warning: {name}: {n}");
        }
        pf
    };
    let spec_prompts = match &config.speculative {
        Some(s) if !config.models.is_empty() || !config.ladders.is_empty() => {
            noted(dataset_of(&s.dataset, planning)?)
        }
        _ => None,
    };
    let text = match &config.text {
        Some(p) => noted(dataset_of(p, planning)?),
        None => None,
    };
    let facts = Facts {
        models: (models.iter().zip(&config.models))
            .map(|(m, c)| ModelFacts {
                // A synthetic model not written yet (a dry run) is labelled by its type.
                label: (m.quantization.clone())
                    .or_else(|| c.synth.as_ref().map(|s| s.quant.clone()))
                    .unwrap_or_else(|| "unknown".into()),
                sha256: m.sha256.clone(),
            })
            .collect(),
        ladders: ladder_facts(&bases, &files),
        dataset_sha256: prompts.as_ref().map(|p| p.sha256.clone()),
        speculative_sha256: spec_prompts.as_ref().map(|p| p.sha256.clone()),
        text_sha256: text.as_ref().map(|p| p.sha256.clone()),
    };
    let plan = plan::build::build(config, &facts, filters);
    models.extend(variant_records(config, &plan, &bases, &files)?);
    Ok(Prepared {
        plan,
        models,
        bases,
        prompts,
        spec_prompts,
        text,
    })
}

/// What the plan needs of each ladder: its base's hash and kind, its files' labels and hashes.
fn ladder_facts(
    bases: &[Result<BaseInfo, LadderError>],
    files: &[Vec<(ModelRecord, String)>],
) -> Vec<LadderFacts> {
    (bases.iter().zip(files))
        .map(|(b, files)| match b {
            Ok(b) => LadderFacts {
                sha256: b.sha256.clone(),
                synthetic: b.synthetic,
                files: files
                    .iter()
                    .map(|(r, label)| ModelFacts {
                        label: label.clone(),
                        sha256: r.sha256.clone(),
                    })
                    .collect(),
            },
            Err(_) => LadderFacts::default(),
        })
        .collect()
}

/// The records of the ladders' variants in `plan`, before any is built: a built variant's
/// cache path and provenance, a file variant's header and hash; a recipe that cannot be
/// built is bad input, refused before any test.
fn variant_records(
    config: &Config,
    plan: &Plan,
    bases: &[Result<BaseInfo, LadderError>],
    files: &[Vec<(ModelRecord, String)>],
) -> Result<Vec<ModelRecord>, RunnerError> {
    let mut out = Vec::new();
    for pm in &plan.models[config.models.len()..] {
        if let ModelSource::LadderFile { ladder, file } = pm.source {
            let (mut rec, label) = files[ladder][file].clone();
            if let Ok(b) = &bases[ladder] {
                rec.provenance = Some(b.given_provenance(&label));
            }
            out.push(rec);
            continue;
        }
        let ModelSource::Variant {
            ladder,
            quant,
            recipe,
        } = pm.source
        else {
            continue;
        };
        let l = &config.ladders[ladder];
        let mut rec = empty_model(&pm.name, Path::new(""));
        match &bases[ladder] {
            Ok(b) => {
                let mut provenance = b.provenance(quant);
                let path = match recipe {
                    Some(ri) => {
                        let r = crate::ladder::recipe::resolve(l, &l.recipes[ri], b)?;
                        provenance.recipe = Some(r.record);
                        r.path
                    }
                    None => variant_path(&l.cache_dir, &b.sha256, quant),
                };
                rec.path = path.display().to_string();
                rec.model_filename = crate::config::values::file_name(&path);
                rec.quantization = Some(quant.name.to_string());
                rec.provenance = Some(provenance);
            }
            Err(e) => rec.error = Some(format!("ladder {}: {e}", l.name)),
        }
        out.push(rec);
    }
    Ok(out)
}

/// Each ladder's file variants, read, with the labels of their tensor mixes; bad input
/// (a file of another model than the base, a reference store that cannot be held) refused.
fn ladder_files(
    config: &Config,
    bases: &[Result<BaseInfo, LadderError>],
) -> Result<Vec<Vec<(ModelRecord, String)>>, RunnerError> {
    let mut out = Vec::new();
    for (l, b) in config.ladders.iter().zip(bases) {
        if let Ok(b) = b {
            crate::ladder::quality::check(l, b)?;
        }
        let mut read = Vec::new();
        let base = b.as_ref().ok().map(|b| &b.header);
        for f in &l.files {
            if let Some(why) = base.and_then(|h| crate::ladder::cache::file_difference(&f.path, h))
            {
                return Err(LadderError::Input {
                    path: f.path.clone(),
                    why: format!("not the model of ladder {}: {why}", l.name),
                }
                .into());
            }
            let rec = inspect_model(&f.name, &f.path);
            let ft = rec.quantization.as_deref().unwrap_or("unknown");
            let label = crate::record::tensor_mix::label(ft, &rec.tensor_types);
            read.push((rec, label));
        }
        out.push(read);
    }
    Ok(out)
}

/// The files `scripts/setup` fetches, by name, and the command that fetches each.
const FETCHED: &[(&str, &str)] = &[
    ("SmolLM2-135M-Instruct.Q4_1.gguf", "scripts/setup --model"),
    ("gemma-3-270m-Q4_K_M.gguf", "scripts/setup --model gemma3"),
    (
        "ShareGPT_V3_unfiltered_cleaned_split.json",
        "scripts/setup --dataset sharegpt",
    ),
];

/// A dataset, read; None when `planning` and `scripts/setup` has not fetched it yet.
fn dataset_of(p: &Path, planning: bool) -> Result<Option<PromptFile>, RunnerError> {
    match not_fetched(p) {
        Err(_) if planning => Ok(None),
        Err(e) => Err(e),
        Ok(()) => Ok(Some(dataset::load(p)?)),
    }
}

/// The datasets of `config` that `scripts/setup` fetches and has not fetched yet.
pub fn not_fetched_datasets(config: &Config) -> Vec<RunnerError> {
    let serving = config.serving.as_ref().and_then(|s| s.dataset.as_ref());
    let spec = config.speculative.as_ref().map(|s| &s.dataset);
    [serving, spec, config.text.as_ref()]
        .into_iter()
        .flatten()
        .filter_map(|p| not_fetched(p).err())
        .collect()
}

/// Err when `p` is missing and is a file `scripts/setup` fetches: the line names the command.
fn not_fetched(p: &Path) -> Result<(), RunnerError> {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    match FETCHED.iter().find(|(f, _)| *f == name) {
        Some((_, command)) if !p.exists() => Err(RunnerError::NotFetched {
            path: p.to_path_buf(),
            command,
        }),
        _ => Ok(()),
    }
}

/// The part of `plan` in `scope` and shard `shard` (before resuming and `--only-model`).
pub fn part(plan: &Plan, scope: Scope, shard: Option<plan::Shard>) -> Vec<PlannedTest> {
    let n_files = plan
        .models
        .iter()
        .filter(|m| matches!(m.source, ModelSource::File(_)));
    let n_files = n_files.count();
    let mut tests: Vec<PlannedTest> = plan
        .tests
        .iter()
        .filter(|t| scope == Scope::All || t.model >= n_files)
        .cloned()
        .collect();
    if let Some(s) = shard {
        tests = plan::shard(&tests, s.index, s.count);
    }
    tests
}

/// The tests (of `only_model`, when set) that `done` does not hold, matched by identity and
/// model name, so a changed configuration is never mistaken for done.
pub(crate) fn remaining(
    plan: &Plan,
    tests: &[PlannedTest],
    only_model: Option<&str>,
    done: &RunRecord,
) -> Vec<PlannedTest> {
    tests
        .iter()
        .filter(|t| only_model.is_none_or(|m| plan.models[t.model].name == m))
        .filter(|t| !is_done(plan, t, done))
        .cloned()
        .collect()
}

pub(crate) fn is_done(plan: &Plan, t: &PlannedTest, done: &RunRecord) -> bool {
    let name = &plan.models[t.model].name;
    done.tests
        .iter()
        .any(|d| d.identity == t.identity && &d.model == name)
}

/// Bad input found before hours of sweep: a model file (or ladder base) with tests to run
/// that is missing or not a valid GGUF (one llama.cpp refuses fails its tests).
pub fn check_models(models: &[ModelRecord], tests: &[PlannedTest]) -> Result<(), RunnerError> {
    let bad = super::unique(models.iter().enumerate().filter_map(|(i, m)| {
        let e = m
            .error
            .clone()
            .filter(|_| tests.iter().any(|t| t.model == i));
        e.map(|e| (m.name.clone(), e))
    }));
    if !bad.is_empty() {
        return Err(RunnerError::BadModels { models: bad });
    }
    Ok(())
}

/// Inspects a model file without llama.cpp: header check, size, hash, quantization.
pub fn inspect_model(name: &str, path: &Path) -> ModelRecord {
    let mut rec = empty_model(name, path);
    match reader::read_header(path) {
        Err(_) if not_fetched(path).is_err() => {
            rec.error = not_fetched(path).err().map(|e| e.to_string());
        }
        Err(e) => rec.error = Some(format!("{}: {e}", path.display())),
        Ok(h) => {
            rec.file_size = h.file_size;
            rec.architecture = h.architecture().map(str::to_string);
            rec.quantization = h.file_type().map(str::to_string);
            rec.tensor_types = crate::record::tensor_mix::of(&h);
            rec.identity = Some(crate::ladder::cache::model_identity(&h));
            match system::sha256_file(path) {
                Ok(s) => rec.sha256 = s,
                Err(e) => rec.error = Some(format!("{}: {e}", path.display())),
            }
            rec.provenance = crate::ladder::cache::synthetic_provenance(&h, &rec);
        }
    }
    rec
}

/// Builds model `mi` when it is a ladder variant not built yet, then reads it as any model
/// file; a failure is the model's error, recorded with its tests.
pub fn ensure_variant(
    config: &Config,
    prep: &Prepared,
    models: &mut [ModelRecord],
    mi: usize,
    rep: &crate::ladder::Reporter,
) {
    let ModelSource::Variant {
        ladder,
        quant,
        recipe,
    } = prep.plan.models[mi].source
    else {
        return;
    };
    let rec = &mut models[mi];
    if rec.error.is_some() || !rec.sha256.is_empty() {
        return;
    }
    let l = &config.ladders[ladder];
    let Ok(base) = &prep.bases[ladder] else {
        return;
    };
    let threads = l.eval.n_threads.unwrap_or_else(system::physical_cores);
    let tag = format!("[quantize] {}", rec.name);
    let built = match recipe {
        Some(ri) => crate::ladder::recipe::build(l, &l.recipes[ri], base, threads, &tag, rep).map(
            |(_, record)| {
                // The hash of an imatrix computed here is known once it is written.
                if let Some(p) = rec.provenance.as_mut() {
                    p.recipe = Some(record);
                }
            },
        ),
        None => crate::ladder::build_variant(base, l, quant, None, threads, &tag, rep).map(|_| ()),
    };
    match built {
        // The record completed from the file, keeping the base's provenance.
        Ok(()) => {
            let provenance = rec.provenance.take();
            *rec = inspect_model(&rec.name, Path::new(&rec.path));
            rec.provenance = provenance;
        }
        Err(e) => rec.error = Some(e.to_string()),
    }
}

fn empty_model(name: &str, path: &Path) -> ModelRecord {
    ModelRecord {
        name: name.to_string(),
        path: path.display().to_string(),
        model_filename: crate::config::values::file_name(path),
        ..Default::default()
    }
}

/// One warning per ladder with tests in `tests` whose base is already quantized: its
/// variants carry the base's rounding error as well as their own.
pub(crate) fn requantized_warnings(
    config: &Config,
    prep: &Prepared,
    tests: &[PlannedTest],
) -> Vec<String> {
    let mut out = Vec::new();
    for (li, l) in config.ladders.iter().enumerate() {
        let Ok(base) = &prep.bases[li] else { continue };
        let used = tests.iter().any(|t| {
            matches!(prep.plan.models[t.model].source, ModelSource::Variant { ladder, .. } if ladder == li)
        });
        if base.quantized && used {
            out.push(format!(
                "ladder {}: the base is {}, already quantized: every variant is requantized \
                 (it carries the base's rounding error as well as its own) and is flagged \
                 `requantized`; KLD is measured against {} of the same base",
                l.name,
                base.base_type,
                l.reference_name()
            ));
        }
    }
    out
}

/// A warning when the machine was busy (`machine::busy_threshold`) as the run started: the
/// figures then measure the other load too, and the run records its load average so that
/// readers can tell.
pub(crate) fn busy_warning(load: Option<[f64; 3]>, logical_cpus: u32) -> Option<String> {
    let one = load?[0];
    let limit = crate::machine::busy_threshold(logical_cpus);
    (one > limit).then(|| {
        format!(
            "the machine is busy (1-minute load average {one:.2}, above {limit:.1} for \
             {logical_cpus} CPUs): the figures will measure the other load too; compare \
             them only with runs made alike"
        )
    })
}

/// One warning per thread count in `tests` above the machine's physical cores: such a run
/// measures contention (llama.cpp's threads wait for the slowest at every step), not the model.
pub(crate) fn thread_warnings(tests: &[PlannedTest], physical_cores: u32) -> Vec<String> {
    crate::util::sorted_unique(tests.iter().map(|t| t.params.n_threads))
        .into_iter()
        .filter_map(|n| crate::machine::oversubscription_warning(n, physical_cores))
        .map(|w| w.trim_start_matches("warning: ").to_string())
        .collect()
}
