//! Plausibility flags on what a leaderboard publishes: a run's (dirty build, busy machine,
//! fixture) or a row's (at or above its roofline, unmarked synthetic model, duplicate).

use crate::record::{ModelRecord, RunInfo, TestRecord};

/// Fewer parameters than this, unmarked, is a test model passed off as a language model.
pub const MIN_PARAMS: u64 = 10_000_000;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Flag {
    Roofline(String),
    Dirty(String),
    Busy(String),
    Fixture(String),
    Duplicate(String),
}

impl Flag {
    pub fn badge(&self) -> &'static str {
        match self {
            Flag::Roofline(_) => "implausible",
            Flag::Dirty(_) => "dirty",
            Flag::Busy(_) => "busy",
            Flag::Fixture(_) => "fixture",
            Flag::Duplicate(_) => "duplicate",
        }
    }

    pub fn detail(&self) -> &str {
        match self {
            Flag::Roofline(s)
            | Flag::Dirty(s)
            | Flag::Busy(s)
            | Flag::Fixture(s)
            | Flag::Duplicate(s) => s,
        }
    }
}

pub fn run_flags(run: &RunInfo) -> Vec<Flag> {
    let mut v = Vec::new();
    let tool = run.tool.git_commit.as_deref().unwrap_or("");
    let llama = run.llama_cpp.build_commit.as_deref().unwrap_or("");
    for (name, commit) in [("tpsbench", tool), ("llama.cpp", llama)] {
        if commit.ends_with("-dirty") {
            v.push(Flag::Dirty(format!("dirty build: {name} {commit}")));
        }
    }
    let limit = crate::machine::busy_threshold(run.system.logical_cores);
    if let Some([l, ..]) = run.load_average
        && l > limit
    {
        v.push(Flag::Busy(format!(
            "started at a load average of {l:.2} (above {limit})"
        )));
    }
    if tool == "fixture" || run.system.hostname.starts_with("fixture") {
        v.push(Flag::Fixture(
            "a test fixture (tool commit \"fixture\" or host fixture-*), not a measurement".into(),
        ));
    }
    v
}

pub fn entry_flags(t: &TestRecord, model: Option<&ModelRecord>) -> Vec<Flag> {
    let mut v = Vec::new();
    if let Some(r) = t.resources.as_ref().and_then(|r| r.roofline.as_ref())
        && (r.above_ceiling || r.percent_of_roofline >= 100.0)
    {
        v.push(Flag::Roofline(format!(
            "decode at {:.0}% of its bandwidth roofline ({:.1} GB/s, {}): implausible",
            r.percent_of_roofline, r.bandwidth_gbs, r.bandwidth_source
        )));
    }
    if let Some(why) = model.and_then(unmarked_synthetic) {
        v.push(Flag::Fixture(why));
    }
    v
}

