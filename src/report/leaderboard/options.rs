//! What `tpsbench leaderboard` is asked to do.

use std::path::PathBuf;

use crate::record::RunInfo;

pub use crate::ladder::table::DEFAULT_KLD_BUDGET;

#[derive(clap::Args, Debug, Clone)]
pub struct Options {
    /// Result files, or directories searched recursively for *.json.
    #[arg(default_value = "results")]
    pub paths: Vec<PathBuf>,
    /// Where LEADERBOARD.md and index.html go.
    #[arg(long, default_value = "results")]
    pub out_dir: PathBuf,
    #[command(flatten)]
    pub exclude: Exclude,
    /// The KLD budget of the one-line answer, in nats: the fastest quantization whose mean
    /// KLD is within it is named (with the ones it ties with). Example: --kld-budget 0.1
    // After the exclusions, before --strict (flattened above them): equal orders go by name.
    #[arg(long, value_name = "NATS", default_value_t = DEFAULT_KLD_BUDGET, display_order = 3)]
    pub kld_budget: f64,
    /// Write nothing: exit 1 if LEADERBOARD.md or index.html in --out-dir differ from what
    /// the result files build (for CI). Example: tpsbench leaderboard results/published
    /// --out-dir results/published --check
    #[arg(long)]
    pub check: bool,
}

/// What to drop: results whose build or tool version contains any of these texts.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Exclude {
    /// Leave out results whose llama.cpp build (build_commit or llama-cpp-sys-2 version)
    /// contains this text (repeatable).
    #[arg(long = "exclude-build", value_name = "TEXT")]
    pub build: Vec<String>,
    /// Leave out results whose tpsbench version or git commit contains this text
    /// (repeatable).
    #[arg(long = "exclude-tool-version", value_name = "TEXT")]
    pub tool_version: Vec<String>,
    /// Leave out flagged runs and rows (roofline at or above 100%, dirty build, started
    /// above a load average of 1.0, unmarked fixture or synthetic model, duplicates)
    /// instead of warning about them.
    #[arg(long)]
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
