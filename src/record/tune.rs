//! What `tpsbench tune` recorded about its race, beside the tests. Every round of every
//! candidate is in the tests themselves (their `rounds`), so `stats::race` on those rounds,
//! in order, with these settings, replays these verdicts.

use serde::{Deserialize, Serialize};

use crate::record::TestRecord;
use crate::stats::race::{Out, Race};

mod slo;
pub use slo::{TuneSlo, breaks, goodput_disagrees, goodput_steps};

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TuneRecord {
    /// As written: "tg128", "pp512", "pp512+tg128@d1024".
    pub objective: String,
    pub limits: Vec<Applied>,
    /// Candidates in the space (the sweep at the objective's sizes), before the limits.
    pub space: usize,
    pub excluded: Vec<Excluded>,
    pub alpha: f64,
    pub indifference: f64,
    pub max_rounds: u32,
    pub max_seconds: Option<f64>,
    pub looks: Vec<usize>,
    /// Each claim's level at a look.
    pub level: f64,
    pub candidates: Vec<Candidate>,
    /// Absent when nothing could be measured.
    pub winner: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loads: Vec<LoadTime>,
    pub stopped: String,
    /// Rounds the survivors ran, and candidate-rounds (tests) run in all.
    pub rounds: usize,
    pub tests_run: usize,
    /// Wall-clock seconds of the race, and of its first round (every candidate once).
    pub seconds: f64,
    pub first_round_seconds: f64,
    pub slo: Option<TuneSlo>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bisections: Vec<Bisection>,
}

impl TuneRecord {
    /// The exclusions by limit, in the order each limit first excluded: how many it
    /// excluded, and its distinct reasons in order.
    pub fn excluded_by_limit(&self) -> Vec<(Limit, usize, Vec<&str>)> {
        let mut by: Vec<(Limit, usize, Vec<&str>)> = Vec::new();
        for e in &self.excluded {
            let (_, n, whys) = crate::util::entry(
                &mut by,
                |(l, ..)| *l == e.limit,
                || (e.limit, 0, Vec::new()),
            );
            *n += 1;
            if !whys.contains(&e.why.as_str()) {
                whys.push(&e.why);
            }
        }
        by
    }

    /// Candidate `id`'s round medians in the race: its test's, after the rounds it ran as a
    /// bisection's probe. None: `tests` has no test `id`.
    pub fn raced_rounds(&self, tests: &[TestRecord], id: &str) -> Option<Vec<f64>> {
        let r = tests.iter().find(|x| x.id == id)?.round_medians();
        let skip = (self.candidates.iter())
            .find(|c| c.id == id)
            .map_or(0, |c| c.probe_rounds);
        Some(r[skip.min(r.len())..].to_vec())
    }
}

/// One bisection of a monotone placement axis (`n_gpu_layers`, or `n_cpu_moe` when one
/// device holds every layer) over the candidates that differ only in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bisection {
    pub axis: String,
    /// In order of offload, least first.
    pub ids: Vec<String>,
    pub values: Vec<i64>,
    /// In the order run.
    pub probes: Vec<Probe>,
    /// The candidate with the most offload that loads and runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boundary: Option<String>,
    /// The boundary and its neighbour with less offload.
    pub raced: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub id: String,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<ProbeFailure>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeFailure {
    /// The model did not load (out of device memory, mostly: what bisection expects).
    Load,
    Test,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Excluded {
    pub id: String,
    pub limit: Limit,
    /// "KLD 0.117 > 0.05".
    pub why: String,
}

/// A limit that excludes candidates, named as `[tune]` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    MaxKld,
    Memory,
    MinCtx,
    /// The objective's own context does not fit the model.
    Objective,
    MaxLoadSeconds,
    MaxTtftMs,
    MaxItlMs,
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&as_written(self))
    }
}

fn as_written(x: &impl Serialize) -> String {
    let v = serde_json::to_value(x).unwrap_or_default();
    v.as_str().unwrap_or_default().to_string()
}

/// A limit as the race applied it; in the file, the line [`Display`](std::fmt::Display)
/// writes, read back by `FromStr`.
#[derive(Debug, Clone, PartialEq, serde_with::SerializeDisplay, serde_with::DeserializeFromStr)]
pub enum Applied {
    MinCtx(u32),
    MaxKld(f64),
    MaxLoadSeconds(f64),
    /// Memory on the host or one device: the bound and where it comes from, as said.
    Memory(String),
}

impl std::fmt::Display for Applied {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Applied::MinCtx(c) => write!(f, "min_ctx {c}"),
            Applied::MaxKld(m) => write!(f, "max_kld {m} nats (the ladder's quality test)"),
            Applied::MaxLoadSeconds(m) => {
                write!(f, "cold load ≤ {m} s (median of 3, page cache evicted)")
            }
            Applied::Memory(s) => write!(f, "memory {s}"),
        }
    }
}

