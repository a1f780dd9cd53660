//! A `[[model]]` reached over HTTP (`endpoint`, `served_model`, `api`, `request_timeout_s`,
//! `ca_file`) or served by a launched llama-server (`server`); docs/configuration.md shows
//! each. Errors name file, line and key.

use std::path::{Path, PathBuf};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde::Deserialize;
use toml::Spanned;

use super::{ConfigError, Ctx, Invalid};

/// How a model is reached over HTTP: an OpenAI-compatible server (llama-server, Ollama, vLLM...).
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    /// Base URL of the API, e.g. "http://127.0.0.1:8080/v1" (trailing '/' removed). None only
    /// with the built-in llama-server launcher, which then picks a free loopback port at run time.
    pub endpoint: Option<String>,
    /// The `model` field of each request; None: the model entry's `name`.
    pub served_model: Option<String>,
    pub api: Api,
    /// Per-request timeout (whole request, connect to last byte). Default 120.
    pub request_timeout_s: f64,
    /// PEM certificates trusted besides the system's roots, for an `https://` endpoint signed
    /// by a private authority (relative paths resolve against the config's folder).
    pub ca_file: Option<PathBuf>,
    pub server: Option<ServerLaunch>,
}

/// Which OpenAI-compatible route the requests take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// `/v1/completions` (the default): the prompt as given.
    Completions,
    /// `/v1/chat/completions`: the server applies the model's chat template.
    Chat,
}

/// How tpsbench starts the server before the entry's served tests (and stops it after).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum ServerLaunch {
    /// `server = "llama-server"` (binary None: the pinned build of `scripts/reference-tools --server`)
    /// or `server = { llama_server = "path/to/llama-server", args = ["--foo"], ready_timeout_s = 120 }`.
    /// Needs the entry's `path` (the GGUF it serves).
    LlamaServer {
        binary: Option<PathBuf>,
        args: Vec<String>,
        ready_timeout_s: f64,
        /// A draft model for speculative decoding (`draft`, `draft_max`, `draft_min`).
        #[serde(skip_serializing_if = "Option::is_none")]
        draft: Option<ServedDraft>,
    },
    /// `server = { command = ["prog", "arg", ...], ready_timeout_s = 120 }`: started as given;
    /// needs `endpoint`.
    Command {
        command: Vec<String>,
        ready_timeout_s: f64,
    },
}

/// A draft model the launched llama-server decodes with (`--spec-type draft-simple`): its
/// requests then carry llama-server's own draft counters.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ServedDraft {
    /// The draft GGUF (relative paths resolve against the config's folder).
    pub path: PathBuf,
    /// Tokens drafted per step at most (K, `--spec-draft-n-max`).
    pub draft_max: u32,
    /// Fewer drafted tokens than this are not verified (`--spec-draft-n-min`).
    pub draft_min: u32,
}

/// llama-server's own defaults for `--spec-draft-n-max` and `--spec-draft-n-min` in the pinned
/// llama.cpp (common/common.h), so an unset key means what it means there.
const DRAFT_MAX: u32 = 3;
const DRAFT_MIN: u32 = 0;

/// Seconds a request may take, and a launched server may take to answer, by default.
const TIMEOUT_S: f64 = 120.0;

