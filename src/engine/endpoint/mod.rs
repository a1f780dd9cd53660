//! Endpoints: a model served over HTTP, and the only code that speaks HTTP. The measurement
//! loops over them are in `serving::http`; see docs/served.md.

pub mod client;
pub(crate) mod error;
pub(crate) mod identity;
pub mod launch;

pub use client::{Client, ClientError, EndpointError, Error, Prompt, Request, Streamed};
pub use identity::ServerInfo;
pub use launch::LaunchError;
