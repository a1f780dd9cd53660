//! Quantization ladders (`tpsbench ladder`): from one base GGUF, build the variants that
//! models.toml lists with llama.cpp's own quantizer (cached by the base's SHA-256 and the
//! type), measure each variant's quality against the reference variant on one evaluation
//! text, run the ordinary speed sweep on the variants, and put size, speed and quality in
//! one table with the Pareto front marked.

pub mod cache;
pub mod command;
pub mod eval;
pub mod table;
pub mod types;

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use sha2::{Digest, Sha256};

pub use cache::synthetic_provenance;

use crate::config::{Config, ModelEntry};
use crate::config_ladder::{Ladder, LadderConfig};
use crate::engine::Engine;
use crate::engine::logits::EvalModel;
use crate::engine::quantize::{QuantizeParams, quantize};
use crate::export::format_size;
use crate::plan;
use crate::progress::Progress;
use crate::record::{Provenance, Quality, RunInfo, RunRecord};
use crate::results;
use crate::runner::{self, RunOptions};
use cache::BaseInfo;
use table::Row;
use types::QuantType;

/// Status lines on stderr: finished steps as lines, running counters redrawn in place on a
/// terminal only.
pub struct Reporter {
    quiet: bool,
    tty: bool,
    /// Off a terminal, a running counter is printed as a line at most every 30 s.
    last: std::cell::Cell<Option<Instant>>,
}

impl Reporter {
    pub fn new(quiet: bool) -> Self {
        Reporter {
            quiet,
            tty: std::io::stderr().is_terminal(),
            last: std::cell::Cell::new(None),
        }
    }

    pub fn line(&self, s: &str) {
        self.last.set(Some(Instant::now()));
        if !self.quiet {
            if self.tty {
                eprint!("\r\x1b[2K");
            }
            eprintln!("{s}");
        }
    }

    /// A warning is shown even with --quiet.
    pub fn warn(&self, s: &str) {
        eprintln!("warning: {s}");
    }

    pub fn status(&self, s: &str) {
        if self.quiet {
            return;
        }
        if self.tty {
            eprint!("\r\x1b[2K{s}");
            return;
        }
        let now = Instant::now();
        match self.last.get() {
            None => self.last.set(Some(now)),
            Some(t) if now.duration_since(t).as_secs() >= 30 => {
                self.last.set(Some(now));
                eprintln!("{s}");
            }
            Some(_) => {}
        }
    }
}

/// One variant to measure.
#[derive(Debug, Clone)]
pub struct Variant {
    pub ladder: usize,
    pub quant: QuantType,
    pub name: String,
    pub path: PathBuf,
    pub provenance: Provenance,
}

/// Quality-side figures of one variant.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    pub quality: Option<Quality>,
    pub bytes_per_token: Option<f64>,
    pub ref_tokens_per_token: Option<f64>,
}

pub struct LadderOptions<'a> {
    pub config: &'a LadderConfig,
    /// Keep variants with a test id containing any of these (all when empty).
    pub filters: Vec<String>,
    pub results_dir: Option<PathBuf>,
    pub command: Vec<String>,
    pub quiet: bool,
    /// Threads for quantization and quality passes.
    pub n_threads: u32,
}

pub struct LadderOutcome {
    pub record: RunRecord,
    pub path: Option<PathBuf>,
    pub failed: usize,
    pub rows: Vec<Row>,
}

