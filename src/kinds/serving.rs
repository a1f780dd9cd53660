//! request, parallel, arrival and goodput tests (the `[serving]` table). In-process, the
//! tests of one group share a context, made and warmed up once (`serving::run::GroupRun`),
//! as llama-batched-bench makes one context for its whole -npl list. Over HTTP, the served
//! tests of one model share one server: reached at its `endpoint`, or started here
//! (`server = ...`) and stopped after its last test (`serving::http`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::endpoint::{Served, ServedDraft, ServerLaunch};
use crate::config::serving::ServingConfig;
use crate::config::{Config, ModelEntry};
use crate::engine::endpoint::launch::{self, Launched};
use crate::engine::endpoint::{Client, ServerInfo, identity};
use crate::engine::{Engine, EngineError, LoadParams, Model};
use crate::kinds::error::{KindError, NoModel};
use crate::output::progress::Progress;
use crate::plan::serving::{ServingTest, Transport};
use crate::plan::{Detail, PlannedTest};
use crate::record::TestRecord;
use crate::serving::Serving;
use crate::serving::dataset::PromptFile;
use crate::serving::error::ServingError;
use crate::serving::http::{HttpRun, Vocab, vocab_of};
use crate::serving::run::{GroupRun, Ready};

/// What a group's tests share, or why it could not be made.
pub enum Group<'m> {
    InProcess(Ready<'m>),
    Http(Box<ServedGroup<'m>>),
    /// The line each test of the group fails with.
    Failed(String),
}

/// A reachable server (started here or not), who it says it is, and the model's vocabulary
/// and tokenizer (loaded only if a server gives no token counts).
pub struct ServedGroup<'m> {
    client: Client,
    info: ServerInfo,
    launched: Option<Launched>,
    vocab: Option<Vocab>,
    engine: &'m dyn Engine,
    path: Option<PathBuf>,
    tokenizer: std::cell::OnceCell<Result<Box<dyn Model + 'm>, EngineError>>,
    /// The draft of the llama-server tpsbench launched, with its SHA-256 (which matches it
    /// to the in-process speculative tests of the same draft).
    draft: Option<(ServedDraft, String)>,
}

fn group_run<'a>(
    engine: &'a dyn Engine,
    config: &'a Config,
    prompts: Option<&'a PromptFile>,
) -> GroupRun<'a> {
    let sc = config
        .serving
        .as_ref()
        .expect("serving tests come from a [serving] table");
    GroupRun {
        engine,
        sc,
        seed: sc.seed.unwrap_or(config.settings.seed),
        reps: sc.repetitions,
        prompts,
    }
}

/// What the group that `first` opens shares: a context, or a server (its log beside
/// `results`); None when `first` is not a serving test.
pub fn open<'m>(
    engine: &'m dyn Engine,
    config: &Config,
    prompts: Option<&PromptFile>,
    model: Result<&'m dyn Model, NoModel>,
    first: &PlannedTest,
    results: Option<&Path>,
) -> Option<Group<'m>> {
    let Detail::Serving(first) = &first.detail else {
        return None;
    };
    let gr = group_run(engine, config, prompts);
    let shared = if first.transport == Transport::Http {
        open_served(engine, config, gr.sc, first, results).map(|g| Group::Http(Box::new(g)))
    } else {
        (model.map_err(|e| KindError::Refused(e.to_string())))
            .and_then(|m| Ok(Group::InProcess(gr.prepare(m, first)?)))
    };
    Some(shared.unwrap_or_else(|e| Group::Failed(e.to_string())))
}

fn served_of(m: &ModelEntry) -> Result<&Served, KindError> {
    m.served.as_ref().ok_or_else(|| KindError::NotServed {
        model: m.name.clone(),
    })
}

fn client_for(m: &ModelEntry, s: &Served, endpoint: &str) -> Result<Client, KindError> {
    let model = s.served_model.clone().unwrap_or_else(|| m.name.clone());
    let timeout = Duration::from_secs_f64(s.request_timeout_s);
    Ok(Client::with_ca_file(
        endpoint,
        &model,
        s.api,
        timeout,
        s.ca_file.as_deref(),
    )?)
}

