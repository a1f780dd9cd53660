use super::*;
use crate::runner::library_ab::{child_args, tests::FakeBuilds};
use std::path::{Path, PathBuf};

#[test]
fn each_build_is_compared_with_the_first_paired_by_round() {
    let libs = vec![PathBuf::from("/l/base"), PathBuf::from("/l/fast")];
    let mut fake = FakeBuilds {
        calls: vec![],
        fail_on_call: None,
    };
    let args = child_args(Path::new("models.toml"), &[]);
    let recs = run_rounds(&libs, 3, &args, None, &mut fake, &mut |_| {}).unwrap();
    let report = report(&["base".into(), "fast".into()], &recs);
    let row = report
        .lines()
        .find(|l| l.starts_with("| m/pp512"))
        .unwrap_or_else(|| panic!("{report}"));
    assert!(row.contains(" 1.100 |"), "{row}");
    assert!(row.contains("between rounds, paired"), "{row}");
    assert!(row.contains("faster"), "{row}");
}