/// Builds, measures and tabulates every ladder of the configuration.
pub fn run(
    engine: &dyn Engine,
    info: RunInfo,
    opts: &LadderOptions,
    progress: &mut dyn Progress,
) -> Result<LadderOutcome, String> {
    let rep = Reporter::new(opts.quiet);
    let mut variants: Vec<Variant> = Vec::new();
    let mut extras: HashMap<String, Extras> = HashMap::new();
    for (li, l) in opts.config.ladders.iter().enumerate() {
        let base = cache::inspect_base(&l.base)?;
        rep.line(&format!(
            "ladder {}: base {} ({}, sha256 {}), {} types, reference {}",
            l.name,
            l.base.display(),
            base.base_type,
            &base.sha256[..16],
            l.types.len(),
            l.reference.name
        ));
        if base.quantized {
            rep.warn(&format!(
                "ladder {}: the base is {}, already quantized: every variant is requantized \
                 (it carries the base's rounding error as well as its own) and is flagged \
                 `requantized`; KLD is measured against the {} variant of the same base",
                l.name, base.base_type, l.reference.name
            ));
        }
        let wanted: Vec<QuantType> = l
            .types
            .iter()
            .copied()
            .filter(|&t| selected(opts.config, l, t, &opts.filters))
            .collect();
        if wanted.is_empty() {
            continue;
        }
        let with_quality = !base.synthetic;
        let mut to_build = wanted.clone();
        if with_quality && !to_build.contains(&l.reference) {
            to_build.insert(0, l.reference);
        }
        let mut built: Vec<(QuantType, PathBuf)> = Vec::new();
        for (i, &t) in to_build.iter().enumerate() {
            let tag = format!(
                "[quantize {}/{}] {}",
                i + 1,
                to_build.len(),
                l.variant_name(t)
            );
            built.push((t, build_variant(&base, l, t, opts.n_threads, &tag, &rep)?));
        }
        for (t, path) in &built {
            if wanted.contains(t) {
                variants.push(Variant {
                    ladder: li,
                    quant: *t,
                    name: l.variant_name(*t),
                    path: path.clone(),
                    provenance: base.provenance(*t),
                });
            }
        }
        if with_quality {
            let threads = l.eval.n_threads.unwrap_or(opts.n_threads);
            extras.extend(measure_quality(l, &base, &built, &wanted, threads, &rep)?);
        } else {
            rep.line(&format!(
                "ladder {}: synthetic base (random weights): speed only, no quality figures",
                l.name
            ));
        }
    }
    if variants.is_empty() {
        return Err(format!(
            "no ladder variant matches the filter {:?}",
            opts.filters
        ));
    }
    let config = Config {
        file: opts.config.config.file.clone(),
        settings: opts.config.config.settings,
        serving: None,
        models: variants
            .iter()
            .map(|v| ModelEntry {
                name: v.name.clone(),
                path: v.path.clone(),
                axes: opts.config.ladders[v.ladder].axes.clone(),
                synth: None,
            })
            .collect(),
    };
    let run_opts = RunOptions {
        config,
        filters: opts.filters.clone(),
        shard: None,
        results_dir: opts.results_dir.clone(),
        command: opts.command.clone(),
        resume: None,
        only_model: None,
        stop: None,
        bandwidth: Default::default(),
        power: false,
    };
    let mut out = runner::run(engine, info, &run_opts, progress)?;
    enrich(&mut out.record, &variants, &extras);
    if let Some(p) = &out.path {
        results::write_atomic(p, &out.record)?;
    }
    let rows = table::rows(&out.record);
    Ok(LadderOutcome {
        record: out.record,
        path: out.path,
        failed: out.failed,
        rows,
    })
}

/// A variant is run when no filter is given or one of its test ids matches a filter.
fn selected(lc: &LadderConfig, l: &Ladder, t: QuantType, filters: &[String]) -> bool {
    let cfg = Config {
        file: lc.config.file.clone(),
        settings: lc.config.settings,
        serving: None,
        models: vec![ModelEntry {
            name: l.variant_name(t),
            path: PathBuf::new(),
            axes: l.axes.clone(),
            synth: None,
        }],
    };
    !plan::filter(plan::expand(&cfg, &[t.name.to_string()]), filters).is_empty()
}