/// Before any test: every endpoint that tpsbench does not start itself answers and serves
/// the model the requests will name, and every server tpsbench starts has its program.
pub fn preflight(
    config: &Config,
    models: impl IntoIterator<Item = usize>,
) -> Result<(), KindError> {
    for mi in models {
        let m = &config.models[mi];
        let s = served_of(m)?;
        let model = m.name.clone();
        match (&s.server, &s.endpoint) {
            (None, Some(ep)) => {
                if let Err(cause) = identity::probe(&client_for(m, s, ep)?) {
                    return Err(KindError::Endpoint { model, cause });
                }
            }
            (Some(ServerLaunch::LlamaServer { binary, draft, .. }), _) => match (binary, draft) {
                (None, _) if launch::pinned_llama_server().is_none_or(|p| !p.is_file()) => {
                    return Err(KindError::NoPinnedServer { model });
                }
                (Some(b), _) if !b.is_file() => {
                    return Err(KindError::NoServer {
                        model,
                        path: b.clone(),
                    });
                }
                (_, Some(d)) if !d.path.is_file() => {
                    return Err(KindError::NoDraft {
                        model,
                        path: d.path.clone(),
                    });
                }
                _ => {}
            },
            _ => {}
        }
    }
    Ok(())
}

/// The llama-server command of `launch` for `first`'s model with the test's settings, at
/// `port` serving `alias`, and slots and context for every served test of `[serving]`: it
/// runs what the in-process tests run.
fn llama_server_command(
    launch: &ServerLaunch,
    (port, alias): (Option<u16>, &str),
    sc: &ServingConfig,
    m: &ModelEntry,
    first: &ServingTest,
) -> Result<Vec<String>, KindError> {
    let refused = |s: &str| KindError::Refused(s.into());
    let ServerLaunch::LlamaServer {
        binary,
        args,
        draft,
        ..
    } = launch
    else {
        return Err(refused("not a llama-server"));
    };
    let binary = (binary.clone().or_else(launch::pinned_llama_server))
        .ok_or_else(|| refused("no llama-server: run scripts/reference-tools --server"))?;
    let port = port.ok_or_else(|| refused("the endpoint names no port"))?;
    let no_path = "server = \"llama-server\" serves the model's `path`, and it has none";
    let path = m.path.as_deref().ok_or_else(|| refused(no_path))?;
    let path = utf8(path, "model")?;
    let p = &first.params;
    // A test with a server of its own (a tune candidate) is served in its own slots.
    let slots = if first.own_server {
        first.n_seq_max
    } else {
        sc.n_parallel
            .iter()
            .copied()
            .max()
            .unwrap_or(1)
            .max(sc.slots)
    };
    // Room for each slot's longest request (synthetic prompts), or the model's own context
    // with a prompt file.
    let n_ctx = if sc.dataset.is_some() {
        0
    } else {
        slots * (sc.n_prompt + sc.n_gen)
    };
    let mut c: Vec<String> = vec![binary.to_string_lossy().into(), "-m".into(), path.into()];
    c.extend(flag_pairs(&[
        ("--host", "127.0.0.1".to_string()),
        ("--port", port.to_string()),
        ("--alias", alias.to_string()),
        ("--ctx-size", n_ctx.to_string()),
        ("--parallel", slots.to_string()),
        // No prompt cache in host memory: every request prefills its whole prompt, as
        // the in-process tests do.
        ("--cache-ram", "0".to_string()),
    ]));
    c.extend(crate::plan::serving::server_flags::flags(p));
    let kv = if sc.kv_unified {
        "--kv-unified"
    } else {
        "--no-kv-unified"
    };
    c.push(kv.into());
    if let Some(d) = draft {
        // Drafting as `[speculative]`'s draft-simple does in process: the draft on the
        // target's devices, K and the minimum as given.
        let dp = utf8(&d.path, "draft")?;
        let kind = crate::config::speculative::Drafter::DraftSimple;
        c.extend(flag_pairs(&[
            ("--spec-type", kind.name().to_string()),
            ("--model-draft", dp.to_string()),
            ("--spec-draft-n-max", d.draft_max.to_string()),
            ("--spec-draft-n-min", d.draft_min.to_string()),
            ("--spec-draft-ngl", p.n_gpu_layers.to_string()),
        ]));
    }
    c.extend(args.iter().cloned());
    Ok(c)
}