impl std::str::FromStr for Applied {
    type Err = &'static str;
    fn from_str(l: &str) -> Result<Self, &'static str> {
        let number = |rest: Option<&str>, end: &str| {
            rest.and_then(|r| r.split_once(end)?.0.parse::<f64>().ok())
        };
        if let Some(c) = l.strip_prefix("min_ctx ").and_then(|c| c.parse().ok()) {
            Ok(Applied::MinCtx(c))
        } else if let Some(m) = number(l.strip_prefix("max_kld "), " nats") {
            Ok(Applied::MaxKld(m))
        } else if let Some(m) = number(l.strip_prefix("cold load ≤ "), " s") {
            Ok(Applied::MaxLoadSeconds(m))
        } else if let Some(m) = l.strip_prefix("memory ") {
            Ok(Applied::Memory(m.to_string()))
        } else {
            Err("a tune limit this version does not write")
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Winner,
    /// Established within the indifference of the winner.
    Tie,
    /// Not separated from the winner within the budget.
    Open,
    Slower,
    Failed,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&as_written(self))
    }
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub id: String,
    pub outcome: Outcome,
    /// Eliminated: by the leader then, after `at_round` rounds, by the ratio of its geometric
    /// mean over this one's.
    pub by: Option<String>,
    pub at_round: Option<usize>,
    pub ratio: Option<f64>,
    pub rounds: usize,
    /// The test's first rounds, run as a bisection's probe before the race.
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub probe_rounds: usize,
}

/// How long a model takes to load, measured before the race.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadTime {
    pub model: String,
    /// "ngl 2, ncmoe 4": a placement loads what it keeps on each device. Empty: llama-bench's
    /// defaults.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub placement: String,
    pub load_mode: String,
    /// Seconds per load with the file's pages evicted from the page cache first, and with
    /// them in it (the load right after).
    pub cold_s: Vec<f64>,
    pub warm_s: Vec<f64>,
    /// False: the cold figures may be warm.
    pub evicted: bool,
}

impl LoadTime {
    pub fn median(xs: &[f64]) -> Option<f64> {
        (!xs.is_empty()).then(|| crate::stats::median(xs))
    }
}

/// How each candidate of `race` ended (`ids[i]`: candidate i's test id) and the winner's id:
/// one mapping for the runner, which writes the record, and `verify`, which replays it.
pub fn verdicts(race: &Race, ids: &[String]) -> (Vec<Candidate>, Option<String>) {
    let answer = race.answer();
    let standing = |i: usize| match &answer {
        Some(a) if a.leader == i => Outcome::Winner,
        Some(a) if a.ties.contains(&i) => Outcome::Tie,
        _ => Outcome::Open,
    };
    let candidates = (0..ids.len())
        .map(|i| {
            let (outcome, by, at_round, ratio) = match race.out(i) {
                Some(&Out::Slower {
                    by,
                    at_round,
                    ratio,
                }) => (
                    Outcome::Slower,
                    Some(ids[by].clone()),
                    Some(at_round),
                    Some(ratio),
                ),
                Some(&Out::Failed { at_round }) => (Outcome::Failed, None, Some(at_round), None),
                None => (standing(i), None, None, None),
            };
            Candidate {
                id: ids[i].clone(),
                outcome,
                by,
                at_round,
                ratio,
                rounds: race.rounds_of(i).len(),
                probe_rounds: 0,
            }
        })
        .collect();
    let winner = answer.map(|a| ids[a.leader].clone());
    (candidates, winner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_3_tune_record_reads_typed_and_writes_back_as_it_was() {
        // As a file of schema 3 holds it: outcomes, limits and failures as strings.
        let v = serde_json::json!({
            "objective": "tg128",
            "limits": ["min_ctx 4096", "max_kld 0.05 nats (the ladder's quality test)",
                "memory 3.40 GiB: the host's RAM less 10% (memory_margin)",
                "memory Vulkan0 512.0 KiB (max_device_memory_gib)",
                "cold load ≤ 2.5 s (median of 3, page cache evicted)"],
            "space": 3,
            "excluded": [{"id": "a", "limit": "max_kld", "why": "KLD 0.117 > 0.05"},
                {"id": "b", "limit": "max_ttft_ms", "why": "p90 prefill (TTFT) 9.00 ms"}],
            "alpha": 0.05, "indifference": 0.02, "max_rounds": 4, "looks": [2, 3, 4],
            "level": 0.004,
            "candidates": [{"id": "c", "outcome": "winner", "rounds": 4},
                {"id": "d", "outcome": "slower", "by": "c", "at_round": 2, "ratio": 1.3,
                 "rounds": 2, "probe_rounds": 1},
                {"id": "e", "outcome": "failed", "at_round": 1, "rounds": 0}],
            "winner": "c", "stopped": "one candidate left", "rounds": 4, "tests_run": 7,
            "seconds": 12.0, "first_round_seconds": 3.0,
            "bisections": [{"axis": "n_gpu_layers", "ids": ["c", "d"], "values": [1, 2],
                "probes": [{"id": "d", "ok": false, "failed": "load"}], "boundary": "c",
                "raced": ["c"]}]
        });
        let t: TuneRecord = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(t.limits[0], Applied::MinCtx(4096));
        assert_eq!(t.limits[1], Applied::MaxKld(0.05));
        assert_eq!(t.limits[4], Applied::MaxLoadSeconds(2.5));
        assert_eq!(t.excluded[1].limit, Limit::MaxTtftMs);
        let outcomes: Vec<Outcome> = t.candidates.iter().map(|c| c.outcome).collect();
        assert_eq!(
            outcomes,
            [Outcome::Winner, Outcome::Slower, Outcome::Failed]
        );
        assert_eq!(t.bisections[0].probes[0].failed, Some(ProbeFailure::Load));
        assert_eq!(serde_json::to_value(&t).unwrap(), v);
        assert_eq!(t.excluded[0].limit.to_string(), "max_kld");
        assert_eq!(t.candidates[1].outcome.to_string(), "slower");
    }
}