/// `server = "llama-server"` or `server = { ... }`.
pub(crate) enum RawServer {
    Name(String),
    Table(Box<RawServerTable>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawServerTable {
    llama_server: Option<Spanned<String>>,
    command: Option<Spanned<Vec<String>>>,
    args: Option<Spanned<Vec<String>>>,
    ready_timeout_s: Option<Spanned<f64>>,
    draft: Option<Spanned<String>>,
    draft_max: Option<Spanned<i64>>,
    draft_min: Option<Spanned<i64>>,
}

impl<'de> Deserialize<'de> for RawServer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawServer;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"llama-server\" or a table such as { command = [\"prog\", \"arg\"] }")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<RawServer, E> {
                Ok(RawServer::Name(s.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<RawServer, A::Error> {
                let d = serde::de::value::MapAccessDeserializer::new(map);
                RawServerTable::deserialize(d).map(|t| RawServer::Table(Box::new(t)))
            }
        }
        d.deserialize_any(V)
    }
}

/// The entry's `Served`, None when it has neither `endpoint` nor `server`.
pub(crate) fn served(
    ctx: &Ctx,
    key: &str,
    raw: &super::RawModel,
) -> Result<Option<Served>, ConfigError> {
    let k = |name: &str| format!("{key}.{name}");
    if raw.endpoint.is_none() && raw.server.is_none() {
        let given = [
            ("served_model", raw.served_model.as_ref().map(Spanned::span)),
            ("api", raw.api.as_ref().map(Spanned::span)),
            (
                "request_timeout_s",
                raw.request_timeout_s.as_ref().map(Spanned::span),
            ),
            ("ca_file", raw.ca_file.as_ref().map(Spanned::span)),
        ];
        if let Some((name, span)) = given.into_iter().find_map(|(n, s)| Some((n, s?))) {
            let msg = format!("`{name}` applies to a served model: set `endpoint` (or `server`)");
            return Err(ctx.err(span, &k(name), msg));
        }
        return Ok(None);
    }
    let endpoint = (raw.endpoint.as_ref())
        .map(|e| endpoint(e.get_ref()).map_err(|m| ctx.err(e.span(), &k("endpoint"), m)))
        .transpose()?;
    let served_model = match &raw.served_model {
        Some(m) if m.get_ref().trim().is_empty() => {
            let msg = "the served model name is empty";
            return Err(ctx.err(m.span(), &k("served_model"), msg));
        }
        m => m.as_ref().map(|m| m.get_ref().clone()),
    };
    let request_timeout_s = seconds(ctx, &k("request_timeout_s"), &raw.request_timeout_s)?;
    let server = (raw.server.as_ref())
        .map(|s| server(ctx, &k("server"), s))
        .transpose()?;
    let ca_file = (raw.ca_file.as_ref())
        .map(|f| {
            let p = ctx.dir().join(f.get_ref());
            let checked = ca_certificates(&p).map(|_| p);
            checked.map_err(|m| ctx.err(f.span(), &k("ca_file"), m))
        })
        .transpose()?;
    match (&server, &raw.server) {
        (Some(ServerLaunch::LlamaServer { .. }), Some(s)) if raw.path.is_none() => {
            let msg = "llama-server serves the entry's GGUF: set `path`";
            return Err(ctx.err(s.span(), &k("server"), msg));
        }
        (Some(ServerLaunch::Command { .. }), Some(s)) if endpoint.is_none() => {
            let msg = "a server started by `command` is reached at `endpoint`: set it";
            return Err(ctx.err(s.span(), &k("server"), msg));
        }
        _ => {}
    }
    Ok(Some(Served {
        endpoint,
        served_model,
        api: raw.api.as_ref().map_or(Api::Completions, |a| *a.get_ref()),
        request_timeout_s,
        ca_file,
        server,
    }))
}

/// The certificates of `ca_file` `p` (PEM), read once to check it before anything runs and
/// again by the client: one line naming the file when it is missing, too large or holds no
/// certificate.
pub fn ca_certificates(p: &Path) -> Result<Vec<CertificateDer<'static>>, Invalid> {
    let shown = p.display();
    let cannot = |e: std::io::Error| Invalid(format!("cannot read {shown}: {e}"));
    let meta = std::fs::metadata(p).map_err(cannot)?;
    // A CA bundle is kilobytes; the system's whole bundle is under 300 KB.
    if !meta.is_file() || meta.len() > 4 << 20 {
        return Err(Invalid(format!("{shown} is not a PEM certificate file")));
    }
    let bytes = std::fs::read(p).map_err(cannot)?;
    match CertificateDer::pem_slice_iter(&bytes).collect::<Result<Vec<_>, _>>() {
        Ok(c) if !c.is_empty() => Ok(c),
        _ => Err(Invalid(format!(
            "{shown} holds no PEM certificate (no \"-----BEGIN CERTIFICATE-----\" block)"
        ))),
    }
}