/// The `what` path as a command's argument.
fn utf8<'p>(p: &'p Path, what: &str) -> Result<&'p str, KindError> {
    p.to_str()
        .ok_or_else(|| KindError::Refused(format!("the {what} path is not UTF-8")))
}

/// `(flag, value)` pairs as a command's arguments.
fn flag_pairs<'a>(kv: &'a [(&str, String)]) -> impl Iterator<Item = String> + 'a {
    kv.iter().flat_map(|(k, v)| [k.to_string(), v.clone()])
}

fn open_served<'m>(
    engine: &'m dyn Engine,
    config: &Config,
    sc: &ServingConfig,
    first: &ServingTest,
    results: Option<&Path>,
) -> Result<ServedGroup<'m>, KindError> {
    let m = &config.models[first.model];
    let s = served_of(m)?;
    let (mut client, launched) = match (&s.server, s.endpoint.as_deref()) {
        (None, Some(ep)) => (client_for(m, s, ep)?, None),
        (None, None) => return Err(KindError::Refused("no endpoint".into())),
        (Some(launch), _) => {
            let (client, l) = start_server(launch, (m, s), sc, first, results)?;
            (client, Some(l))
        }
    };
    let mut info = identity::probe(&client).map_err(|e| KindError::Refused(e.to_string()))?;
    if info.build.is_some() {
        // Only llama-server has a build; it reuses a slot's KV for a shared prefix unless told.
        client.extra.insert("cache_prompt".into(), false.into());
    }
    warm_up(&client);
    if let Some(l) = &launched {
        info.sources = l
            .command
            .first()
            .and_then(|b| launch::stamp_sources(Path::new(b)));
        info.command = Some(l.command.clone());
        info.log = Some(l.log.display().to_string());
        // The user's command: its settings are its own, not the test's.
        info.user_command = matches!(s.server, Some(ServerLaunch::Command { .. }));
    }
    let draft = match &s.server {
        Some(ServerLaunch::LlamaServer { draft: Some(d), .. }) => {
            let sha = crate::util::system::sha256_file(&d.path)
                .map_err(|e| KindError::Refused(format!("{}: {e}", d.path.display())))?;
            Some((d.clone(), sha))
        }
        _ => None,
    };
    Ok(ServedGroup {
        client,
        info,
        launched,
        vocab: m.path.as_deref().and_then(vocab_of),
        engine,
        path: m.path.clone(),
        tokenizer: std::cell::OnceCell::new(),
        draft,
    })
}

fn start_server(
    launch: &ServerLaunch,
    (m, s): (&ModelEntry, &Served),
    sc: &ServingConfig,
    first: &ServingTest,
    results: Option<&Path>,
) -> Result<(Client, Launched), KindError> {
    let (endpoint, port) = match &s.endpoint {
        Some(ep) => (ep.clone(), port_of(ep)),
        None => {
            let port = launch::free_loopback_port()?;
            (format!("http://127.0.0.1:{port}/v1"), Some(port))
        }
    };
    let client = client_for(m, s, &endpoint)?;
    let (command, ready) = match launch {
        ServerLaunch::Command {
            command,
            ready_timeout_s,
        } => (command.clone(), *ready_timeout_s),
        ServerLaunch::LlamaServer {
            ready_timeout_s, ..
        } => {
            let command = llama_server_command(launch, (port, &client.model), sc, m, first)?;
            (command, *ready_timeout_s)
        }
    };
    // A server of the test's own logs under the test's id (each round anew).
    let log = log_path(results, if first.own_server { &first.id } else { &m.name });
    let l = Launched::start(&command, &log, &client, Duration::from_secs_f64(ready))?;
    Ok((client, l))
}

/// One untimed request, as llama-bench's warm-up run and vLLM's initial test prompt: a
/// server's first request pays what later ones do not. A failure here is not one: a server
/// that cannot answer fails the first test, which says why.
fn warm_up(client: &Client) {
    let req = crate::engine::endpoint::Request {
        prompt: crate::engine::endpoint::Prompt::Text("Hello".into()),
        max_tokens: 4,
        temperature: 0.0,
        seed: 0,
    };
    let _ = client.stream_all(&[(Duration::ZERO, req)]);
}

