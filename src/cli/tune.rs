//! `tpsbench tune`: parses the options and hands them to the runner's session, which races
//! the configuration as `run` does a `[tune]` table; prints the answer (`report::tune`) on
//! stdout.

use std::path::PathBuf;

use anyhow::Result;

use super::outcome::Outcome;
use crate::runner::session::{self, Request, RoundsOverride};

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
    let checked = session::check(a.request())?;
    let Some((_, verdict)) = super::run::measure(checked, None)? else {
        return Ok(Outcome::Done);
    };
    for line in &verdict.lines {
        eprintln!("{line}");
    }
    Ok(super::run::outcome(&verdict, false))
}

impl Args {
    fn request(&self) -> Request {
        Request {
            config: self.config.clone(),
            filters: self.filter.clone(),
            results_dir: (!self.no_save).then(|| self.results_dir.clone()),
            quiet: self.quiet,
            verbose: self.verbose,
            rounds: RoundsOverride {
                rounds: None,
                max_rounds: self.max_rounds,
                max_seconds: self.max_seconds,
            },
            command: std::env::args().collect(),
            tune: true,
            ..Default::default()
        }
    }
}
