//! The serving loops on the mock engine: exact times from its fake clock, and its simulated
//! KV cache checks positions, capacity and cell accounting.

use std::path::Path;

use super::*;
use crate::config::Axes;
use crate::engine::tests::mock::MockEngine;
use crate::engine::tests::mock::serving::mock_next_token;
use crate::engine::{BatchParams, LoadParams};
use crate::plan::expand_axes;
use crate::serving::arrivals::run_arrivals;
use crate::serving::metrics::{latencies, n_kv};

const PP_NS: u64 = 1_000; // per extra token in a batch
const GEN_NS: u64 = 100_000; // per decode call

fn params(n_ctx: u32, n_seq_max: u32, kv_unified: bool) -> BatchParams {
    BatchParams {
        base: expand_axes(&Axes::llama_bench_defaults(2))[0].clone(),
        n_ctx,
        n_seq_max,
        kv_unified,
    }
}

/// Runs `f` on a fresh mock batch session.
fn with_session<T>(p: BatchParams, f: impl FnOnce(&MockEngine, &mut dyn BatchSession) -> T) -> T {
    let e = MockEngine::new(PP_NS, GEN_NS);
    let m = e.load(Path::new("mock"), &LoadParams::default()).unwrap();
    let mut s = m.serving().unwrap().batch_session(&p).unwrap();
    f(&e, s.as_mut())
}

fn prompt(n: usize, seed: i32) -> Vec<i32> {
    (0..n as i32).map(|i| 2 + (i * 7 + seed) % 90).collect()
}

fn greedy(n: usize) -> Vec<Sampler> {
    (0..n).map(|j| Sampler::new(0.0, j as u64)).collect()
}

/// The tokens greedy decoding must produce on the mock after `prompt`.
fn expected_tokens(prompt: &[i32], n_gen: usize) -> Vec<i32> {
    let mut out = vec![mock_next_token(
        *prompt.last().unwrap(),
        prompt.len() as i32 - 1,
        100,
    )];
    while out.len() < n_gen {
        let pos = (prompt.len() + out.len() - 1) as i32;
        out.push(mock_next_token(*out.last().unwrap(), pos, 100));
    }
    out
}

#[test]
fn one_request_has_exact_ttft_itl_and_equal_per_request_and_aggregate_rates() {
    with_session(params(256, 1, false), |e, s| {
        let req = Request {
            prompt: prompt(32, 0),
            n_gen: 9,
        };
        let r = run_together(
            s,
            e,
            std::slice::from_ref(&req),
            false,
            false,
            2048,
            &mut greedy(1),
        )
        .unwrap();
        let t = &r.traces[0];
        assert_eq!(t.token_ns.len(), 9, "exactly n_gen tokens");
        assert_eq!(
            t.tokens,
            expected_tokens(&req.prompt, 9),
            "logits of the right entries"
        );
        assert_eq!(
            t.ttft_ns(),
            Some(GEN_NS + 31 * PP_NS),
            "prefill + first sample"
        );
        assert!(t.itl_ns().all(|x| x == GEN_NS));
        assert!(t.ttft_ns() <= t.e2e_ns());
        let p = r.phases;
        assert_eq!((p.n_pp, p.n_tg, p.n_out), (32, 8, 9));
        assert_eq!(p.t_pp_ns, GEN_NS + 31 * PP_NS);
        assert_eq!(p.t_tg_ns, 8 * GEN_NS);
        let f = p.figures();
        assert_eq!(
            f.aggregate_ts,
            t.decode_ts(),
            "B = 1: aggregate = per request"
        );
        assert_eq!(f.overhead_ms, 0.0, "the fake clock does not see sampling");
        assert_eq!(
            s.seq_pos_range(0),
            Some((0, 32 + 9 - 2)),
            "last token not decoded"
        );
    });
}

#[test]
fn parallel_sequences_decode_together_with_batched_bench_accounting() {
    let (b, pp, n_gen) = (4usize, 16usize, 6u32);
    with_session(params(4 * 64, 4, false), |e, s| {
        let reqs: Vec<Request> = (0..b)
            .map(|j| Request {
                prompt: prompt(pp, j as i32),
                n_gen,
            })
            .collect();
        let r = run_together(s, e, &reqs, false, false, 2048, &mut greedy(b)).unwrap();
        let p = r.phases;
        assert_eq!(p.n_pp, (b * pp) as u64);
        assert_eq!(p.n_tg, b as u64 * 5);
        assert_eq!(
            p.t_pp_ns,
            GEN_NS + (b * pp - 1) as u64 * PP_NS,
            "one prompt batch"
        );
        assert_eq!(
            p.t_tg_ns,
            5 * (GEN_NS + 3 * PP_NS),
            "one batch of B per step"
        );
        for (j, t) in r.traces.iter().enumerate() {
            assert_eq!(t.tokens, expected_tokens(&reqs[j].prompt, 6));
            assert_eq!(s.seq_pos_range(j as i32), Some((0, (pp + 4) as i32)));
        }
        let l = latencies(&r.traces);
        assert_eq!((l.ttft_ms.n, l.itl_ms.n), (4, 20));
        let f = p.figures();
        let per_seq = l.per_request_ts.unwrap();
        assert!((f.aggregate_ts.unwrap() - b as f64 * per_seq).abs() < 1e-6);
        assert_eq!(
            e.log.borrow().kv_cells_peak as u64,
            n_kv(pp as u64, 5, b as u64, false, false)
        );
    });
}

