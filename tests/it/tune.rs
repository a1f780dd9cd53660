//! `tpsbench tune` (issue 46) on the real llama.cpp with the tiny synthetic model: the race
//! runs, records every round of every candidate, can be replayed from the file, and ends
//! its answer with commands; each bad input is one line and exit 2.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tpsbench::stats::race::{Out, Race, Settings};

use assert_cmd::cargo::cargo_bin;

use crate::support::{self, only_result, tpsbench, tune_into, tune_of};

/// The tiny model with a sweep of `axes` and a `[tune]` table of `tune`.
fn tune_config(axes: &str, tune: &str) -> (tempfile::TempDir, PathBuf) {
    support::tiny_with(&format!(
        "[sweep]\nrepetitions = 1\n{axes}\n\n[[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n\n[tune]\n{tune}\n"
    ))
}

fn json_of(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// A test's round medians in round order (its one median for a single round).
fn round_medians(t: &Value) -> Vec<f64> {
    match t["rounds"].as_array() {
        Some(r) if r.len() >= 2 => r.iter().map(|x| x["median_ts"].as_f64().unwrap()).collect(),
        _ => vec![t["median_ts"].as_f64().unwrap()],
    }
}

#[test]
fn tune_races_the_sweep_records_every_round_and_ends_with_commands_to_run() {
    let (dir, cfg) = tune_config(
        "n_threads = [1, 2]\nn_ubatch = [32, 64]\nflash_attn = [\"on\", \"off\"]",
        "objective = \"tg8\"\nmax_rounds = 4",
    );
    let results = dir.path().join("results");
    let (code, out, err) = tune_into(&cargo_bin("tpsbench"), &cfg, &results);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("## tune: tg8\n"), "{out}");
    assert!(out.contains("answer: tiny/"), "{out}");
    assert!(out.contains("limits: memory"), "{out}");
    assert!(out.contains("The full sweep of the 8 candidates"), "{out}");
    let tail: Vec<&str> = out.lines().rev().take(16).collect();
    assert!(
        tail.iter().any(|l| l.starts_with("llama-server -m ")),
        "{out}"
    );
    assert!(
        tail.iter().any(|l| l.starts_with("llama-bench -m ")),
        "{out}"
    );
    assert!(out.contains("[[model]]\nname = \"tiny\"\n"), "{out}");
    let r = json_of(&only_result(&results));
    let t = &r["run"]["tune"];
    assert_eq!(t["objective"], "tg8");
    assert_eq!(t["space"], 8);
    let cands = t["candidates"].as_array().unwrap();
    assert_eq!(cands.len(), 8);
    // Every round of every candidate is in its test; the rounds agree with the race's.
    let tests = r["tests"].as_array().unwrap();
    let test = |id: &str| tests.iter().find(|x| x["id"] == id).unwrap();
    let mut total = 0;
    for c in cands {
        let rounds = round_medians(test(c["id"].as_str().unwrap()));
        assert_eq!(rounds.len() as u64, c["rounds"].as_u64().unwrap(), "{c}");
        total += rounds.len();
    }
    assert_eq!(total as u64, t["tests_run"].as_u64().unwrap());
    // The model's load time, cold (page cache evicted) and warm, three of each.
    let load = &t["loads"][0];
    assert_eq!(load["model"], "tiny");
    for kind in ["cold_s", "warm_s"] {
        let s = load[kind].as_array().unwrap();
        assert_eq!(s.len(), 3, "{load}");
        assert!(s.iter().all(|x| x.as_f64().unwrap() > 0.0), "{load}");
    }
    assert!(out.contains("load (tiny, load_mode auto): cold "), "{out}");
    // Replayed from the file, the race reaches the same verdicts.
    let mut race = Race::new(8, Settings::new(t["max_rounds"].as_u64().unwrap() as usize));
    let all: Vec<Vec<f64>> = cands
        .iter()
        .map(|c| round_medians(test(c["id"].as_str().unwrap())))
        .collect();
    while race.stop().is_none() {
        let k = race.rounds_done();
        let vals: Vec<(usize, Option<f64>)> = race
            .survivors()
            .into_iter()
            .map(|i| (i, all[i].get(k).copied()))
            .collect();
        race.add_round(&vals);
    }
    for (i, c) in cands.iter().enumerate() {
        let replayed = match race.out(i) {
            Some(Out::Slower { .. }) => "slower",
            Some(Out::Failed { .. }) => "failed",
            None => "",
        };
        if !replayed.is_empty() {
            assert_eq!(c["outcome"], replayed, "{c}");
        } else {
            assert!(
                ["winner", "tie", "open"].contains(&c["outcome"].as_str().unwrap()),
                "{c}"
            );
        }
    }
    let winner = race.answer().unwrap().leader;
    assert_eq!(t["winner"], cands[winner]["id"]);
}

