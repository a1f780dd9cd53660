//! `tpsbench ladder`: the ladder part of the plan through the runner (`tpsbench run` runs
//! it too, with everything else), then the ladder table; or the table of a saved run.

use std::path::PathBuf;

use anyhow::Result;

use super::outcome::Outcome;
use super::print;
use crate::ladder::Reporter;
use crate::ladder::table::{self, TableFormat};
use crate::runner::Scope;
use crate::runner::session::{self, Request};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: super::run::Common,
    /// The table's format on stdout.
    #[arg(long, short, value_enum, default_value = "md")]
    output: TableFormat,
    /// Print the table of an existing result file instead of running.
    #[arg(long)]
    from: Option<PathBuf>,
}

/// Runs the ladders (or renders a saved run).
pub(super) fn ladder(a: Args) -> Result<Outcome> {
    if let Some(path) = &a.from {
        let record = crate::record::verify::read_shown(path).map_err(anyhow::Error::msg)?;
        let rows = table::rows(&record);
        if rows.is_empty() {
            anyhow::bail!("{}: no ladder variants in this result file", path.display());
        }
        print(table::render(&rows, a.output).as_bytes())?;
        return Ok(Outcome::Done);
    }
    let request = Request {
        scope: Scope::Ladders,
        ..a.common.request()
    };
    let swept = session::sweep(session::start(session::check(request)?)?)?;
    let out = &swept.run;
    print(table::render(&table::rows(&out.record), a.output).as_bytes())?;
    if let Some(p) = &out.path {
        Reporter::new(swept.request.quiet).line(&format!("results written to {}", p.display()));
    }
    if out.failed > 0 {
        eprintln!("{}", session::failed_line(out));
        return Ok(Outcome::Failed);
    }
    // No file to resume a ladder from: the table holds what ran.
    Ok(match out.interrupted {
        true => Outcome::Interrupted,
        false => Outcome::Done,
    })
}
