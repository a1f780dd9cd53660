use super::*;
use crate::report::leaderboard::testdata::{file, model, run, test};
use serde_json::Value;

const T0: &str = "2026-01-01T10:00:00Z";
const T1: &str = "2026-01-02T10:00:00Z";

#[test]
fn dedupe_keeps_the_newest_measurement_per_machine_and_identity() {
    let old = run(
        "h",
        T0,
        vec![model("m", "Q4_1")],
        vec![test("m", 64, 0, 0, 1, 100.0, T0)],
    );
    let new = run(
        "h",
        T1,
        vec![model("m", "Q4_1")],
        vec![test("m", 64, 0, 0, 1, 120.0, T1)],
    );
    // Order of the files must not matter.
    for files in [
        vec![
            file("old.json", old.clone(), |_| {}),
            file("new.json", new.clone(), |_| {}),
        ],
        vec![
            file("new.json", new.clone(), |_| {}),
            file("old.json", old.clone(), |_| {}),
        ],
    ] {
        let b = board(files, &Exclude::default());
        assert_eq!(b.entries.len(), 1);
        assert_eq!(b.entries[0].test.avg_ts, Some(120.0));
        assert_eq!(b.entries[0].file, PathBuf::from("new.json"));
        assert_eq!(b.superseded, 1);
    }
}

#[test]
fn equal_test_times_fall_back_to_the_run_start_and_offsets_are_honoured() {
    let a = run("h", T0, vec![], vec![test("m", 64, 0, 0, 1, 1.0, T1)]);
    let b2 = run("h", T1, vec![], vec![test("m", 64, 0, 0, 1, 2.0, T1)]);
    let b = board(
        vec![file("b", b2, |_| {}), file("a", a, |_| {})],
        &Exclude::default(),
    );
    assert_eq!(b.entries[0].test.avg_ts, Some(2.0));
    // 11:00+02:00 is 09:00Z, earlier than 10:00Z despite sorting later as text.
    assert!(newer("2026-01-01T11:00:00+02:00", "", T0, "").is_lt());
}

#[test]
fn machines_are_kept_apart_by_host_cpu_and_gpu() {
    let t = || vec![test("m", 64, 0, 0, 1, 1.0, T0)];
    let a = run("a", T0, vec![], t());
    let b2 = run("b", T0, vec![], t());
    let mut gpu = run("a", T0, vec![], t());
    gpu.run.devices.push(crate::record::DeviceInfo {
        name: "CUDA0".into(),
        description: "NVIDIA H200".into(),
        backend: "CUDA".into(),
        kind: crate::engine::DeviceKind::Gpu,
        memory_total: 1,
        memory_free: 1,
    });
    let b = board(
        vec![
            file("a", a, |_| {}),
            file("b", b2, |_| {}),
            file("g", gpu, |_| {}),
        ],
        &Exclude::default(),
    );
    assert_eq!(b.machines.len(), 3);
    assert_eq!(b.entries.len(), 3);
    assert!(
        b.machines
            .iter()
            .any(|m| m.label() == "a: cpu + NVIDIA H200")
    );
}

#[test]
fn failed_tests_show_only_without_a_successful_measurement() {
    let mut f1 = test("m", 64, 0, 0, 1, 1.0, T1);
    f1.fail("oom");
    let mut f2 = test("m", 0, 16, 0, 1, 1.0, T1);
    f2.fail("oom");
    let ok = test("m", 64, 0, 0, 1, 5.0, T0);
    let b = board(
        vec![file("x", run("h", T0, vec![], vec![ok, f1, f2]), |_| {})],
        &Exclude::default(),
    );
    assert_eq!(b.entries.len(), 1, "the older success stays");
    assert_eq!(b.failures.len(), 1);
    assert_eq!(b.failures[0].test.test, "tg16");
}

#[test]
fn excluded_builds_and_tool_versions_are_dropped_with_a_reason() {
    let mut stale = run("h", T0, vec![], vec![test("m", 64, 0, 0, 1, 1.0, T0)]);
    stale.run.llama_cpp.build_commit = Some("llama-cpp-rs@deadbeef".into());
    let mut old_tool = stale.clone();
    old_tool.run.llama_cpp.build_commit = None;
    old_tool.run.tool.git_commit = Some("v0.0.9-dirty".into());
    let keep = run("h", T1, vec![], vec![test("m", 64, 0, 0, 1, 2.0, T1)]);
    let ex = Exclude {
        build: vec!["deadbeef".into()],
        tool_version: vec!["dirty".into()],
        ..Exclude::default()
    };
    let b = board(
        vec![
            file("stale", stale, |_| {}),
            file("old", old_tool, |_| {}),
            file("keep", keep, |_| {}),
        ],
        &ex,
    );
    assert_eq!(b.excluded.len(), 2, "{:?}", b.excluded);
    assert!(
        b.excluded[0].starts_with("stale: llama.cpp build"),
        "{:?}",
        b.excluded
    );
    assert!(b.excluded[1].contains("--exclude-tool-version \"dirty\""));
    assert_eq!(b.entries.len(), 1);
    assert_eq!(b.entries[0].test.avg_ts, Some(2.0));
}

