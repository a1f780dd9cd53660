//! What `tpsbench leaderboard` is asked to do.

use std::path::PathBuf;

use crate::record::RunInfo;

pub use crate::ladder::table::DEFAULT_KLD_BUDGET;

#[derive(Debug, Clone)]
pub struct Options {
    /// Files, or directories searched recursively for `*.json`.
    pub paths: Vec<PathBuf>,
    pub out_dir: PathBuf,
    pub exclude: Exclude,
    /// In nats.
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
