use super::*;
use crate::report::export::fixtures;

/// A run record with `n` distinct tests, made from the fixture's first test.
fn with_tests(n: usize) -> (RunRecord, Vec<TestRecord>) {
    let mut run = fixtures::run();
    let proto = run.tests[0].clone();
    run.tests.clear();
    let tests = (0..n)
        .map(|i| {
            let mut t = proto.clone();
            t.id = format!("m/t{i}");
            t
        })
        .collect();
    (run, tests)
}

#[test]
fn every_finished_test_is_in_the_journal_and_the_file_is_rewritten_only_at_doublings() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let (mut run, tests) = with_tests(11);
    let mut j = Journal::start(&path, &run).unwrap();
    assert_eq!(
        results::read(&path).unwrap().tests.len(),
        0,
        "a complete file at once"
    );
    for t in tests {
        run.tests.push(t);
        j.test_done(&run, run.tests.last().unwrap()).unwrap();
        // Crash here: the journal replays to exactly what was measured.
        assert_eq!(read_resumable(&path).unwrap(), run);
    }
    // Rewritten at 1, 2, 4 and 8 tests: the file lags, the journal does not.
    assert_eq!(results::read(&path).unwrap().tests.len(), 8);
    j.finish(&run).unwrap();
    assert!(
        !journal_path(&path).exists(),
        "the finished file supersedes the journal"
    );
    assert_eq!(results::read(&path).unwrap(), run);
    assert_eq!(read_resumable(&path).unwrap(), run);
}

#[test]
fn a_later_round_and_a_changed_test_replace_their_record_and_models_follow() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let (mut run, tests) = with_tests(3);
    run.tests = tests;
    let mut j = Journal::start(&path, &run).unwrap();
    run.tests[1].error = Some("joined by round 2".into());
    run.models = vec![crate::report::leaderboard::testdata::model("m", "Q4_0")];
    j.test_done(&run, &run.tests[1]).unwrap();
    run.tests[0].error = Some("linked".into());
    j.test_changed(&run.tests[0]).unwrap();
    assert_eq!(read_resumable(&path).unwrap(), run);
}

#[test]
fn a_line_cut_short_by_a_crash_is_ignored_and_the_rest_replays() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let (mut run, tests) = with_tests(3);
    run.tests = tests[..2].to_vec();
    let mut j = Journal::start(&path, &run).unwrap();
    let before = run.clone();
    run.tests.push(tests[2].clone());
    j.test_done(&run, &run.tests[2]).unwrap();
    drop(j);
    // Cut the last line in half, as a crash during its write would.
    let jp = journal_path(&path);
    let bytes = std::fs::read(&jp).unwrap();
    let last = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap();
    let cut = last + (bytes.len() - last) / 2;
    std::fs::write(&jp, &bytes[..cut]).unwrap();
    assert_eq!(read_resumable(&path).unwrap(), before);
}

#[test]
fn a_claimed_name_leaves_no_empty_result_file_and_reads_as_missing() {
    let dir = tempfile::tempdir().unwrap();
    let run = fixtures::run();
    let p = results::new_result_path(dir.path(), &run.run).unwrap();
    assert!(
        !p.exists(),
        "no result file before its first complete write"
    );
    assert!(journal_path(&p).exists(), "the name is held by its journal");
    // A second run of the same second gets another name, and so does one after the first
    // finished (its journal gone, its file there).
    let q = results::new_result_path(dir.path(), &run.run).unwrap();
    assert_ne!(p, q);
    results::write_atomic(&p, &run).unwrap();
    assert!(!journal_path(&p).exists());
    let r = results::new_result_path(dir.path(), &run.run).unwrap();
    assert!(r != p && r != q);
    let e = read_resumable(&q).unwrap_err().to_string();
    assert!(e.contains(&q.display().to_string()), "{e}");
}

#[test]
fn the_bytes_written_per_test_do_not_grow_with_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let n = 1000;
    let (mut run, tests) = with_tests(n);
    let mut j = Journal::start(&path, &run).unwrap();
    let mut written = 0u64;
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let (mut json, mut jl) = (size(&path), size(&journal_path(&path)));
    for t in tests {
        run.tests.push(t);
        j.test_done(&run, run.tests.last().unwrap()).unwrap();
        let (a, b) = (size(&path), size(&journal_path(&path)));
        // A rewrite writes the whole file; an append writes what the journal grew by.
        written += if a != json { a + b } else { b - jl };
        (json, jl) = (a, b);
    }
    let one = serde_json::to_vec(&run.tests[0]).unwrap().len() as u64;
    let per_test = written as f64 / n as f64 / one as f64;
    // Doubling rewrites cost at most about 4 test records per test (2 for the file, 2 for
    // the journal's snapshot); rewriting after every test would cost n / 2 = 500.
    assert!(
        per_test < 6.0,
        "{per_test:.1} test records written per test"
    );
}
