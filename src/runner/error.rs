//! What can stop a run at the runner boundary. Every variant displays the one line users
//! read (docs/bad-input.md). `main` prints the chain (`{e:#}`) and the errors below write
//! their cause into their line, so no variant names a source: the line is printed once.

use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;

use crate::config::ConfigError;
use crate::engine::EngineError;
use crate::kinds::error::{KindError, from_plain};
use crate::ladder::error::LadderError;
use crate::record::RecordError;
use crate::serving::dataset::DatasetError;

/// Why a run (or its checks, its start, an A/B across builds) stopped before it was done.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("{0}")]
    Config(ConfigError),
    #[error("{0}")]
    Engine(EngineError),
    #[error("{0}")]
    Record(RecordError),
    #[error(transparent)]
    Options(#[from] OptionError),
    #[error(transparent)]
    Knob(#[from] KnobError),
    #[error("no test matches the filter {filters:?}")]
    NoMatch { filters: Vec<String> },
    #[error(
        "{}: key `ladder`: no [[ladder]] tables: add one with a name, a base GGUF and a list \
         of types",
        config.display()
    )]
    NoLadders { config: PathBuf },
    #[error("{}", models_line(models))]
    BadModels { models: Vec<(String, String)> },
    #[error(
        "model {model:?}: the llama-server {} runs on {server} but this tpsbench on {engine}: its served tests would compare another backend; build one for {engine} (scripts/reference-tools --server --backend cpu|cuda|vulkan) or set server = {{ llama_server = ... }}",
        binary.display()
    )]
    ServerBackend {
        model: String,
        binary: PathBuf,
        server: String,
        engine: String,
    },
    #[error("{}: not fetched yet: run `{command}` (or scripts/bench --config FILE, which fetches what FILE names)", path.display())]
    NotFetched {
        path: PathBuf,
        command: &'static str,
    },
    #[error("{}: cannot resume: the run differs from the file's: {why}", file.display())]
    CannotResume { file: PathBuf, why: String },
    #[error("cannot find the tpsbench executable: {0}")]
    NoExecutable(io::Error),
    #[error("cannot start a child tpsbench: {0}")]
    SpawnChild(io::Error),
    #[error("{}: {cause}", path.display())]
    Io { path: PathBuf, cause: io::Error },
    #[error(
        "the run on {} failed ({status}): {}",
        lib.display(),
        why.as_deref().unwrap_or("no message")
    )]
    BuildFailed {
        lib: PathBuf,
        status: ExitStatus,
        why: Option<String>,
    },
    #[error("the run on {} printed no result: {cause}", lib.display())]
    BuildNoResult {
        lib: PathBuf,
        cause: serde_json::Error,
    },
    #[error(
        "--library {}: no libllama here or in its lib/ (build one with scripts/build-llama-shared)",
        dir.display()
    )]
    NoLibrary { dir: PathBuf },
    #[error("{0}")]
    LibraryPath(io::Error),
    #[error("{0}")]
    Kind(KindError),
    #[error("{0}")]
    Refused(String),
    #[error("interrupted while {0}")]
    Interrupted(&'static str),
}

/// "model "a": why; model "b": why".
fn models_line(models: &[(String, String)]) -> String {
    let lines = models.iter().map(|(n, why)| format!("model {n:?}: {why}"));
    lines.collect::<Vec<_>>().join("; ")
}

from_plain!(RunnerError {
    ConfigError => Config,
    EngineError => Engine,
    DatasetError => Kind,
    LadderError => Kind,
    KindError => Kind,
    RecordError => Record,
});

/// An option, or a combination of options, refused before anything runs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OptionError {
    #[error("--rounds must be at least 1 (1 is llama-bench's methodology: one launch)")]
    RoundsBelowOne,
    #[error(
        "--max-rounds and --max-rounds-seconds are the budget of --rounds auto: add --rounds auto"
    )]
    BudgetWithoutAuto,
    #[error("--max-rounds {max_rounds}: {}", crate::config::MAX_ROUNDS_RULE)]
    MaxRounds { max_rounds: i64 },
    #[error("{flag} {seconds}: must be at least 1")]
    MaxRoundsSeconds { flag: &'static str, seconds: f64 },
    #[error(
        "--rounds auto does not combine with --isolate (its children run fixed rounds): give --rounds N"
    )]
    AutoWithIsolate,
    #[error(
        "{}: rounds = \"auto\" has nothing to resolve here (no two variants or settings \
         of one test to compare) and no budget: give max_rounds or max_rounds_seconds \
         (--max-rounds, --max-rounds-seconds), or a number of rounds",
        config.display()
    )]
    AutoWithoutComparison { config: PathBuf },
    #[error(
        "{}: made with fixed rounds ({rounds}): --rounds auto cannot continue it (its looks \
         would not be the ones a sequential design plans); resume it with --rounds N, \
         or start a new run with --rounds auto",
        file.display()
    )]
    AutoResumesFixed { file: PathBuf, rounds: u32 },
    #[error(
        "--library needs a tpsbench built with --features dynamic-link (this one has \
         llama.cpp linked in)"
    )]
    LibraryNeedsDynamicLink,
    #[error("--library needs at least two builds to compare (repeat it)")]
    LibraryNeedsTwo,
    #[error(
        "{option} does not apply to a race: {} has a [tune] table, so `run` races its \
         configurations (docs/tune.md); remove {option}, or the [tune] table to run the sweep",
        config.display()
    )]
    NotInTune {
        option: &'static str,
        config: PathBuf,
    },
}

/// A knob value that this build or the model files refuse (bad input, exit 2). `file` is
/// the configuration, `table` the sweep it is in (`model "m"`, `ladder "l"`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KnobError {
    #[error(
        "{}: {table}: key `devices`: no device {device:?}; this build has {}",
        file.display(),
        list(devices)
    )]
    NoDevice {
        file: PathBuf,
        table: String,
        device: String,
        devices: Vec<String>,
    },
    #[error(
        "{}: {table}: key `tensor_split`: {split:?} has {proportions} proportions, but this \
         build has {offload_devices} device{} to split over ({})",
        file.display(),
        if *offload_devices == 1 { "" } else { "s" },
        list(devices)
    )]
    TooManyProportions {
        file: PathBuf,
        table: String,
        split: String,
        proportions: usize,
        offload_devices: usize,
        devices: Vec<String>,
    },
    #[error(
        "{}: {table}: key `tensor_buft_overrides`: unknown buffer type {buffer_type:?}; this \
         build has {}",
        file.display(),
        list(buffer_types)
    )]
    NoBufferType {
        file: PathBuf,
        table: String,
        buffer_type: String,
        buffer_types: Vec<String>,
    },
}

/// What this build has, for a refusal: "CPU, Vulkan0", or "none".
fn list(xs: &[String]) -> String {
    if xs.is_empty() {
        "none".into()
    } else {
        xs.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `main` prints the chain (`{e:#}`): a wrapped error whose line names its cause must
    /// still read once.
    #[test]
    fn the_line_main_prints_names_the_cause_once() {
        let e = RunnerError::from(RecordError::Io {
            what: "cannot write the result file ",
            path: PathBuf::from("r.json"),
            source: io::Error::other("disk full"),
        });
        let shown = format!("{:#}", anyhow::Error::from(e));
        assert_eq!(shown, "cannot write the result file r.json: disk full");
        let e = RunnerError::from(OptionError::MaxRounds { max_rounds: 1 });
        let shown = format!("{:#}", anyhow::Error::from(e));
        assert_eq!(
            shown,
            "--max-rounds 1: must be between 2 and 10000 (a paired comparison needs 2 rounds)"
        );
    }
}