fn seconds(ctx: &Ctx, key: &str, v: &Option<Spanned<f64>>) -> Result<f64, ConfigError> {
    let Some(v) = v else { return Ok(TIMEOUT_S) };
    let s = *v.get_ref();
    if s > 0.0 && s <= 1e6 {
        Ok(s)
    } else {
        let s = crate::util::units::short_number(s);
        let msg = format!("{s} is not a timeout: give seconds above 0 (at most 1e6)");
        Err(ctx.err(v.span(), key, msg))
    }
}

/// The forms `server` takes, as the refusal of any other names them.
const SERVER_FORMS: &str =
    "\"llama-server\", { llama_server = \"path\" } or { command = [\"prog\", \"arg\"] }";

fn server(ctx: &Ctx, key: &str, raw: &Spanned<RawServer>) -> Result<ServerLaunch, ConfigError> {
    match raw.get_ref() {
        RawServer::Name(n) if n == "llama-server" => Ok(ServerLaunch::LlamaServer {
            binary: None,
            args: Vec::new(),
            ready_timeout_s: TIMEOUT_S,
            draft: None,
        }),
        RawServer::Name(n) => {
            let msg = format!("{n:?} is not a server: use {SERVER_FORMS}");
            Err(ctx.err(raw.span(), key, msg))
        }
        RawServer::Table(t) => server_table(ctx, key, t, raw.span()),
    }
}

/// `server = { ... }`: `llama_server` (with `args` and a `draft`) or `command`, each with
/// `ready_timeout_s`; without either, `args` or `draft` mean the pinned llama-server. `span`
/// is the whole table's, for a table that names none of these.
fn server_table(
    ctx: &Ctx,
    key: &str,
    t: &RawServerTable,
    span: std::ops::Range<usize>,
) -> Result<ServerLaunch, ConfigError> {
    let k = |name: &str| format!("{key}.{name}");
    let ready_timeout_s = seconds(ctx, &k("ready_timeout_s"), &t.ready_timeout_s)?;
    if let (Some(_), Some(c)) = (&t.llama_server, &t.command) {
        let msg = "give `llama_server` or `command`, not both";
        return Err(ctx.err(c.span(), &k("command"), msg));
    }
    if let (Some(_), Some(a)) = (&t.command, &t.args) {
        let msg = "`args` go with `llama_server`; a `command` lists its own arguments";
        return Err(ctx.err(a.span(), &k("args"), msg));
    }
    let draft = served_draft(ctx, key, t)?;
    if let (Some(_), Some(c)) = (&draft, &t.command) {
        let msg = "a `draft` goes to llama-server; a `command` lists its own arguments";
        return Err(ctx.err(c.span(), &k("command"), msg));
    }
    match (&t.llama_server, &t.command) {
        (b, None) if b.is_some() || draft.is_some() || t.args.is_some() => {
            let empty = "the llama-server path is empty";
            let binary = b.as_ref().map(|b| ctx.path(&k("llama_server"), b, empty));
            Ok(ServerLaunch::LlamaServer {
                binary: binary.transpose()?,
                args: t.args.clone().map_or_else(Vec::new, Spanned::into_inner),
                ready_timeout_s,
                draft,
            })
        }
        (_, Some(c)) => {
            let command = c.get_ref().clone();
            if command.first().is_none_or(|p| p.trim().is_empty()) {
                let msg = "the command is empty: give the program and its arguments";
                return Err(ctx.err(c.span(), &k("command"), msg));
            }
            Ok(ServerLaunch::Command {
                command,
                ready_timeout_s,
            })
        }
        (_, None) => {
            let msg = "a server table needs `llama_server` (a path), `command` (a list) or, \
                       for the pinned llama-server, `args` or `draft`";
            Err(ctx.err(span, key, msg))
        }
    }
}

