//! Goodput under service-level objectives (vLLM's `bench serve --goodput`, as
//! docs/configuration.md defines it), and the search for the highest load that keeps them.
//! Pure: the search calls back to run an arrival test at a rate. It bisects at geometric
//! midpoints: rates span orders of magnitude.

use crate::config::serving::{GoodputSearch, Slo};
use crate::record::serving::{Goodput, GoodputStep, RequestSample};

/// Whether one request meets every threshold of `slo`. `itl_ms` is compared with the
/// request's mean inter-token latency (E2E − TTFT) / (n − 1), vLLM's TPOT; a one-token
/// answer has none and meets it.
pub fn good(r: &RequestSample, slo: &Slo) -> bool {
    let tpot = r.decode_ts.map(|ts| 1000.0 / ts);
    slo.ttft_ms.is_none_or(|y| r.ttft_ms <= y)
        && slo.e2e_ms.is_none_or(|y| r.e2e_ms <= y)
        && slo.itl_ms.is_none_or(|y| tpot.is_none_or(|t| t <= y))
}

/// One step's figures from its requests and its duration (first arrival to last token).
pub fn step(rate: f64, requests: &[RequestSample], duration_s: f64, slo: &Slo) -> GoodputStep {
    let n = requests.len() as u32;
    let n_good = requests.iter().filter(|r| good(r, slo)).count() as u32;
    let per = |d: f64| if d > 0.0 { f64::from(n_good) / d } else { 0.0 };
    let attainment = per(f64::from(n));
    GoodputStep {
        rate,
        n_requests: n,
        n_good,
        attainment,
        goodput: per(duration_s),
        duration_s,
        // A rounding margin: 9 of 10 is 0.9 however the division rounds.
        met: n > 0 && attainment + 1e-9 >= slo.attainment,
    }
}

/// A fixed-rate repetition's step: the repetition's sample (the last of `samples_ts`)
/// becomes its goodput, and the step joins the test's record (made at the first).
pub fn join_step(
    samples_ts: &mut [f64],
    goodput: &mut Option<Goodput>,
    st: GoodputStep,
    slo: &Slo,
) {
    if let Some(last) = samples_ts.last_mut() {
        *last = st.goodput;
    }
    let found = goodput.get_or_insert_with(|| Goodput {
        slo: slo.clone(),
        max_rate: None,
        goodput: None,
        failed_rate: None,
        stopped: "fixed rate: no search".into(),
        steps: Vec::new(),
    });
    found.steps.push(st);
}

/// The progress line of one step: "ID: 2.000 req/s: 9 of 10 good (90%), goodput 1.8 req/s".
pub fn step_line(id: &str, st: &GoodputStep) -> String {
    format!(
        "{id}: {:.3} req/s: {} of {} good ({:.0}%), goodput {:.3} req/s{}",
        st.rate,
        st.n_good,
        st.n_requests,
        st.attainment * 100.0,
        st.goodput,
        if st.met { "" } else { " (below the SLO)" }
    )
}

