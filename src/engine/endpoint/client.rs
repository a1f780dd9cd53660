//! Streamed completions from an OpenAI-compatible server, each chunk stamped when it
//! arrives (docs/served.md, "Choice of crates", says why reqwest, eventsource-stream and one
//! current-thread runtime). Nothing a server sends is trusted: a body read into memory is
//! cut at a bound (`read_capped`), and an answer that is not an event stream is named by its
//! status, content type and first bytes.

use std::path::Path;
use std::time::{Duration, Instant};

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::config::endpoint::Api;

pub use super::error::{ClientError, EndpointError, Error};

#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    /// Token ids (the completions API takes them): the very tokens of the in-process test.
    Tokens(Vec<i32>),
    /// Text, for the chat API or when the model's vocabulary is unknown.
    Text(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub prompt: Prompt,
    pub max_tokens: u32,
    pub temperature: f64,
    pub seed: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    pub at: Instant,
    pub text: String,
}

/// `usage`, in the last chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// llama-server's `timings.draft_n` and `timings.draft_n_accepted` for one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Drafts {
    pub drafted: u64,
    pub accepted: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Streamed {
    pub sent: Instant,
    pub chunks: Vec<Chunk>,
    pub usage: Option<Usage>,
    pub drafts: Option<Drafts>,
    pub finish_reason: Option<String>,
}

pub struct Client {
    http: reqwest::Client,
    rt: tokio::runtime::Runtime,
    /// Base URL, ending in `/v1`.
    pub base: String,
    /// The `model` of each request, and the one the answers must name.
    pub model: String,
    pub api: Api,
    pub timeout: Duration,
    /// Fields added to every request body (llama-server's `cache_prompt = false`).
    pub extra: serde_json::Map<String, Value>,
}

impl Client {
    /// A client that also trusts the certificates of `ca_file` (PEM), if any.
    pub fn with_ca_file(
        base: &str,
        model: &str,
        api: Api,
        timeout: Duration,
        ca_file: Option<&Path>,
    ) -> Result<Client, ClientError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ClientError::Runtime(e.to_string()))?;
        let mut builder = reqwest::Client::builder()
            // Loopback servers: a proxy from the environment must not get in between.
            .no_proxy()
            .connect_timeout(Duration::from_secs(5));
        if let Some(f) = ca_file {
            let certs = crate::config::endpoint::ca_certificates(f).map_err(ClientError::CaFile)?;
            let tls = tls::config(certs).map_err(|e| ClientError::Http(e.to_string()))?;
            builder = builder.tls_backend_preconfigured(tls);
        }
        Ok(Client {
            http: builder.build().map_err(|e| ClientError::Http(chain(&e)))?,
            rt,
            base: base.trim_end_matches('/').to_string(),
            model: model.to_string(),
            api,
            timeout,
            extra: serde_json::Map::new(),
        })
    }

    /// The server's root: the base URL without its trailing `/v1` (`/health`, `/props`).
    pub fn root(&self) -> &str {
        self.base.strip_suffix("/v1").unwrap_or(&self.base)
    }

    async fn get(&self, url: &str, timeout: Duration) -> Result<reqwest::Response, Error> {
        self.http
            .get(url)
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| unreachable(url, &e))
    }

    pub fn get_json(&self, url: &str, timeout: Duration) -> Result<Value, Error> {
        self.rt.block_on(async {
            let resp = self.get(url, timeout).await?;
            let status = resp.status();
            let content_type = content_type(&resp);
            let (body, whole) = read_capped(resp, JSON_CAP)
                .await
                .map_err(|e| Error::Broken {
                    chunks: 0,
                    reason: chain(&e),
                })?;
            if !status.is_success() {
                return Err(Error::Status {
                    url: url.into(),
                    status: status.as_u16(),
                    what: format!("({content_type})"),
                    body: excerpt(&body),
                });
            }
            if !whole {
                return Err(Error::malformed(
                    url,
                    format!("the answer is longer than {JSON_CAP} bytes"),
                ));
            }
            serde_json::from_str(&body)
                .map_err(|e| Error::malformed(url, format!("not JSON ({e}): {}", excerpt(&body))))
        })
    }

    /// The HTTP status of GET `url` (llama-server's `/health` is 503 while it loads).
    pub fn status_of(&self, url: &str, timeout: Duration) -> Result<u16, Error> {
        self.rt
            .block_on(async { Ok(self.get(url, timeout).await?.status().as_u16()) })
    }

    /// Sends each request at its offset from a common start and streams every answer
    /// concurrently. Returns the start and one result per request, in order.
    pub fn stream_all(
        &self,
        reqs: &[(Duration, Request)],
    ) -> (Instant, Vec<Result<Streamed, Error>>) {
        self.rt.block_on(async {
            let start = tokio::time::Instant::now();
            let all = reqs.iter().map(|(offset, r)| async move {
                tokio::time::sleep_until(start + *offset).await;
                self.stream(r).await
            });
            let out = futures_util::future::join_all(all).await;
            (start.into_std(), out)
        })
    }

    fn body(&self, r: &Request) -> Value {
        let mut b = json!({
            "model": self.model,
            "max_tokens": r.max_tokens,
            "temperature": r.temperature,
            "seed": r.seed,
            "stream": true,
            "stream_options": { "include_usage": true },
            // As vLLM's `bench serve` does: every request generates max_tokens, so requests
            // are comparable with the in-process test. Servers that ignore it may stop
            // early; such answers are counted as short, never as full.
            "ignore_eos": true,
        });
        let prompt = match &r.prompt {
            Prompt::Tokens(t) if self.api == Api::Chat => json!(format!("{t:?}")),
            Prompt::Tokens(t) => json!(t),
            Prompt::Text(s) => json!(s),
        };
        match self.api {
            Api::Completions => b["prompt"] = prompt,
            Api::Chat => b["messages"] = json!([{ "role": "user", "content": prompt }]),
        }
        b.as_object_mut()
            .expect("a JSON object")
            .extend(self.extra.clone());
        b
    }

    fn url(&self) -> String {
        match self.api {
            Api::Completions => format!("{}/completions", self.base),
            Api::Chat => format!("{}/chat/completions", self.base),
        }
    }

    async fn stream(&self, r: &Request) -> Result<Streamed, Error> {
        let url = self.url();
        let deadline = tokio::time::Instant::now() + self.timeout;
        let sent = Instant::now();
        let timeout = |chunks| Error::Timeout {
            secs: self.timeout.as_secs_f64(),
            chunks,
        };
        let send = self
            .http
            .post(&url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(self.body(r).to_string())
            .send();
        let resp = tokio::time::timeout_at(deadline, send).await;
        let resp = (resp.map_err(|_| timeout(0))?).map_err(|e| unreachable(&url, &e))?;
        let (ok, status) = (resp.status().is_success(), resp.status().as_u16());
        let content_type = content_type(&resp);
        // A 200 that is a web page (a login portal, a proxy's error page) or a JSON answer
        // (a server that ignores `stream`) is named as what it is, not as a broken stream.
        // No content type at all is let through: the events say what they are.
        let events = content_type.is_empty()
            || content_type
                .to_ascii_lowercase()
                .starts_with("text/event-stream");
        if !ok || !events {
            let body = excerpt(&read_capped(resp, EXCERPT_CAP).await.unwrap_or_default().0);
            let what = match ok {
                false => format!("({content_type})"),
                true => format!("with {content_type}, not an event stream"),
            };
            return Err(Error::Status {
                url,
                status,
                what,
                body,
            });
        }
        let mut events = resp.bytes_stream().eventsource();
        let mut r = Reading::new(self.api, &self.model, &url, sent);
        loop {
            let next = tokio::time::timeout_at(deadline, events.next()).await;
            if r.on_event(next.map_err(|_| timeout(r.out.chunks.len()))?)? {
                break;
            }
        }
        r.finish()
    }
}

