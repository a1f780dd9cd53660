//! The client against a fake server on loopback (std's TcpListener writing canned
//! answers): SSE timing, token counts and every fault it must name. The real llama-server is
//! in tests/it/served.rs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use super::*;

/// One step of a fake answer: bytes to write, then a pause.
enum Step {
    Write(String),
    Sleep(u64),
    /// Close the connection here.
    Close,
}

/// Serves `steps` to each of `n` connections; returns the base URL.
fn fake(n: usize, steps: Vec<Step>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let steps = std::sync::Arc::new(steps);
    std::thread::spawn(move || {
        for _ in 0..n {
            let Ok((mut s, _)) = l.accept() else { return };
            let steps = steps.clone();
            std::thread::spawn(move || {
                // Read the request: headers, then Content-Length bytes.
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut len = 0;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; len];
                let _ = r.read_exact(&mut body);
                for st in steps.iter() {
                    match st {
                        Step::Write(b) => {
                            if s.write_all(b.as_bytes()).is_err() {
                                return;
                            }
                            let _ = s.flush();
                        }
                        Step::Sleep(ms) => std::thread::sleep(Duration::from_millis(*ms)),
                        Step::Close => return,
                    }
                }
            });
        }
    });
    format!("http://127.0.0.1:{port}/v1")
}

const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

/// One SSE event as one HTTP chunk.
fn event(data: &str) -> String {
    let e = format!("data: {data}\n\n");
    format!("{:x}\r\n{e}\r\n", e.len())
}

fn text_event(model: &str, text: &str) -> String {
    event(&format!(
        r#"{{"choices":[{{"text":"{text}","index":0,"finish_reason":null}}],"model":"{model}","object":"text_completion"}}"#
    ))
}

fn last_event(model: &str, n: u64) -> String {
    event(&format!(
        r#"{{"choices":[{{"text":"","index":0,"finish_reason":"length"}}],"model":"{model}","usage":{{"prompt_tokens":4,"completion_tokens":{n},"total_tokens":{}}}}}"#,
        n + 4
    ))
}

fn done() -> Vec<Step> {
    vec![
        Step::Write(event("[DONE]")),
        Step::Write("0\r\n\r\n".into()),
    ]
}

fn client(base: &str, timeout_ms: u64) -> Client {
    Client::with_ca_file(
        base,
        "m",
        Api::Completions,
        Duration::from_millis(timeout_ms),
        None,
    )
    .unwrap()
}

fn one() -> Vec<(Duration, Request)> {
    vec![(
        Duration::ZERO,
        Request {
            prompt: Prompt::Tokens(vec![1, 2, 3, 4]),
            max_tokens: 3,
            temperature: 0.0,
            seed: 1,
        },
    )]
}

#[test]
fn chunks_are_stamped_as_they_arrive_and_usage_is_read() {
    let mut steps = vec![Step::Write(SSE_HEAD.into())];
    for t in ["a", "b", "c"] {
        steps.push(Step::Write(text_event("m", t)));
        steps.push(Step::Sleep(60));
    }
    steps.push(Step::Write(last_event("m", 3)));
    steps.extend(done());
    let c = client(&fake(1, steps), 5000);
    let (_, mut out) = c.stream_all(&one());
    let s = out.remove(0).unwrap();
    assert_eq!(s.chunks.len(), 3);
    assert_eq!(s.usage.unwrap().completion_tokens, 3);
    assert_eq!(s.finish_reason.as_deref(), Some("length"));
    for w in s.chunks.windows(2) {
        let gap = w[1].at - w[0].at;
        assert!(gap >= Duration::from_millis(45), "gap {gap:?}");
    }
}

#[test]
fn concurrent_requests_stream_together() {
    let mut steps = vec![Step::Write(SSE_HEAD.into()), Step::Sleep(200)];
    steps.push(Step::Write(text_event("m", "x")));
    steps.push(Step::Write(last_event("m", 1)));
    steps.extend(done());
    let c = client(&fake(4, steps), 5000);
    let reqs: Vec<_> = (0..4).map(|_| one().remove(0)).collect();
    let t = std::time::Instant::now();
    let (_, out) = c.stream_all(&reqs);
    assert!(out.iter().all(|r| r.is_ok()), "{out:?}");
    // Four 200 ms answers in parallel, not in sequence.
    assert!(
        t.elapsed() < Duration::from_millis(700),
        "{:?}",
        t.elapsed()
    );
}

#[test]
fn a_non_200_answer_is_an_error_naming_the_status_and_body() {
    let body = r#"{"error":{"message":"model not loaded"}}"#;
    let steps = vec![Step::Write(format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ))];
    let (_, mut out) = client(&fake(1, steps), 5000).stream_all(&one());
    let e = out.remove(0).unwrap_err().to_string();
    assert!(
        e.contains("HTTP 503") && e.contains("model not loaded"),
        "{e}"
    );
}

