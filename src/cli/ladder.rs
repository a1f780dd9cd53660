//! `tpsbench ladder`: the ladder part of the plan through the runner (`tpsbench run` runs
//! it too, with everything else), then the ladder table; or the table of a saved run.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};

use super::outcome::Outcome;
use crate::ladder::Reporter;
use crate::ladder::table::{self, TableFormat};
use crate::output::progress::StderrProgress;
use crate::runner::session;
use crate::runner::{RunOptions, Scope};
use crate::{runner, util::system};

// The options of `tpsbench ladder` (its help is the variant's doc, in cli/mod.rs).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The configuration with [[ladder]] tables.
    #[arg(long, short, default_value = "models.toml")]
    config: PathBuf,
    /// Run only variants with a test id containing this text (repeatable).
    #[arg(long, short)]
    filter: Vec<String>,
    /// The table's format on stdout.
    #[arg(long, short, value_enum, default_value = "md")]
    output: TableFormat,
    /// Directory for the result file.
    #[arg(long, default_value = "results")]
    results_dir: PathBuf,
    /// Do not write a result file.
    #[arg(long)]
    no_save: bool,
    /// Print the table of an existing result file instead of running.
    #[arg(long)]
    from: Option<PathBuf>,
    /// No progress on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// Show llama.cpp's own log on stderr.
    #[arg(long, short)]
    verbose: bool,
}

/// Runs the ladders (or renders a saved run).
pub(super) fn ladder(a: Args) -> Result<Outcome> {
    if let Some(path) = &a.from {
        let record = crate::record::verify::read_shown(path).map_err(anyhow::Error::msg)?;
        let rows = table::rows(&record);
        if rows.is_empty() {
            anyhow::bail!("{}: no ladder variants in this result file", path.display());
        }
        print(&table::render(&rows, a.output))?;
        return Ok(Outcome::Done);
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
    let request = session::Request {
        filters: a.filter.clone(),
        quiet: a.quiet,
        verbose: a.verbose,
        command: std::env::args().collect(),
        ..Default::default()
    };
    let up = session::start_up(&cfg, &request)?;
    let opts = RunOptions {
        filters: a.filter,
        scope: Scope::Ladders,
        quiet: a.quiet,
        ..up.options(cfg, (!a.no_save).then_some(a.results_dir))
    };
    let mut progress = StderrProgress::new(a.quiet);
    let out = runner::run(&up.engine, up.info, &opts, &mut progress)?;
    print(&table::render(&table::rows(&out.record), a.output))?;
    if let Some(p) = &out.path {
        Reporter::new(a.quiet).line(&format!("results written to {}", p.display()));
    }
    if out.failed > 0 {
        eprintln!("{}", session::failed_line(&out));
        return Ok(Outcome::Failed);
    }
    // No file to resume a ladder from: the table holds what ran.
    Ok(match out.interrupted {
        true => Outcome::Interrupted,
        false => Outcome::Done,
    })
}

fn print(s: &str) -> Result<()> {
    std::io::stdout()
        .write_all(s.as_bytes())
        .context("writing to stdout")
}
