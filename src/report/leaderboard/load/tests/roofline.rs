//! The roofline a decode row is held to: recorded, or estimated from the weights' size and
//! the machine's bandwidth (`load/roofline.rs`).

use super::*;

#[test]
fn a_decode_at_or_above_its_roofline_is_flagged_on_its_row_only() {
    let r = run(
        "h",
        T0,
        vec![],
        vec![
            test("m", 0, 128, 0, 1, 104.0, T0),
            test("m", 64, 0, 0, 1, 500.0, T0),
        ],
    );
    let roofed = |v: &mut serde_json::Value| {
        v["tests"][0]["resources"] = serde_json::json!({
            "peak_rss_bytes": null, "kv_cache_bytes": null, "energy": null,
            "joules_per_token": null, "prefill": null,
            "roofline": {"bytes_per_token": 2.7e8, "bandwidth_gbs": 27.7,
                "bandwidth_source": "probe", "roofline_ts": 102.6,
                "achieved_gbs": 28.1, "percent_of_roofline": 101.4}
        });
    };
    // The typed record is what the board reads the roofline from.
    let mut typed = r.clone();
    let mut raw = serde_json::to_value(&typed).unwrap();
    roofed(&mut raw);
    typed = serde_json::from_value(raw).unwrap();
    let b = board(
        vec![file("ladder.json", typed.clone(), |_| {})],
        &Exclude::default(),
    );
    assert_eq!(b.warnings.len(), 1, "{:#?}", b.warnings);
    assert!(
        b.warnings[0]
            .starts_with("ladder.json: m/tg128/t=1: decode at 101% of its bandwidth roofline"),
        "{}",
        b.warnings[0]
    );
    assert_eq!(
        flag_badges(&b),
        [
            ("m/pp64/t=1".to_string(), vec![]),
            ("m/tg128/t=1".to_string(), vec!["implausible"])
        ]
    );
    let b = board(vec![file("ladder.json", typed, |_| {})], &strict());
    let ids: Vec<_> = b.entries.iter().map(|e| e.test.id.as_str()).collect();
    assert_eq!(ids, ["m/pp64/t=1"]);
    assert_eq!(b.files_excluded, 0, "only the row is left out");
    let line = crate::report::leaderboard::sections::summary_line(&b);
    assert!(line.ends_with(", 1 row left out."), "{line}");
    assert!(!line.contains("excluded"), "no file was excluded: {line}");
}

#[test]
fn a_decode_without_a_roofline_is_held_to_one_estimated_from_its_size_and_the_bandwidth() {
    // The ladder run measured no bandwidth; an older run of the machine did (27.7 GB/s).
    let mut probe = run("vm", T0, vec![], vec![test("m", 64, 0, 0, 1, 1.0, T0)]);
    probe.run.host_bandwidth = Some(
        serde_json::from_value(serde_json::json!({
            "read_gbs": 27.7, "copy_gbs": 41.9, "threads": 2, "buffer_bytes": 536870912u64,
            "llc_bytes": 33554432u64, "machine": "vm", "measured_at": T0
        }))
        .unwrap(),
    );
    let mut fast = test("f16", 0, 128, 0, 1, 104.0, T1);
    fast.model_size = Some(269_100_288); // 104 t/s × 269 MB = 28.0 GB/s: 101%
    let mut slow = test("q8", 0, 128, 0, 1, 50.0, T1);
    slow.model_size = Some(143_025_408);
    let ladder = run("vm", T1, vec![], vec![fast, slow]);
    let files = || {
        vec![
            file("probe.json", probe.clone(), |_| {}),
            file("ladder.json", ladder.clone(), |_| {}),
        ]
    };
    let b = board(files(), &Exclude::default());
    assert_eq!(
        b.machines[0].bandwidth_gbs,
        Some(27.7),
        "from the older run"
    );
    assert!(
        b.machines[0]
            .facts
            .contains(&("host bandwidth".into(), "27.7 GB/s read (measured)".into()))
    );
    let est: Vec<_> = b
        .entries
        .iter()
        .map(|e| {
            (
                e.test.model.as_str(),
                e.roofline_estimate.map(|p| p.round()),
            )
        })
        .collect();
    assert_eq!(est, [("f16", Some(101.0)), ("m", None), ("q8", Some(26.0))]);
    assert_eq!(b.warnings.len(), 1, "{:#?}", b.warnings);
    assert!(b.warnings[0].starts_with("ladder.json: f16/tg128/t=1: decode at 101% or more"));
    assert_eq!(flag_badges(&b)[0].1, ["implausible"]);
    let b = board(files(), &strict());
    let ids: Vec<_> = b.entries.iter().map(|e| e.test.model.as_str()).collect();
    assert_eq!(ids, ["m", "q8"]);
}
