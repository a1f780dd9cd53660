//! Unit tests of merging (the sweep checks have theirs in sweep.rs).

use super::*;
use crate::record::results;
use crate::report::export::fixtures;

fn shard(host: &str, started: &str, ids: &[(&str, &str)]) -> RunRecord {
    let mut r = fixtures::run();
    r.run.system.hostname = host.into();
    r.run.started_at = started.into();
    r.run.finished_at = Some(started.replace("00:00", "00:59"));
    let t = r.tests[0].clone();
    r.tests = ids
        .iter()
        .map(|(identity, time)| {
            let mut x = t.clone();
            x.identity = identity.to_string();
            x.id = format!("m/Q4_1/{identity}");
            x.test_time = time.to_string();
            x
        })
        .collect();
    r
}

#[test]
fn shards_are_concatenated_and_duplicates_keep_the_newest() {
    let a = shard(
        "node1",
        "2026-01-01T10:00:00Z",
        &[("a", "2026-01-01T10:00:01Z"), ("b", "2026-01-01T10:00:02Z")],
    );
    let mut b = shard(
        "node2",
        "2026-01-01T09:00:00Z",
        &[("c", "2026-01-01T09:00:01Z"), ("b", "2026-01-01T11:00:00Z")],
    );
    b.tests[1].avg_ts = Some(1.0);
    let m = merge(
        vec![a, b],
        &[],
        &[],
        vec!["tpsbench".into(), "merge".into()],
        false,
    )
    .unwrap();
    let ids: Vec<&str> = m.record.tests.iter().map(|t| t.identity.as_str()).collect();
    assert_eq!(ids, vec!["a", "b", "c"]);
    assert_eq!(
        m.record.tests[1].avg_ts,
        Some(1.0),
        "the newer b (from node2) wins"
    );
    assert_eq!(
        m.record.run.system.hostname, "node2",
        "earliest run's metadata"
    );
    assert_eq!(m.record.run.started_at, "2026-01-01T09:00:00Z");
    assert_eq!(
        m.record.run.finished_at.as_deref(),
        Some("2026-01-01T10:00:59Z")
    );
    assert_eq!(m.record.run.command, vec!["tpsbench", "merge"]);
    assert_eq!(m.sources.len(), 2);
    assert_eq!(m.sources[0]["run"]["system"]["hostname"], "node1");
    assert!(
        m.warnings.iter().any(|w| w.contains("1 test(s)")),
        "{:?}",
        m.warnings
    );
}

#[test]
fn other_hardware_is_refused_and_other_builds_warned() {
    let a = shard(
        "n",
        "2026-01-01T10:00:00Z",
        &[("a", "2026-01-01T10:00:01Z")],
    );
    let mut b = a.clone();
    b.run.system.cpu_model = "other cpu".into();
    let e = merge(
        vec![a.clone(), b],
        &[PathBuf::from("x.json"), PathBuf::from("y.json")],
        &[],
        vec![],
        false,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.starts_with("y.json was measured on other hardware"),
        "{e}"
    );
    let mut c = a.clone();
    c.run.tool.version = "9.9.9".into();
    let m = merge(vec![a, c], &[], &[], vec![], false).unwrap();
    assert!(m.warnings.iter().any(|w| w.contains("different builds")));
    assert!(merge(vec![], &[], &[], vec![], false).is_err());
}

#[test]
fn an_unfinished_input_leaves_the_merge_unfinished() {
    let a = shard(
        "n",
        "2026-01-01T10:00:00Z",
        &[("a", "2026-01-01T10:00:01Z")],
    );
    let mut b = shard(
        "n",
        "2026-01-01T10:00:00Z",
        &[("b", "2026-01-01T10:00:01Z")],
    );
    b.run.finished_at = None;
    assert_eq!(
        merge(vec![a, b], &[], &[], vec![], false)
            .unwrap()
            .record
            .run
            .finished_at,
        None
    );
}

#[test]
fn merged_file_reads_back_as_a_result() {
    let dir = tempfile::tempdir().unwrap();
    let (pa, pb) = (dir.path().join("a.json"), dir.path().join("b.json"));
    results::write_atomic(
        &pa,
        &shard(
            "n",
            "2026-01-01T10:00:00Z",
            &[("a", "2026-01-01T10:00:01Z")],
        ),
    )
    .unwrap();
    results::write_atomic(
        &pb,
        &shard(
            "n",
            "2026-01-01T10:05:00Z",
            &[("b", "2026-01-01T10:05:01Z")],
        ),
    )
    .unwrap();
    let out = dir.path().join("sub/merged.json");
    merge_files(&out, &[pa.clone(), pb], vec![], false).unwrap();
    let back = results::read(&out).unwrap();
    assert_eq!(back.tests.len(), 2);
    let raw: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(raw["merged_from"][0]["file"], pa.display().to_string());
    std::fs::write(&pa, "{}").unwrap();
    let e = merge_files(&out, &[pa], vec![], false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("a.json"), "{e}");
}

#[test]
fn a_merged_sweep_is_the_whole_plan_and_a_partial_one_lists_what_it_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let sharded = |index: usize, ids: &[(&str, &str)]| {
        let mut r = shard("n", "2026-01-01T10:00:00Z", ids);
        r.run.shard = Some(crate::record::ShardInfo { index, count: 3 });
        r.run.plan_hash = Some("cafe".into());
        r
    };
    let m = merge(
        vec![
            sharded(0, &[("a", "2026-01-01T10:00:01Z")]),
            sharded(1, &[("b", "2026-01-01T10:00:01Z")]),
            sharded(2, &[("c", "2026-01-01T10:00:01Z")]),
        ],
        &[],
        &[],
        vec![],
        false,
    )
    .unwrap();
    assert_eq!(m.record.run.shard, None, "the merge holds the whole plan");
    assert_eq!(m.record.run.plan_hash.as_deref(), Some("cafe"));
    assert!(m.incomplete.is_empty() && m.warnings.is_empty());

    let (pa, pc) = (dir.path().join("a.json"), dir.path().join("c.json"));
    results::write_atomic(&pa, &sharded(0, &[("a", "2026-01-01T10:00:01Z")])).unwrap();
    results::write_atomic(&pc, &sharded(2, &[("c", "2026-01-01T10:00:01Z")])).unwrap();
    let out = dir.path().join("merged.json");
    let e = merge_files(&out, &[pa.clone(), pc.clone()], vec![], false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing shard 1/3"), "{e}");
    assert!(!out.exists(), "a refused merge writes nothing");
    // Shard 1 was stopped before its first test ended: its reserved file is empty.
    let pb = dir.path().join("b.json");
    std::fs::write(&pb, "").unwrap();
    let inputs = [pa, pb, pc];
    let e = merge_files(&out, &inputs, vec![], false)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("missing shard 1/3") && e.contains("b.json is empty (its run stopped"),
        "{e}"
    );
    let warnings = merge_files(&out, &inputs, vec![], true).unwrap();
    assert!(
        warnings[0].contains("missing shard 1/3") && warnings[0].contains("b.json is empty"),
        "{warnings:?}"
    );
    let raw: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(raw["incomplete_shards"], json!(["1/3"]));
    assert_eq!(results::read(&out).unwrap().tests.len(), 2);
}