fn unmarked_synthetic(m: &ModelRecord) -> Option<String> {
    if m.provenance.as_ref().is_some_and(|p| p.synthetic) {
        return None;
    }
    let name = &m.name;
    let looks = [&m.name, &m.model_filename].iter().any(|s| {
        let s = s.to_lowercase();
        s.contains("synthetic") || s.contains("tiny")
    });
    let small = m.model_n_params.is_some_and(|n| n < MIN_PARAMS);
    (looks || small).then(|| {
        format!("model {name} looks synthetic (name or under {MIN_PARAMS} parameters) but provenance.synthetic is not set")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::export::fixtures;
    use crate::report::leaderboard::testdata;
    use serde_json::json;

    #[test]
    fn a_dirty_build_a_busy_start_and_a_fixture_flag_the_run() {
        let mut r = fixtures::run().run;
        assert!(run_flags(&r).is_empty());
        r.tool.git_commit = Some("f1437dc0745f-dirty".into());
        r.llama_cpp.build_commit = Some("b1234-dirty".into());
        r.load_average = Some([1.4, 0.9, 0.5]);
        let f = run_flags(&r);
        let badges: Vec<_> = f.iter().map(Flag::badge).collect();
        assert_eq!(badges, ["dirty", "dirty", "busy"]);
        assert!(f[2].detail().contains("load average of 1.40"), "{f:?}");
        r.load_average = Some([1.0, 3.0, 3.0]);
        r.tool.git_commit = Some("fixture".into());
        r.llama_cpp.build_commit = None;
        let badges: Vec<_> = run_flags(&r).iter().map(Flag::badge).collect();
        assert_eq!(badges, ["fixture"], "1.0 is not above the threshold");
    }

    #[test]
    fn a_larger_machine_is_busy_above_half_a_load_per_cpu() {
        let mut r = fixtures::run().run;
        r.system.logical_cores = 16;
        r.load_average = Some([3.1, 2.9, 2.8]);
        assert!(
            run_flags(&r).is_empty(),
            "3.1 on 16 CPUs: the last minute's run, not busy"
        );
        r.load_average = Some([8.5, 8.0, 7.0]);
        let f = run_flags(&r);
        assert_eq!(f.iter().map(Flag::badge).collect::<Vec<_>>(), ["busy"]);
        assert!(f[0].detail().contains("above 8"), "{f:?}");
        r.system.logical_cores = 2;
        r.load_average = Some([1.2, 1.0, 1.0]);
        assert_eq!(run_flags(&r).len(), 1, "2 CPUs: above 1 is busy, as before");
        r.system.logical_cores = 1;
        r.load_average = Some([0.7, 0.7, 0.7]);
        assert_eq!(
            run_flags(&r).len(),
            1,
            "1 CPU: above 0.5, as the runner warns"
        );
    }

    #[test]
    fn a_roofline_at_100_percent_and_an_unmarked_tiny_model_flag_the_row() {
        let mut t = fixtures::run().tests[0].clone();
        let model = |name: &str, n_params: Option<u64>, synthetic: bool| {
            let mut m = testdata::model(name, "Q4_0");
            m.model_filename = format!("{name}.gguf");
            m.model_n_params = n_params;
            m.provenance = synthetic.then(|| {
                serde_json::from_value(json!({"base_file": "", "base_sha256": "", "type": "Q4_0",
                    "base_type": "F32", "requantized": false, "synthetic": true, "preset": null}))
                .unwrap()
            });
            m
        };
        let real = model("SmolLM2-135M", Some(134_515_008), false);
        let real = Some(&real);
        assert!(entry_flags(&t, real).is_empty());
        let roof = |pct: f64| {
            serde_json::from_value::<crate::machine::Resources>(json!({
                "peak_rss_bytes": null, "kv_cache_bytes": null, "energy": null,
                "joules_per_token": null, "prefill": null,
                "roofline": {"bytes_per_token": 2.7e8, "bandwidth_gbs": 27.7,
                    "bandwidth_source": "probe", "roofline_ts": 102.6,
                    "achieved_gbs": 27.7 * pct / 100.0, "percent_of_roofline": pct}
            }))
            .unwrap()
        };
        t.resources = Some(roof(99.9));
        assert!(entry_flags(&t, real).is_empty());
        t.resources = Some(roof(101.0));
        let f = entry_flags(&t, real);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].badge(), "implausible");
        assert!(f[0].detail().contains("101%"), "{f:?}");
        t.resources = None;
        let tiny = model("random-weights", Some(1_372_928), false);
        assert_eq!(entry_flags(&t, Some(&tiny))[0].badge(), "fixture");
        let marked = model("synthetic-llama-3-8b", None, true);
        assert!(entry_flags(&t, Some(&marked)).is_empty());
        let unmarked = model("synthetic-llama-3-8b", Some(8_000_000_000), false);
        assert_eq!(entry_flags(&t, Some(&unmarked)).len(), 1);
        assert!(
            entry_flags(&t, None).is_empty(),
            "a test whose model is not listed"
        );
    }
}