#[test]
fn an_event_that_is_not_json_is_an_error_naming_what_arrived() {
    let mut steps = vec![
        Step::Write(SSE_HEAD.into()),
        Step::Write(event("hello there")),
    ];
    steps.extend(done());
    let (_, mut out) = client(&fake(1, steps), 5000).stream_all(&one());
    let e = out.remove(0).unwrap_err().to_string();
    assert!(e.contains("not JSON") && e.contains("hello there"), "{e}");
}

#[test]
fn an_answer_from_another_model_is_an_error_naming_it() {
    let mut steps = vec![
        Step::Write(SSE_HEAD.into()),
        Step::Write(text_event("other", "a")),
    ];
    steps.extend(done());
    let (_, mut out) = client(&fake(1, steps), 5000).stream_all(&one());
    let e = out.remove(0).unwrap_err();
    assert_eq!(
        e,
        Error::WrongModel {
            got: "other".into(),
            want: "m".into()
        }
    );
}

#[test]
fn a_stalled_stream_times_out_with_what_had_arrived() {
    let steps = vec![
        Step::Write(SSE_HEAD.into()),
        Step::Write(text_event("m", "a")),
        Step::Sleep(3000),
    ];
    let (_, mut out) = client(&fake(1, steps), 300).stream_all(&one());
    let e = out.remove(0).unwrap_err();
    assert!(matches!(e, Error::Timeout { chunks: 1, .. }), "{e}");
}

#[test]
fn a_server_that_goes_away_mid_answer_breaks_the_request() {
    let steps = vec![
        Step::Write(SSE_HEAD.into()),
        Step::Write(text_event("m", "a")),
        Step::Close,
    ];
    let (_, mut out) = client(&fake(1, steps), 5000).stream_all(&one());
    let e = out.remove(0).unwrap_err();
    assert!(matches!(e, Error::Broken { chunks: 1, .. }), "{e}");
}

#[test]
fn a_closed_port_is_unreachable() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (_, mut out) = client(&format!("http://127.0.0.1:{port}/v1"), 2000).stream_all(&one());
    let e = out.remove(0).unwrap_err().to_string();
    assert!(
        e.starts_with("cannot reach") && e.contains("refused"),
        "{e}"
    );
}

#[test]
fn the_chat_api_reads_deltas_and_skips_the_role_chunk() {
    let chat = |delta: &str| {
        event(&format!(
            r#"{{"choices":[{{"delta":{delta},"index":0,"finish_reason":null}}],"model":"m"}}"#
        ))
    };
    let mut steps = vec![
        Step::Write(SSE_HEAD.into()),
        Step::Write(chat(r#"{"role":"assistant","content":null}"#)),
        Step::Write(chat(r#"{"content":"hi"}"#)),
        Step::Write(chat(r#"{"content":" there"}"#)),
        Step::Write(event(
            r#"{"choices":[],"model":"m","usage":{"prompt_tokens":3,"completion_tokens":2}}"#,
        )),
    ];
    steps.extend(done());
    let c = Client::with_ca_file(
        &fake(1, steps),
        "m",
        Api::Chat,
        Duration::from_secs(5),
        None,
    );
    let c = c.unwrap();
    let (_, mut out) = c.stream_all(&one());
    let s = out.remove(0).unwrap();
    assert_eq!(s.chunks.len(), 2);
    assert_eq!(s.usage.unwrap().completion_tokens, 2);
}

#[test]
fn llama_servers_draft_counters_are_read_from_the_last_timings_and_checked() {
    let chunk = |text: &str, timings: &str| {
        format!(
            "data: {{\"model\":\"m\",\"choices\":[{{\"text\":\"{text}\"}}],\"timings\":{timings}}}\n\n"
        )
    };
    let a = chunk("a", r#"{"predicted_n":1}"#);
    let b = chunk("b", r#"{"predicted_n":2,"draft_n":8,"draft_n_accepted":5}"#);
    let s = replay(
        Api::Completions,
        "m",
        &[a.as_bytes(), b.as_bytes(), b"data: [DONE]\n\n"],
    )
    .unwrap();
    assert_eq!(
        s.drafts,
        Some(Drafts {
            drafted: 8,
            accepted: 5
        })
    );
    let none = replay(Api::Completions, "m", &[a.as_bytes(), b"data: [DONE]\n\n"]).unwrap();
    assert_eq!(none.drafts, None, "no counters: the server did not draft");
    for bad in [
        r#"{"draft_n":2,"draft_n_accepted":3}"#,
        r#"{"draft_n":-1,"draft_n_accepted":0}"#,
        r#"{"draft_n":"many"}"#,
    ] {
        let c = chunk("a", bad);
        let e = replay(Api::Completions, "m", &[c.as_bytes()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("timings.draft_n_accepted"), "{bad}: {e}");
    }
}
