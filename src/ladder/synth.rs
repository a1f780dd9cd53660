//! `tpsbench synth`: writes a synthetic GGUF (random weights, valid vocabulary) for the tiny
//! test model or an architecture preset, at a chosen quantization type.
//!
//! Types that are one ggml type throughout (F32, F16, BF16, Q8_0, Q6_K, Q4_0, Q4_1, Q5_0,
//! Q5_1) are written block by block directly, with llama.cpp's choice for the output
//! matrix (Q6_K for the legacy 4- and 5-bit types). Mixes (Q4_K_M, Q3_K_M, IQ4_NL, ...)
//! are written at Q8_0 to a temporary file and handed to llama.cpp's quantizer, so their
//! per-tensor choices are exactly llama.cpp's. Free disk space is checked first.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::config::quant_types::QuantType;
use crate::engine::quantize::{Overrides, QuantizeParams, quantize};
use crate::gguf::blocks::DIRECT_TYPES;
use crate::gguf::presets;
use crate::gguf::writer::{Document, write_gguf};
use crate::gguf::{DEFAULT_ALIGNMENT, tiny};
use crate::ladder::Reporter;
use crate::ladder::cache::{check_space, create_dir, via_tmp};
use crate::ladder::error::{LadderError, io};
use crate::util::units::format_size;

#[derive(clap::Args, Debug)]
pub struct SynthOptions {
    /// Where to write the model.
    #[arg(long, short)]
    pub output: PathBuf,
    /// `tiny` (a 2-layer llama of about 1.4 M parameters, for tests) or the exact
    /// shapes of llama-2-7b, llama-3-8b, mistral-7b, qwen2.5-7b, llama-3-70b, and the
    /// mixtures of experts qwen3-30b-a3b, mixtral-8x7b and tiny-moe (for tests), and
    /// glm-4.5-air and tiny-mtp (for tests) with a multi-token-prediction layer (draft-mtp),
    /// and tiny-eagle3 (for tests): an Eagle3 draft for tiny-moe (draft-eagle3).
    #[arg(long, default_value = "tiny")]
    pub preset: String,
    /// Quantization type, as llama-quantize names it (default: F32 for tiny, tiny-moe,
    /// tiny-mtp and tiny-eagle3, Q8_0 for presets).
    #[arg(long = "type", short = 't')]
    pub quant: Option<String>,
    /// Keep only this many layers (presets).
    #[arg(long)]
    pub layers: Option<u64>,
    /// Divide heads, widths and vocabulary by this factor (presets; for tests).
    #[arg(long, default_value_t = 1)]
    pub shrink: u64,
    /// Seed of the random weights.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(skip = crate::util::system::physical_cores())]
    pub n_threads: u32,
}

/// The ggml types a single-type file type (named as its ggml type) is written with:
/// (weights, output matrix). `None` for mixes, which llama.cpp's quantizer must produce.
pub(crate) fn direct_types(t: QuantType, n_embd: u64) -> Option<(u32, u32)> {
    let mut types = crate::gguf::GGML_TYPES.iter();
    let &(w, ..) = types.find(|g| g.1 == t.name && DIRECT_TYPES.contains(&g.0))?;
    // llama.cpp (llama_tensor_get_type): the output matrix of the legacy 4- and 5-bit types
    // becomes Q6_K, or Q8_0 when its rows are not a multiple of 256.
    let out = if n_embd % 256 == 0 { 14 } else { 8 };
    Some((w, if matches!(w, 2 | 3 | 6 | 7) { out } else { w }))
}

pub(crate) fn document_size(doc: &Document) -> u64 {
    let data: u64 = doc
        .tensors
        .iter()
        .map(|t| t.n_bytes().div_ceil(DEFAULT_ALIGNMENT) * DEFAULT_ALIGNMENT)
        .sum();
    // The header (vocabulary included) is small next to the data: a generous bound.
    data + (32 << 20)
}

/// Counts bytes on their way to the file and reports every 256 MiB.
struct Counting<'a, W: Write> {
    inner: W,
    written: u64,
    total: u64,
    rep: &'a Reporter,
}

impl<W: Write> Write for Counting<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        let before = self.written >> 28;
        self.written += n as u64;
        if self.written >> 28 != before {
            self.rep.status(&format!(
                "writing: {} of about {}",
                format_size(self.written),
                format_size(self.total)
            ));
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Writes `doc` to a temporary name beside `path`, then renames it (if the disk holds it).
pub(crate) fn write_document(
    path: &Path,
    doc: &Document,
    rep: &Reporter,
) -> Result<(), LadderError> {
    check_space(path, document_size(doc))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_dir(dir)?;
    }
    via_tmp(path, &path.with_extension("gguf.tmp"), |tmp| {
        let write = || -> std::io::Result<()> {
            let mut w = Counting {
                inner: BufWriter::with_capacity(1 << 20, std::fs::File::create(tmp)?),
                written: 0,
                total: document_size(doc),
                rep,
            };
            write_gguf(&mut w, doc)?;
            w.flush()
        };
        write().map_err(io("write", path))
    })
}

