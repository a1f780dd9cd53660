use super::*;
use crate::report::export::fixtures;

/// Stands in for child processes: build `fast` runs 10% faster; remembers the order.
pub(crate) struct FakeBuilds {
    pub calls: Vec<PathBuf>,
    pub fail_on_call: Option<usize>,
}

impl Launcher for FakeBuilds {
    fn run(&mut self, lib_dir: &Path, args: &[String]) -> Result<RunRecord, RunnerError> {
        assert_eq!(args[0], "run");
        self.calls.push(lib_dir.to_path_buf());
        let mut rec = fixtures::run();
        let speed = if lib_dir.ends_with("fast") { 1.1 } else { 1.0 };
        let n = self.calls.len() as u64;
        // Slight drift between calls, as a real machine has.
        let samples: Vec<u64> = (0..4)
            .map(|i| ((1_000_000_000 + 1_000_000 * (n + i)) as f64 / speed) as u64)
            .collect();
        rec.tests[0].set_samples(samples);
        if self.fail_on_call == Some(self.calls.len()) {
            rec.tests[0].fail("llama_decode failed");
        }
        Ok(rec)
    }
}

#[test]
fn builds_take_turns_so_each_takes_each_position_equally_often() {
    assert_eq!(order(0, 2), vec![0, 1]);
    assert_eq!(order(1, 2), vec![1, 0]);
    assert_eq!(order(2, 2), vec![0, 1]);
    assert_eq!(order(1, 3), vec![1, 2, 0]);
}

#[test]
fn rounds_are_interleaved_and_samples_pooled_per_build() {
    let libs = vec![PathBuf::from("/l/base"), PathBuf::from("/l/fast")];
    let mut fake = FakeBuilds {
        calls: vec![],
        fail_on_call: None,
    };
    let args = child_args(Path::new("models.toml"), &[]);
    let recs = run_rounds(&libs, 3, &args, None, &mut fake, &mut |_| {}).unwrap();
    let names: Vec<&str> = fake.calls.iter().map(|p| p.to_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "/l/base", "/l/fast", "/l/fast", "/l/base", "/l/base", "/l/fast"
        ]
    );
    assert_eq!(recs.len(), 2);
    for r in &recs {
        assert_eq!(r.tests[0].samples_ns.len(), 12, "4 repetitions × 3 rounds");
        assert_eq!(r.tests[0].samples_ts.len(), 12);
        assert_eq!(r.tests[0].status, Status::Ok);
    }
}

#[test]
fn a_test_that_fails_in_any_round_stays_failed() {
    let libs = vec![PathBuf::from("/l/base"), PathBuf::from("/l/fast")];
    let mut fake = FakeBuilds {
        calls: vec![],
        fail_on_call: Some(3),
    };
    let recs = run_rounds(
        &libs,
        2,
        &[String::from("run")],
        None,
        &mut fake,
        &mut |_| {},
    )
    .unwrap();
    // Call 3 is round 2's first: the fast build.
    assert_eq!(recs[1].tests[0].status, Status::Failed);
    assert_eq!(recs[0].tests[0].status, Status::Ok);
    assert_eq!(recs[0].tests[0].samples_ns.len(), 8);
}

#[test]
fn merging_recomputes_the_figures_from_all_samples() {
    let mut acc = None;
    let mut a = fixtures::run();
    a.tests[0].set_samples(vec![1_000_000_000; 2]);
    let mut b = fixtures::run();
    b.tests[0].set_samples(vec![500_000_000; 3]);
    merge_round(&mut acc, a, None);
    merge_round(&mut acc, b, None);
    let t = &acc.unwrap().tests[0];
    assert_eq!(t.samples_ns.len(), 5);
    // 512 tokens: 512 t/s twice, 1024 t/s three times.
    assert!((t.median_ts.unwrap() - 1024.0).abs() < 1e-9);
    assert!((t.avg_ts.unwrap() - (2.0 * 512.0 + 3.0 * 1024.0) / 5.0).abs() < 1e-9);
}

#[test]
fn children_run_the_same_plan_without_a_file() {
    let a = child_args(Path::new("x/models.toml"), &["pp512".into(), "tg".into()]);
    assert_eq!(
        a.join(" "),
        "run --no-save --quiet --output json --config x/models.toml --filter pp512 --filter tg"
    );
    assert!(!a.iter().any(|x| x == "--library"), "no recursion");
}

#[test]
fn a_library_directory_is_found_directly_or_in_its_lib_folder() {
    let d = tempfile::tempdir().unwrap();
    let e = lib_dir(d.path()).unwrap_err();
    assert!(matches!(e, RunnerError::NoLibrary { .. }), "{e:?}");
    assert!(e.to_string().contains("no libllama"), "{e}");
    std::fs::create_dir(d.path().join("lib")).unwrap();
    std::fs::write(d.path().join("lib/libllama.so.0"), b"").unwrap();
    assert_eq!(lib_dir(d.path()).unwrap(), d.path().join("lib"));
    assert_eq!(
        lib_dir(&d.path().join("lib")).unwrap(),
        d.path().join("lib")
    );
}

#[test]
fn result_files_are_named_after_the_build_directory() {
    assert_eq!(
        file_name(0, Path::new("/x/llama-shared/native/lib")),
        "0-native.json"
    );
    assert_eq!(file_name(1, Path::new("/x/no native")), "1-no_native.json");
}

#[cfg(not(feature = "dynamic-link"))]
#[test]
fn a_static_build_refuses_library_ab_with_the_fix() {
    let o = AbOptions {
        libraries: vec!["a".into(), "b".into()],
        rounds: 3,
        config: "models.toml".into(),
        filters: vec![],
        results_dir: None,
        quiet: true,
    };
    let e = measure(&o).err().unwrap();
    assert!(
        matches!(
            e,
            RunnerError::Options(OptionError::LibraryNeedsDynamicLink)
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("--features dynamic-link"), "{e}");
}
