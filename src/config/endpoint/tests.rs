use std::path::Path;

use super::*;
use crate::config::{Config, parse};

fn p(src: &str) -> Result<Config, ConfigError> {
    parse(Path::new("dir/models.toml"), src, 2)
}

fn served(entry: &str) -> Served {
    let c = p(&format!("[[model]]\nname = 'm'\n{entry}\n")).unwrap();
    c.models[0].served.clone().expect("a served model")
}

/// The one line of the error of a `[[model]]` with `entry` (line 3 is the entry's first key).
fn err(entry: &str) -> String {
    p(&format!("[[model]]\nname = 'm'\n{entry}\n"))
        .unwrap_err()
        .to_string()
}

#[test]
fn an_endpoint_alone_is_a_served_model_with_defaults_and_no_file() {
    let c = p("[[model]]\nname = 'm'\nendpoint = 'http://127.0.0.1:8080/v1/'\n").unwrap();
    let m = &c.models[0];
    assert_eq!(m.path, None);
    let s = m.served.as_ref().unwrap();
    assert_eq!(
        s.endpoint.as_deref(),
        Some("http://127.0.0.1:8080/v1"),
        "no trailing '/'"
    );
    assert_eq!((s.served_model.as_deref(), s.api), (None, Api::Completions));
    assert_eq!((s.request_timeout_s, &s.server), (120.0, &None));
}

#[test]
fn every_served_key_is_read() {
    let s = served(
        "endpoint = 'https://example.com:8443/v1'\nserved_model = 'smol'\napi = 'chat'\n\
         request_timeout_s = 30\nserver = { command = ['vllm', 'serve', 'smol'], ready_timeout_s = 300 }",
    );
    assert_eq!(s.endpoint.as_deref(), Some("https://example.com:8443/v1"));
    assert_eq!(
        (s.served_model.as_deref(), s.api),
        (Some("smol"), Api::Chat)
    );
    assert_eq!(s.request_timeout_s, 30.0);
    assert_eq!(
        s.server,
        Some(ServerLaunch::Command {
            command: vec!["vllm".into(), "serve".into(), "smol".into()],
            ready_timeout_s: 300.0
        })
    );
}

#[test]
fn the_llama_server_launcher_serves_the_entry_file_and_needs_no_endpoint() {
    let c = p("[[model]]\nname = 'm'\npath = 'm.gguf'\nserver = 'llama-server'\n").unwrap();
    let m = &c.models[0];
    assert_eq!(m.path.as_deref(), Some(Path::new("dir/m.gguf")));
    let s = m.served.as_ref().unwrap();
    assert_eq!(s.endpoint, None, "a free loopback port at run time");
    assert_eq!(
        s.server,
        Some(ServerLaunch::LlamaServer {
            binary: None,
            args: vec![],
            ready_timeout_s: 120.0,
            draft: None,
        })
    );
    let s = served(
        "path = 'm.gguf'\nserver = { llama_server = 'bin/llama-server', args = ['-fa', 'on'] }",
    );
    assert_eq!(
        s.server,
        Some(ServerLaunch::LlamaServer {
            binary: Some("dir/bin/llama-server".into()),
            args: vec!["-fa".into(), "on".into()],
            ready_timeout_s: 120.0,
            draft: None,
        }),
        "a relative binary resolves against the config's directory"
    );
}

#[test]
fn an_entry_with_a_path_and_no_served_key_is_not_served() {
    let c = p("[[model]]\nname = 'm'\npath = 'm.gguf'\n").unwrap();
    assert_eq!(c.models[0].served, None);
}

