//! `--rounds auto` on the tiny model: rounds added until the answer is established, or the
//! budget is spent and what stayed open is said.

use super::{tpsbench, workspace};

fn auto_run(sweep: &str, extra: &[&str]) -> (String, serde_json::Value) {
    let (_dir, config) = workspace(sweep);
    let out = tpsbench()
        .args(["run", "--no-save", "--output", "json", "--rounds", "auto"])
        .args(extra)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    (stderr, v)
}

#[test]
fn auto_rounds_stop_before_the_budget_once_two_thread_counts_are_established_apart() {
    // 1 thread against 16 on a machine of a few cores: 16 threads spin and wait on each
    // other, many times slower, a difference a few rounds establish.
    let (stderr, v) = auto_run(
        "n_prompt = 16\nn_gen = 0\nwarmup = 1\nn_threads = [1, 16]",
        &["--max-rounds", "8"],
    );
    let auto = &v["run"]["rounds_auto"];
    let stopped = auto["stopped"].as_str().unwrap();
    assert!(stopped.starts_with("resolved after"), "{stopped}\n{stderr}");
    let rounds = v["run"]["rounds"].as_u64().unwrap();
    assert!((3..8).contains(&rounds), "{rounds} rounds\n{stderr}");
    assert!(auto.get("open").is_none(), "{auto}");
    for t in v["tests"].as_array().unwrap() {
        assert_eq!(t["rounds"].as_array().unwrap().len() as u64, rounds);
        // One repetition per round: auto's default when `repetitions` is not given.
        assert_eq!(t["rounds"][0]["samples_ns"].as_array().unwrap().len(), 1);
    }
    assert!(stderr.contains("auto rounds: resolved after"), "{stderr}");
}

#[test]
fn auto_rounds_that_run_out_of_budget_say_which_comparisons_stayed_open() {
    // Two batch sizes that a 16-token prompt never fills: the same work, so nothing can be
    // established, and with 2 rounds (no look before the third) nothing is.
    let (stderr, v) = auto_run(
        "n_prompt = 16\nn_gen = 0\nwarmup = 0\nn_threads = 1\nn_ubatch = 32\nn_batch = [32, 64]",
        &["--max-rounds", "2"],
    );
    let auto = &v["run"]["rounds_auto"];
    assert_eq!(auto["max_rounds"], 2);
    let stopped = auto["stopped"].as_str().unwrap();
    assert!(stopped.starts_with("budget spent"), "{stopped}");
    let open = auto["open"].as_array().unwrap();
    assert_eq!(open.len(), 1, "{auto}");
    assert!(open[0].as_str().unwrap().contains(" vs "), "{auto}");
    assert!(
        stderr.contains("auto rounds: not established within the budget:"),
        "{stderr}"
    );
    assert_eq!(v["run"]["rounds"], 2);
}
