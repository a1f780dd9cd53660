//! Expands the `[serving]` table into tests, per model: ids, names, context groups and
//! sizes. A context group is made once: the request test; per shared_prompt, every B of the
//! parallel test (n_seq_max = the largest B, as llama-batched-bench); every arrival rate.
//! Filters drop tests but never change a group's context.

use crate::config::Config;
use crate::config::serving::{Mode, ServingConfig};
use crate::plan::TestParams;

pub mod server_flags;

/// How the test reached the model.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// Through llama.cpp in this process (the engine's ceiling).
    #[default]
    InProcess,
    /// Over HTTP, from an OpenAI-compatible server (streamed chunks).
    Http,
}

impl Transport {
    pub fn is_in_process(&self) -> bool {
        *self == Transport::InProcess
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ServingTest {
    pub model: usize,
    /// Tests with the same group share one context.
    pub group: usize,
    pub id: String,
    /// The `test` field: `parallel pp128+tg64 B4`, `request prompts.jsonl`, ...
    pub name: String,
    pub mode: Mode,
    /// B (parallel), 1 (request), slots (arrival).
    pub n_parallel: u32,
    pub n_seq_max: u32,
    pub shared: bool,
    pub rate: Option<f64>,
    /// Context parameters (the first value of each of the model's axes), n_prompt and n_gen.
    pub params: TestParams,
    /// In-process, or over HTTP from the model's `endpoint`/`server`.
    pub transport: Transport,
    /// Over HTTP from a server tpsbench launches: the test has a server of its own, told
    /// its parameters and `n_seq_max` slots (a `tune` candidate), rather than the model's
    /// one server for all its served tests.
    pub own_server: bool,
    /// The id of the same test over the model's other transport, when the model has both:
    /// what serving costs is the served test against it.
    pub twin: Option<String>,
}

impl ServingTest {
    /// The same workload, context and slots as `o`, whatever the transport.
    fn same_as(&self, o: &ServingTest) -> bool {
        let key = |t: &ServingTest| (t.model, t.mode, t.n_parallel, t.n_seq_max, t.shared);
        key(self) == key(o) && self.rate == o.rate && self.params == o.params
    }
}

/// The serving tests of every model, in run order, kept by `filters` (ids containing one).
pub fn expand(config: &Config, quant: &[String], filters: &[String]) -> Vec<ServingTest> {
    let Some(sc) = &config.serving else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut group = 0;
    let workload = sc.workload();
    for (mi, m) in config.models.iter().enumerate() {
        let label = quant.get(mi).map(String::as_str).unwrap_or("unknown");
        for transport in transports(m) {
            // Served tests: `serve-http-<mode>`; in-process ones keep their ids.
            let (http, id) = match transport {
                Transport::InProcess => ("", ""),
                Transport::Http => (" http", "http-"),
            };
            let tests = ModelTests {
                sc,
                model: mi,
                transport,
                params: super::first_of_axes(&m.axes, sc.n_prompt, sc.n_gen),
                prefix: format!("{}/{label}/serve-{id}", m.name),
                http,
                workload: &workload,
            };
            for &mode in &sc.modes {
                tests.push_mode(mode, &mut group, &mut out);
            }
        }
    }
    link_twins(&mut out);
    out.retain(|t| super::wanted(&t.id, filters));
    out
}

/// Each test's twin over the other transport (a model served both ways).
fn link_twins(tests: &mut [ServingTest]) {
    for i in 0..tests.len() {
        let twin = (tests.iter())
            .find(|o| o.transport != tests[i].transport && o.same_as(&tests[i]))
            .map(|o| o.id.clone());
        tests[i].twin = twin;
    }
}

/// The serving tests of one model over one transport: what they all share.
struct ModelTests<'a> {
    sc: &'a ServingConfig,
    model: usize,
    transport: Transport,
    params: TestParams,
    /// The start of every id: `<model>/<quant>/serve-` (`serve-http-` over HTTP).
    prefix: String,
    /// ` http` in the names of tests over HTTP, nothing in-process.
    http: &'static str,
    /// The dataset's file name, or `pp<n_prompt>+tg<n_gen>` without one.
    workload: &'a str,
}

impl ModelTests<'_> {
    /// The tests of `mode`, pushed onto `out` in run order; each context group takes the
    /// next `group` number.
    fn push_mode(&self, mode: Mode, group: &mut usize, out: &mut Vec<ServingTest>) {
        let (http, workload, slots) = (self.http, self.workload, self.sc.slots);
        match mode {
            Mode::Request => {
                let name = format!("request{http} {workload}");
                out.push(self.test(*group, mode, workload.to_string(), name));
                *group += 1;
            }
            Mode::Parallel => self.push_parallel(group, out),
            Mode::Arrival => {
                for &r in &self.sc.arrival_rate {
                    let id = format!("{workload}/rate{r}/slots{slots}");
                    let name = format!("arrival{http} {workload} {r}/s slots{slots}");
                    out.push(ServingTest {
                        n_parallel: slots,
                        n_seq_max: slots,
                        rate: Some(r),
                        ..self.test(*group, mode, id, name)
                    });
                }
                *group += 1;
            }
            Mode::Goodput => {
                let id = format!("{workload}/slots{slots}");
                let name = format!("goodput{http} {workload} slots{slots}");
                out.push(ServingTest {
                    n_parallel: slots,
                    n_seq_max: slots,
                    ..self.test(*group, mode, id, name)
                });
                *group += 1;
            }
        }
    }

