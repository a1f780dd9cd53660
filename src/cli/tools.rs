//! Small file commands: `synth`, `merge`, `export`.

use std::path::PathBuf;

use anyhow::Result;

use super::outcome::Outcome;
use crate::ladder::synth::SynthOptions;
use crate::report::export::Format;

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

pub(super) fn synth(a: SynthOptions) -> Result<Outcome> {
    crate::engine::llama::init(false).map_err(anyhow::Error::msg)?;
    let rep = crate::ladder::Reporter::new(false);
    let line = crate::ladder::synth::synth(&a, &rep).map_err(anyhow::Error::msg)?;
    rep.line(&line);
    Ok(Outcome::Done)
}

pub(super) fn merge(a: &MergeArgs) -> Result<Outcome> {
    let command = std::env::args().collect();
    let warnings =
        crate::report::merge::merge_files(&a.output, &a.inputs, command, a.allow_partial)
            .map_err(anyhow::Error::msg)?;
    for w in warnings {
        eprintln!("{w}");
    }
    let (n, output) = (a.inputs.len(), a.output.display());
    eprintln!("merged {n} file(s) into {output}");
    Ok(Outcome::Done)
}

pub(super) fn export(a: &ExportArgs) -> Result<Outcome> {
    let run = crate::record::verify::read(&a.file).map_err(anyhow::Error::msg)?;
    if let Some(note) = a.format.skipped(&run) {
        eprintln!("note: {note}");
    }
    super::print(&a.format.render(&run))?;
    Ok(Outcome::Done)
}