/// Writes the synthetic model; returns a one-line summary.
pub fn synth(o: &SynthOptions, rep: &Reporter) -> Result<String, LadderError> {
    let tiny_preset = o.preset == "tiny";
    if let Some(d) = presets::eagle3::draft(&o.preset) {
        return synth_draft(o, &d, rep);
    }
    let shape = if tiny_preset {
        None
    } else {
        let s = presets::shape(&o.preset).ok_or_else(|| LadderError::UnknownPreset {
            preset: o.preset.clone(),
        })?;
        Some(s.shrunk(o.shrink, o.layers))
    };
    // The test presets default to F32: written directly, and no CPU extra buffer type
    // (AMX, repack) on the path (the tiny MoE at Q4_0/Q8_0 with repack on dies of SIGILL
    // in llama.cpp's AMX code on this project's VM; see CHANGELOG).
    let test_preset = tiny_preset || presets::is_test_size(&o.preset);
    let default = if test_preset { "F32" } else { "Q8_0" };
    let t = QuantType::parse(o.quant.as_deref().unwrap_or(default))
        .map_err(|e| LadderError::QuantType(e.0))?;
    let n_embd = shape.as_ref().map_or(tiny::N_EMBD, |s| s.n_embd);
    // The document written directly: the final file, or the Q8_0 (tiny: F32) input of
    // llama.cpp's quantizer.
    let direct = direct_types(t, n_embd).filter(|_| !tiny_preset || t.name == "F32");
    let doc = match (&shape, direct) {
        (None, _) => tiny::document(o.seed),
        (Some(s), Some((w, out))) => s.document(w, out, t.ftype, o.seed),
        (Some(s), None) => s.document(8, 8, 7, o.seed),
    };
    if direct.is_some() {
        write_document(&o.output, &doc, rep)?;
    } else {
        let params = doc.tensors.iter().map(|x| x.n_elements()).sum::<u64>();
        let bound = crate::ladder::cache::size_bound(t, params);
        check_space(&o.output, document_size(&doc) + bound)?;
        let tmp = o.output.with_extension("input.gguf.tmp");
        write_document(&tmp, &doc, rep)?;
        let qp = QuantizeParams {
            ftype: t.ftype,
            allow_requantize: !tiny_preset,
            n_threads: o.n_threads,
        };
        let result = quantize(&tmp, &o.output, &qp, &Overrides::default(), &mut |d, n| {
            rep.status(&format!("quantizing to {}: {d}/{n} tensors", t.name));
        });
        let _ = std::fs::remove_file(&tmp);
        result?;
    }
    let what = match &shape {
        None => "tiny".to_string(),
        Some(s) => format!(
            "{}{}, {} layers, n_embd {}, n_ff {}, heads {}/{}, vocab {}",
            s.preset,
            if o.shrink > 1 {
                format!(" shrunk ×1/{}", o.shrink)
            } else {
                String::new()
            },
            s.n_layer,
            s.n_embd,
            s.n_ff,
            s.n_head,
            s.n_head_kv,
            s.n_vocab
        ),
    };
    Ok(wrote(o, &what, t, &doc))
}

fn wrote(o: &SynthOptions, what: &str, t: QuantType, doc: &Document) -> String {
    let params = doc.tensors.iter().map(|x| x.n_elements()).sum::<u64>();
    let size = std::fs::metadata(&o.output).map(|m| m.len()).unwrap_or(0);
    let (out, size) = (o.output.display(), format_size(size));
    let (name, n, m) = (t.name, doc.tensors.len(), params as f64 / 1e6);
    format!("wrote {out} ({what}; {name}, {n} tensors, {m:.2} M parameters, {size})")
}

/// Writes an Eagle3 draft preset. Its shapes are its target's, so `--shrink` and
/// `--layers` do not apply; it is written directly (no quantizer pass: llama.cpp's quantizer
/// would need the draft's target to load it), so only the single-type file types whose
/// blocks divide its rows.
fn synth_draft(
    o: &SynthOptions,
    d: &presets::eagle3::Eagle3,
    rep: &Reporter,
) -> Result<String, LadderError> {
    let refuse = |why: String| LadderError::Variant {
        name: d.preset.to_string(),
        why,
    };
    if o.shrink > 1 || o.layers.is_some() {
        return Err(refuse(format!(
            "a draft made for {}: --shrink and --layers do not apply",
            d.target.preset
        )));
    }
    let t = QuantType::parse(o.quant.as_deref().unwrap_or("F32"))
        .map_err(|e| LadderError::QuantType(e.0))?;
    let row = d.min_row();
    let fits = |ty: u32| crate::gguf::type_layout(ty).is_some_and(|(_, block, _)| row % block == 0);
    let (w, out) = direct_types(t, d.n_embd)
        .filter(|&(w, out)| fits(w) && fits(out))
        .ok_or_else(|| {
            refuse(format!(
                "{} is not written directly at rows of {row}: use F32, F16, BF16, Q8_0, Q4_0, \
                 Q4_1, Q5_0 or Q5_1",
                t.name
            ))
        })?;
    let doc = d.document(w, out, t.ftype, o.seed);
    write_document(&o.output, &doc, rep)?;
    let what = format!(
        "{}: an Eagle3 draft for {}, reading its layers {:?}, n_embd {}, n_ff {}, heads {}/{}, \
         head vocab {}",
        d.preset,
        d.target.preset,
        d.target_layers,
        d.n_embd,
        d.n_ff,
        d.n_head,
        d.n_head_kv,
        d.n_draft_vocab,
    );
    Ok(wrote(o, &what, t, &doc))
}

