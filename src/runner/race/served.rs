//! The goodput objective over HTTP. An entry tpsbench launches (`server = "llama-server"`)
//! has its llama-bench candidates, pruned by the same limits, and each becomes a served
//! candidate with a llama-server of its own started with the candidate's settings
//! (`plan::serving::server_flags`); a setting llama-server cannot be told is refused before
//! anything runs, since the candidate would not run what it names. An entry at a fixed
//! `endpoint` is one candidate, its settings the user's. One server is up at a time (started
//! and stopped with the candidate's round, outside the timed window), so the race needs one
//! model's memory.

use super::RunnerError;
use crate::config::endpoint::ServerLaunch;
use crate::config::serving::ServingConfig;
use crate::config::tune::GoodputObjective;
use crate::config::{Config, ModelEntry};
use crate::plan::serving::{ServingTest, Transport, server_flags};
use crate::plan::{Plan, PlannedTest};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// In process (no `endpoint`, no `server`).
    InProcess,
    /// A llama-server tpsbench launches per candidate.
    Launched,
    Endpoint,
}

pub(super) fn reach(config: &Config, model: usize) -> Reach {
    // Plan models past the `[[model]]` entries are ladder variants: always in process.
    config
        .models
        .get(model)
        .map_or(Reach::InProcess, reach_entry)
}

fn reach_entry(m: &ModelEntry) -> Reach {
    match m.served.as_ref().map(|s| &s.server) {
        None => Reach::InProcess,
        Some(Some(ServerLaunch::LlamaServer { .. })) => Reach::Launched,
        Some(_) => Reach::Endpoint,
    }
}

/// The goodput race's space out of the llama-bench `space`: the entries at a fixed endpoint
/// leave it (nothing of theirs is measured in process) and become one served candidate
/// each (their ids kept by `filters`); a launched entry's setting llama-server cannot be
/// told is refused.
pub(super) fn split(
    config: &Config,
    plan: &Plan,
    mut space: Vec<PlannedTest>,
    filters: &[String],
) -> Result<(Vec<PlannedTest>, Vec<PlannedTest>), RunnerError> {
    let g = config.tune.as_ref().and_then(|t| t.goodput.as_ref());
    let (Some(g), Some(sc)) = (g, &config.serving) else {
        return Ok((space, Vec::new()));
    };
    for c in space
        .iter()
        .filter(|c| reach(config, c.model) == Reach::Launched)
    {
        let m = &config.models[c.model];
        if let Some((k, v)) = server_flags::unpassed(&c.params).into_iter().next() {
            let axis = k.name;
            // As the sweep spells it (`show` writes a flag's 0/1).
            let v = match v {
                crate::config::knobs::KnobValue::Bool(b) => b.to_string(),
                v => v.show(),
            };
            return Err(RunnerError::Refused(format!(
                "{}: model {:?}: objective goodput races its llama-server over HTTP, and \
                 tpsbench cannot pass {axis} = {v} to llama-server: remove {axis} from its \
                 sweep, or race it in process (no `server`)",
                config.file.display(),
                m.name
            )));
        }
    }
    space.retain(|c| reach(config, c.model) != Reach::Endpoint);
    let seed = sc.seed.unwrap_or(config.settings.seed);
    let endpoints = (config.models.iter().enumerate())
        .filter(|(_, m)| reach_entry(m) == Reach::Endpoint)
        .map(|(mi, m)| endpoint_candidate(mi, m, plan, g, sc, seed))
        .filter(|c| crate::plan::wanted(&c.id, filters))
        .collect();
    Ok((space, endpoints))
}

/// The one candidate of an entry at a fixed endpoint: `[serving]`'s load at the objective's
/// rate, in the server's own slots.
fn endpoint_candidate(
    mi: usize,
    m: &ModelEntry,
    plan: &Plan,
    g: &GoodputObjective,
    sc: &ServingConfig,
    seed: u64,
) -> PlannedTest {
    let pm = &plan.models[mi];
    let prompt = if sc.dataset.is_some() { 0 } else { sc.n_prompt };
    let params = crate::plan::first_of_axes(&m.axes, prompt, sc.n_gen);
    let id = format!(
        "{}/{}/serve-http-goodput-{}-{}rps",
        m.name, pm.label, g.workload, g.rate
    );
    let name = format!("goodput http {} {}/s (tune)", g.workload, g.rate);
    let s = ServingTest {
        transport: Transport::Http,
        ..super::goodput::goodput_test(mi, id, name, sc.slots, params, g)
    };
    let served = m.served.as_ref();
    let mut spec = super::goodput::load_spec(g, sc, seed);
    spec["transport"] = "http".into();
    spec["endpoint"] = served.and_then(|s| s.endpoint.clone()).into();
    spec["served_model"] = served.and_then(|s| s.served_model.clone()).into();
    super::goodput::planned(s, &pm.key, spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Detail;

    fn config(models: &str) -> Config {
        let text = format!(
            "[sweep]\nn_threads = 1\nn_ubatch = [16, 32]\n[serving]\nn_prompt = 8\nn_gen = 4\n\
             arrival_rate = [10]\nslo = {{ ttft_ms = 500 }}\n{models}\n[tune]\nobjective = \"goodput\"\n"
        );
        crate::config::parse(std::path::Path::new("m.toml"), &text, 2).unwrap()
    }

    fn space(c: &Config) -> (Plan, Vec<PlannedTest>) {
        let facts = crate::plan::build::Facts::default();
        let c = &super::super::at_objective(c, c.tune.as_ref().unwrap());
        let plan = crate::plan::build::build(c, &facts, &[]);
        let space = (plan.tests.iter())
            .filter(|x| matches!(x.detail, Detail::Bench))
            .cloned()
            .collect();
        (plan, space)
    }

    #[test]
    fn an_entry_at_a_fixed_endpoint_is_one_candidate_and_leaves_the_in_process_space() {
        let c = config(
            "[[model]]\nname = \"a\"\npath = \"a.gguf\"\n[[model]]\nname = \"b\"\n\
             endpoint = \"http://127.0.0.1:9/v1\"\n",
        );
        let (plan, space) = space(&c);
        assert_eq!(space.len(), 2, "a's two configurations");
        let (kept, ep) = split(&c, &plan, space, &[]).unwrap();
        assert_eq!(kept.len(), 2);
        assert_eq!(ep.len(), 1);
        assert_eq!(ep[0].id, "b//serve-http-goodput-pp8+tg4-10rps");
        let Detail::Serving(s) = &ep[0].detail else {
            panic!()
        };
        assert_eq!(
            (s.transport, s.own_server, s.rate),
            (Transport::Http, false, Some(10.0))
        );
        let (_, none) = split(&c, &plan, Vec::new(), &["nothing".into()]).unwrap();
        assert!(
            none.is_empty(),
            "the filters choose endpoint candidates too"
        );
    }

    #[test]
    fn a_launched_entrys_setting_llama_server_cannot_take_is_refused_by_name() {
        let c = config(
            "[[model]]\nname = \"a\"\npath = \"a.gguf\"\nserver = \"llama-server\"\n\
             [model.sweep]\nembeddings = true\n",
        );
        let (plan, space) = space(&c);
        let Err(RunnerError::Refused(e)) = split(&c, &plan, space, &[]) else {
            panic!("not refused")
        };
        assert!(
            e.contains("cannot pass embeddings = true to llama-server"),
            "{e}"
        );
    }
}
