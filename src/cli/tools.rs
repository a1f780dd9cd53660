//! Small file commands: `synth`, `merge`, `export`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::report::export::{Format, exporter};

pub(super) fn synth(opts: crate::ladder::synth::SynthOptions) -> Result<i32> {
    crate::engine::llama::init(false).map_err(anyhow::Error::msg)?;
    let rep = crate::ladder::Reporter::new(false);
    let line = crate::ladder::synth::synth(&opts, &rep).map_err(anyhow::Error::msg)?;
    rep.line(&line);
    Ok(0)
}

pub(super) fn merge(output: &Path, inputs: &[PathBuf], allow_partial: bool) -> Result<i32> {
    let command = std::env::args().collect();
    match crate::report::merge::merge_files(output, inputs, command, allow_partial) {
        Ok(warnings) => {
            for w in warnings {
                eprintln!("{w}");
            }
            eprintln!("merged {} file(s) into {}", inputs.len(), output.display());
            Ok(0)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(2)
        }
    }
}

pub(super) fn export(file: &Path, format: Format) -> Result<i32> {
    match crate::record::verify::read(file) {
        Ok(run) => {
            let export = exporter(format);
            if let Some(note) = export.skipped(&run) {
                eprintln!("note: {note}");
            }
            std::io::stdout()
                .write_all(&export.render(&run))
                .context("writing to stdout")?;
            Ok(0)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(2)
        }
    }
}
