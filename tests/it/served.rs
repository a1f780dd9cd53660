//! Served tests against the real llama-server (built by `scripts/reference-tools --server`
//! from the pinned sources) on the tiny model, over loopback: the figures and ratios in the
//! record, the goodput search, and the faults, each with its one line. Without a
//! llama-server each test prints SKIPPED and returns, unless TPSBENCH_REQUIRE_LLAMA_SERVER=1
//! (scripts/test and CI set it after building one), where it fails instead.
//!
//! The hostile-server tests (issue 35) need no llama-server: `served/hostile.rs`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{tiny_with, tpsbench};

mod draft;
mod fake;
mod hostile;
mod pinned;

/// The pinned llama-server, or None with SKIPPED on stderr (a failure where
/// TPSBENCH_REQUIRE_LLAMA_SERVER=1 says it must be there).
pub(crate) fn llama_server(test: &str) -> Option<PathBuf> {
    let found = tpsbench::engine::endpoint::launch::pinned_llama_server().filter(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("TPSBENCH_REQUIRE_LLAMA_SERVER").as_deref() != Ok("1"),
            "{test}: no llama-server (run scripts/reference-tools --server)"
        );
        eprintln!("SKIPPED {test}: no llama-server (run scripts/reference-tools --server)");
    }
    found
}

const SERVING: &str = r#"
[serving]
modes = ["request", "parallel", "arrival"]
n_prompt = 16
n_gen = 8
n_parallel = [1, 2]
n_requests = 4
repetitions = 2
arrival_rate = [20]
"#;

/// Runs `config` in `dir` with results there; returns the exit code, stderr and the record.
fn run(dir: &Path, config: &Path, extra: &[&str]) -> (i32, String, Option<Value>) {
    let out = tpsbench()
        .args(["run", "--quiet", "--config"])
        .arg(config)
        .arg("--results-dir")
        .arg(dir.join("out"))
        .args(extra)
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    let file = std::fs::read_dir(dir.join("out")).ok().and_then(|rd| {
        rd.flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "json"))
    });
    let rec = file.map(|f| serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap());
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        rec,
    )
}

fn tests(rec: &Value) -> &Vec<Value> {
    rec["tests"].as_array().unwrap()
}

fn by_id<'a>(rec: &'a Value, part: &str) -> &'a Value {
    tests(rec)
        .iter()
        .find(|t| t["id"].as_str().unwrap().contains(part))
        .unwrap_or_else(|| panic!("no test {part}"))
}

