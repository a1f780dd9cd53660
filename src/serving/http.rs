//! Serving tests against an OpenAI-compatible server (`engine::endpoint::Client`): the
//! HTTP transport of `serving::driver`, with the in-process tests' figures and record.
//! Timing, token counts and phases as docs/served.md says; what a server does not show
//! (queue time, its own T_PP/T_TG split) is left out, not made up.

use std::path::Path;
use std::time::{Duration, Instant};

use super::dataset::PromptFile;
use super::driver::{self, Gathered, Measured, Rep, Tally, Transport};
use super::error::ServingError;
use super::metrics::{self, Trace};
use crate::config::ServedDraft;
use crate::config::serving::ServingConfig;
use crate::engine::endpoint::{Client, Prompt, Request, ServerInfo, Streamed};
use crate::engine::measure::TokenSource;
use crate::output::progress::Progress;
use crate::plan::serving::ServingTest;
use crate::record::serving::{RepFigures, ServedDrafts, Serving};

pub(crate) mod tokens;
pub use tokens::{Counted, Tokenize, count, token_times};

/// The model's vocabulary size and BOS, read from its GGUF header, so served prompts are the
/// very token ids of the in-process test. Without them prompts are text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Vocab {
    pub n_vocab: i32,
    pub bos: Option<i32>,
}

/// The BOS id counts when `tokenizer.ggml.add_bos_token` says so, else by llama.cpp's
/// default (SentencePiece vocabularies add it).
pub(crate) fn vocab_of(path: &Path) -> Option<Vocab> {
    use crate::gguf::Value;
    let h = crate::gguf::reader::read_header(path).ok()?;
    let n_vocab = match h.get("tokenizer.ggml.tokens")? {
        Value::Array(a) => a.len() as i32,
        _ => return None,
    };
    let add_bos = match h.get("tokenizer.ggml.add_bos_token") {
        Some(Value::Bool(b)) => *b,
        _ => h.get("tokenizer.ggml.model").and_then(Value::as_str) == Some("llama"),
    };
    let bos = h.get("tokenizer.ggml.bos_token_id").and_then(Value::as_u64);
    Some(Vocab {
        n_vocab,
        bos: bos.map(|b| b as i32).filter(|_| add_bos),
    })
}

impl Vocab {
    pub(crate) fn tokens(self, seed: u64) -> TokenSource {
        TokenSource::random_ids(seed, self.n_vocab, self.bos)
    }
}

pub(crate) struct HttpRun<'a> {
    pub client: &'a Client,
    pub server: &'a ServerInfo,
    pub sc: &'a ServingConfig,
    pub seed: u64,
    pub reps: u32,
    pub vocab: Option<Vocab>,
    pub prompts: Option<&'a PromptFile>,
    /// The model's tokenizer, for servers that give no usage.
    pub tokenize: Option<Tokenize<'a>>,
    /// The draft tpsbench gave the llama-server it launched, and its SHA-256.
    pub draft: Option<&'a (ServedDraft, String)>,
}

/// Words for text prompts when the vocabulary is unknown: common, single-token in most
/// tokenizers, so a prompt of n words is near n tokens (the record has the real count).
const WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by",
    "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an",
    "had", "they", "you", "were", "their",
];

struct Source {
    tokens: Option<TokenSource>,
    rng: crate::util::rng::SplitMix64,
}

impl Source {
    fn new(seed: u64, vocab: Option<Vocab>) -> Source {
        Source {
            tokens: vocab.map(|v| v.tokens(seed)),
            rng: crate::util::rng::SplitMix64(seed),
        }
    }

    /// A synthetic prompt of `n` tokens (ids when the vocabulary is known, as in-process).
    fn prompt(&mut self, n: usize) -> Prompt {
        match &mut self.tokens {
            Some(t) => Prompt::Tokens(t.prompt(n)),
            None => Prompt::Text(
                (0..n)
                    .map(|_| WORDS[(self.rng.next_u64() % WORDS.len() as u64) as usize])
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
        }
    }
}

fn trace(s: &Streamed, start: Instant, n_prompt: u32, n: u64) -> Trace {
    let ns = |t: Instant| t.saturating_duration_since(start).as_nanos() as u64;
    let chunk_ns: Vec<u64> = s.chunks.iter().map(|c| ns(c.at)).collect();
    let arrival = ns(s.sent);
    Trace {
        arrival_ns: arrival,
        // Admission is the server's; the client cannot see it.
        admitted_ns: arrival,
        // Checked by `count`: at most the prompt's length and room for special tokens.
        n_prompt: s.usage.map_or(n_prompt, |u| {
            u32::try_from(u.prompt_tokens).unwrap_or(u32::MAX)
        }),
        token_ns: token_times(&chunk_ns, n as usize),
        tokens: Vec::new(),
    }
}

#[derive(Default)]
struct Batch {
    traces: Vec<Trace>,
    n_pp: u64,
    n_out: u64,
    t_ns: u64,
    tally: Tally,
}

impl HttpRun<'_> {
    /// Request `j` of repetition `rep`.
    fn request(&self, prompt: Prompt, max_tokens: u32, rep: u32, j: usize) -> Request {
        Request {
            prompt,
            max_tokens,
            temperature: self.sc.temperature,
            seed: driver::request_seed(self.seed, rep, j),
        }
    }

