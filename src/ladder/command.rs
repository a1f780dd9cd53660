//! `tpsbench ladder`: the code behind the subcommand (clap's definition is in cli.rs).

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};

use super::table::{self, TableFormat};
use super::{LadderOptions, Reporter};
use crate::engine::llama::{self, LlamaEngine};
use crate::progress::StderrProgress;
use crate::{config_ladder, results, runner, system};

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
        let record = results::read(path).map_err(anyhow::Error::msg)?;
        let rows = table::rows(&record);
        if rows.is_empty() {
            anyhow::bail!("{}: no ladder variants in this result file", path.display());
        }
        print(&table::render(&rows, a.format))?;
        return Ok(0);
    }
    let cores = system::physical_cores();
    let cfg = config_ladder::load(&a.config, cores)?;
    let engine = LlamaEngine::new(a.verbose).map_err(anyhow::Error::msg)?;
    let info = runner::run_info(
        &cfg.config,
        std::env::args().collect(),
        llama::system_info(),
        llama::devices(),
    );
    let opts = LadderOptions {
        config: &cfg,
        filters: a.filters,
        results_dir: a.results_dir,
        command: std::env::args().collect(),
        quiet: a.quiet,
        n_threads: cores,
    };
    let mut progress = StderrProgress::new(a.quiet);
    let out = super::run(&engine, info, &opts, &mut progress).map_err(anyhow::Error::msg)?;
    print(&table::render(&out.rows, a.format))?;
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