#[test]
fn extension_fields_are_read_from_the_typed_record_when_present() {
    let b = two_test_board(|v| {
        v["models"][0]["quality"] = crate::report::leaderboard::testdata::quality(0.01);
        v["models"][0]["bytes_per_token"] = serde_json::json!(4.0);
        v["tests"][1]["serving"] = crate::report::leaderboard::testdata::serving(4, 5.0, 18.0);
        v["tests"][1]["unknown_future_field"] = serde_json::json!({"x": 1});
    });
    assert_eq!(b.entries.len(), 2);
    assert_eq!(b.entries[0].quant, "Q8_0");
    assert_eq!(b.entries[0].quality().map(|q| q.kld_mean), Some(0.01));
    assert_eq!(b.entries[0].bytes_per_s(), Some(40.0));
    assert_eq!(b.entries[0].serving(), None);
    let s = b.entries[1].serving().unwrap();
    assert_eq!((s.n_parallel, s.aggregate_ts), (4, Some(18.0)));
}

#[test]
fn invalid_files_are_reported_and_skipped_and_directories_are_searched() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("a/b");
    std::fs::create_dir_all(&sub).unwrap();
    let mut good = run(
        "h",
        T0,
        vec![model("m", "Q4_1")],
        vec![test("m", 64, 0, 0, 1, 1.0, T0)],
    );
    // Figures its samples give: the loader recomputes them (record::verify).
    let t = &mut good.tests[0];
    t.set_samples(vec![125_000_000, 125_000_000]);
    (t.stats, t.rounds) = (None, Vec::new());
    crate::record::results::write_atomic(&sub.join("good.json"), &good).unwrap();
    std::fs::write(dir.path().join("bad.json"), r#"{"schema_version": 99}"#).unwrap();
    std::fs::write(dir.path().join("garbage.json"), "not json").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "ignored").unwrap();
    let b =
        crate::report::leaderboard::load(&[dir.path().to_path_buf()], &Exclude::default()).unwrap();
    assert_eq!(b.files_read, 1);
    assert_eq!(b.entries.len(), 1);
    assert_eq!(b.invalid.len(), 2, "{:?}", b.invalid);
    assert!(b.invalid[0].contains("bad.json") && b.invalid[0].contains("schema_version 99"));
    assert!(b.invalid[1].contains("garbage.json"));

    std::fs::remove_file(sub.join("good.json")).unwrap();
    let f = crate::report::leaderboard::load(&[dir.path().to_path_buf()], &Exclude::default())
        .unwrap_err();
    assert!(
        f.error.starts_with("no valid result file among 2 files"),
        "{}",
        f.error
    );
    assert_eq!(f.invalid.len(), 2);
    let missing = crate::report::leaderboard::load(&[dir.path().join("nope")], &Exclude::default());
    assert!(missing.unwrap_err().error.contains("no such file"));
}

#[test]
fn gpu_placement_settings_get_a_column_only_when_they_vary() {
    let base = test("m", 64, 0, 0, 1, 1.0, T0);
    let mut nkvo = base.clone();
    nkvo.params.no_kv_offload = true;
    nkvo.identity.push_str("|nkvo");
    let b = board(
        vec![file(
            "a",
            run("h", T0, vec![model("m", "Q4_1")], vec![base, nkvo]),
            |_| {},
        )],
        &Exclude::default(),
    );
    let entries: Vec<&Entry> = b.entries.iter().collect();
    let t = crate::report::leaderboard::table::detail(&entries);
    assert!(t.headers.contains(&"nkvo".to_string()), "{:?}", t.headers);
    assert!(!t.headers.contains(&"sm".to_string()) && !t.headers.contains(&"mg".to_string()));
    let single = crate::report::leaderboard::table::detail(&entries[..1]);
    assert!(!single.headers.contains(&"nkvo".to_string()));
}

