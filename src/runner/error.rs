//! What can stop a run at the runner boundary: the configuration, the engine or the result
//! file failing below (`Config`, `Engine`, `Record`, each the layer's own error), an option
//! or a combination of them refused (`Options`), the kinds layer failing (`Kind`: a prompt
//! file, an endpoint, a synthetic model), a knob value this build or the model
//! files refuse (`Knob`), and the runner's own failures (nothing to run, a model that
//! cannot be read, a file that cannot be resumed, a child process that failed). So a
//! caller tells a refused option from a failed model load from a result-file error by the
//! variant, not by the text.
//!
//! Its own file, below every file of the runner. Every variant displays exactly the one
//! line users have always read (docs/bad-input.md, tests/it/bad_input). `main` prints an
//! error with its chain of sources (`{e:#}`), and the errors below already write their
//! cause into their line: so no variant here names a source (the wrapped errors and the
//! causes are plain fields, `From` is written out), and the line is printed once.

use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;

use crate::config::ConfigError;
use crate::engine::EngineError;
use crate::kinds::error::KindError;
use crate::ladder::error::LadderError;
use crate::record::RecordError;
use crate::serving::dataset::DatasetError;

/// Why a run (or its checks, its start, an A/B across builds) stopped before it was done.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The configuration file does not load.
    #[error("{0}")]
    Config(ConfigError),
    /// llama.cpp could not start (or, where the runner passes it on, do what was asked).
    #[error("{0}")]
    Engine(EngineError),
    /// A result file (or its journal) could not be claimed, written or read.
    #[error("{0}")]
    Record(RecordError),
    /// An option, or a combination of options, that the runner refuses.
    #[error(transparent)]
    Options(#[from] OptionError),
    /// A knob value this build or the model files refuse.
    #[error(transparent)]
    Knob(#[from] KnobError),
    /// The filters keep no test of the plan.
    #[error("no test matches the filter {filters:?}")]
    NoMatch { filters: Vec<String> },
    /// `tpsbench ladder` on a configuration without ladders.
    #[error(
        "{}: no [[ladder]] tables: add one with a name, a base GGUF and a list of types",
        config.display()
    )]
    NoLadders { config: PathBuf },
    /// Model files (or ladder bases) missing or not valid GGUF, for models with tests to
    /// run: each model's name and why, in plan order, each once.
    #[error("{}", models_line(models))]
    BadModels { models: Vec<(String, String)> },
    /// A llama-server tpsbench starts sees other offload backends than this tpsbench does.
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
    /// A file that `scripts/setup` fetches (a model, a dataset) has not been fetched.
    #[error("{}: not fetched yet: run `{command}` (or scripts/bench --config FILE, which fetches what FILE names)", path.display())]
    NotFetched {
        path: PathBuf,
        command: &'static str,
    },
    /// `--resume FILE` of a run that is not this one; `why` names the first difference.
    #[error("{}: cannot resume: the run differs from the file's: {why}", file.display())]
    CannotResume { file: PathBuf, why: String },
    /// `--isolate`: the children are this executable, which cannot be found.
    #[error("cannot find the tpsbench executable: {cause}")]
    NoExecutable { cause: io::Error },
    /// `--isolate`: a child could not be started.
    #[error("cannot start a child tpsbench: {cause}")]
    SpawnChild { cause: io::Error },
    /// `--library`: its children are this executable, which cannot be found.
    #[error("cannot find this executable: {cause}")]
    NoLibraryExecutable { cause: io::Error },
    /// `--library`: the child for a build could not be started.
    #[error("{}: {cause}", exe.display())]
    SpawnBuild { exe: PathBuf, cause: io::Error },
    /// `--library`: the child on `lib` ended with `status` (not 0, not 1: failed tests are
    /// recorded, not errors); `why` is the last line it wrote on stderr.
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
    /// `--library`: the child on `lib` exited well but its stdout is not a run.
    #[error("the run on {} printed no result: {cause}", lib.display())]
    BuildNoResult {
        lib: PathBuf,
        cause: serde_json::Error,
    },
    /// `--library DIR`: no libllama in DIR or DIR/lib.
    #[error(
        "--library {}: no libllama here or in its lib/ (build one with scripts/build-llama-shared)",
        dir.display()
    )]
    NoLibrary { dir: PathBuf },
    /// `--library DIR`: DIR cannot be made absolute (the current directory is gone).
    #[error("{cause}")]
    LibraryPath { dir: PathBuf, cause: io::Error },
    /// `--library`: the directory for the builds' result files cannot be made.
    #[error("{}: {cause}", dir.display())]
    CreateDir { dir: PathBuf, cause: io::Error },
    /// The kinds layer (a prompt file, a served model's endpoint, a synthetic model) failed.
    #[error("{0}")]
    Kind(KindError),
    /// `tune` refused its configuration or found nothing to race, said in one line.
    #[error("{0}")]
    Refused(String),
    /// Ctrl-C before a race's rounds began: what it was doing.
    #[error("interrupted while {0}")]
    Interrupted(&'static str),
}

