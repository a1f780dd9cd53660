//! Served tests against a fake server on loopback (`fake.rs`), no llama-server needed: the
//! warm-up request, and the hostile-server tests (issue 35): a server that lies about its
//! token counts, answers a web page, or has a certificate the client must (not) trust
//! (over TLS with a certificate the test makes).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::{fake, run, tests};
use crate::support::tpsbench;

/// One served request test of 4 tokens against `endpoint`, with `extra` model keys.
fn served_config(dir: &Path, endpoint: &str, extra: &str) -> PathBuf {
    let cfg = dir.join("models.toml");
    std::fs::write(
        &cfg,
        format!(
            "[[model]]\nname = \"m\"\nendpoint = \"{endpoint}\"\n{extra}\n[serving]\nmodes = [\"request\"]\nn_prompt = 4\nn_gen = 4\nn_requests = 1\nrepetitions = 1\n"
        ),
    )
    .unwrap();
    cfg
}

/// The error the record holds for its one test.
fn recorded_error(rec: &Value) -> String {
    let t = &tests(rec)[0];
    assert_eq!(t["status"], "failed", "{t}");
    t["error"].as_str().unwrap().to_string()
}

/// One request before the timed ones, as llama-bench's warm-up run: 3 repetitions of 2
/// requests make 7 POSTs, and only the 6 are in the record.
#[test]
fn a_served_test_sends_one_warm_up_request_it_does_not_count() {
    let (port, posts) = fake::serve_counted(fake::completion(&["a", "b", "c", "d"], 4), None);
    let dir = tempfile::tempdir().unwrap();
    let cfg = served_config(dir.path(), &format!("http://127.0.0.1:{port}/v1"), "");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let text = text.replace(
        "n_requests = 1\nrepetitions = 1",
        "n_requests = 2\nrepetitions = 3",
    );
    std::fs::write(&cfg, text).unwrap();
    let (code, err, rec) = run(dir.path(), &cfg, &[]);
    assert_eq!(code, 0, "{err}");
    let rec = rec.unwrap();
    let t = &tests(&rec)[0];
    assert_eq!(t["warmup"], 1, "{t}");
    assert_eq!(t["serving"]["requests"].as_array().unwrap().len(), 6, "{t}");
    assert_eq!(posts.load(std::sync::atomic::Ordering::SeqCst), 7);
}

#[test]
fn a_server_that_claims_a_trillion_tokens_fails_the_test_and_names_the_field() {
    // One token streamed, then usage.completion_tokens = 10^12: this once allocated 8 TB
    // and aborted, leaving a 0-byte result file.
    let port = fake::serve(fake::completion(&["a"], 1_000_000_000_000), None);
    let dir = tempfile::tempdir().unwrap();
    let cfg = served_config(dir.path(), &format!("http://127.0.0.1:{port}/v1"), "");
    let (code, err, rec) = run(dir.path(), &cfg, &[]);
    assert_eq!(code, 1, "the test failed, the run did not crash: {err}");
    let e = recorded_error(&rec.expect("a whole result file"));
    assert!(
        e.contains("the server's usage.completion_tokens is 1000000000000, more than the max_tokens 4 asked"),
        "{e}"
    );
    eprintln!("recorded: {e}");
}

#[test]
fn a_server_that_counts_fewer_tokens_than_it_streamed_fails_the_test() {
    let port = fake::serve(fake::completion(&["a", "b", "c"], 1), None);
    let dir = tempfile::tempdir().unwrap();
    let cfg = served_config(dir.path(), &format!("http://127.0.0.1:{port}/v1"), "");
    let (code, err, rec) = run(dir.path(), &cfg, &[]);
    assert_eq!(code, 1, "{err}");
    let e = recorded_error(&rec.unwrap());
    assert!(
        e.contains("usage.completion_tokens is 1, fewer than the 3 chunks of text that arrived"),
        "{e}"
    );
    eprintln!("recorded: {e}");
}

#[test]
fn a_200_web_page_is_named_by_its_content_type_and_first_bytes() {
    let page =
        "<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>portal</body></html>";
    let port = fake::serve(
        fake::response("200 OK", "text/html; charset=utf-8", page),
        None,
    );
    let dir = tempfile::tempdir().unwrap();
    let cfg = served_config(dir.path(), &format!("http://127.0.0.1:{port}/v1"), "");
    let (code, err, rec) = run(dir.path(), &cfg, &[]);
    assert_eq!(code, 1, "{err}");
    let e = recorded_error(&rec.unwrap());
    assert!(
        e.contains("answered HTTP 200 with text/html; charset=utf-8, not an event stream: <!DOCTYPE html> <html><head><title>Sign in"),
        "{e}"
    );
    assert!(!e.contains("[DONE]"), "not a broken stream: {e}");
    eprintln!("recorded: {e}");
}

#[test]
fn an_https_endpoint_signed_by_a_private_ca_is_measured_with_its_ca_file() {
    let (ca, tls) = fake::tls();
    let port = fake::serve(fake::completion(&["a", "b", "c", "d"], 4), Some(tls));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ca.pem"), &ca).unwrap();
    let cfg = served_config(
        dir.path(),
        &format!("https://127.0.0.1:{port}/v1"),
        "ca_file = \"ca.pem\"",
    );
    let (code, err, rec) = run(dir.path(), &cfg, &[]);
    assert_eq!(code, 0, "{err}");
    let rec = rec.unwrap();
    let t = &tests(&rec)[0];
    assert_eq!(t["status"], "ok", "{t}");
    assert_eq!(t["serving"]["transport"], "http");
    assert_eq!(t["serving"]["n_output_tokens"], 4, "{t}");
    assert_eq!(
        t["serving"]["server"]["endpoint"],
        format!("https://127.0.0.1:{port}/v1")
    );
}

#[test]
fn ssl_cert_file_is_honoured_as_curl_and_openssl_do() {
    let (ca, tls) = fake::tls();
    let port = fake::serve(fake::completion(&["a", "b", "c", "d"], 4), Some(tls));
    let dir = tempfile::tempdir().unwrap();
    let ca_path = dir.path().join("ca.pem");
    std::fs::write(&ca_path, &ca).unwrap();
    let cfg = served_config(dir.path(), &format!("https://127.0.0.1:{port}/v1"), "");
    let out = tpsbench()
        .args(["run", "--quiet", "--config"])
        .arg(&cfg)
        .arg("--results-dir")
        .arg(dir.path().join("out"))
        .env("SSL_CERT_FILE", &ca_path)
        .env_remove("SSL_CERT_DIR")
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_certificate_that_does_not_verify_stops_the_run_before_any_test_naming_host_and_reason() {
    let (_, tls) = fake::tls();
    let port = fake::serve(fake::completion(&["a"], 1), Some(tls));
    let dir = tempfile::tempdir().unwrap();
    let cfg = served_config(dir.path(), &format!("https://127.0.0.1:{port}/v1"), "");
    let (code, err, rec) = run(dir.path(), &cfg, &[]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("https://127.0.0.1:{port}/v1/models")) && err.contains("certificate"),
        "{err}"
    );
    assert!(rec.is_none(), "no test ran");
    eprintln!("stderr: {err}");
}