#[test]
fn runs_keep_their_load_average_and_models_their_badges() {
    let mut quiet = run(
        "h",
        T1,
        vec![model("m", "Q4_1")],
        vec![test("m", 64, 0, 0, 1, 1.0, T1)],
    );
    quiet.run.load_average = Some([0.05, 0.1, 0.2]);
    let old = run(
        "h",
        T0,
        vec![model("s", "F32")],
        vec![test("s", 64, 0, 0, 1, 1.0, T0)],
    );
    let b = board(
        vec![
            file("quiet.json", quiet, |_| {}),
            file("old.json", old, |v| {
                v["models"][0]["provenance"] =
                    serde_json::json!({"synthetic": true, "requantized": true});
            }),
        ],
        &Exclude::default(),
    );
    let files: Vec<_> = b
        .runs
        .iter()
        .map(|r| r.file.display().to_string())
        .collect();
    assert_eq!(files, ["old.json", "quiet.json"], "by start time");
    assert_eq!(b.runs[0].load_average, None);
    assert_eq!(b.runs[1].load_average, Some([0.05, 0.1, 0.2]));
    let s = b.entries.iter().find(|e| e.test.model == "s").unwrap();
    assert_eq!(s.badges, ["synthetic", "requantized"]);
    let m = b.entries.iter().find(|e| e.test.model == "m").unwrap();
    assert!(m.badges.is_empty());
    let md = crate::report::leaderboard::sections::markdown(&b);
    assert!(
        md.contains(" 0.05 0.10 0.20 |") && md.contains(" not recorded |"),
        "{md}"
    );
    assert!(md.contains("s [synthetic] [requantized]"), "{md}");
}