    /// Sends `reqs` at their offsets; the first failure fails the batch, naming how many
    /// failed.
    fn send(&self, reqs: &[(Duration, Request)]) -> Result<Batch, ServingError> {
        let (start, answers) = self.client.stream_all(reqs);
        let failed = answers.iter().filter(|a| a.is_err()).count();
        if let Some(Err(e)) = answers.iter().find(|a| a.is_err()) {
            return Err(ServingError::Refused(if failed > 1 {
                format!(
                    "{e} (and {} more of {} requests failed)",
                    failed - 1,
                    reqs.len()
                )
            } else {
                e.to_string()
            }));
        }
        let mut b = Batch::default();
        for ((_, q), a) in reqs.iter().zip(answers) {
            let s = a.expect("failures returned above");
            let n_prompt = match &q.prompt {
                Prompt::Tokens(t) => t.len() as u32,
                Prompt::Text(_) => 0,
            };
            let (n, counted) = count(&s, self.tokenize, q)?;
            let t = trace(&s, start, n_prompt, n);
            b.tally.counted = b.tally.counted.max(counted);
            b.tally.short += u32::from(n < u64::from(q.max_tokens));
            b.n_pp += u64::from(t.n_prompt);
            b.n_out += n;
            b.t_ns = b.t_ns.max(t.token_ns.last().copied().unwrap_or(0));
            b.traces.push(t);
            let d = &mut b.tally.drafts;
            d.answers += 1;
            if let Some(x) = s.drafts {
                d.answers_counted = d.answers_counted.saturating_add(1);
                d.drafted = d.drafted.saturating_add(x.drafted);
                d.accepted = d.accepted.saturating_add(x.accepted);
            }
        }
        Ok(b)
    }

    /// The requests of a request, arrival or goodput test, as in-process: the prompt file's
    /// (ShareGPT's sampling takes the model's tokenizer: the entry's `path`), or `n`
    /// synthetic prompts of n_prompt tokens from the same seed.
    fn workload(&self, n: usize) -> Result<Vec<(Prompt, u32)>, ServingError> {
        let sc = self.sc;
        let Some(f) = self.prompts else {
            let mut src = Source::new(self.seed, self.vocab);
            return Ok((0..n)
                .map(|_| (src.prompt(sc.n_prompt as usize), sc.n_gen))
                .collect());
        };
        if f.sharegpt && self.tokenize.is_none() {
            return Err(ServingError::Refused(format!(
                "{}: sampling ShareGPT as vLLM does counts tokens with the model's \
                 tokenizer: give the entry a `path` to its GGUF",
                f.name
            )));
        }
        // A prompt file is never tokenized here: only ShareGPT's sampling counts.
        let count = |t: &str| match self.tokenize {
            Some(c) => c(t).map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            None => Ok(0),
        };
        let picked = crate::serving::dataset::serving_picks(f, n, self.seed, sc.n_gen, count)?;
        let text = |(i, n_gen): (usize, u32)| (Prompt::Text(f.prompts[i].text.clone()), n_gen);
        Ok(picked.into_iter().map(text).collect())
    }

    pub fn measure(
        &self,
        t: &ServingTest,
        progress: &mut dyn Progress,
    ) -> Result<Measured, ServingError> {
        let mut tr = Http {
            run: self,
            // Parallel tests draw fresh prompts every repetition, from one stream per test.
            synthetic: Source::new(self.seed, self.vocab),
        };
        driver::measure(&mut tr, self.sc, (self.seed, self.reps), t, progress)
    }
}

struct Http<'r, 'a> {
    run: &'r HttpRun<'a>,
    synthetic: Source,
}

impl Transport for Http<'_, '_> {
    fn parallel(&mut self, t: &ServingTest, rep: u32) -> Result<Rep, ServingError> {
        let (run, sc) = (self.run, self.run.sc);
        let reqs: Vec<_> = (0..t.n_parallel as usize)
            .map(|j| {
                let p = self.synthetic.prompt(sc.n_prompt as usize);
                (Duration::ZERO, run.request(p, sc.n_gen, rep, j))
            })
            .collect();
        let b = run.send(&reqs)?;
        let n_tg = (b.traces.iter())
            .map(|t| t.token_ns.len().saturating_sub(1) as u64)
            .sum();
        let f = phases(&b, n_tg).figures();
        Ok(b.rep(f, true))
    }