/// An answer replayed from the bytes of its body, cut into the pieces given (as the network
/// may cut it): the same SSE parsing and the same reading of each event as a live request,
/// without a server. For the fuzz target `sse_stream` and for tests.
pub fn replay(api: Api, model: &str, pieces: &[&[u8]]) -> Result<Streamed, Error> {
    use futures_util::FutureExt;
    let bytes: Vec<_> = (pieces.iter())
        .map(|p| Ok::<_, std::convert::Infallible>(p.to_vec()))
        .collect();
    let mut events = futures_util::stream::iter(bytes).eventsource();
    let mut r = Reading::new(api, model, "replay", Instant::now());
    // Every piece is there already: the stream is never pending.
    while !r.on_event(events.next().now_or_never().flatten())? {}
    r.finish()
}

/// One answer as its events arrive: what was asked of it, and what came so far.
struct Reading<'a> {
    api: Api,
    model: &'a str,
    url: &'a str,
    out: Streamed,
}

type Next<E> = Option<Result<eventsource_stream::Event, eventsource_stream::EventStreamError<E>>>;

impl<'a> Reading<'a> {
    fn new(api: Api, model: &'a str, url: &'a str, sent: Instant) -> Self {
        Reading {
            api,
            model,
            url,
            out: Streamed {
                sent,
                chunks: Vec::new(),
                usage: None,
                drafts: None,
                finish_reason: None,
            },
        }
    }

    fn malformed(&self, what: impl Into<String>) -> Error {
        Error::malformed(self.url, what)
    }

    /// Handles the next SSE event (None: the body ended); true when the answer is complete.
    fn on_event<E: std::fmt::Display>(&mut self, next: Next<E>) -> Result<bool, Error> {
        let (at, chunks) = (Instant::now(), self.out.chunks.len());
        let ev = match next {
            // A body that ends before `[DONE]` and before any finish_reason: the server went
            // away mid-answer.
            None if self.out.finish_reason.is_none() => {
                return Err(Error::Broken {
                    chunks,
                    reason: "the stream ended before [DONE]".into(),
                });
            }
            Some(Err(eventsource_stream::EventStreamError::Transport(e))) => {
                let reason = e.to_string();
                return Err(Error::Broken { chunks, reason });
            }
            Some(Err(other)) => {
                return Err(self.malformed(format!("bad SSE after {chunks} chunks: {other}")));
            }
            Some(Ok(ev)) if ev.data.trim() != "[DONE]" => ev,
            None | Some(Ok(_)) => return Ok(true),
        };
        self.read_chunk(&ev.data, at)?;
        Ok(false)
    }

