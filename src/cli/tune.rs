//! `tpsbench tune`: parses the options, hands them to the runner's race
//! (`runner::race::tune_request`) and prints the answer (`report::tune`) on stdout. `run`
//! on a configuration with a `[tune]` table ends here too ([`race`]).

use std::path::PathBuf;

use std::io::Write;

use anyhow::{Context, Result};

use super::outcome::Outcome;
use crate::report::export::{Format, exporter};
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
    /// Print the plan of the race (as `run --dry-run`) and race nothing.
    #[arg(long)]
    dry_run: bool,
}

/// Races the configurations and prints the answer.
pub(super) fn tune(a: &Args) -> Result<Outcome> {
    if a.dry_run {
        let plan = crate::runner::dry_run::of_file(&a.config, &a.filter, None, &a.results_dir)?;
        print!("{plan}");
        return Ok(Outcome::Done);
    }
    race(a.request(), None)
}

impl Args {
    fn request(&self) -> Request {
        Request {
            config: self.config.clone(),
            filters: self.filter.clone(),
            results_dir: (!self.no_save).then(|| self.results_dir.clone()),
            quiet: self.quiet,
            verbose: self.verbose,
            max_rounds: self.max_rounds,
            max_seconds: self.max_seconds,
            command: std::env::args().collect(),
        }
    }
}

/// The race of `request`, and its answer last on stdout. `export`: `run`'s `--output`, the
/// race's tests in that format first; the answer then follows in Markdown only, as `run`'s
/// own answer does (the other formats are read by programs).
pub(super) fn race(request: Request, export: Option<Format>) -> Result<Outcome> {
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
    let record = &tuned.run.record;
    let mut text = Vec::new();
    if let Some(format) = export {
        let e = exporter(format);
        if let Some(note) = e.skipped(record) {
            eprintln!("note: {note}");
        }
        text = e.render(record);
    }
    if export.is_none_or(|f| f == Format::Md) {
        if let Some(answer) = crate::report::tune::answer(record) {
            text.extend_from_slice(answer.as_bytes());
        }
    }
    // A reader gone from stdout loses only the printout: the race is in its file.
    match std::io::stdout().write_all(&text) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other.context("writing to stdout")?,
    }
    Ok(if tuned.run.interrupted {
        Outcome::Interrupted
    } else {
        Outcome::Done
    })
}
