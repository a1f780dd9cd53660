//! A launched llama-server given a draft (issue 45, served): its own draft counters in the
//! record beside the in-process speculative test of the same target, draft and K.

use super::{by_id, llama_server, run};
use crate::support::{tiny_with, tpsbench};

#[test]
fn a_launched_llama_server_with_a_draft_records_its_own_draft_counters_beside_in_process() {
    let Some(_) = llama_server("draft") else {
        return;
    };
    let (dir, cfg) = tiny_with(
        "[sweep]\nn_prompt = [0]\nn_gen = [0]\nn_threads = [2]\n\n\
         [[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n\n\
         [[model]]\nname = \"tiny-drafted\"\npath = \"tiny.gguf\"\n\
         server = { draft = \"tiny.gguf\", draft_max = 4 }\n\n\
         [serving]\nmodes = [\"request\"]\nn_prompt = 16\nn_gen = 24\nn_requests = 2\n\
         repetitions = 1\ntemperature = 0\n\n\
         [speculative]\ntargets = [\"tiny\"]\ndataset = \"prompts.txt\"\nn_prompts = 1\n\
         n_gen = 16\nrounds = 2\ndrafters = [\"draft-simple\"]\ndraft = [\"tiny.gguf\"]\n\
         draft_max = [4]\n",
    );
    std::fs::write(
        dir.path().join("prompts.txt"),
        "the quick brown fox jumps\n",
    )
    .unwrap();
    let out = tpsbench()
        .args(["run", "--config"])
        .arg(&cfg)
        .arg("--results-dir")
        .arg(dir.path().join("out"))
        .args(["--filter", "serve-http", "--filter", "/spec-"])
        .timeout(std::time::Duration::from_secs(300))
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    let file = std::fs::read_dir(dir.path().join("out"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let t = by_id(&rec, "serve-http-request");
    assert_eq!(t["status"], "ok", "{t}");
    let d = &t["serving"]["drafts"];
    assert_eq!(d["draft"], "tiny.gguf", "{d}");
    assert_eq!(d["draft_max"], 4);
    assert_eq!(d["draft_sha256"].as_str().unwrap().len(), 64);
    assert_eq!(d["answers"], 2);
    let (drafted, accepted) = (
        d["drafted"].as_u64().unwrap(),
        d["accepted"].as_u64().unwrap(),
    );
    assert!(drafted > 0, "llama-server drafted: {d}");
    assert!(
        accepted * 10 >= drafted * 9,
        "a draft identical to the target, greedy: (nearly) all accepted: {d}"
    );
    // The answer puts the two sides together: same target file, draft (by SHA-256) and K.
    let line = stdout
        .lines()
        .find(|l| l.contains("llama-server's counters"))
        .unwrap_or_else(|| panic!("no served drafting line: {stdout}"));
    assert!(
        line.contains("tiny-drafted") && line.contains("K = 4"),
        "{line}"
    );
    assert!(
        line.contains("in process, the same target, draft and K: 100%"),
        "{line}"
    );
    // The leaderboard reads the same through record/: the line in both pages.
    let out = tpsbench()
        .arg("leaderboard")
        .arg(dir.path().join("out"))
        .arg("--out-dir")
        .arg(dir.path().join("board"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(dir.path().join("board/LEADERBOARD.md")).unwrap();
    let html = std::fs::read_to_string(dir.path().join("board/index.html")).unwrap();
    assert!(md.contains("### Served drafting"), "{md}");
    assert!(md.contains("llama-server's counters"), "{md}");
    assert!(html.contains("<h3>Served drafting</h3>") && html.contains("llama-server"));
}

#[test]
fn a_draft_file_that_is_missing_is_one_line_and_exit_2() {
    let Some(_) = llama_server("missing draft") else {
        return;
    };
    let (dir, cfg) = tiny_with(
        "[sweep]\nn_threads = [1]\n\n[[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n\
         server = { draft = \"nowhere.gguf\" }\n\n[serving]\nmodes = [\"request\"]\n",
    );
    let (code, err, _) = run(dir.path(), &cfg, &["--filter", "serve-http"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("no draft GGUF at") && err.contains("nowhere.gguf"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