/// `draft`, `draft_max` and `draft_min` of a server table: None without `draft` (and then
/// neither count may be given).
fn served_draft(
    ctx: &Ctx,
    key: &str,
    t: &RawServerTable,
) -> Result<Option<ServedDraft>, ConfigError> {
    let k = |name: &str| format!("{key}.{name}");
    let Some(d) = &t.draft else {
        if let Some((name, v)) = [("draft_max", &t.draft_max), ("draft_min", &t.draft_min)]
            .into_iter()
            .find_map(|(n, v)| v.as_ref().map(|v| (n, v)))
        {
            let msg = format!("`{name}` applies to a draft model: set `draft` (a GGUF)");
            return Err(ctx.err(v.span(), &k(name), msg));
        }
        return Ok(None);
    };
    let path = ctx.path(&k("draft"), d, "the draft path is empty")?;
    // K is bounded as the in-process `[speculative]` table bounds it.
    let count = |name: &str, v: &Option<Spanned<i64>>, lo: i64, default: u32| match v {
        None => Ok(default),
        Some(v) if (lo..=256).contains(v.get_ref()) => Ok(*v.get_ref() as u32),
        Some(v) => {
            let n = v.get_ref();
            let msg = format!("{n} is not a draft length: give a whole number from {lo} to 256");
            Err(ctx.err(v.span(), &k(name), msg))
        }
    };
    let draft_max = count("draft_max", &t.draft_max, 1, DRAFT_MAX)?;
    let draft_min = count("draft_min", &t.draft_min, 0, DRAFT_MIN)?;
    if draft_min > draft_max {
        let span = t.draft_min.as_ref().map_or(d.span(), Spanned::span);
        let msg = format!("draft_min {draft_min} is above draft_max {draft_max}");
        return Err(ctx.err(span, &k("draft_min"), msg));
    }
    Ok(Some(ServedDraft {
        path,
        draft_max,
        draft_min,
    }))
}

/// `s` without trailing '/' when it is an http(s) URL with a host and a valid port.
fn endpoint(s: &str) -> Result<String, Invalid> {
    let bad = |why: &str| {
        Invalid(format!(
            "{s:?} is not an endpoint URL: {why} (e.g. \"http://127.0.0.1:8080/v1\")"
        ))
    };
    let url = s.trim_end_matches('/');
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| bad("it must start with http:// or https://"))?;
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("it contains a space or a control character"));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return Err(bad("credentials in the URL are not supported"));
    }
    // An IPv6 host is bracketed: [::1]:8080.
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (h, after) = v6.split_once(']').ok_or_else(|| bad("unclosed '['"))?;
            let v6_char = |c: char| c.is_ascii_hexdigit() || c == ':' || c == '.';
            if h.is_empty() || !h.chars().all(v6_char) {
                return Err(bad("the IPv6 address is malformed"));
            }
            let port = after.strip_prefix(':').ok_or_else(|| bad("junk after ']'"));
            (h, if after.is_empty() { None } else { Some(port?) })
        }
        None => match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        },
    };
    if host.is_empty() {
        return Err(bad("it has no host"));
    }
    let host_char = |c: char| c.is_ascii_alphanumeric() || "-._".contains(c);
    if !authority.starts_with('[') && !host.chars().all(host_char) {
        return Err(bad("the host has characters a host name cannot have"));
    }
    if port.is_some_and(|p| !matches!(p.parse::<u16>(), Ok(1..))) {
        return Err(bad("the port must be a number from 1 to 65535"));
    }
    Ok(url.to_string())
}

#[cfg(test)]
mod tests;
