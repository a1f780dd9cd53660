//! The tune end to end on the mock engine: the runner's treatment of what the pure parts
//! (bisect::boundary, the limits) only decide.

use super::*;
use crate::config::parse;
use crate::engine::tests::mock::MockEngine;
use crate::gguf::{tiny, writer::write_gguf};
use crate::output::progress::NoProgress;
use crate::record::tune::Probe;
use crate::report::export::fixtures;

/// A directory holding "mock.gguf" (a valid GGUF the mock engine loads) and a tune of
/// `sweep` on it with `tune` as its [tune] table.
fn tune_setup(sweep: &str, tune: &str) -> (tempfile::TempDir, RunOptions) {
    let dir = tempfile::tempdir().unwrap();
    let mut f = std::fs::File::create(dir.path().join("mock.gguf")).unwrap();
    write_gguf(&mut f, &tiny::document(1)).unwrap();
    let src = format!("[sweep]\n{sweep}\n[[model]]\nname='m'\npath='mock.gguf'\n[tune]\n{tune}\n");
    let cfg = parse(&dir.path().join("models.toml"), &src, 2).unwrap();
    let mut o = RunOptions::new(cfg, Some(dir.path().join("results")));
    o.quiet = true;
    (dir, o)
}

/// The candidate id of `ngl` in `b`.
fn id_of(b: &crate::record::tune::Bisection, ngl: i64) -> String {
    let i = b.values.iter().position(|&v| v == ngl).unwrap();
    b.ids[i].clone()
}

#[test]
fn a_probe_that_fails_to_load_is_recorded_and_the_bisection_goes_on_below_it() {
    let (_dir, o) = tune_setup(
        "n_gpu_layers=[0,1,2,3,4,5,6,7]\nn_gen=8\nrepetitions=1",
        "objective='tg8'\nmax_rounds=3",
    );
    let mut e = MockEngine::new(1_000_000, 10_000_000);
    e.jitter_ns = 100_000;
    // More than 4 layers on the device: the load fails (out of device memory).
    e.max_gpu_layers = Some(4);
    let run = tune(&e, fixtures::run().run, &o, &mut NoProgress).unwrap();
    let r = &run.record;
    let t = r.run.tune.as_ref().unwrap();
    assert_eq!(t.bisections.len(), 1, "{t:?}");
    let b = &t.bisections[0];
    assert_eq!(b.axis, "n_gpu_layers");
    assert_eq!(b.values, vec![0, 1, 2, 3, 4, 5, 6, 7]);
    // The most offload first (fails), then halving: 3 loads, 5 fails, 4 loads.
    let probe = |ngl, ok: bool| Probe {
        id: id_of(b, ngl),
        ok,
        failed: (!ok).then_some(crate::record::tune::ProbeFailure::Load),
    };
    assert_eq!(
        b.probes,
        vec![
            probe(7, false),
            probe(3, true),
            probe(5, false),
            probe(4, true)
        ]
    );
    assert_eq!(b.boundary, Some(id_of(b, 4)));
    assert_eq!(b.raced, vec![id_of(b, 3), id_of(b, 4)]);
    // Only the boundary and its neighbour race; the probes were their first rounds.
    let raced: Vec<&str> = t.candidates.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(raced, vec![id_of(b, 3), id_of(b, 4)]);
    assert!(t.candidates.iter().all(|c| c.probe_rounds == 1), "{t:?}");
    assert!(t.winner.is_some(), "{t:?}");
    // Each failed probe is a failed test in the file, saying that the load failed.
    for ngl in [5, 7] {
        let x = r.tests.iter().find(|x| x.id == id_of(b, ngl)).unwrap();
        assert_eq!(x.status, Status::Failed);
        let why = x.error.as_deref().unwrap();
        assert!(
            why.contains("could not load") && why.contains("out of device memory"),
            "{why}"
        );
    }
    // The values never probed left no test.
    for ngl in [0, 1, 2, 6] {
        assert!(!r.tests.iter().any(|x| x.id == id_of(b, ngl)), "ngl {ngl}");
    }
    // Loads: each probe once, and the load times (3 cold, 3 warm) of what races only, not
    // of the values bisection left out.
    let loads = |ngl: i32| {
        (e.log.borrow().load_params.iter())
            .filter(|l| l.params.n_gpu_layers == ngl)
            .count()
    };
    for ngl in [0, 1, 2, 6] {
        assert_eq!(loads(ngl), 0, "ngl {ngl}");
    }
    assert_eq!((loads(5), loads(7)), (1, 1));
    let raced_rounds = |ngl| {
        r.tests
            .iter()
            .find(|x| x.id == id_of(b, ngl))
            .unwrap()
            .round_medians()
            .len()
    };
    for ngl in [3, 4] {
        assert_eq!(loads(ngl as i32), 6 + raced_rounds(ngl), "ngl {ngl}");
    }
    assert_eq!(t.loads.len(), 2, "{:?}", t.loads);
    // The answer names the failed load, not a bare failure.
    let answer = crate::report::tune::answer(r).unwrap();
    assert!(
        answer.contains("probes ngl 7 failed to load, ngl 3 ok, ngl 5 failed to load, ngl 4 ok"),
        "{answer}"
    );
    assert!(
        answer.contains("boundary ngl 4 (ngl 5 failed to load: "),
        "{answer}"
    );
    crate::record::verify::check(r).unwrap();
}

#[test]
fn the_memory_limit_counts_the_kv_cache_llama_cpp_makes_not_the_tokens_asked() {
    let (_dir, o) = tune_setup(
        "n_gen=8\nrepetitions=1",
        "objective='tg8'\nmax_memory_gib=0.000001",
    );
    let e = MockEngine::new(1_000, 1_000);
    let Err(RunnerError::Refused(line)) = tune(&e, fixtures::run().run, &o, &mut NoProgress) else {
        panic!("the memory limit leaves nothing");
    };
    // The tiny model: 1 KiB of f16 K and V per cell; tg8's 8 tokens make 256 cells.
    assert!(
        line.contains("+ KV 256.0 KiB at 8 tokens (256 cells)) > 1.0 KiB"),
        "{line}"
    );
}