use crate::config::synth_spec::SynthSpec;

/// Writes the models of `config` that are missing, have a `synth` spec and hold a test that
/// `filters` keep (a `--filter` for another model does not wait for an 8B synthesis). Each is
/// written under a temporary name and renamed when complete: an interrupted synthesis never
/// leaves a partial model behind. Returns one line per model written.
pub fn ensure_models(
    config: &crate::config::Config,
    filters: &[String],
    n_threads: u32,
    rep: &Reporter,
) -> Result<Vec<String>, LadderError> {
    let labels: Vec<String> = config
        .models
        .iter()
        .map(|m| match (&m.synth, &m.path) {
            (_, None) => "unknown".to_string(),
            (Some(s), Some(p)) if !p.exists() => s.quant.clone(),
            (_, Some(p)) => crate::gguf::reader::read_header(p)
                .ok()
                .and_then(|h| h.file_type())
                .unwrap_or("unknown")
                .to_string(),
        })
        .collect();
    let tests = crate::plan::filter(crate::plan::expand(config, &labels), filters);
    let served = crate::plan::serving::expand(config, &labels, filters);
    let mut wanted: Vec<usize> = tests.iter().map(|t| t.model).collect();
    wanted.extend(served.iter().map(|t| t.model));
    let mut lines = Vec::new();
    for (i, m) in config.models.iter().enumerate() {
        let (Some(spec), Some(path)) = (&m.synth, &m.path) else {
            continue;
        };
        if path.exists() || !wanted.contains(&i) {
            continue;
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_dir(dir).map_err(|e| e.for_model(&m.name))?;
        }
        lines.push(synth_model(&m.name, spec, path, n_threads, rep)?);
    }
    Ok(lines)
}

/// Synthesizes model `name`'s missing file at `path` from `spec` (under a temporary name,
/// renamed when complete); returns the line `synth` wrote, naming `path`.
fn synth_model(
    name: &str,
    spec: &SynthSpec,
    path: &Path,
    n_threads: u32,
    rep: &Reporter,
) -> Result<String, LadderError> {
    let tmp = path.with_extension(format!("synth-{}.tmp", std::process::id()));
    let (shown, preset, quant) = (path.display(), &spec.preset, &spec.quant);
    rep.line(&format!(
        "model {name:?}: {shown} is missing; synthesizing {preset} {quant}"
    ));
    let opts = SynthOptions {
        output: tmp.clone(),
        preset: spec.preset.clone(),
        quant: Some(spec.quant.clone()),
        layers: None,
        shrink: 1,
        seed: 1,
        n_threads,
    };
    let line = via_tmp(path, &tmp, |_| synth(&opts, rep)).map_err(|e| LadderError::Synthesis {
        model: name.to_string(),
        cause: Box::new(e),
    })?;
    Ok(line.replace(&tmp.display().to_string(), &path.display().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_type_files_follow_llama_cpp_for_the_output_matrix() {
        let q = |n| QuantType::parse(n).unwrap();
        assert_eq!(direct_types(q("Q4_0"), 4096), Some((2, 14)));
        assert_eq!(direct_types(q("Q4_0"), 576), Some((2, 8)));
        assert_eq!(direct_types(q("Q8_0"), 4096), Some((8, 8)));
        assert_eq!(direct_types(q("F16"), 4096), Some((1, 1)));
        assert_eq!(direct_types(q("Q4_K_M"), 4096), None);
        assert_eq!(direct_types(q("IQ4_NL"), 4096), None);
    }

    #[test]
    fn synth_specs_name_a_preset_and_an_optional_type() {
        let s = |t| SynthSpec::parse(t).map_err(|e| e.0);
        assert_eq!(
            s("llama-3-8b:q4_k_m").unwrap(),
            SynthSpec {
                preset: "llama-3-8b".into(),
                quant: "Q4_K_M".into()
            }
        );
        assert_eq!(s(" tiny ").unwrap().quant, "F32");
        assert_eq!(s("mistral-7b").unwrap().quant, "Q8_0");
        assert!(
            s("llama-9b:Q8_0")
                .unwrap_err()
                .contains("unknown synth preset")
        );
        assert!(s("llama-3-8b:Q9_9").unwrap_err().contains("Q9_9"));
    }

    #[test]
    fn a_full_preset_document_is_sized_without_writing_it() {
        let s = presets::shape("llama-3-70b").unwrap();
        let doc = s.document(2, 14, 2, 1);
        let gib = document_size(&doc) as f64 / f64::from(1u32 << 30);
        // 70.55 B weights at Q4_0 (4.5 bits) with a Q6_K output: about 37 GiB
        assert!((36.0..40.0).contains(&gib), "{gib}");
    }
}
