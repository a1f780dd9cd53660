//! The commands `tpsbench tune` prints for its winner, run as printed: the `llama-server`
//! line through the pinned llama-server (built by `scripts/reference-tools --server`), which
//! must come up with the winner's settings (read back from its log and `/props`), and the
//! `llama-bench` line through the pinned llama-bench (`scripts/reference-tools`, into
//! reference-tools/shared), whose JSON must name the winner's settings. Without the tool
//! each test prints SKIPPED and returns; the llama-server one fails instead where
//! TPSBENCH_REQUIRE_LLAMA_SERVER=1.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::cargo::cargo_bin;
use serde_json::Value;

use crate::served::llama_server;
use crate::support::{only_result, read_json, tiny_with, tune_into};

/// A race on the tiny model over threads, ubatch and flash attention: its answer on stdout
/// and the winner's test record.
fn race(dir: &Path, cfg: &Path) -> (String, Value) {
    let results = dir.join("results");
    let (code, out, err) = tune_into(&cargo_bin("tpsbench"), cfg, &results);
    assert_eq!(code, 0, "{err}\n{out}");
    let r = read_json(&only_result(&results));
    let id = r["run"]["tune"]["winner"].as_str().unwrap().to_string();
    let w = (r["tests"].as_array().unwrap().iter())
        .find(|t| t["id"] == id.as_str())
        .unwrap()
        .clone();
    (out, w)
}

fn tiny_race() -> (tempfile::TempDir, PathBuf) {
    tiny_with(
        "[sweep]\nrepetitions = 1\nn_threads = [1, 2]\nn_ubatch = [16, 32]\n\
         flash_attn = [\"on\", \"off\"]\n\n[[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n\n\
         [tune]\nobjective = \"tg8\"\nmax_rounds = 2\n",
    )
}

/// The answer's line starting with `tool `, as words (the paths hold no space).
fn printed(out: &str, tool: &str) -> Vec<String> {
    let line = (out.lines())
        .find(|l| l.starts_with(&format!("{tool} -m ")))
        .unwrap_or_else(|| panic!("no {tool} line in {out}"));
    assert!(!line.contains('\''), "quoted words: {line}");
    line.split_whitespace().map(String::from).collect()
}

/// `GET path` on 127.0.0.1:`port`: the status line's code and the body.
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let code = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Some((code, body))
}

#[test]
fn the_printed_llama_server_command_starts_a_server_with_the_winners_settings() {
    let Some(bin) = llama_server("tune_commands") else {
        return;
    };
    let (dir, cfg) = tiny_race();
    let (out, w) = race(dir.path(), &cfg);
    let mut words = printed(&out, "llama-server");
    words[0] = bin.display().to_string();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Where it listens, and its trace-level log (the threads are said there only).
    let log = dir.path().join("server.log");
    let mut child = Command::new(&words[0])
        .args(&words[1..])
        .args([
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "-lv",
            "4",
        ])
        .stdout(Stdio::from(std::fs::File::create(&log).unwrap()))
        .stderr(Stdio::from(
            std::fs::File::create(dir.path().join("err.log")).unwrap(),
        ))
        .spawn()
        .unwrap();
    let started = Instant::now();
    while get(port, "/health").is_none_or(|(c, _)| c != 200) {
        let exited = child.try_wait().unwrap();
        let err = std::fs::read_to_string(dir.path().join("err.log")).unwrap_or_default();
        assert!(exited.is_none(), "{words:?} exited: {exited:?}\n{err}");
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no /health: {err}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let props: Value = serde_json::from_str(&get(port, "/props").unwrap().1).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        props["model_path"].as_str().unwrap().ends_with("tiny.gguf"),
        "{props}"
    );
    let text = std::fs::read_to_string(&log).unwrap()
        + &std::fs::read_to_string(dir.path().join("err.log")).unwrap();
    let t = w["n_threads"].as_i64().unwrap();
    let fa = match w["flash_attn"].as_i64() {
        Some(1) => "enabled",
        Some(0) => "disabled",
        _ => "auto",
    };
    for said in [
        format!("system_info: n_threads = {t} (n_threads_batch = {t})"),
        format!("n_ubatch              = {}", w["n_ubatch"]),
        format!("flash_attn            = {fa}"),
        format!("K ({})", w["type_k"].as_str().unwrap()),
    ] {
        assert!(
            text.contains(&said),
            "{said:?} not in the server's log:\n{text}"
        );
    }
}

/// The pinned llama-bench and its libraries' folder, or None with SKIPPED.
fn llama_bench() -> Option<(PathBuf, PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("reference-tools/shared");
    let bin = dir.join("bin/llama-bench");
    if !bin.is_file() {
        eprintln!("SKIPPED tune_commands: no llama-bench (run scripts/reference-tools)");
        return None;
    }
    Some((bin, dir.join("lib")))
}

#[test]
fn the_printed_llama_bench_line_measures_the_winners_settings() {
    let Some((bin, lib)) = llama_bench() else {
        return;
    };
    let (dir, cfg) = tiny_race();
    let (out, w) = race(dir.path(), &cfg);
    let words = printed(&out, "llama-bench");
    let run = Command::new(&bin)
        .args(&words[1..])
        .args(["-r", "1", "-o", "json"])
        .env("LD_LIBRARY_PATH", &lib)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{words:?}: {stderr}");
    let rows: Value = serde_json::from_slice(&run.stdout).unwrap();
    let row = &rows.as_array().unwrap()[0];
    // llama-bench writes its flags as ints or bools by version: compared as numbers.
    let num = |v: &Value| {
        v.as_bool()
            .map_or_else(|| v.clone(), |b| Value::from(i64::from(b)))
    };
    for key in [
        "n_prompt",
        "n_gen",
        "n_gpu_layers",
        "n_batch",
        "n_ubatch",
        "type_k",
        "type_v",
        "flash_attn",
        "n_threads",
    ] {
        assert_eq!(num(&row[key]), num(&w[key]), "{key}: {row}\n{w}");
    }
}