/// "model "a": why; model "b": why".
fn models_line(models: &[(String, String)]) -> String {
    let lines: Vec<String> = models
        .iter()
        .map(|(name, why)| format!("model {name:?}: {why}"))
        .collect();
    lines.join("; ")
}

impl From<ConfigError> for RunnerError {
    fn from(e: ConfigError) -> Self {
        RunnerError::Config(e)
    }
}

impl From<EngineError> for RunnerError {
    fn from(e: EngineError) -> Self {
        RunnerError::Engine(e)
    }
}

impl From<DatasetError> for RunnerError {
    fn from(e: DatasetError) -> Self {
        RunnerError::Kind(KindError::Dataset(e))
    }
}

impl From<LadderError> for RunnerError {
    fn from(e: LadderError) -> Self {
        RunnerError::Kind(KindError::Ladder(e))
    }
}

impl From<KindError> for RunnerError {
    fn from(e: KindError) -> Self {
        RunnerError::Kind(e)
    }
}

impl From<RecordError> for RunnerError {
    fn from(e: RecordError) -> Self {
        RunnerError::Record(e)
    }
}

/// An option, or a combination of options, refused before anything runs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OptionError {
    #[error("--rounds must be at least 1 (1 is llama-bench's methodology: one launch)")]
    RoundsBelowOne,
    #[error(
        "--max-rounds and --max-rounds-seconds are the budget of --rounds auto: add --rounds auto"
    )]
    BudgetWithoutAuto,
    #[error(
        "--max-rounds {max_rounds}: must be between 2 and 10000 (a paired comparison needs 2 rounds)"
    )]
    MaxRounds { max_rounds: i64 },
    #[error("{flag} {seconds}: must be at least 1")]
    MaxRoundsSeconds { flag: &'static str, seconds: f64 },
    #[error(
        "--rounds auto does not combine with --isolate (its children run fixed rounds): give --rounds N"
    )]
    AutoWithIsolate,
    /// Auto rounds without a budget on a plan with no comparison to resolve.
    #[error(
        "{}: rounds = \"auto\" has nothing to resolve here (no two variants or settings \
         of one test to compare) and no budget: give max_rounds or max_rounds_seconds \
         (--max-rounds, --max-rounds-seconds), or a number of rounds",
        config.display()
    )]
    AutoWithoutComparison { config: PathBuf },
    /// `--rounds auto --resume FILE` where FILE was measured with `rounds` fixed rounds.
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
    #[error("--rounds must be at least 1")]
    LibraryRoundsBelowOne,
    /// An option of the sweep given to `run` on a configuration whose `[tune]` table makes
    /// it a race (which sets its own rounds and writes its own file).
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
    /// `devices` names a device this build does not have.
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
    /// `tensor_split` has more proportions than this build has devices to offload to.
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
    /// `tensor_buft_overrides` names a buffer type this build does not have.
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
        let e = RunnerError::from(RecordError::Write {
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
