//! Quantization ladders: from one base GGUF, the variants that models.toml lists, built with
//! llama.cpp's own quantizer (cached by the base's SHA-256 and the type), their quality and
//! the table. The variants are models of the run's plan: the runner builds each on first use.

pub mod base_file;
pub mod cache;
pub mod error;
pub mod eval;
pub(crate) mod kld;
pub mod quality;
pub mod recipe;
pub mod synth;
pub(crate) mod table;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use crate::config::ladder::Ladder;
use crate::config::quant_types::QuantType;
use crate::engine::quantize::{Overrides, QuantizeParams, quantize};
use crate::ladder::error::LadderError;
use crate::util::units::format_size;
use cache::BaseInfo;

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

/// Returns the cached variant or quantizes it (to a temporary name, renamed when complete);
/// a recipe variant (`recipe::build`) gives its own cache path and overrides.
pub(crate) fn build_variant(
    base: &BaseInfo,
    l: &Ladder,
    t: QuantType,
    recipe: Option<(&std::path::Path, &Overrides)>,
    n_threads: u32,
    tag: &str,
    rep: &Reporter,
) -> Result<PathBuf, LadderError> {
    let path = recipe.map_or_else(
        || cache::variant_path(&l.cache_dir, &base.sha256, t),
        |r| r.0.to_path_buf(),
    );
    if crate::gguf::reader::read_header(&path).is_ok() {
        rep.line(&format!("{tag}: cached {}", path.display()));
        return Ok(path);
    }
    cache::create_dir(&l.cache_dir)?;
    cache::check_space(&path, cache::size_bound(t, base.n_elements))?;
    let tmp = path.with_extension(format!("gguf.tmp{}", std::process::id()));
    let params = QuantizeParams {
        ftype: t.ftype,
        allow_requantize: base.quantized,
        n_threads,
    };
    let start = Instant::now();
    let none = Overrides::default();
    let o = recipe.map_or(&none, |r| r.1);
    cache::via_tmp(&path, &tmp, |tmp| {
        quantize(&base.path, tmp, &params, o, &mut |done, total| {
            rep.status(&format!("{tag}: {done}/{total} tensors"));
        })
        .map_err(|cause| LadderError::Quantize {
            base: l.base.clone(),
            quant: t.name.to_string(),
            cause,
        })
    })?;
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