#[test]
fn served_mistakes_name_file_line_and_key() {
    for (entry, start) in [
        (
            "served_model = 'x'",
            "dir/models.toml:3: key `model[0].served_model`: `served_model` applies to a served \
             model: set `endpoint`",
        ),
        (
            "path = 'm.gguf'\napi = 'chat'",
            "dir/models.toml:4: key `model[0].api`: `api` applies to a served model",
        ),
        (
            "path = 'm.gguf'\nrequest_timeout_s = 5",
            "dir/models.toml:4: key `model[0].request_timeout_s`: `request_timeout_s` applies",
        ),
        (
            "synth = 'tiny'\nendpoint = 'http://h:1'",
            "dir/models.toml:3: key `model[0].synth`: `synth` writes the model at `path`",
        ),
        (
            "endpoint = 'localhost:8080'",
            "dir/models.toml:3: key `model[0].endpoint`: \"localhost:8080\" is not an endpoint \
             URL: it must start with http:// or https://",
        ),
        (
            "endpoint = 'http://:8080/v1'",
            "dir/models.toml:3: key `model[0].endpoint`: \"http://:8080/v1\" is not an endpoint \
             URL: it has no host",
        ),
        (
            "endpoint = 'http://h:99999'",
            "dir/models.toml:3: key `model[0].endpoint`: \"http://h:99999\" is not an endpoint \
             URL: the port must be a number from 1 to 65535",
        ),
        (
            "endpoint = 'http://a b/v1'",
            "dir/models.toml:3: key `model[0].endpoint`: \"http://a b/v1\" is not an endpoint URL",
        ),
        (
            "endpoint = 'http://h:1'\nrequest_timeout_s = 0",
            "dir/models.toml:4: key `model[0].request_timeout_s`: 0 is not a timeout",
        ),
        (
            "endpoint = 'http://h:1'\nserved_model = ' '",
            "dir/models.toml:4: key `model[0].served_model`: the served model name is empty",
        ),
        (
            "server = 'llama-server'",
            "dir/models.toml:3: key `model[0].server`: llama-server serves the entry's GGUF: set \
             `path`",
        ),
        (
            "path = 'm.gguf'\nserver = { command = ['prog'] }",
            "dir/models.toml:4: key `model[0].server`: a server started by `command` is reached \
             at `endpoint`: set it",
        ),
        (
            "path = 'm.gguf'\nserver = 'ollama'",
            "dir/models.toml:4: key `model[0].server`: \"ollama\" is not a server: use \
             \"llama-server\"",
        ),
        (
            "endpoint = 'http://h:1'\nserver = { command = [] }",
            "dir/models.toml:4: key `model[0].server.command`: the command is empty",
        ),
        (
            "endpoint = 'http://h:1'\nserver = { command = ['p'], args = ['x'] }",
            "dir/models.toml:4: key `model[0].server.args`: `args` go with `llama_server`",
        ),
        (
            "path = 'm.gguf'\nserver = { llama_server = 'b', command = ['p'] }",
            "dir/models.toml:4: key `model[0].server.command`: give `llama_server` or `command`, \
             not both",
        ),
        (
            "path = 'm.gguf'\nserver = { ready_timeout_s = 5 }",
            "dir/models.toml:4: key `model[0].server`: a server table needs `llama_server`",
        ),
        (
            "path = 'm.gguf'\nserver = { llama_server = 'b', ready_timeout_s = -1 }",
            "dir/models.toml:4: key `model[0].server.ready_timeout_s`: -1 is not a timeout",
        ),
    ] {
        let e = err(entry);
        assert!(e.starts_with(start), "{entry}:\n{e}\nwanted\n{start}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
}

#[test]
fn an_entry_needs_a_path_or_an_endpoint() {
    let e = err("");
    assert!(
        e.starts_with("dir/models.toml:2: key `model[0].path`: a model needs `path` (a GGUF file) or `endpoint`"),
        "{e}"
    );
}

#[test]
fn endpoints_take_hosts_ports_and_ipv6() {
    for ok in [
        "http://localhost",
        "http://127.0.0.1:8080/v1",
        "https://api.example.com/v1",
        "http://[::1]:8080/v1",
        "http://gpu-box_2:11434/v1?x=1",
    ] {
        assert!(endpoint(ok).is_ok(), "{ok}");
    }
    for bad in [
        "ftp://h/v1",
        "http://",
        "http://[::1/v1",
        "http://h:0",
        "http://h:x/v1",
        "http://u:p@h/v1",
        "http://h!/v1",
    ] {
        assert!(endpoint(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_draft_goes_to_the_pinned_llama_server_with_k_and_its_minimum() {
    let s = served("path = 'm.gguf'\nserver = { draft = 'd.gguf', draft_max = 4 }");
    assert_eq!(
        s.server,
        Some(ServerLaunch::LlamaServer {
            binary: None,
            args: vec![],
            ready_timeout_s: 120.0,
            draft: Some(crate::config::ServedDraft {
                path: "dir/d.gguf".into(),
                draft_max: 4,
                draft_min: 0,
            }),
        })
    );
    let s = served("path = 'm.gguf'\nserver = { draft = 'd.gguf' }");
    let Some(ServerLaunch::LlamaServer { draft: Some(d), .. }) = s.server else {
        panic!("a draft");
    };
    assert_eq!(d.draft_max, 3, "llama-server's own default K");
}

#[test]
fn bad_draft_settings_are_refused_naming_the_key() {
    for (table, key, says) in [
        ("{ draft_max = 4 }", "server.draft_max", "set `draft`"),
        (
            "{ draft = 'd.gguf', draft_max = 0 }",
            "server.draft_max",
            "from 1 to 256",
        ),
        (
            "{ draft = 'd.gguf', draft_max = 999 }",
            "server.draft_max",
            "from 1 to 256",
        ),
        (
            "{ draft = 'd.gguf', draft_max = 2, draft_min = 3 }",
            "server.draft_min",
            "above draft_max 2",
        ),
        ("{ draft = '' }", "server.draft", "empty"),
        (
            "{ command = ['x'], draft = 'd.gguf' }",
            "server.command",
            "goes to llama-server",
        ),
    ] {
        let e = p(&format!(
            "[[model]]\nname = 'm'\npath = 'm.gguf'\nendpoint = 'http://127.0.0.1:9/v1'\nserver = {table}\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains(key) && e.contains(says), "{table}: {e}");
    }
}