#[test]
fn a_directory_without_result_files_gives_a_page_that_says_no_results_yet() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "not a result").unwrap();
    let b =
        crate::report::leaderboard::load(&[dir.path().to_path_buf()], &Exclude::default()).unwrap();
    assert!(b.entries.is_empty() && b.machines.is_empty());
    let md = crate::report::leaderboard::sections::markdown(&b);
    assert!(md.contains("No results yet"), "{md}");
    assert!(!md.contains("## Summary ranking"));
    let html = crate::report::leaderboard::page::render(&b);
    assert!(html.contains("No results yet") && html.contains(r#"data-charts-expected="0""#));
}

#[test]
fn quality_tests_are_neither_measurements_nor_failures() {
    let mut q = test("m", 256, 0, 0, 1, 1.0, T0);
    q.kind = crate::plan::TestKind::Quality;
    q.test = "quality".into();
    q.identity = "q".into();
    q.avg_ts = None;
    let mut bad = q.clone();
    bad.identity = "bad".into();
    bad.fail("no reference");
    let r = run(
        "h",
        T0,
        vec![model("m", "Q4_1")],
        vec![q, bad, test("m", 0, 16, 0, 1, 9.0, T0)],
    );
    let b = board(vec![file("x", r, |_| {})], &Exclude::default());
    assert_eq!(b.entries.len(), 1, "only the decode test");
    assert_eq!(
        b.failures.len(),
        1,
        "a failed quality test is still reported"
    );
    assert_eq!(b.failures[0].test.error.as_deref(), Some("no reference"));
}

/// The badges of the board's entries, by test id.
fn flag_badges(b: &Board) -> Vec<(String, Vec<&'static str>)> {
    b.entries
        .iter()
        .map(|e| (e.test.id.clone(), e.flags.iter().map(Flag::badge).collect()))
        .collect()
}

fn strict() -> Exclude {
    Exclude {
        strict: true,
        ..Exclude::default()
    }
}

#[test]
fn a_dirty_build_or_a_busy_start_is_a_warning_per_run_and_strict_leaves_the_run_out() {
    let mut dirty = run("h", T0, vec![], vec![test("m", 64, 0, 0, 1, 1.0, T0)]);
    dirty.run.tool.git_commit = Some("f1437dc0745f-dirty".into());
    let mut busy = run("h", T1, vec![], vec![test("m", 0, 16, 0, 1, 2.0, T1)]);
    busy.run.load_average = Some([2.5, 1.0, 0.5]);
    let clean = run("h", T1, vec![], vec![test("m", 0, 32, 0, 1, 3.0, T1)]);
    let files = || {
        vec![
            file("dirty.json", dirty.clone(), |_| {}),
            file("busy.json", busy.clone(), |_| {}),
            file("clean.json", clean.clone(), |_| {}),
        ]
    };
    let b = board(files(), &Exclude::default());
    assert_eq!(
        b.warnings,
        [
            "dirty.json: dirty build: tpsbench f1437dc0745f-dirty",
            "busy.json: started at a load average of 2.50 (above 1)",
        ]
    );
    assert_eq!(b.entries.len(), 3);
    let badges = flag_badges(&b);
    assert!(
        badges.contains(&("m/pp64/t=1".into(), vec!["dirty"])),
        "{badges:?}"
    );
    assert!(
        badges.contains(&("m/tg16/t=1".into(), vec!["busy"])),
        "{badges:?}"
    );
    assert!(
        badges.contains(&("m/tg32/t=1".into(), vec![])),
        "{badges:?}"
    );
    let runs: Vec<_> = b.runs.iter().map(|r| r.badges.clone()).collect();
    assert!(runs.contains(&vec!["dirty".to_string()]), "{runs:?}");

    let b = board(files(), &strict());
    assert!(b.warnings.is_empty());
    assert_eq!(b.files_excluded, 2);
    assert_eq!(b.entries.len(), 1);
    assert_eq!(b.entries[0].test.id, "m/tg32/t=1");
    assert!(b.excluded[0].starts_with("dirty.json: left out by --strict: dirty build"));
    assert!(b.excluded[1].starts_with("busy.json: left out by --strict: started at a load"));
}

#[test]
fn a_fixture_and_an_unmarked_synthetic_model_are_flagged_and_a_marked_one_is_not() {
    let mut fixture = run(
        "fixture-cpu",
        T0,
        vec![],
        vec![test("m", 64, 0, 0, 1, 1.0, T0)],
    );
    fixture.run.tool.git_commit = Some("fixture".into());
    let models = vec![
        model("random-weights", "F32"),
        model("synthetic-llama", "Q4_K"),
    ];
    let tests = vec![
        test("random-weights", 64, 0, 0, 1, 1.0, T0),
        test("synthetic-llama", 64, 0, 0, 1, 1.0, T0),
    ];
    let synth = run("h", T0, models, tests);
    let files = || {
        vec![
            file("fixture.json", fixture.clone(), |_| {}),
            file("synth.json", synth.clone(), |v| {
                v["models"][0]["model_n_params"] = 1_372_928.into();
                v["models"][1]["provenance"] = serde_json::json!({"synthetic": true});
            }),
        ]
    };
    let b = board(files(), &Exclude::default());
    assert_eq!(b.warnings.len(), 2, "{:#?}", b.warnings);
    assert!(b.warnings[0].starts_with("fixture.json: a test fixture"));
    assert!(
        b.warnings[1].starts_with(
            "synth.json: random-weights/pp64/t=1: model random-weights looks synthetic"
        ),
        "{}",
        b.warnings[1]
    );
    let b = board(files(), &strict());
    let ids: Vec<_> = b.entries.iter().map(|e| e.test.id.as_str()).collect();
    assert_eq!(ids, ["synthetic-llama/pp64/t=1"], "the marked one stays");
    assert_eq!(b.files_excluded, 1, "the fixture file");
    assert_eq!(b.excluded.len(), 2, "{:#?}", b.excluded);
}

#[test]
fn the_same_measurement_read_twice_is_a_duplicate_kept_once() {
    let r = run("h", T0, vec![], vec![test("m", 64, 0, 0, 1, 1.0, T0)]);
    let files = || {
        vec![
            file("a.json", r.clone(), |_| {}),
            file("copy/a.json", r.clone(), |_| {}),
        ]
    };
    let b = board(files(), &Exclude::default());
    assert_eq!(b.entries.len(), 1);
    assert_eq!(
        b.warnings,
        [
            "copy/a.json: m/pp64/t=1: duplicate of m/pp64/t=1 in a.json (same machine, test and test time)"
        ]
    );
    assert_eq!(
        flag_badges(&b),
        [("m/pp64/t=1".to_string(), vec!["duplicate"])]
    );
    let b = board(files(), &strict());
    assert_eq!(b.entries.len(), 1, "one copy is kept");
    assert!(b.entries[0].flags.is_empty());
    assert!(
        b.excluded[0].contains("left out by --strict: duplicate"),
        "{:?}",
        b.excluded
    );
}

/// A board of one file with two tests of model "m" (Q8_0), edited by `edit`.
fn two_test_board(edit: impl FnOnce(&mut Value)) -> Board {
    let r = run(
        "h",
        T0,
        vec![model("m", "Q8_0")],
        vec![
            test("m", 0, 16, 0, 1, 10.0, T0),
            test("m", 0, 16, 0, 2, 20.0, T0),
        ],
    );
    board(vec![file("x", r, edit)], &Exclude::default())
}

#[test]
fn serving_rows_show_ttft_per_request_rates_and_for_served_tests_transport_and_ratios() {
    let b = two_test_board(|v| {
        let mut inproc = crate::report::leaderboard::testdata::serving(4, 5.0, 18.0);
        inproc["ttft_ms"] = serde_json::json!({"p50": 120.0, "p90": 180.5});
        v["tests"][0]["serving"] = inproc.clone();
        let mut served = inproc;
        served["transport"] = "http".into();
        served["server"] = serde_json::json!({"served_model": "m", "build": "b7100"});
        served["vs_in_process"] = serde_json::json!({
            "test": "m/x",
            "ttft": {"ratio": 1.21, "lo": 1.1, "hi": 1.33, "n_served": 40, "n_in_process": 40},
            "per_request_ts": {"ratio": 0.93, "lo": 0.9, "hi": 0.96, "n_served": 40, "n_in_process": 40}
        });
        v["tests"][1]["serving"] = served;
    });
    let es: Vec<&Entry> = b.entries.iter().collect();
    let t = crate::report::leaderboard::table::detail(&es);
    let col = |name: &str| t.headers.iter().position(|h| h == name).expect(name);
    let (ttft, per, tr, vs) = (
        col("TTFT p50 / p90 ms"),
        col("per-request t/s"),
        col("transport"),
        col("served / in-process (95% interval)"),
    );
    assert_eq!(t.rows[0][ttft].text, "120.0 / 180.5");
    assert_eq!(t.rows[0][per].text, "5.00");
    assert_eq!(t.rows[0][tr].text, "in-process");
    assert_eq!(t.rows[1][tr].text, "http (b7100)");
    assert_eq!(
        t.rows[1][vs].text,
        "TTFT ×1.21 (1.10–1.33) · per-request ×0.93 (0.90–0.96)"
    );
    assert_eq!(t.rows[0][vs].text, "");
}

#[test]
fn goodput_rows_show_the_highest_rate_within_the_slo_or_that_none_met_it() {
    let b = two_test_board(|v| {
        let mut s = crate::report::leaderboard::testdata::serving(8, 5.0, 18.0);
        s["mode"] = "goodput".into();
        s["goodput"] = serde_json::json!({"max_rate": 0.917, "goodput": 0.842,
                "failed_rate": 1.189, "stopped": "steps", "steps": []});
        v["tests"][0]["serving"] = s.clone();
        s["goodput"] = serde_json::json!({"max_rate": null, "goodput": null,
                "failed_rate": 0.25, "stopped": "not met at min_rate", "steps": []});
        v["tests"][1]["serving"] = s;
    });
    let es: Vec<&Entry> = b.entries.iter().collect();
    let t = crate::report::leaderboard::table::detail(&es);
    let col = t
        .headers
        .iter()
        .position(|h| h == "goodput: max req/s within the SLO")
        .unwrap();
    assert_eq!(t.rows[0][col].text, "0.92 (0.84 good/s)");
    assert_eq!(t.rows[1][col].text, "none (below at 0.25)");
}

#[test]
fn a_file_of_many_duplicates_gets_one_line_with_their_count() {
    // a file of 40,000 copies printed 40,000 lines.
    let t = test("m", 64, 0, 0, 1, 1.0, T0);
    let r = run("h", T0, vec![], vec![t.clone(), t.clone(), t.clone(), t]);
    let files = || {
        vec![
            file("a.json", r.clone(), |_| {}),
            file("b.json", r.clone(), |_| {}),
        ]
    };
    let b = board(files(), &Exclude::default());
    assert_eq!(b.entries.len(), 1);
    assert_eq!(
        b.warnings,
        [
            "a.json: duplicate of measurements in a.json (same machine, test and test time): 3 tests, the first m/pp64/t=1",
            "b.json: duplicate of measurements in a.json (same machine, test and test time): 4 tests, the first m/pp64/t=1",
        ]
    );
    // The copy kept names each other file once.
    let details: Vec<&str> = b.entries[0].flags.iter().map(Flag::detail).collect();
    assert_eq!(details, ["also in a.json", "also in b.json"], "{details:?}");
    let b = board(files(), &strict());
    assert_eq!(b.entries.len(), 1);
    assert_eq!(b.excluded.len(), 2, "{:?}", b.excluded);
}

mod roofline;
