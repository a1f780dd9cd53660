//! `tpsbench tune`: parses the options, hands them to the runner's race
//! (`runner::race::tune_request`) and prints the answer (`report::tune`) on stdout.

use std::path::PathBuf;

use anyhow::Result;

use super::outcome::Outcome;
use crate::runner::race::{self, Request, TuneError};

// The options of `tpsbench tune` (its help is the variant's doc, in cli/mod.rs).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The configuration: its [tune] table (objective, limits, budget) and its sweep (the
    /// space).
    #[arg(long, short, default_value = "models.toml")]
    config: PathBuf,
    /// Race only candidates whose test id contains this text (repeat: OR).
    #[arg(long, short)]
    filter: Vec<String>,
    /// Directory for the result file.
    #[arg(long, default_value = "results")]
    results_dir: PathBuf,
    /// Do not write a result file.
    #[arg(long)]
    no_save: bool,
    /// No progress on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// Show llama.cpp's own log on stderr.
    #[arg(long, short)]
    verbose: bool,
    /// The most rounds (overrides [tune] max_rounds).
    #[arg(long, value_name = "N")]
    max_rounds: Option<i64>,
    /// No round starts that would end past this many seconds of racing (overrides [tune]
    /// max_seconds).
    #[arg(long, value_name = "SECONDS")]
    max_seconds: Option<f64>,
}

/// Races the configurations and prints the answer.
pub(super) fn tune(a: &Args) -> Result<Outcome> {
    let request = Request {
        config: a.config.clone(),
        filters: a.filter.clone(),
        results_dir: (!a.no_save).then(|| a.results_dir.clone()),
        quiet: a.quiet,
        verbose: a.verbose,
        max_rounds: a.max_rounds,
        max_seconds: a.max_seconds,
        command: std::env::args().collect(),
    };
    let tuned = match race::tune_request(request) {
        Ok(t) => t,
        Err(TuneError::Refused(line)) => {
            eprintln!("error: {line}");
            return Ok(Outcome::Refused);
        }
        Err(TuneError::Runner(e)) => return Err((*e).into()),
    };
    if let Some(p) = &tuned.run.path {
        eprintln!("results: {}", p.display());
    }
    if let Some(text) = crate::report::tune::answer(&tuned.run.record) {
        print!("{text}");
    }
    Ok(if tuned.run.interrupted {
        Outcome::Interrupted
    } else {
        Outcome::Done
    })
}