#[test]
fn a_shared_prompt_is_decoded_once_and_counted_as_batched_bench_counts_it() {
    for unified in [true, false] {
        with_session(params(4 * 64, 4, unified), |e, s| {
            let p = prompt(16, 3);
            let reqs = vec![
                Request {
                    prompt: p.clone(),
                    n_gen: 5
                };
                4
            ];
            let r = run_together(s, e, &reqs, true, unified, 2048, &mut greedy(4)).unwrap();
            assert_eq!(r.phases.n_pp, 16, "S_PP counts the shared prompt once");
            assert_eq!(r.phases.t_pp_ns, GEN_NS + 15 * PP_NS);
            for j in 0..4 {
                assert_eq!(
                    r.traces[j].tokens,
                    expected_tokens(&p, 5),
                    "unified {unified}"
                );
                assert_eq!(s.seq_pos_range(j as i32), Some((0, 16 + 3)));
            }
            let log = e.log.borrow();
            assert_eq!(
                log.kv_cells_peak as u64,
                n_kv(16, 4, 4, true, unified),
                "unified {unified}"
            );
            assert_eq!(log.seq_cps, 3);
        });
    }
}

#[test]
fn long_prompts_are_decoded_in_n_batch_chunks_without_losing_logits() {
    with_session(params(512, 3, true), |e, s| {
        let reqs: Vec<Request> = (0..3)
            .map(|j| Request {
                prompt: prompt(40, j),
                n_gen: 3,
            })
            .collect();
        let r = run_together(s, e, &reqs, false, true, 32, &mut greedy(3)).unwrap();
        for (j, t) in r.traces.iter().enumerate() {
            assert_eq!(t.tokens, expected_tokens(&reqs[j].prompt, 3));
        }
        // 120 prompt tokens in chunks of 32: 4 calls; then 2 steps of 3 tokens.
        assert_eq!(e.log.borrow().batch_decodes, 4 + 2);
    });
}

#[test]
fn bad_requests_are_errors_not_panics() {
    with_session(params(64, 1, false), |e, s| {
        let empty = Request {
            prompt: vec![],
            n_gen: 3,
        };
        assert!(run_together(s, e, &[empty], false, false, 64, &mut greedy(1)).is_err());
        let long = Request {
            prompt: prompt(60, 0),
            n_gen: 10,
        };
        let err = run_together(s, e, &[long], false, false, 64, &mut greedy(1)).unwrap_err();
        assert!(err.to_string().contains("context full"), "{err}");
        let a = Request {
            prompt: prompt(4, 0),
            n_gen: 2,
        };
        let b = Request {
            prompt: prompt(4, 1),
            n_gen: 2,
        };
        assert!(run_together(s, e, &[a, b], true, false, 64, &mut greedy(2)).is_err());
    });
}

#[test]
fn arrivals_join_the_running_batch_and_leave_when_done() {
    with_session(params(4 * 32, 2, false), |e, s| {
        let reqs: Vec<Request> = (0..5)
            .map(|j| Request {
                prompt: prompt(8 + j, j as i32),
                n_gen: 4 + j as u32,
            })
            .collect();
        // Two arrive together, one while they decode, two after a long pause.
        let offsets = [0, 0, 150_000, 50_000_000, 50_000_000];
        let r = run_arrivals(s, e, &reqs, &offsets, 2, 2048, &mut greedy(5)).unwrap();
        assert!(r.max_batch_seqs <= 2);
        for (j, t) in r.traces.iter().enumerate() {
            assert_eq!(
                t.tokens,
                expected_tokens(&reqs[j].prompt, 4 + j),
                "request {j}"
            );
            assert!(t.admitted_ns >= t.arrival_ns);
            assert!(t.ttft_ns() <= t.e2e_ns());
        }
        assert_eq!(r.traces[3].arrival_ns - r.start_ns, 50_000_000);
        assert!(
            r.traces[2].admitted_ns > r.traces[2].arrival_ns,
            "waited for a free slot"
        );
        assert_eq!(r.n_out, (4..9).sum::<u64>());
        assert_eq!(
            e.log.borrow().kv_cells,
            0,
            "finished sequences free their cells"
        );
        assert!(r.t_ns >= 50_000_000, "the idle wait is on the clock");
        assert!(r.idle_ns > 45_000_000, "{}", r.idle_ns);
        assert_eq!(
            r.engine_ns + r.idle_ns,
            r.t_ns,
            "the mock's time is compute or waiting"
        );
    });
}

#[test]
fn arrivals_check_their_inputs() {
    with_session(params(64, 2, false), |e, s| {
        let q = Request {
            prompt: prompt(4, 0),
            n_gen: 2,
        };
        assert!(run_arrivals(s, e, std::slice::from_ref(&q), &[], 2, 64, &mut greedy(1)).is_err());
        let err = run_arrivals(s, e, &[q], &[0], 4, 2, &mut greedy(1)).unwrap_err();
        assert!(err.to_string().contains("n_batch"), "{err}");
    });
}