/// The search. `run(rate)` measures one arrival test and returns its step; `elapsed()` is
/// seconds since the search began. Stops when the bracket is within 5%, after `steps`
/// bisections, or past `max_seconds` (checked before each run).
pub fn search<E>(
    s: &GoodputSearch,
    slo: &Slo,
    mut run: impl FnMut(f64) -> Result<GoodputStep, E>,
    elapsed: impl Fn() -> f64,
) -> Result<Goodput, E> {
    let mut steps = Vec::new();
    let done = |steps: Vec<GoodputStep>, stopped: &str, lo: Option<f64>, hi: Option<f64>| {
        let at_lo = lo.and_then(|r| steps.iter().find(|x: &&GoodputStep| x.rate == r));
        Goodput {
            slo: slo.clone(),
            max_rate: lo,
            goodput: at_lo.map(|x| x.goodput),
            failed_rate: hi,
            stopped: stopped.into(),
            steps,
        }
    };
    steps.push(run(s.max_rate)?);
    if steps[0].met {
        return Ok(done(steps, "met at max_rate", Some(s.max_rate), None));
    }
    if elapsed() > s.max_seconds {
        return Ok(done(steps, "time", None, Some(s.max_rate)));
    }
    steps.push(run(s.min_rate)?);
    if !steps[1].met {
        return Ok(done(steps, "not met at min_rate", None, Some(s.min_rate)));
    }
    let (mut lo, mut hi) = (s.min_rate, s.max_rate);
    for _ in 0..s.steps {
        if hi / lo <= 1.05 {
            return Ok(done(steps, "converged", Some(lo), Some(hi)));
        }
        if elapsed() > s.max_seconds {
            return Ok(done(steps, "time", Some(lo), Some(hi)));
        }
        let mid = (lo * hi).sqrt();
        let st = run(mid)?;
        if st.met {
            lo = mid;
        } else {
            hi = mid;
        }
        steps.push(st);
    }
    let stopped = if hi / lo <= 1.05 {
        "converged"
    } else {
        "steps"
    };
    Ok(done(steps, stopped, Some(lo), Some(hi)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slo() -> Slo {
        Slo {
            ttft_ms: Some(500.0),
            itl_ms: Some(50.0),
            e2e_ms: None,
            attainment: 0.9,
        }
    }

    fn req(ttft_ms: f64, decode_ts: Option<f64>) -> RequestSample {
        RequestSample {
            repetition: 0,
            n_prompt: 8,
            n_gen: 4,
            arrival_ms: 0.0,
            ttft_ms,
            e2e_ms: ttft_ms + 100.0,
            decode_ts,
        }
    }

    #[test]
    fn a_request_is_good_only_when_it_meets_every_threshold() {
        assert!(good(&req(400.0, Some(25.0)), &slo())); // TPOT 40 ms
        assert!(!good(&req(600.0, Some(25.0)), &slo())); // TTFT over
        assert!(!good(&req(400.0, Some(10.0)), &slo())); // TPOT 100 ms
        assert!(good(&req(400.0, None), &slo())); // one token: no TPOT
    }

    #[test]
    fn attainment_and_goodput_count_good_requests() {
        let mut rs = vec![req(100.0, Some(100.0)); 9];
        rs.push(req(900.0, Some(100.0)));
        let st = step(2.0, &rs, 5.0, &slo());
        assert_eq!((st.n_good, st.n_requests), (9, 10));
        assert!(st.met, "9 of 10 meets 90%");
        assert!((st.goodput - 1.8).abs() < 1e-12);
        rs.push(req(900.0, Some(100.0)));
        assert!(!step(2.0, &rs, 5.0, &slo()).met);
    }

    /// A fake server that meets the SLO below `capacity` requests per second.
    fn search_with(capacity: f64, s: &GoodputSearch) -> (Goodput, Vec<f64>) {
        let mut tried = Vec::new();
        let g = search(
            s,
            &slo(),
            |rate| {
                tried.push(rate);
                let ok = rate <= capacity;
                let rs = vec![req(if ok { 100.0 } else { 900.0 }, Some(100.0)); 10];
                Ok::<_, String>(step(rate, &rs, 10.0 / rate, &slo()))
            },
            || 0.0,
        )
        .unwrap();
        (g, tried)
    }

    fn bounds(steps: u32) -> GoodputSearch {
        GoodputSearch {
            min_rate: 0.25,
            max_rate: 64.0,
            steps,
            max_seconds: 600.0,
            n_requests: 10,
        }
    }

    #[test]
    fn the_search_brackets_the_capacity_within_its_steps() {
        let (g, tried) = search_with(3.0, &bounds(30));
        let (lo, hi) = (g.max_rate.unwrap(), g.failed_rate.unwrap());
        assert!(lo <= 3.0 && 3.0 < hi, "{lo} {hi}");
        assert!(hi / lo <= 1.05);
        assert_eq!(g.stopped, "converged");
        assert_eq!(tried[..2], [64.0, 0.25]);
        assert_eq!(g.steps.len(), tried.len());
        // Bounded: 2 ends + log2(ln(256)/ln(1.05)) ≈ 7 bisections.
        assert!(tried.len() <= 10, "{tried:?}");
    }

    #[test]
    fn the_search_stops_after_its_steps_and_says_so() {
        let (g, tried) = search_with(3.0, &bounds(2));
        assert_eq!(tried.len(), 4);
        assert_eq!(g.stopped, "steps");
        assert!(g.max_rate.unwrap() <= 3.0 && g.failed_rate.unwrap() > 3.0);
    }

    #[test]
    fn the_ends_of_the_range_answer_at_once() {
        let (g, tried) = search_with(100.0, &bounds(6));
        assert_eq!((g.stopped.as_str(), tried.len()), ("met at max_rate", 1));
        assert_eq!(g.max_rate, Some(64.0));
        let (g, tried) = search_with(0.1, &bounds(6));
        assert_eq!(
            (g.stopped.as_str(), tried.len()),
            ("not met at min_rate", 2)
        );
        assert_eq!((g.max_rate, g.goodput), (None, None));
    }

    #[test]
    fn the_search_stops_when_its_time_is_up() {
        let g = search(
            &bounds(6),
            &slo(),
            |rate| Ok::<_, String>(step(rate, &[req(900.0, None)], 1.0, &slo())),
            || 1e9,
        )
        .unwrap();
        assert_eq!((g.stopped.as_str(), g.steps.len()), ("time", 1));
    }
}