#[test]
fn a_launched_llama_server_is_measured_like_the_engine_and_compared_with_it() {
    let Some(_) = llama_server("launched") else {
        return;
    };
    let (dir, cfg) = tiny_with(&format!(
        "[sweep]\nn_threads = [1]\n\n[[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\nserver = \"llama-server\"\n{SERVING}"
    ));
    let (code, err, rec) = run(dir.path(), &cfg, &["--filter", "serve"]);
    assert_eq!(code, 0, "{err}");
    let rec = rec.unwrap();
    assert_eq!(tests(&rec).len(), 8, "4 in-process and 4 served tests");
    for t in tests(&rec) {
        assert_eq!(t["status"], "ok", "{t}");
    }
    let b2 = &by_id(&rec, "serve-http-parallel/pp16+tg8/B2")["serving"];
    assert_eq!(b2["transport"], "http");
    assert_eq!(b2["token_counts"], "usage");
    assert!(
        b2.get("short_requests").is_none(),
        "every request got its 8 tokens"
    );
    assert_eq!(b2["n_output_tokens"], 16, "B·n_gen tokens");
    assert_eq!(
        b2["requests"].as_array().unwrap().len(),
        4,
        "2 repetitions of B = 2"
    );
    for r in b2["requests"].as_array().unwrap() {
        assert_eq!(r["n_gen"], 8);
        assert_eq!(r["n_prompt"], 16, "the same 16 prompt tokens as in-process");
        assert!(r["ttft_ms"].as_f64().unwrap() > 0.0);
        assert!(r["e2e_ms"].as_f64().unwrap() >= r["ttft_ms"].as_f64().unwrap());
    }
    assert!(b2["aggregate_ts"].as_f64().unwrap() > 0.0);
    // Who answered, and its log beside the result.
    let server = &b2["server"];
    assert_eq!(server["served_model"], "tiny");
    assert_eq!(server["total_slots"], 2);
    assert!(server["build"].is_string());
    let log = PathBuf::from(server["log"].as_str().unwrap());
    assert!(log.starts_with(dir.path().join("out")), "{log:?}");
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("listening on http://127.0.0.1")
    );
    // What serving costs: the ratios to the in-process twin, with intervals. A ratio needs 2
    // measurable values a side. TTFT always has them; a decode rate does not when a request's
    // tokens all came in one text chunk (llama-server holds back a token that ends inside a
    // UTF-8 character, and the tiny model's random output has byte tokens), nor T_TG when a
    // repetition's last first token is its last token. So each ratio is checked against the
    // rule: present with its counts exactly when both sides have 2.
    let base = &by_id(&rec, "serve-parallel/pp16+tg8/B2")["serving"];
    let vs = &b2["vs_in_process"];
    assert_eq!(vs["test"], by_id(&rec, "serve-parallel/pp16+tg8/B2")["id"]);
    let measurable = |s: &Value, k: &str| -> u64 {
        let (list, field) = match k {
            "ttft" => ("requests", "ttft_ms"),
            "per_request_ts" => ("requests", "decode_ts"),
            _ => ("reps", "aggregate_ts"),
        };
        s[list]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|x| x[field].as_f64())
            .filter(|x| x.is_finite() && *x > 0.0)
            .count() as u64
    };
    for k in ["ttft", "per_request_ts", "aggregate_ts"] {
        let r = &vs[k];
        let (ns, ni) = (measurable(b2, k), measurable(base, k));
        if ns < 2 || ni < 2 {
            assert!(
                r.is_null(),
                "{k}: {ns} served, {ni} in-process values, yet {r}"
            );
            assert_ne!(k, "ttft", "every request has a first token: {b2}");
            eprintln!("NOTE {k}: no ratio, {ns} served and {ni} in-process values measurable");
            continue;
        }
        let f = |x: &str| {
            r[x].as_f64()
                .unwrap_or_else(|| panic!("{k}.{x} ({ns} and {ni} values): {vs}\n{b2}"))
        };
        let (x, lo, hi) = (f("ratio"), f("lo"), f("hi"));
        assert!(lo <= x && x <= hi && lo > 0.0, "{k}: {r}");
        assert_eq!(
            (r["n_served"].as_u64(), r["n_in_process"].as_u64()),
            (Some(ns), Some(ni))
        );
    }
    // A request without a decode rate is one whose tokens all came at its first token's time.
    for r in b2["requests"].as_array().unwrap() {
        if r["decode_ts"].is_null() {
            assert_eq!(r["ttft_ms"], r["e2e_ms"], "{r}");
        }
    }
    // The arrival test's requests came at their Poisson times.
    let arr = &by_id(&rec, "serve-http-arrival")["serving"];
    assert_eq!(arr["requests"].as_array().unwrap().len(), 8);
    assert!(
        arr.get("queue_ms").is_none(),
        "admission is not visible over HTTP"
    );
}

