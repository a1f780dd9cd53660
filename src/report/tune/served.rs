//! A served winner of a goodput race as commands: the llama-server command line
//! tpsbench launched for its rounds, or, for a server at a fixed endpoint, where it is (its
//! settings are its own: tpsbench did not start it).

use crate::record::{TestRecord, serving::Serving};
use crate::runner::session::quoted_line as line;

/// The winner's serving record when it was served over HTTP.
pub(super) fn of(w: &TestRecord) -> Option<&Serving> {
    w.serving
        .as_deref()
        .filter(|s| !s.transport.is_in_process())
}

/// The command a launched winner's server ran, quoted; None for a fixed endpoint or the
/// user's own command.
pub(super) fn launched_line(s: &Serving) -> Option<String> {
    let server = s.server.as_ref().filter(|i| !i.user_command)?;
    Some(line(server.command.as_ref()?))
}

pub(super) fn at_endpoint(w: &TestRecord, s: &Serving) -> String {
    let (endpoint, model) = match &s.server {
        Some(i) => (i.endpoint.clone(), i.served_model.clone()),
        None => Default::default(),
    };
    // The user's command, when tpsbench ran it: the server as it ran, settings and all.
    let user = (s.server.as_ref())
        .filter(|i| i.user_command)
        .and_then(|i| i.command.as_ref());
    match user {
        Some(cmd) => {
            let quoted: Vec<String> = cmd.iter().map(|a| format!("{a:?}")).collect();
            format!(
                "\nrun it:\n{}\n(your command from models.toml, as tpsbench ran it: its \
                 settings are its own)\n\nmodels.toml:\n[[model]]\nname = {:?}\n\
                 endpoint = {endpoint:?}\nserver = {{ command = [{}] }}\n",
                line(cmd),
                w.model,
                quoted.join(", ")
            )
        }
        None => format!(
            "\nrun it:\nthe server at {endpoint} (model {model:?}), as it ran: tpsbench did \
             not start it, and its settings are its own\n\nmodels.toml:\n[[model]]\n\
             name = {:?}\nendpoint = {endpoint:?}\n",
            w.model
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A served winner at `endpoint`, its server started by `command` (the user's when
    /// `user`).
    fn winner(command: Option<&[&str]>, user: bool) -> (TestRecord, Serving) {
        let d = r#"{"n":1,"mean":1,"min":1,"p50":1,"p90":1,"p99":1,"max":1}"#;
        let mut s: Serving = serde_json::from_str(&format!(
            r#"{{"mode":"goodput","transport":"http","n_parallel":2,"n_seq_max":2,
            "kv_unified":false,"shared_prompt":false,"n_requests":4,"repetitions":1,
            "temperature":0.0,"sampling_seed":1,"n_prompt_tokens":32,"n_output_tokens":16,
            "ttft_ms":{d},"itl_ms":{d},"e2e_ms":{d},"tpot_ms":{d},"output_ts":1.0,
            "t_ms":1.0,"overhead_ms":0.0,"overhead_fraction":0.0,"reps":[],"requests":[]}}"#
        ))
        .unwrap();
        s.server = Some(crate::engine::endpoint::identity::ServerInfo {
            endpoint: "http://127.0.0.1:8080/v1".into(),
            served_model: "m".into(),
            command: command.map(|c| c.iter().map(|a| a.to_string()).collect()),
            user_command: user,
            ..Default::default()
        });
        let mut w = crate::report::export::fixtures::run().tests[0].clone();
        w.model = "fixed".into();
        w.serving = Some(Box::new(s.clone()));
        (w, s)
    }

    #[test]
    fn a_winner_started_by_the_users_command_is_that_command_not_the_sweeps_settings() {
        let cmd = ["/opt/llama-server", "-m", "/m/a b.gguf", "-np", "2"];
        let (w, s) = winner(Some(&cmd), true);
        assert_eq!(launched_line(&s), None, "not tpsbench's settings");
        let out = at_endpoint(&w, &s);
        assert!(
            out.contains(
                "run it:\n/opt/llama-server -m '/m/a b.gguf' -np 2\n(your command from \
                 models.toml, as tpsbench ran it: its settings are its own)"
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "endpoint = \"http://127.0.0.1:8080/v1\"\nserver = { command = \
                 [\"/opt/llama-server\", \"-m\", \"/m/a b.gguf\", \"-np\", \"2\"] }"
            ),
            "{out}"
        );
        // One tpsbench made from the test's settings is the launched line; none is the
        // server at its endpoint.
        let (_, s) = winner(Some(&cmd), false);
        assert_eq!(
            launched_line(&s).as_deref(),
            Some("/opt/llama-server -m '/m/a b.gguf' -np 2")
        );
        let (w, s) = winner(None, false);
        assert!(at_endpoint(&w, &s).contains("tpsbench did not start it"));
    }

    #[test]
    fn a_launched_command_is_quoted_where_the_shell_needs_it() {
        let cmd: Vec<String> = ["/x/llama-server", "-m", "my m.gguf", "--parallel", "4"]
            .map(String::from)
            .to_vec();
        assert_eq!(line(&cmd), "/x/llama-server -m 'my m.gguf' --parallel 4");
    }
}
