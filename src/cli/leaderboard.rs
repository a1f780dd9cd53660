//! `tpsbench leaderboard`: the command line of `report::leaderboard`.

use std::path::PathBuf;

use super::outcome::Outcome;
use crate::report::leaderboard::{self, Exclude, Options, command};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Result files, or directories searched recursively for *.json.
    #[arg(default_value = "results")]
    paths: Vec<PathBuf>,
    /// Where LEADERBOARD.md and index.html go.
    #[arg(long, default_value = "results")]
    out_dir: PathBuf,
    /// Leave out results whose llama.cpp build (build_commit or llama-cpp-sys-2 version)
    /// contains this text (repeatable).
    #[arg(long, value_name = "TEXT")]
    exclude_build: Vec<String>,
    /// Leave out results whose tpsbench version or git commit contains this text
    /// (repeatable).
    #[arg(long, value_name = "TEXT")]
    exclude_tool_version: Vec<String>,
    /// The KLD budget of the one-line answer, in nats: the fastest quantization whose mean
    /// KLD is within it is named (with the ones it ties with). Example: --kld-budget 0.1
    #[arg(long, value_name = "NATS", default_value_t = leaderboard::answer::DEFAULT_KLD_BUDGET)]
    kld_budget: f64,
    /// Leave out flagged runs and rows (roofline at or above 100%, dirty build, started
    /// above a load average of 1.0, unmarked fixture or synthetic model, duplicates)
    /// instead of warning about them.
    #[arg(long)]
    strict: bool,
    /// Write nothing: exit 1 if LEADERBOARD.md or index.html in --out-dir differ from what
    /// the result files build (for CI). Example: tpsbench leaderboard results/published
    /// --out-dir results/published --check
    #[arg(long)]
    check: bool,
}

impl From<Args> for Options {
    fn from(a: Args) -> Options {
        Options {
            paths: a.paths,
            out_dir: a.out_dir,
            exclude: Exclude {
                build: a.exclude_build,
                tool_version: a.exclude_tool_version,
                strict: a.strict,
            },
            kld_budget: a.kld_budget,
            check: a.check,
        }
    }
}

pub(super) fn leaderboard(a: Args) -> Outcome {
    Outcome::of_code(command(&a.into()))
}
