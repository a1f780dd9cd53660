//! End-to-end tests: the real `tpsbench` binary and the real llama.cpp engine on the tiny
//! model that `tpsbench synth` generates (no download). One file per theme:
//! `run.rs` (a run, its outputs and its refusals), `compare.rs` (compare and baselines),
//! `long_sweeps.rs` (kill and resume, isolation, shards, exit codes), `auto_rounds.rs`
//! (`--rounds auto`).

mod auto_rounds;
mod compare;
mod long_sweeps;
mod run;

use std::path::{Path, PathBuf};

pub use crate::support::{tiny_sweep as workspace, tpsbench};

pub fn result_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}
