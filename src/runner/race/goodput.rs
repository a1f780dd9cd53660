//! The goodput objective's candidates: every configuration the limits kept serves
//! `[serving]`'s requests at one load in `slots` sequences, in process, and its round figure
//! is its goodput (vLLM's `bench serve --goodput`), raced as llama-bench rates are.
//!
//! A round without a good request has goodput 0, which has no log: `stats::race` takes it as
//! the candidate's failure, a rule rather than a statistical claim (no configuration to run
//! at this load). By chance alone it can cut a candidate near zero (1 good request in 16 on
//! average leaves it with probability (15/16)^16 ≈ 36% per round), never one the leader is
//! not far ahead of: tests/it/monte_carlo/race_goodput.rs measures both.

use crate::config::Config;
use crate::config::serving::{Mode, ServingConfig};
use crate::config::tune::GoodputObjective;
use crate::plan::serving::{ServingTest, Transport};
use crate::plan::{Detail, PlannedTest, TestKind, TestParams};
use crate::record::tune::TuneSlo;

/// With the goodput objective, the serving candidates of the llama-bench `candidates`
/// (launched entries' served, `served.rs`), then `endpoints`; else `candidates` as they are.
pub(super) fn serving(
    t: &crate::config::tune::Tune,
    config: &Config,
    candidates: Vec<PlannedTest>,
    endpoints: Vec<PlannedTest>,
    rec: &mut crate::record::tune::TuneRecord,
) -> Vec<PlannedTest> {
    let (Some(g), Some(sc)) = (&t.goodput, &config.serving) else {
        return candidates;
    };
    rec.slo = Some(TuneSlo {
        goodput: Some(g.clone()),
        ..Default::default()
    });
    // Each configuration once per slots value (the limits' exclusions count configurations,
    // each standing for all its slots); an endpoint's server has its own slots.
    rec.space = rec.space * g.slots.len() + endpoints.len();
    // One serving candidate per slots value of each configuration, in order.
    let each = candidates
        .iter()
        .flat_map(|b| g.slots.iter().map(move |&s| (b, s)));
    let mut out: Vec<PlannedTest> = (each.enumerate())
        .map(|(i, c)| candidate(i, c, g, config, sc))
        .collect();
    for mut e in endpoints {
        if let Detail::Serving(s) = &mut e.detail {
            s.group = out.len();
        }
        out.push(e);
    }
    out
}

/// The candidate serving `b`'s configuration in `slots` sequences; `group` is its own
/// serving context. A launched entry's is served over HTTP from a llama-server of its own.
fn candidate(
    group: usize,
    (b, slots): (&PlannedTest, u32),
    g: &GoodputObjective,
    config: &Config,
    sc: &ServingConfig,
) -> PlannedTest {
    let launched = super::served::reach(config, b.model) == super::served::Reach::Launched;
    let http = if launched { "http-" } else { "" };
    let mut params = b.params.clone();
    // A prompt file's requests have their own lengths (as `[serving]`'s tests record them).
    params.n_prompt = if sc.dataset.is_some() { 0 } else { sc.n_prompt };
    params.n_gen = sc.n_gen;
    params.n_depth = 0;
    let load = format!(
        "serve-{http}goodput-{}-{}rps-slots{slots}",
        g.workload, g.rate
    );
    let id = super::measured_as(b, &load);
    let name = format!(
        "goodput {}{} {}/s slots{slots} (tune)",
        if launched { "http " } else { "" },
        g.workload,
        g.rate
    );
    let s = ServingTest {
        group,
        own_server: launched,
        transport: if launched {
            Transport::Http
        } else {
            Transport::InProcess
        },
        ..goodput_test(b.model, id, name, slots, params, g)
    };
    // What was measured: the llama-bench candidate's model and parameters, and the load.
    let seed = sc.seed.unwrap_or(config.settings.seed);
    let mut spec = load_spec(g, sc, seed);
    (spec["kv_unified"], spec["slots"]) = (sc.kv_unified.into(), slots.into());
    let mut c = planned(s, &b.identity, spec);
    if launched {
        // The launcher's own arguments and draft are part of what the candidate runs.
        let launch = (config.models[c.model].served.as_ref()).and_then(|x| x.server.as_ref());
        let spec = serde_json::json!({ "transport": "http", "server": launch });
        c.identity = crate::util::hash::sha256_hex(format!("{}\n{spec}", c.identity));
    }
    c
}

/// What every goodput candidate is asked, in process or over HTTP: the load and its SLO.
pub(super) fn load_spec(g: &GoodputObjective, sc: &ServingConfig, seed: u64) -> serde_json::Value {
    serde_json::json!({
        "goodput": g.describe(), "slo": g.slo, "n_requests": g.n_requests,
        "dataset": sc.dataset.as_ref().map(|d| d.display().to_string()),
        "chat_template": sc.chat_template, "temperature": sc.temperature, "seed": seed,
    })
}

/// Test `id` of model `model` serving the objective's load in `slots` sequences, in process.
pub(super) fn goodput_test(
    model: usize,
    id: String,
    name: String,
    slots: u32,
    params: TestParams,
    g: &GoodputObjective,
) -> ServingTest {
    ServingTest {
        model,
        group: 0,
        id,
        name,
        mode: Mode::Goodput,
        n_parallel: slots,
        n_seq_max: slots,
        shared: false,
        rate: Some(g.rate),
        params,
        transport: Transport::InProcess,
        own_server: false,
        twin: None,
    }
}

/// `s` planned: its identity is `base`'s with what it measures (`spec`).
pub(super) fn planned(s: ServingTest, base: &str, spec: serde_json::Value) -> PlannedTest {
    PlannedTest {
        model: s.model,
        id: s.id.clone(),
        params: s.params.clone(),
        kind: TestKind::Goodput,
        identity: crate::util::hash::sha256_hex(format!("{base}\n{spec}")),
        detail: Detail::Serving(Box::new(s)),
    }
}
