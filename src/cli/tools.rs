//! Small file commands: `synth`, `merge`, `export`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::export::{Format, exporter};
use crate::gguf::{tiny, writer::write_gguf};

pub(super) fn synth(output: PathBuf, preset: &str, seed: u64) -> Result<i32> {
    let doc = match preset {
        "tiny" => tiny::document(seed),
        other => bail!("unknown preset {other:?}: available presets: tiny"),
    };
    if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let tmp = output.with_extension("gguf.tmp");
    let file =
        std::fs::File::create(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
    let mut w = std::io::BufWriter::new(file);
    write_gguf(&mut w, &doc).with_context(|| format!("cannot write {}", tmp.display()))?;
    drop(w);
    std::fs::rename(&tmp, &output).with_context(|| format!("cannot write {}", output.display()))?;
    eprintln!(
        "wrote {} ({} tensors, preset {preset})",
        output.display(),
        doc.tensors.len()
    );
    Ok(0)
}

pub(super) fn merge(output: &Path, inputs: &[PathBuf]) -> Result<i32> {
    match crate::merge::merge_files(output, inputs, std::env::args().collect()) {
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
    match crate::results::read(file) {
        Ok(run) => {
            std::io::stdout()
                .write_all(&exporter(format).render(&run))
                .context("writing to stdout")?;
            Ok(0)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(2)
        }
    }
}
