//! TEMPORARY stand-in until the config branch lands (same types as its spec).
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Served {
    pub endpoint: Option<String>,
    pub served_model: Option<String>,
    pub api: Api,
    pub request_timeout_s: f64,
    pub server: Option<ServerLaunch>,
}
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    Completions,
    Chat,
}
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ServerLaunch {
    LlamaServer {
        binary: Option<PathBuf>,
        args: Vec<String>,
        ready_timeout_s: f64,
    },
    Command {
        command: Vec<String>,
        ready_timeout_s: f64,
    },
}
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Slo {
    pub ttft_ms: Option<f64>,
    pub itl_ms: Option<f64>,
    pub e2e_ms: Option<f64>,
    pub attainment: f64,
}
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GoodputSearch {
    pub min_rate: f64,
    pub max_rate: f64,
    pub steps: u32,
    pub max_seconds: f64,
    pub n_requests: u32,
}