fn port_of(endpoint: &str) -> Option<u16> {
    let rest = endpoint.split("://").nth(1)?;
    let host = rest.split('/').next()?;
    host.rsplit_once(':')?.1.parse().ok()
}

/// `<result stem>.server-<model>.log` beside the result file, else in the temp directory.
fn log_path(results: Option<&Path>, model: &str) -> PathBuf {
    let safe = crate::util::file_safe(model);
    match results {
        Some(r) => {
            let stem = r
                .file_stem()
                .map_or("run".into(), |s| s.to_string_lossy().into_owned());
            r.with_file_name(format!("{stem}.server-{safe}.log"))
        }
        None => {
            std::env::temp_dir().join(format!("tpsbench-{}-server-{safe}.log", std::process::id()))
        }
    }
}

/// Measures one test of the group into `rec`; returns the progress line.
pub fn run(
    engine: &dyn Engine,
    config: &Config,
    prompts: Option<&PromptFile>,
    group: &mut Group,
    t: &ServingTest,
    rec: &mut TestRecord,
    progress: &mut dyn Progress,
) -> String {
    let gr = group_run(engine, config, prompts);
    rec.warmup = 1;
    rec.seed = gr.seed;
    let result = match group {
        Group::InProcess((session, work)) => {
            rec.placement = session.placement();
            gr.measure(session.as_mut(), work, t, progress)
        }
        Group::Http(g) => served(&gr, g, t, prompts, progress),
        Group::Failed(e) => Err(ServingError::Refused(e.clone())),
    };
    match result {
        Ok((serving, samples_ns, samples_ts, n_ctx)) => {
            let line = summary_line(&serving);
            rec.set_rates(samples_ns, samples_ts);
            rec.n_ctx = n_ctx;
            rec.serving = Some(Box::new(serving));
            line
        }
        Err(e) => {
            rec.fail(e.to_string());
            format!("FAILED: {e}")
        }
    }
}

fn summary_line(s: &Serving) -> String {
    let agg = s.aggregate_ts.map_or("-".into(), |x| format!("{x:.2}"));
    let per = s.per_request_ts.map_or("-".into(), |x| format!("{x:.2}"));
    format!(
        "aggregate {agg} t/s, per request {per} t/s, TTFT p50 {:.1} ms, ITL p50 {:.1} ms",
        s.ttft_ms.p50, s.itl_ms.p50
    )
}

fn served(
    gr: &GroupRun,
    g: &mut ServedGroup,
    t: &ServingTest,
    prompts: Option<&PromptFile>,
    progress: &mut dyn Progress,
) -> Result<crate::serving::driver::Measured, ServingError> {
    // A server started here that has died fails every later test at once, saying why.
    let dead = |l: &mut Launched| {
        l.exited()
            .map(|st| format!("the server exited ({st}); its log ends: {}", l.log_tail()))
    };
    if let Some(e) = g.launched.as_mut().and_then(dead) {
        return Err(ServingError::Refused(e));
    }
    let (engine, path, tokenizer) = (g.engine, &g.path, &g.tokenizer);
    let count = |text: &str| -> Result<u64, EngineError> {
        let tok = |s: String| EngineError::Other(s);
        let m = tokenizer.get_or_init(|| {
            let p = path.as_deref().ok_or_else(|| tok("no GGUF".into()))?;
            engine.load(p, &LoadParams::default())
        });
        let m = m
            .as_ref()
            .map_err(|e| tok(format!("the tokenizer could not load: {e}")))?;
        let sm = m
            .serving()
            .ok_or_else(|| tok("this engine has no tokenizer".into()))?;
        Ok(sm.tokenize(text, false, true)?.len() as u64)
    };
    let run = HttpRun {
        client: &g.client,
        server: &g.info,
        sc: gr.sc,
        seed: gr.seed,
        reps: gr.reps,
        vocab: g.vocab,
        prompts,
        tokenize: g.path.is_some().then_some(&count as _),
        draft: g.draft.as_ref(),
    };
    run.measure(t, progress).map_err(|e| {
        // Say so when the failure is the server going away.
        std::thread::sleep(Duration::from_millis(200));
        match g.launched.as_mut().and_then(dead) {
            Some(d) => ServingError::Refused(format!("{e}; {d}")),
            None => e,
        }
    })
}
