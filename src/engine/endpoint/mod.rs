//! Endpoints: a model served over HTTP, and the only code that speaks HTTP. A model named by an `endpoint` (or a
//! server tpsbench starts, `server = ...`) answers the serving tests over an OpenAI-
//! compatible API: `client` streams completions and stamps each chunk, `identity` asks the
//! server who it is, `launch` starts and stops it. The measurement loops over them are in
//! `serving::http`; see docs/served.md.

pub mod client;
pub(crate) mod error;
pub(crate) mod identity;
pub mod launch;

pub use client::{Client, ClientError, EndpointError, Error, Prompt, Request, Streamed};
pub use identity::ServerInfo;
pub use launch::LaunchError;
