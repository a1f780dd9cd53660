//! `tpsbench tune` with the goodput objective over HTTP (issue 46), against the real
//! llama-server (built by `scripts/reference-tools --server`) on the tiny model, over
//! loopback: an entry tpsbench launches is raced per combination of its axes and slots,
//! each candidate from a llama-server of its own told its settings; an entry at a fixed
//! endpoint is one candidate. The file replays (`record::verify`) and the answer prints
//! the winner's llama-server command. Without a llama-server each test that needs one
//! prints SKIPPED and returns, unless TPSBENCH_REQUIRE_LLAMA_SERVER=1, where it fails.

use assert_cmd::cargo::cargo_bin;

use crate::served::llama_server;
use crate::support::{only_result, read_json as json, tiny_with, tune_into};

/// 4 synthetic requests of 8 prompt tokens and 4 output tokens, all arriving at once (a
/// rate far above the tiny model's), under an SLO every request meets.
const SERVING: &str = "[serving]\nn_prompt = 8\nn_gen = 4\nn_requests = 4\nslots = 2\n\
                       arrival_rate = [1000]\nslo = { ttft_ms = 60000, itl_ms = 60000 }\n";

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn a_goodput_race_over_http_launches_a_server_per_candidate_and_prints_the_winners_command() {
    let Some(bin) = llama_server("tune_goodput_served") else {
        return;
    };
    // `tiny` is launched by tpsbench (2 ubatch × 2 slots); `fixed` is a server at its own
    // endpoint, started by a command of the user's: one candidate, its settings its own.
    let port = free_port();
    let (dir, cfg) = tiny_with(&format!(
        "[sweep]\nrepetitions = 1\nn_threads = [1]\nn_ubatch = [16, 32]\n\n{SERVING}\n\
         [[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\nserver = \"llama-server\"\n\n\
         [[model]]\nname = \"fixed\"\npath = \"tiny.gguf\"\n\
         endpoint = \"http://127.0.0.1:{port}/v1\"\n\
         server = {{ command = [{bin:?}, \"-m\", \"@DIR@/tiny.gguf\", \"--host\", \"127.0.0.1\", \
         \"--port\", \"{port}\", \"--alias\", \"fixed\", \"-t\", \"1\", \"-np\", \"2\"] }}\n\n\
         [tune]\nobjective = \"goodput\"\nmax_rounds = 2\nslots = [1, 2]\n"
    ));
    // The user's command runs where tpsbench runs: the model's path is absolute.
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        text.replace("@DIR@", &dir.path().display().to_string()),
    )
    .unwrap();
    let results = dir.path().join("results");
    let (code, out, err) = tune_into(&cargo_bin("tpsbench"), &cfg, &results);
    assert_eq!(code, 0, "{err}\n{out}");
    assert!(out.contains(" good req/s ("), "{out}");
    assert!(out.contains("over HTTP (a launched server"), "{out}");
    let r = json(&only_result(&results));
    let t = &r["run"]["tune"];
    // 2 configurations × 2 slots launched, and the endpoint once.
    assert_eq!(t["space"], 5, "{t}");
    let cands = t["candidates"].as_array().unwrap();
    assert_eq!(cands.len(), 5, "{t}");
    let tests = r["tests"].as_array().unwrap();
    let mut total = 0;
    for c in cands {
        let x = tests.iter().find(|x| x["id"] == c["id"]).unwrap();
        let id = x["id"].as_str().unwrap();
        assert_eq!(x["status"], "ok", "{x}");
        assert_eq!(x["kind"], "goodput", "{id}");
        let s = &x["serving"];
        assert_eq!(s["transport"], "http", "{id}");
        let steps = s["goodput"]["steps"].as_array().unwrap();
        assert_eq!(steps.len() as u64, c["rounds"].as_u64().unwrap(), "{id}");
        for st in steps {
            assert_eq!(
                (st["n_requests"].as_u64(), st["n_good"].as_u64()),
                (Some(4), Some(4))
            );
        }
        total += steps.len();
        let cmd: Vec<&str> = (s["server"]["command"].as_array())
            .map(|v| v.iter().map(|a| a.as_str().unwrap()).collect())
            .unwrap_or_default();
        let after = |flag: &str| {
            let i = cmd
                .iter()
                .position(|a| *a == flag)
                .unwrap_or_else(|| panic!("{flag}: {cmd:?}"));
            cmd[i + 1]
        };
        if id.starts_with("fixed/") {
            // The user's server: one candidate, its command as the user gave it.
            assert!(id.contains("/serve-http-goodput-pp8+tg4-1000rps"), "{id}");
            assert_eq!(after("-np"), "2");
            continue;
        }
        // A launched candidate's server was told its slots and its ubatch.
        let slots = s["n_parallel"].as_u64().unwrap().to_string();
        assert!(
            id.contains(&format!(
                "/serve-http-goodput-pp8+tg4-1000rps-slots{slots}/"
            )),
            "{id}"
        );
        assert_eq!(after("--parallel"), slots, "{id}");
        let ub = x["n_ubatch"].as_u64().unwrap().to_string();
        assert_eq!(after("--ubatch-size"), ub, "{id}");
        assert_eq!(after("--threads"), "1", "{id}");
    }
    assert_eq!(total as u64, t["tests_run"].as_u64().unwrap());
    // The answer's commands: a launched winner's llama-server line as it ran.
    let winner = t["winner"].as_str().unwrap();
    let w = tests.iter().find(|x| x["id"] == winner).unwrap();
    if winner.starts_with("tiny/") {
        let line: Vec<&str> = (w["serving"]["server"]["command"].as_array().unwrap().iter())
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(out.contains(&line[1..].join(" ")), "{out}");
        assert!(out.contains("server = \"llama-server\""), "{out}");
    } else {
        // The user's own command: as it ran, not the sweep's settings.
        assert!(
            out.contains("(your command from models.toml, as tpsbench ran it"),
            "{out}"
        );
        assert!(out.contains("server = { command = ["), "{out}");
        assert!(!out.contains("llama-bench -m"), "{out}");
    }
    // The file replays from its counts; an edited count is refused.
    tpsbench::record::verify::read(&only_result(&results)).unwrap();
    let wi = tests.iter().position(|x| x["id"] == winner).unwrap();
    let mut edited = r.clone();
    edited["tests"][wi]["serving"]["goodput"]["steps"][0]["n_good"] = 3.into();
    let p = dir.path().join("edited.json");
    std::fs::write(&p, serde_json::to_string_pretty(&edited).unwrap()).unwrap();
    let e = tpsbench::record::verify::read(&p).unwrap_err().to_string();
    assert!(e.contains("slo.goodput"), "{e}");
}

#[test]
fn a_setting_llama_server_cannot_take_is_refused_in_one_line_before_anything_runs() {
    let (dir, cfg) = tiny_with(&format!(
        "[sweep]\nn_threads = [1]\nembeddings = true\n\n{SERVING}\n[[model]]\nname = \
         \"tiny\"\npath = \"tiny.gguf\"\nserver = \"llama-server\"\n\n[tune]\nobjective = \
         \"goodput\"\nmax_rounds = 2\n"
    ));
    let results = dir.path().join("results");
    let (code, out, err) = tune_into(&cargo_bin("tpsbench"), &cfg, &results);
    assert_eq!(code, 2, "{err}\n{out}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("model \"tiny\": objective goodput races its llama-server over HTTP, and tpsbench cannot pass embeddings = true to llama-server"),
        "{err}"
    );
    assert!(!results.exists(), "no file before the refusal");
}
