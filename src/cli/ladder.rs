//! `tpsbench ladder`: the ladder part of the plan through the runner (`tpsbench run` runs
//! it too, with everything else), then the ladder table; or the table of a saved run.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::engine::llama::{self, LlamaEngine};
use crate::ladder::Reporter;
use crate::ladder::table::{self, TableFormat};
use crate::output::progress::StderrProgress;
use crate::runner::{RunOptions, Scope};
use crate::{runner, util::system};

pub struct Args {
    pub config: PathBuf,
    pub filters: Vec<String>,
    pub format: TableFormat,
    /// `None`: write no result file.
    pub results_dir: Option<PathBuf>,
    /// Render the table of this result file instead of running.
    pub from: Option<PathBuf>,
    pub quiet: bool,
    pub verbose: bool,
}

/// Runs the ladders (or renders a saved run); returns the exit code.
pub fn ladder(a: Args) -> Result<i32> {
    if let Some(path) = &a.from {
        let record = crate::record::verify::read(path).map_err(anyhow::Error::msg)?;
        let rows = table::rows(&record);
        if rows.is_empty() {
            anyhow::bail!("{}: no ladder variants in this result file", path.display());
        }
        print(&table::render(&rows, a.format))?;
        return Ok(0);
    }
    let cores = system::physical_cores();
    let cfg = crate::config::load(&a.config, cores)?;
    if cfg.ladders.is_empty() {
        return Err(crate::config::ConfigError {
            file: a.config.clone(),
            line: None,
            key: Some("ladder".into()),
            message: "no [[ladder]] tables: add one with a name, a base GGUF and a list of types"
                .into(),
        }
        .into());
    }
    let engine = LlamaEngine::new(a.verbose).map_err(anyhow::Error::msg)?;
    let info = runner::run_info(
        &cfg,
        std::env::args().collect(),
        llama::system_info(),
        llama::devices(),
    );
    let mut opts = RunOptions::new(cfg, a.results_dir);
    opts.filters = a.filters;
    opts.scope = Scope::Ladders;
    opts.command = std::env::args().collect();
    opts.quiet = a.quiet;
    let mut progress = StderrProgress::new(a.quiet);
    let out = runner::run(&engine, info, &opts, &mut progress).map_err(anyhow::Error::msg)?;
    print(&table::render(&table::rows(&out.record), a.format))?;
    if let Some(p) = &out.path {
        Reporter::new(a.quiet).line(&format!("results written to {}", p.display()));
    }
    if out.failed > 0 {
        eprintln!(
            "error: {} of {} tests failed (see the errors above and in the result file)",
            out.failed,
            out.record.tests.len()
        );
        return Ok(1);
    }
    Ok(0)
}

fn print(s: &str) -> Result<()> {
    std::io::stdout()
        .write_all(s.as_bytes())
        .context("writing to stdout")
}
