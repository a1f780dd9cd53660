//! The committed published runs, for tests that need a real result file: whichever runs the
//! set holds (it is re-made as the machine and the code change), read through `results`.

use std::path::Path;

use super::{RunRecord, results};

/// Every run in results/published/, in file-name order.
pub fn published_runs() -> Vec<RunRecord> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/published");
    let files = results::json_files(&dir).unwrap();
    files.iter().filter_map(|p| results::read(p).ok()).collect()
}
