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
        let (b, tool) = (&run.llama_cpp, &run.tool);
        let checks = [
            (
                &self.build,
                [
                    b.build_commit.as_deref(),
                    Some(b.sys_crate_version.as_str()),
                ],
                "llama.cpp build",
                "--exclude-build",
            ),
            (
                &self.tool_version,
                [Some(tool.version.as_str()), tool.git_commit.as_deref()],
                "tpsbench",
                "--exclude-tool-version",
            ),
        ];
        for (texts, values, what, flag) in checks {
            for text in texts {
                if let Some(v) = values.iter().flatten().find(|v| v.contains(text.as_str())) {
                    return Some(format!("{what} {v:?} matches {flag} {text:?}"));
                }
            }
        }
        None
    }
}