#[test]
fn the_goodput_search_finds_the_highest_rate_that_meets_the_slo_in_process_and_served() {
    let Some(_) = llama_server("goodput") else {
        return;
    };
    // A TTFT target no request can meet above some rate would make this timing-dependent;
    // an unreachable one (1 µs) and a generous one (1 min) give fixed answers.
    for (ttft, met) in [(60_000.0, true), (0.001, false)] {
        let (dir, cfg) = tiny_with(&format!(
            "[sweep]\nn_threads = [1]\n\n[[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\nserver = \"llama-server\"\n\n[serving]\nmodes = [\"goodput\"]\nn_prompt = 8\nn_gen = 4\nslots = 2\nslo = {{ ttft_ms = {ttft}, attainment = 0.9 }}\ngoodput = {{ min_rate = 1, max_rate = 40, steps = 3, max_seconds = 60, n_requests = 6 }}\n"
        ));
        let (code, err, rec) = run(dir.path(), &cfg, &["--filter", "serve"]);
        assert_eq!(code, 0, "{err}");
        let rec = rec.unwrap();
        for id in ["serve-goodput", "serve-http-goodput"] {
            let s = &by_id(&rec, id)["serving"];
            assert!(
                s.get("vs_in_process").is_none(),
                "goodput runs end at rates of their own"
            );
            let g = &s["goodput"];
            let steps = g["steps"].as_array().unwrap();
            if met {
                assert_eq!(g["stopped"], "met at max_rate", "{id}: {g}");
                assert_eq!(g["max_rate"], 40.0);
                assert_eq!(steps.len(), 1);
                assert!(g["goodput"].as_f64().unwrap() > 0.0);
            } else {
                assert_eq!(g["stopped"], "not met at min_rate", "{id}: {g}");
                assert!(g["max_rate"].is_null());
                assert_eq!(steps.len(), 2);
                assert_eq!(steps[1]["rate"], 1.0);
                assert_eq!(steps[1]["n_good"], 0);
            }
        }
    }
}

#[test]
fn an_unreachable_endpoint_stops_the_run_before_any_test_with_one_line() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (dir, cfg) = tiny_with(&format!(
        "[[model]]\nname = \"tiny\"\nendpoint = \"http://127.0.0.1:{port}/v1\"\n{SERVING}"
    ));
    let (code, err, rec) = run(dir.path(), &cfg, &[]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot reach") && err.contains(&port.to_string()),
        "{err}"
    );
    assert!(rec.is_none(), "no test ran");
}

/// A llama-server on a free loopback port, serving the tiny model as `tiny`.
fn start_server(bin: &Path, gguf: &Path, extra: &[&str]) -> (Child, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(bin)
        .args(["-m"])
        .arg(gguf)
        .args([
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--alias",
            "tiny",
            "-t",
            "1",
            "-np",
            "2",
            "-c",
            "512",
        ])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "llama-server did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    (child, port)
}

#[test]
fn an_endpoint_that_serves_another_model_is_named_in_one_line() {
    let Some(bin) = llama_server("other model") else {
        return;
    };
    let (dir, cfg) = tiny_with("");
    let (mut server, port) = start_server(&bin, &dir.path().join("tiny.gguf"), &[]);
    std::fs::write(
        &cfg,
        format!("[[model]]\nname = \"m\"\nendpoint = \"http://127.0.0.1:{port}/v1\"\nserved_model = \"other\"\n{SERVING}"),
    )
    .unwrap();
    let (code, err, _) = run(dir.path(), &cfg, &[]);
    server.kill().unwrap();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("\"other\"") && err.contains("tiny"), "{err}");
}