/// Returns the cached variant or quantizes it (to a temporary name, renamed when complete).
fn build_variant(
    base: &BaseInfo,
    l: &Ladder,
    t: QuantType,
    n_threads: u32,
    tag: &str,
    rep: &Reporter,
) -> Result<PathBuf, String> {
    let path = cache::variant_path(&l.cache_dir, &base.sha256, t);
    if crate::gguf::reader::read_header(&path).is_ok() {
        rep.line(&format!("{tag}: cached {}", path.display()));
        return Ok(path);
    }
    std::fs::create_dir_all(&l.cache_dir)
        .map_err(|e| format!("cannot create {}: {e}", l.cache_dir.display()))?;
    cache::check_space(&path, cache::size_bound(t, base.n_elements))?;
    let tmp = path.with_extension(format!("gguf.tmp{}", std::process::id()));
    let params = QuantizeParams {
        ftype: t.ftype,
        allow_requantize: base.quantized,
        n_threads,
    };
    let start = Instant::now();
    let result = quantize(&base.path, &tmp, &params, &mut |done, total| {
        rep.status(&format!("{tag}: {done}/{total} tensors"));
    });
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("{} → {}: {e}", l.base.display(), t.name));
    }
    std::fs::rename(&tmp, &path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    rep.line(&format!(
        "{tag}: {} → {} ({}, {:.1} s)",
        base.base_type,
        path.display(),
        format_size(size),
        start.elapsed().as_secs_f64()
    ));
    Ok(path)
}

/// The evaluation text and where it came from.
struct EvalText {
    text: String,
    source: String,
    sha256: String,
}

fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// The configured text file, or text the reference writes (cached beside the variants).
fn eval_text(
    l: &Ladder,
    base: &BaseInfo,
    model: &EvalModel,
    n_threads: u32,
    rep: &Reporter,
) -> Result<EvalText, String> {
    if let Some(p) = &l.eval.text {
        let text = std::fs::read_to_string(p)
            .map_err(|e| format!("evaluation text {}: {e}", p.display()))?;
        return Ok(EvalText {
            sha256: sha256_hex(text.as_bytes()),
            source: format!("file:{}", p.display()),
            text,
        });
    }
    let e = &l.eval;
    // A margin over n_ctx × chunks: the text is tokenized again and may come out shorter.
    let n_new = (e.n_ctx * e.n_chunks + e.n_ctx / 4 + 16) as usize;
    let key =
        sha256_hex(format!("{}\n{}\n{}\n{}", l.reference.name, e.seed, n_new, e.prompt).as_bytes());
    let cached = l.cache_dir.join(format!(
        "{}-{}-text-{}.txt",
        &base.sha256[..16],
        l.reference.name,
        &key[..12]
    ));
    let source = format!(
        "generated:{}:seed={}:tokens={n_new}",
        l.variant_name(l.reference),
        e.seed
    );
    let text = match std::fs::read_to_string(&cached) {
        Ok(t) => {
            rep.line(&format!("[text] cached {}", cached.display()));
            t
        }
        Err(_) => {
            let start = Instant::now();
            let t =
                eval::generate_text(model, &e.prompt, n_new, e.seed, n_threads, &mut |d, n| {
                    rep.status(&format!(
                        "[text] generating with {}: {d}/{n} tokens",
                        l.variant_name(l.reference)
                    ));
                })?;
            write_text(&cached, &t)?;
            rep.line(&format!(
                "[text] {} generated {n_new} tokens (seed {}, {:.1} s) → {}",
                l.variant_name(l.reference),
                e.seed,
                start.elapsed().as_secs_f64(),
                cached.display()
            ));
            t
        }
    };
    Ok(EvalText {
        sha256: sha256_hex(text.as_bytes()),
        source,
        text,
    })
}

