//! `tpsbench run`: parses the options and hands them to the runner (`runner::session`:
//! checks, start, sweep, verdict); prints the export, the answer and the verdict; saves and
//! compares named baselines. A configuration with a `[tune]` table is raced instead, as
//! `tpsbench tune` races it, its answer last. `--library` runs an A/B across builds instead
//! (`runner::library_ab`, table from `report::library_ab`).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::outcome::Outcome;
use crate::report::compare;
use crate::report::export::Format;
use crate::runner::OptionError;
use crate::runner::library_ab::{self, AbOptions};
use crate::runner::session::{
    self, Checked, Ending, Request, Rounds, RoundsOverride, Swept, Verdict,
};

/// The options `run`, `tune` and `ladder` share: the configuration, the filters, the
/// result file, and what is shown on stderr.
#[derive(clap::Args, Debug)]
pub struct Common {
    /// The configuration (models.toml): the sweep, and the [tune] or [[ladder]] tables.
    #[arg(long, short, default_value = "models.toml")]
    config: PathBuf,
    /// Run only tests whose id contains this text, e.g. `SmolLM2/Q4_1/pp512`; repeated flags
    /// combine as OR (`--filter pp512 --filter tg128` runs both).
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
}

impl Common {
    /// Prints the plan (`--dry-run`): the tests, the files to build and the time it would
    /// take; nothing is loaded or measured.
    pub(super) fn dry_run(&self, shard: Option<crate::plan::Shard>) -> Result<Outcome> {
        let plan =
            crate::runner::dry_run::of_file(&self.config, &self.filter, shard, &self.results_dir)?;
        print!("{plan}");
        Ok(Outcome::Done)
    }