#[test]
fn a_server_that_returns_fewer_tokens_than_asked_is_recorded_as_short() {
    let Some(bin) = llama_server("short") else {
        return;
    };
    // 2 slots of 256 tokens (the later --ctx-size wins) cannot hold 16 + 400: llama-server
    // stops each answer when its slot is full.
    let (dir, cfg) = tiny_with(&format!(
        "[sweep]\nn_threads = [1]\n\n[[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\nserver = {{ llama_server = \"{}\", args = [\"--ctx-size\", \"512\"] }}\n\n[serving]\nmodes = [\"parallel\"]\nn_prompt = 16\nn_gen = 400\nn_parallel = [2]\nrepetitions = 2\n",
        bin.display()
    ));
    let (code, err, rec) = run(dir.path(), &cfg, &["--filter", "serve-http"]);
    assert_eq!(code, 0, "{err}");
    let rec = rec.unwrap();
    let s = &by_id(&rec, "serve-http-parallel/pp16+tg400/B2")["serving"];
    assert_eq!(s["short_requests"], 4, "{s}");
    let got: u64 = s["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["n_gen"].as_u64().unwrap())
        .inspect(|&n| assert!(n > 0 && n < 400, "{n}"))
        .sum();
    assert_eq!(
        s["n_output_tokens"].as_u64().unwrap() * 2,
        got,
        "counted as they came"
    );
}

#[test]
fn a_server_killed_mid_run_fails_the_tests_after_it_and_the_sweep_goes_on() {
    let Some(bin) = llama_server("killed") else {
        return;
    };
    let (dir, cfg) = tiny_with("");
    let (mut server, port) = start_server(&bin, &dir.path().join("tiny.gguf"), &[]);
    std::fs::write(
        &cfg,
        format!(
            "[sweep]\nn_threads = [1]\n\n[[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\nendpoint = \"http://127.0.0.1:{port}/v1\"\n\n[serving]\nmodes = [\"request\", \"parallel\"]\nn_prompt = 16\nn_gen = 64\nn_parallel = [1, 2]\nn_requests = 40\nrepetitions = 3\n"
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_tpsbench"))
        .args(["run", "--quiet", "--filter", "serve-http", "--config"])
        .arg(&cfg)
        .arg("--results-dir")
        .arg(&out_dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill the server while it is answering the run's requests (a slot is busy).
    let c = tpsbench::engine::endpoint::Client::with_ca_file(
        &format!("http://127.0.0.1:{port}/v1"),
        "tiny",
        tpsbench::config::endpoint::Api::Completions,
        Duration::from_secs(5),
        None,
    )
    .unwrap();
    let start = Instant::now();
    loop {
        let slots = c.get_json(
            &format!("http://127.0.0.1:{port}/slots"),
            Duration::from_secs(2),
        );
        let busy = slots.ok().and_then(|v| {
            v.as_array()
                .map(|a| a.iter().any(|s| s["is_processing"] == true))
        });
        if busy == Some(true) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the run never sent a request"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    server.kill().unwrap();
    server.wait().unwrap();
    let out = child.wait_with_output_timeout();
    let rec: Value = {
        let f = std::fs::read_dir(&out_dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "json"))
            .expect("the result file is written");
        serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap()
    };
    assert_eq!(out.0, 1, "failed tests make exit code 1: {}", out.1);
    // Nothing lost: every test is in the file, each failure with what happened.
    assert_eq!(tests(&rec).len(), 3, "{rec}");
    let failed: Vec<&Value> = tests(&rec)
        .iter()
        .filter(|t| t["status"] == "failed")
        .collect();
    assert!(!failed.is_empty());
    for t in failed {
        let e = t["error"].as_str().unwrap();
        assert!(
            e.contains("cannot reach") || e.contains("connection"),
            "{e}"
        );
    }
}

trait WaitTimeout {
    fn wait_with_output_timeout(self) -> (i32, String);
}

impl WaitTimeout for Child {
    fn wait_with_output_timeout(mut self) -> (i32, String) {
        let start = Instant::now();
        loop {
            if let Some(st) = self.try_wait().unwrap() {
                let mut err = String::new();
                use std::io::Read;
                self.stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut err)
                    .unwrap();
                return (st.code().unwrap_or(-1), err);
            }
            assert!(
                start.elapsed() < Duration::from_secs(300),
                "the run did not end"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[test]
fn the_served_example_configuration_parses_and_plans_both_transports() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/served/models.toml");
    let src = std::fs::read_to_string(&path).unwrap();
    let c = tpsbench::config::parse(&path, &src, 2).unwrap();
    let sc = c.serving.as_ref().unwrap();
    assert!(sc.slo.is_some());
    let tests = tpsbench::plan::serving::expand(&c, &["Q4_1".into()], &[]);
    let http = tests
        .iter()
        .filter(|t| t.id.contains("/serve-http-"))
        .count();
    assert_eq!(http * 2, tests.len(), "each test in process and served");
}
