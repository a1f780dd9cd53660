//! The goodput objective's race: every candidate of the sweep (model or ladder
//! variant, and every combination of the axes) serves `[serving]`'s requests at one load,
//! in process, each round, and its round figure is its goodput, the requests that met the
//! SLO per second of the round (vLLM's `bench serve --goodput`). `stats::race` then races
//! those figures as it races llama-bench rates: paired by round, on their logs.
//!
//! **A round without a good request.** Goodput 0 has no log: `stats::race` takes a round
//! value that is not positive as the candidate's failure, and the candidate leaves the race
//! at that round ("failed", and the answer says no request met the SLO). That is a rule, not
//! a statistical claim: at this load the configuration served no request within the SLO in
//! a whole round, which is no configuration to run at this load. It can cut a candidate
//! whose goodput is near zero by chance alone (1 good request in 16 on average leaves it
//! with probability (15/16)^16 ≈ 36% per round), never one that the leader is not far ahead
//! of: tests/it/monte_carlo/race_goodput.rs measures both.
//!
//! The candidates are the sweep's tests at the objective, turned into serving tests: the
//! same model and parameters (the context ones apply to the serving context), `slots`
//! sequences, the load's rate. The limits that prune before the race (context, KLD, memory,
//! load time) ran on the llama-bench candidates already.

use crate::config::serving::{Mode, ServingConfig};
use crate::config::tune::GoodputObjective;
use crate::plan::serving::{ServingTest, Transport};
use crate::plan::{Detail, PlannedTest, TestKind};
use crate::record::tune::{GoodputLoad, TuneSlo};

/// With the goodput objective, the serving candidates of the llama-bench `candidates` the
/// limits kept (served from their own llama-server where tpsbench launches the entry's,
/// `served.rs`), then `endpoints`, the entries at a fixed endpoint, and the SLO and load in
/// the record; else the candidates as they are.
pub(super) fn serving(
    t: &crate::config::tune::Tune,
    config: &crate::config::Config,
    candidates: Vec<PlannedTest>,
    endpoints: Vec<PlannedTest>,
    rec: &mut crate::record::tune::TuneRecord,
) -> Vec<PlannedTest> {
    let (Some(g), Some(sc)) = (&t.goodput, &config.serving) else {
        return candidates;
    };
    rec.slo = Some(record(g));
    // Each configuration once per slots value (the limits' exclusions count configurations,
    // each standing for all its slots); an endpoint's server has its own slots.
    rec.space = rec.space * g.slots.len() + endpoints.len();
    let seed = sc.seed.unwrap_or(config.settings.seed);
    let mut out: Vec<PlannedTest> = (self::candidates(&candidates, g, sc, seed).into_iter())
        .map(|c| match super::served::reach(config, c.model) {
            super::served::Reach::Launched => super::served::launched(c, config),
            _ => c,
        })
        .collect();
    for mut e in endpoints {
        if let Detail::Serving(s) = &mut e.detail {
            s.group = out.len();
        }
        out.push(e);
    }
    out
}

/// The serving candidates of the llama-bench candidates in `bench`, in their order: one per
/// slots value of each.
fn candidates(
    bench: &[PlannedTest],
    g: &GoodputObjective,
    sc: &ServingConfig,
    seed: u64,
) -> Vec<PlannedTest> {
    let each = bench
        .iter()
        .flat_map(|b| g.slots.iter().map(move |&s| (b, s)));
    (each.enumerate())
        .map(|(i, (b, slots))| candidate(i, b, slots, g, sc, seed))
        .collect()
}

/// The candidate serving `b`'s configuration in `slots` sequences; `group` is its own
/// serving context.
fn candidate(
    group: usize,
    b: &PlannedTest,
    slots: u32,
    g: &GoodputObjective,
    sc: &ServingConfig,
    seed: u64,
) -> PlannedTest {
    let mut params = b.params.clone();
    // A prompt file's requests have their own lengths (as `[serving]`'s tests record them).
    params.n_prompt = if sc.dataset.is_some() { 0 } else { sc.n_prompt };
    params.n_gen = sc.n_gen;
    params.n_depth = 0;
    let load = format!("{}rps-slots{slots}", g.rate);
    // The bench id is `model/quant/<test>/<axes>`: the test's part becomes the load's.
    let test = b.params.name().replace(" @ ", "@");
    let id = match b.id.split_once(&format!("/{test}")) {
        Some((head, tail)) => format!("{head}/serve-goodput-{}-{load}{tail}", g.workload),
        None => format!("{}/serve-goodput-{}-{load}", b.id, g.workload),
    };
    let s = ServingTest {
        model: b.model,
        group,
        id: id.clone(),
        name: format!("goodput {} {}/s slots{slots} (tune)", g.workload, g.rate),
        mode: Mode::Goodput,
        n_parallel: slots,
        n_seq_max: slots,
        shared: false,
        rate: Some(g.rate),
        params: params.clone(),
        transport: Transport::InProcess,
        own_server: false,
        twin: None,
    };
    // What was measured: the llama-bench candidate's model and parameters, and the load.
    let spec = serde_json::json!({
        "goodput": g.describe(), "slo": g.slo, "n_requests": g.n_requests,
        "dataset": sc.dataset.as_ref().map(|d| d.display().to_string()),
        "chat_template": sc.chat_template, "temperature": sc.temperature,
        "kv_unified": sc.kv_unified, "seed": seed, "slots": slots,
    });
    PlannedTest {
        model: b.model,
        id,
        params,
        kind: TestKind::Goodput,
        detail: Detail::Serving(Box::new(s)),
        identity: crate::util::hash::sha256_hex(format!("{}\n{spec}", b.identity)),
    }
}

/// The record's `slo`: the goodput objective's SLO and load.
fn record(g: &GoodputObjective) -> TuneSlo {
    TuneSlo {
        goodput: Some(GoodputLoad {
            slo: g.slo.clone(),
            rate: g.rate,
            slots: g.slots.clone(),
            n_requests: g.n_requests,
            workload: g.workload.clone(),
        }),
        max_ttft_ms: None,
        max_itl_ms: None,
        quantile: 0.0,
        broke: Vec::new(),
    }
}
