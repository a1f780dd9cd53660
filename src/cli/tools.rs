//! Small file commands: `synth`, `merge`, `export`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};

use super::outcome::Outcome;
use crate::report::export::Format;

#[derive(clap::Args, Debug)]
pub struct SynthArgs {
    /// Where to write the model.
    #[arg(long, short)]
    output: PathBuf,
    /// `tiny` (a 2-layer llama of about 1.4 M parameters, for tests) or the exact
    /// shapes of llama-2-7b, llama-3-8b, mistral-7b, qwen2.5-7b, llama-3-70b, and the
    /// mixtures of experts qwen3-30b-a3b, mixtral-8x7b and tiny-moe (for tests), and
    /// glm-4.5-air and tiny-mtp (for tests) with a multi-token-prediction layer (draft-mtp),
    /// and tiny-eagle3 (for tests): an Eagle3 draft for tiny-moe (draft-eagle3).
    #[arg(long, default_value = "tiny")]
    preset: String,
    /// Quantization type, as llama-quantize names it (default: F32 for tiny, tiny-moe,
    /// tiny-mtp and tiny-eagle3, Q8_0 for presets).
    #[arg(long = "type", short = 't')]
    quant: Option<String>,
    /// Keep only this many layers (presets).
    #[arg(long)]
    layers: Option<u64>,
    /// Divide heads, widths and vocabulary by this factor (presets; for tests).
    #[arg(long, default_value_t = 1)]
    shrink: u64,
    /// Seed of the random weights.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

impl From<SynthArgs> for crate::ladder::synth::SynthOptions {
    fn from(a: SynthArgs) -> Self {
        crate::ladder::synth::SynthOptions {
            output: a.output,
            preset: a.preset,
            quant: a.quant,
            layers: a.layers,
            shrink: a.shrink,
            seed: a.seed,
            n_threads: crate::util::system::physical_cores(),
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// The merged result file to write.
    output: PathBuf,
    /// The result files to join.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Merge even when shards are missing or unfinished (listed in the merged file under
    /// `incomplete_shards`) instead of refusing.
    #[arg(long)]
    allow_partial: bool,
}

#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// The result file.
    file: PathBuf,
    /// The output format.
    #[arg(long, short, value_enum)]
    format: Format,
}

pub(super) fn synth(a: SynthArgs) -> Result<Outcome> {
    crate::engine::llama::init(false).map_err(anyhow::Error::msg)?;
    let rep = crate::ladder::Reporter::new(false);
    let line = crate::ladder::synth::synth(&a.into(), &rep).map_err(anyhow::Error::msg)?;
    rep.line(&line);
    Ok(Outcome::Done)
}

pub(super) fn merge(a: &MergeArgs) -> Result<Outcome> {
    let command = std::env::args().collect();
    match crate::report::merge::merge_files(&a.output, &a.inputs, command, a.allow_partial) {
        Ok(warnings) => {
            for w in warnings {
                eprintln!("{w}");
            }
            eprintln!(
                "merged {} file(s) into {}",
                a.inputs.len(),
                a.output.display()
            );
            Ok(Outcome::Done)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(Outcome::Refused)
        }
    }
}

pub(super) fn export(a: &ExportArgs) -> Result<Outcome> {
    match crate::record::verify::read(&a.file) {
        Ok(run) => {
            let export = a.format;
            if let Some(note) = export.skipped(&run) {
                eprintln!("note: {note}");
            }
            std::io::stdout()
                .write_all(&export.render(&run))
                .context("writing to stdout")?;
            Ok(Outcome::Done)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(Outcome::Refused)
        }
    }
}
