//! Arbitrary bytes as a result file, through the loader every report reads with
//! (`record::verify::read`: the schema, then each test's figures recomputed from its
//! samples), and on a file that loads, the redaction `publish` applies and the check
//! `leaderboard --check` makes. All must return Ok or Err, never panic, and never size an
//! allocation by a number the file claims.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tpsbench::record::{redact, verify};

fuzz_target!(|data: &[u8]| {
    // The loader reads a path: one scratch file per fuzzing process.
    let path = std::env::temp_dir().join(format!("tpsbench-fuzz-{}.json", std::process::id()));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    if let Ok(run) = verify::read(&path) {
        let mut v = serde_json::to_value(&run).expect("a record serializes");
        redact::redact(&mut v, "label", false);
        let _ = redact::exposed(&v);
    }
});