    fn finish(self) -> Result<Streamed, Error> {
        let o = &self.out;
        if o.usage.is_none() && o.chunks.is_empty() && o.finish_reason.is_none() {
            return Err(self.malformed("the stream ended with no completion chunk"));
        }
        Ok(self.out)
    }

    fn read_chunk(&mut self, data: &str, at: Instant) -> Result<(), Error> {
        let v: Value = serde_json::from_str(data).map_err(|e| {
            self.malformed(format!("an event is not JSON ({e}): {}", excerpt(data)))
        })?;
        if let Some(e) = v.get("error") {
            let msg = e.get("message").and_then(Value::as_str);
            return Err(Error::Server(
                msg.map_or_else(|| e.to_string(), str::to_string),
            ));
        }
        if let Some(got) = v.get("model").and_then(Value::as_str)
            && got != self.model
        {
            return Err(Error::WrongModel {
                got: got.into(),
                want: self.model.to_string(),
            });
        }
        if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
            let usage = Usage::deserialize(u).map_err(|_| {
                let u = excerpt(&u.to_string());
                self.malformed(format!("usage without token counts: {u}"))
            })?;
            self.out.usage = Some(usage);
        }
        if let Some(t) = v.get("timings").filter(|t| t.is_object()) {
            self.read_drafts(t)?;
        }
        let Some(choices) = v.get("choices") else {
            // The usage chunk may come alone.
            let none = || self.malformed(format!("a chunk with no choices: {}", excerpt(data)));
            return self.out.usage.map(|_| ()).ok_or_else(none);
        };
        let Some(choice) = choices.get(0) else {
            return Ok(()); // the usage chunk of the chat API has an empty list
        };
        if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
            self.out.finish_reason = Some(f.into());
        }
        let text = match self.api {
            Api::Completions => choice.get("text"),
            Api::Chat => choice.get("delta").and_then(|d| d.get("content")),
        }
        .and_then(Value::as_str)
        .unwrap_or("");
        if !text.is_empty() {
            let text = text.into();
            self.out.chunks.push(Chunk { at, text });
        }
        Ok(())
    }

    /// llama-server's `timings` object: its draft counters, the last seen winning (each chunk
    /// carries the answer's totals so far). Untrusted: a count that is not a whole number, or
    /// more accepted than drafted, is refused naming both.
    fn read_drafts(&mut self, t: &Value) -> Result<(), Error> {
        let (d, a) = (t.get("draft_n"), t.get("draft_n_accepted"));
        if d.is_none() && a.is_none() {
            return Ok(());
        }
        let n = |v: Option<&Value>| v.map_or(Some(0), Value::as_u64);
        match (n(d), n(a)) {
            (Some(drafted), Some(accepted)) if accepted <= drafted => {
                self.out.drafts = Some(Drafts { drafted, accepted });
                Ok(())
            }
            _ => Err(self.malformed(format!(
                "timings.draft_n_accepted must be a whole number at most timings.draft_n: {}",
                excerpt(&t.to_string())
            ))),
        }
    }
}

fn unreachable(url: &str, e: &reqwest::Error) -> Error {
    Error::Unreachable {
        url: url.into(),
        reason: tls::explain(chain(e)),
    }
}

/// An error and its causes on one line: reqwest's Display stops at "error sending request";
/// the causes say why (a refused connection, a certificate that does not verify).
fn chain(e: &dyn std::error::Error) -> String {
    let mut reason = e.to_string();
    for s in std::iter::successors(e.source(), |s| s.source()) {
        let s_text = s.to_string();
        if !reason.ends_with(&s_text) {
            reason = format!("{reason}: {s_text}");
        }
    }
    reason
}

/// The most of a JSON answer (`/v1/models`, `/props`) read into memory.
const JSON_CAP: usize = 4 << 20;
const EXCERPT_CAP: usize = 4096;

fn content_type(resp: &reqwest::Response) -> String {
    let v = resp.headers().get(reqwest::header::CONTENT_TYPE);
    v.and_then(|v| v.to_str().ok()).unwrap_or("").to_string()
}

/// At most `cap` bytes of a body (as text, invalid UTF-8 replaced), and whether that was all
/// of it: however long a server's body, no more than `cap` is held.
async fn read_capped(
    mut resp: reqwest::Response,
    cap: usize,
) -> Result<(String, bool), reqwest::Error> {
    let mut buf: Vec<u8> = Vec::new();
    let mut whole = true;
    while whole && let Some(chunk) = resp.chunk().await? {
        let room = cap - buf.len();
        whole = chunk.len() <= room;
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    Ok((String::from_utf8_lossy(&buf).into_owned(), whole))
}

fn excerpt(s: &str) -> String {
    if s.trim().is_empty() {
        return "(empty body)".into();
    }
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match one.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &one[..i]),
        None => one,
    }
}

mod tls;

#[cfg(test)]
mod tests;