/// Exit 2 and one line on stderr that contains `what`.
fn refused(cfg: &Path, extra: &[&str], what: &str) {
    let mut args = vec!["--no-save"];
    args.extend_from_slice(extra);
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    let (code, out, err) = tune_of(&cargo_bin("tpsbench"), cfg, &args);
    assert_eq!(code, 2, "stdout {out}\nstderr {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(what), "{err}");
    assert!(out.is_empty(), "{out}");
}

#[test]
fn a_configuration_without_a_tune_table_is_refused_in_one_line() {
    let (_dir, cfg) = support::tiny_sweep("n_gen = 8");
    refused(&cfg, &[], "no [tune] table");
}

#[test]
fn an_objective_that_is_no_test_is_refused_in_one_line() {
    let (_dir, cfg) = tune_config("", "objective = \"tokens\"");
    refused(&cfg, &[], "tune.objective");
}

#[test]
fn an_objective_the_models_cannot_hold_is_refused_naming_the_context() {
    let (_dir, cfg) = tune_config("", "objective = \"tg8@d1000000\"");
    refused(&cfg, &[], "objective excluded 1");
}

#[test]
fn an_unknown_axis_or_tune_key_is_refused_with_a_suggestion() {
    let (_dir, cfg) = tune_config("n_thread = [1, 2]", "objective = \"tg8\"");
    refused(&cfg, &[], "did you mean `n_threads`");
    let (_dir, cfg) = tune_config("", "objective = \"tg8\"\nmax_round = 3");
    refused(&cfg, &[], "did you mean `max_rounds`");
}

#[test]
fn contradictory_limits_are_refused_in_one_line() {
    let (_dir, cfg) = tune_config(
        "",
        "objective = \"tg8\"\nmax_memory_gib = 4\nmemory_margin = 0.2",
    );
    refused(&cfg, &[], "tune.memory_margin");
    let (_dir, cfg) = tune_config("", "objective = \"tg8\"\nmax_kld = 0.05");
    refused(&cfg, &[], "no [[ladder]]");
}

#[test]
fn a_space_the_limits_empty_is_refused_naming_what_each_limit_excluded() {
    let (_dir, cfg) = tune_config(
        "n_threads = [1, 2]",
        "objective = \"tg8\"\nmax_memory_gib = 0.000001",
    );
    refused(
        &cfg,
        &[],
        "the limits leave nothing to race among 2 candidates: memory excluded 2",
    );
}

#[test]
fn a_budget_of_one_round_is_refused() {
    let (_dir, cfg) = tune_config("", "objective = \"tg8\"");
    refused(&cfg, &["--max-rounds", "1"], "--max-rounds 1");
}

#[test]
fn a_load_time_no_model_meets_empties_the_space_and_says_so() {
    let (_dir, cfg) = tune_config(
        "n_threads = [1, 2]",
        "objective = \"tg8\"\nmax_load_seconds = 0.001",
    );
    refused(&cfg, &[], "max_load_seconds excluded 2 (tiny: cold load ");
}

#[test]
fn a_refused_race_keeps_in_its_file_what_each_limit_excluded() {
    let (dir, cfg) = tune_config(
        "n_threads = [1, 2]",
        "objective = \"tg8\"\nmax_memory_gib = 0.000001",
    );
    let results = dir.path().join("results");
    let (code, _, err) = tune_into(&cargo_bin("tpsbench"), &cfg, &results);
    assert_eq!(code, 2, "{err}");
    let t = &json_of(&only_result(&results))["run"]["tune"];
    let excluded = t["excluded"].as_array().unwrap();
    assert_eq!(excluded.len(), 2, "{t}");
    assert!(excluded.iter().all(|e| e["limit"] == "memory"), "{t}");
    assert!(
        t["stopped"].as_str().unwrap().starts_with("refused: "),
        "{t}"
    );
    assert!(t["candidates"].as_array().unwrap().is_empty(), "{t}");
}

/// `tpsbench run --quiet ARGS --config CONFIG`: exit code, stdout, stderr.
fn run(config: &Path, extra: &[&str]) -> (i32, String, String) {
    let extra: Vec<&std::ffi::OsStr> = extra.iter().map(|x| x.as_ref()).collect();
    crate::support::quiet_of(&cargo_bin("tpsbench"), "run", config, &extra)
}

#[test]
fn run_on_a_configuration_with_a_tune_table_races_it_and_ends_with_the_answer() {
    let (dir, cfg) = tune_config(
        "n_prompt = [16]\nn_gen = [4]\nn_threads = [1, 2]",
        "objective = \"tg8\"\nmax_rounds = 3",
    );
    let results = dir.path().join("results");
    let (code, out, err) = run(&cfg, &["--results-dir", results.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    // The race's tests first, in run's table, then the tune's answer last.
    let answer = out.find("## tune: tg8\n").expect(&out);
    assert!(out[answer..].contains("answer: tiny/"), "{out}");
    let tail = &out[answer..];
    assert!(tail.contains("\nrun it:\nllama-server -m "), "{out}");
    assert!(tail.contains("\nmodels.toml:\n[[model]]\n"), "{out}");
    assert!(!tail.contains('|'), "no table after the answer: {out}");
    let r = json_of(&only_result(&results));
    let t = &r["run"]["tune"];
    assert_eq!(t["objective"], "tg8");
    assert_eq!(t["space"], 2);
    // The race replaces the sweep: only the objective's test ran, not pp16 or tg4.
    let tests = r["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 2, "{r}");
    assert!(
        tests
            .iter()
            .all(|x| x["id"].as_str().unwrap().contains("/tg8")),
        "{r}"
    );
}

#[test]
fn run_with_a_tune_table_and_json_output_prints_only_the_json() {
    let (_dir, cfg) = tune_config("n_threads = [1, 2]", "objective = \"tg8\"\nmax_rounds = 2");
    let (code, out, err) = run(&cfg, &["--no-save", "--output", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["run"]["tune"]["objective"], "tg8");
}

#[test]
fn run_with_a_tune_table_refuses_the_options_of_a_sweep_in_one_line() {
    let (_dir, cfg) = tune_config("", "objective = \"tg8\"");
    for (args, option) in [
        (&["--rounds", "3"][..], "--rounds"),
        (&["--isolate"][..], "--isolate"),
        (&["--shard", "0/2"][..], "--shard"),
        (&["--save-baseline", "x"][..], "--save-baseline"),
    ] {
        let mut all = vec!["--no-save"];
        if option == "--isolate" {
            all.clear();
        }
        all.extend_from_slice(args);
        let (code, out, err) = run(&cfg, &all);
        assert_eq!(code, 2, "{args:?}: {out}\n{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!("error: {option} does not apply to a race: ")),
            "{err}"
        );
        assert!(out.is_empty(), "{out}");
    }
    let (code, _, err) = run(&cfg, &["--no-save", "--max-rounds", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--max-rounds 1: must be between 2"), "{err}");
}

#[test]
fn run_with_a_tune_table_is_refused_as_tune_is_when_the_limits_empty_the_space() {
    let (_dir, cfg) = tune_config(
        "n_threads = [1, 2]",
        "objective = \"tg8\"\nmax_memory_gib = 0.000001",
    );
    let (code, out, err) = run(&cfg, &["--no-save"]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("the limits leave nothing to race among 2 candidates: memory excluded 2"),
        "{err}"
    );
}

/// `tpsbench leaderboard RESULTS --out-dir OUT`: exit code, stderr, LEADERBOARD.md and
/// index.html.
fn leaderboard(results: &Path, out: &Path) -> (i32, String, String, String) {
    let o = tpsbench()
        .arg("leaderboard")
        .arg(results)
        .arg("--out-dir")
        .arg(out)
        .output()
        .unwrap();
    let read = |f: &str| std::fs::read_to_string(out.join(f)).unwrap_or_default();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        read("LEADERBOARD.md"),
        read("index.html"),
    )
}

#[test]
fn the_leaderboard_shows_each_machines_tune_answer_and_refuses_an_edited_verdict() {
    let (dir, cfg) = tune_config(
        "n_threads = [1, 2]\nn_ubatch = [32, 64]",
        "objective = \"tg8\"\nmax_rounds = 3",
    );
    let results = dir.path().join("results");
    let (code, _, err) = tune_into(&cargo_bin("tpsbench"), &cfg, &results);
    assert_eq!(code, 0, "{err}");
    let file = only_result(&results);
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let winner = r["run"]["tune"]["winner"].as_str().unwrap().to_string();
    let out = dir.path().join("page");
    let (code, err, md, html) = leaderboard(&results, &out);
    assert_eq!(code, 0, "{err}");
    let section = &md[md.find("## Which configuration?").expect(&md)..];
    assert!(section.contains("### tg8 on "), "{section}");
    // The winner with its figure and interval, what was eliminated, the limits, the cost.
    let answer = section
        .lines()
        .find(|l| l.starts_with("**Answer:** "))
        .unwrap();
    assert!(answer.contains("t/s ("), "{answer}");
    assert!(section.contains("- eliminated as slower: "), "{section}");
    assert!(
        section.contains("- excluded by the limits before racing: none (of 4 in the space)"),
        "{section}"
    );
    assert!(section.contains("- cost: "), "{section}");
    assert!(html.contains(r#"<section id="tune"><h2>Which configuration?</h2>"#));
    assert!(html.contains(&winner), "{html}");
    // A winner edited in the file no longer matches the race its rounds replay: the file is
    // left out, with the reason.
    let loser = r["run"]["tune"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .find(|id| *id != winner)
        .unwrap();
    let mut edited = r.clone();
    edited["run"]["tune"]["winner"] = Value::String(loser);
    std::fs::write(&file, serde_json::to_string(&edited).unwrap()).unwrap();
    let (_, err, md, _) = leaderboard(&results, &dir.path().join("page2"));
    assert!(!md.contains("## Which configuration?"), "{md}");
    let said = format!("{err}{md}");
    assert!(
        said.contains("test run.tune: winner is "),
        "stderr {err}\nmd {md}"
    );
}

#[test]
fn ctrl_c_in_tune_stops_after_the_current_test_says_how_to_race_again_and_leaves_a_file_that_replays()
 {
    use std::io::BufRead;
    // A long race: four candidates, a budget no shorter race could spend.
    let (dir, cfg) = tune_config(
        "n_threads = [1, 2]\nflash_attn = [\"on\", \"off\"]",
        "objective = \"tg64\"\nmax_rounds = 10000",
    );
    let results = dir.path().join("results");
    let mut child = std::process::Command::new(cargo_bin("tpsbench"))
        .args(["tune", "--config"])
        .arg(&cfg)
        .arg("--results-dir")
        .arg(&results)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut lines = stderr.lines().map_while(Result::ok);
    let mut seen = String::new();
    // Into the race's rounds, then Ctrl-C.
    for l in lines.by_ref() {
        seen.push_str(&l);
        seen.push('\n');
        if l.contains("tune: round 3/") {
            break;
        }
    }
    assert!(seen.contains("tune: round 3/"), "{seen}");
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let rest: Vec<String> = lines.collect();
    let out = child.wait_with_output().unwrap();
    let err = format!("{seen}{}", rest.join("\n"));
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        err.contains("interrupt: stopping after the current test"),
        "{err}"
    );
    let file = only_result(&results);
    assert!(
        err.contains(&format!(
            "interrupted: {} holds the race so far, and the answer above is what its rounds \
             established; to race again: ",
            file.display()
        )),
        "{err}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("## tune: tg64\n"), "{stdout}");
    // The file replays: its race, interrupted, is the race its rounds give.
    let r = tpsbench::record::verify::read(&file).unwrap();
    let t = r.run.tune.as_ref().unwrap();
    assert_eq!(t.stopped, "budget spent: interrupted", "{t:?}");
    assert!(r.run.finished_at.is_none());
}