    /// Each request sent when the last has its answer; the repetition's phases are their
    /// sums, T_PP to each first token and T_TG from there to its last.
    fn requests(&mut self, _: &ServingTest, rep: u32) -> Result<Rep, ServingError> {
        let run = self.run;
        let mut all = Batch::default();
        let mut sum = metrics::Phases::default();
        for (k, (p, max)) in (run.workload(run.sc.n_requests as usize)?.into_iter()).enumerate() {
            let b = run.send(&[(Duration::ZERO, run.request(p, max, rep, k))])?;
            sum.add(&phases(&b, b.n_out.saturating_sub(1)));
            all.follow(b);
        }
        Ok(all.rep(sum.figures(), true))
    }

    fn arrivals(
        &mut self,
        _: &ServingTest,
        rate: f64,
        n: usize,
        rep: u32,
    ) -> Result<Rep, ServingError> {
        let run = self.run;
        let offsets = metrics::poisson_offsets(n, rate, run.seed.wrapping_add(u64::from(rep)));
        let reqs: Vec<_> = (run.workload(n)?.into_iter().zip(offsets).enumerate())
            .map(|(k, ((p, max), off))| (Duration::from_nanos(off), run.request(p, max, rep, k)))
            .collect();
        let b = run.send(&reqs)?;
        let mut f = metrics::arrival_figures(b.t_ns, b.n_out, b.n_pp + b.n_out, b.t_ns, 0);
        f.idle_ms = None;
        Ok(b.rep(f, false))
    }

    fn finish(&self, s: &mut Serving, g: &Gathered) -> u32 {
        let run = self.run;
        // The prompts' lengths as the server counted them (its usage; 0 where it gave none).
        let lengths: Vec<f64> = g.traces.iter().map(|(_, _, t)| t.n_prompt as f64).collect();
        let chat = run.client.api == crate::config::endpoint::Api::Chat;
        s.dataset = run.prompts.map(|f| f.info(chat, &lengths));
        s.transport = crate::record::serving::Transport::Http;
        s.server = Some(run.server.clone());
        s.token_counts = Some(g.tally.counted.name().into());
        s.short_requests = g.tally.short;
        // What the server's drafter did: when it said (any answer carried counters), or
        // when tpsbench gave it a draft (then zero counts say it drafted nothing).
        if g.tally.drafts.answers_counted > 0 || run.draft.is_some() {
            s.drafts = Some(ServedDrafts {
                draft: run
                    .draft
                    .map(|d| crate::config::values::file_name(&d.0.path)),
                draft_sha256: run.draft.map(|d| d.1.clone()),
                draft_max: run.draft.map(|d| d.0.draft_max),
                draft_min: run.draft.map(|d| d.0.draft_min),
                ..g.tally.drafts.clone()
            });
        }
        run.server.slot_n_ctx.unwrap_or(0) as u32
    }
}

impl Batch {
    /// Appends `b`, sent when this one ended: requests that follow each other, shifted onto
    /// the repetition's clock.
    fn follow(&mut self, mut b: Batch) {
        let offset = self.t_ns;
        for tr in &mut b.traces {
            tr.arrival_ns += offset;
            tr.admitted_ns += offset;
            tr.token_ns.iter_mut().for_each(|x| *x += offset);
        }
        self.t_ns = offset + b.t_ns;
        self.n_pp += b.n_pp;
        self.n_out += b.n_out;
        self.tally.join(&b.tally);
        self.traces.append(&mut b.traces);
    }

    /// The batch as a repetition of figures `f`: its sample's time is T_TG where it has
    /// `phases` (parallel, request), else its whole time.
    fn rep(self, f: RepFigures, phases: bool) -> Rep {
        Rep {
            sample_ns: match f.t_tg_ms {
                Some(ms) if phases => (ms * 1e6) as u64,
                _ => self.t_ns,
            },
            sample_ts: f.aggregate_ts.unwrap_or(f.output_ts),
            figs: f,
            traces: self.traces,
            start_ns: 0,
            n_pp: self.n_pp,
            n_out: self.n_out,
            n_kv: None,
            tally: self.tally,
        }
    }
}

/// The phases of requests sent together, read off their traces: T_PP from the first send to
/// the last first token (every prompt in and a token out), T_TG from there to the last
/// token, as llama-batched-bench's phases; `n_tg` tokens decoded in T_TG.
fn phases(b: &Batch, n_tg: u64) -> metrics::Phases {
    let last_first = (b.traces.iter())
        .filter_map(|t| t.token_ns.first().copied())
        .max()
        .unwrap_or(0);
    let start = b.traces.iter().map(|t| t.arrival_ns).min().unwrap_or(0);
    metrics::Phases {
        t_pp_ns: last_first.saturating_sub(start),
        t_tg_ns: b.t_ns.saturating_sub(last_first),
        t_ns: b.t_ns.saturating_sub(start),
        n_pp: b.n_pp,
        n_tg,
        n_out: b.n_out,
        // Time outside the server is not observable from here.
        engine_ns: b.t_ns.saturating_sub(start),
    }
}

#[cfg(test)]
mod tests;