    /// The parallel tests: one group per shared_prompt value (in-process only), every B in
    /// it, with a context for the largest B.
    fn push_parallel(&self, group: &mut usize, out: &mut Vec<ServingTest>) {
        let (sc, http) = (self.sc, self.http);
        let seq_max = sc.n_parallel.iter().copied().max().unwrap_or(1);
        let synthetic = format!("pp{}+tg{}", sc.n_prompt, sc.n_gen);
        // Over HTTP every request carries its own prompt: no shared prompt.
        let shares: &[bool] = match self.transport {
            Transport::InProcess => &sc.shared_prompt,
            Transport::Http => &[false],
        };
        for &shared in shares {
            let pps = if shared { " pps" } else { "" };
            for &b in &sc.n_parallel {
                let id = format!("{synthetic}/B{b}{}", if shared { "/pps" } else { "" });
                let name = format!("parallel{http} {synthetic} B{b}{pps}");
                out.push(ServingTest {
                    n_parallel: b,
                    n_seq_max: seq_max,
                    shared,
                    ..self.test(*group, Mode::Parallel, id, name)
                });
            }
            *group += 1;
        }
    }

    /// A test of one request at a time, not shared, without a rate: the mode's own fields
    /// are set by the caller. `id` follows the prefix and mode.
    fn test(&self, group: usize, mode: Mode, id: String, name: String) -> ServingTest {
        // Request and arrival tests replay a prompt file when there is one: no fixed
        // prompt length. Parallel tests always use synthetic prompts.
        let mut params = self.params.clone();
        if mode != Mode::Parallel && self.sc.dataset.is_some() {
            params.n_prompt = 0;
        }
        ServingTest {
            model: self.model,
            group,
            id: format!("{}{}/{id}", self.prefix, mode.name()),
            name,
            mode,
            n_parallel: 1,
            n_seq_max: 1,
            shared: false,
            rate: None,
            params,
            transport: self.transport,
            own_server: false,
            twin: None,
        }
    }
}

/// How a model's serving tests reach it: in-process when it has a GGUF, over HTTP when it
/// names an endpoint or a server; both when both, so the two can be compared.
fn transports(m: &crate::config::ModelEntry) -> Vec<Transport> {
    let both = [
        (m.path.is_some(), Transport::InProcess),
        (m.served.is_some(), Transport::Http),
    ];
    both.into_iter()
        .filter_map(|(has, t)| has.then_some(t))
        .collect()
}

/// The context size of a parallel group: llama-batched-bench's N_KV for its largest B with
/// TG = max(n_gen − 1, 1) steps (room for the shared-prompt copies' dummy token), times
/// n_seq_max, since a split cache gives each sequence n_ctx / n_seq_max cells.
pub(crate) fn parallel_n_ctx(sc: &ServingConfig, n_seq_max: u32, shared: bool) -> u32 {
    let tg = u64::from(sc.n_gen.saturating_sub(1).max(1));
    let (pp, b) = (u64::from(sc.n_prompt), u64::from(n_seq_max));
    n_kv(pp, tg, b, shared, sc.kv_unified) as u32
}

/// The context size for `slots` sequences of at most `longest` tokens each
/// (prompt + generated): request and arrival groups.
pub(crate) fn slots_n_ctx(longest: u32, slots: u32) -> u32 {
    longest.saturating_mul(slots.max(1))
}

/// llama-batched-bench's N_KV: cells the test fills. A shared prompt is held once in a
/// unified cache and once per sequence in a split one.
pub fn n_kv(pp: u64, tg: u64, b: u64, shared: bool, unified: bool) -> u64 {
    if shared {
        (if unified { pp } else { b * pp }) + b * tg
    } else {
        b * (pp + tg)
    }
}

