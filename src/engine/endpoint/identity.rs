//! Who answers: the server's own account of itself, kept in the record so two served
//! results can be told apart (llama-server's build and slots, the models it lists).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::client::{Client, Error};

/// The served target of a test, in the result file (`serving.server`).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerInfo {
    pub endpoint: String,
    pub served_model: String,
    /// "completions" or "chat".
    pub api: String,
    /// `GET /v1/models`: the ids the server lists.
    pub models: Vec<String>,
    /// llama-server's `/props` (absent for servers without it): its build ...
    pub build: Option<String>,
    /// ... the GGUF it loaded ...
    pub model_path: Option<String>,
    /// ... its slots (`-np`) and each slot's context.
    pub total_slots: Option<u64>,
    pub slot_n_ctx: Option<u64>,
    /// The sources a llama-server from `scripts/reference-tools --server` was built from (its
    /// stamp): the pinned sdist has no git commit, so `build` alone says little.
    pub sources: Option<String>,
    /// The command tpsbench started the server with, when it did.
    pub command: Option<Vec<String>>,
    /// The server's log, kept beside the result file, when tpsbench started it.
    pub log: Option<String>,
    /// `command` was the user's (`server = { command = [...] }`): the server's settings
    /// are that command's, not the test's. Absent (false) when tpsbench made the command
    /// from the test's settings, or started none.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub user_command: bool,
}

/// Asks the server who it is. Fails when it cannot be reached or does not serve the model
/// the requests will name.
pub fn probe(client: &Client) -> Result<ServerInfo, Error> {
    let url = format!("{}/models", client.base);
    let v = client.get_json(&url, Duration::from_secs(10))?;
    let models: Vec<String> = v
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::malformed(&url, "no `data` list of models"))?
        .iter()
        .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
        .collect();
    if !models.contains(&client.model) {
        return Err(Error::NotListed {
            listed: models.join(", "),
            want: client.model.clone(),
        });
    }
    let mut info = ServerInfo {
        endpoint: client.base.clone(),
        served_model: client.model.clone(),
        api: format!("{:?}", client.api).to_lowercase(),
        models,
        ..Default::default()
    };
    // Only llama-server has /props; elsewhere it is a 404 and the fields stay empty.
    if let Ok(p) = client.get_json(&format!("{}/props", client.root()), Duration::from_secs(10)) {
        let s = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
        info.build = s("build_info");
        info.model_path = s("model_path");
        info.total_slots = p.get("total_slots").and_then(Value::as_u64);
        info.slot_n_ctx = p
            .pointer("/default_generation_settings/n_ctx")
            .and_then(Value::as_u64);
    }
    Ok(info)
}