fn write_text(path: &Path, text: &str) -> Result<(), String> {
    let tmp = path.with_extension("txt.tmp");
    std::fs::write(&tmp, text)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Reference pass, then one pass per wanted variant; returns figures by variant name.
fn measure_quality(
    l: &Ladder,
    base: &BaseInfo,
    built: &[(QuantType, PathBuf)],
    wanted: &[QuantType],
    n_threads: u32,
    rep: &Reporter,
) -> Result<HashMap<String, Extras>, String> {
    let ref_name = l.variant_name(l.reference);
    let ref_path = &built
        .iter()
        .find(|(t, _)| *t == l.reference)
        .expect("reference built")
        .1;
    let ref_model = EvalModel::load(ref_path)?;
    let text = eval_text(l, base, &ref_model, n_threads, rep)?;
    let tokens = ref_model.tokenize(&text.text, true)?;
    let (n_ctx, n_chunks) = (l.eval.n_ctx as usize, l.eval.n_chunks as usize);
    let chunks = eval::chunks(&tokens, n_ctx, n_chunks, ref_model.bos());
    if chunks.is_empty() {
        return Err(format!(
            "ladder {}: the evaluation text has {} tokens, fewer than one chunk of {n_ctx}",
            l.name,
            tokens.len()
        ));
    }
    if chunks.len() < n_chunks {
        rep.warn(&format!(
            "ladder {}: the evaluation text holds {} chunks of {n_ctx} tokens, not {n_chunks}",
            l.name,
            chunks.len()
        ));
    }
    let plain_tokens = ref_model.tokenize(&text.text, false)?.len().max(1);
    let bytes_per_token = text.text.len() as f64 / plain_tokens as f64;
    let ref_tokens_per_token = match &l.tokenizer {
        Some(p) => Some(eval::count_reference_tokens(p, &text.text)? as f64 / plain_tokens as f64),
        None => None,
    };
    let fill = |mut q: Quality| {
        q.n_ctx = n_ctx as u32;
        q.n_chunks = chunks.len() as u32;
        q.text_source = text.source.clone();
        q.text_sha256 = text.sha256.clone();
        Extras {
            quality: Some(q),
            bytes_per_token: Some(bytes_per_token),
            ref_tokens_per_token,
        }
    };
    let total = wanted.len() + usize::from(!wanted.contains(&l.reference));
    let mut out = HashMap::new();
    let start = Instant::now();
    let tag = format!("[quality 1/{total}] {ref_name}");
    let (spill, self_acc) =
        eval::reference_pass(&ref_model, &chunks, n_threads, &l.cache_dir, &mut |c, n| {
            rep.status(&format!("{tag}: chunk {c}/{n}"));
        })?;
    drop(ref_model);
    let q = self_acc.finish(&ref_name);
    rep.line(&format!(
        "{tag} (reference): {} tokens scored in {} chunks of {n_ctx}, PPL {:.4}, {:.3} bytes/token ({:.1} s)",
        q.n_tokens,
        chunks.len(),
        q.ppl,
        bytes_per_token,
        start.elapsed().as_secs_f64()
    ));
    out.insert(ref_name.clone(), fill(q));
    let others = wanted.iter().filter(|&&t| t != l.reference);
    for (i, &t) in others.enumerate() {
        let name = l.variant_name(t);
        let tag = format!("[quality {}/{total}] {name}", i + 2);
        let start = Instant::now();
        let path = &built
            .iter()
            .find(|(b, _)| *b == t)
            .expect("variant built")
            .1;
        let model = EvalModel::load(path)?;
        let acc = eval::variant_pass(&model, &chunks, n_threads, &spill, &mut |c, n| {
            rep.status(&format!("{tag}: chunk {c}/{n}"));
        })
        .map_err(|e| format!("{name}: {e}"))?;
        let q = acc.finish(&ref_name);
        rep.line(&format!(
            "{tag}: KLD {:.5} ± {:.5}, ln(PPL ratio) {:.4} ± {:.4}, same top p {:.2} % ({:.1} s)",
            q.kld_mean,
            q.kld_mean_uncertainty,
            q.ln_ppl_ratio,
            q.ln_ppl_ratio_uncertainty,
            100.0 * q.same_top_p,
            start.elapsed().as_secs_f64()
        ));
        out.insert(name, fill(q));
    }
    Ok(out)
}

/// Adds provenance, quality and bits per weight to the variants' model records.
pub fn enrich(record: &mut RunRecord, variants: &[Variant], extras: &HashMap<String, Extras>) {
    for m in &mut record.models {
        let Some(v) = variants.iter().find(|v| v.name == m.name) else {
            continue;
        };
        m.provenance = Some(v.provenance.clone());
        if let (Some(size), Some(n)) = (m.model_size, m.model_n_params) {
            if n > 0 {
                m.bits_per_weight = Some(size as f64 * 8.0 / n as f64);
            }
        }
        if let Some(x) = extras.get(&m.name) {
            m.quality = x.quality.clone();
            m.bytes_per_token = x.bytes_per_token;
            m.ref_tokens_per_token = x.ref_tokens_per_token;
        }
    }
}