    /// The runner's request of these options (the command line as started, for the record).
    pub(super) fn request(&self) -> Request {
        Request {
            config: self.config.clone(),
            filters: self.filter.clone(),
            results_dir: (!self.no_save).then(|| self.results_dir.clone()),
            quiet: self.quiet,
            verbose: self.verbose,
            command: std::env::args().collect(),
            ..Default::default()
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// What to print on stdout when the run ends.
    #[arg(long, short, value_enum, default_value = "md")]
    output: Format,
    /// Continue an interrupted run in this result file, skipping the tests it holds.
    ///
    /// Example: tpsbench run --resume results/20261130T030424Z-vm.json
    #[arg(long, value_name = "FILE", conflicts_with = "no_save")]
    resume: Option<PathBuf>,
    /// Run each model in a child process, so a crash in llama.cpp loses only that
    /// model's current test.
    #[arg(long, conflicts_with_all = ["resume", "no_save"])]
    isolate: bool,
    /// Run only this model (what --isolate children are given).
    #[arg(long, hide = true)]
    only_model: Option<String>,
    /// Save this run as a named baseline (as criterion's --save-baseline).
    #[arg(long, value_name = "NAME")]
    save_baseline: Option<String>,
    /// Compare this run with a named baseline; exit 1 on a significant regression.
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
    /// Where named baselines live.
    #[arg(long, default_value = crate::report::compare::BASELINE_DIR)]
    baseline_dir: PathBuf,
    /// Run only shard INDEX of COUNT (0-based) of the plan, for sweeps over many
    /// machines; join the result files with `tpsbench merge`. Example: --shard 0/4
    #[arg(long, value_name = "INDEX/COUNT")]
    shard: Option<crate::plan::Shard>,
    /// A/B across llama.cpp builds (repeat: two or more directories of shared libraries):
    /// the plan runs on each in its own child process, rounds interleaved; prints each
    /// build's ratio to the first. Needs a `--features dynamic-link` build.
    ///
    /// Example: tpsbench run --library llama-shared/native --library llama-shared/portable
    #[arg(long, value_name = "DIR", conflicts_with_all = ["resume", "isolate", "shard", "save_baseline", "baseline"])]
    library: Vec<PathBuf>,
    /// Rounds: each pp/tg/pg test runs this many times, each in a fresh context (a fresh
    /// process with --isolate), interleaved with the other tests and rotated each round;
    /// intervals and verdicts then cover the variance between launches. Overrides
    /// `[sweep] rounds` (default 1, llama-bench's methodology). With --library: the
    /// interleaved rounds per build (default 3).
    ///
    /// `auto`: rounds are added until every comparison the answer depends on is
    /// established, within --max-rounds (default 10) and --max-rounds-seconds.
    ///
    /// Example: tpsbench run --rounds 3; tpsbench run --rounds auto --max-rounds-seconds 600
    #[arg(long, value_name = "N|auto", value_parser = parse_rounds)]
    rounds: Option<Rounds>,
    /// With `--rounds auto`: the most rounds (overrides `[sweep] max_rounds`).
    #[arg(long, value_name = "N")]
    max_rounds: Option<i64>,
    /// With `--rounds auto`: no round starts after this many seconds of the run
    /// (overrides `[sweep] max_rounds_seconds`).
    #[arg(long, value_name = "S")]
    max_rounds_seconds: Option<f64>,
    /// Print the plan (tests by model, rounds, files to write, memory per device, estimated
    /// wall time) and run nothing: no model is loaded.
    #[arg(long)]
    dry_run: bool,
}

/// Parses `--rounds`.
fn parse_rounds(s: &str) -> Result<Rounds, crate::config::Invalid> {
    if s.eq_ignore_ascii_case("auto") {
        return Ok(Rounds::Auto);
    }
    s.parse::<u32>().map(Rounds::Fixed).map_err(|_| {
        crate::config::Invalid(format!("{s:?} is neither a number of rounds nor \"auto\""))
    })
}

impl Args {
    /// The sweep these options ask for (the command line as started, for the record).
    fn request(&self) -> Request {
        Request {
            shard: self.shard,
            resume: self.resume.clone(),
            isolate: self.isolate,
            only_model: self.only_model.clone(),
            rounds: RoundsOverride {
                rounds: self.rounds,
                max_rounds: self.max_rounds,
                max_seconds: self.max_rounds_seconds,
            },
            ..self.common.request()
        }
    }

    /// A named-baseline option given: a race has no baseline to save or compare (its
    /// candidates ran unequal rounds).
    fn baseline_option(&self) -> Option<&'static str> {
        let save = self.save_baseline.as_ref().map(|_| "--save-baseline");
        save.or(self.baseline.as_ref().map(|_| "--baseline"))
    }

    /// The A/B these options ask for (`--library`): rounds per build, 3 unless given.
    fn ab_options(&self) -> Result<AbOptions> {
        let rounds = match self.rounds {
            Some(Rounds::Fixed(n)) => n,
            Some(Rounds::Auto) => {
                anyhow::bail!("--rounds auto does not apply to --library: give a number")
            }
            None => 3,
        };
        Ok(AbOptions {
            libraries: self.library.clone(),
            rounds,
            config: self.common.config.clone(),
            filters: self.common.filter.clone(),
            results_dir: self.common.request().results_dir,
            quiet: self.common.quiet,
        })
    }
}

/// Runs the sweep (or the A/B of `--library`, or the race of a `[tune]` table).
pub(super) fn run(a: &Args) -> Result<Outcome> {
    if a.dry_run {
        return a.common.dry_run(a.shard);
    }
    if !a.library.is_empty() {
        return library(a);
    }
    let checked = session::check(a.request())?;
    if let (true, Some(option)) = (checked.is_race(), a.baseline_option()) {
        let config = a.common.config.clone();
        return Err(OptionError::NotInTune { option, config }.into());
    }
    // A missing baseline is found before hours of measurement, not after.
    let base = a
        .baseline
        .as_ref()
        .map(|name| compare::load_side(name, &a.baseline_dir));
    let base = base.transpose()?;
    let Some((swept, verdict)) = measure(checked, Some(a.output))? else {
        return Ok(Outcome::Done);
    };
    if let Some(name) = &a.save_baseline {
        let p = compare::save_baseline(&swept.run.record, name, &a.baseline_dir)?;
        eprintln!("baseline {name:?} saved to {}", p.display());
    }
    for line in &verdict.lines {
        eprintln!("{line}");
    }
    let regressed = match (base, &a.baseline) {
        (Some(base), Some(name)) => compare::against_baseline(&base, name, &swept.run.record),
        _ => false,
    };
    Ok(outcome(&verdict, regressed))
}

/// Starts and sweeps (or races) `checked`, then prints its export in `output` (None: the
/// answer alone) and where its file went; None for a shard with nothing to run.
pub(super) fn measure(
    checked: Checked,
    output: Option<Format>,
) -> Result<Option<(Swept, Verdict)>> {
    let swept = session::sweep(session::start(checked)?)?;
    let verdict = match session::finish(&swept) {
        Ending::EmptyShard(line) => {
            eprintln!("{line}");
            return Ok(None);
        }
        Ending::Ran(v) => v,
    };
    print_export(output, &swept)?;
    if let Some(line) = &verdict.written {
        eprintln!("{line}");
    }
    Ok(Some((swept, verdict)))
}

/// The exit of a finished run.
pub(super) fn outcome(v: &Verdict, regressed: bool) -> Outcome {
    if v.failed || regressed {
        Outcome::Failed
    } else if v.interrupted {
        Outcome::Interrupted
    } else {
        Outcome::Done
    }
}

/// The run in `output`'s format on stdout; in Markdown (or with no export), the answer
/// last, under the other tables (the other formats are read by programs).
fn print_export(output: Option<Format>, swept: &Swept) -> Result<()> {
    let crate::runner::RunOutcome { record, path, .. } = &swept.run;
    let mut text = Vec::new();
    if let Some(format) = output {
        if let Some(note) = format.skipped(record) {
            eprintln!("note: {note}");
        }
        text = format.render(record);
    }
    // An `--isolate` child (`--only-model`): its parent prints the answer.
    if output.is_none_or(|f| f == Format::Md) && !swept.request.is_child() {
        let path = path.as_deref().unwrap_or(Path::new("(not saved)"));
        let answers = match record.run.tune {
            Some(_) => vec![crate::report::tune::answer(record)],
            None => vec![
                crate::report::leaderboard::answer_run::of_run(record, path),
                crate::report::speculative::of_run(record),
            ],
        };
        for a in answers.into_iter().flatten() {
            text.extend_from_slice(a.as_bytes());
        }
    }
    // A reader gone from stdout (`tpsbench run | head -1`) loses only the printout: the run
    // is in its file, and failed tests must still make the exit code 1.
    match std::io::stdout().write_all(&text) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to stdout"),
    }
}

/// `--library`: the builds measured, then the table of each against the first.
fn library(a: &Args) -> Result<Outcome> {
    let measured = library_ab::measure(&a.ab_options()?)?;
    let report = crate::report::library_ab::report(&measured.labels(), &measured.records);
    print!("{report}");
    Ok(Outcome::of_code(measured.any_failed().into()))
}
