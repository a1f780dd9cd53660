//! `tpsbench tune`: parses the options and hands them to the runner's session, which races
//! the configuration as `run` does a `[tune]` table; prints the answer (`report::tune`) on
//! stdout.

use anyhow::Result;

use super::outcome::Outcome;
use crate::runner::session::{self, Request, RoundsOverride};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: super::run::Common,
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
        return a.common.dry_run(None);
    }
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
            rounds: RoundsOverride {
                rounds: None,
                max_rounds: self.max_rounds,
                max_seconds: self.max_seconds,
            },
            tune: true,
            ..self.common.request()
        }
    }
}