/// SHA-256 of the model's SHA-256, the context parameters and everything that defines the
/// serving workload: stable across runs and machines, distinct from llama-bench tests.
pub(crate) fn serving_identity(
    model_sha256: &str,
    t: &ServingTest,
    sc: &ServingConfig,
    seed: u64,
    dataset_sha256: Option<&str>,
) -> String {
    let mut spec = serde_json::json!({
        "mode": t.mode.name(), "n_parallel": t.n_parallel, "n_seq_max": t.n_seq_max,
        "kv_unified": sc.kv_unified, "shared_prompt": t.shared, "arrival_rate": t.rate,
        "n_requests": sc.n_requests, "dataset_sha256": dataset_sha256,
        "chat_template": sc.chat_template, "temperature": sc.temperature, "seed": seed,
    });
    // Served tests are other tests; in-process identities keep their form.
    if t.transport == Transport::Http {
        spec["transport"] = serde_json::json!("http");
    }
    super::identity(model_sha256, &t.params, &format!("\nserving {spec}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse;
    use std::path::Path;

    fn config(serving: &str) -> Config {
        let src = format!(
            "[sweep]\nn_batch=512\n[serving]\n{serving}\n[[model]]\nname='m'\npath='m.gguf'\n"
        );
        parse(Path::new("models.toml"), &src, 2).unwrap()
    }

    #[test]
    fn modes_expand_into_groups_with_unique_ids() {
        let c = config(
            "modes=['request','parallel','arrival']\nn_parallel=[1,4,2]\nshared_prompt=[false,true]\narrival_rate=[0.5,2]\nslots=3",
        );
        let t = expand(&c, &["Q4_1".into()], &[]);
        assert_eq!(t.len(), 1 + 2 * 3 + 2);
        assert_eq!(t[0].id, "m/Q4_1/serve-request/pp128+tg64");
        assert_eq!(t[1].id, "m/Q4_1/serve-parallel/pp128+tg64/B1");
        assert_eq!(t[4].id, "m/Q4_1/serve-parallel/pp128+tg64/B1/pps");
        assert_eq!(t[4].name, "parallel pp128+tg64 B1 pps");
        assert_eq!(t[7].id, "m/Q4_1/serve-arrival/pp128+tg64/rate0.5/slots3");
        let groups: Vec<usize> = t.iter().map(|x| x.group).collect();
        assert_eq!(groups, [0, 1, 1, 1, 2, 2, 2, 3, 3]);
        assert!(t[1..7].iter().all(|x| x.n_seq_max == 4), "largest B");
        assert_eq!((t[7].n_seq_max, t[7].rate), (3, Some(0.5)));
        assert_eq!(t[1].params.n_batch, 512, "the model's axes");
        let mut ids: Vec<_> = t.iter().map(|x| x.id.clone()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), t.len());
    }

    #[test]
    fn a_dataset_replaces_the_prompt_length_of_request_and_arrival_tests_only() {
        let c = config("modes=['request','parallel']\ndataset='p.jsonl'\nn_parallel=2");
        let t = expand(&c, &[], &[]);
        assert_eq!(t[0].id, "m/unknown/serve-request/p.jsonl");
        assert_eq!((t[0].params.n_prompt, t[1].params.n_prompt), (0, 128));
        assert_eq!(t[1].id, "m/unknown/serve-parallel/pp128+tg64/B2");
    }

    #[test]
    fn filters_keep_tests_but_not_their_context() {
        let c = config("modes=['parallel']\nn_parallel=[1,8]");
        let t = expand(&c, &[], &["/B1".into()]);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].n_seq_max, 8);
        assert!(expand(&config("modes=['parallel']"), &[], &["pp512".into()]).is_empty());
    }

    #[test]
    fn contexts_fit_batched_bench_n_kv() {
        let c = config("n_prompt=128\nn_gen=65");
        let sc = c.serving.as_ref().unwrap();
        // TG = 64 decode steps; 8 sequences of 128 + 64
        assert_eq!(parallel_n_ctx(sc, 8, false), 1536);
        assert_eq!(
            parallel_n_ctx(sc, 8, true),
            1536,
            "split cache: a copy per sequence"
        );
        let u = config("n_prompt=128\nn_gen=65\nkv_unified=true");
        assert_eq!(
            parallel_n_ctx(u.serving.as_ref().unwrap(), 8, true),
            128 + 8 * 64
        );
        assert_eq!(slots_n_ctx(100, 4), 400);
    }

    #[test]
    fn no_serving_table_no_tests() {
        let c = parse(Path::new("m.toml"), "[[model]]\nname='m'\npath='m'\n", 2).unwrap();
        assert!(expand(&c, &[], &[]).is_empty());
    }
}
