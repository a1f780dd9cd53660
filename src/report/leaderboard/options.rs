//! What `tpsbench leaderboard` is asked to do: the inputs and output, what to leave out
//! (`Exclude`), and the KLD budget of the answers. Its own file so that the loader and the
//! answers read the settings without reading each other.

use std::path::PathBuf;

use crate::record::RunInfo;

pub use crate::ladder::table::DEFAULT_KLD_BUDGET;

/// What `tpsbench leaderboard` reads and where it writes.
#[derive(Debug, Clone)]
pub struct Options {
    /// Files, or directories searched recursively for `*.json`.
    pub paths: Vec<PathBuf>,
    pub out_dir: PathBuf,
    /// What to leave out (`--exclude-*`, `--strict`).
    pub exclude: Exclude,
    /// The KLD budget of the one-line answers, in nats (`--kld-budget`).
    pub kld_budget: f64,
    /// `--check`: compare with the files in `out_dir` instead of writing them.
    pub check: bool,
}

/// What to drop: results whose build or tool version contains any of these texts.
#[derive(Debug, Clone, Default)]
pub struct Exclude {
    pub build: Vec<String>,
    pub tool_version: Vec<String>,
    /// `--strict`: leave out flagged runs and rows (see `plausible`) instead of warning.
    pub strict: bool,
}

impl Exclude {
    /// Why the run is excluded, if it is.
    pub fn reason(&self, run: &RunInfo) -> Option<String> {
        let b = &run.llama_cpp;
        let build = [
            b.build_commit.as_deref(),
            Some(b.sys_crate_version.as_str()),
        ];
        for text in &self.build {
            if let Some(v) = build.iter().flatten().find(|v| v.contains(text.as_str())) {
                return Some(format!(
                    "llama.cpp build {v:?} matches --exclude-build {text:?}"
                ));
            }
        }
        let tool = [
            Some(run.tool.version.as_str()),
            run.tool.git_commit.as_deref(),
        ];
        for text in &self.tool_version {
            if let Some(v) = tool.iter().flatten().find(|v| v.contains(text.as_str())) {
                return Some(format!(
                    "tpsbench {v:?} matches --exclude-tool-version {text:?}"
                ));
            }
        }
        None
    }
}
